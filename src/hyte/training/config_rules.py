"""What a training configuration must satisfy, checked before anything is loaded or trained (``validate``): ranges,
combinations of fields, what each stage needs. Each rule raises a ``ConfigError`` naming the file or ``--set``, the
field, the value and the remedy."""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import math
from pathlib import Path

from ..bundled import BUNDLED
from ..model_kinds import model_type_of
from .config import (
    MAX_LEARNING_RATE,
    ONTOLOGY_SOURCES,
    ConfigError,
    DataSpec,
    LoraSpec,
    ModelSpec,
    RunConfig,
    TrainingSpec,
)


def _check_number(source: str, name: str, value: float | None, minimum: float, *, strict: bool,
                  meaning: str = "", kind: str = "a finite number") -> None:
    """ConfigError unless ``value`` is a finite number > ``minimum`` (``strict``) or >= it; None passes. ``kind``:
    what the message says the field takes."""
    if value is not None and not (math.isfinite(value) and (value > minimum if strict else value >= minimum)):
        raise ConfigError(f"{source}: {name} must be {kind} {'>' if strict else '>='} {minimum:g}"
                          f"{f' ({meaning})' if meaning else ''}; got {value}")


def _check_choice(source: str, name: str, value: object, choices: tuple[str, ...]) -> None:
    """ConfigError unless ``value`` is one of ``choices`` (named as "a, b or c")."""
    if value not in choices:
        raise ConfigError(f"{source}: {name} must be {', '.join(choices[:-1])} or {choices[-1]}; got {value!r}")


def _validate_taxonomy(data: DataSpec, source: str) -> None:
    from ..data.taxonomy import FORMATS
    from ..data.taxonomy_splits import SCHEMES

    given = [name for name in ("names", "taxonomy_format") if getattr(data, name) is not None]
    if data.source != "taxonomy":
        if given:
            raise ConfigError(f"{source}: data.{given[0]} is for data.source taxonomy; data.source is {data.source}")
        return
    if data.taxonomy_format is not None and data.taxonomy_format not in FORMATS:
        raise ConfigError(f"{source}: data.taxonomy_format must be one of {', '.join(FORMATS)} (or left out: told by "
                          f"the path); got {data.taxonomy_format!r}")
    _check_choice(source, "data.taxonomy_split", data.taxonomy_split, SCHEMES)
    _check_choice(source, "data.concept_text", data.concept_text, ("name", "name_description"))
    _check_number(source, "data.taxonomy_negatives", data.taxonomy_negatives, 0, strict=False, kind="an integer")
    if data.names is not None and not Path(data.names).is_file():
        raise ConfigError(f"{source}: data.names {data.names} does not exist")


def validate(config: RunConfig, source: str) -> None:
    """Checks that need no model: files exist, values are in range, the stage and the model fit together."""
    model, data, training = config.model, config.data, config.training
    _check_choice(source, "model.build", model.build, ("load", "hyte_h", "hyte_fh", "eucbert"))
    if model.build in ("hyte_fh", "eucbert") and config.stage != "mlm" and not model.options:
        raise ConfigError(f"{source}: a new {model.build} model needs model.options (its shape)")
    if model.path.startswith("bundled:") and model.path not in BUNDLED:
        raise ConfigError(f"{source}: model.path {model.path} is not a bundled model ({', '.join(BUNDLED)})")
    _validate_options(model, source)
    if model.build in ("hyte_fh", "eucbert") and model.path != ModelSpec.path:  # it was ignored silently
        raise ConfigError(f"{source}: model.build {model.build} builds a new model from model.options, so model.path "
                          f"{model.path} would be ignored: to train that model further, set model.build: load; for a "
                          "new model, drop model.path")
    if config.stage == "mlm":  # else the Trainer's "the model did not return a loss" after loading everything
        loaded_type = model_type_of(model.path) if model.build == "load" else None
        if model.build == "hyte_h" or (model.build == "load" and loaded_type not in ("hyte_fh", "hyte_euc")):
            what = "HyTE-H" if model.build == "hyte_h" else f"{model.path} ({loaded_type or 'not a HyTE-FH/EucBERT'})"
            raise ConfigError(f"{source}: the mlm stage trains a masked-language-model head of HyTE-FH or EucBERT; "
                              f"{what} has none. Build one (model.build: hyte_fh or eucbert, with model.options), "
                              "or load a saved one")
    local = Path(model.path)  # (a new model's path is the bundled default, checked above)
    if (local.is_absolute() or model.path.startswith(".")) and not local.exists():
        raise ConfigError(f"{source}: model.path {model.path} does not exist")
    _check_choice(source, "data.source", data.source, (*ONTOLOGY_SOURCES, "taxonomy", "jsonl", "beir", "hf_dataset"))
    if data.hierarchy and data.source not in (*ONTOLOGY_SOURCES, "taxonomy"):
        raise ConfigError(f"{source}: data.hierarchy needs an ontology or a taxonomy (data.source hpo, icd10, "
                          "hpo+icd10 or taxonomy with data.path)")
    _validate_taxonomy(data, source)
    if data.source in ONTOLOGY_SOURCES and data.path:  # it would be ignored: the ontology's own pairs are the data
        raise ConfigError(f"{source}: data.path {data.path} is for data.source jsonl, beir or hf_dataset; "
                          f"data.source {data.source} reads the installed ontology. Set data.source to your file's "
                          "format, or drop data.path")
    if data.source not in ONTOLOGY_SOURCES and not data.path:
        raise ConfigError(f"{source}: data.source={data.source} needs data.path")
    if data.path and not Path(data.path).exists():
        raise ConfigError(f"{source}: data.path {data.path} does not exist")
    _check_number(source, "data.max_examples", data.max_examples, 0, strict=True, kind="an integer")
    if not training.output_dir.strip():  # Path("") is the current folder: checkpoints and mined data would land there
        raise ConfigError(f"{source}: training.output_dir is empty ({training.output_dir!r}); give the folder for "
                          f"checkpoints and the final model, e.g. runs/my-run")
    rates = {f"training.{name}": getattr(training, name)
             for name in ("learning_rate", "head_learning_rate", "radius_head_learning_rate")}
    rates["loss.logit_scale_learning_rate"] = config.loss.logit_scale_learning_rate
    for name, rate in rates.items():
        if rate is not None and not rate > 0:  # also refuses NaN; a negative rate would climb the loss
            raise ConfigError(f"{source}: {name} must be > 0; got {rate}")
        if rate is not None and not math.isfinite(rate):
            raise ConfigError(f"{source}: {name} must be a finite number; got {rate}")
        if rate is not None and rate > MAX_LEARNING_RATE:
            raise ConfigError(f"{source}: {name} = {rate} is above {MAX_LEARNING_RATE}: AdamW steps that large turn "
                              "the weights into NaN within a step or two (usual values: 1e-5 to 1e-3, 1e-2 for the "
                              "logit scale)")
    if (config.stage != "mlm" and data.max_examples is not None
            and data.max_examples < training.per_device_train_batch_size):
        raise ConfigError(f"{source}: data.max_examples = {data.max_examples} cannot fill one batch of "
                          f"training.per_device_train_batch_size = {training.per_device_train_batch_size}: the other "
                          "examples of a batch are each query's negatives; give at least as many examples as the "
                          "batch size, or a smaller batch")
    _check_number(source, "training.weight_decay", training.weight_decay, 0, strict=False, meaning="0 = none")
    # Else the Trainer refuses them only once negatives are mined (or divides by zero at the first step).
    for name, minimum, meaning in (("max_steps", 1, ""), ("per_device_train_batch_size", 1, ""),
                                   ("warmup_steps", 0, "0 = no warmup"), ("logging_steps", 1, "every this many steps"),
                                   ("save_steps", 1, "every this many steps"),
                                   ("dataloader_num_workers", 0, "0 = load batches in the training process"),
                                   ("mini_batch_size", 1, "or null: no gradient caching")):
        _check_number(source, f"training.{name}", getattr(training, name), minimum, strict=False, meaning=meaning,
                      kind="an integer")
    if training.warmup_steps > training.max_steps and training.warmup_steps != TrainingSpec.warmup_steps:
        # The whole run would be warm-up, the learning rate never at its peak. The default (10) on a run of
        # 10 steps or fewer (a smoke test) is warned about when training starts instead (loop.training_arguments).
        raise ConfigError(f"{source}: training.warmup_steps = {training.warmup_steps} is above training.max_steps = "
                          f"{training.max_steps}: the whole run would be warm-up and the learning rate would never "
                          f"reach {training.learning_rate}; give fewer warm-up steps (often a tenth of max_steps) or 0")
    _validate_scheduler(training.lr_scheduler_type, source)
    if training.gradient_accumulation_steps < 1:
        raise ConfigError(f"{source}: training.gradient_accumulation_steps must be >= 1")
    # transformers treats save_total_limit <= 0 as "no limit" and keeps every checkpoint.
    if training.save_total_limit is not None and training.save_total_limit < 1:
        raise ConfigError(f"{source}: training.save_total_limit = {training.save_total_limit} would keep every "
                          "checkpoint (transformers reads 0 or less as no limit); give an integer >= 1 (--resume "
                          "needs at least one checkpoint), or null for no limit")
    if not 0 <= training.seed < 2**32:  # numpy's limit; its own message names no field
        raise ConfigError(f"{source}: training.seed must be an integer in [0, 2**32 - 1]; got {training.seed}")
    # NaN would switch clipping off without a word
    _check_number(source, "training.max_grad_norm", training.max_grad_norm, 0, strict=True)
    mining = config.mining
    if mining.num_negatives < 0 or mining.candidates < mining.num_negatives or mining.skip_top < 0:
        raise ConfigError(f"{source}: mining needs num_negatives >= 0, candidates >= num_negatives and skip_top >= 0"
                          f" (got {mining.num_negatives}, {mining.candidates}, {mining.skip_top})")
    if not mining.margin > 0:  # at <= 0 every candidate counts as a false negative: nothing is mined
        raise ConfigError(f"{source}: mining.margin must be > 0; got {mining.margin}")
    if mining.miner not in ("base", "self") and not (mining.miner.startswith("bundled:") or Path(mining.miner).exists()
                                                     or mining.miner.count("/") == 1):
        raise ConfigError(f"{source}: mining.miner must be base, self, a bundled model, a model folder or a Hub id; "
                          f"got {mining.miner!r}")
    loss = config.loss
    _check_choice(source, "loss.similarity", loss.similarity, ("geodesic", "lorentz_inner"))
    _check_number(source, "loss.max_logit_scale", loss.max_logit_scale, 1, strict=False,
                  meaning="the logit scale is clamped to [1, max_logit_scale]")
    _check_number(source, "loss.temperature", loss.temperature, 0, strict=True)
    if not 1.0 / loss.max_logit_scale <= loss.temperature <= 1.0:
        raise ConfigError(f"{source}: loss.temperature must lie in [1 / max_logit_scale, 1] = "
                          f"[{1.0 / loss.max_logit_scale:g}, 1]; got {loss.temperature}")
    _check_number(source, "loss.hierarchy_weight", loss.hierarchy_weight, 0, strict=False)
    _check_choice(source, "loss.hierarchy_term", loss.hierarchy_term, ("cone", "radius"))
    if not 0 <= loss.radius_margin < math.inf or not 0 < loss.cone_min_radius < math.inf:
        raise ConfigError(f"{source}: loss.radius_margin must be >= 0 and loss.cone_min_radius > 0 (both finite); "
                          f"got {loss.radius_margin}, {loss.cone_min_radius}")
    lengths = {"loss.max_query_length": loss.max_query_length, "loss.max_document_length": loss.max_document_length,
               "mlm.max_length": config.mlm.max_length}
    for name, length in lengths.items():
        if length < 3:
            raise ConfigError(f"{source}: {name} = {length} leaves no token of the text ([CLS] and [SEP] take 2): "
                              "give 3 or more")
    if not 0 < config.mlm.mlm_probability <= 1:  # 0: loss 0, a final model that learnt nothing; above 1 failed
        raise ConfigError(f"{source}: mlm.mlm_probability must lie in (0, 1] (the share of tokens masked; usual "
                          f"0.15-0.30); got {config.mlm.mlm_probability}")
    if loss.hierarchy_weight > 0 and not data.hierarchy and data.source != "taxonomy":
        raise ConfigError(f"{source}: loss.hierarchy_weight > 0 needs data.hierarchy: true (the parent pairs)")
    if config.stage == "finetune" and config.mining.num_negatives < 1:
        raise ConfigError(f"{source}: stage finetune needs mining.num_negatives >= 1")
    _validate_lora(config.lora, source)
    if (config.lora.r > 0 and config.model.build == "hyte_h" and config.model.options.get("radius_head") is not None
            and "radius_head" not in (*config.lora.modules_to_save, *config.lora.target_modules)):
        # LoRA freezes every module it neither adapts nor saves: a new specificity head would keep every text at its
        # initial radius, and the "parent nearer the origin" term could not be met.
        raise ConfigError(f"{source}: model.options.radius_head builds a new specificity head, which LoRA would "
                          "leave frozen at its initial radius for every text: add lora.modules_to_save: "
                          "[radius_head] (trained whole beside the adapters), or set lora.r: 0")
    if config.stage == "phrase":
        _validate_phrase(config, source)
    if config.stage == "compatible":
        _validate_compatible(config, source)


# Which model config class model.options build (hyte.training.models.build_model).
_OPTIONS_CONFIG = {"hyte_h": "HyTEHConfig", "hyte_fh": "HyTEFHConfig", "eucbert": "EucBERTConfig"}


def _validate_options(model: ModelSpec, source: str) -> None:
    """model.options must be fields of the config class they build: an unknown key (a typo) would be stored in the
    model's config.json and silently ignored."""
    if not model.options:
        return
    if model.build == "load":
        raise ConfigError(f"{source}: model.options {sorted(map(str, model.options))} are not used with model.build "
                          f"load (the saved model keeps its own config): remove them, or build a new model "
                          f"(model.build hyte_h, hyte_fh or eucbert)")
    from .. import configuration_hyte  # transformers: imported only when a config has options to check

    config_class = getattr(configuration_hyte, _OPTIONS_CONFIG[model.build])
    parameters = inspect.signature(config_class.__init__).parameters.values()
    accepted = sorted(p.name for p in parameters
                      if p.name != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))
    for key in model.options:
        if model.build == "hyte_h" and key == "encoder_config":
            raise ConfigError(f"{source}: model.options.encoder_config cannot be set: HyTE-H takes its encoder's "
                              "config from model.path")
        if key not in accepted:
            close = difflib.get_close_matches(str(key), accepted, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"known: {', '.join(accepted)}"
            raise ConfigError(f"{source}: model.options.{key} is not a {config_class.__name__} field ({hint}); "
                              f"an unknown key would be stored in config.json and ignored")


# Scheduler names transformers knows but hyte train cannot run: they need evaluation during training or
# lr_scheduler_kwargs, which TrainingArguments here never gets.
_UNSUPPORTED_SCHEDULERS = {"reduce_lr_on_plateau": "evaluation during training", "greedy": "evaluation during training",
                           "cosine_with_min_lr": "lr_scheduler_kwargs (min_lr)",
                           "cosine_warmup_with_min_lr": "lr_scheduler_kwargs (min_lr)",
                           "warmup_stable_decay": "lr_scheduler_kwargs (num_decay_steps)"}


def _validate_scheduler(name: str, source: str) -> None:
    from transformers.trainer_utils import SchedulerType

    usable = [s.value for s in SchedulerType if s.value not in _UNSUPPORTED_SCHEDULERS]
    if name in _UNSUPPORTED_SCHEDULERS:
        raise ConfigError(f"{source}: training.lr_scheduler_type {name!r} needs {_UNSUPPORTED_SCHEDULERS[name]}, "
                          f"which hyte train does not give it; use one of {', '.join(usable)}")
    if name not in usable:
        close = difflib.get_close_matches(name, usable, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ConfigError(f"{source}: training.lr_scheduler_type {name!r} is not a transformers scheduler; "
                          f"{hint}known: {', '.join(usable)}")


def _validate_lora(lora: LoraSpec, source: str) -> None:
    """lora.r = 0 is full fine-tuning (no LoRA), r > 0 LoRA adapters of that rank; anything else is refused (a
    negative rank used to mean full fine-tuning too, silently), and so are other lora fields set while lora.r = 0
    (they were ignored: the run trained without LoRA)."""
    if lora.r < 0:
        raise ConfigError(f"{source}: lora.r must be a positive integer (the LoRA rank) or 0 for full fine-tuning "
                          f"without LoRA; got {lora.r}")
    if lora.r == 0:
        default = LoraSpec()
        changed = [f"lora.{f.name}" for f in dataclasses.fields(LoraSpec)
                   if getattr(lora, f.name) != getattr(default, f.name)]
        if changed:
            raise ConfigError(f"{source}: {', '.join(changed)} set, but LoRA is off (lora.r = 0, full fine-tuning): "
                              f"set lora.r to enable LoRA (the adapters' rank, e.g. 8), or drop "
                              f"{'them' if len(changed) > 1 else 'it'}")
        return
    if lora.alpha <= 0:
        raise ConfigError(f"{source}: lora.alpha must be > 0 (the adapters are scaled by alpha / r); got {lora.alpha}")
    if not 0 <= lora.dropout < 1:
        raise ConfigError(f"{source}: lora.dropout must lie in [0, 1); got {lora.dropout}")
    if not lora.target_modules:
        raise ConfigError(f"{source}: lora.target_modules is empty: LoRA with lora.r = {lora.r} needs the module "
                          f"names to adapt (e.g. [query, value]), or set lora.r: 0 for full fine-tuning")


def _validate_compatible(config: RunConfig, source: str) -> None:
    spec = config.compatible
    if not spec.old_model:
        raise ConfigError(f"{source}: stage compatible needs the old model: compatible.old_model or --old OLD_MODEL")
    _check_choice(source, "compatible.alignment", spec.alignment, ("rince", "infonce", "l2", "none"))
    _check_choice(source, "compatible.q", spec.q, ("uncertainty", "fixed", "permuted"))
    if not 0 < spec.q_fixed <= 1:
        raise ConfigError(f"{source}: compatible.q_fixed must lie in (0, 1] (RINCE's exponent); got {spec.q_fixed}")
    if spec.temperature is not None and not 0 < spec.temperature <= 10:
        raise ConfigError(f"{source}: compatible.temperature must lie in (0, 10] or be null; got {spec.temperature}")
    if not (0 <= spec.weight < math.inf and 0 < spec.rince_lambda < math.inf and 0 < spec.cone_min_radius < math.inf):
        raise ConfigError(f"{source}: compatible.weight must be >= 0, rince_lambda and cone_min_radius > 0")
    if config.lora.r > 0:
        raise ConfigError(f"{source}: stage compatible trains the whole model; set lora.r: 0")


def _validate_phrase(config: RunConfig, source: str) -> None:
    spec = config.phrase
    if spec.query_budget < 1 or spec.document_budget < 1:
        raise ConfigError(f"{source}: phrase.query_budget and phrase.document_budget must be >= 1")
    weights = (spec.global_weight, spec.token_weight, spec.lexical_weight, spec.segmentation_weight,
               spec.phrase_weight)
    if not all(0 <= weight < math.inf for weight in weights) or sum(weights) == 0:
        raise ConfigError(f"{source}: the phrase.*_weight values must be >= 0 and not all 0")
    _check_number(source, "phrase.temperature", spec.temperature, 0, strict=True)
    _check_number(source, "phrase.lexical_temperature", spec.lexical_temperature, 0, strict=True)
    unknown = sorted(set(spec.vocabularies) - {"hpo", "icd10"})
    if unknown:
        raise ConfigError(f"{source}: phrase.vocabularies may hold hpo and icd10; got {unknown}")
    if config.model.build not in ("load", "hyte_h"):
        raise ConfigError(f"{source}: stage phrase puts heads on a pretrained encoder or HyTE-H (model.build load "
                          f"or hyte_h); got {config.model.build!r}")
