"""The kinds of folder hyte writes, each known by its marker files: the one list every writer and loader asks.

A folder is one of hyte's artifacts when it holds a marker of its kind (written last, or atomically with the rest,
so a folder holding it is complete):

==========  =========================================  ===========================================================
kind        markers                                    written by
==========  =========================================  ===========================================================
model       config.json                                ``save_pretrained``, ``hyte train`` (``final/``), the demos
adapter     adapter_config.json                        a LoRA run (``adapter/``), peft
checkpoint  trainer_state.json                         the Trainer (``checkpoint-N/`` of a run, after its weights)
run         run.json                                   ``hyte train`` (the run's identity, ``hyte.training``)
index       index.json, metadata.json,                 ``hyte index build``: a folder index, a bare
            phrase_index.json                          ``LorentzIndex``, a phrase index (``hyte.retrieval``)
vectors     manifest.json                              ``hyte encode --corpus`` (vector shards, ``hyte.corpus``)
postgres    hyte_postgres.json                         ``hyte postgres start`` (a local server's folder)
==========  =========================================  ===========================================================

Why one list: an output written inside an artifact sits among the files that make it work (an index inside a model
folder is uploaded with it by ``hyte push``; a run inside an index folder blocks its rebuild), so every writer claims
its place before any slow work: ``claim_file`` for a file (a result, vectors, an ONNX graph), ``claim_folder`` for
a command's own output folder; each refuses with ``OutputRefused``, which says why and where to write instead.

The remote-code file ``sentence_transformers_hyte.py`` travels without hyte, so it keeps a copy of the non-model
markers; a test holds the copy equal to ``markers(*NOT_MODELS)``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .errors import HyteError
from .io import refuse_file_above

__all__ = ["ALL_KINDS", "CARD_FILE", "CHECKPOINT_STATE_FILE", "DOCUMENTS_FILE", "EVAL_RESULTS_FILE", "FOLDER_FILE",
           "INDEX_FILE", "KINDS", "MANIFEST", "METADATA_FILE", "NOT_MODELS", "PHRASE_INDEX_FILE", "POSTGRES_FILE",
           "RUN_FILE", "ArtifactKind", "OutputNotAFolder", "OutputRefused", "artifact_marker", "claim_file",
           "claim_folder", "enclosing_artifact", "given_and_real", "holds", "kind_of", "markers"]

# The files hyte itself names or marks kinds by (config.json, adapter_config.json and trainer_state.json are
# transformers' and peft's). Their writers and readers import these names; tests/test_io.py fails on the names
# written out anywhere else in the package.
RUN_FILE = "run.json"  # a training run's identity (hyte.training.run_folder)
FOLDER_FILE = "index.json"  # an index folder's manifest (hyte.retrieval.folder)
METADATA_FILE = "metadata.json"  # a LorentzIndex's settings, beside its FAISS file (hyte.retrieval.index)
INDEX_FILE = "index.faiss"  # a LorentzIndex's vectors
DOCUMENTS_FILE = "documents.jsonl"  # an index folder's texts, row i the text of vector i
PHRASE_INDEX_FILE = "phrase_index.json"  # a PhraseIndex's settings (hyte.retrieval.phrase)
MANIFEST = "manifest.json"  # vector shards' manifest, written last (hyte.corpus)
CHECKPOINT_STATE_FILE = "trainer_state.json"  # saved by the Trainer after a checkpoint's weights (hyte.training)
POSTGRES_FILE = "hyte_postgres.json"  # a local server's port and user (hyte.retrieval.postgres_server)
CARD_FILE = "hyte_card.json"  # what a model was trained from and on (hyte.training), read into its card (hyte.hub)
EVAL_RESULTS_FILE = "eval_results.json"  # a model's held-out scores, read into its card's model-index


@dataclass(frozen=True)
class ArtifactKind:
    """A kind of folder: its ``markers`` (any one marks it), ``what`` it is called in messages ("a model folder"),
    and ``entries``: every name a save of it writes at its top level (None where a library writes it, adding any)."""

    markers: tuple[str, ...]
    what: str
    entries: tuple[str, ...] | None = None


KINDS: dict[str, ArtifactKind] = {
    "model": ArtifactKind(("config.json",), "a model folder"),
    "adapter": ArtifactKind(("adapter_config.json",), "a LoRA adapter folder"),
    # Also a model or an adapter folder (those markers come first); the run resumes from it.
    "checkpoint": ArtifactKind((CHECKPOINT_STATE_FILE,), "a training checkpoint"),
    "run": ArtifactKind((RUN_FILE,), "a training run folder"),
    # A folder index, a bare LorentzIndex, a PhraseIndex (its global/ and phrase/ stores inside).
    "index": ArtifactKind((FOLDER_FILE, METADATA_FILE, PHRASE_INDEX_FILE), "an index folder",
                          entries=(FOLDER_FILE, METADATA_FILE, PHRASE_INDEX_FILE, DOCUMENTS_FILE, INDEX_FILE,
                                   "global", "phrase")),
    "vectors": ArtifactKind((MANIFEST,), "a vector shard folder"),
    "postgres": ArtifactKind((POSTGRES_FILE,), "a local PostgreSQL server folder"),
}
ALL_KINDS = tuple(KINDS)
# Folders that hold no model: a model saved into one would mix with its files and ship them on a push.
NOT_MODELS = ("run", "index", "vectors", "postgres")


def markers(*kinds: str) -> tuple[str, ...]:
    """The marker files of ``kinds`` (all kinds when none is given), in the table's order."""
    return tuple(marker for kind in (kinds or ALL_KINDS) for marker in KINDS[kind].markers)


def artifact_marker(folder: str | os.PathLike, kinds: tuple[str, ...] = ALL_KINDS) -> str | None:
    """The first marker of ``kinds`` that ``folder`` holds (it is then such an artifact), or None."""
    return next((marker for marker in markers(*kinds) if (Path(folder) / marker).is_file()), None)


def kind_of(name: str, kinds: Sequence[str] = ALL_KINDS) -> str | None:
    """The first of ``kinds`` whose markers or top-level entries include the file name ``name``, or None."""
    return next((kind for kind in kinds if name in (*KINDS[kind].markers, *(KINDS[kind].entries or ()))), None)


def holds(folder: str | os.PathLike, kind: str) -> bool:
    """Whether ``folder`` is an artifact of ``kind``."""
    return artifact_marker(folder, (kind,)) is not None


def given_and_real(path: str | os.PathLike) -> list[Path]:
    """``path`` made absolute as given and, when a symbolic link lies on the way, its real path: output checks judge
    both (a link into a model folder let an index, a run or a demo be written inside it)."""
    return list(dict.fromkeys((Path(path).absolute(), Path(path).resolve())))


def enclosing_artifact(path: str | os.PathLike, kinds: Sequence[str] = ALL_KINDS, *,
                       itself: Sequence[str] = ()) -> tuple[Path, str] | None:
    """``(folder, marker)`` when ``path`` is an artifact of ``itself`` or lies directly inside one of ``kinds``
    (``folder`` holds ``marker``; ``path`` itself first), judged as given and then through any symbolic link; else
    None."""
    for base in given_and_real(path):
        for folder, wanted in ((base, itself), (base.parent, kinds)):
            marker = artifact_marker(folder, tuple(wanted)) if wanted else None
            if marker:
                return folder, marker
    return None


class OutputRefused(HyteError, FileExistsError, ValueError):
    """A place hyte will not write an output to (inside another artifact, a file where a folder is needed, the wrong
    suffix, an existing file without ``overwrite``); the message says why and where to write instead. Also a
    ``FileExistsError`` and a ``ValueError``, the classes these checks raised before they were one."""


class OutputNotAFolder(OutputRefused, NotADirectoryError):
    """An output folder given as the path of an existing file."""


def _inside(path: Path, kinds: Sequence[str], itself: Sequence[str] = ()) -> str | None:
    """Why ``path`` may not be written, or None: it lies inside an artifact of ``kinds``, or is itself one of
    ``itself``."""
    found = enclosing_artifact(path, kinds, itself=itself)
    if found is None:
        return None
    folder, marker = found
    return f"{'is or ' if itself else ''}lies inside {KINDS[kind_of(marker)].what} ({folder} holds {marker})"


def claim_file(path: str | os.PathLike, suffixes: Sequence[str], *, what: str, example: str,
               overwrite: bool = True, refuse_inside: Sequence[str] = ALL_KINDS, option: str = "") -> Path:
    """``path`` as the place of an output file (``what``: "a result", "the vectors"), checked before any work: not
    under a file, not a folder, one of ``suffixes`` (as given and through a symbolic link: a link named
    x.safetensors pointing at a model's weights had them overwritten), not inside an artifact of ``refuse_inside``
    (its files would be replaced, or shipped with a model by ``hyte push``), and no existing file unless
    ``overwrite``. ``option``: how the user gave it, for messages ("--output"); ``example``: a place that would do.
    Returns it as a Path; OutputRefused otherwise."""
    path = Path(path)
    shown = f"{option} {path}".strip()
    refuse_file_above(path, option, OutputNotAFolder)
    if path.is_dir():
        raise OutputRefused(f"{shown} is a folder: give the path of {what}'s file, e.g. {path / Path(example).name}")
    if path.name in suffixes:  # ".npy" is a hidden file without a suffix, so the check below misread it
        raise OutputRefused(f"{shown} has no name before its suffix: give e.g. {Path(example).stem}{path.name}")
    for place in given_and_real(path):
        if place.suffix.lower() not in suffixes:
            linked = shown if place == path.absolute() else f"{shown} (a link to {place})"
            raise OutputRefused(f"{linked}: {what} is written as a {' or '.join(suffixes)} file; give a "
                                f"{' or '.join(suffixes)} file, e.g. {example}")
    why = _inside(path, refuse_inside)
    if why:
        linked = shown if path.absolute() == path.resolve() else f"{shown} (a link to {path.resolve()})"
        raise OutputRefused(f"{linked} {why}: write {what} somewhere else, e.g. {example}")
    if path.exists() and not overwrite:
        raise OutputRefused(f"{shown} exists: pass --overwrite (overwrite=True) to replace it, or give another file")
    return path


def claim_folder(folder: str | os.PathLike, *, option: str, remedy: str, refuse_inside: Sequence[str] = ALL_KINDS,
                 replaces: str | None = None) -> Path:
    """``folder`` as the place of a command's own output folder (a demo, a quickstart, a report, a server's data),
    checked before any work: not empty (Path("") is the current folder), not a file (OutputNotAFolder), and not
    itself an artifact of ``refuse_inside`` nor inside one; it may itself be an artifact of kind ``replaces`` (the
    writer's own earlier output: whether it may be replaced is the writer's rule). ``option``: how the user gave it
    ("--output-dir"); ``remedy``: the folders it may be."""
    if not str(folder).strip():
        raise OutputRefused(f"{option} is empty: give the folder to write to ({remedy})")
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise OutputNotAFolder(f"{option} {folder} is a file: give a folder ({remedy})")
    refuse_file_above(folder, option, OutputNotAFolder)
    why = _inside(folder, refuse_inside, itself=[kind for kind in refuse_inside if kind != replaces])
    if why:
        raise OutputRefused(f"{option} {folder} {why}: give a folder outside it ({remedy})")
    return folder
