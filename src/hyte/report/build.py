"""``BENCHMARKS.md`` from every JSON in a results folder, after a table of the current verdicts (``report.verdicts``).

Each JSON is recognised by its ``"benchmark"`` key (an index JSON by its ``"indexes"``) and rendered by its
subject's module, in ``SECTIONS`` order; one whose ``"superseded_by"`` names a later one goes to an archive at the
end. A "Runs" list gives each file's command, date and machine (its ``"meta"``); plots are (re)drawn next to the JSON.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

from ..artifacts import claim_file
from ..compatibility.report import render_matrix_section, render_uncertainty_section, render_upgrade_section
from ..io import check_path_kind, write_text_atomically
from ..phrase.report import render_section as render_phrase_section
from .curvature import curvature_section
from .evaluation import hierarchy_section, mteb_section, radius_section, rag_section, retrieval_section
from .finetune import from_scratch_section, hierarchy_finetune_section, hierarchy_sweep_section
from .serving import serving_radius_section, serving_scale_section
from .specificity import specificity_section
from .speed import encode_section, forward_section, index_section
from .taxonomy import taxonomy_section
from .verdicts import verdicts_table

__all__ = ["by_section", "load_results", "write_benchmarks_md"]

# Each result kind's section, in the report's order; those in WITH_FOLDER link plots relative to the report's folder.
SECTIONS = {"curvature": curvature_section, "taxonomy": taxonomy_section, "from_scratch": from_scratch_section,
            "specificity": specificity_section, "hierarchy_finetune": hierarchy_finetune_section,
            "hierarchy_sweep": hierarchy_sweep_section, "compatibility_upgrade": render_upgrade_section,
            "compatibility_uncertainty": render_uncertainty_section, "compatibility": render_matrix_section,
            "hierarchy": hierarchy_section, "phrase": render_phrase_section, "retrieval": retrieval_section,
            "radius": radius_section, "mteb": mteb_section, "rag": rag_section, "forward": forward_section,
            "encode": encode_section, "index": index_section, "serving_radius": serving_radius_section,
            "serving_scale": serving_scale_section}
WITH_FOLDER = ("radius", "index", "serving_scale")
# Result kinds shown in another kind's section (before its own files).
JOINED = {"specificity_selection": "specificity",  # benchmarks/run_specificity.py's validation selection, then test
          "geometry-in-play": "curvature",  # benchmarks/run_geometry_in_play.py: the curvature study's item 2
          "taxonomy-study": "taxonomy"}  # benchmarks/run_taxonomy.py's study beside hyte eval taxonomy's results


def load_results(results_dir: str | os.PathLike) -> tuple[dict[str, list[tuple[Path, dict]]], list[tuple[Path, str]]]:
    """``({kind: [(path, payload), ...]}, [(path, problem), ...])`` for the ``*.json`` files of ``results_dir``."""
    results: dict[str, list[tuple[Path, dict]]] = defaultdict(list)
    problems = []
    for path in sorted(Path(results_dir).glob("*.json")):
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            problems.append((path, f"unreadable ({error})"))
            continue
        if not isinstance(payload, dict):
            problems.append((path, "not a JSON object"))
            continue
        kind = payload.get("benchmark") or ("index" if "indexes" in payload else None)
        results[kind or "other"].append((path, payload))
    return results, problems


def _not_a_result(payload: dict) -> str:
    """What a JSON object without a report section is, in a few words, for the refusal above."""
    if "model_type" in payload or "architectures" in payload:
        return "a model's config, not a result"
    if "heldout" in payload:
        return "hyte quickstart's scores, which hyte quickstart prints as its table"
    if "benchmark" in payload:
        return f"benchmark {payload['benchmark']!r}, which has no report section"
    return "no 'benchmark' field, so not a result hyte wrote"


def by_section(results: dict[str, list[tuple[Path, dict]]], problems: list[tuple[Path, str]]
               ) -> tuple[dict[str, list[tuple[Path, dict]]], dict[str, list[tuple[Path, dict]]]]:
    """``load_results``' results as ``(current, archived)``, each keyed by report section: the files of one study
    that share a section joined under it, and the results whose ``"superseded_by"`` names another result file of
    the folder moved to the archive at the end of the report (one naming no such file stays current and is listed
    among the ``problems``). The current verdicts come from ``current``."""
    results = dict(results)
    for kind, section in JOINED.items():
        if kind in results:
            results[section] = results.pop(kind) + results.get(section, [])
    names = {path.name for items in results.values() for path, _ in items}
    current: dict[str, list[tuple[Path, dict]]] = defaultdict(list)
    archived: dict[str, list[tuple[Path, dict]]] = defaultdict(list)
    for kind, items in results.items():
        for path, payload in items:
            later = payload.get("superseded_by")
            if later is not None and later not in names:
                problems.append((path, f"superseded_by names {later!r}, which is not a result file here"))
            (archived if later in names else current)[kind].append((path, payload))
    return dict(current), dict(archived)


REPORT_HEADER = "# HyTE benchmarks"


def check_report_output(path: str | os.PathLike) -> Path:
    """``path`` as the place of a generated report, checked before any work: a new .md file, or one this module
    generated before (it starts with the header); never another file. ValueError otherwise."""
    path = Path(path)
    if path.suffix.lower() != ".md":
        raise ValueError(f"{path}: the report is Markdown; give a .md file (e.g. BENCHMARKS.md)")
    if path.is_dir():
        raise ValueError(f"{path} is a folder: give the report's file, e.g. {path / 'BENCHMARKS.md'}")
    if path.exists():
        try:
            generated = path.read_text(encoding="utf-8").startswith(REPORT_HEADER)
        except (OSError, UnicodeDecodeError):
            generated = False
        if not generated:
            raise ValueError(f"{path} exists and is not a report hyte generated (it does not start with "
                             f"{REPORT_HEADER!r}): give a new file, or the BENCHMARKS.md to regenerate")
    return claim_file(path, (".md",), what="the report", example="BENCHMARKS.md")


def write_benchmarks_md(results_dir: str | os.PathLike, path: str | os.PathLike = "BENCHMARKS.md") -> Path:
    """(Re)write ``path`` from every ``*.json`` in ``results_dir`` (see the module docstring); returns ``path``."""
    results_dir, path = Path(results_dir), Path(path)
    check_report_output(path)
    check_path_kind(results_dir, "folder", "results folder",
                    "give the folder that holds the result JSON files (e.g. benchmarks/results)")
    results, problems = load_results(results_dir)
    outcome = (f"{path} is left as it is" if path.is_file() else "no report written") + (
        ". Give the folder the results were written to (e.g. benchmarks/results, or the --output folder of hyte eval "
        "/ hyte bench)")
    if not results and not problems:  # an empty report would read as if the runs had found nothing
        raise ValueError(f"{results_dir} holds no result JSON (*.json): {outcome}")
    if not any(kind in SECTIONS or kind in JOINED for kind in results):
        # Files without a section (a model's config.json, quickstart's results.json) are only listed; a report of
        # nothing but that list would read like a finished report with no results.
        found = "; ".join([f"{p.name}: {_not_a_result(payload)}" for items in results.values() for p, payload in items]
                          + [f"{p.name}: {problem}" for p, problem in problems])
        raise ValueError(f"{results_dir} holds no result hyte eval / hyte bench wrote ({found}): {outcome}")
    markdown_dir = path.parent.resolve()
    shown_dir = os.path.relpath(results_dir.resolve(), markdown_dir)
    lines = [REPORT_HEADER, "",
             f"Generated from `{Path(shown_dir).as_posix()}/*.json` by `hyte eval report` (also run by `hyte bench`)."
             " Do not edit by hand: add or replace a JSON there and regenerate. Evaluation results come from "
             "`hyte eval hierarchy|retrieval|radius|mteb|rag --output ...`, speed results from `hyte bench`.", ""]
    results, archived = by_section(results, problems)
    verdicts = verdicts_table(results)
    if verdicts:
        lines += ["## Current verdicts", "",
                  ("One row per question about the geometry, from the newest result that answers it (earlier rounds stay in "
                   "their sections below, as history). A win or loss needs its interval to exclude zero (and, where "
                   "a p is given, the paired t-test over seeds too); otherwise a tie."), "", *verdicts]

    def rendered(grouped: dict[str, list[tuple[Path, dict]]]) -> list[str]:
        lines = []
        for kind, section in SECTIONS.items():
            if kind in grouped:
                lines += section(grouped[kind], markdown_dir) if kind in WITH_FOLDER else section(grouped[kind])
        return lines

    lines += rendered(results)
    if archived:  # its sections one heading level down, under its own
        lines += ["## Archive: superseded runs", "",
                  ("Runs a later one replaced (each file's \"superseded_by\" names it), kept as they were measured; "
                   "their verdicts are not current."), "",
                  *("#" + line if line.startswith("#") else line for line in rendered(archived))]
    others = [(p, payload) for kind, items in results.items() if kind not in SECTIONS for p, payload in items]
    if others or problems:
        lines += ["## Other files", ""]
        lines += [f"- `{p.name}`: benchmark {payload.get('benchmark', 'unknown')!r} (no section for it)"
                  for p, payload in others]
        lines += [f"- `{p.name}`: {problem}" for p, problem in problems]
        lines += [""]
    return write_text_atomically(path, "\n".join(lines).rstrip() + "\n")
