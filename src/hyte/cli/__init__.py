"""The ``hyte`` command line: ``main`` (``hyte.cli.app``) and one module per command group. Nothing in the library
imports this package."""

from .app import build_parser, main

__all__ = ["build_parser", "main"]
