"""HyTE: hyperbolic text encoders (HyTE-FH, HyTE-H) for hierarchy-aware dense retrieval, Hugging Face native.

The names below are imported on first use, so that ``import hyte`` (and the ``hyte`` command's ``--help``) does
not pay for torch and transformers. The first use of a model or config class registers the models with the
transformers Auto classes (``hyte.auto_classes``), so ``AutoModel.from_pretrained`` on a HyTE checkpoint uses the
installed code; without the package the checkpoint's own copy of the code is used (``trust_remote_code=True``).
"""

__version__ = "0.1.0"

_LAZY = {
    **dict.fromkeys(("EucBERTConfig", "HyTEFHConfig", "HyTEHConfig"), "hyte.configuration_hyte"),
    **dict.fromkeys(("EucBERTForMaskedLM", "EucBERTModel", "HyTEFHForMaskedLM", "HyTEFHModel", "HyTEHModel",
                     "HyTEPreTrainedModel"), "hyte.modeling_hyte"),
    "HyTEPhraseConfig": "hyte.configuration_hyte_phrase",
    "HyTEPhraseModel": "hyte.modeling_hyte_phrase",
    "HyteError": "hyte.errors",
    # sentence-transformers costs ~12 s to import: load it only when these are used.
    **dict.fromkeys(("sentence_transformer", "save_sentence_transformer"), "hyte.integrations.sentence_transformers"),
    "HyperbolicSentenceTransformer": "hyte.sentence_transformers_hyte",
}


def __getattr__(name: str):
    import importlib

    if name == "lorentz":
        return importlib.import_module("hyte.lorentz")
    if name == "load":  # what a new user tries first
        raise AttributeError("module 'hyte' has no attribute 'load': load a model with "
                             "AutoModel.from_pretrained(path, trust_remote_code=True), or as sentence-transformers "
                             "with hyte.sentence_transformer(path)")
    if name not in _LAZY:
        raise AttributeError(f"module 'hyte' has no attribute {name!r}")
    importlib.import_module("hyte.auto_classes")
    return getattr(importlib.import_module(_LAZY[name]), name)


__all__ = ["lorentz", *sorted(_LAZY)]
