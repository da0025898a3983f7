"""Publishing HyTE models on the Hugging Face Hub: ``push_to_hub``, ``push_adapter`` and their model cards.

    from hyte.hub import push_to_hub
    push_to_hub("runs/hyte-h-hpo", "my-org/hyte-h-hpo")      # checks, renders README.md, uploads
    push_to_hub("runs/hyte-h-hpo", "my-org/hyte-h-hpo", dry_run_dir="preview/")   # the repository, locally

The command line equivalent is ``hyte push MODEL_DIR --repo-id ORG/NAME``.
"""

_LAZY = {
    **dict.fromkeys(("render_adapter_card", "render_model_card"), "hyte.hub.card"),
    **dict.fromkeys(("check_adapter_dir", "check_model_dir", "check_repo_id", "push_adapter", "push_to_hub"),
                    "hyte.hub.push"),
}


def __getattr__(name: str):
    # huggingface_hub takes ~0.5 s to import: `hyte push --help` (hyte.hub.commands) does without it.
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'hyte.hub' has no attribute {name!r}")


__all__ = sorted(_LAZY)
