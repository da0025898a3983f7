"""What the general-domain retrieval sets built from installed Debian documentation share.

Two sets check that a model tuned on medical ontologies still retrieves general text: the Linux man pages
(:mod:`hyte.data.manpages`) and the Debian Administrator's Handbook (:mod:`hyte.data.debian_handbook`). Both read
files a Debian package installed (found with ``dpkg -L``), turn each page or section into one ``(query, document)``
pair, drop ambiguous pairs and sample a BEIR-shaped set from the rest; this module holds those shared steps.
"""

from __future__ import annotations

import re
import subprocess
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from ..errors import HyteError


class DebianPackageMissingError(HyteError, RuntimeError):
    """A Debian package (or the files it installs) that a general-domain set reads is not on this machine."""


def dpkg_listing(packages, error: type[DebianPackageMissingError] = DebianPackageMissingError) -> list[str]:
    """Every path the installed Debian ``packages`` own (``dpkg -L``); ``error`` names the install command."""
    missing, paths = [], []
    for package in packages:
        try:
            result = subprocess.run(["dpkg", "-L", package], capture_output=True, text=True, check=False)
        except FileNotFoundError:
            raise error(f"dpkg is not available, so the Debian packages {', '.join(packages)} cannot be found; on "
                        f"Debian or Ubuntu install them with `apt-get install -y {' '.join(packages)}`") from None
        if result.returncode != 0:
            missing.append(package)
        else:
            paths.extend(line.strip() for line in result.stdout.splitlines())
    if missing:
        raise error(f"Debian package(s) not installed: {', '.join(missing)}; install them with "
                    f"`apt-get install -y {' '.join(packages)}`")
    return paths


def installed_files(packages, pattern: re.Pattern, error: type[DebianPackageMissingError], what: str, folder: str,
                    read: Callable[[Path], object] = lambda path: path if path.is_file() else None) -> list:
    """``read(path)`` of each file of the installed ``packages`` whose path matches ``pattern``, in path order, left
    out where it returns None (by default: the paths of the files on disk). ``error`` when nothing is left, naming
    ``what`` and the ``folder`` a dpkg path-exclude may have kept from the disk."""
    found = [item for path in sorted(set(dpkg_listing(packages, error))) if pattern.match(path)
             for item in [read(Path(path))] if item is not None]
    if not found:
        raise error(f"the package(s) {', '.join(packages)} are installed but none of {what} is on disk (a dpkg "
                    f"path-exclude for {folder}, as in slim container images?); remove it and reinstall with "
                    f"`apt-get install -y --reinstall {' '.join(packages)}`")
    return found


def truncate(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a word boundary (trailing punctuation of the cut dropped)."""
    if len(text) <= limit:
        return text
    cut = text[:limit + 1].rsplit(" ", 1)[0] if " " in text[:limit + 1] else text[:limit]
    return cut.rstrip(" ,;:")


def unambiguous_pairs(pairs: dict[str, tuple[str, str]]) -> dict[str, tuple[str, str]]:
    """``pairs`` (id -> (query, document)) sorted by id, without every pair that shares its query (case-folded) or
    its document with another: such a query would have two right answers but qrels naming one."""
    query_counts = Counter(query.casefold() for query, _ in pairs.values())
    document_counts = Counter(document for _, document in pairs.values())
    return {key: (query, document) for key, (query, document) in sorted(pairs.items())
            if query_counts[query.casefold()] == 1 and document_counts[document] == 1}


def sampled_retrieval_set(pairs: dict[str, tuple[str, str]], max_queries: int | None, max_documents: int | None,
                          seed: int):
    """(queries, corpus, qrels) in BEIR's in-memory shape from one-answer ``pairs`` (id -> (query, document)).

    ``max_queries`` ids are sampled with ``random.Random(seed)`` (all with None), each relevant to its own document
    only; the corpus keeps every sampled query's document and fills up with other pairs' documents (seeded) to
    ``max_documents``, as :func:`hyte.evaluation.heldout.heldout_retrieval_set` does.
    """
    from .beir import check_sample_sizes, corpus_with_distractors, seeded_subset

    check_sample_sizes(max_queries=max_queries, max_documents=max_documents)
    query_ids = seeded_subset(sorted(pairs), max_queries, seed)
    queries = {key: pairs[key][0] for key in query_ids}
    qrels = {key: {key: 1} for key in query_ids}
    documents = {key: document for key, (_, document) in pairs.items()}
    return queries, corpus_with_distractors(documents, qrels, max_documents, seed), qrels
