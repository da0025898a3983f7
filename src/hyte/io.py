"""Files, one way each: atomic writes (a file, a folder), JSONL with errors that name the file and line, the texts
a user hands to ``hyte encode`` / ``hyte index build``, and vector files.

Atomic means: written beside the target, flushed, then renamed over it, so a reader never sees half a file and a
crash while saving leaves the previous version intact.

A folder (``LorentzIndex.save``, an index folder, a model's ``final/``) is replaced by ``atomic_directory``: it
writes and fsyncs a sibling staging folder; renames the previous folder to the backup sibling ``.<name>.previous``;
renames the staging folder into place; deletes the backup. A failure at any step leaves the previous folder in
place; a crash between the two renames leaves it as the backup, which ``saved_directory`` finds (with a warning).
Staging folders left by a killed save are deleted by the next save, so two processes must not save to the same
target at once.

Nothing here imports torch or numpy at module level: ``hyte --help`` reads this module.
"""

from __future__ import annotations

import contextlib
import json
import numbers
import os
import re
import shutil
import uuid
import warnings
from collections.abc import Callable, Collection, Iterable, Iterator
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import HyteError

if TYPE_CHECKING:
    import numpy as np

__all__ = ["DataFormatError", "atomic_directory", "atomic_file", "check_path_kind", "fsync", "id_problem", "iter_jsonl",
           "read_jsonl", "read_texts", "saved_directory", "string_field", "write_jsonl", "write_lines_atomically",
           "write_text_atomically", "write_vectors"]


# ----------------------------------------------------------------------------------------------------------------
# Atomic writes
# ----------------------------------------------------------------------------------------------------------------


def fsync(path: Path) -> None:
    """Flush a file, or a directory's entries (so renames inside it are durable; opening a directory is POSIX-only)."""
    if path.is_dir() and os.name != "posix":
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def refuse_file_above(path: str | os.PathLike, option: str = "",
                      error: type[NotADirectoryError] = NotADirectoryError) -> None:
    """NotADirectoryError (or its subclass ``error``; the message starts with ``option``, how the user gave
    ``path``) when a folder ``path`` would be written in is an existing file (``notes.txt/out.npy``): said plainly,
    before any work, instead of the OS's "[Errno 17] File exists" from creating the folder."""
    for folder in Path(path).absolute().parents:
        if folder.exists():
            if not folder.is_dir():
                raise error(f"{option} {folder} is a file, not a folder: {path} cannot be written under it; give "
                            "a path in a folder".lstrip())
            return


def _followed(path: str | os.PathLike) -> Path:
    """``path`` made absolute, or, when it is a symbolic link, where the link points: a save through a link must
    replace what the user sees through it, not swap the link for a copy that leaves the linked data stale."""
    path = Path(path).absolute()
    return path.resolve() if path.is_symlink() else path


@contextlib.contextmanager
def _naming_the_target(target: Path):
    """A PermissionError while writing ``target`` through a temporary name, re-raised naming ``target`` and its
    folder: the temporary file or staging folder the OS names is this module's, not anything the user gave."""
    try:
        yield
    except PermissionError as error:
        raise PermissionError(error.errno, f"cannot write {target}: its folder {target.parent} is not writable "
                                           f"({error.strerror}); give a place you can write to") from None


def atomic_file(path: str | os.PathLike, write: Callable[[Path], None]) -> Path:
    """Replace file ``path`` by what ``write(temporary)`` writes to a temporary file beside it; returns ``path``.

    A failing ``write`` leaves no temporary file and the previous ``path`` untouched. A symbolic link is followed:
    the file it points to is replaced, the link kept."""
    path = _followed(path)
    refuse_file_above(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp-{uuid.uuid4().hex[:8]}")
    try:
        with _naming_the_target(path):
            write(temporary)
            os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    return path


def write_text_atomically(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    return atomic_file(path, lambda temporary: temporary.write_text(text, encoding="utf-8"))


def write_lines_atomically(path: str | os.PathLike, lines: Iterable[str]) -> Path:
    """Write ``lines`` (each newline-terminated) to ``path`` atomically."""

    def write(temporary: Path) -> None:
        with temporary.open("w", encoding="utf-8", newline="\n") as handle:
            for line in lines:
                handle.write(line + "\n")

    return atomic_file(path, write)


def write_jsonl(path: str | os.PathLike, records: Iterable) -> Path:
    """One JSON value per line, atomically."""
    return write_lines_atomically(path, (json.dumps(record, ensure_ascii=False) for record in records))


def check_only_owned(folder: str | os.PathLike, owned: Collection[str], what: str) -> None:
    """Refuse (FileExistsError) a ``folder`` about to be replaced that holds entries a save of ``what`` never
    writes: they would be deleted with it."""
    folder = Path(folder)
    foreign = sorted(entry.name for entry in folder.iterdir() if entry.name not in owned) if folder.is_dir() else []
    if foreign:
        raise FileExistsError(f"{folder} holds {', '.join(foreign[:5])}{' ...' if len(foreign) > 5 else ''}, which a "
                              f"saved {what} does not hold: replacing the folder would delete "
                              f"{'it' if len(foreign) == 1 else 'them'}. Move {'it' if len(foreign) == 1 else 'them'} "
                              "out, or choose another folder")


def _holds(folder: Path, marker: str | tuple[str, ...]) -> bool:
    return any((folder / name).is_file() for name in ((marker,) if isinstance(marker, str) else marker))


def atomic_directory(target: str | os.PathLike, write: Callable[[Path], None], marker: str | tuple[str, ...],
                     what: str, owned: Collection[str] | None = None, overwrite: bool = True) -> None:
    """Replace folder ``target`` by what ``write(staging)`` puts into a fresh staging folder (module docstring).

    ``marker`` is a file (or files, any one will do) every saved folder of this kind (``what``, for messages)
    holds: an existing, non-empty ``target`` without it is refused, so a typo cannot replace an unrelated folder.
    ``owned``: every name a save of this kind may write; a ``target`` holding anything else (a user's notes) is
    refused too (``check_only_owned``), since replacing the folder would delete it. A symbolic link is followed
    (``_followed``): the folder it points to is replaced, the link kept. Without ``overwrite``, an earlier save
    there is refused too (the library's ``save`` methods: a second save replaced the first without a word).
    """
    target = _followed(target)
    refuse_file_above(target)
    if not overwrite and _holds(target, marker):
        raise FileExistsError(f"{target} already holds a saved {what}: pass overwrite=True to replace it, or save "
                              "to another folder")
    if target.exists() and not _holds(target, marker) and (not target.is_dir() or any(target.iterdir())):
        raise FileExistsError(f"refusing to replace {target}: it exists and is not a saved {what}")
    if owned is not None:
        check_only_owned(target, owned, what)
    parent = target.parent
    parent.mkdir(parents=True, exist_ok=True)
    for stale in parent.glob(f".{target.name}.tmp-*"):
        shutil.rmtree(stale, ignore_errors=True)
    backup = parent / f".{target.name}.previous"
    staging = parent / f".{target.name}.tmp-{uuid.uuid4().hex}"
    try:
        with _naming_the_target(target):
            staging.mkdir()  # not tempfile.mkdtemp: its mode 0700 would become the saved folder's
            write(staging)
        for path in sorted(staging.rglob("*"), reverse=True) + [staging]:  # files before their folders
            fsync(path)
        if target.exists():
            if backup.exists():  # left by an earlier save that was stopped before its cleanup; target is newer
                shutil.rmtree(backup)
            os.replace(target, backup)
        try:
            os.replace(staging, target)
        except BaseException:
            if backup.exists() and not target.exists():
                os.replace(backup, target)
            raise
        fsync(parent)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    shutil.rmtree(backup, ignore_errors=True)


def saved_directory(directory: str | os.PathLike, marker: str | tuple[str, ...], what: str,
                    remedy: str = "give the folder it was saved to") -> Path:
    """The folder to load: ``directory``, or its backup (with a warning) when a save was interrupted mid-swap.

    Raises FileNotFoundError when neither holds ``marker``, ending with ``remedy`` (what to do about it).
    """
    target = Path(directory).absolute()
    backup = target.parent / f".{target.name}.previous"
    if not target.exists() and backup.is_dir():
        warnings.warn(f"{target} is missing: a save was interrupted; loading the previous {what} from {backup}",
                      stacklevel=3)
        target = backup
    if not _holds(target, marker):
        missing = marker if isinstance(marker, str) else " / ".join(marker)
        if target.is_dir() and any(target.iterdir()):  # a file of it deleted, or another folder
            raise FileNotFoundError(f"{target} has no {missing}, so it holds no complete saved {what} (a file was "
                                    f"deleted, or it is another folder): {remedy}")
        raise FileNotFoundError(f"no saved {what} at {target} ({missing} missing): {remedy}")
    return target


# ----------------------------------------------------------------------------------------------------------------
# JSONL
# ----------------------------------------------------------------------------------------------------------------


class DataFormatError(HyteError, ValueError):
    """A malformed data file; the message starts with "<file>, line <n>:" (or "<file>:" when no line applies).

    The one error of every reader of HyTE's input formats (JSONL texts, BEIR folders, hierarchy benchmarks)."""

    def __init__(self, path: str | os.PathLike, line: int | None, problem: str):
        where = f"{path}, line {line}" if line is not None else str(path)
        super().__init__(f"{where}: {problem}")
        self.path, self.line, self.problem = Path(path), line, problem


def iter_jsonl(path: str | os.PathLike, what: str = "data file", objects: bool = True) -> Iterator[tuple[int, dict]]:
    """(line number, value) for every non-blank line; FileNotFoundError (naming ``what``) or DataFormatError.
    ``objects``: every value must be a JSON object (HyTE's input formats); False takes any JSON value (caches)."""
    path = check_path_kind(path, "file", what)
    for number, line in _text_lines(path):
        if not line.strip():
            continue
        try:
            record = json.loads(line, object_pairs_hook=partial(_unique_keys, path, number))
        except json.JSONDecodeError as error:
            raise DataFormatError(path, number, f"not valid JSON ({error.msg})") from None
        if objects and not isinstance(record, dict):
            raise DataFormatError(path, number, f"expected a JSON object, got {type(record).__name__}")
        yield number, record


def _unique_keys(path: Path, line: int, pairs: list[tuple[str, object]]) -> dict:
    """json's object hook that refuses a repeated key on ``line`` of ``path`` (json.loads would keep the last value
    without a word)."""
    record = {}
    for key, value in pairs:
        if key in record:
            raise DataFormatError(path, line, f'the key "{key}" is given twice in one record (JSON keeps only the '
                                              "last): give each key once")
        record[key] = value
    return record


def check_path_kind(path: str | os.PathLike, kind: str, what: str, remedy: str | None = None) -> Path:
    """``path`` when it is a ``kind`` ("file": a regular file, or "folder"); FileNotFoundError naming ``what`` when
    nothing is there (or only a symbolic link to nothing, a loop or a missing target: named as such). A path that
    exists but is of the wrong kind is not "not found": the error says what is there instead (a folder, a file, a
    device or other special file such as /dev/null or a pipe) and ``remedy`` (what to give; by default the file or
    folder ``what`` names)."""
    path = Path(path)
    if path.is_file() if kind == "file" else path.is_dir():
        return path
    if path.is_symlink() and not path.exists():  # `ls` lists it, so "not found" would contradict what users see
        raise FileNotFoundError(f"{what} {path} is a symbolic link that leads nowhere (a loop or a missing target; it "
                                f"points to {os.readlink(path)}): give the {kind} itself, or repair the link")
    if not path.exists():
        raise FileNotFoundError(f"{what} not found: {path}")
    remedy = remedy or f"give the {kind}"
    if path.is_dir():
        raise IsADirectoryError(f"{what} {path} is a folder, not a file: {remedy}")
    if path.is_file():
        raise NotADirectoryError(f"{what} {path} is a file where a folder is needed: {remedy}")
    raise ValueError(f"{what} {path} is a device or other special file (a pipe, a socket), not a {kind} with data: "
                     f"{remedy}")


def _text_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, line) of a UTF-8 text file; a byte-order mark is dropped (editors on Windows write one), and
    other encodings are refused naming the file."""
    try:
        with path.open(encoding="utf-8-sig") as handle:
            yield from enumerate(handle, start=1)
    except UnicodeDecodeError as error:
        raise DataFormatError(path, None, f"is not UTF-8 text ({error.reason} at byte {error.start}): save it as "
                                          "UTF-8") from None


def read_json_file(path: str | os.PathLike, remedy: str) -> dict:
    """A JSON object from ``path``; a damaged file is a one-line ValueError naming it, its position and ``remedy``."""
    path = Path(path)
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not valid JSON (line {error.lineno}, column {error.colno}: {error.msg}): the "
                         f"file is damaged; {remedy}") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not UTF-8 text: the file is damaged; {remedy}") from None
    if not isinstance(value, dict):
        raise ValueError(f"{path} holds a JSON {type(value).__name__}, not an object: the file is damaged; {remedy}")
    return value


def json_or_empty(path: str | os.PathLike) -> dict:
    """The JSON in ``path``, or {} where there is no such file (an optional settings file)."""
    path = Path(path)
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def read_jsonl(path: str | os.PathLike, what: str = "data file", objects: bool = True) -> list:
    """Every value of a JSONL file (``iter_jsonl``)."""
    return [record for _, record in iter_jsonl(path, what, objects)]


def string_field(path: str | os.PathLike, line: int, record: dict, name: str) -> str:
    """record[name] if it is a non-empty string, else DataFormatError naming the field."""
    value = record.get(name)
    if not isinstance(value, str) or not value.strip():
        raise DataFormatError(path, line, f"field '{name}' must be a non-empty string")
    return value


# ----------------------------------------------------------------------------------------------------------------
# What users hand to the command line
# ----------------------------------------------------------------------------------------------------------------


def read_texts(path: str | os.PathLike) -> tuple[list[str], list[str | int] | None]:
    """Texts from a .txt file (one per line) or a .jsonl file ({"text": ..., optional "id"/"_id" on every line or
    none, optional "title" joined before the text as in BEIR corpora}); their ids (None for .txt: a text's id is
    its position). UTF-8, with or without a byte-order mark.

    Refused, naming the file and line: another file type, a blank text or line, a bad (``id_problem``) or repeated
    id, ids on some lines only, a file without texts, and .txt files in another format (CSV, ID<TAB>TEXT, JSONL)."""
    path = check_path_kind(path, "file", "input file", "give a .txt or .jsonl file")
    if path.suffix not in (".txt", ".jsonl"):
        raise ValueError(f"{path}: unsupported file type {path.suffix or '(none)'!r}; give a .txt file (one text per "
                         "line) or a .jsonl file (one {\"text\": ..., \"id\": ...} object per line)")
    texts: list[str] = []
    if path.suffix == ".jsonl":
        ids: list[str | int] = []
        first_line: dict = {}
        with_ids = None  # whether the first record has an id: then all must, else none may
        for number, record in iter_jsonl(path):
            identifier = record.get("id", record.get("_id", len(ids)))  # without ids, the position is the id
            try:
                text = string_field(path, number, record, "text")
            except DataFormatError as error:  # named by its id too, which finds the document in the user's own data
                raise DataFormatError(path, number, f"{error.problem} (id {identifier!r})") from None
            title = record.get("title")
            # A BEIR corpus line: title and text, joined as BEIR's readers (and hyte eval retrieval) join them.
            texts.append(f"{title} {text}".strip() if isinstance(title, str) and title.strip() else text)
            if "id" in record and "_id" in record and record["id"] != record["_id"]:
                raise DataFormatError(path, number, f"two ids, \"id\" {record['id']!r} and \"_id\" "
                                                    f"{record['_id']!r}: keep one of the two fields")
            has_id = "id" in record or "_id" in record
            with_ids = has_id if with_ids is None else with_ids
            if has_id != with_ids:
                raise DataFormatError(path, number, "some lines have an id and others not: give every line an "
                                                    "\"id\" (or none, and ids are line positions)")
            if not with_ids and number != len(ids) + 1:
                # Ids are positions among the records: a skipped blank line would shift those of all later lines.
                raise DataFormatError(path, len(ids) + 1, "blank line: without ids, a text's id is its position, "
                                                          "which the blank line would shift for every line after it; "
                                                          "remove blank lines (or give every line an \"id\")")
            problem = id_problem(identifier)
            if problem:
                raise DataFormatError(path, number, problem)
            key = str(identifier)  # 1 and "1" print alike, so they are one id
            if key in first_line:
                raise DataFormatError(path, number, f"id {identifier!r} repeats the one of line "
                                                    f"{first_line[key]}: ids must be unique")
            first_line[key] = number
            ids.append(identifier)
    else:
        ids = None
        for number, line in _text_lines(path):
            text = line.rstrip("\r\n")
            if not text.strip():
                raise DataFormatError(path, number, "blank line: each line is one text; remove blank lines")
            texts.append(text)
        header = [field.strip().strip('"').lower() for field in re.split(r"[,;\t]", texts[0])] if texts else []
        if len(header) > 1 and "text" in header and all(re.fullmatch(r"[a-z_]\w*", field) for field in header):
            # A CSV file under a .txt name: its header line would be indexed as document 0, and every row
            # with its id and commas as one text.
            raise DataFormatError(path, 1, f"{texts[0]!r} is a CSV header: this is a CSV file, which is read as one "
                                           "text per line. Write a .jsonl file with {\"id\": ..., \"text\": ...} per "
                                           "line (pandas: pd.read_csv(F).to_json(OUT, orient='records', lines=True))")
        if texts and all(re.match(r"[^\s]+\t", text) for text in texts):
            # ID<TAB>TEXT lines: the ids would be indexed as part of the texts and the documents numbered 0, 1, ...
            raise DataFormatError(path, None, "every line is ID<TAB>TEXT: the ids would become part of the texts. "
                                              "Write a .jsonl file with {\"id\": ..., \"text\": ...} per line")
        if texts and all(_is_json_record(text) for text in texts):
            # Every line a {"text": ...} object: a .jsonl file under a .txt name, whose raw JSON would be indexed.
            raise DataFormatError(path, None, "every line is a JSON object with a \"text\" field: this is a .jsonl "
                                              "file; rename it to .jsonl so its texts and ids are read")
    if not texts:
        raise DataFormatError(path, None, "holds no texts")
    return texts, ids


def id_problem(identifier: object) -> str | None:
    """What is wrong with a document's own id, or None: a string with more than white space and none at either end,
    or an integer. A float is refused (1.0 would print as '1.0' beside the 1 it means), and so is a bool (True prints
    as 'True')."""
    if isinstance(identifier, float):
        whole = f" ({int(identifier)})" if identifier.is_integer() else ""
        return f"the id {identifier!r} is a float: give a string or an integer{whole}"
    if isinstance(identifier, bool) or not isinstance(identifier, (str, numbers.Integral)):
        return f"the id must be a string or an integer; got {identifier!r}"
    if isinstance(identifier, str) and not identifier.strip():
        return f"the id {identifier!r} is empty: a hit would show no id; give every document a non-empty id"
    if isinstance(identifier, str) and identifier != identifier.strip():
        # " x" would be kept beside "x" as another document, and a search for id x would never find it.
        where = " and ".join(side for side, edge in (("leading", identifier[0]), ("trailing", identifier[-1]))
                             if edge.isspace())
        return (f"the id {identifier!r} has {where} white space: ids are compared exactly, so it differs from "
                f"{identifier.strip()!r}; remove the white space")
    return None


def _is_json_record(line: str) -> bool:
    if not line.lstrip().startswith("{"):
        return False
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        return False
    return isinstance(record, dict) and "text" in record


def write_vectors(path: str | os.PathLike, vectors: np.ndarray, metadata: dict[str, str]) -> Path:
    """Save (N, D) vectors as .npy or .safetensors (with ``metadata``), atomically."""
    import numpy as np

    path = Path(path)
    if path.suffix not in (".npy", ".safetensors"):
        raise ValueError(f"output must end in .npy or .safetensors; got {path.name}")

    def write(temporary: Path) -> None:
        if path.suffix == ".npy":
            with temporary.open("wb") as handle:
                np.save(handle, vectors)
        else:
            from safetensors.numpy import save_file

            save_file({"embeddings": np.ascontiguousarray(vectors)}, str(temporary), metadata=metadata)

    return atomic_file(path, write)
