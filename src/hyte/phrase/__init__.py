"""H+ phrase-level retrieval as a feature package, around the model (``hyte.modeling_hyte_phrase``): the offline
BIO teacher (terminology trie, ``teacher``), loading a phrase model (``loading``), its training stage
``hyte train phrase`` (``training``, registered in ``hyte.runner``), reranking evaluation (``evaluation``) and its
BENCHMARKS.md section (``report``). The phrase store and index live in ``hyte.retrieval.phrase``, beside
``LorentzIndex``, so one index folder format serves plain and phrase indexes alike."""
