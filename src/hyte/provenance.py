"""What result files say about where things were: names and relative paths, never the measuring machine's own.

Result JSON (``benchmarks/results``, the quickstart's ``results.json``), ``hyte_card.json`` and BENCHMARKS.md are
shared, so they record a bundled model by its name (``bundled:all-MiniLM-L6-v2``, :mod:`hyte.bundled`), other
installed packages' files relative to site-packages, files under the working directory relative to it, and any
other absolute path (``/tmp/...``) by its last component only.
"""

from __future__ import annotations

import json
import math
import numbers
import os
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["portable_command", "portable_path", "portable_paths", "write_result"]

_PACKAGE_DIRS = ("site-packages", "dist-packages")


def _bundled_alias(path: Path) -> str | None:
    """The ``bundled:`` name of a bundled model's folder (None for any other path)."""
    from .bundled import BUNDLED, bundled_path

    for alias in BUNDLED:
        try:
            if Path(bundled_path(alias)).resolve() == path:
                return alias
        except ImportError:  # its weights package is not installed: nothing can be inside it
            continue
    return None


def portable_path(value: str | os.PathLike) -> str:
    """``value`` as a result file may record it (module docstring); relative paths and names pass unchanged."""
    text = os.fspath(value)
    if not os.path.isabs(text):
        return text
    path = Path(text).resolve()
    alias = _bundled_alias(path)
    if alias:
        return alias
    parts = path.parts
    for marker in _PACKAGE_DIRS:
        if marker in parts:
            return Path(*parts[parts.index(marker):]).as_posix()
    if path.is_relative_to(Path.cwd().resolve()):
        return path.relative_to(Path.cwd().resolve()).as_posix() or "."
    return path.name


def portable_command(command: str) -> str:
    """A shell command line with every absolute path argument (also ``--opt=/path``) made portable."""
    words = []
    for word in shlex.split(command):
        option, equals, value = word.partition("=")
        if equals and option.startswith("-"):
            words.append(f"{option}={portable_path(value)}")
        else:
            words.append(portable_path(word))
    return shlex.join(words)


def portable_paths(value: Any) -> Any:
    """``value`` (nested dicts, lists, strings) with every absolute path string made portable."""
    if isinstance(value, dict):
        return {key: portable_paths(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [portable_paths(item) for item in value]
    return portable_path(value) if isinstance(value, str) else value


def _finite_or_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _finite_or_none(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_or_none(item) for item in value]
    if isinstance(value, numbers.Real) and not isinstance(value, (bool, int, float)):
        value = value.item()  # numpy scalars: JSON knows Python numbers only
    return None if isinstance(value, float) and not math.isfinite(value) else value


def write_result(path: str | os.PathLike, payload: dict, keep: Sequence[str] = ()) -> Path:
    """Write a benchmark's result JSON: paths made portable, NaN / Inf written as null (JSON has neither), the
    file replaced only once complete; returns its path.

    ``keep``: fields written by hand into the earlier file at ``path`` (the reading of its numbers) that
    ``payload`` lacks; they are carried over, so rerunning a driver does not drop them.
    """
    path = Path(path)
    if keep and path.is_file():
        earlier = json.loads(path.read_text())
        payload = {**payload, **{key: earlier[key] for key in keep if key in earlier and key not in payload}}
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = path.with_name(path.name + ".tmp")
    staging.write_text(json.dumps(_finite_or_none(portable_paths(payload)), indent=2))
    os.replace(staging, path)
    print(f"wrote {path}")
    return path
