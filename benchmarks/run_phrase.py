"""H+ phrase-level reranking on HyTE: units at matched budgets, storage and rerank latency (issue 13).

For each trained phrase model (a HyTE-H one, lorentz, and a MiniLM one, euclidean; ``hyte train phrase --config
configs/phrase_hyte_h.yaml`` / ``configs/phrase_euclidean.yaml``) and each held-out set (HPO test branches, ICD-10-CM
test chapters, and the Debian handbook's long documents with several-phrase queries, ``--sets``):

* nDCG@10 / R@10 of global, crf (phrase), token, bigram, random and hybrid at budgets B, all reranking the same
  global top-K (K = 100 and 1000), paired-bootstrap intervals; units at their natural counts under the budget B (the
  seed's main protocol, ``--count cap``) or at the exact-count control (``--count exact``; ``hyte.phrase.evaluation``);
* boundary F1 of the CRF against the trie teacher's labels on the held-out texts, and the teacher's coverage;
* stored vectors and bytes per document of each unit kind (float32 / float16) at B = 32 and natural counts;
* per-query rerank latency (median, p95) at K = 100 and 1000 through ``PhraseIndex.search``, as a ratio to
  global-only search in the same run.

    OMP_NUM_THREADS=1 python benchmarks/run_phrase.py --model lorentz=runs/phrase-hyte-h/final \
        --model euclidean=runs/phrase-euclidean/final --output benchmarks/results/phrase.json
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

import numpy as np
import torch

from hyte.evaluation.metrics import paired_bootstrap
from hyte.phrase.evaluation import UNIT_KINDS, as_phrase_dicts, evaluate_reranking, summarize
from hyte.phrase.loading import load_phrase_model
from hyte.phrase.teacher import boundary_f1, build_trie, coverage, teacher_tags
from hyte.results import machine_info, portable_path, write_result
from hyte.retrieval.phrase import PhraseIndex, PhraseStore

CONTRASTS = (("crf", "global"), ("crf", "token"), ("crf", "bigram"), ("crf", "random"), ("hybrid", "global"),
             ("hybrid", "crf"))


SETS = ("hpo", "icd10", "handbook-long")


def heldout_sets(names, queries: int, documents: int) -> dict:
    """The held-out sets named: HPO test branches and ICD-10-CM test chapters (short texts, ``queries`` over
    ``documents``), and the Debian handbook's long-document set (every query and section it has)."""
    from hyte.data.debian_handbook import handbook_long_retrieval_set
    from hyte.evaluation.heldout import heldout_retrieval_set, icd10_heldout_retrieval_set

    build = {"hpo": lambda: heldout_retrieval_set(queries, documents, seed=0),
             "icd10": lambda: icd10_heldout_retrieval_set(queries, documents, seed=0),
             "handbook-long": handbook_long_retrieval_set}
    return {name: build[name]() for name in names}


def crf_boundary_f1(model, tokenizer, texts: list[str], trie, max_length: int) -> dict:
    """Boundary F1 of the model's CRF units against the trie teacher's units on ``texts``."""
    gold, _ = teacher_tags(texts, tokenizer, trie, max_length)
    predicted, usable = [], []
    for start in range(0, len(texts), 64):
        batch = tokenizer(texts[start:start + 64], padding=True, truncation=True, max_length=max_length,
                          return_tensors="pt")
        with torch.no_grad():
            out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
            tags = model.decode_tags(out, batch["attention_mask"])
        for row in range(len(tags)):
            length = int(batch["attention_mask"][row].sum())
            predicted.append(tags[row, :length].tolist())
            usable.append(out.unit_mask[row, :length].tolist())
    return boundary_f1(predicted, gold, usable)


def storage(model, encoded, budgets=(32, None)) -> dict:
    """{kind: {B or "natural": {"vectors_per_document", "bytes_per_document" per dtype}}} from real stores."""
    out = {}
    for kind in UNIT_KINDS:
        out[kind] = {}
        for budget in budgets:
            entries = as_phrase_dicts(encoded, 10**9 if budget is None else budget, kind)
            row_stats = {}
            for dtype in ("float32", "float16"):
                store = PhraseStore(encoded.units[kind].shape[1], model.config.geometry, float(model.curvature), dtype)
                store.add(np.arange(len(entries)), entries)
                stats = store.stats()
                row_stats[dtype] = {"bytes_per_document": stats["bytes_per_document"],
                                    "unit_bytes_per_document": stats["unit_bytes_per_document"]}
                row_stats["vectors_per_document"] = stats["vectors_per_document"]
            out[kind]["natural" if budget is None else str(budget)] = row_stats
    dim = encoded.globals.shape[1]
    out["global"] = {"1": {"vectors_per_document": 1.0, "float32": {"bytes_per_document": 4.0 * dim}}}
    return out


def latency(model, tokenizer, query_texts: list[str], queries, documents, ks=(100, 1000)) -> dict:
    """Median / p95 milliseconds per query of PhraseIndex.search over the documents (crf units, the model's
    budgets), one query at a time; query encoding is timed apart on the query texts."""
    index = PhraseIndex.create(model, model_name="bench")
    index.add(np.arange(len(documents.globals)), as_phrase_dicts(documents, model.config.document_budget))
    encoded = as_phrase_dicts(queries, model.config.query_budget, flip_globals=model.config.geometry == "lorentz")
    started = time.perf_counter()
    for text in query_texts:
        model.encode_phrases([text], tokenizer, role="query")
    out = {"query_encoding_ms_mean": 1000 * (time.perf_counter() - started) / len(query_texts),
           "documents": len(documents.globals), "queries": len(encoded)}
    for name, rerank, k in [("global", None, 10)] + [(mode, mode, k) for k in ks for mode in ("phrase", "hybrid")]:
        times = []
        for query in encoded:
            started = time.perf_counter()
            index.search([query], k=10, rerank=rerank, k_candidates=k)
            times.append(1000 * (time.perf_counter() - started))
        out[name if rerank is None else f"{name}@{k}"] = {"median_ms": float(np.median(times)),
                                                          "p95_ms": float(np.percentile(times, 95))}
    for key, value in list(out.items()):
        if isinstance(value, dict) and key != "global":
            value["median_ratio_to_global"] = value["median_ms"] / out["global"]["median_ms"]
    return out


def over_seeds(per_seed: dict, budgets, ks) -> dict:
    """{set: {group: {"seeds": n, "K/B/first-second": paired difference}}} for every group of two or more seeds:
    the mean over seeds of each seed's mean nDCG@10 difference, a paired t-test over seeds and a bootstrap interval
    over seeds, then queries (``hyte.evaluation.heldout.paired_difference``: "win"/"loss" only where both exclude 0)."""
    from hyte.evaluation.heldout import paired_difference

    def scored(per_query: dict, k: int, system: str, budget: int) -> dict:
        values = per_query[k][system][0 if system == "global" else budget]["ndcg@10"]
        return {"ndcg@10": float(np.mean(values)), "per_query": {"ndcg@10": list(values)}}

    out = {}
    for set_name, groups in per_seed.items():
        for group, seeds in groups.items():
            if len(seeds) < 2:
                continue
            contrasts = {"seeds": len(seeds)}
            for k in ks:
                for budget in budgets:
                    for first, second in CONTRASTS:
                        contrasts[f"{k}/{budget}/{first}-{second}"] = paired_difference(
                            [scored(p, k, first, budget) for p in seeds],
                            [scored(p, k, second, budget) for p in seeds], "ndcg@10")
            out.setdefault(set_name, {})[group] = contrasts
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", action="append", required=True, metavar="NAME=PATH",
                        help="a phrase model, named (e.g. lorentz=runs/phrase-hyte-h/final); repeatable. Models of one "
                             "recipe trained with several seeds are named GROUP@SEED (hyte-h@0, hyte-h@1, ...): their "
                             "contrasts are also compared over seeds")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--documents", type=int, default=2000)
    parser.add_argument("--budgets", type=int, nargs="+", default=[4, 8, 16, 32, 64])
    parser.add_argument("--k-candidates", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--sets", nargs="+", choices=SETS, default=list(SETS))
    parser.add_argument("--count", choices=["exact", "cap"], default="cap",
                        help="cap: natural units under the budget (the seed's main protocol); exact: the exact-count "
                             "control")
    parser.add_argument("--latency-queries", type=int, default=20, help="queries whose encoding time is measured")
    parser.add_argument("--max-length", type=int, default=512,
                        help="texts are cut to this many tokens (the long documents need up to ~600)")
    parser.add_argument("--boundary-documents", type=int, default=500,
                        help="held-out documents (with every query) on which CRF boundary F1 is measured")
    parser.add_argument("--bootstrap", type=int, default=2000)
    parser.add_argument("--output", required=True)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)

    sets = heldout_sets(args.sets, args.queries, args.documents)
    trie = build_trie(("hpo", "icd10"))
    payload = {"benchmark": "phrase", "setup": {
        "queries": args.queries, "documents": args.documents, "budgets": args.budgets,
        "k_candidates": args.k_candidates, "count": args.count, "bootstrap_samples": args.bootstrap,
        "max_length": args.max_length, "boundary_documents": args.boundary_documents,
        "sets": {name: {"queries": len(s[0]), "documents": len(s[1])} for name, s in sets.items()}},
        "models": {}, "runs": {}, "boundary_f1": {}, "coverage": {}, "storage": {}, "latency": {}}
    per_seed: dict[str, dict[str, list]] = {}  # set -> group -> each seed's per-query metrics, in --model order
    for spec in args.model:
        name, _, path = spec.partition("=")
        model, tokenizer = load_phrase_model(path)
        card_path = Path(path) / "hyte_card.json"
        card = json.loads(card_path.read_text()) if card_path.is_file() else {}
        payload["models"][name] = {"path": portable_path(path), "geometry": model.config.geometry,
                                   "training_steps": card.get("training", {}).get("steps")}
        encoded = {}
        for set_name, (queries, corpus, qrels) in sets.items():
            started = time.perf_counter()
            result = evaluate_reranking(model, tokenizer, queries, corpus, qrels, budgets=args.budgets,
                                        k_candidates=args.k_candidates, count=args.count,
                                        max_length=args.max_length)
            encoded[set_name] = result.pop("encoded")
            per_query = result["per_query"]
            intervals = {}
            for k in args.k_candidates:
                for budget in args.budgets:
                    for first, second in CONTRASTS:
                        a = per_query[k][first][budget]["ndcg@10"]
                        b = per_query[k][second][0 if second == "global" else budget]["ndcg@10"]
                        intervals[f"{k}/{budget}/{first}-{second}"] = paired_bootstrap(a, b, args.bootstrap)
            per_seed.setdefault(set_name, {}).setdefault(name.partition("@")[0], []).append(per_query)
            payload["runs"].setdefault(set_name, {})[name] = {
                "summary": summarize(result), "intervals": intervals,
                "candidate_recall": result["candidate_recall"],
                "vectors_per_document": result["vectors_per_document"],
                "natural_units_per_document": result["natural_units_per_document"],
                "natural_units_per_query": result["natural_units_per_query"],
                "seconds": time.perf_counter() - started}
            texts = list(corpus.values())[: args.boundary_documents] + list(queries.values())
            payload["boundary_f1"].setdefault(set_name, {})[name] = crf_boundary_f1(model, tokenizer, texts, trie,
                                                                                      args.max_length)
            print(f"{name} {set_name}: done in {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
        first = next(iter(sets))  # storage and latency on the first set named (HPO by default)
        payload["storage"][name] = storage(model, encoded[first][1])
        payload["latency"][name] = latency(model, tokenizer, list(sets[first][0].values())[: args.latency_queries],
                                           *encoded[first], ks=args.k_candidates)
    payload["over_seeds"] = over_seeds(per_seed, args.budgets, args.k_candidates)
    payload["over_seeds_interval"] = ("seeds, then queries within each "
                                      "(hyte.evaluation.metrics.seed_then_query_bootstrap)")
    for set_name, (queries, corpus, _) in sets.items():
        payload["coverage"][set_name] = {"documents": coverage(list(corpus.values()), tokenizer, trie),
                                         "queries": coverage(list(queries.values()), tokenizer, trie)}
    payload["meta"] = {"command": "python benchmarks/run_phrase.py " + " ".join(
        shlex.quote(portable_path(a)) for a in (argv if argv is not None else sys.argv[1:])), **machine_info()}
    write_result(args.output, payload, keep=("notes",))  # the hand-written reading stays until it is edited
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
