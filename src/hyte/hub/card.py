"""Model cards for HyTE checkpoints and adapters, rendered from what the model folder itself records.

``render_model_card(model_dir, repo_id)`` reads

* ``config.json``: model family, sizes, curvature (from the weights when it was learned), pooling;
* ``hyte_card.json`` (optional, written by training): ``{"license", "datasets", "base_model", "language",
  "training": {...recipe...}}``;
* ``eval_results.json`` (optional, written by evaluation):
  ``{"retrieval": [{"dataset_name", "dataset_type", "split", "metrics": {"ndcg@10": ...}}],
  "hierarchy": [{"dataset_name", "metrics": {"spechr": ..., "recall@1": ...}}]}``;
* ``modules.json`` / ``config_sentence_transformers.json`` when the folder is also a sentence-transformers model;

and fills the Jinja template ``hyte/model_cards/hyte_model_card.md`` through huggingface_hub's ``ModelCard`` /
``ModelCardData`` / ``EvalResult``, so the YAML metadata and the ``model-index`` are the Hub's own format.
"""

from __future__ import annotations

import json
import math
import os
import re
from importlib.resources import files
from pathlib import Path
from typing import Any

from huggingface_hub import EvalResult, ModelCard, ModelCardData
from huggingface_hub.utils import HFValidationError, validate_repo_id
from safetensors import safe_open

from ..artifacts import CARD_FILE, EVAL_RESULTS_FILE
from ..io import read_json_file
from ..markdown import number
from ..model_kinds import MODEL_KINDS
from ..results import public_model_name

__all__ = ["render_adapter_card", "render_model_card"]

NO_LICENCE = ("No licence is stated for this model: its base model's licence and the training data's terms apply. "
              'State one in hyte_card.json ("license") before sharing it.')

# eval_results.json section -> (model-index task type, task name shown in the card)
_EVAL_TASKS = {
    "retrieval": ("information-retrieval", "Retrieval"),
    "hierarchy": ("hierarchy-retrieval", "Hierarchy"),
}

_POOLING_NAMES = {
    "oem": "Outward Einstein Midpoint (p = {p:g})",
    "einstein": "Einstein midpoint",
    "mean": "mean of tangent vectors at the origin",
    "cls": "first token",
}


def render_model_card(model_dir: str | os.PathLike, repo_id: str | None = None, *,
                      final_dir: str | os.PathLike | None = None) -> ModelCard:
    """The model card (README.md) of a saved HyTE model folder.

    Args:
        model_dir: a folder written by ``save_pretrained`` (optionally also a sentence-transformers folder).
        repo_id: the Hub repository the card is for; the usage snippets load from it. Default: the local folder,
            so the snippets still run as written.
        final_dir: where the folder will live when ``model_dir`` is a staging copy that is renamed afterwards:
            without a ``repo_id``, the card is named after it and its snippets load from it. Default: ``model_dir``.
    """
    model_dir = Path(model_dir)
    local_dir = Path(final_dir) if final_dir is not None else model_dir
    config = _read_json(model_dir / "config.json")
    model_type = config.get("model_type")
    if model_type not in MODEL_KINDS:
        raise ValueError(f"{model_dir / 'config.json'} has model_type {model_type!r}; a HyTE card needs one of "
                         f"{tuple(MODEL_KINDS)}.")
    info = _read_json(model_dir / CARD_FILE, {})  # written by training, if at all
    datasets = _as_list(info.get("datasets"))
    is_hyperbolic = MODEL_KINDS[model_type].is_hyperbolic(config)
    has_st = (model_dir / "modules.json").is_file()
    kind = MODEL_KINDS[model_type].title
    if model_type == "hyte_phrase":  # the phrase heads sit on a HyTE-H (or Euclidean) backbone, whose c it uses
        config = {**(config.get("backbone_config") or {}), **config}
    eval_results = _read_eval_results(model_dir)
    prompts = _read_json(model_dir / "config_sentence_transformers.json", {}).get("prompts") if has_st else None
    curvature = _curvature(model_dir, config) if is_hyperbolic else None

    tags = ["hyte", kind.lower(), *(["hyperbolic", "lorentz"] if is_hyperbolic else ["euclidean-baseline"]),
            *(["sentence-transformers"] if has_st else [])]
    card_data = ModelCardData(
        model_name=repo_id.split("/")[-1] if repo_id else local_dir.resolve().name, license=info.get("license"),
        library_name="transformers", pipeline_tag="sentence-similarity" if has_st else "feature-extraction",
        tags=tags, language=info.get("language"), base_model=_base_model(config, info), datasets=datasets or None,
        eval_results=eval_results or None)
    return _from_template(
        "hyte_model_card.md", card_data, repo_id or str(local_dir),
        kind=kind,
        kind_description=_kind_description(model_type, config),
        is_hyperbolic=is_hyperbolic,
        is_phrase=model_type == "hyte_phrase",
        curvature=f"{curvature:g}" if is_hyperbolic else None,
        sectional_curvature=f"{-1 / curvature:g}" if is_hyperbolic else None,
        learnable_curvature=bool(config.get("learnable_curvature")),
        hidden_size=config["hidden_size"],
        architecture=_architecture_rows(model_type, config, card_data.base_model),
        has_sentence_transformers=has_st,
        prompts={role: prompt for role, prompt in (prompts or {}).items() if prompt},
        datasets=datasets,
        training=_lineage_rows(info.get("fine_tuned_from")) + _training_rows(info.get("training")),
        evaluation=[{"task": result.task_name, "dataset": result.dataset_name, "split": result.dataset_split or "–",
                     "metric": result.metric_name, "value": number(result.metric_value)}
                    for result in eval_results],
        limitations=_limitations(model_type, config, datasets, bool(eval_results)) + (
            [] if info.get("license") else [NO_LICENCE]),
        notes=info.get("notes"),
    )


def render_adapter_card(adapter_dir: str | os.PathLike, repo_id: str | None = None,
                        base_model: str | None = None) -> ModelCard:
    """The card of a PEFT LoRA adapter folder for a HyTE model, naming its base model.

    ``base_model`` (a Hub id) overrides ``base_model_name_or_path`` from ``adapter_config.json``, which is often a
    local path at training time. ``hyte_card.json`` in the folder, if any, supplies license, datasets and recipe.
    """
    adapter_dir = Path(adapter_dir)
    adapter_config = _read_json(adapter_dir / "adapter_config.json")
    base = base_model or adapter_config.get("base_model_name_or_path")
    info = _read_json(adapter_dir / CARD_FILE, {})
    card_data = ModelCardData(
        model_name=repo_id.split("/")[-1] if repo_id else adapter_dir.resolve().name, license=info.get("license"),
        library_name="peft", pipeline_tag="feature-extraction", tags=["hyte", "hyperbolic", "lora", "peft"],
        base_model=base if _is_hub_id(base) else None, datasets=_as_list(info.get("datasets")) or None)
    target_modules = adapter_config.get("target_modules")
    lora = {"Method": adapter_config.get("peft_type", "LORA"), "Rank r": adapter_config.get("r"),
            "lora_alpha": adapter_config.get("lora_alpha"),
            "Target modules": ", ".join(sorted(target_modules)) if isinstance(target_modules, list) else target_modules}
    return _from_template(
        "hyte_adapter_card.md", card_data, repo_id or str(adapter_dir),
        base=base or "the base model it was trained on",
        base_is_hub_id=_is_hub_id(base),
        lora=[(name, value) for name, value in lora.items() if value is not None],
        training=_training_rows(info.get("training")),
    )


def _from_template(template: str, card_data: ModelCardData, repo_id: str, **values: Any) -> ModelCard:
    """The card ``template`` (in hyte/model_cards) filled with ``values``; its usage snippets load from ``repo_id``."""
    return ModelCard.from_template(card_data, template_path=str(files("hyte") / "model_cards" / template),
                                   model_name=card_data.model_name, repo_id=repo_id, **values)


# ----------------------------------------------------------------------------------------------------------------
# Reading the folder
# ----------------------------------------------------------------------------------------------------------------


def _read_json(path: Path, missing: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON object in ``path``; ``missing`` for an optional file that is absent."""
    if not path.is_file():
        if missing is not None:
            return missing
        raise FileNotFoundError(f"{path} does not exist.")
    return read_json_file(path, "save the model or adapter again to rewrite it")


# Keys of eval_results.json that are records, not this model's results (training writes the untrained model's
# scores under "before_training"): kept in the file, left out of the card's model-index.
_EVAL_RECORDS = ("before_training",)


def _read_eval_results(model_dir: Path) -> list[EvalResult]:
    """eval_results.json -> one EvalResult per (task, dataset, metric); [] without the file."""
    path = model_dir / EVAL_RESULTS_FILE
    sections = _read_json(path, {})
    if set(sections) - set(_EVAL_TASKS) - set(_EVAL_RECORDS):
        raise ValueError(f"{path} must be an object with the keys {tuple(_EVAL_TASKS)}; got {sections!r:.200}.")
    results = []
    for section, entries in sections.items():
        if section in _EVAL_RECORDS:
            continue
        task_type, task_name = _EVAL_TASKS[section]
        for position, entry in enumerate(entries):
            if not (isinstance(entry, dict) and entry.get("dataset_name") and isinstance(entry.get("metrics"), dict)):
                raise ValueError(f'{path}: {section}[{position}] needs "dataset_name" and a "metrics" object; got '
                                 f"{entry!r:.200}.")
            # The model-index needs a dataset type (the Hub dataset id); a slug of the name stands in.
            results += [EvalResult(task_type=task_type, task_name=task_name, dataset_name=entry["dataset_name"],
                                   dataset_type=entry.get("dataset_type") or _slug(entry["dataset_name"]),
                                   dataset_split=entry.get("split"), metric_type=_slug(metric.replace("@", "_at_")),
                                   metric_name=metric, metric_value=value)
                        for metric, value in entry["metrics"].items()]
    return results


def _curvature(model_dir: Path, config: dict[str, Any]) -> float:
    """c of the saved model: the config's value, or the trained one from the weights when it was learnable."""
    if config.get("learnable_curvature"):
        for weights in sorted(model_dir.glob("*.safetensors")):
            with safe_open(str(weights), framework="pt") as tensors:
                key = next((name for name in tensors.keys() if name.endswith("log_curvature")), None)
                if key is not None:
                    return math.exp(float(tensors.get_tensor(key)))
    return float(config.get("curvature", 1.0))


def _base_model(config: dict[str, Any], info: dict[str, Any]) -> str | None:
    """The base model's Hub id: hyte_card.json's, else a HyTE-H encoder's name. A bundled model, by its alias or its
    folder, becomes the Hub id of the same weights; any other name that is not a Hub id (a local path) gives None,
    as a card's base_model must link to the Hub (``bundled:all-MiniLM-L6-v2`` was written as it was)."""
    name = info.get("base_model")
    if not name and config.get("model_type") == "hyte_h":
        name = (config.get("encoder_config") or {}).get("_name_or_path")
    if not name:
        return None
    name = public_model_name(name)
    return name if _is_hub_id(name) else None


def _is_hub_id(name: str | None) -> bool:
    if not name or "/" not in name or os.path.exists(name):
        return False
    try:
        validate_repo_id(name)
    except HFValidationError:
        return False
    return True


# ----------------------------------------------------------------------------------------------------------------
# Text pieces
# ----------------------------------------------------------------------------------------------------------------


def _kind_description(model_type: str, config: dict[str, Any]) -> str:
    if model_type == "hyte_phrase":
        return (f"is an H+ phrase-level multi-vector model: a {config.get('geometry')} global vector and up to "
                f"{config.get('document_budget')} importance-weighted phrase vectors per document (CRF units), with "
                f"a lexical view, for reranking")
    if model_type == "hyte_fh":
        return "is a fully hyperbolic transformer encoder: every layer works on the hyperboloid"
    if model_type == "hyte_h":
        encoder = config.get("encoder_config") or {}
        return (f"is a hybrid encoder: a Euclidean {encoder.get('model_type', 'transformer')} encoder whose token "
                f"vectors are projected onto the hyperboloid and pooled there")
    return "is a Euclidean transformer encoder"


def _architecture_rows(model_type: str, config: dict[str, Any], base_model: str | None) -> list[tuple[str, str]]:
    pooling = config.get("pooling", "oem")
    if model_type == "hyte_euc":
        pooling_name = {"mean": "masked mean", "cls": "first token"}.get(pooling, pooling)
    else:
        pooling_name = _POOLING_NAMES.get(pooling, pooling).format(p=config.get("oem_p", 1.0))
    if model_type == "hyte_phrase":
        backbone = config.get("backbone_config") or {}
        rows = [("Backbone", f"{base_model or backbone.get('model_type', '?')} ({config.get('geometry')} geometry)"),
                ("Phrase units", f"BIO tags decoded by a linear-chain CRF; budget {config.get('query_budget')} per "
                                 f"query, {config.get('document_budget')} per document"),
                ("Scoring", f"global, importance-weighted MaxSim over phrases and lexical, fused "
                            f"{config.get('fusion_global')} / {config.get('fusion_phrase')} / "
                            f"{config.get('fusion_lexical')}")]
        encoder = backbone.get("encoder_config") or backbone
        return [(name, str(value)) for name, value in
                rows + [("Maximum input length", f"{encoder.get('max_position_embeddings')} tokens")]]
    if model_type == "hyte_h":
        encoder = config.get("encoder_config") or {}
        layers = f"{encoder.get('num_hidden_layers')} layers, {encoder.get('hidden_size')} features"
        rows = [("Euclidean encoder", f"{base_model or encoder.get('model_type', '?')}: {layers}"),
                ("Projection", f"linear {encoder.get('hidden_size')} → {config['hidden_size'] - 1}, learned scale, "
                               f"tangent norm clipped at {config.get('norm_clip')}, exponential map at the origin"),
                ("Hyperbolic layers after the projection", config.get("num_hyperbolic_layers", 0))]
        max_tokens = encoder.get("max_position_embeddings")
    else:
        rows = [("Layers", config.get("num_hidden_layers")), ("Attention heads", config.get("num_attention_heads")),
                ("Feed-forward size", config.get("intermediate_size"))]
        max_tokens = config.get("max_position_embeddings")
    rows += [("Pooling", pooling_name), ("Maximum input length", f"{max_tokens} tokens")]
    return [(name, str(value)) for name, value in rows]


def _lineage_rows(parent: Any) -> list[tuple[str, str]]:
    """"Fine-tuned from": the trained HyTE model a run started from, with what that model was trained on."""
    if not isinstance(parent, dict):
        return []
    before = ", ".join(parent.get("datasets") or []) or "data not recorded"
    return [("Fine-tuned from", f"{parent.get('model')} (built on {parent.get('base_model') or 'an unrecorded base'}, "
                                f"trained on {before})")]


def _training_rows(training: Any) -> list[tuple[str, str]]:
    if not training:
        return []
    if not isinstance(training, dict):
        return [("Recipe", str(training))]
    return [(name, value if isinstance(value, str) else json.dumps(value)) for name, value in training.items()]


def _limitations(model_type: str, config: dict[str, Any], datasets: list[str], evaluated: bool) -> list[str]:
    notes = []
    if MODEL_KINDS[model_type].is_hyperbolic(config):
        notes += [
            "The vectors are points on a hyperboloid, not directions: do not L2-normalise them, compare them by "
            "cosine, or truncate them (Matryoshka-style). Each of these destroys the geometry "
            "(sentence-transformers' `normalize_embeddings` and `truncate_dim` are refused for this reason).",
            "Only query-versus-document dot products are Lorentz inner products. To compare two documents (or two "
            'queries), encode one side with `role="query"`.',
            "Coordinates grow exponentially with the distance from the origin, and a float32 inner product of two "
            "far-out points is a small difference of large numbers: close neighbours far from the origin (distance "
            "above about 8√c) can swap ranks. Re-rank in float64 (`hyte.lorentz.pairwise_distance`) when that "
            "matters.",
        ]
        if model_type == "hyte_h":
            notes.append(f"Token tangent vectors are clipped to norm {config.get('norm_clip')} before the exponential "
                         f"map, which bounds how far from the origin the points can lie.")
    else:
        notes.append("This is the Euclidean baseline of the HyTE study, not a hyperbolic model.")
    medical = r"(?<![a-z])hpo(?![a-z])|phenotype|icd-?10"
    if datasets and all(re.search(medical, name, flags=re.IGNORECASE) for name in datasets):
        notes.append(f"Trained only on medical ontology data ({', '.join(datasets)}): expect weaker results on text "
                     "that is not clinical terminology.")
    if not evaluated:
        notes.append("No evaluation results were recorded: measure retrieval quality on your own data first.")
    notes.append("Inputs longer than the maximum input length are truncated.")
    notes.append("Loading runs this repository's Python files (`trust_remote_code=True`): read them, or pin a "
                 "`revision`.")
    return notes


def _as_list(value: Any) -> list[str]:
    return [] if value is None else [value] if isinstance(value, str) else list(value)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9_]+", "_", text.lower()).strip("_")
