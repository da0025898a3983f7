"""``hyte push``: the command line of ``hyte.hub`` (a model folder, or a LoRA adapter with ``--adapter``)."""

from __future__ import annotations

import argparse
import warnings


def add_commands(subparsers: argparse._SubParsersAction) -> None:
    """Add ``push`` to the ``hyte`` command's subparsers."""
    push = subparsers.add_parser(
        "push",
        help="upload a HyTE model (or LoRA adapter) folder to the Hugging Face Hub, with a model card",
        description="Check the folder, render its model card into README.md and upload it in one commit. The token "
                    "comes from HF_TOKEN or `hf auth login`.",
    )
    push.add_argument("model_dir", metavar="MODEL_DIR", help="a saved HyTE model folder (or, with --adapter, a PEFT "
                                                             "adapter folder)")
    push.add_argument("--repo-id", required=True, metavar="ORG/NAME", help="the Hub repository (created if needed)")
    push.add_argument("--private", action="store_true", help="create the repository as private")
    push.add_argument("--revision", metavar="R", help="branch to commit to (created if missing; default main)")
    push.add_argument("--dry-run", metavar="DIR", dest="dry_run_dir",
                      help="write the repository content to DIR instead of uploading (new or empty folder)")
    push.add_argument("--adapter", action="store_true", help="MODEL_DIR is a PEFT LoRA adapter folder")
    push.add_argument("--base-model", metavar="ORG/NAME",
                      help="with --adapter: the Hub id of the adapter's base model, written into adapter_config.json")
    push.add_argument("--commit-message", help="default: 'Upload HyTE model' / 'Upload HyTE LoRA adapter'")
    push.set_defaults(func=_push)


def _push(args: argparse.Namespace) -> int:
    from ..hub.push import push_adapter, push_to_hub

    options = dict(private=args.private, revision=args.revision, dry_run_dir=args.dry_run_dir,
                   commit_message=args.commit_message)
    if args.adapter:
        result = push_adapter(args.model_dir, args.repo_id, base_model=args.base_model, **options)
    elif args.base_model is not None:
        raise ValueError("--base-model applies to adapters only; add --adapter or drop it.")
    else:
        with warnings.catch_warnings(record=True) as notices:
            warnings.simplefilter("always", UserWarning)
            result = push_to_hub(args.model_dir, args.repo_id, **options)
        for notice in notices:
            print(f"note: {notice.message}")
    print(f"wrote the content of {args.repo_id} to {result} (nothing uploaded)" if args.dry_run_dir is not None
          else f"pushed {args.model_dir} to {result}")
    return 0
