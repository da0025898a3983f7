"""Is this the same thing? One answer for every output hyte resumes, replaces or checks.

An output that a later command may resume, replace or trust records its identity: a JSON object of what decided its
content. A training run records its config less what a resumption may change (``run.json``); vector shards their
model, corpus file and encoding settings (``manifest.json``); an index folder the digest of each of its files
(``index.json``); a result its kind, model, data and the data's digest (and a radius result its sample of texts).
A later writer builds the identity it would record and compares it with the recorded one through ``differences``;
it goes on only where there are none, and otherwise names them. Content enters an identity through a digest of this
module (``digest``, ``file_digest``, ``data_digest``, ``texts_digest``), never a hash of its own: SHA-256 in hex,
whole where a file's integrity is checked, its first 12 digits where it only names (one user's outputs do not
collide there). Two digests stay outside, each for its reason: a model's weights fingerprint
(``hyte.lineage``: it hashes tensors, so it needs torch, which this floor does not import) and the remote-code
file's cache key (``sentence_transformers_hyte.py`` travels without hyte).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["NAME_DIGITS", "data_digest", "differences", "digest", "file_digest", "texts_digest"]

NAME_DIGITS = 12  # hex digits of a digest that names (a run, a dataset); a file's integrity check keeps all 64
_BLOCK = 1 << 20  # files are hashed in 1 MiB blocks: a corpus or a FAISS file may not fit in memory twice


def digest(value: Any) -> str:
    """The first 12 hex digits of the SHA-256 of ``value``'s canonical JSON text (sorted keys), naming it."""
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:NAME_DIGITS]


def file_digest(path: str | os.PathLike) -> str:
    """The SHA-256 of a file's bytes, in hex (all 64 digits: it checks that a file is the one recorded)."""
    return _file_hash(path).hexdigest()


def data_digest(path: str | os.PathLike) -> str:
    """The first 12 hex digits naming a data file's content, or a data folder's: every file in it by relative name
    and content, so a folder whose files were replaced under the same names gets another digest."""
    path = Path(path)
    if path.is_file():
        return file_digest(path)[:NAME_DIGITS]
    folder = hashlib.sha256()
    for file in sorted(item for item in path.rglob("*") if item.is_file()):
        folder.update(file.relative_to(path).as_posix().encode() + b"\0")
        folder.update(_file_hash(file).digest())
    return folder.hexdigest()[:NAME_DIGITS]


def texts_digest(texts: Iterable[str]) -> str:
    """The SHA-256 of texts in order, each ended by a NUL (no text holds one, so two lists share it only when
    equal), in hex."""
    hashed = hashlib.sha256()
    for text in texts:
        hashed.update(text.encode("utf-8") + b"\0")
    return hashed.hexdigest()


def differences(recorded: Any, wanted: Any, prefix: str = "") -> list[str]:
    """How ``wanted`` differs from ``recorded``, two identities: one "key.path: recorded -> wanted" line per
    differing leaf (JSON objects are walked, anything else is compared whole; a key one side lacks reads as None),
    sorted by key. Empty when they are the same."""
    if not (isinstance(recorded, dict) and isinstance(wanted, dict)):
        return [] if recorded == wanted else [f"{prefix[:-1] or 'value'}: {recorded!r} -> {wanted!r}"]
    return [line for key in sorted(set(recorded) | set(wanted), key=str)
            for line in differences(recorded.get(key), wanted.get(key), f"{prefix}{key}.")]


def _file_hash(path: str | os.PathLike) -> "hashlib._Hash":
    hashed = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(_BLOCK), b""):
            hashed.update(block)
    return hashed
