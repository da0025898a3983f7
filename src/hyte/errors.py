"""The base of every error hyte raises for a user to act on: ``except hyte.HyteError`` catches any of them.

Each error also keeps the built-in class it has always been (``ValueError`` for bad input, ``ConnectionError`` for
an unreachable store, ...), so code that catches those goes on working. The classes, where they are defined and
what they mean, are listed in README.md ("Errors you can catch").
"""

from __future__ import annotations

__all__ = ["HyteError"]


class HyteError(Exception):
    """Something hyte was given or found that the user can fix: the message says what and how."""
