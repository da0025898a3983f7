"""H+ phrase pooling as a sentence-transformers 6 token-pooling module (``BaseTokenPooling``), euclidean only.

    from sentence_transformers import MultiVectorEncoder
    from sentence_transformers.base.modules import Transformer
    pooling = PhraseTokenPooling.from_phrase_model(phrase_model)         # a euclidean HyTEPhraseModel
    encoder = MultiVectorEncoder(modules=[Transformer(backbone_folder), pooling])
    scores = encoder.similarity(encoder.encode_query(q), encoder.encode_document(d))   # = S_P(q, d)

Query units come out **scaled by their importance** a(s) > 0, which factors out of the max, so ST's dot-product
MaxSim is exactly the paper's weighted MaxSim S_P (ST masks padded document units before the max). Lorentz models
need ``hyte.retrieval.PhraseIndex``: a sum of Lorentz inner products is not the sum of minus geodesic distances HyTE
scores with. Saved modules name this class, so loading needs ``hyte`` and ``trust_remote_code=True`` (ST >= 6.0).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from sentence_transformers.multi_vector_encoder.modules import BaseTokenPooling
from torch import Tensor, nn

from ..modeling_hyte_phrase import NUM_BIO_TAGS, LinearChainCRF, pool_units, select_top, units_from_tags


class PhraseTokenPooling(BaseTokenPooling):
    """Token embeddings (t, D) -> top-B CRF phrase vectors; query vectors scaled by importance (module docstring)."""

    config_keys = ["tasks", "hidden_size", "query_budget", "document_budget", "special_token_ids"]

    def __init__(self, hidden_size: int, query_budget: int = 32, document_budget: int = 32,
                 special_token_ids: list[int] | None = None, tasks: list[str] | None = None) -> None:
        super().__init__(tasks=tasks or ["query", "document"])
        self.hidden_size, self.query_budget, self.document_budget = hidden_size, query_budget, document_budget
        self.special_token_ids = list(special_token_ids or [])
        self.boundary = nn.Linear(hidden_size, NUM_BIO_TAGS)
        self.crf = LinearChainCRF(NUM_BIO_TAGS)
        self.importance = nn.Linear(hidden_size, 1)

    @classmethod
    def from_phrase_model(cls, model, tasks: list[str] | None = None) -> PhraseTokenPooling:
        """The heads of a trained euclidean ``HyTEPhraseModel`` (copied), with its budgets and special tokens."""
        if model.config.geometry != "euclidean":
            raise ValueError("PhraseTokenPooling reproduces the euclidean phrase score only; a lorentz model's "
                             "score is a sum of geodesic distances, which ST's MaxSim cannot compute. Use "
                             "hyte.retrieval.PhraseIndex for HyTE-H phrase models.")
        pooling = cls(model.boundary.in_features, model.config.query_budget, model.config.document_budget,
                      model.config.special_token_ids, tasks)
        for name in ("boundary", "crf", "importance"):
            getattr(pooling, name).load_state_dict(getattr(model, name).state_dict())
        return pooling

    def _pool(self, states: Tensor, usable: Tensor, task: str | None) -> Tensor:
        """One text: states (t, D), usable (t,) bool -> (u, D) kept unit vectors (query ones importance-scaled)."""
        if not bool(usable.any()):
            return states[:1]  # nothing but special tokens: keep one vector so the text is not empty
        states = states.float()
        emissions = self.boundary(states).unsqueeze(0)
        tags = self.crf(emissions, torch.ones(1, len(states), dtype=torch.bool, device=states.device))
        unit_ids = units_from_tags(tags, usable.unsqueeze(0))
        importance = F.softplus(self.importance(states).squeeze(-1)).masked_fill(~usable, 0.0).unsqueeze(0)
        query = (task or "document") == "query"
        units = select_top(pool_units(states.unsqueeze(0), unit_ids, importance, "euclidean"),
                           self.query_budget if query else self.document_budget)
        vectors = units.vectors[0][units.mask[0]]
        return vectors * units.weights[0][units.mask[0]].unsqueeze(-1) if query else vectors

    def pool_one(self, embedding: Tensor) -> Tensor:
        """Standalone pooling of one text's token embeddings (all tokens usable, document role): sentence-transformers'
        BaseTokenPooling requires it."""
        return self._pool(embedding, torch.ones(len(embedding), dtype=torch.bool, device=embedding.device), None)

    def forward(self, features: dict[str, Tensor], task: str | None = None) -> dict[str, Tensor]:
        if not self.applies_to(task) or features["token_embeddings"].shape[0] == 0:
            return features
        embeddings, mask, ids = features["token_embeddings"], features["attention_mask"].bool(), features["input_ids"]
        usable = mask & ~torch.isin(ids, torch.tensor(self.special_token_ids, dtype=ids.dtype, device=ids.device))
        pooled = [self._pool(e[m], u[m], task) for e, m, u in zip(embeddings, mask, usable)]
        lengths = torch.tensor([len(p) for p in pooled], device=embeddings.device)
        padded = nn.utils.rnn.pad_sequence(pooled, batch_first=True)  # zeros after each text's units
        features["token_embeddings"] = padded
        features["attention_mask"] = torch.arange(padded.shape[1], device=embeddings.device) < lengths.unsqueeze(1)
        return features

    def save(self, output_path: str, *args, safe_serialization: bool = True, **kwargs) -> None:
        self.save_config(output_path)
        self.save_torch_weights(output_path, safe_serialization=safe_serialization)

    @classmethod
    def load(cls, model_name_or_path: str, subfolder: str = "", token=None, cache_folder=None, revision=None,
             local_files_only: bool = False, **kwargs) -> PhraseTokenPooling:
        hub = {"subfolder": subfolder, "token": token, "cache_folder": cache_folder, "revision": revision,
               "local_files_only": local_files_only}
        module = cls(**cls.load_config(model_name_or_path=model_name_or_path, **hub))
        return cls.load_torch_weights(model_name_or_path=model_name_or_path, model=module, **hub)


__all__ = ["PhraseTokenPooling"]
