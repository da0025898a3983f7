"""H+ phrase-level multi-vector retrieval (seed 001, section 3) on a HyTE-H or a Euclidean backbone.

Read top to bottom: the linear-chain CRF, units (partitions of the token positions), unit pooling and top-B
selection, the scores (weighted MaxSim, lexical), then the model.

Shapes: B texts, T tokens, U units of a text, D vector width (time coordinate included on the hyperboloid),
d backbone width, K = 3 BIO tags (O = 0, B = 1, I = 2).

Units. The CRF tags every real token O, B or I. A B starts a unit, an I extends the current one, an O token is a
singleton unit, so the units **partition** the text's tokens (special tokens and padding excepted): every token is
in exactly one unit. An I with no open unit (after an O, or first) starts a unit, so any tag sequence partitions.
A unit's importance is the sum of its tokens' u_i = softplus(w . h_i + b); the top B units by importance are kept.

Similarity (the two geometries):

* euclidean (the paper): unit vector = normalised mean of the span's token states; s(q, t) = cosine.
* lorentz: unit vector = OEM_p of the span's token points (``lorentz.outward_einstein_midpoint``);
  s(q, t) = -d(q, t) = -sqrt(c) arccosh(-<q, t>_L / c), minus the geodesic distance. It is a decreasing function of
  the distance, like cosine, and 0 at a perfect match. Because it is monotone in <q, t>_L, the max over document
  units is taken on raw Lorentz inner products (one matmul, as in the Euclidean case) and only the B_q winners go
  through arccosh. Lorentz inner products are always <= -c < 0, so a padded or dropped unit must be masked with -inf
  before the max: a 0 (PyLate's multiply-by-mask) would beat every real unit.

This file is remote code: it imports only torch, transformers and its siblings (``configuration_hyte_phrase``,
``configuration_hyte``, ``modeling_hyte``, ``lorentz``), so a checkpoint loads with ``trust_remote_code=True``
where ``hyte`` is not installed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from transformers import AutoConfig, AutoModel, PreTrainedModel
from transformers.modeling_outputs import ModelOutput

from .configuration_hyte import HyTEHConfig
from .configuration_hyte_phrase import NUM_BIO_TAGS, HyTEPhraseConfig
from .lorentz import add_time, distance_from_inner, flip_time, project
from .modeling_hyte import HyTEHModel, RefusesFolderWithoutConfig, check_encode_arguments, check_token_ids, masked_mean

TAG_O, TAG_B, TAG_I = 0, 1, 2
SEGMENTERS = ("crf", "token", "bigram", "random")

# Transition score that forbids a BIO move (O -> I, start -> I). Finite, not -inf: logsumexp and its gradient stay
# defined even if a gold sequence breaks the rule; exp(-1e4) is 0 in float32 and float64.
_FORBIDDEN = -1e4


# ----------------------------------------------------------------------------------------------------------------
# Linear-chain CRF
# ----------------------------------------------------------------------------------------------------------------


class LinearChainCRF(nn.Module):
    """A linear-chain CRF over K tags with BIO constraints (no O -> I and no start -> I).

    score(y) = start[y_0] + sum_t emit[t, y_t] + sum_{t>0} trans[y_{t-1}, y_t] + end[y_last], over the masked
    positions. ``log_likelihood`` = score(gold) - log Z (forward algorithm); ``decode`` = Viterbi argmax. Both are
    batched, looping over T only (O(T K^2)). Masks must be **right-padded**: every sequence is a prefix of length
    >= 1 (an attention mask). Written here rather than taken from pytorch-crf (unreleased since 2019; its decode
    returns Python lists and warns on non-bool masks) so that checkpoints need no extra package; tested against
    brute-force enumeration.
    """

    def __init__(self, num_tags: int = NUM_BIO_TAGS):
        super().__init__()
        self.num_tags = num_tags
        self.start_transitions = nn.Parameter(torch.zeros(num_tags))
        self.end_transitions = nn.Parameter(torch.zeros(num_tags))
        self.transitions = nn.Parameter(torch.zeros(num_tags, num_tags))

    def effective_parameters(self) -> tuple[Tensor, Tensor, Tensor]:
        """(start (K,), transitions (K, K), end (K,)) with the BIO constraints added.

        The constraints are built here on every call, not kept as buffers: from_pretrained leaves non-persistent
        buffers uninitialised (they were garbage after a load), and saving them would make them look learnable.
        """
        start, transitions = self.start_transitions.clone(), self.transitions.clone()
        if self.num_tags == NUM_BIO_TAGS:
            start[TAG_I] += _FORBIDDEN
            transitions[TAG_O, TAG_I] += _FORBIDDEN
        return start, transitions, self.end_transitions

    def _inputs(self, emissions: Tensor, mask: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
        """(emissions in float32, mask as bool, start, transitions, end) after checking the mask."""
        mask = mask.bool()
        if not bool(mask[:, 0].all()):
            raise ValueError("LinearChainCRF: every sequence needs its first position unmasked (right padding, "
                             "length >= 1); got a mask whose first column has a False.")
        return (emissions.float(), mask, *self.effective_parameters())

    def sequence_score(self, emissions: Tensor, tags: Tensor, mask: Tensor) -> Tensor:
        """Unnormalised score of given tag sequences: emissions (B, T, K), tags (B, T) long, mask (B, T) -> (B,)."""
        emissions, mask, start, trans, end = self._inputs(emissions, mask)
        tags = tags.masked_fill(~mask, 0)
        emitted = emissions.gather(-1, tags.unsqueeze(-1)).squeeze(-1)  # (B, T)
        moved = trans[tags[:, :-1], tags[:, 1:]]  # (B, T - 1)
        lengths = mask.sum(1)
        last = tags.gather(1, (lengths - 1).unsqueeze(1)).squeeze(1)
        return (start[tags[:, 0]] + (emitted * mask).sum(1) + (moved * mask[:, 1:]).sum(1) + end[last])

    def log_partition(self, emissions: Tensor, mask: Tensor) -> Tensor:
        """log Z over all tag sequences of each masked prefix: (B, T, K), (B, T) -> (B,)."""
        emissions, mask, start, trans, end = self._inputs(emissions, mask)
        alpha = start + emissions[:, 0]  # (B, K)
        for t in range(1, emissions.shape[1]):
            step = torch.logsumexp(alpha.unsqueeze(2) + trans + emissions[:, t].unsqueeze(1), dim=1)
            alpha = torch.where(mask[:, t].unsqueeze(1), step, alpha)
        return torch.logsumexp(alpha + end, dim=1)

    def log_likelihood(self, emissions: Tensor, tags: Tensor, mask: Tensor) -> Tensor:
        """log p(tags | emissions), (B,): the segmentation loss is its negative mean."""
        return self.sequence_score(emissions, tags, mask) - self.log_partition(emissions, mask)

    def forward(self, emissions: Tensor, mask: Tensor, tags: Tensor | None = None) -> Tensor:
        """``log_likelihood`` (B,) when ``tags`` are given, else ``decode`` (B, T). Going through forward lets
        wrappers that replace the module (peft's modules_to_save) reach the trained copy."""
        return self.decode(emissions, mask) if tags is None else self.log_likelihood(emissions, tags, mask)

    @torch.no_grad()
    def decode(self, emissions: Tensor, mask: Tensor) -> Tensor:
        """Viterbi: the best tag sequence, (B, T, K), (B, T) -> (B, T) long; masked positions get O."""
        emissions, mask, start, trans, end = self._inputs(emissions, mask)
        batch, length, _ = emissions.shape
        score = start + emissions[:, 0]
        backpointers = []
        for t in range(1, length):
            best, pointer = (score.unsqueeze(2) + trans).max(dim=1)  # over K_prev of (B, K_prev, K)
            backpointers.append(pointer)
            score = torch.where(mask[:, t].unsqueeze(1), best + emissions[:, t], score)
        lengths = mask.sum(1)
        current = (score + end).argmax(dim=1)  # tag at position length - 1
        tags = torch.full((batch, length), TAG_O, dtype=torch.long, device=emissions.device)
        for t in range(length - 1, -1, -1):
            # The best tag at each text's last position, then the backpointers; O beyond a text's end.
            previous = backpointers[t].gather(1, tags[:, t + 1:t + 2]).squeeze(1) if t < length - 1 else current
            tags[:, t] = torch.where(lengths - 1 == t, current, previous).masked_fill(t >= lengths, TAG_O)
        return tags


# ----------------------------------------------------------------------------------------------------------------
# Units: partitions of the token positions
# ----------------------------------------------------------------------------------------------------------------


def units_from_tags(tags: Tensor, unit_mask: Tensor) -> Tensor:
    """BIO tags (B, T) + tokens that may form units (B, T) bool -> unit index per token (B, T) long, -1 outside.

    A token starts a new unit unless it is tagged I and the token before it is a unit token tagged B or I (a unit is
    open). So B starts a unit, I extends it, O is a singleton, and a stray I starts a unit of its own. Units are
    numbered 0, 1, ... in text order.
    """
    unit_mask = unit_mask.bool()
    inside = unit_mask & ((tags == TAG_B) | (tags == TAG_I))
    open_before = F.pad(inside[:, :-1], (1, 0), value=False)
    start = unit_mask & ~((tags == TAG_I) & open_before)
    ids = torch.cumsum(start.long(), dim=1) - 1
    return ids.masked_fill(~unit_mask, -1)


def apply_override(model_tags: Tensor, override_tags: Tensor, covered: Tensor) -> Tensor:
    """The paper's inference-time override (e.g. by a terminology trie): (B, T) tags, (B, T) tags, (B, T) bool ->
    (B, T): ``override_tags`` where ``covered``, ``model_tags`` elsewhere; a model I right after a covered span would
    extend that span's unit, so it becomes B."""
    covered = covered.bool()
    out = torch.where(covered, override_tags, model_tags)
    after_span = F.pad(covered[:, :-1], (1, 0), value=False) & ~covered & (out == TAG_I)
    return out.masked_fill(after_span, TAG_B)


def token_units(unit_mask: Tensor) -> Tensor:
    """Every unit token its own unit (the ColBERT unit): (B, T) bool -> (B, T) long, -1 outside."""
    unit_mask = unit_mask.bool()
    return (torch.cumsum(unit_mask.long(), dim=1) - 1).masked_fill(~unit_mask, -1)


def bigram_units(unit_mask: Tensor) -> Tensor:
    """Fixed bigrams: unit tokens paired in order (1-2, 3-4, ...; a last odd token alone): (B, T) -> (B, T)."""
    return torch.div(token_units(unit_mask), 2, rounding_mode="floor").masked_fill(~unit_mask.bool(), -1)


def random_units(unit_mask: Tensor, seed: int = 0, lengths: Sequence[int] = (1, 2, 3),
                 probabilities: Sequence[float] = (0.5, 0.3, 0.2)) -> Tensor:
    """Random spans: unit tokens cut into consecutive spans of lengths drawn i.i.d. from ``lengths`` with
    ``probabilities`` (a seeded generator: the same seed gives the same spans). (B, T) bool -> (B, T) long."""
    unit_mask = unit_mask.bool()
    generator = torch.Generator().manual_seed(seed)
    position = token_units(unit_mask).cpu()  # rank of each unit token
    out = torch.full(unit_mask.shape, -1, dtype=torch.long)
    choices = torch.tensor(list(lengths), dtype=torch.long)
    weights = torch.tensor(list(probabilities), dtype=torch.float)
    for row in range(unit_mask.shape[0]):
        count = int(unit_mask[row].sum())
        draws = choices[torch.multinomial(weights, max(count, 1), replacement=True, generator=generator)]
        ends = torch.cumsum(draws, 0)  # unit j covers ranks [ends[j-1], ends[j])
        span_of_rank = torch.searchsorted(ends, torch.arange(count), right=True)
        keep = position[row] >= 0
        out[row, keep] = span_of_rank[position[row, keep]]
    return out.to(unit_mask.device)


def segment(kind: str, unit_mask: Tensor, tags: Tensor | None = None, seed: int = 0) -> Tensor:
    """Units of one of ``SEGMENTERS``: "crf" (from ``tags``), "token", "bigram" or "random" -> (B, T) long."""
    if kind == "crf":
        if tags is None:
            raise ValueError("segment('crf') needs the decoded BIO tags (HyTEPhraseModel.decode_tags).")
        return units_from_tags(tags, unit_mask)
    if kind == "token":
        return token_units(unit_mask)
    if kind == "bigram":
        return bigram_units(unit_mask)
    if kind == "random":
        return random_units(unit_mask, seed=seed)
    raise ValueError(f"unknown unit kind {kind!r}; choose one of {SEGMENTERS}.")


def unit_counts(unit_ids: Tensor) -> Tensor:
    """Number of units per text: (B, T) -> (B,) long (units are numbered 0..m-1, so m = max + 1)."""
    return unit_ids.max(dim=1).values.clamp_min(-1) + 1


# ----------------------------------------------------------------------------------------------------------------
# Unit vectors and top-B selection
# ----------------------------------------------------------------------------------------------------------------


@dataclass
class Units:
    """Selected units of a batch of texts, padded to U (the largest kept count).

    vectors (B, U, D): euclidean unit vectors (norm 1) or hyperboloid points; weights (B, U): importance a(s) (0 where
    masked); mask (B, U) bool: True for a real kept unit. Masked rows of ``vectors`` hold finite filler values and
    must never be scored without the mask.
    """

    vectors: Tensor
    weights: Tensor
    mask: Tensor


def membership(unit_ids: Tensor, num_units: int | None = None) -> Tensor:
    """One-hot unit membership (B, U, T) float from unit ids (B, T) (-1 = in no unit)."""
    count = int(unit_counts(unit_ids).max()) if num_units is None else num_units
    return (unit_ids.unsqueeze(1) == torch.arange(count, device=unit_ids.device).view(1, -1, 1)).float()


def pool_units(states: Tensor, unit_ids: Tensor, importance: Tensor, geometry: str, curvature: float | Tensor = 1.0,
               oem_p: float = 1.0) -> Units:
    """All units of each text: token states (B, T, D), unit ids (B, T), importance u (B, T) -> Units (B, U, D).

    euclidean: normalise(mean of the span's states). lorentz: OEM_p of the span's points, Pi_c(sum x_{i,0}^p x_i),
    in float64 with each point's time re-derived from its space part (as ``lorentz.outward_einstein_midpoint``).
    Importance a(s) = sum of u_i over the span.
    """
    members = membership(unit_ids)  # (B, U, T)
    mask = members.sum(-1) > 0
    weights = members @ importance.float().unsqueeze(-1)  # (B, U, 1)
    if geometry == "euclidean":
        vectors = F.normalize(members @ states.float(), dim=-1)  # the mean's direction; a masked (all-zero) row stays 0
    elif geometry == "lorentz":
        c64 = torch.as_tensor(curvature, dtype=torch.float64, device=states.device)
        points = add_time(states[..., 1:].double(), c64)  # (B, T, D)
        # x_0^p weights; dividing by the span total would not change Pi_c, which ignores a positive factor.
        scaled = members.double() * points[..., 0].pow(oem_p).unsqueeze(1)
        summed = scaled @ points
        # A masked unit has sum 0; give it the origin (time 1) instead so that no NaN appears (it is masked everywhere).
        summed[..., 0] = summed[..., 0].masked_fill(~mask, 1.0)
        vectors = project(summed, c64).to(states.dtype if states.is_floating_point() else torch.float32)
    else:
        raise ValueError(f"geometry must be 'euclidean' or 'lorentz'; got {geometry!r}.")
    return Units(vectors=vectors, weights=weights.squeeze(-1).masked_fill(~mask, 0.0), mask=mask)


def select_top(units: Units, budget: int | Tensor) -> Units:
    """Keep the top-``budget`` units of each text by importance (seed eq. TopB): Units (B, U) -> Units (B, U').

    ``budget``: one int for all texts, or (B,) per-text counts (the paper's exact-count control). U' = min(U, max
    budget); the kept units keep text order. A text never keeps more than its budget nor more than it has.
    """
    batch, count = units.mask.shape
    budgets = torch.as_tensor(budget, device=units.mask.device).expand(batch)  # one int or (B,) -> (B,)
    if bool((budgets < 1).any()):
        raise ValueError(f"unit budgets must be >= 1; got {budgets.min().item()}.")
    width = min(count, int(budgets.max()))
    # Ties broken by position (stable sort): deterministic for equal importance.
    ranked = units.weights.masked_fill(~units.mask, -math.inf)
    order = torch.sort(ranked, dim=1, descending=True, stable=True).indices[:, :width]
    rank = torch.arange(width, device=order.device).unsqueeze(0)
    keep = (rank < budgets.unsqueeze(1)) & units.mask.gather(1, order)
    order, _ = torch.sort(torch.where(keep, order, count + order), dim=1)  # kept first, in text order
    keep = order < count
    order = order % count if count else order
    vectors = units.vectors.gather(1, order.unsqueeze(-1).expand(-1, -1, units.vectors.shape[-1]))
    weights = units.weights.gather(1, order).masked_fill(~keep, 0.0)
    return Units(vectors=vectors, weights=weights, mask=keep)


# ----------------------------------------------------------------------------------------------------------------
# Scores
# ----------------------------------------------------------------------------------------------------------------


def unit_inner(queries: Tensor, documents: Tensor, geometry: str) -> Tensor:
    """Raw unit similarities: queries (Q, A, D), documents (N, C, D) -> (Q, N, A, C).

    euclidean: dot products (cosines of unit vectors). lorentz: Lorentz inner products <q, d>_L (<= -c).
    """
    if geometry == "lorentz":
        queries = flip_time(queries)
    return torch.einsum("qad,ncd->qnac", queries.float(), documents.float())


def similarity_of_best(best: Tensor, geometry: str, curvature: float | Tensor = 1.0) -> Tensor:
    """Each query unit's best raw inner product (``unit_inner``'s values after the max over document units) as the
    unit similarity s: the cosine as it is (euclidean) or minus the geodesic distance (lorentz; -arccosh is
    monotone, so it runs after the max, on the few best values only). -inf (no document unit) stays -inf."""
    if geometry != "lorentz":
        return best
    finite = torch.isfinite(best)
    distance = distance_from_inner(torch.where(finite, best, torch.full_like(best, -1e30)), curvature)
    return torch.where(finite, -distance, best)


def weighted_maxsim(queries: Units, documents: Units, geometry: str, curvature: float | Tensor = 1.0,
                    normalize_weights: bool = False) -> Tensor:
    """S_P(q, d) = sum_s a_q(s) max_t s(p_s, p_t) for every query-document pair: (Q, A), (N, C) units -> (Q, N).

    s is the cosine (euclidean) or minus the geodesic distance (lorentz). Document units outside their mask get -inf
    before the max (never 0: every Lorentz similarity is negative); masked query units contribute exactly 0 (chosen
    with ``where``, since -inf x 0 is NaN). A document without any unit scores -inf. ``normalize_weights`` divides
    by sum_s a_q(s), a per-query constant that leaves rankings unchanged and keeps training logits bounded.
    """
    raw = unit_inner(queries.vectors, documents.vectors, geometry)  # (Q, N, A, C)
    raw = raw.masked_fill(~documents.mask[None, :, None, :], -math.inf)
    best = similarity_of_best(raw.max(dim=-1).values, geometry, curvature)  # (Q, N, A)
    weights = queries.weights.float()
    if normalize_weights:
        weights = weights / weights.sum(-1, keepdim=True).clamp_min(1e-12)
    contribution = torch.where(queries.mask[:, None, :], weights[:, None, :] * best, torch.zeros_like(best))
    return contribution.sum(-1)


def lexical_vectors(input_ids: Tensor, importance: Tensor, unit_mask: Tensor, vocab_size: int,
                    reduce: str = "amax") -> Tensor:
    """Dense lexical weights (B, V): w(t) = max_{i: id_i = t} u_i (``reduce="amax"``, the inference view) or the sum
    (``"sum"``, the training view w~ of the seed). Only unit tokens count (no specials, no padding)."""
    values = importance.float().masked_fill(~unit_mask.bool(), 0.0)
    out = torch.zeros(input_ids.shape[0], vocab_size, dtype=values.dtype, device=values.device)
    return out.scatter_reduce(1, input_ids, values, reduce=reduce, include_self=True)


def lexical_scores(query_weights: Tensor, document_weights: Tensor) -> Tensor:
    """S_L(q, d) = sum_t w_q(t) w_d(t): (Q, V), (N, V) -> (Q, N)."""
    return query_weights @ document_weights.T


# ----------------------------------------------------------------------------------------------------------------
# The model
# ----------------------------------------------------------------------------------------------------------------


@dataclass
class PhraseModelOutput(ModelOutput):
    """token_states (B, T, D): euclidean backbone states, or HyTE-H token points; global_vector (B, D): normalised
    mean (euclidean) or HyTE-H's pooled point (lorentz), never flipped; importance (B, T): u_i, 0 outside units;
    emissions (B, T, 3): CRF emission scores; unit_mask (B, T) bool: tokens that may form units; features (B, T, d):
    the Euclidean states the heads read."""

    token_states: Tensor | None = None
    global_vector: Tensor | None = None
    importance: Tensor | None = None
    emissions: Tensor | None = None
    unit_mask: Tensor | None = None
    features: Tensor | None = None


class HyTEPhraseModel(RefusesFolderWithoutConfig, PreTrainedModel):
    """A backbone (HyTE-H or a Euclidean encoder) with the H+ phrase heads: CRF boundaries, importance, units."""

    config_class = HyTEPhraseConfig
    base_model_prefix = "phrase"
    supports_gradient_checkpointing = True
    _supports_sdpa = True

    def __init__(self, config: HyTEPhraseConfig):
        super().__init__(config)
        if config.backbone_config is None:
            raise ValueError("HyTEPhraseConfig.backbone_config is empty: build the model with "
                             "HyTEPhraseModel.from_backbone(path_or_model).")
        if config.geometry == "lorentz":
            self.backbone = HyTEHModel(HyTEHConfig.from_dict(dict(config.backbone_config)))
            width = self.backbone.config.encoder_config.hidden_size
        else:
            backbone_config = dict(config.backbone_config)
            self.backbone = AutoModel.from_config(AutoConfig.for_model(backbone_config.pop("model_type"),
                                                                       **backbone_config))
            if getattr(self.backbone, "pooler", None) is not None:
                self.backbone.pooler = None  # unused (we pool ourselves); DDP could not synchronise it
            width = self.backbone.config.hidden_size
        self.boundary = nn.Linear(width, NUM_BIO_TAGS)
        self.crf = LinearChainCRF(NUM_BIO_TAGS)
        self.importance = nn.Linear(width, 1)
        self.token_projection = (nn.Linear(width, config.token_projection_size)
                                 if config.geometry == "euclidean" and config.token_projection_size else None)
        self.post_init()

    def _init_weights(self, module: nn.Module) -> None:
        if module is self.backbone or any(module is m for m in self.backbone.modules()):
            return  # the backbone initialises itself; from_backbone overwrites it with trained weights
        if module is self.importance:
            nn.init.zeros_(module.weight)
            nn.init.constant_(module.bias, self.config.importance_bias_init)
        elif isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=self.config.initializer_range)
            nn.init.zeros_(module.bias)
        elif isinstance(module, LinearChainCRF):
            for parameter in (module.start_transitions, module.end_transitions, module.transitions):
                nn.init.zeros_(parameter)

    @classmethod
    def from_backbone(cls, backbone, geometry: str | None = None, special_token_ids: Sequence[int] | None = None,
                      **options) -> HyTEPhraseModel:
        """Put phrase heads on a backbone: a HyTEHModel (geometry lorentz) or a transformers encoder / its path.

        ``special_token_ids``: token ids never part of a unit ([CLS], [SEP], ...); pass ``tokenizer.all_special_ids``.
        ``options`` are further HyTEPhraseConfig fields (budgets, fusion weights ...).
        """
        if isinstance(backbone, str):
            backbone = AutoModel.from_pretrained(backbone, dtype=torch.float32)
        hyperbolic = isinstance(backbone, HyTEHModel)
        geometry = geometry or ("lorentz" if hyperbolic else "euclidean")
        if (geometry == "lorentz") != hyperbolic:
            raise ValueError(f"geometry {geometry!r} does not match the backbone {type(backbone).__name__}: lorentz "
                             "needs a HyTEHModel, euclidean a plain encoder.")
        config = HyTEPhraseConfig(backbone_config=backbone.config.to_dict(), geometry=geometry,
                                  special_token_ids=list(special_token_ids or []), **options)
        model = cls(config)
        state = {k: v for k, v in backbone.state_dict().items() if not k.startswith("pooler.")}
        missing, unexpected = model.backbone.load_state_dict(state, strict=False)
        if unexpected or [k for k in missing if not k.startswith("pooler.")]:
            raise ValueError(f"backbone weights do not fit: missing {missing[:5]}, unexpected {unexpected[:5]}")
        model.config.name_or_path = getattr(backbone.config, "name_or_path", "") or ""
        return model

    @property
    def curvature(self) -> Tensor:
        """c of the hyperboloid (lorentz); 1.0 for euclidean (unused)."""
        if self.config.geometry == "lorentz":
            return self.backbone.curvature
        return torch.tensor(1.0)

    def get_input_embeddings(self) -> nn.Module:
        return self.backbone.get_input_embeddings()

    def set_input_embeddings(self, value: nn.Module) -> None:
        self.backbone.set_input_embeddings(value)

    def unit_mask(self, input_ids: Tensor, attention_mask: Tensor) -> Tensor:
        """Tokens that may form units: attended and not a special token. (B, T) -> (B, T) bool."""
        specials = torch.tensor(self.config.special_token_ids or [], dtype=input_ids.dtype, device=input_ids.device)
        return attention_mask.bool() & ~torch.isin(input_ids, specials)

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None, **kwargs) -> PhraseModelOutput:
        """Token ids (B, T) -> PhraseModelOutput (see its docstring)."""
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        extra = {k: v for k, v in kwargs.items() if k == "token_type_ids"}
        if self.config.geometry == "lorentz":
            layers = self.backbone.config.encoder_config.num_hidden_layers
            out = self.backbone(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=[layers],
                                return_dict=True, **extra)
            features = out.hidden_states[layers].float()  # the Euclidean backbone's last layer (B, T, d)
            states, global_vector = out.last_hidden_state, out.pooler_output
        else:
            out = self.backbone(input_ids=input_ids, attention_mask=attention_mask, return_dict=True, **extra)
            features = states = out.last_hidden_state.float()
            global_vector = F.normalize(masked_mean(states, attention_mask), dim=-1)
        unit_mask = self.unit_mask(input_ids, attention_mask)
        importance = F.softplus(self.importance(features).squeeze(-1)).masked_fill(~unit_mask, 0.0)
        return PhraseModelOutput(token_states=states, global_vector=global_vector, importance=importance,
                                 emissions=self.boundary(features), unit_mask=unit_mask, features=features)

    def decode_tags(self, output: PhraseModelOutput, attention_mask: Tensor) -> Tensor:
        """Viterbi BIO tags (B, T); tokens outside units are set to O."""
        tags = self.crf(output.emissions, attention_mask.bool())
        return tags.masked_fill(~output.unit_mask, TAG_O)

    def units(self, output: PhraseModelOutput, unit_ids: Tensor, budget: int | Tensor | None) -> Units:
        """Pool the units given by ``unit_ids`` (B, T) and keep the top ``budget`` (None: all)."""
        pooled = pool_units(output.token_states, unit_ids, output.importance, self.config.geometry, self.curvature,
                            self.config.oem_p)
        return pooled if budget is None else select_top(pooled, budget)

    @torch.no_grad()
    def encode_phrases(self, texts: Sequence[str] | str, tokenizer, role: str = "document",
                       budget: int | None = None, unit: str = "crf", batch_size: int = 32,
                       max_length: int | None = None, seed: int = 0, tags: Sequence[Sequence[int]] | None = None,
                       override: Sequence[tuple[Sequence[int], Sequence[bool]]] | None = None) -> list[dict]:
        """Encode texts into the three H+ views; one dict per text (NumPy float32 unless stated):

        ``global`` (D,): the global vector, sign-flipped for a lorentz query (HyTE's retrieval convention, so it can
        search a LorentzIndex directly); ``units`` (u, D): the kept unit vectors (points, never flipped) in text
        order; ``weights`` (u,): their importance a(s); ``lexical_ids`` (m,) int64 / ``lexical_weights`` (m,): the
        lexical view's nonzero entries; ``num_units``: the text's unit count before the budget.
        ``budget`` defaults to the config's query/document budget, ``max_length`` to the backbone's positions (longer
        texts are truncated). ``unit``: "crf" or a baseline of SEGMENTERS.
        ``tags``: per-text BIO tags over the tokenizer's tokens to use instead of the CRF (e.g. the terminology trie
        override), padded or cut to each batch's length. ``override``: per text (tags, covered) over the same
        tokens: the CRF's tags stay where ``covered`` is False (``apply_override``; hyte.phrase.teacher.teacher_tags
        gives both for the terminology trie).
        """
        texts, max_length = check_encode_arguments(texts, tokenizer, role, batch_size, max_length,
                                                   self.backbone.config.max_position_embeddings)
        # A text without tokens has no units, so no defined output (``encode`` gives it the origin instead).
        blank = [i for i, t in enumerate(texts) if not t.strip()]
        if blank:
            raise ValueError(f"encode: text {blank[0]} is empty (or only whitespace); drop it or give it some text")
        if budget is None:
            budget = self.config.query_budget if role == "query" else self.config.document_budget
        was_training = self.training
        self.eval()
        device = next(self.parameters()).device
        results: list[dict] = [{} for _ in texts]
        try:
            for start in range(0, len(texts), batch_size):
                chunk = texts[start:start + batch_size]
                # Right padding whatever the tokenizer's default: positions count from the first column.
                batch = tokenizer(chunk, padding=True, truncation=True, max_length=max_length, padding_side="right",
                                  return_tensors="pt")
                check_token_ids(batch["input_ids"], self.backbone.config.vocab_size)
                ids, attention = batch["input_ids"].to(device), batch["attention_mask"].to(device)
                output = self(input_ids=ids, attention_mask=attention)
                if tags is not None:
                    unit_ids = units_from_tags(_padded(tags[start:start + batch_size], ids.shape, TAG_O, device),
                                               output.unit_mask)
                elif unit == "crf":
                    decoded = self.decode_tags(output, attention)
                    if override is not None:
                        chunk_override = override[start:start + batch_size]
                        decoded = apply_override(
                            decoded, _padded([t for t, _ in chunk_override], ids.shape, TAG_O, device),
                            _padded([c for _, c in chunk_override], ids.shape, False, device).bool())
                    unit_ids = units_from_tags(decoded, output.unit_mask)
                else:
                    unit_ids = segment(unit, output.unit_mask, seed=seed + start)
                counts = unit_counts(unit_ids)
                kept = self.units(output, unit_ids, budget)
                global_vector = output.global_vector.float()
                lexical = lexical_vectors(ids, output.importance, output.unit_mask, self.backbone.config.vocab_size)
                if role == "query" and self.config.geometry == "lorentz":
                    global_vector = flip_time(global_vector)
                for row in range(len(chunk)):
                    keep = kept.mask[row]
                    unique = torch.unique(ids[row][output.unit_mask[row]])  # the text's unit tokens, sorted
                    results[start + row] = {
                        "global": global_vector[row].cpu().numpy(),
                        "units": kept.vectors[row][keep].float().cpu().numpy(),
                        "weights": kept.weights[row][keep].float().cpu().numpy(),
                        "lexical_ids": unique.cpu().numpy().astype("int64"),
                        "lexical_weights": lexical[row, unique].float().cpu().numpy(),
                        "num_units": int(counts[row]),
                    }
        finally:
            self.train(was_training)
        return results


def _padded(rows: Sequence[Sequence], shape: tuple[int, int], fill, device) -> Tensor:
    """Per-text lists cut or padded with ``fill`` to ``shape`` (B, T), as a long tensor on ``device``."""
    out = torch.full(shape, int(fill), dtype=torch.long, device=device)
    for row, values in enumerate(rows):
        values = torch.as_tensor([int(v) for v in list(values)[: shape[1]]], dtype=torch.long)
        out[row, : len(values)] = values
    return out


HyTEPhraseConfig.register_for_auto_class()
HyTEPhraseModel.register_for_auto_class("AutoModel")

__all__ = [
    "SEGMENTERS",
    "TAG_B",
    "TAG_I",
    "TAG_O",
    "HyTEPhraseModel",
    "LinearChainCRF",
    "PhraseModelOutput",
    "Units",
    "apply_override",
    "bigram_units",
    "lexical_scores",
    "lexical_vectors",
    "pool_units",
    "random_units",
    "segment",
    "select_top",
    "token_units",
    "unit_counts",
    "similarity_of_best",
    "unit_inner",
    "units_from_tags",
    "weighted_maxsim",
]
