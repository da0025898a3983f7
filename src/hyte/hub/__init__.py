"""Publishing HyTE models on the Hugging Face Hub: ``push_to_hub``, ``push_adapter`` and their model cards.

    from hyte.hub import push_to_hub
    push_to_hub("runs/hyte-h-hpo", "my-org/hyte-h-hpo")      # checks, renders README.md, uploads
    push_to_hub("runs/hyte-h-hpo", "my-org/hyte-h-hpo", dry_run_dir="preview/")   # the repository, locally

The command line equivalent is ``hyte push MODEL_DIR --repo-id ORG/NAME``.
"""

from .card import render_adapter_card, render_model_card
from .push import check_adapter_dir, check_model_dir, check_repo_id, push_adapter, push_to_hub

__all__ = [
    "check_adapter_dir",
    "check_model_dir",
    "check_repo_id",
    "push_adapter",
    "push_to_hub",
    "render_adapter_card",
    "render_model_card",
]
