"""Result files: one writer (``write_result``) for every result JSON, and what they say about where and how a number
was measured: names and relative paths, never the measuring machine's own (``portable_path``), the command line
(``command_line``) and the machine (``machine_info``).

Result JSON (``benchmarks/results``, the quickstart's ``results.json``), ``hyte_card.json`` and BENCHMARKS.md are
shared, so they record a bundled model by its name (``bundled:all-MiniLM-L6-v2``, :mod:`hyte.bundled`), other
installed packages' files relative to site-packages, files under the working directory relative to it, and any
other absolute path (``/tmp/...``) by its last component only.
"""

from __future__ import annotations

import argparse
import json
import math
import numbers
import os
import platform
import shlex
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .artifacts import claim_file
from .identity import differences
from .io import write_text_atomically

__all__ = ["command_line", "machine_info", "portable_command", "portable_path", "portable_paths", "public_model_name",
           "write_result"]

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

    def portable_word(word: str) -> str:
        option, equals, value = word.partition("=")
        return f"{option}={portable_path(value)}" if equals and option.startswith("-") else portable_path(word)

    return shlex.join(map(portable_word, shlex.split(command)))


def public_model_name(name: str | os.PathLike) -> str:
    """``portable_path``, but a bundled model (alias or folder) by the Hub id of the same weights: the name a model
    card and its hyte_card.json give as the base model (``bundled:...`` links nowhere on the Hub)."""
    from .bundled import BUNDLED_HUB_IDS

    portable = portable_path(name)
    return BUNDLED_HUB_IDS.get(portable, portable)


def portable_paths(value: Any, finite: bool = False) -> Any:
    """``value`` (nested dicts, lists, strings) with every absolute path string made portable; with ``finite``,
    numpy scalars as Python numbers and NaN / Inf as None too (JSON knows neither)."""
    if isinstance(value, dict):
        return {key: portable_paths(item, finite) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [portable_paths(item, finite) for item in value]
    if isinstance(value, str):
        return portable_path(value)
    if finite and isinstance(value, numbers.Real) and not isinstance(value, (bool, int, float)):
        value = value.item()
    return None if finite and isinstance(value, float) and not math.isfinite(value) else value


def write_result(path: str | os.PathLike, payload: dict, keep: Sequence[str] = (), *, replace: bool = False) -> Path:
    """Write a result JSON: paths made portable, NaN / Inf written as null (JSON has neither), numpy scalars as
    numbers, the file replaced only once complete (``hyte.io``); returns its path.

    ``keep``: fields written by hand into the earlier file at ``path`` (the reading of its numbers) that
    ``payload`` lacks; they are carried over, so rerunning a driver does not drop them.

    An earlier result of the same kind (its "benchmark" field) is replaced, or any earlier result with ``replace``
    (for a caller that checked it); any other existing file (a data file given as the output by mistake) is not:
    ValueError, before anything is written.
    """
    path = check_result_output(path, _ANY if replace else payload.get("benchmark"))
    if keep and path.is_file():
        earlier = json.loads(path.read_text())
        payload = {**payload, **{key: earlier[key] for key in keep if key in earlier and key not in payload}}
    text = json.dumps(portable_paths(payload, finite=True), indent=2, ensure_ascii=False) + "\n"
    return write_text_atomically(path, text)


_ANY = object()


def check_result_output(path: str | os.PathLike, benchmark: str | None | tuple = _ANY,
                        model: str | os.PathLike | None = None, data: str | os.PathLike | None = None,
                        data_sha256: str | None = None) -> Path:
    """``path`` as a place for a result JSON, checked before any work: an earlier result of the same ``benchmark``
    kind (its "benchmark" field; one of them when a tuple) may be replaced, unless it scored another ``model`` or
    another ``data`` set (its "model" / "data" fields: a rerun replaces its own result, never another model's,
    nor one on another dataset), or data of the same name whose content changed (its "data_sha256" against
    ``data_sha256``); any other result or file may not, and nothing is written inside a model, run, index or
    vector-shard folder. ValueError otherwise."""
    path = claim_file(path, (".json",), what="a result", example="benchmarks/results/NAME.json")
    earlier = _json_object(path) if path.exists() else None
    if path.exists() and earlier is None:
        raise ValueError(f"{path} exists and is not a result JSON: give another output file (results are never "
                         "written over other files)")
    kinds = benchmark if isinstance(benchmark, tuple) else (benchmark,)
    kind = (earlier or {}).get("benchmark")
    if benchmark is not _ANY and benchmark is not None and earlier is not None and kind is None:
        # A JSON without a kind: quickstart's scores or the user's own file, not "another kind of result".
        raise ValueError(f"{path} holds no result of hyte eval or hyte bench (no \"benchmark\" field: hyte "
                         "quickstart's scores, or a JSON file of yours): give another output file")
    if benchmark is not _ANY and earlier is not None and kind not in kinds:
        raise ValueError(f"{path} holds {'a ' + repr(kind) if kind else 'another kind of'} result, not "
                         f"{'a ' + repr(kinds[0]) if kinds[0] else 'this'} one: give another output file (a "
                         "result is replaced only by a rerun of the same kind)")
    changed = differences(*_result_identities(earlier or {}, model, data, data_sha256))
    if changed:
        raise ValueError(f"{path} holds the result of another run ({'; '.join(changed)}): give another output file "
                         "(one per model and dataset; data changed since gets a new one), or delete that one first")
    return path


def _result_identities(earlier: dict, model, data, data_sha256) -> tuple[dict, dict]:
    """(recorded, wanted): what a result's identity fields hold and what this run would write, over the fields both
    name (an older result may lack one). A recorded path that names the given model or data (``same_path``) counts
    as the same."""
    given = {key: value for key, value in (("model", model), ("data", data), ("data_sha256", data_sha256))
             if value is not None and isinstance(earlier.get(key), str)}
    wanted = {key: value if key == "data_sha256" else earlier[key] if same_path(earlier[key], value)
              else portable_path(value) for key, value in given.items()}
    return {key: earlier[key] for key in given}, wanted


def same_path(recorded: str, given: str | os.PathLike) -> bool:
    """Whether a result's recorded "model" or "data" names ``given``: the same portable name, or the same path."""
    return recorded == portable_path(given) or (Path(recorded).exists() and Path(given).exists()
                                                and Path(recorded).resolve() == Path(given).resolve())


def _json_object(path: Path) -> dict | None:
    """The JSON object (what write_result writes) of file ``path``, or None where it holds none."""
    try:
        value = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return value if isinstance(value, dict) else None


def machine_info() -> dict:
    """Where and when a result was measured: platform, CPU, thread count, library versions, date."""
    import torch

    from . import __version__

    return {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "hyte": __version__,
    }


# Options given more than once (``action="append"``): written once per value.
_REPEATED_OPTIONS = ("model", "label", "task")


def command_line(args: argparse.Namespace, words: list[str]) -> str:
    """The command as a user would type it, rebuilt from parsed options (``words``: the sub-command path)."""
    parts = ["hyte", *words]
    skip = {"func", "command", "eval_command", "index_command"}
    for key, value in vars(args).items():
        if key in skip or value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        if value is True:
            parts.append(flag)
        else:
            quoted = [shlex.quote(portable_path(str(item)))
                      for item in (value if isinstance(value, (list, tuple)) else [value])]
            parts += [part for word in quoted for part in (flag, word)] if key in _REPEATED_OPTIONS else [flag, *quoted]
    return " ".join(parts)
