"""Atomic replacement of a saved directory (``LorentzIndex.save``, ``PhraseIndex.save``) and its crash fallback.

A save writes and fsyncs a sibling staging directory; renames the previous directory to the backup sibling
``.<name>.previous``; renames the staging directory into place; deletes the backup. A failure at any step leaves
the previous directory in place; a crash between the two renames leaves it as the backup, which
``saved_directory`` finds (with a warning). Staging directories left by a killed save are deleted by the next
save, so two processes must not save to the same target at once.
"""

from __future__ import annotations

import os
import shutil
import uuid
import warnings
from collections.abc import Callable
from pathlib import Path

__all__ = ["atomic_directory", "fsync", "saved_directory"]


def fsync(path: Path) -> None:
    """Flush a file, or a directory's entries (so renames inside it are durable; opening a directory is POSIX-only)."""
    if path.is_dir() and os.name != "posix":
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_directory(target: str | os.PathLike, write: Callable[[Path], None], marker: str, what: str) -> None:
    """Replace directory ``target`` by what ``write(staging)`` puts into a fresh staging directory (module docstring).

    ``marker`` is a file every saved directory of this kind (``what``, for messages) holds: an existing, non-empty
    ``target`` without it is refused, so a typo cannot replace an unrelated folder.
    """
    target = Path(target).absolute()
    if target.exists() and not (target / marker).is_file() and (not target.is_dir() or any(target.iterdir())):
        raise FileExistsError(f"refusing to replace {target}: it exists and is not a saved {what}")
    parent = target.parent
    parent.mkdir(parents=True, exist_ok=True)
    for stale in parent.glob(f".{target.name}.tmp-*"):
        shutil.rmtree(stale, ignore_errors=True)
    backup = parent / f".{target.name}.previous"
    staging = parent / f".{target.name}.tmp-{uuid.uuid4().hex}"
    staging.mkdir()  # not tempfile.mkdtemp: its mode 0700 would become the saved directory's
    try:
        write(staging)
        for path in sorted(staging.rglob("*"), reverse=True) + [staging]:  # files before their directories
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


def saved_directory(directory: str | os.PathLike, marker: str, what: str) -> Path:
    """The directory to load: ``directory``, or its backup (with a warning) when a save was interrupted mid-swap.

    Raises FileNotFoundError when neither holds ``marker``.
    """
    target = Path(directory).absolute()
    backup = target.parent / f".{target.name}.previous"
    if not target.exists() and backup.is_dir():
        warnings.warn(f"{target} is missing: a save was interrupted; loading the previous {what} from {backup}",
                      stacklevel=3)
        target = backup
    if not (target / marker).is_file():
        raise FileNotFoundError(f"no saved {what} at {target} ({marker} missing)")
    return target
