"""The phrase parts of the ``hyte`` command (wired in ``hyte.cli`` and ``hyte.evaluation.commands``):

    hyte index build --phrase --model PHRASE_MODEL --input F --output DIR [--phrase-dtype float16]
    hyte index search --index DIR --model PHRASE_MODEL --query TEXT --rerank phrase|hybrid|lexical [--k-candidates K]
    hyte eval retrieval --model PHRASE_MODEL --data BEIR --rerank phrase|hybrid|token|bigram|random --budget B
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

# `hyte eval retrieval --rerank` names -> evaluation systems (hyte.phrase.evaluation.SYSTEMS).
EVAL_RERANK = {"phrase": "crf", "hybrid": "hybrid", "token": "token", "bigram": "bigram", "random": "random"}


def load_phrase_model(path: str):
    """(HyTEPhraseModel, tokenizer) from a folder or hub id; a clear error when it is another kind of model."""
    from transformers import AutoModel, AutoTokenizer

    from .. import auto_classes  # noqa: F401  (the installed HyTE code serves HyTE checkpoints)
    from ..bundled import resolve_model
    from ..modeling_hyte_phrase import HyTEPhraseModel

    resolved = resolve_model(path)
    model = AutoModel.from_pretrained(resolved, trust_remote_code=True)
    if not isinstance(model, HyTEPhraseModel):
        raise ValueError(f"{path} is a {type(model).__name__}, not a phrase model: phrase indexes and reranking need "
                         "a model trained with `hyte train phrase` (or HyTEPhraseModel.from_backbone)")
    return model.eval(), AutoTokenizer.from_pretrained(resolved, trust_remote_code=True)


def _trie_override(args: argparse.Namespace, texts: list[str], tokenizer, max_length: int | None = None) -> dict:
    """``{"override": ...}`` for encode_phrases when ``--trie`` was given (the HPO + ICD-10-CM terminology trie
    overrides the CRF inside its matches, the paper's optional inference-time override), else ``{}``."""
    if not getattr(args, "trie", False):
        return {}
    from .teacher import build_trie, teacher_tags

    tags, covered = teacher_tags(texts, tokenizer, build_trie(), max_length)
    return {"override": list(zip(tags, covered))}


def index_build(args: argparse.Namespace) -> int:
    """``hyte index build --phrase``: global index + phrase store of the documents, saved together atomically."""
    from ..cli import UserError, read_texts
    from ..rag import write_documents
    from ..retrieval.phrase import PhraseIndex

    texts, ids = read_texts(args.input)
    if not texts:
        raise UserError(f"{args.input} holds no texts")
    model, tokenizer = load_phrase_model(str(args.model))
    index = PhraseIndex.create(model, kind=args.kind, dtype=args.phrase_dtype, model_name=str(args.model))
    index.add_texts(model, tokenizer, texts, ids=list(range(len(texts))), batch_size=args.batch_size,
                    max_length=args.max_length, **_trie_override(args, texts, tokenizer, args.max_length))
    index.save(args.output)
    write_documents(args.output, [{"id": i if ids is None else ids[i], "text": text} for i, text in enumerate(texts)])
    stats = index.store.stats()
    print(f"indexed {len(index)} documents in {args.output}: global index ({args.kind}) + phrase store "
          f"({stats['vectors_per_document']:.1f} unit vectors and {stats['bytes_per_document']:.0f} bytes per "
          f"document, {args.phrase_dtype})")
    return 0


def index_search(args: argparse.Namespace) -> int:
    """``hyte index search`` on a phrase index, optionally reranked."""
    from ..cli import UserError, print_hits, read_texts
    from ..retrieval.phrase import PhraseIndex

    index = PhraseIndex.load(args.index)
    if args.check_model and index.model_name is not None and index.model_name != str(args.model):
        raise UserError(f"{args.index} was built with {index.model_name}, not {args.model}; phrase vectors of "
                        "different models are not comparable (--no-check-model to search anyway)")
    model, tokenizer = load_phrase_model(str(args.model))
    documents_file = Path(args.index) / "documents.jsonl"
    documents = ([json.loads(line) for line in documents_file.open(encoding="utf-8")]
                 if documents_file.is_file() else None)
    queries = [args.query] if args.query is not None else read_texts(args.queries)[0]
    scores, found = index.search_texts(model, tokenizer, queries, k=args.k, rerank=args.rerank,
                                       k_candidates=args.k_candidates, **_trie_override(args, queries, tokenizer))
    print_hits(queries, found, scores, documents, "global" if args.rerank is None else args.rerank)
    return 0


def eval_retrieval(args: argparse.Namespace) -> int:
    """``hyte eval retrieval --rerank ...``: global vs one reranking system on a BEIR folder at budget B."""
    from ..evaluation.beir import load_beir
    from ..evaluation.commands import _command_line, _label, machine_info, write_json
    from ..provenance import portable_path
    from .evaluation import evaluate_reranking, summarize

    queries, corpus, qrels = load_beir(args.data, args.split)
    model, tokenizer = load_phrase_model(str(args.model))
    budget = args.budget or model.config.document_budget
    system = EVAL_RERANK[args.rerank]
    result = evaluate_reranking(model, tokenizer, queries, corpus, qrels, systems=("global", system),
                                budgets=(budget,), k_candidates=(args.k_candidates,), count=args.count,
                                batch_size=args.batch_size, max_length=args.max_length)
    table = summarize(result)[args.k_candidates]
    results = {"global": table["global"][0], args.rerank: table[system][budget]}
    print(f"{_label(args.model, args.label)} on {args.data} ({args.split}: {len(queries)} queries, {len(corpus)} "
          f"documents, {model.config.geometry}); rerank {args.rerank} of the global top {args.k_candidates}, budget "
          f"{budget} ({args.count} count)")
    for name, metrics in results.items():
        print(f"  {name:8} nDCG@10 {metrics['ndcg@10']:.4f}  R@10 {metrics['recall@10']:.4f}")
    if args.output:
        kind = "crf" if system == "hybrid" else system
        payload = {"benchmark": "retrieval-rerank", "model": portable_path(args.model),
                   "label": _label(args.model, args.label), "geometry": model.config.geometry,
                   "data": portable_path(args.data), "split": args.split, "rerank": args.rerank, "budget": budget,
                   "k_candidates": args.k_candidates, "count": args.count, "results": results,
                   "candidate_recall": result["candidate_recall"][args.k_candidates],
                   "vectors_per_document": result["vectors_per_document"][kind][budget],
                   "meta": {"command": _command_line(args, ["eval", "retrieval"]), **machine_info()}}
        print(f"wrote {write_json(args.output, payload)}")
    return 0


__all__ = ["EVAL_RERANK", "eval_retrieval", "index_build", "index_search", "load_phrase_model"]
