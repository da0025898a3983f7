"""BENCHMARKS.md section of a user's own hierarchy (issue 44): ``benchmarks/run_taxonomy.py``'s study (HyTE-H, its
Euclidean control, HiT and the base under HiT's protocol, seeds with a paired interval) and single
``hyte eval taxonomy`` results."""

from __future__ import annotations

import math
import statistics
from pathlib import Path

from ..markdown import number, percent, runs, table

# benchmarks/run_taxonomy.py's taxonomies (another name is shown as it is).
TAXONOMY_TITLES = {"hpo": "HPO (the Human Phenotype Ontology)",
                   "icd10": "ICD-10-CM, chapters to 4-character subcategories",
                   "hscodes": "the Harmonized System's customs product classification"}
ARM_TITLES = {"hyte": "HyTE-H", "euclidean": "Euclidean control", "hit": "HiT (hierarchy-transformers 0.1.1)",
              "base": "all-MiniLM-L6-v2 (untrained)"}
# The knobs run_taxonomy's selection can vary, as the report names them.
KNOB_TITLES = {"learning_rate": "learning rate", "margin_scale": "order margin",
               "contrast_scale": "contrast (temperature; HiT: clustering margin)"}


def care(payload: dict, study: dict) -> str:
    """What tuning the arms of a taxonomy study got (the same for each, or none), and HyTE-H's recipe where it has its
    specificity head."""
    head = payload.get("hyte_radius_head")
    recipe = (f"HyTE-H with its specificity head from radius {head['radius']:g}, head learning rate "
              f"{head['learning_rate']:g}; " if head else "")
    if not study.get("selection"):
        return recipe + "neither tuned"
    varied = study["selection"].get("varied") or _varied_by_keys(study["selection"]["arms"].values())
    titles = [KNOB_TITLES[knob] for knob in varied]
    chosen = " and ".join([", ".join(titles[:-1]), titles[-1]] if len(titles) > 1 else titles)
    if "learning_rate" in varied:
        return recipe + f"each arm's {chosen} chosen on validation"
    rate = next(iter(study["selection"]["arms"].values()))["chosen"]  # the one candidate, chosen by every arm
    return recipe + f"learning rate {rate:g} for all, each arm's {chosen} chosen on validation"


def _varied_by_keys(records) -> list[str]:
    """The knobs a selection recorded before it named them: a candidate's key is its learning rate, then
    ", margin x<scale>" where the scale is not 1."""
    rates = {key.split(",")[0] for record in records for key in record["validation_f1"]}
    margins = any("chosen_margin_scale" in record for record in records)
    return ["learning_rate"] * (len(rates) > 1) + ["margin_scale"] * margins


def _knobs(learning_rate, margin_scale, contrast_scale=None) -> str:
    """An arm's chosen knobs as the tables show them: the learning rate, and the scales other than 1."""
    if not isinstance(learning_rate, float):
        return "–"
    return f"{learning_rate:g}" + "".join(f", {kind} ×{scale:g}" for kind, scale in (("margin", margin_scale),
                                                                                    ("contrast", contrast_scale))
                                          if scale not in (None, 1.0))


def _chosen_knobs(record: dict) -> str:
    return _knobs(record["chosen"], record.get("chosen_margin_scale"), record.get("chosen_contrast_scale"))


def newest_first(studies: list[tuple[Path, dict]]) -> list[tuple[Path, dict]]:
    """``benchmarks/run_taxonomy.py``'s results, the newest run first (a later study answers before an earlier)."""
    return sorted(studies, key=lambda item: str((item[1].get("meta") or {}).get("date")), reverse=True)


def _mean_sd(values: list[float]) -> str:
    # A run trained before step times were kept has none (NaN, written to JSON as null).
    values = [v for v in values if v is not None and not math.isnan(v)]
    if not values:
        return "–"
    if len(values) == 1:
        return number(values[0])
    return f"{statistics.fmean(values):.4f} ± {statistics.stdev(values):.4f}"


def _study_lines(path: Path, payload: dict) -> list[str]:
    lines = []
    for name, study in payload["taxonomies"].items():
        # A round judged on fresh test edges (run_taxonomy --fresh-against) keeps the full test's F1 beside them.
        fresh = any("full_test" in s["prediction"]["hard"] for seeds in study["arms"].values() for s in seeds)
        rows = []
        for arm, seeds in study["arms"].items():
            rate = seeds[0].get("learning_rate", payload.get("learning_rate")) if arm != "base" else None
            rows.append([ARM_TITLES.get(arm, arm), len(seeds), _knobs(rate, seeds[0].get("margin_scale"),
                                                                    seeds[0].get("contrast_scale")),
                         _mean_sd([s["prediction"]["hard"]["f1"] for s in seeds]),
                         *([_mean_sd([s["prediction"]["hard"]["full_test"]["f1"] for s in seeds])] if fresh else []),
                         _mean_sd([s["prediction"]["random"]["f1"] for s in seeds]),
                         _mean_sd([s["parent_ranking_distance"]["mrr"] for s in seeds]),
                         _mean_sd([s["seconds_per_step"] for s in seeds])])
        lines += [(f"**{name}, {care(payload, study)}** (`{path.name}`): {TAXONOMY_TITLES.get(name, name)} "
                   f"({study['concepts']} concepts; {payload['split']} split drawn per seed; {payload['steps']} steps "
                   f"of {payload['batch']}; primary metric: {payload['primary_metric']}):"),
                  "", *table(["arm", "seeds", "learning rate (scales)",
                              "F1, hard negatives" + (" (fresh test edges)" if fresh else ""),
                              *(["F1, hard negatives (all test edges)"] if fresh else []),
                              "F1, random negatives", "parent MRR (distance)", "s / step"], rows)]
        if study.get("selection"):
            chosen = study["selection"]
            lines += ["", (f"Knobs chosen per arm on the validation edges of seed {chosen['seed']}'s split "
                           "(no test seed's), validation F1 with hard negatives per candidate: " + "; ".join(
                               f"{ARM_TITLES.get(arm, arm)} " + "; ".join(f"{rate} {f1:.4f}" for rate, f1 in
                                                                          record["validation_f1"].items())
                               + f" (chose {_chosen_knobs(record)})"
                               for arm, record in chosen["arms"].items()) + ".")]
        verdicts = [[f"HyTE-H − {ARM_TITLES.get(pair.split(' - ')[1], pair)}", f"{c['mean_difference']:+.4f}",
                     f"[{c['interval_95'][0]:+.4f}, {c['interval_95'][1]:+.4f}]", c["verdict"]]
                    for pair, c in study["comparisons"].items()]
        if verdicts:
            lines += ["", *table(["hard-negative F1 difference", "mean over seeds",
                                  "95 % interval (seeds, then questions)", "verdict"], verdicts)]
        lines += [""]
    return lines


def taxonomy_section(items: list[tuple[Path, dict]]) -> list[str]:
    studies = [(p, payload) for p, payload in items if payload["benchmark"] == "taxonomy-study"]
    singles = [(p, payload) for p, payload in items if payload["benchmark"] == "taxonomy"]
    lines = ["## Your own hierarchy: HiT's protocol", "",
             ("Subsumption prediction as HiT (He et al., NeurIPS 2024) judges it: each held-out (child, parent) with "
              "its random or hard (sibling-first) negatives, scored −(d(child, parent) + λ (‖parent‖ − ‖child‖)); λ "
              "and the threshold chosen by F1 on validation, applied to test. Parent ranking: the parent's rank among "
              "all concepts by distance, the child's other ancestors left out."), ""]
    for path, payload in newest_first(studies):
        lines += _study_lines(path, payload)
    if singles:
        rows = [[payload.get("label"), Path(str(payload.get("data"))).name, payload["split"], payload["geometry"],
                 *(number(payload["prediction"][kind]["f1"]) if kind in payload["prediction"] else "–"
                   for kind in ("hard", "random")),
                 percent(payload.get("parent_nearer_origin"))]
                for _, payload in singles]
        lines += ["Single evaluations (`hyte eval taxonomy`):", "",
                  *table(["model", "taxonomy", "split", "geometry", "F1 hard", "F1 random", "parent nearer origin"],
                         rows), ""]
    return lines + runs(items)
