"""Recompute the paired-difference intervals of committed results with the current bootstrap, without retraining.

    python benchmarks/recompute_intervals.py

The paired difference between two models (``hyte.evaluation.heldout.paired_difference``, through ``compare_models``)
now takes its 95 % interval from a bootstrap that resamples training seeds, then queries within each drawn seed
(``hyte.evaluation.metrics.seed_then_query_bootstrap``). Results written before that change hold intervals from the
old bootstrap, which resampled (seed, query) pairs as if independent and so gave intervals too narrow. Those results
store every seed's per-query values, so their comparison blocks are recomputed here from the file itself:

* specificity.json, specificity_round2.json: ``comparison`` as ``run_specificity.py test`` computes it;
* from_scratch_mlm8000.json: ``comparison_gated`` as ``run_from_scratch.py`` computes it.

Before a file is rewritten, every stored field of each comparison but the interval and the verdict (the mean
difference, the per-seed differences, the t-test, the number of pairs) must come out exactly as stored; otherwise
that file is left as it is (exit status 1). Only those blocks change, and a top-level "intervals_recomputed" field
records when and how; the file is replaced through ``hyte.results.write_result``.

Not recomputed: phrase_hyte_h_seeds.json's ``over_seeds`` (run_phrase.py keeps only per-seed means and intervals,
not the per-query values); from_scratch.json holds no comparison; phrase_hyte_h.json, phrase_euclidean.json and
the compatibility_*.json results hold intervals over the queries of one model (one seed) only, which the change
does not touch.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from hyte.evaluation.heldout import compare_models
from hyte.results import write_result

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run_from_scratch  # noqa: E402  (its _comparison and _gated_seeds: the seeds and models it compares)

RESULTS = Path(__file__).resolve().parent / "results"
CHANGED = ("bootstrap_low", "bootstrap_high", "verdict")  # all other fields must be reproduced exactly
RECORD = {"date": time.strftime("%Y-%m-%d"), "command": "python benchmarks/recompute_intervals.py",
          "method": "seeds, then queries within each seed (hyte.evaluation.metrics.seed_then_query_bootstrap)"}


def specificity(result: dict) -> dict:
    return {"comparison": compare_models(result["runs"]["hyte-h"], result["runs"]["euclidean"])}


def from_scratch(result: dict) -> dict:
    runs = result["runs"]
    return {"comparison_gated": run_from_scratch._comparison(runs, run_from_scratch._gated_seeds(runs))}


TARGETS = {"specificity.json": specificity, "specificity_round2.json": specificity,
           "from_scratch_mlm8000.json": from_scratch}


def mismatches(stored: dict, fresh: dict) -> list[str]:
    """What differs between a stored and a recomputed comparison block, apart from the interval and verdict."""
    if stored.keys() != fresh.keys():
        return [f"sets {sorted(stored)} != {sorted(fresh)}"]
    problems = []
    for name, by_key in stored.items():
        if by_key.keys() != fresh[name].keys():
            problems.append(f"{name}: metrics {sorted(by_key)} != {sorted(fresh[name])}")
            continue
        for key, old in by_key.items():
            new = fresh[name][key]
            problems += [f"{name} {key} {field}: stored {old.get(field)!r}, recomputed {new.get(field)!r}"
                         for field in sorted(old.keys() | new.keys()) if field not in CHANGED
                         and old.get(field) != new.get(field)]
    return problems


def main() -> int:
    failed = False
    for filename, recompute in TARGETS.items():
        path = RESULTS / filename
        result = json.loads(path.read_text(encoding="utf-8"))
        blocks = recompute(result)
        problems = [f"{block}: {p}" for block, fresh in blocks.items() for p in mismatches(result[block], fresh)]
        if problems:
            failed = True
            print(f"{filename}: NOT rewritten, the recomputation does not reproduce it:\n  " + "\n  ".join(problems))
            continue
        for block, fresh in blocks.items():
            for name, by_key in fresh.items():
                for key, new in by_key.items():
                    old = result[block][name][key]
                    print(f"{filename} {block} {name:9} {key:8} {new['mean_difference']:+.4f}  "
                          f"old [{old['bootstrap_low']:+.4f}, {old['bootstrap_high']:+.4f}] {old['verdict']:4}  "
                          f"new [{new['bootstrap_low']:+.4f}, {new['bootstrap_high']:+.4f}] {new['verdict']}")
        write_result(path, {**result, **blocks, "intervals_recomputed": RECORD})
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
