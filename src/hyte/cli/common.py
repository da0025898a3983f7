"""What the ``hyte`` commands share: the parser class, the error users can fix, model loading, printing hits.

Library code never imports this package; it raises ordinary exceptions (ValueError, FileNotFoundError, ...) that
``hyte.cli.app.main`` prints as one line.
"""

from __future__ import annotations

import argparse
import copy
import math
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

from ..errors import HyteError
from ..io import read_texts

__all__ = ["MODEL_HELP", "Parser", "UserError", "check_model_path", "fmt", "label_of", "load_model_encoder",
           "print_hits", "queries_of"]


class UserError(HyteError):
    """A problem with the user's input, reported without a traceback."""


def print_hits(queries: list[str], found, values, documents: list[dict] | None, name: str) -> None:
    """Print each query's hits: rank, ``name=value``, the document's id and text (ids -1 = no more hits)."""
    for query, row_ids, row_values in zip(queries, found, values):
        print(f"query: {query}")
        for rank, (doc_id, value) in enumerate(zip(row_ids, row_values), start=1):
            if doc_id < 0:
                break
            shown = documents[doc_id] if documents is not None else {"id": int(doc_id), "text": ""}
            print(f"  {rank:2d}. {name}={value:.4f}  [{shown['id']}] {shown['text'][:100]}")


class HelpFormatter(argparse.HelpFormatter):
    """Ends every option's help with its default, also where the option has no help text; keeps hyphenated names
    (bundled:all-MiniLM-L6-v2, hyte-output/...) on one line."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)

    def _format_action(self, action: argparse.Action) -> str:
        # Unset (None), on/off flags and empty lists have no default worth a word.
        if (action.option_strings and action.default not in (None, argparse.SUPPRESS, [])
                and not isinstance(action.default, bool) and "(default" not in (action.help or "")):
            action = copy.copy(action)
            action.help = f"{action.help or ''} (default: %(default)s)".lstrip()
        return super()._format_action(action)


_GIVEN = "_hyte_options_given"  # a namespace attribute that lives only while one parser parses


class _StoreOnce(argparse._StoreAction):
    """argparse's ``store``, except that a single-valued option given twice is an error: plain argparse keeps the
    last value and drops the first without a word (``--query a --query b`` searched only b)."""

    def __call__(self, parser, namespace, values, option_string=None):
        given = vars(namespace).setdefault(_GIVEN, set())
        if self.dest in given:
            parser.error(f"{'/'.join(self.option_strings)} was given twice; it takes one value (give it once)")
        given.add(self.dest)
        super().__call__(parser, namespace, values, option_string)


class Parser(argparse.ArgumentParser):
    """The ``hyte`` parser; its sub-command parsers (``add_subparsers`` makes them of this class too) show defaults
    and refuse a single-valued option given twice."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)
        self.register("action", None, _StoreOnce)
        self.register("action", "store", _StoreOnce)

    def parse_known_args(self, args=None, namespace=None):
        namespace, extras = super().parse_known_args(args, namespace)
        if hasattr(namespace, _GIVEN):
            delattr(namespace, _GIVEN)
        return namespace, extras


MODEL_HELP = ("a HyTE model: its folder (e.g. hyte demo's hyte-output/demo/model, or a run's final/) or Hub id; "
              "a plain encoder such as bundled:all-MiniLM-L6-v2 is refused (it is the base HyTE-H is trained from)")
INDEX_MODEL_HELP = MODEL_HELP + " (default: the model the index was built with)"


def number_type(name: str, convert, accepted, wanted: str):
    """An argparse type ``name`` (argparse names it in "invalid NAME value"): ``convert(text)`` where ``accepted``
    takes it, else an error saying it must be ``wanted``."""

    def parse(text: str):
        value = convert(text)
        if not accepted(value):
            raise argparse.ArgumentTypeError(f"must be {wanted}; got {text}")
        return value

    parse.__name__ = name
    return parse


# Counts and sizes (0 or a negative value would be silently meaningless); bounds and scales (float() takes nan, inf
# and negative values, which would be recorded or fail deep inside the work); seeds, depths and optional counts.
positive_int = number_type("positive_int", int, lambda value: value >= 1, "a positive integer")
positive_float = number_type("positive_float", float, lambda value: math.isfinite(value) and value > 0,
                              "a finite number > 0")
non_negative_int = number_type("non_negative_int", int, lambda value: value >= 0, "an integer >= 0")


def note_truncated(encoder, texts: list[str], kept: str = "") -> None:
    """A note on stderr when some of ``texts`` are longer than ``encoder`` reads (they were cut without a
    word). ``encoder``: a hyte.encoders encoder (its ``count_truncated`` and ``token_limit``); ``kept``: where the
    full text stays, if anywhere."""
    truncation_note(encoder.count_truncated(texts), len(texts), encoder.token_limit, kept)


def truncation_note(cut: int, total: int, limit: int, kept: str = "") -> None:
    """``note_truncated``'s note from counts already made (``hyte encode --corpus`` counts where it encodes)."""
    if cut:
        print(f"note: {cut} of {total} texts {'is' if cut == 1 else 'are'} longer than the model's {limit} tokens "
              f"([CLS] and [SEP] included): {'it was' if cut == 1 else 'each was'} encoded from its start only{kept}; "
              "split long texts into passages (e.g. by paragraph) to have all of their text searched", file=sys.stderr)


def k_within(k: int, documents: int, use: str) -> int:
    """--k, capped at the number of documents an index holds (with a note on stderr): more hits than documents
    cannot come back, and a huge --k made the search allocate padding (killed, or 31 s). ``use``: what the command
    does with them ("showing", "using")."""
    if k > documents > 0:
        print(f"--k {k}: the index holds {documents} documents; {use} all of them", file=sys.stderr)
        return documents
    return k


def refuse_unused(args: argparse.Namespace, options: Sequence[str], needed: str, remedy: str) -> None:
    """UserError naming those of ``options`` that were given (not None) where ``needed``, which alone gives them a
    meaning, is missing (the caller's test): they would be ignored without a word. ``remedy``: what to do."""
    given = [option for option in options if getattr(args, option[2:].replace("-", "_")) is not None]
    if given:
        raise UserError(f"{', '.join(given)}: for {needed}; {remedy}")


def label_of(model: str, label: str | None) -> str:
    return label or Path(str(model).rstrip("/")).name or str(model)


def check_model_path(model: str) -> None:
    """A missing local folder is a user error; anything shaped like a hub id ("org/name") is left to the loader."""
    if not Path(model).exists() and (model.startswith((".", "/", "~")) or model.count("/") > 1 or "\\" in model):
        raise FileNotFoundError(f"model folder not found: {model}")


def load_model_encoder(model: str, kind: str = "auto", max_length: int | None = None):
    """The encoder of ``model`` (``load_encoder``'s ``kind`` and ``max_length``); a clear error when missing."""
    from ..encoders import load_encoder

    check_model_path(model)
    try:
        return load_encoder(model, kind=kind, max_length=max_length)
    except FileNotFoundError:
        raise
    except OSError as error:  # transformers' "not a local folder and not on the Hub (offline)" and the like
        raise FileNotFoundError(f"could not load model {model}: {error}") from error


def fmt(value) -> str:
    return "-" if value is None else f"{value:.4f}" if isinstance(value, float) else str(value)


def queries_of(args: argparse.Namespace) -> list[str]:
    """``--query`` or the texts of ``--queries``; an empty query is refused."""
    if args.query is not None and not args.query.strip():
        raise UserError("the query is empty")
    return [args.query] if args.query is not None else read_texts(args.queries)[0]
