"""Markdown for BENCHMARKS.md: one table renderer, number formats and the "Runs:" lists every section uses."""

from __future__ import annotations

from pathlib import Path

__all__ = ["label", "mean_sd", "number", "paired_difference_text", "percent", "run_line", "runs", "table"]


def number(value, digits: int = 4) -> str:
    """A table cell: "–" for None, yes / no, floats to ``digits`` decimals."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def mean_sd(entry: dict | None, digits: int = 4) -> str:
    """An ``aggregate_seeds`` entry ({"mean", "std", "values"}) as "mean ± sd" ("mean" alone for one seed, "–" for
    none)."""
    if not entry:
        return "–"
    if len(entry["values"]) == 1:
        return f"{entry['mean']:.{digits}f}"
    return f"{entry['mean']:.{digits}f} ± {entry['std']:.{digits}f}"


def percent(value) -> str:
    """A share as a percentage with one decimal ("–" for None)."""
    return "–" if value is None else f"{100 * value:.1f}%"


def paired_difference_text(result: dict) -> str:
    """One ``hyte.evaluation.heldout.paired_difference`` result in words: "+0.1100 (per seed ...; paired t-test
    p = ...; bootstrap over seeds, then queries (N pairs) [low, high]): **verdict**"."""
    return (f"{result['mean_difference']:+.4f} (per seed " + ", ".join(f"{d:+.4f}" for d in result["per_seed"])
            + f"; paired t-test p = {number(result['t_test_p'], 3)}; bootstrap over seeds, then queries "
            f"({result['num_pairs']} pairs) [{result['bootstrap_low']:+.4f}, {result['bootstrap_high']:+.4f}]): "
            f"**{result['verdict']}**")


def table(header: list[str], rows: list[list], rule: str = " --- ") -> list[str]:
    """A markdown table as lines, ending with a blank line; cells' pipes escaped. ``rule``: the header separator's
    cell (" --- ", or "---" as the phrase section has always been written)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(rule for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell).replace("|", "\\|") for cell in row) + " |" for row in rows]
    return lines + [""]


def run_line(path: Path, payload: dict) -> str:
    """One "Runs:" entry: the result file, its command, date and machine (from its ``"meta"``)."""
    meta = payload.get("meta", {})
    command, date, machine, processor = (meta.get(key) or payload.get(key)
                                         for key in ("command", "date", "machine", "processor"))
    cpus = meta.get("cpus")
    threads = payload.get("threads") or meta.get("torch_threads")
    where = ", ".join(str(part) for part in (machine, processor, f"{cpus} CPUs" if cpus else None,
                                             f"{threads} threads" if threads else None) if part)
    details = ", ".join(part for part in (date, where) if part)
    return f"- `{path.name}`" + (f": `{command}`" if command else "") + (f" ({details})" if details else "")


def runs(items: list[tuple[Path, dict]]) -> list[str]:
    """The "Runs:" list of a section."""
    return ["Runs:", "", *(run_line(path, payload) for path, payload in items), ""]


def label(payload: dict, path: Path) -> str:
    """How a result names its model: its label, else the model folder's name, else the file's stem."""
    return payload.get("label") or Path(str(payload.get("model", path.stem))).name
