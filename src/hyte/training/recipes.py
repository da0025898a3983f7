"""The fine-tuning recipe of HyTE-H and its Euclidean control, as RunConfigs: one place that the quickstart, the
recorded comparison (``benchmarks/run_hierarchy_finetune.py``) and ``configs/finetune_hyte_h_hierarchy.yaml`` share.

Everything but the geometry is identical between the variants: the base encoder (the bundled all-MiniLM-L6-v2),
the examples (HPO training branches + ICD-10-CM training chapters, names / exact and layperson synonyms as queries),
the hard negatives (mined once by the base encoder, cosine), steps, batch, learning rate, schedule, the learnable
temperature and its learning rate. The two knobs that differ in kind were tuned with the same budget on validation
branches (three values each, BENCHMARKS.md): HyTE-H's token radius, the Euclidean temperature.

Variants:
* ``euclidean``: MiniLM, mean pooling, cosine InfoNCE;
* ``euclidean+order``: + parents and siblings as hard negatives + the order-embedding term on (parent, child);
* ``hyte-h``: HyTE-H on MiniLM (tokens at radius ``token_radius``, OEM pooling), geodesic InfoNCE;
* ``hyte-h+cone``: + parents and siblings as hard negatives + the entailment-cone term on (parent, child);
* ``euclidean+norm`` / ``hyte-h-radius+radius``: the radius-order term instead (a parent nearer the origin than its
  child by a margin: vector norm / geodesic distance to the origin);
* ``hyte-h-radius`` / ``hyte-h-radius+cone``: the same with HyTE-H's specificity head (HyTEHConfig.radius_head): every
  text starts at the same radius (so the untrained model ranks exactly like its cosine base) and a learned head on
  the mean token state moves it (radius = specificity). Untuned: r0 = the token radius, the new head (and the
  projection) at ``HEAD_LEARNING_RATE`` so that it can move within a short run.
"""

from __future__ import annotations

import math

from .config import BUNDLED_MINILM, RunConfig
from .config_files import parse_config

VARIANTS = ("euclidean", "euclidean+order", "euclidean+norm", "hyte-h", "hyte-h+cone", "hyte-h-radius",
            "hyte-h-radius+cone", "hyte-h-radius+radius")
# The hierarchy term each variant suffix selects (LossSpec.hierarchy_term); the Euclidean control's counterparts:
# order embeddings for the cone, the vector norm for the radius order.
HIERARCHY_TERMS = {"+cone": "cone", "+order": "cone", "+radius": "radius", "+norm": "radius"}

# Chosen on HPO validation branches (benchmarks/run_hierarchy_finetune.py --sweep), see BENCHMARKS.md.
TOKEN_RADIUS = 1.0  # HyTE-H: every token is clipped to this distance from the origin (scale_init 1, norm_clip r)
EUCLIDEAN_TEMPERATURE = 0.02  # initial temperature of the Euclidean control (learned afterwards)
HYPERBOLIC_TEMPERATURE = 0.05  # HyTE-H: tau_0, divided by the mean document radius at the start (LossSpec)
HIERARCHY_WEIGHT = 0.1  # the same for the cone and the order term; not tuned
HEAD_LEARNING_RATE = 1e-3  # hyte-h-radius: HyTE-H's new parts (a zero-initialised head needs more than 5e-5)


def hierarchy_finetune(variant: str, output_dir: str, *, seed: int = 0, steps: int = 60, examples: int = 4000,
                       test_fraction: float = 0.2, split_seed: int = 0, mining_cache: str | None = None,
                       token_radius: float | None = None, temperature: float | None = None,
                       loss: dict | None = None, training: dict | None = None, model: dict | None = None) -> RunConfig:
    """The RunConfig of one variant (module docstring); ``test_fraction`` = the share of HPO branches and ICD-10-CM
    chapters held out (0.35 for the validation sweep), ``split_seed`` the seed of that split (data.hpo_seed).
    ``token_radius`` / ``temperature`` override the chosen values; ``loss``: further LossSpec fields
    (hierarchy_weight, cone_min_radius, radius_margin, mask_hierarchy ...); ``training``: TrainingSpec fields
    (learning_rate, radius_head_learning_rate ...); ``model``: further HyTEHConfig options of a HyTE-H variant
    (curvature ...)."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}; got {variant!r}")
    hyperbolic = variant.startswith("hyte-h")
    suffix = next((s for s in HIERARCHY_TERMS if variant.endswith(s)), None)
    hierarchy = suffix is not None
    radius = TOKEN_RADIUS if token_radius is None else token_radius
    if temperature is None:
        temperature = HYPERBOLIC_TEMPERATURE if hyperbolic else EUCLIDEAN_TEMPERATURE
    specificity_head = variant.startswith("hyte-h-radius")
    if model and not hyperbolic:
        raise ValueError(f"model options {sorted(model)} are HyTE-H's; variant {variant!r} is the Euclidean control")
    options = {"scale_init": 1.0, "norm_clip": radius, **({"radius_head": radius} if specificity_head else {}),
               **(model or {})}
    built = ({"build": "hyte_h", "path": BUNDLED_MINILM, "options": options} if hyperbolic
             else {"build": "load", "path": BUNDLED_MINILM})
    return parse_config({
        "stage": "finetune",
        "model": built,
        "data": {"source": "hpo+icd10", "max_examples": examples, "min_depth": 2, "hpo_query": "all",
                 "hierarchy": hierarchy, "hpo_test_fraction": test_fraction, "hpo_seed": split_seed},
        "training": {"output_dir": output_dir, "max_steps": steps, "per_device_train_batch_size": 16,
                     "learning_rate": 5e-5, "warmup_steps": max(1, steps // 10), "logging_steps": 10,
                     "save_steps": max(10, steps // 3), "seed": seed,
                     "head_learning_rate": HEAD_LEARNING_RATE if specificity_head else None, **(training or {})},
        "loss": {"similarity": "geodesic", "temperature": temperature, "learn_temperature": True,
                 "temperature_from_radius": True, "hierarchy_weight": HIERARCHY_WEIGHT if hierarchy else 0.0,
                 "hierarchy_term": HIERARCHY_TERMS.get(suffix, "cone"), "max_query_length": 32,
                 "max_document_length": 64, **(loss or {})},
        "mining": {"num_negatives": 1, "candidates": 30, "margin": 0.95, "miner": "base", "cache_dir": mining_cache},
        "evaluation": {"enabled": False},
    }, f"recipe {variant}")


# ----------------------------------------------------------------------------------------------------------------
# From scratch: HyTE-FH vs its Euclidean twin EucBERT (issue 11), all three stages
# ----------------------------------------------------------------------------------------------------------------

SCRATCH_MODELS = {"hyte-fh": "hyte_fh", "eucbert": "eucbert"}
# "tiny" trains in about 10 minutes per model and seed on one CPU core; "quick" checks the pipeline in seconds;
# "base" is the paper's shape (BERT-base: 768 = 1 time + 767 space coordinates, 12 layers of 12 heads) and batch
# (96), for one GPU (run_from_scratch.py --size base --bf16), every training pair in the later stages.
# hidden_size counts HyTE-FH's time coordinate (127 space coordinates; EucBERT has 128 of its own).
SCRATCH_SIZES = {
    "base": {"shape": {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
                       "intermediate_size": 3072},
             "steps": {"mlm": 20000, "contrastive": 2000, "finetune": 1000}, "batch": 96, "examples": None,
             "vocab_size": 30522},
    "tiny": {"shape": {"hidden_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4, "intermediate_size": 512},
             "steps": {"mlm": 400, "contrastive": 150, "finetune": 100}, "batch": 32, "examples": 3200,
             "vocab_size": 4096},
    "quick": {"shape": {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64},
              "steps": {"mlm": 6, "contrastive": 6, "finetune": 6}, "batch": 8, "examples": 48, "vocab_size": 512},
}
# One value per stage, for both models; not tuned for either (the same zero tuning budget on both sides).
SCRATCH_LEARNING_RATES = {"mlm": 5e-4, "contrastive": 1e-4, "finetune": 5e-5}


def hyte_fh_residual_space_scale(hidden_size: int) -> float:
    """The reference code's 4 sqrt(hidden_size) rescale of the space part after each HyTE-FH residual.

    Without it the residual Pi(x + w f(x)) of two points near the origin is their midpoint, so every sublayer halves
    what came before: at the tiny shape the embeddings got 3e-3 of the gradient norm (EucBERT 0.26) and a 600-step
    MLM probe stayed at the unigram level; with it they get 0.17 and the loss leaves the plateau (5.88 nats after
    2,000 steps, EucBERT 5.79). EucBERT's residual stream adds instead of averaging and needs no such knob.
    """
    return 4.0 * math.sqrt(hidden_size)


def from_scratch(model: str, stage: str, output_dir: str, *, seed: int = 0, size: str = "tiny",
                 init: str | None = None, mining_cache: str | None = None, tokenizer: str | None = None,
                 steps: int | None = None, bf16: bool = False, temperature: float | None = None,
                 test_fraction: float = 0.2) -> RunConfig:
    """The RunConfig of one stage of the from-scratch comparison; everything but the geometry is identical.

    ``model``: "hyte-fh" or "eucbert" (same shape, data and order, steps, batch, learning rate and schedule; the
    tokenizer: ``tokenizer``, a folder such as :func:`hyte.training.vocabulary.train_wordpiece` writes, else the
    bundled MiniLM's WordPiece; later stages keep the one the MLM stage saved). ``steps`` overrides the size's step
    count of this stage; ``bf16``: mixed precision on a GPU (the geometry stays float32). ``stage``: "mlm" builds
    the model new (seeded) and trains it on HPO definitions, names and exact synonyms of the training branches plus
    ICD-10-CM titles and inclusion terms of the training chapters (all of it, shuffled; 400 steps of 32 see a
    sixth); "contrastive" (in-batch negatives) and "finetune" (+ one hard negative per query) continue from
    ``init``, the previous stage's final folder, on (name / synonym -> definition) and (inclusion term -> title)
    pairs. The hard negatives come from one fixed miner for both models, the bundled all-MiniLM-L6-v2 with the
    package's positive-aware miner, so both fine-tune on identical triples; with ``mining_cache`` they are mined
    once per seed. Held out from every stage: 20 % of HPO branches and of ICD-10-CM chapters (the evaluation's
    split).

    ``temperature``: the contrastive stages' initial temperature, the same rule for both models (no start from the
    documents' radius, which only the hyperbolic model has); None keeps the recipe's (0.05, divided by HyTE-FH's
    mean document radius). ``test_fraction``: the held-out share of the later stages (0.35 for choosing on
    validation branches, which then stay out of training as well).
    """
    if model not in SCRATCH_MODELS:
        raise ValueError(f"model must be one of {sorted(SCRATCH_MODELS)}; got {model!r}")
    if size not in SCRATCH_SIZES:
        raise ValueError(f"size must be one of {sorted(SCRATCH_SIZES)}; got {size!r}")
    if (stage == "mlm") != (init is None):
        raise ValueError("stage mlm builds a new model (no init); contrastive and finetune need init")
    if tokenizer is not None and stage != "mlm":
        raise ValueError("a tokenizer is chosen by the mlm stage; the later stages keep the one it saved")
    recipe = SCRATCH_SIZES[size]
    steps = recipe["steps"][stage] if steps is None else steps
    if stage == "mlm":
        options = {**recipe["shape"], "sparse_prediction": True}
        if model == "hyte-fh":
            options["residual_space_scale"] = hyte_fh_residual_space_scale(options["hidden_size"])
        spec = {"build": SCRATCH_MODELS[model], "options": options, "tokenizer": tokenizer}
    else:
        spec = {"build": "load", "path": init}
    return parse_config({
        "stage": stage,
        "model": spec,
        "data": {"source": "hpo+icd10", "max_examples": None if stage == "mlm" else recipe["examples"],
                 "hpo_query": "all", "mlm_names": True, "hpo_test_fraction": 0.2 if stage == "mlm" else test_fraction},
        "training": {"output_dir": output_dir, "max_steps": steps, "per_device_train_batch_size": recipe["batch"],
                     "learning_rate": SCRATCH_LEARNING_RATES[stage], "warmup_steps": max(1, steps // 10),
                     "logging_steps": max(1, steps // 10), "save_steps": max(2, steps // 2), "seed": seed,
                     "bf16": bf16},
        "mlm": {"mlm_probability": 0.15, "max_length": 64},
        "loss": {"similarity": "geodesic", "temperature": 0.05 if temperature is None else temperature,
                 "learn_temperature": True, "temperature_from_radius": temperature is None, "max_query_length": 32,
                 "max_document_length": 64},
        "mining": {"num_negatives": 1, "candidates": 30, "margin": 0.95, "miner": BUNDLED_MINILM,
                   "cache_dir": mining_cache},
        "evaluation": {"enabled": False},
    }, f"from-scratch recipe {model} {stage}")
