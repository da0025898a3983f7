"""``hyte train mlm | contrastive | finetune | compatible | phrase --config FILE [--resume]
[--set section.field=value ...] [--print-config]``
(``compatible`` also takes ``--old OLD_MODEL``, the same as ``--set compatible.old_model=OLD_MODEL``)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ..artifacts import CARD_FILE
from ..io import read_json_file
from ..training.config_files import documented_yaml, load_config, parse_override


def _print_config(args: argparse.Namespace) -> int:
    """--print-config: the run's config (or, without --config, the stage's defaults) as a commented YAML file."""
    from ..training.config import ConfigError, RunConfig

    if args.config is None:
        if args.set or args.resume or args.overwrite or getattr(args, "old", None):
            raise ConfigError("--print-config without --config prints the defaults: give --config FILE to see "
                              "your file with its --set changes")
        config = RunConfig(stage=args.stage)
        header = (f"hyte train {args.stage}: every field at its default, each under what it means. Keep the fields "
                  f"your run needs (at least data and training.output_dir), then: hyte train {args.stage} "
                  "--config THIS_FILE")
    else:
        config = load_config(args.config, _overrides(args), stage=args.stage)
        header = f"hyte train {args.stage} --config {args.config}: every field as this run would use it"
    print(documented_yaml(config, header), end="")
    return 0


def _overrides(args: argparse.Namespace) -> dict:
    fields = [field for field, _ in args.set]
    repeated = sorted({field for field in fields if fields.count(field) > 1})
    if repeated:  # dict() would keep the last value and drop the others without a word
        from ..training.config import ConfigError

        raise ConfigError(f"--set {', '.join(repeated)} given more than once: set each field once")
    overrides = dict(args.set)
    if getattr(args, "old", None):
        overrides["compatible.old_model"] = args.old
    return overrides


def _train(args: argparse.Namespace) -> int:
    from ..runner import run
    from ..training.config import ConfigError
    from ..training.run_folder import claim_output_dir, finished_run, resume_checkpoint

    if args.print_config:
        return _print_config(args)
    if args.config is None:
        raise ConfigError(f"hyte train {args.stage} needs --config FILE (YAML or JSON; configs/ holds examples, and "
                          f"`hyte train {args.stage} --print-config` prints every field with its default)")

    config = load_config(args.config, _overrides(args), stage=args.stage)  # a file of another stage is refused
    if args.resume and args.overwrite:
        raise ConfigError("--resume continues the run in output_dir and --overwrite replaces it: give one")
    if args.resume:  # the command line asks for a checkpoint; the library starts fresh when there is none
        claim_output_dir(config, resume=True)  # a model folder, another run, no run.json: before anything slow
    trains = args.overwrite or finished_run(config) is None  # else run() returns the finished model untouched
    if args.resume and trains:
        checkpoint = resume_checkpoint(config, resume=True)
        if checkpoint is None:  # the folder holds no run at all (claim_output_dir refuses the rest)
            raise ConfigError(f"--resume: {config.training.output_dir} holds no checkpoint to resume from; drop "
                              "--resume to start this run")
        print(f"resuming from {checkpoint}")
    started = time.perf_counter()
    try:
        final = run(config, resume=args.resume, overwrite=args.overwrite)
    except ConfigError as error:  # found once the model or data is built: name the file it came from
        raise ConfigError(f"{args.config}: {error}") from error
    except KeyboardInterrupt:  # Ctrl-C: one line saying what is kept (C131a), not a traceback
        print(f"hyte train: interrupted: {_after_interrupt(config)}", file=sys.stderr)
        return 130  # the shell's code for a command ended by SIGINT
    print(f"final model: {final}")
    seconds = time.perf_counter() - started
    steps = (read_json_file(Path(final) / CARD_FILE, "the final model's card").get("training") or {}).get("steps")
    if steps and trains:
        print(f"{steps} steps in {seconds:.0f} s: {seconds / steps:.2f} s a step (loading the model and preparing the "
              "data included; a budget of more steps scales from it)")
    return 0


def _after_interrupt(config) -> str:
    """What an interrupted run left to continue from, and the command that continues it."""
    from ..training.run_folder import RunFolderError, resume_checkpoint

    try:
        checkpoint = resume_checkpoint(config, resume=True)
    except RunFolderError:  # only incomplete checkpoints (killed while saving the first one)
        checkpoint = None
    if checkpoint is None:  # interrupted before its first checkpoint (mining, loading, the first steps)
        return ("no checkpoint was written yet, so there is nothing to resume: rerun the same command (without "
                "--resume) to start again")
    return f"{checkpoint} is its last complete checkpoint: rerun the same command with --resume to continue from it"


def _override(text: str) -> tuple[str, object]:
    """argparse type of --set: "section.field=value" (a space instead of "=" is named here, not as a stray
    argument)."""
    try:
        return parse_override(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def add_commands(subparsers) -> None:
    train = subparsers.add_parser("train", help="train a model: mlm (stage 1), contrastive (2), finetune (3)")
    stages = train.add_subparsers(dest="stage", required=True)
    for stage, description in (("mlm", "masked-language modelling of HyTE-FH / EucBERT"),
                               ("contrastive", "contrastive pairs, in-batch negatives"),
                               ("phrase", "H+ phrase heads: CRF units, importance, lexical view (joint loss)"),
                               ("finetune", "contrastive fine-tuning with mined hard negatives"),
                               ("compatible", "a new model whose queries search an old model's index (HBCT)")):
        parser = stages.add_parser(stage, help=description)
        parser.add_argument("--config", default=None, help="YAML or JSON run configuration (configs/ holds examples)")
        parser.add_argument("--print-config", action="store_true",
                            help="print the config as a YAML file with every field and what it means, and exit "
                                 "(without --config: the stage's defaults, a first config to edit)")
        parser.add_argument("--resume", action="store_true", help="continue from the last checkpoint in output_dir")
        parser.add_argument("--overwrite", action="store_true",
                            help="replace the run output_dir already holds (its final model is replaced only once "
                                 "the new one is written)")
        parser.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE", type=_override,
                            help="override a config field, e.g. --set training.max_steps=20")
        if stage == "compatible":
            parser.add_argument("--old", default=None, metavar="OLD_MODEL",
                                help="the old model whose index the new model must search (frozen; its "
                                     "document embeddings are computed once); overrides compatible.old_model")
        parser.set_defaults(func=_train)
