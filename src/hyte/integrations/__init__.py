"""Bridges from HyTE models to other libraries. Each submodule imports its library only when imported itself.

* :mod:`hyte.integrations.sentence_transformers`: build, save, train and evaluate HyTE SentenceTransformers.
* :mod:`hyte.integrations.mteb`: an mteb encoder adapter and an in-memory retrieval task (needs ``mteb``).
* :mod:`hyte.integrations.langchain`, :mod:`hyte.integrations.llama_index`: ``HyTERetriever`` for LangChain and
  LlamaIndex over a ``LorentzIndex`` (extras ``[langchain]``, ``[llamaindex]``).
"""
