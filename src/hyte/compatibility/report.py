"""BENCHMARKS.md sections of HBCT: the upgrade benchmark (``benchmarks/run_compatibility.py``) and single
compatibility matrices (``hyte eval compatibility --output``)."""

from __future__ import annotations

from ..markdown import runs, table
from .evaluation import PAIRS

__all__ = ["render_matrix_section", "render_uncertainty_section", "render_upgrade_section"]

ONTOLOGY_NAMES = {"hpo": "HPO held-out branches", "icd10": "ICD-10-CM held-out chapters"}


def _ms(entry: dict | None, digits: int = 4) -> str:
    if not entry or entry.get("mean") is None:
        return "–"
    if entry.get("n", 1) > 1:
        return f"{entry['mean']:.{digits}f} ± {entry['sd']:.{digits}f}"
    return f"{entry['mean']:.{digits}f}"


def _condition_lines(name: str, seeds: dict, ontology: str) -> list[str]:
    """Each seed's two conditions with their intervals over queries (runs scored before they existed have none)."""
    checked = {seed: scores["conditions"][ontology] for seed, scores in sorted(seeds.items(), key=lambda s: int(s[0]))
               if ontology in scores.get("conditions", {})}
    if not checked:
        return []

    def shown(entry: dict) -> str:
        holds = "holds" if entry["low"] > 0 else "fails" if entry["high"] < 0 else "tie"
        return f"{entry['mean']:+.4f} [{entry['low']:+.4f}, {entry['high']:+.4f}] {holds}"

    return [f"  - {name}, seed {seed}: new->old - old->old {shown(c['new->old'])}; new->new - old->old "
            f"{shown(c['new->new'])} (nDCG@10 over the same queries, 95 % paired bootstrap interval)"
            for seed, c in checked.items()]


def _verdict(summary: dict, per_seed: dict, ontology: str) -> list[str]:
    """The issue's two conditions per method, counted over seeds, and HBCT minus the Euclidean BCT baseline (mean
    and seed by seed: the two share each seed's data, negatives and initial weights)."""
    lines = []
    for name in ("hbct", "l2-bct", "independent"):
        block = summary.get(name, {}).get(ontology, {}).get("ndcg@10")
        if not block:
            continue
        n, base = block["seeds"], block["old->old"]["mean"]
        lines.append(f"- {name}: new->old > old->old (compatible) in {block['compatible_seeds']}/{n} seeds "
                     f"({block['new->old']['mean'] - base:+.4f} ± {block['new->old']['sd']:.4f}); new->new > "
                     f"old->old (upgrade worth having) in {block['upgrade_seeds']}/{n} seeds "
                     f"({block['new->new']['mean'] - base:+.4f} ± {block['new->new']['sd']:.4f}) (nDCG@10, "
                     f"mean difference ± sd over seeds; old->old is one fixed model).")
        lines += _condition_lines(name, per_seed.get(name, {}), ontology)
    hbct, l2 = (summary.get(name, {}).get(ontology, {}).get("ndcg@10") for name in ("hbct", "l2-bct"))
    if hbct and l2:
        seeds = sorted(set(per_seed.get("hbct", {})) & set(per_seed.get("l2-bct", {})), key=int)
        for pair in ("new->old", "new->new"):
            gap = hbct[pair]["mean"] - l2[pair]["mean"]
            differences = [per_seed["hbct"][seed]["matrix"][ontology][pair]["ndcg@10"]
                           - per_seed["l2-bct"][seed]["matrix"][ontology][pair]["ndcg@10"] for seed in seeds]
            lines.append(f"- {pair} nDCG@10, HBCT minus Euclidean BCT: {gap:+.4f} (sd over seeds "
                         f"{hbct[pair]['sd']:.4f} / {l2[pair]['sd']:.4f}; seed by seed "
                         f"{', '.join(f'{d:+.4f}' for d in differences)}).")
    return lines + [""] if lines else []


def _uncertainty_distribution_lines(calibration: dict, first: str = "held-out set") -> list[str]:
    """How much the old model's q varies over its held-out documents: a q that barely varies (or sits at RINCE's
    floor) leaves the calibration test above and the permuted-q control with nothing to measure."""
    rows = []
    for ontology, result in calibration.items():
        spread = result.get("documents")
        if spread:
            d, q = spread["distance"], spread["q"]
            rows.append([ONTOLOGY_NAMES.get(ontology, ontology), spread["n"], f"{d['mean']:.3f} ± {d['sd']:.3f}",
                         f"[{d['p5']:.3f}, {d['p95']:.3f}]", f"{q['mean']:.3f} ± {q['sd']:.3f}",
                         f"{q['p5']:.3f} / {q['p50']:.3f} / {q['p95']:.3f}", f"{spread['share_at_floor']:.1%}"])
    if not rows:
        return []
    header = [first, "documents", "d(o, h_old) mean ± sd", "d 5-95 %", "q mean ± sd", "q 5 / 50 / 95 %",
              "q at RINCE's floor"]
    return ["Distribution of the old model's uncertainty over its held-out documents (q = 1 - tanh(d / sqrt(c))):",
            "", *table(header, rows)]


def _calibration_table(results: dict[str, dict], first: str) -> list[str]:
    """One row per (result, q of the query / of its positive) of ``uncertainty_calibration`` results, by row label;
    ``first``: the first column's header."""
    header = [first, "queries", "old error rate @1", "q of", "mean q ± sd", "Spearman(q, rank)", "95% CI",
              "permuted-q rho (mean ± sd)", "permutation p"]
    rows = []
    for label, result in results.items():
        for which in ("q_query", "q_positive"):
            entry = result[which]
            rows.append([label, result["queries"], f"{result['error_rate_at_1']:.3f}", which.replace("q_", ""),
                         f"{entry['mean']:.3f} ± {entry['sd']:.3f}", f"{entry['spearman']:+.3f}",
                         f"[{entry['ci95'][0]:+.3f}, {entry['ci95'][1]:+.3f}]",
                         f"{entry['permuted_mean']:+.3f} ± {entry['permuted_sd']:.3f}", f"{entry['permutation_p']:.3f}"])
    return table(header, rows)


def render_uncertainty_section(items: list) -> list[str]:
    """Markdown lines for ``compatibility_uncertainty`` results (benchmarks/run_uncertainty_gate.py): does the old
    model's q predict its errors on validation branches, per old recipe and seed (issue 26, before any comparison)."""
    lines = ["## HBCT's uncertainty: does q(h_old) predict the old model's errors? (validation branches)", "",
             "`benchmarks/run_uncertainty_gate.py`: old models trained with HPO validation and test branches held out "
             "(`data.hpo_test_fraction = 0.35`), scored on the validation branches only (held out at 0.35, not "
             "among the test branches at 0.2). q predicts errors in a seed when Spearman(q, rank of the positive) "
             "> 0 with a two-sided permutation p < 0.05; every seed is scored on the same validation queries.", ""]
    for path, payload in items:
        lines += [f"### `{path.name}`", ""]
        header = ["old recipe", "config", "seeds", "sd d(o, h_old) (mean over seeds)", "q of query: predicting "
                  "seeds", "rho mean ± sd", "q of positive: predicting seeds", "rho mean ± sd"]
        rows = []
        for recipe, verdict in payload.get("verdict", {}).items():
            query, positive = verdict["q_query"], verdict["q_positive"]
            rows.append([recipe, f"`{payload['recipes'][recipe]}`", verdict["seeds"], f"{verdict['distance_sd']:.4f}",
                         f"{query['predicting_seeds']}/{verdict['seeds']}",
                         f"{query['rho_mean']:+.3f} ± {query['rho_sd']:.3f}",
                         f"{positive['predicting_seeds']}/{verdict['seeds']}",
                         f"{positive['rho_mean']:+.3f} ± {positive['rho_sd']:.3f}"])
        lines += table(header, rows)
        by_run = {f"{recipe} {seed}": result for recipe, by_seed in payload.get("runs", {}).items()
                  for seed, result in by_seed.items()}
        lines += ["Per old model:", "", *_calibration_table(by_run, "old model")]
        lines += _uncertainty_distribution_lines(by_run, "old model")
        if payload.get("notes"):
            lines += ["Reading:", "", *(f"- {note}" for note in payload["notes"]), ""]
        lines += runs([(path, payload)])
    return lines


def render_upgrade_section(items: list) -> list[str]:
    """Markdown lines for ``compatibility_upgrade`` results (benchmarks/run_compatibility.py)."""
    lines = ["## Backward-compatible upgrades: HBCT vs Euclidean BCT (held-out branches and chapters)", "",
             "`benchmarks/run_compatibility.py`: one OLD model (HyTE-H on the bundled all-MiniLM-L6-v2, or its "
             "Euclidean control in the `euclidean` recipe's file; its config is named per file) is trained once and "
             "held fixed; every NEW model (more data and steps than the old one) must search its index. `a->b` = "
             "queries embedded by a, documents (the index) by b. `independent` = the new model without compatibility "
             "objective (the reference of P_com / P_up); `hbct` = cone + RINCE with q = q(h_old) (the cone's aperture "
             "widened by (1 + q): HyTE's addition, not the seed's); `l2-bct` = the Euclidean BCT baseline (squared L2 "
             "between the new embedding and the old one in the tangent space at the origin, no cone; in the "
             "`euclidean` recipe's file, a Euclidean old and new model, the squared L2 between their unit vectors); "
             "`hbct-*` = ablations. P_com = (M(new,old) - M(old,old)) / (M(ref,ref) - M(old,old)), P_up = M(new,new) / "
             "M(ref,ref) - 1, ref = the same seed's independent run (`hyte.compatibility.evaluation`). Mean ± sd over "
             "seeds.", ""]
    for path, payload in items:
        summary = payload.get("summary", {})
        start = payload.get("new_model", {}).get("start", "fresh")
        seeds = sorted({int(seed) for by in payload.get("per_seed", {}).values() for seed in by})
        origin = ("the old model's weights (continued training)" if start == "old"
                  else "the base encoder, Euclidean models throughout (cosine index; the L2-BCT baseline in its own "
                       "geometry)" if payload.get("recipe") == "euclidean"
                  else "a fresh HyTE-H on the base encoder (a new random projection)")
        overrides = payload.get("new_model", {}).get("overrides") or {}
        changed = ", ".join(f"`{key}={value}`" for key, value in overrides.items())
        changed = f"; new-model config changed: {changed}" if changed else ""
        configs = (f"old model `{payload.get('old_model', {}).get('config', '?')}`, new models "
                   f"`{payload.get('new_model', {}).get('config', '?')}`")
        lines += [f"### `{path.name}`: {configs}; new models start from {origin}; seeds {seeds}{changed}", ""]
        for ontology, title in ONTOLOGY_NAMES.items():
            if not any(ontology in by for by in summary.values()):
                continue
            header = ["variant", "seeds", "old->old nDCG@10", "new->old nDCG@10", "new->new nDCG@10",
                      "new->old R@1", "new->new R@1", "P_com (nDCG)", "P_up (nDCG)"]
            rows = []
            for name, by in summary.items():
                block = by.get(ontology, {})
                ndcg, r1 = block.get("ndcg@10", {}), block.get("recall@1", {})
                rows.append([name, ndcg.get("seeds", "–"), *(_ms(ndcg.get(p)) for p in PAIRS),
                             *(_ms(r1.get(p)) for p in PAIRS[1:]), _ms(ndcg.get("p_com"), 3), _ms(ndcg.get("p_up"), 3)])
            lines += [f"{title}, retrieval:", "", *table(header, rows)]
            header = ["variant", "SpecHR old->old", "SpecHR new->old", "SpecHR new->new", "R@1 old->old",
                      "R@1 new->old", "R@1 new->new"]
            rows = [[name, *(_ms(by.get(ontology, {}).get(metric, {}).get(p))
                             for metric in ("hierarchy_spechr", "hierarchy_recall@1") for p in PAIRS)]
                    for name, by in summary.items()]
            lines += [f"{title}, hierarchy benchmark:", "", *table(header, rows)]
            lines += _verdict(summary, payload.get("per_seed", {}), ontology)
        if payload.get("notes"):  # the reading, written into the JSON after looking at the numbers
            lines += ["Reading:", "", *(f"- {note}" for note in payload["notes"]), ""]
        calibration = payload.get("calibration")
        if calibration:
            lines += ["Calibration (the reviewers' test): Spearman correlation between q(h_old) = 1 - tanh(d(o, "
                      "h_old)) and the old model's per-query error (rank of the positive, 1 = right), for q of the "
                      "query's own old embedding and of its positive document's (the q that training uses); "
                      "control: q permuted across queries.", "",
                      *_calibration_table({ONTOLOGY_NAMES.get(name, name): result
                                           for name, result in calibration.items()}, "held-out set")]
            lines += _uncertainty_distribution_lines(calibration)
        lines += runs([(path, payload)])
    return lines


def render_matrix_section(items: list) -> list[str]:
    """Markdown lines for single ``hyte eval compatibility --output`` results."""
    lines = ["## Compatibility matrices (`hyte eval compatibility`)", ""]
    for path, payload in items:
        models = payload.get("models", {})
        lines += [f"### `{path.name}`: old {models.get('old')}, new {models.get('new')}", ""]
        for ontology, pairs in payload.get("matrix", {}).items():
            metrics = list(pairs.get("old->old", {}))
            rows = [[pair, *(f"{pairs[pair][m]:.4f}" for m in metrics)] for pair in PAIRS]
            gains = payload.get("gains", {}).get(ontology, {})
            for name in ("p_com", "p_up"):
                rows.append([name, *("–" if gains.get(m, {}).get(name) is None else f"{gains[m][name]:.3f}"
                                     for m in metrics)])
            lines += [f"{ONTOLOGY_NAMES.get(ontology, ontology)}:", "", *table(["queries->index", *metrics], rows)]
        lines += runs([(path, payload)])
    return lines
