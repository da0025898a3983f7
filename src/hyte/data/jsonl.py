"""Reading JSONL files with errors that name the file and the line: one reader for every format HyTE accepts; and
the one atomic writer of line files (JSONL, TSV, JSON)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path


class DataFormatError(ValueError):
    """A malformed line in a data file; the message starts with "<file>, line <n>:"."""

    def __init__(self, path: str | Path, line: int, problem: str):
        super().__init__(f"{path}, line {line}: {problem}")
        self.path, self.line, self.problem = Path(path), line, problem


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict]]:
    """(line number, object) for every non-blank line; FileNotFoundError or DataFormatError otherwise."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"data file not found: {path}")
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise DataFormatError(path, number, f"not valid JSON ({error.msg})") from None
            if not isinstance(record, dict):
                raise DataFormatError(path, number, f"expected a JSON object, got {type(record).__name__}")
            yield number, record


def string_field(path: str | Path, line: int, record: dict, name: str) -> str:
    """record[name] if it is a non-empty string, else DataFormatError naming the field."""
    value = record.get(name)
    if not isinstance(value, str) or not value.strip():
        raise DataFormatError(path, line, f"field '{name}' must be a non-empty string")
    return value


def write_lines_atomically(path: str | Path, lines: Iterable[str]) -> None:
    """Write ``lines`` (newline-terminated) beside ``path`` and rename: a reader never sees a half-written file, and
    an interrupted write leaves the previous file intact."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    with temporary.open("w", encoding="utf-8", newline="\n") as handle:
        for line in lines:
            handle.write(line + "\n")
    os.replace(temporary, path)


def write_jsonl(path: str | Path, records: Iterable) -> None:
    """One JSON value per line, atomically (``write_lines_atomically``)."""
    write_lines_atomically(path, (json.dumps(record) for record in records))
