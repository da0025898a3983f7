"""The index folder: one format for every index HyTE writes, plain and phrase alike.

    DIR/
      index.json        what the folder holds: {"format_version", "kind": "plain" | "phrase", "model",
                        "model_fingerprint", "count", "documents_sha256", "files_sha256": {file: SHA-256}}
      documents.jsonl   the texts, row i = index id i: {"id": the document's own id, "text": ...}
      metadata.json, index.faiss                       kind "plain": a ``LorentzIndex``
      phrase_index.json, global/, phrase/              kind "phrase": a ``PhraseIndex``

The whole folder is written at once (``hyte.io.atomic_directory``): vectors and texts cannot disagree, and a crash
while saving leaves the previous folder intact. ``index.json`` records the SHA-256 of every other file, checked on
open: an ``index.faiss`` copied in from another index, or an edited ``documents.jsonl``, is refused. Everything
writes through ``write_index_folder`` and reads through ``open_index_folder``.

A bare ``LorentzIndex.save`` or ``PhraseIndex.save`` (no ``index.json``, no texts) still opens: its kind is read
from the index's own file. A folder with ``documents.jsonl`` but no ``index.json`` is refused as damaged: without
the manifest nothing can check that row i is still the text of vector i.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..artifacts import DOCUMENTS_FILE, FOLDER_FILE, KINDS, PHRASE_INDEX_FILE, claim_folder, holds
from ..identity import file_digest
from ..io import atomic_directory, id_problem, read_json_file, read_jsonl, saved_directory, write_jsonl
from ..lineage import model_fingerprint
from .index import _REBUILD, LorentzIndex

if TYPE_CHECKING:
    from .phrase import PhraseIndex

__all__ = ["FOLDER_FILE", "INDEX_FOLDER_ENTRIES", "IndexFolder", "build_index_folder", "build_phrase_index_folder",
           "check_index_folder_free", "documents_for", "index_texts", "model_reference", "open_index_folder",
           "read_documents", "resolve_index_model", "write_index_folder"]

FOLDER_FORMAT_VERSION = 1
# Any one of these marks a folder that an index save may replace (see hyte.io.atomic_directory).
_MARKERS = KINDS["index"].markers
# Everything an index folder (plain or phrase) may hold; anything else in it is the user's and stops a replacement.
INDEX_FOLDER_ENTRIES = KINDS["index"].entries


def check_index_folder_free(directory: str | os.PathLike, overwrite: bool) -> None:
    """Refuse (FileExistsError) to write an index folder over an existing one unless ``overwrite``, or inside a
    model, run or index folder (through a symbolic link too, ``claim_folder``), as the command line does."""
    # hyte push would upload an index in a model folder, documents and all, with the model.
    claim_folder(directory, option="the index folder", replaces="index", remedy="a folder of its own, e.g. beside "
                 "the model")
    if holds(directory, "index") and not overwrite:
        raise FileExistsError(f"{directory} already holds an index: pass overwrite=True to replace it (atomically, "
                              "once the new one is written), or choose another folder")


@dataclass
class IndexFolder:
    """An opened index folder: ``index`` (a ``LorentzIndex`` or ``PhraseIndex``), ``documents`` (None for a folder
    saved without texts), ``kind`` ("plain" or "phrase") and where it was read from."""

    path: Path
    kind: str
    index: LorentzIndex | PhraseIndex
    documents: list[dict] | None

    @property
    def model_name(self) -> str | None:
        return self.index.model_name

    @property
    def vector_index(self) -> LorentzIndex:
        """The index of the documents' single vectors (a phrase index's global index)."""
        return self.index if self.kind == "plain" else self.index.global_index


def model_reference(model: str | os.PathLike) -> str:
    """How an index names the model that built it: a local folder by its absolute path (so the folder can be
    searched from any directory), a bundled alias or Hub id as given."""
    return str(Path(model).absolute()) if Path(model).is_dir() else str(model)


def resolve_index_model(folder: IndexFolder) -> str:
    """The model an index folder names, as a path or id that loads from here: as stored, or (a relative path stored
    by an older hyte) relative to the index folder's parent; FileNotFoundError naming --model otherwise."""
    name = folder.model_name
    if name is None:
        raise ValueError(f"{folder.path} does not name its model: pass the model that built it (--model)")
    if Path(name).exists():
        return name
    beside = folder.path.parent / name
    if not Path(name).is_absolute() and beside.is_dir():
        return str(beside)
    # Model and index copied or moved together (hyte demo / quickstart layouts): the model folder of the same name
    # beside the index. Loading it checks its weights against the fingerprint the index records.
    moved = folder.path.parent / Path(name).name
    if Path(name).is_absolute() and holds(moved, "model") and folder.index.model_fingerprint:
        return str(moved)
    if Path(name).is_absolute() or name.startswith((".", "~")) or name.count("/") > 1:  # a folder, not a Hub id
        raise FileNotFoundError(f"{folder.path} was built by the model folder {name!r}, which is not found from "
                                "here: pass the model with --model (or model=...)")
    return name  # a bundled alias or a Hub id


def documents_for(texts: Sequence[str], ids: Sequence[str | int] | None = None, *,
                  allow_no_texts: bool = False) -> list[dict]:
    """``documents.jsonl`` rows for ``texts``: row i has index id i; ``ids`` are the documents' own ids. Refuses a
    bare string (it would index each character), empty texts and, unless ``allow_no_texts``, an empty list, as ``hyte
    index build`` does."""
    if isinstance(texts, str):
        raise TypeError("texts must be a list of documents, not one string (each character would be a document): "
                        "wrap it in a list")
    if not texts and not allow_no_texts:
        raise ValueError("no texts to index")
    if ids is not None and len(ids) != len(texts):
        raise ValueError(f"{len(ids)} ids for {len(texts)} texts")
    for position, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"text {position} is a {type(text).__name__}, not a string")
        if not text.strip():
            named = "" if ids is None else f" (id {ids[position]!r})"
            raise ValueError(f"text {position}{named} is empty: every document needs a text (remove it or fill it)")
    first: dict[str, object] = {}
    for position, identifier in enumerate(() if ids is None else ids):
        problem = id_problem(identifier)  # hyte index build's check of .jsonl ids: a float 1.0 would be kept as '1.0'
        if problem:
            raise ValueError(f"ids[{position}]: {problem}")
        if str(identifier) in first:  # ids are shown and stored as text: 1 and '1' are one id
            raise ValueError(f"id {identifier!r} is given twice (as {first[str(identifier)]!r} before; both are "
                             f"{str(identifier)!r} as text): ids must be unique")
        first[str(identifier)] = identifier
    return [{"id": i if ids is None else ids[i], "text": text} for i, text in enumerate(texts)]


def write_index_folder(directory: str | os.PathLike, index: LorentzIndex | PhraseIndex,
                       documents: Sequence[dict], *, overwrite: bool = False) -> Path:
    """Write ``index`` and its ``documents`` (row i = index id i) as one index folder, atomically; returns it. An
    existing index folder is replaced only with ``overwrite`` (and never when it also holds other files)."""
    from .phrase import PhraseIndex

    check_index_folder_free(directory, overwrite)
    if len(documents) != len(index):
        raise ValueError(f"{len(documents)} documents for an index of {len(index)}: row i of documents.jsonl "
                         "must be index id i")
    # N unique ids >= 0 are 0..N-1 unless one is N or more (after remove + add the count matches, the rows do not).
    phrase = isinstance(index, PhraseIndex)
    ids = index.store.ids if phrase else index.ids
    stray = ids[ids >= len(index)]
    if len(stray):
        raise ValueError(f"the index's ids are not 0..{len(index) - 1} (it holds id {int(stray[0])}): row i of "
                         "documents.jsonl must be index id i, so a search would show other documents' texts. Build "
                         "the folder again from the texts you keep (hyte index build, or HyteSearcher.from_texts)")
    manifest = {"format_version": FOLDER_FORMAT_VERSION, "kind": "phrase" if phrase else "plain",
                "model": index.model_name, "model_fingerprint": index.model_fingerprint, "count": len(index)}

    def write(staging: Path) -> None:
        index.write_files(staging)
        write_jsonl(staging / DOCUMENTS_FILE, documents)
        # Texts are matched to vectors by position: an edited documents.jsonl, or an index file copied in from another
        # index of the same size (which passes the count and dimension checks), must not go unnoticed.
        manifest["documents_sha256"] = file_digest(staging / DOCUMENTS_FILE)
        manifest["files_sha256"] = {path.relative_to(staging).as_posix(): file_digest(path)  # the index's own files
                                    for path in sorted(staging.rglob("*"))
                                    if path.is_file() and path.name not in (FOLDER_FILE, DOCUMENTS_FILE)}
        (staging / FOLDER_FILE).write_text(json.dumps(manifest, indent=2) + "\n")

    atomic_directory(directory, write, _MARKERS, "index folder", owned=INDEX_FOLDER_ENTRIES)
    return Path(directory)


def _not_an_index(directory: Path) -> str:
    """Why ``directory`` is no index, and how to build one. Another of hyte's folders (a run, a model, vector shards,
    a BEIR set) gets a command that writes the index into a NEW folder: --output there would be refused (or, with
    --overwrite, replace the folder's own files)."""
    final, corpus = directory / "final", directory / "corpus.jsonl"
    kinds = ((holds(final, "model"), f"a training run folder, not an index: its model is {final}; build an index "
              "with it", f"--model {final} --input F"),
             (holds(directory, "model"), "a model folder, not an index: give the index folder, or build one with it",
              f"--model {directory} --input F"),
             (holds(directory, "vectors"), "a folder of encoded vector shards (hyte encode --corpus), not an index: "
              "build one from them, without encoding again", f"--from-vectors {directory}"),
             (corpus.is_file(), "a BEIR folder, not an index: build one from its documents",
              f"--model M --input {corpus}"))
    for found, what, source in kinds:
        if found:
            return f"{directory} is {what}: `hyte index build {source} --output NEW_FOLDER`"
    output = "NEW_FOLDER" if directory.is_dir() and any(directory.iterdir()) else directory  # no user's files replaced
    return f"no index at {directory}: build one with `hyte index build --model M --input F --output {output}`"


def read_documents(directory: str | os.PathLike) -> list[dict]:
    """The ``documents.jsonl`` that ``hyte index build`` stores beside the index: row i holds index id i."""
    path = Path(directory) / DOCUMENTS_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: build the index with `hyte index build` (it stores the texts) "
                                "or use HyteSearcher.from_texts")
    return read_jsonl(path, "documents file")


def open_index_folder(directory: str | os.PathLike) -> IndexFolder:
    """Open an index folder (module docstring); FileNotFoundError naming how to build one when there is none."""
    if not str(directory).strip():  # Path("") is the current folder: "no index at ." hid the empty argument
        raise ValueError("the index folder is an empty path (''): give the folder hyte index build --output wrote")
    if Path(directory).is_file():
        parent = Path(os.path.abspath(directory)).parent
        if holds(parent, "index"):
            raise NotADirectoryError(f"{directory} is a file: give the index folder that holds it ({parent})")
        # The folder above a documents file is no index either; say how to make one from the file instead
        raise NotADirectoryError(f"{directory} is a file, not an index folder: build an index from it with "
                                 f"`hyte index build --model M --input {directory} --output NEW_FOLDER`, then give "
                                 "that folder")
    try:
        target = saved_directory(directory, _MARKERS, "index folder")
    except FileNotFoundError:
        raise FileNotFoundError(_not_an_index(Path(directory))) from None
    manifest_file = target / FOLDER_FILE
    manifest = {}
    if manifest_file.is_file():
        manifest = read_json_file(manifest_file, _REBUILD)
        if manifest.get("format_version") != FOLDER_FORMAT_VERSION:
            raise ValueError(f"{target}: index folder format {manifest.get('format_version')!r} is not supported "
                             f"(this hyte reads {FOLDER_FORMAT_VERSION}); rebuild it with `hyte index build`")
        kind = manifest["kind"]
        # Folders written before the index files were hashed record no files_sha256 (same format otherwise); a
        # missing file is left to the loader, which names it.
        for name, digest in manifest.get("files_sha256", {}).items():
            if (target / name).is_file() and file_digest(target / name) != digest:
                raise ValueError(f"{target / name} is damaged or not the file the index was built with (its SHA-256 "
                                 f"is not the one {FOLDER_FILE} records; an index file copied from another index would "
                                 f"match the vectors to the wrong texts in {DOCUMENTS_FILE}): {_REBUILD}")
    elif (target / DOCUMENTS_FILE).is_file():  # texts are written only with index.json: it was deleted
        raise FileNotFoundError(f"{manifest_file} is missing, though {DOCUMENTS_FILE} is there: nothing can check "
                                f"that row i of {DOCUMENTS_FILE} is still the text of vector i (a sorted or edited "
                                f"file would give hits the wrong texts): {_REBUILD}")
    else:  # a bare LorentzIndex.save / PhraseIndex.save: vectors without texts
        kind = "phrase" if (target / PHRASE_INDEX_FILE).is_file() else "plain"
    if kind == "phrase":
        from .phrase import PhraseIndex

        index = PhraseIndex.load(target)
    else:
        index = LorentzIndex.load(target)
    recorded = manifest.get("documents_sha256")
    if recorded is not None and not (target / DOCUMENTS_FILE).is_file():
        # Without it, hits would show row numbers for the user's ids and no texts.
        raise FileNotFoundError(f"{target / DOCUMENTS_FILE} is missing: {FOLDER_FILE} records the index's texts "
                                f"there (row i is the text of vector i). Put it back, or {_REBUILD}")
    documents = read_documents(target) if (target / DOCUMENTS_FILE).is_file() else None
    if documents is not None and recorded is not None and file_digest(target / DOCUMENTS_FILE) != recorded:
        raise ValueError(f"{target / DOCUMENTS_FILE} was changed after the index was built (its SHA-256 is not the one "
                         f"{FOLDER_FILE} records): row i is the text of vector i, so a sorted or edited file would "
                         f"give hits the wrong texts: {_REBUILD}")
    if documents is not None and len(documents) != len(index):
        raise ValueError(f"{target}: {DOCUMENTS_FILE} holds {len(documents)} documents, the index {len(index)}; "
                         "rebuild the folder with `hyte index build`")
    return IndexFolder(target, kind, index, documents)


def index_texts(encoder, texts: Sequence[str], *, kind: str = "flat", model_name: str | None = None,
                batch_size: int = 32, show_progress_bar: bool | None = None) -> LorentzIndex:
    """Encode ``texts`` as documents with ``encoder`` (``hyte.encoders``) into a new ``LorentzIndex`` of ``kind``
    (index id i = text i) that records the model (``model_name``, default ``encoder.name``, as ``model_reference``
    gives it: where ``hyte rag`` and ``HyteSearcher.from_folder`` load it from) and its fingerprint."""
    if not texts:
        raise ValueError("no texts to index")
    index = LorentzIndex(encoder.dim, encoder.curvature, kind=kind,
                         model_name=model_reference(model_name or encoder.name),
                         model_fingerprint=model_fingerprint(encoder.model))
    index.add(encoder.encode(list(texts), role="document", batch_size=batch_size,
                             show_progress_bar=show_progress_bar))
    return index


def build_index_folder(encoder, texts: Sequence[str], directory: str | os.PathLike, *,
                       ids: Sequence[str | int] | None = None, kind: str = "flat", batch_size: int = 32,
                       model_name: str | None = None, show_progress_bar: bool | None = None,
                       overwrite: bool = False) -> IndexFolder:
    """``index_texts`` and the texts (``ids``: the documents' own ids) written as one index folder (an existing one
    is replaced only with ``overwrite``; checked before anything is encoded)."""
    documents = documents_for(texts, ids)
    check_index_folder_free(directory, overwrite)  # before anything is encoded
    index = index_texts(encoder, texts, kind=kind, model_name=model_name, batch_size=batch_size,
                        show_progress_bar=show_progress_bar)
    write_index_folder(directory, index, documents, overwrite=overwrite)
    return IndexFolder(Path(directory).absolute(), "plain", index, documents)


def build_phrase_index_folder(model, tokenizer, texts: Sequence[str], directory: str | os.PathLike, *,
                              ids: Sequence[str | int] | None = None, kind: str = "flat", dtype: str = "float32",
                              model_name: str | None = None, batch_size: int = 32, max_length: int | None = None,
                              overwrite: bool = False, **encode_options) -> IndexFolder:
    """Encode ``texts`` with a phrase model (``HyTEPhraseModel``) into a ``PhraseIndex`` (global index of ``kind``
    + phrase store in ``dtype``) and write the folder. ``encode_options`` go to ``encode_phrases`` (e.g. the
    terminology trie's ``override``)."""
    from .phrase import PhraseIndex

    documents = documents_for(texts, ids)
    check_index_folder_free(directory, overwrite)  # before anything is encoded
    index = PhraseIndex.create(model, kind=kind, dtype=dtype,
                               model_name=model_reference(model_name) if model_name is not None else None)
    index.add_texts(model, tokenizer, list(texts), ids=list(range(len(texts))), batch_size=batch_size,
                    max_length=max_length, **encode_options)
    write_index_folder(directory, index, documents, overwrite=overwrite)
    return IndexFolder(Path(directory).absolute(), "phrase", index, documents)
