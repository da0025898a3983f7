"""BENCHMARKS.md from the result files: ``write_benchmarks_md`` (``hyte eval report``, ``hyte bench``)."""

from .build import load_results, write_benchmarks_md

__all__ = ["load_results", "write_benchmarks_md"]
