"""What every training stage shares: TrainingArguments from a RunConfig, resume, LoRA (peft), the learned
temperature, held-out evaluation, the final model folder (written atomically), and ``train_pairs``, the
contrastive loop of stages 2 and 3 that the feature stages (``hyte.compatibility``, ``hyte.phrase``) build on."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import torch
from transformers import Trainer, TrainerCallback, TrainingArguments
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

from ..bundled import resolve_model
from ..errors import HyteError
from ..io import atomic_directory, read_json_file, refuse_file_above, write_text_atomically
from ..results import ARTIFACT_MARKERS, enclosing_artifact, portable_path, portable_paths, public_model_name
from ..retrieval.folder import FOLDER_FILE
from .config import ConfigError, LoraSpec, RunConfig
from .data import hierarchy_for, refuse_lone_batches
from .models import (
    BuiltModel,
    detach_plain_logit_scale,
    embed,
    encoder_for,
    log_logit_scale_parameter,
    logit_scale,
    unwrap,
)
from .scale_out import world_size
from .trainer import ContrastiveCollator, ContrastiveTrainer

__all__ = [
    "ONTOLOGY_DATASETS",
    "RUN_FILE",
    "RUN_LOCK_FILE",
    "RecordRun",
    "RunFolderError",
    "TrainingDivergedError",
    "apply_lora",
    "check_lora_targets",
    "claim_output_dir",
    "finished_run_differences",
    "heldout_metrics",
    "hold_output_dir",
    "refuse_diverged",
    "remove_checkpoints",
    "resume_checkpoint",
    "save_final",
    "train_pairs",
    "training_arguments",
]

logger = logging.getLogger(__name__)


# Card names of the built-in training sources.
ONTOLOGY_DATASETS = {"hpo": ["HPO (Human Phenotype Ontology)"], "icd10": ["ICD-10-CM"],
                     "hpo+icd10": ["HPO (Human Phenotype Ontology)", "ICD-10-CM"]}


def training_arguments(config: RunConfig, **extra: Any) -> TrainingArguments:
    spec = config.training
    if spec.warmup_steps >= spec.max_steps > 0:  # larger explicit values are refused by the config's validation
        logger.warning("training.warmup_steps = %d is not below training.max_steps = %d: the whole run is warm-up and "
                       "the learning rate never reaches %g; lower warmup_steps for a run this short",
                       spec.warmup_steps, spec.max_steps, spec.learning_rate)
    return TrainingArguments(
        output_dir=spec.output_dir, max_steps=spec.max_steps, per_device_train_batch_size=spec.per_device_train_batch_size,
        gradient_accumulation_steps=spec.gradient_accumulation_steps, learning_rate=spec.learning_rate,
        weight_decay=spec.weight_decay, warmup_steps=spec.warmup_steps, lr_scheduler_type=spec.lr_scheduler_type,
        max_grad_norm=spec.max_grad_norm, logging_steps=spec.logging_steps, save_strategy="steps",
        save_steps=spec.save_steps, save_total_limit=spec.save_total_limit, seed=spec.seed, data_seed=spec.seed,
        bf16=spec.bf16, activation_checkpointing=spec.gradient_checkpointing,
        dataloader_num_workers=spec.dataloader_num_workers, dataloader_pin_memory=False, report_to="none",
        remove_unused_columns=False, disable_tqdm=not sys.stderr.isatty(),  # no progress bars in a log file
        # Several processes: every parameter takes part in each step (HyTE-H drops its backbone's unused pooler; the
        # logit scale is averaged by ContrastiveTrainer), so DDP need not search the graph for unused ones.
        ddp_find_unused_parameters=False,
        # Without an accelerator, say so: accelerate then runs torchrun's processes as multi-CPU data parallel (gloo);
        # left to detect it, it treats each process as a lone one and they would all write the same files.
        use_cpu=not (torch.cuda.is_available() or torch.backends.mps.is_available()),
        **extra,
    )


def remove_checkpoints(output_dir: str | os.PathLike) -> int:
    """Delete the Trainer checkpoints (``checkpoint-*``) of a finished run; returns how many there were.

    They are what ``resume=True`` continues from while a run is unfinished; once ``output_dir/final`` is written
    they only take space (two copies of the model and its optimizer state)."""
    checkpoints = sorted(Path(output_dir).glob(f"{PREFIX_CHECKPOINT_DIR}-*"))
    for checkpoint in checkpoints:
        shutil.rmtree(checkpoint)
    return len(checkpoints)


RUN_FILE = "run.json"  # the identity of the run an output folder holds (claim_output_dir)
# Fields that may change between an interrupted run and its resumption: where it and its mined-negatives cache are
# (the cache's files are named by a hash of what they hold), how long it goes on, how often it saves and logs.
# Everything else (model, data, loss, mining, optimiser) makes it another run.
_RESUMABLE_CHANGES = {"training": ("output_dir", "max_steps", "save_steps", "save_total_limit", "logging_steps",
                                   "dataloader_num_workers"),
                      "mining": ("cache_dir",)}
# Fields left out of the identity after final models began recording its digest: such a model's digest is computed
# with them, and it stays this run's (finished_run) where its config still names the same values.
_LEFT_OUT_LATER = (("mining", "cache_dir"),)
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


def _differences(old: dict, new: dict, prefix: str = "") -> list[str]:
    if not (isinstance(old, dict) and isinstance(new, dict)):
        return [] if old == new else [f"{prefix[:-1]}: {old!r} -> {new!r}"]
    return [d for key in sorted(set(old) | set(new)) for d in _differences(old.get(key), new.get(key), f"{prefix}{key}.")]


def claim_output_dir(config: RunConfig, resume: bool, overwrite: bool = False) -> None:
    """Check ``training.output_dir`` before anything slow (model, mining, encoding); ``RecordRun`` records the run
    there once training starts (a run that fails before it leaves nothing behind).

    A folder holding a run (checkpoints or ``final/``) is never replaced silently: ``resume`` continues it only when
    it is the same run (same ``run.json`` identity: everything but where it and its mining cache are, how long it
    goes on, how often it saves and logs) and there is a checkpoint it can go on from, ``overwrite`` replaces it (say
    so, nothing is deleted before the new ``final/`` is written atomically except its checkpoints, which the new run
    would otherwise resume from); else RunFolderError, offering a way out that works (a new output_dir, --overwrite)."""
    output_dir = Path(config.training.output_dir)
    _refuse_model_folder(output_dir)
    checkpoints = sorted(output_dir.glob(f"{PREFIX_CHECKPOINT_DIR}-*")) if output_dir.is_dir() else []
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
    differences = _differences(_recorded_run(output_dir), _identity(config))
    if differences:
        raise RunFolderError(
            f"{output_dir} holds another run; resuming would mix the two ({'; '.join(differences[:5])}). Use "
            f"another training.output_dir, or start over in this one without resume (overwrite).")
    if finished_run(config) is not None:
        return  # nothing to train: run() returns the finished model as it is
    if not checkpoints:  # final/ short of max_steps and no checkpoint (deleted, or none saved)
        card = output_dir / "final" / "hyte_card.json"
        trained = f"trained for {_final_training(card).get('steps')} steps" if card.is_file() else "of unknown length"
        raise RunFolderError(
            f"cannot resume: {output_dir} holds a final model ({trained}; training.max_steps = "
            f"{config.training.max_steps}) but no checkpoint to continue it from. To train it further, start a new "
            f"run from it (model.path {output_dir / 'final'}, model.build load) with another training.output_dir; or "
            f"start over with --overwrite")
    resume_checkpoint(config, resume=True)  # refuses damaged, incomplete or finished checkpoints now, not after mining


# What marks a folder that a run must not sit in: a model's, an adapter's, an index's or vector shards' files;
# not run.json, a name users give their config files, and a run inside another run's folder harms neither.
_NO_RUN_INSIDE = tuple(marker for marker in ARTIFACT_MARKERS if marker != RUN_FILE)


RUN_LOCK_FILE = ".hyte-run.lock"


@contextlib.contextmanager
def hold_output_dir(output_dir: Path):
    """Hold ``training.output_dir`` for the life of one run: a second run into it, started while this one is alive
    (and still loading, mining or training, so before it has checkpoints to be refused by), is refused with a
    RunFolderError instead of racing it to final/. An advisory lock (``fcntl.flock``) on a file in the folder: the
    operating system drops it when the process ends, however it ends, so no stale lock outlives a crash; the file
    goes when the run ends, and a folder this created and nothing else wrote to goes with it (a run that fails
    early leaves nothing behind).
    Held by the main process only: the other processes of a distributed run share its folder."""
    import fcntl

    if int(os.environ.get("RANK", "0")) != 0:
        yield
        return
    _refuse_model_folder(output_dir)  # before a lock file could be written into a model folder
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
    handle.seek(0)
    handle.truncate()
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


def _refuse_model_folder(output_dir: Path) -> None:
    """RunFolderError when ``output_dir`` is a model or index folder, or lies inside one (``enclosing_artifact``, the
    check ``hyte index build`` makes of its output): the run's checkpoints and final/ would sit among that folder's
    files, and ``hyte push`` would upload them with its model. A file there, or above it, is refused too (the
    OS's "[Errno 17] File exists" came only after the model was loaded)."""
    if output_dir.is_file():
        raise RunFolderError(f"training.output_dir {output_dir} is a file, not a folder: the run writes checkpoints "
                             f"and final/ into a folder; choose another training.output_dir (e.g. runs/my-run)")
    refuse_file_above(output_dir)
    if (output_dir / "config.json").is_file() or (output_dir / FOLDER_FILE).is_file():
        run_folder = (f": set training.output_dir to the run's folder {output_dir.parent}"
                      if output_dir.name == "final" else "")
        raise RunFolderError(f"training.output_dir {output_dir} is a model or index folder, not a run folder"
                             f"{run_folder or ': choose another training.output_dir'} (the run writes checkpoints "
                             f"and final/ into it)")
    enclosing = enclosing_artifact(output_dir, _NO_RUN_INSIDE)
    if enclosing:
        parent, inside = enclosing
        raise RunFolderError(f"training.output_dir {output_dir} is inside a model or index folder ({parent} "
                             f"holds {inside}): give the run a folder of its own outside it, e.g. "
                             f"{parent.parent / 'runs' / output_dir.name}")


def finished_run(config: RunConfig) -> Path | None:
    """``output_dir/final`` when it holds this run trained to ``training.max_steps`` (its card's step count), else
    None: resuming such a run has nothing left to do, and training again would only rewrite it. A final model of
    another run (an ``--overwrite`` run interrupted before its own final/ replaced the earlier one: its card records
    another run identity) is not this run's (--resume returned it as finished)."""
    card = Path(config.training.output_dir) / "final" / "hyte_card.json"
    if not card.is_file():
        return None
    training = _final_training(card)
    if training.get("run_identity") not in (None, _identity_digest(config), _earlier_identity_digest(config)):
        return None  # (None: saved before the digest was recorded)
    steps = training.get("steps")
    return card.parent if isinstance(steps, int) and steps >= config.training.max_steps else None


def _identity_digest(config: RunConfig) -> str:
    """12 hex digits naming the run identity (``_identity``), recorded in its final model's card."""
    return _digest(_identity(config))


def _earlier_identity_digest(config: RunConfig) -> str:
    """The digest a final model saved before _LEFT_OUT_LATER's fields left the identity records for this config."""
    identity, values = _identity(config), json.loads(json.dumps(config.to_dict(), default=str))
    for section, name in _LEFT_OUT_LATER:
        identity[section][name] = values[section][name]
    return _digest(identity)


def _digest(identity: dict) -> str:
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:12]


def _final_training(card: Path) -> dict:
    """The "training" record of a final model's ``hyte_card.json``; a damaged card is a one-line error naming it."""
    return read_json_file(card, "the run's final model is damaged: start over with --overwrite").get("training", {})


def finished_run_differences(config: RunConfig) -> list[str]:
    """How the finished run in ``training.output_dir`` differs from ``config`` (empty when it is this run, trained to
    exactly ``training.max_steps``): what a caller that reuses finished runs must check first."""
    output_dir = Path(config.training.output_dir)
    recorded, card = output_dir / RUN_FILE, output_dir / "final" / "hyte_card.json"
    if not recorded.is_file() or not card.is_file():
        return [f"{output_dir} lacks {RUN_FILE if not recorded.is_file() else 'final/hyte_card.json'}"]
    differences = _differences(_recorded_run(output_dir), _identity(config))
    steps = _final_training(card).get("steps")
    if steps != config.training.max_steps:
        differences.append(f"training steps: {steps!r} -> {config.training.max_steps!r}")
    return differences


class SentenceTransformerCheckpoints(TrainerCallback):
    """Makes every checkpoint of a HyTE embedding model a sentence-transformers folder too: without its
    ``modules.json``, ``SentenceTransformer(checkpoint)`` would mean-pool the token points and drop the model's own
    pooling and specificity head, silently (the final model gets the same files from ``save_final``)."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

    def on_save(self, args, state, control, model=None, **kwargs):
        from ..integrations.sentence_transformers import add_sentence_transformer_files

        folder = Path(args.output_dir) / f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}"
        if model is not None and state.is_world_process_zero and not hasattr(model, "peft_config") and folder.is_dir():
            add_sentence_transformer_files(model, self.tokenizer, folder)


class RecordRun(TrainerCallback):
    """Writes the run's identity (``run.json``, see ``claim_output_dir``) into its output folder as training
    starts, and warns when every loss logged so far is exactly 0: in the log at the first such step, and in
    ``run.json`` ("warnings") when the run ends that way.

    A warning, not an error: a float32 InfoNCE loss is also exactly 0 when every positive beats every negative by more
    than ~17 logits (an already trained model on easy pairs), which is no reason to throw a run away. Data that make
    it 0 whatever the model (no query with a negative) are refused before training (``contrastive_examples``)."""

    def __init__(self, config: RunConfig):
        self.config = config
        self.warned = False

    def on_train_begin(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            self._write(args, {})

    def on_log(self, args, state, control, logs=None, **kwargs):
        if state.is_world_process_zero and not self.warned and "loss" in (logs or {}) and _zero_losses(state):
            self.warned = True
            logger.warning("%s", _zero_loss_warning(state))

    def on_train_end(self, args, state, control, **kwargs):
        if state.is_world_process_zero and _zero_losses(state):
            warning = _zero_loss_warning(state)
            logger.warning("%s", warning)
            self._write(args, {"warnings": [warning]})

    def _write(self, args, extra: dict) -> None:
        text = json.dumps({**_identity(self.config), **extra}, indent=2) + "\n"
        write_text_atomically(Path(args.output_dir) / RUN_FILE, text)


def _zero_losses(state) -> bool:
    """Whether the run logged a loss and every one so far (earlier runs' included, when resumed) is exactly 0."""
    losses = [entry["loss"] for entry in state.log_history if "loss" in entry]
    return bool(losses) and all(loss == 0 for loss in losses)


def _zero_loss_warning(state) -> str:
    return (f"the training loss was exactly 0 at every logged step up to step {state.global_step}: the model learns "
            "nothing (zero gradients). Does every query have a negative, a document other than copies of its "
            "positive? Check the training data (different documents per query) and loss.temperature")


# A checkpoint folder is complete when it holds the weights (full model or LoRA adapter; one file or a sharded
# index) and trainer_state.json, which the Trainer writes after them: a run killed while saving leaves one without.
_CHECKPOINT_WEIGHTS = ("model.safetensors", "model.safetensors.index.json", "adapter_model.safetensors",
                       "pytorch_model.bin", "pytorch_model.bin.index.json", "adapter_model.bin")
_CHECKPOINT_STATE = "trainer_state.json"


def _checkpoint_step(path: Path) -> int | None:
    step = path.name[len(PREFIX_CHECKPOINT_DIR) + 1:]
    return int(step) if path.name.startswith(f"{PREFIX_CHECKPOINT_DIR}-") and step.isdigit() else None


def checkpoint_is_complete(path: Path) -> bool:
    """Whether a Trainer checkpoint folder holds weights and trainer_state.json (see _CHECKPOINT_WEIGHTS)."""
    return (path / _CHECKPOINT_STATE).is_file() and any((path / name).is_file() for name in _CHECKPOINT_WEIGHTS)


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
    steps = {path: _checkpoint_step(path) for path in output_dir.glob(f"{PREFIX_CHECKPOINT_DIR}-*") if path.is_dir()}
    checkpoints = sorted((path for path, step in steps.items() if step is not None), key=steps.get, reverse=True)
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
                               ", ".join(map(str, incomplete)), _CHECKPOINT_STATE, checkpoint)
            else:
                logger.info("resuming from %s", checkpoint)
            return str(checkpoint)
        incomplete.append(checkpoint)
    if incomplete:
        raise RunFolderError(
            f"cannot resume: no complete checkpoint in {output_dir}; {', '.join(map(str, incomplete))} lack(s) the "
            f"weights (model.safetensors or adapter_model.safetensors) or {_CHECKPOINT_STATE} (interrupted while "
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


def check_lora_targets(model, config: RunConfig) -> None:
    """ConfigError naming the ``lora.target_modules`` that match no module of ``model``, to be called as soon as the
    model is built: peft refuses them only once the data is read and negatives are mined, and only when none
    matches (a misspelt name beside a right one was dropped without a word). Names match as in peft: a module's
    full name or its last parts. The default list also names HyTE-H's projection: a model without one adapts the
    others."""
    if config.lora.r == 0:
        return
    names = [name for name, _ in model.named_modules()]

    def unmatched(wanted: list[str]) -> list[str]:
        return [target for target in wanted if not any(name == target or name.endswith(f".{target}") for name in names)]

    targets = config.lora.target_modules
    missing = unmatched(targets)
    if missing and not (targets == LoraSpec().target_modules and len(missing) < len(targets)):
        linear = sorted({name.rpartition(".")[2] for name, module in model.named_modules()
                         if isinstance(module, torch.nn.Linear)})
        raise ConfigError(f"lora.target_modules names {', '.join(map(repr, missing))}, which {type(model).__name__} "
                          f"has no module of: give the names of its linear layers ({', '.join(linear)})")
    # peft trains and saves whole modules beside the adapters; a name that matches no module (a bare parameter such
    # as HyTE-H's scale, or a misspelling) was accepted and left frozen.
    not_modules = unmatched(config.lora.modules_to_save)
    if not_modules:
        parameters = {name.rpartition(".")[2] for name, _ in model.named_parameters()}
        bare = [name for name in not_modules if name in parameters]
        kind = (f"{', '.join(map(repr, bare))} {'is a parameter' if len(bare) == 1 else 'are parameters'}, not "
                "a module" if bare else "no module of the model has that name")
        raise ConfigError(f"lora.modules_to_save names {', '.join(map(repr, not_modules))}, which "
                          f"{type(model).__name__} has no module of ({kind}): peft saves whole modules only; name "
                          "modules (e.g. projection), or train every weight with lora.r: 0")


def apply_lora(built: BuiltModel, config: RunConfig) -> None:
    """Wrap the model with LoRA adapters (peft). A base that exists only in memory (e.g. a HyTE-H just built on an
    encoder, whose projection is freshly initialised) is saved to output_dir/base first, so that the adapter can be
    loaded onto exactly the model it was trained on."""
    if config.lora.r == 0:  # 0 = full fine-tuning; a negative rank is refused by the config's validation
        return
    from peft import LoraConfig, get_peft_model

    if config.model.build in ("hyte_fh", "eucbert"):
        logger.warning("LoRA on a new %s: its frozen weights are a random initialisation, so the adapters learn on "
                       "noise. Train it fully first (lora.r: 0), then adapt the trained model (model.build: load).",
                       config.model.build)
    if config.model.build != "load":
        base_dir = Path(config.training.output_dir) / "base"
        built.model.save_pretrained(base_dir)
        built.tokenizer.save_pretrained(base_dir)
        built.model.config.name_or_path = str(base_dir)
    lora = LoraConfig(r=config.lora.r, lora_alpha=config.lora.alpha, lora_dropout=config.lora.dropout,
                      target_modules=list(config.lora.target_modules),
                      modules_to_save=list(config.lora.modules_to_save) or None)
    built.model = get_peft_model(built.model, lora)


def heldout_metrics(built: BuiltModel, config: RunConfig) -> dict[str, float] | None:
    """nDCG@10 etc. on the held-out HPO branches (only meaningful for HPO-style training)."""
    if not config.evaluation.enabled or config.stage == "mlm":
        return None
    from ..evaluation.heldout import heldout_retrieval_set
    from ..evaluation.retrieval import evaluate_retrieval

    model = unwrap(built.model)
    was_training = model.training
    encoder = encoder_for(built, config.loss.max_document_length)
    queries, corpus, qrels = heldout_retrieval_set(
        config.evaluation.max_queries, config.evaluation.max_documents, seed=config.training.seed,
        test_fraction=config.data.hpo_test_fraction, split_seed=config.data.hpo_seed)
    metrics = evaluate_retrieval(encoder, queries, corpus, qrels, k_values=(1, 10, 100))
    model.train(was_training)
    return metrics


def save_final(built: BuiltModel, config: RunConfig, trainer: Trainer, evaluation: dict | None) -> Path:
    """Write output_dir/final completely, then swap it in (an interrupted save leaves the previous one). With
    several processes the first writes it and the others wait for it."""
    if trainer.is_world_process_zero():
        _write_final(built, config, trainer, evaluation)
    trainer.accelerator.wait_for_everyone()
    return Path(config.training.output_dir) / "final"


class TrainingDivergedError(HyteError, ValueError):
    """Training left NaN or Inf in the weights: the final model is not written (its vectors would all be NaN)."""


def refuse_diverged(model, config: RunConfig, step: int) -> None:
    """TrainingDivergedError naming the first non-finite weights, before ``final`` is written."""
    import torch

    bad = [name for name, parameter in model.named_parameters() if not torch.isfinite(parameter).all()]
    if bad:
        raise TrainingDivergedError(
            f"training diverged: {len(bad)} weight tensor(s) hold NaN/Inf after step {step} (first: {bad[0]}), so "
            f"no final model was written to {Path(config.training.output_dir) / 'final'}. Lower "
            f"training.learning_rate (now {config.training.learning_rate}) or training.head_learning_rate (now "
            f"{config.training.head_learning_rate}) and rerun with --overwrite")


def card_lineage(config: RunConfig, base_model: str | None = None) -> dict[str, Any]:
    """The card's base model and data. A run that starts from a trained HyTE folder names that folder as its parent,
    with the data it was trained on before (a fine-tune of the quickstart's model carries its HPO / ICD-10-CM
    training). No licence is asserted: the data's terms are the user's to state (hyte_card.json "license")."""
    data = ONTOLOGY_DATASETS.get(config.data.source, [])
    if config.data.source == "taxonomy":
        data = [f"taxonomy {Path(config.data.path).name} ({config.data.taxonomy_split} split)"]
    parent = Path(resolve_model(config.model.path)) if config.model.build == "load" else None
    if parent is None or not (parent / "hyte_card.json").is_file():
        return {"base_model": base_model and public_model_name(base_model), "datasets": data}
    earlier = read_json_file(parent / "hyte_card.json", "it records what the starting model was trained on")
    parent_name = public_model_name(config.model.path)
    return {"base_model": parent_name, "datasets": list(dict.fromkeys([*earlier.get("datasets", []), *data])),
            "fine_tuned_from": {"model": portable_path(parent_name), "base_model": earlier.get("base_model"),
                                "datasets": earlier.get("datasets", [])}}


def _write_final(built: BuiltModel, config: RunConfig, trainer: Trainer, evaluation: dict | None) -> None:
    from ..integrations.sentence_transformers import save_model_folder  # here: importing it takes seconds

    output_dir = Path(config.training.output_dir)
    model = built.model
    refuse_diverged(model, config, trainer.state.global_step)
    # The learned temperature: a HyTE model keeps its own parameter; a plain encoder's attached one is taken off
    # (the checkpoint stays a plain encoder) and only recorded in the card.
    final_logit_scale = float(logit_scale(model, config.loss.max_logit_scale).detach()) if config.stage != "mlm" else None
    detach_plain_logit_scale(model)
    if hasattr(model, "merge_and_unload"):
        model.save_pretrained(output_dir / "adapter")  # the adapter alone (a few MB)
        model = model.merge_and_unload()
    card = {
        **card_lineage(config, built.base_model),
        "language": ["en"],
        "training": {"stage": config.stage, "steps": trainer.state.global_step,
                     "config": portable_paths(config.to_dict()), "run_identity": _identity_digest(config),
                     "final_loss": next((e["loss"] for e in reversed(trainer.state.log_history) if "loss" in e), None),
                     "final_logit_scale": final_logit_scale,
                     "nonfinite_values": sum(e.get("nonfinite_values", 0) for e in trainer.state.log_history),
                     # Logged losses / gradient norms that were NaN or Inf (any stage; MLM logs no embeddings).
                     "nonfinite_logs": sum(not math.isfinite(value) for e in trainer.state.log_history
                                           for key, value in e.items() if key in ("loss", "grad_norm"))},
    }

    def write(staging: Path) -> None:
        save_model_folder(model, built.tokenizer, staging)  # a sentence-transformers folder too (HyTE embeddings)
        (staging / "hyte_card.json").write_text(json.dumps(card, indent=2, default=str))
        if evaluation is not None:
            results = {"retrieval": [{"dataset_name": "HPO held-out branches", "dataset_type": "hpo-heldout",
                                      "split": "test", "metrics": evaluation["after"]}],
                       "before_training": evaluation["before"]}
            (staging / "eval_results.json").write_text(json.dumps(results, indent=2))

    atomic_directory(output_dir / "final", write, "config.json", "model folder")


def _initial_logit_scale(built: BuiltModel, config: RunConfig, examples: list[dict]) -> float:
    """1 / temperature, divided for hyperbolic models by the mean distance to the origin of (up to 256) training
    documents under the initial model when ``loss.temperature_from_radius`` (see LossSpec); clamped to the bounds."""
    import torch

    from .. import lorentz

    loss = config.loss
    scale = 1.0 / loss.temperature
    if built.hyperbolic and loss.temperature_from_radius:
        texts = sorted({e["document"] for e in examples})[:256]
        model = unwrap(built.model)
        was_training = model.training
        model.eval()
        with torch.no_grad():
            tokens = built.tokenizer(texts, padding=True, truncation=True, max_length=loss.max_document_length,
                                     return_tensors="pt")
            points = embed(model, tokens["input_ids"], tokens["attention_mask"], True)
            radius = float(lorentz.distance_to_origin(points, float(model.curvature)).mean())
        model.train(was_training)
        scale /= max(radius, 1e-6)  # a model whose documents all sit at the origin gets the upper clamp
    return min(max(scale, 1.0), loss.max_logit_scale)


def _set_logit_scale(built: BuiltModel, config: RunConfig, examples: list[dict], resuming: bool) -> None:
    """Initialise the logit scale (fresh runs; resumed runs get theirs from the checkpoint) and its upper bound."""
    import torch

    parameter = log_logit_scale_parameter(built.model)
    model_config = getattr(unwrap(built.model), "config", None)
    records = model_config is not None and hasattr(model_config, "max_logit_scale")  # HyTE models record both
    if not resuming:
        initial = _initial_logit_scale(built, config, examples)
        with torch.no_grad():
            parameter.fill_(math.log(initial))
        if records:
            # The starting value first: the config checks init <= max at every assignment.
            model_config.logit_scale_init = min(initial, model_config.max_logit_scale)
    if records:
        model_config.logit_scale_init = min(model_config.logit_scale_init, config.loss.max_logit_scale)
        model_config.max_logit_scale = config.loss.max_logit_scale


def train_pairs(config: RunConfig, examples: list[dict], built: BuiltModel, resume: bool,
                 callbacks: list | None, trainer_class: type = ContrastiveTrainer,
                 collator: ContrastiveCollator | None = None, trainer_options: dict | None = None) -> Path:
    """Train on (query, document[, negatives, parent]) examples; ``trainer_class`` / ``collator`` /
    ``trainer_options``: a ContrastiveTrainer subclass, its collator and its own arguments (stage compatible)."""
    gather = config.training.gather_negatives
    refuse_lone_batches(examples, config.training.per_device_train_batch_size,
                        gather if gather is not None else world_size() > 1)
    before = heldout_metrics(built, config)
    checkpoint = resume_checkpoint(config, resume)
    _set_logit_scale(built, config, examples, resuming=checkpoint is not None)
    apply_lora(built, config)
    # After LoRA, which freezes everything but the adapters: the logit scale trains in either case.
    log_logit_scale_parameter(built.model).requires_grad_(config.loss.learn_temperature)
    collator = collator or ContrastiveCollator(built.tokenizer, config.loss.max_query_length,
                                               config.loss.max_document_length, hierarchy_for(config))
    trainer = trainer_class(model=built.model, args=training_arguments(config), train_dataset=examples,
                                 data_collator=collator, hyperbolic=built.hyperbolic,
                                 similarity=config.loss.similarity, max_logit_scale=config.loss.max_logit_scale,
                                 head_learning_rate=config.training.head_learning_rate,
                                 radius_head_learning_rate=config.training.radius_head_learning_rate,
                                 logit_scale_learning_rate=config.loss.logit_scale_learning_rate,
                                 hierarchy_weight=config.loss.hierarchy_weight,
                                 hierarchy_term=config.loss.hierarchy_term,
                                 cone_min_radius=config.loss.cone_min_radius,
                                 radius_margin=config.loss.radius_margin,
                                 gather_negatives=config.training.gather_negatives,
                                 mini_batch_size=config.training.mini_batch_size,
                                 callbacks=[*(callbacks or []), SentenceTransformerCheckpoints(built.tokenizer)],
                                 **(trainer_options or {}))
    trainer.train(resume_from_checkpoint=checkpoint)
    after = heldout_metrics(built, config)
    evaluation = {"before": before, "after": after} if after is not None else None
    if evaluation:
        logger.info("held-out nDCG@10: %.4f -> %.4f", before["ndcg@10"], after["ndcg@10"])
    return save_final(built, config, trainer, evaluation)
