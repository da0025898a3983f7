"""H+ phrase-level retrieval around the model (``hyte.modeling_hyte_phrase``): the offline BIO teacher (terminology
trie), evaluation helpers and benchmarks. The phrase store and reranking live in ``hyte.retrieval.phrase``; the
training stage in ``hyte.training.phrase``."""
