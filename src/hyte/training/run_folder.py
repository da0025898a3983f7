"""A run's output folder: what it holds and whose it is. The run's identity (``run.json``: its settings, but what a
resumption may change), the claim of a folder before anything slow (a finished run is reused, another run's folder
refused, a live run's folder held for its life), and resumption from the last complete checkpoint."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any

from transformers import TrainerCallback
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

from ..artifacts import ALL_KINDS, CARD_FILE, CHECKPOINT_STATE_FILE, RUN_FILE, claim_folder, holds
from ..errors import HyteError
from ..identity import differences, digest
from ..io import read_json_file, write_text_atomically
from .config import RunConfig

__all__ = [
    "RUN_FILE",
    "RUN_LOCK_FILE",
    "RecordRun",
    "RunFolderError",
    "checkpoint_is_complete",
    "claim_output_dir",
    "finished_run",
    "finished_run_differences",
    "hold_output_dir",
    "identity_digest",
    "remove_checkpoints",
    "resume_checkpoint",
]

logger = logging.getLogger(__name__)


def remove_checkpoints(output_dir: str | os.PathLike) -> int:
    """Delete the Trainer checkpoints (``checkpoint-*``) of a finished run, which only take space once
    ``output_dir/final`` is written; returns how many there were."""
    checkpoints = sorted(Path(output_dir).glob(f"{PREFIX_CHECKPOINT_DIR}-*"))
    for checkpoint in checkpoints:
        shutil.rmtree(checkpoint)
    return len(checkpoints)


# Fields that may change between an interrupted run and its resumption: where it and its mined-negatives cache are
# (the cache's files are named by a hash of what they hold), how long it goes on, how often it saves and logs.
# Everything else (model, data, loss, mining, optimiser) makes it another run.
_RESUMABLE_CHANGES = {"training": ("output_dir", "max_steps", "save_steps", "save_total_limit", "logging_steps",
                                   "dataloader_num_workers"),
                      "mining": ("cache_dir",)}
# Fields added after runs began recording their identity, with their defaults: left out of the identity at the
# default, so a run recorded before a field existed keeps its identity (and its final model stays "finished").
_ADDED_FIELDS = {("training", "radius_head_learning_rate"): None, ("data", "names"): None,
                 ("data", "taxonomy_format"): None, ("data", "taxonomy_split"): "mixed_hop",
                 ("data", "taxonomy_seed"): 0, ("data", "concept_text"): "name", ("data", "taxonomy_negatives"): 1}


class RunFolderError(HyteError, ValueError):
    """An output folder holds a run that this one would overwrite or does not continue."""


def _recorded_run(output_dir: Path) -> dict:
    """The run identity ``run.json`` records (without the warnings ``RecordRun`` adds); a damaged file is a one-line
    error naming it."""
    recorded = read_json_file(output_dir / RUN_FILE, f"it records which run {output_dir} holds: start over there "
                                                     "with --overwrite, or choose another training.output_dir")
    return _without_resumable_changes({key: value for key, value in recorded.items() if key != "warnings"})


def _without_resumable_changes(values: dict) -> dict:
    """``values`` (a config's sections) without the fields a resumption may change; a run.json written before a field
    joined _RESUMABLE_CHANGES still records it."""
    return {section: {k: v for k, v in fields.items() if k not in _RESUMABLE_CHANGES.get(section, ())}
            if isinstance(fields, dict) else fields for section, fields in values.items()}


def _identity(config: RunConfig) -> dict[str, Any]:
    values = _without_resumable_changes(config.to_dict())
    for (section, name), default in _ADDED_FIELDS.items():
        if values[section].get(name) == default:
            del values[section][name]
    return json.loads(json.dumps(values, default=str))


def claim_output_dir(config: RunConfig, resume: bool, overwrite: bool = False) -> None:
    """Check ``training.output_dir`` before anything slow (model, mining, encoding); ``RecordRun`` records the run
    there once training starts.

    A folder holding a run (checkpoints or ``final/``) is never replaced silently: ``resume`` continues it only when
    it is the same run (same ``run.json`` identity) with a checkpoint to go on from; ``overwrite`` replaces it, saying
    so (only its checkpoints, which the new run would resume from, are deleted before the new ``final/`` is written
    atomically); else RunFolderError, offering a way out that works (a new output_dir, --overwrite)."""
    output_dir = Path(config.training.output_dir)
    _claim_place(output_dir)
    checkpoints = sorted(output_dir.glob(f"{PREFIX_CHECKPOINT_DIR}-*"))
    finished = (output_dir / "final").is_dir()
    if not (checkpoints or finished):
        return
    held = ", ".join(part for part in ("a finished model (final/)" if finished else "",
                                       f"{len(checkpoints)} checkpoint(s)" if checkpoints else "") if part)
    if not resume:
        if not overwrite:
            # --resume is offered only where it works: a checkpoint to go on from and run.json to check it against
            # (else --resume sent the user back here); past max_steps it needs a larger one.
            resumable = checkpoints and (output_dir / RUN_FILE).is_file()
            hint = ("" if not resumable else "pass --resume to continue it, " if finished_run(config) is None else
                    "raise training.max_steps and pass --resume to train it further, ")
            raise RunFolderError(f"{output_dir} already holds a run ({held}): {hint}--overwrite to replace it, or "
                                 f"choose another training.output_dir.")
        logger.warning("replacing the run in %s (%s)", output_dir, held)
        remove_checkpoints(output_dir)
        return
    if not (output_dir / RUN_FILE).is_file():  # deleted, or a copy without it: the checkpoints' run is unknown
        raise RunFolderError(
            f"{output_dir} holds {held} but no {RUN_FILE}, which records the run's settings: they cannot be checked "
            f"against this config, and resuming could mix two runs. Start over there with --overwrite, or choose "
            f"another training.output_dir")
    changed = differences(_recorded_run(output_dir), _identity(config))
    if changed:
        raise RunFolderError(
            f"{output_dir} holds another run; resuming would mix the two ({'; '.join(changed[:5])}). Use "
            f"another training.output_dir, or start over in this one without resume (overwrite).")
    if finished_run(config) is not None:
        return  # nothing to train: run() returns the finished model as it is
    if not checkpoints:  # final/ short of max_steps and no checkpoint (deleted, or none saved)
        card = output_dir / "final" / CARD_FILE
        trained = f"trained for {_final_training(card).get('steps')} steps" if card.is_file() else "of unknown length"
        raise RunFolderError(
            f"cannot resume: {output_dir} holds a final model ({trained}; training.max_steps = "
            f"{config.training.max_steps}) but no checkpoint to continue it from. To train it further, start a new "
            f"run from it (model.path {output_dir / 'final'}, model.build load) with another training.output_dir; or "
            f"start over with --overwrite")
    resume_checkpoint(config, resume=True)  # refuses damaged, incomplete or finished checkpoints now, not after mining


# The folders a run must not sit in: every kind but another run's (run.json is a name users give their config files
# too, and a run inside another run's folder harms neither) and a checkpoint (also a model or adapter folder, refused
# as such). Derived, so that a kind added to hyte.artifacts is refused here too.
_NO_RUN_INSIDE = tuple(kind for kind in ALL_KINDS if kind not in ("run", "checkpoint"))


RUN_LOCK_FILE = ".hyte-run.lock"


@contextlib.contextmanager
def hold_output_dir(output_dir: Path):
    """Hold ``training.output_dir`` for the life of one run: a second run into it, started while this one is alive
    (perhaps before it has checkpoints to be refused by), is refused with a RunFolderError instead of racing it to
    final/. An advisory lock (``fcntl.flock``), which the operating system drops however the process ends; the file
    goes when the run ends, and with it a folder this created and nothing else wrote to. Held by the main process
    only: the other processes of a distributed run share its folder."""
    import fcntl

    if int(os.environ.get("RANK", "0")) != 0:
        yield
        return
    _claim_place(output_dir)  # before a lock file could be written into a model folder
    created = not output_dir.exists()
    output_dir.mkdir(parents=True, exist_ok=True)
    lock = output_dir / RUN_LOCK_FILE
    handle = open(lock, "a+", encoding="utf-8")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise RunFolderError(f"{output_dir} is in use by another run ({holder}) that is still going: wait for it to "
                             "finish, or choose another training.output_dir") from None
    handle.truncate(0)  # (append mode: the write lands at the new end)
    handle.write(f"process {os.getpid()}")
    handle.flush()
    try:
        yield
    finally:
        # Removed while still held, so the folder keeps only the run's own files (and a finished run's folder is
        # as a rerun left it).
        lock.unlink(missing_ok=True)
        handle.close()
        if created and not any(output_dir.iterdir()):
            output_dir.rmdir()


def _claim_place(output_dir: Path) -> None:
    """``claim_folder``'s refusal (OutputRefused) when ``output_dir`` is a file, or a model, adapter, index,
    vector or PostgreSQL server folder, or lies inside one: the run's checkpoints and final/ would sit among that
    folder's files, and ``hyte push`` would upload them with its model."""
    final = output_dir.name == "final" and holds(output_dir, "model")  # a run's final/ given for the run itself
    remedy = (f"set training.output_dir to the run's folder {output_dir.parent}" if final else
              f"e.g. runs/{output_dir.name}")
    claim_folder(output_dir, option="training.output_dir", remedy=remedy, refuse_inside=_NO_RUN_INSIDE)


def finished_run(config: RunConfig) -> Path | None:
    """``output_dir/final`` when it holds this run trained to ``training.max_steps`` (its card's step count), else
    None: resuming such a run has nothing left to do. A final model whose card records another run identity (an
    ``--overwrite`` run interrupted before its own final/ replaced the earlier one) is not this run's."""
    card = Path(config.training.output_dir) / "final" / CARD_FILE
    if not card.is_file():
        return None
    training = _final_training(card)
    if training.get("run_identity") not in (None, identity_digest(config), _earlier_identity_digest(config)):
        return None  # (None: saved before the digest was recorded)
    steps = training.get("steps")
    return card.parent if isinstance(steps, int) and steps >= config.training.max_steps else None


def identity_digest(config: RunConfig) -> str:
    """12 hex digits naming the run identity (``_identity``), recorded in its final model's card."""
    return digest(_identity(config))


def _earlier_identity_digest(config: RunConfig) -> str:
    """The digest a final model saved before ``mining.cache_dir`` left the identity records for this config: such a
    model stays this run's (finished_run) where its config still names the same cache."""
    identity = _identity(config)
    cache_dir = config.mining.cache_dir  # as the JSON of the config recorded it: a Path as its text
    identity["mining"]["cache_dir"] = None if cache_dir is None else str(cache_dir)
    return digest(identity)


def _final_training(card: Path) -> dict:
    """The "training" record of a final model's ``hyte_card.json``; a damaged card is a one-line error naming it."""
    return read_json_file(card, "the run's final model is damaged: start over with --overwrite").get("training", {})


def finished_run_differences(config: RunConfig) -> list[str]:
    """How the finished run in ``training.output_dir`` differs from ``config`` (empty when it is this run, trained to
    exactly ``training.max_steps``): what a caller that reuses finished runs must check first."""
    output_dir = Path(config.training.output_dir)
    recorded, card = output_dir / RUN_FILE, output_dir / "final" / CARD_FILE
    if not recorded.is_file() or not card.is_file():
        return [f"{output_dir} lacks {RUN_FILE if not recorded.is_file() else 'final/' + CARD_FILE}"]
    changed = differences(_recorded_run(output_dir), _identity(config))
    steps = _final_training(card).get("steps")
    if steps != config.training.max_steps:
        changed.append(f"training steps: {steps!r} -> {config.training.max_steps!r}")
    return changed


class RecordRun(TrainerCallback):
    """Writes the run's identity (``run.json``, see ``claim_output_dir``) into its output folder as training
    starts, and warns when every loss logged so far is exactly 0: in the log at the first such step, and in
    ``run.json`` ("warnings") when the run ends that way. Not an error: a float32 InfoNCE loss is also exactly 0
    when every positive beats every negative by more than ~17 logits (a trained model on easy pairs); data that
    make it 0 whatever the model are refused before training (``contrastive_examples``)."""

    def __init__(self, config: RunConfig):
        self.config = config
        self.warned = False

    def on_train_begin(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            self._write(args, {})

    def on_log(self, args, state, control, logs=None, **kwargs):
        if state.is_world_process_zero and not self.warned and "loss" in (logs or {}) and _zero_loss_warning(state):
            self.warned = True
            logger.warning("%s", _zero_loss_warning(state))

    def on_train_end(self, args, state, control, **kwargs):
        warning = _zero_loss_warning(state) if state.is_world_process_zero else None
        if warning:
            logger.warning("%s", warning)
            self._write(args, {"warnings": [warning]})

    def _write(self, args, extra: dict) -> None:
        text = json.dumps({**_identity(self.config), **extra}, indent=2) + "\n"
        write_text_atomically(Path(args.output_dir) / RUN_FILE, text)


def _zero_loss_warning(state) -> str | None:
    """The warning when the run logged a loss and every one so far (earlier runs' included, when resumed) is exactly
    0, else None."""
    losses = [entry["loss"] for entry in state.log_history if "loss" in entry]
    if not losses or any(loss != 0 for loss in losses):
        return None
    return (f"the training loss was exactly 0 at every logged step up to step {state.global_step}: the model learns "
            "nothing (zero gradients). Does every query have a negative, a document other than copies of its "
            "positive? Check the training data (different documents per query) and loss.temperature")


# A checkpoint folder is complete when it holds the weights (full model or LoRA adapter; one file or a sharded
# index) and trainer_state.json, which the Trainer writes after them: a run killed while saving leaves one without.
_CHECKPOINT_WEIGHTS = ("model.safetensors", "model.safetensors.index.json", "adapter_model.safetensors",
                       "pytorch_model.bin", "pytorch_model.bin.index.json", "adapter_model.bin")


def checkpoint_is_complete(path: Path) -> bool:
    """Whether a Trainer checkpoint folder holds weights and trainer_state.json (see _CHECKPOINT_WEIGHTS)."""
    return holds(path, "checkpoint") and any((path / name).is_file() for name in _CHECKPOINT_WEIGHTS)


# The incomplete checkpoints already warned about in this process.
_WARNED_INCOMPLETE: set[tuple[Path, ...]] = set()


def resume_checkpoint(config: RunConfig, resume: bool) -> str | None:
    """The newest complete checkpoint in ``training.output_dir`` (None without ``resume`` or checkpoints).

    Newer incomplete ones (a run killed while saving) are skipped with a warning naming them; when every
    checkpoint is incomplete, RunFolderError names the folders to delete (transformers would only say it "can't
    find a valid checkpoint"); when the newest complete one's weights cannot be read, it names the file."""
    output_dir = Path(config.training.output_dir)
    if not resume or not output_dir.is_dir():
        return None
    names = {path: path.name.removeprefix(f"{PREFIX_CHECKPOINT_DIR}-")
             for path in output_dir.glob(f"{PREFIX_CHECKPOINT_DIR}-*") if path.is_dir()}
    steps = {path: int(step) for path, step in names.items() if step.isdigit()}
    checkpoints = sorted(steps, key=steps.get, reverse=True)
    incomplete = []
    for position, checkpoint in enumerate(checkpoints):
        if checkpoint_is_complete(checkpoint):
            damaged = _damaged_weights(checkpoint)
            if damaged:
                older = next((c for c in checkpoints[position + 1:]
                              if checkpoint_is_complete(c) and not _damaged_weights(c)), None)
                raise RunFolderError(f"cannot resume: {damaged}: " + (
                    f"delete {checkpoint} to resume from {older}, or start over with --overwrite" if older else
                    "start over with --overwrite (no earlier complete checkpoint to resume from)"))
            _refuse_finished_checkpoint(checkpoint, steps[checkpoint], config)
            if incomplete and tuple(incomplete) not in _WARNED_INCOMPLETE:  # once: resume checks run more than once
                _WARNED_INCOMPLETE.add(tuple(incomplete))
                logger.warning("skipping incomplete checkpoint(s) %s (no weights or %s: interrupted while saving?); "
                               "resuming from %s. Delete them to silence this warning.",
                               ", ".join(map(str, incomplete)), CHECKPOINT_STATE_FILE, checkpoint)
            else:
                logger.info("resuming from %s", checkpoint)
            return str(checkpoint)
        incomplete.append(checkpoint)
    if incomplete:
        raise RunFolderError(
            f"cannot resume: no complete checkpoint in {output_dir}; {', '.join(map(str, incomplete))} lack(s) the "
            f"weights (model.safetensors or adapter_model.safetensors) or {CHECKPOINT_STATE_FILE} (interrupted while "
            f"saving?): delete {'that folder' if len(incomplete) == 1 else 'those folders'} and start the run again "
            f"without --resume")
    return None


def _refuse_finished_checkpoint(checkpoint: Path, step: int, config: RunConfig) -> None:
    """RunFolderError for a checkpoint at or past ``training.max_steps``: the Trainer checks max_steps only after a
    step, so resuming it mid-epoch trained at least one step more and wrote final/ past max_steps."""
    max_steps = config.training.max_steps
    if step > max_steps:
        raise RunFolderError(f"cannot resume: {checkpoint} is at step {step}, past training.max_steps = {max_steps}, "
                             f"and a resumed run cannot go back: set training.max_steps above {step} to continue it, "
                             f"or start over with --overwrite")
    if step == max_steps:
        raise RunFolderError(f"cannot resume: {checkpoint} already reached training.max_steps = {max_steps}, but its "
                             f"final model is not in {Path(config.training.output_dir) / 'final'} (deleted, or the "
                             f"run stopped while writing it), and resuming would train past max_steps: raise "
                             f"training.max_steps to train on from it, or start over with --overwrite")


def _damaged_weights(checkpoint: Path) -> str | None:
    """Which safetensors file of a checkpoint cannot be read (cut short by a full disk or a copy), and why; None
    when all can. ``hyte train --resume`` checks it before anything slow: the Trainer fails on it only after the
    data is read and negatives are mined, with a traceback naming no file."""
    from safetensors import SafetensorError, safe_open

    for weights in sorted(checkpoint.glob("*.safetensors")):
        try:
            with safe_open(str(weights), framework="pt"):
                pass  # opening reads the header and checks it against the file's size
        except (SafetensorError, OSError) as error:
            return f"{weights} is damaged ({error})"
    return None
