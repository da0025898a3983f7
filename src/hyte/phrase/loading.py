"""Loading a phrase model (``hyte.modeling_hyte_phrase.HyTEPhraseModel``) with a clear error for any other kind."""

from __future__ import annotations


def load_phrase_model(path: str):
    """(HyTEPhraseModel, tokenizer) from a folder or hub id; a clear error when it is another kind of model."""
    from transformers import AutoModel, AutoTokenizer

    from .. import auto_classes  # noqa: F401  (the installed HyTE code serves HyTE checkpoints)
    from ..bundled import resolve_model
    from ..modeling_hyte_phrase import HyTEPhraseModel

    resolved = resolve_model(path)
    model = AutoModel.from_pretrained(resolved, trust_remote_code=True)
    if not isinstance(model, HyTEPhraseModel):
        raise ValueError(f"{path} is a {type(model).__name__}, not a phrase model: phrase indexes and reranking need "
                         "a model trained with `hyte train phrase` (or HyTEPhraseModel.from_backbone)")
    return model.eval(), AutoTokenizer.from_pretrained(resolved, trust_remote_code=True)


__all__ = ["load_phrase_model"]
