"""The current verdicts: one row per question about the geometry, from the newest result that tests it. BENCHMARKS.md
opens with this table and README.md's "Does the hyperbolic geometry pay off?" carries the same rows (a test keeps
them equal), so no verdict is read above a later one that contradicts it."""

from __future__ import annotations

from pathlib import Path

from ..markdown import number, table
from .taxonomy import care, newest_first

HEADER = ["question", "compared", "primary metric", "difference", "p", "95 % interval (seeds, then queries)", "seeds",
          "verdict", "run"]


def _date(payload: dict) -> str:
    return str((payload.get("meta") or {}).get("date") or payload.get("date") or "–")[:10]


def _row(question: str, compared: str, metric: str, result: dict, seeds: int, path: Path, payload: dict,
         interval: tuple[float, float] | None = None) -> list[str]:
    """One verdict row; ``interval`` defaults to ``result``'s bootstrap interval."""
    low, high = interval or (result["bootstrap_low"], result["bootstrap_high"])
    return [question, compared, metric, f"{result['mean_difference']:+.4f}", number(result.get("t_test_p"), 3),
            f"[{low:+.4f}, {high:+.4f}]", str(seeds), f"**{result['verdict']}**", f"`{path.name}`, {_date(payload)}"]


def _newest(items: list[tuple[Path, dict]], wanted, key=None) -> tuple[Path, dict] | tuple[None, None]:
    """The newest of the ``items`` whose payload ``wanted`` accepts (by date, or by ``key``), else (None, None)."""
    return max(((path, payload) for path, payload in items if wanted(payload)),
               key=key or (lambda item: _date(item[1])), default=(None, None))


def _curvature(items) -> list[list[str]]:
    path, payload = _newest(items, lambda payload: payload.get("benchmark") == "curvature")
    if payload is None:
        return []
    steps, block = next(iter(payload["by_steps"].items()))  # the first budget holds the primary contrast
    seeds = len(next(iter(block["runs"].values())))
    rows = []
    for name, question, compared in (("c=1 - c=100", "Does the curvature do work?", "HyTE-H c = 1 − its flat twin c = 100"),
                                  ("c=1 - euclidean", "Is HyTE-H better than Euclidean, neither tuned?",
                                   "HyTE-H c = 1 − the Euclidean control")):
        result = block["comparisons"].get(name, {}).get("ndcg@10")
        if result:
            rows.append(_row(question, f"{compared} ({steps} steps)", "HPO held-out nDCG@10", result, seeds, path,
                             payload))
    return rows


def _specificity(items) -> list[list[str]]:
    path, payload = _newest(items, lambda payload: payload.get("benchmark") == "specificity",
                            key=lambda item: item[1].get("round", 1))
    if payload is None:
        return []
    result = payload["comparison"]["hpo"]["ndcg@10"]
    overlap = payload.get("test_overlap")  # a round whose test split was not disjoint from an earlier round's
    shared = (f"; {overlap['shared_test_terms']:,} of its {overlap['test_terms']:,} test terms were round "
              f"{overlap['earlier_round']}'s" if overlap else "")
    return [_row("Is HyTE-H better than Euclidean, each tuned on validation?",
                 f"fine-tuned HyTE-H − Euclidean control (round {payload.get('round', 1)}{shared})",
                 "HPO held-out nDCG@10", result, len(payload["seeds"]), path, payload)]


def _taxonomy(items) -> list[list[str]]:
    """One row per (taxonomy, other arm): the newest study's answer; earlier rounds are history in BENCHMARKS.md."""
    rows, answered = [], set()
    studies = [(path, payload) for path, payload in items if payload.get("benchmark") == "taxonomy-study"]
    for path, payload in newest_first(studies):
        for name, study in payload["taxonomies"].items():
            seeds = len(study["arms"]["hyte"])
            for other, title in (("euclidean", "its Euclidean control"), ("hit", "HiT")):
                result = study["comparisons"].get(f"hyte - {other}")
                if result and (name, other) not in answered:
                    answered.add((name, other))
                    rows.append(_row(f"Your own taxonomy ({name}, {care(payload, study)}): is HyTE-H better?",
                                     f"HyTE-H − {title}", payload["primary_metric"], result, seeds, path, payload,
                                     result["interval_95"]))
    return rows


def _from_scratch(items) -> list[list[str]]:
    path, payload = _newest(items, lambda payload: payload.get("comparison_gated"))
    if payload is None:
        return []
    care = ("each model's starting temperature chosen on validation, same candidates"
            if payload.get("temperature_selection") else "only HyTE-FH got the residual rescale")
    return [_row(f"From scratch (tiny size; {care}): is HyTE-FH better?",
                 "HyTE-FH − EucBERT", "HPO held-out nDCG@10", payload["comparison_gated"]["hpo"]["ndcg@10"],
                 len(payload["gated_seeds"]), path, payload)]


def verdicts_table(results: dict[str, list[tuple[Path, dict]]]) -> list[str]:
    """The markdown table of the verdicts, newest questions first: the curvature ablation, the tuned fine-tuning
    comparison, the taxonomies, from scratch (no lines when no result answers a question)."""
    rows = (_curvature(results.get("curvature", [])) + _specificity(results.get("specificity", []))
            + _taxonomy(results.get("taxonomy", [])) + _from_scratch(results.get("from_scratch", [])))
    return table(HEADER, rows) if rows else []
