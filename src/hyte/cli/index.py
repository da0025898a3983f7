"""``hyte encode`` and ``hyte index build | search``: vectors to files, index folders (``hyte.retrieval.folder``).

Plain and phrase index folders are one format: search opens either, checks the query model's lineage against the
folder's model the same way, and prints the documents' texts stored beside the vectors.
"""

from __future__ import annotations

import argparse

from ..artifacts import KINDS, claim_file, claim_folder, holds
from ..io import check_only_owned, read_texts, write_vectors
from .common import (INDEX_MODEL_HELP, MODEL_HELP, UserError, k_within, note_truncated, positive_float,
                     positive_int, print_hits, queries_of, refuse_unused, truncation_note)

__all__ = ["add_commands", "add_index_options", "open_searcher"]

KEPT = " (documents.jsonl keeps the full text)"  # what an index folder keeps of a text cut to the model's tokens


def _encode(args: argparse.Namespace) -> int:
    import numpy as np

    from ..encoders import load_encoder

    if (args.input is None) == (args.corpus is None):
        both = args.input is not None
        raise UserError(f"{'--input and --corpus both name the texts: ' if both else ''}give --input FILE (vectors to "
                        "one .npy/.safetensors file) or --corpus FILE (vector shards in the folder --output, "
                        f"resumable, optionally on Ray){', not both' if both else ''}")
    for option, value in (("--input", args.input), ("--corpus", args.corpus)):
        if value is not None and not value.strip():  # Path("") is the current folder: "is a folder" misled
            raise UserError(f"{option} is empty: give the .txt or .jsonl file of texts")
    if args.corpus is not None:
        return _encode_corpus(args)
    refuse_unused(args, ("--ray", "--shard-size", "--ray-workers"), "a --corpus encoded into shards",
                  "--input writes one file. Give --corpus instead of --input, or leave them out")
    claim_file(args.output, (".npy", ".safetensors"), what="the vectors", example="vectors.npy",
               overwrite=args.overwrite, option="--output")
    texts, _ = read_texts(args.input)
    encoder = load_encoder(args.model, max_length=args.max_length)
    vectors = encoder.encode(texts, role=args.role, batch_size=args.batch_size, show_progress_bar=True)
    note_truncated(encoder, texts)
    write_vectors(args.output, vectors, {"model": str(args.model), "role": args.role, "kind": encoder.kind,
                                         "curvature": str(encoder.curvature), "similarity": encoder.similarity})
    print(f"wrote {vectors.shape[0]} x {vectors.shape[1]} {args.role} vectors to {args.output}")
    if encoder.similarity == "cosine" and not np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4):
        print("note: the model compares these vectors by cosine, and they keep their norms (EucBERT's specificity "
              "signal): scale them to unit length before an inner-product search")
    return 0


def _encode_corpus(args: argparse.Namespace) -> int:
    from ..corpus import encode_corpus

    if args.role != "document":
        raise UserError("--corpus encodes documents; query vectors go to one file (--input)")
    if args.ray is None:
        refuse_unused(args, ("--ray-workers",), "--ray ADDRESS (encoder actors on a Ray cluster)", "add --ray")
    sizes = {name: value for name, value in (("shard_size", args.shard_size), ("workers", args.ray_workers))
             if value is not None}  # encode_corpus's defaults otherwise
    done = encode_corpus(args.model, args.corpus, args.output, batch_size=args.batch_size, max_length=args.max_length,
                         ray_address=args.ray, overwrite=args.overwrite, **sizes)
    kept = done.shards - done.encoded
    print(f"{done.documents} documents in {done.shards} shards in {done.output}: encoded {done.encoded}"
          + (f", kept {kept} complete from an earlier run" if kept else "")
          + f"{' on Ray at ' + args.ray if args.ray else ''}. Load them with: hyte index build --from-vectors "
          f"{done.output} --output INDEX_DIR (or --backend pgvector ...)")
    truncation_note(done.truncated, done.documents, done.token_limit, " (the shards keep the full text)")
    return 0


def _trie_override(args: argparse.Namespace, texts: list[str], tokenizer, max_length: int | None = None) -> dict:
    """``{"override": ...}`` for encode_phrases when ``--trie`` was given (the HPO + ICD-10-CM terminology trie
    overrides the CRF inside its matches, the paper's optional inference-time override), else ``{}``."""
    if not getattr(args, "trie", False):
        return {}
    from ..phrase.teacher import build_trie, teacher_tags

    tags, covered = teacher_tags(texts, tokenizer, build_trie(), max_length)
    return {"override": list(zip(tags, covered))}


def _check_destination(args: argparse.Namespace) -> None:
    """Before anything is read or encoded: the pgvector table is free (or --overwrite), or --output can take the index
    folder: an existing index folder is replaced only with --overwrite, anything else never."""
    if args.backend == "pgvector":
        from ..retrieval.postgres import PgVectorIndex

        PgVectorIndex.check_table_free(args.dsn, args.table, args.overwrite)
        return
    # An index in a model folder would be uploaded with it by hyte push, documents and all.
    path = claim_folder(args.output, option="--output", replaces="index",
                        remedy="the index's own folder: new, empty, or an earlier index; e.g. beside the model")
    if not path.exists() or path.is_dir() and not any(path.iterdir()):
        return
    if not holds(path, "index"):
        raise UserError(f"--output {args.output} exists and is not an index folder: choose a new or empty folder")
    if not args.overwrite:
        raise UserError(f"--output {args.output} already holds an index: pass --overwrite to replace it (atomically, "
                        "once the new one is complete) or choose another folder")
    try:
        check_only_owned(path, KINDS["index"].entries, "index folder")
    except FileExistsError as error:
        raise UserError(f"--output {error}") from None


def _check_backend(args: argparse.Namespace) -> None:
    """--output for a folder index, --dsn and --table for pgvector: the one pair that fits --backend."""
    if args.backend == "pgvector":
        missing = [option for option, value in (("--dsn", args.dsn), ("--table", args.table)) if value is None]
        if missing:
            raise UserError(f"--backend pgvector needs {' and '.join(missing)} (e.g. --dsn "
                            "postgresql://USER@HOST:5432/DB --table NAME; `hyte postgres start` makes a local server)")
        if args.output is not None or args.phrase:
            raise UserError(f"{'--output' if args.output is not None else '--phrase'} is for folder indexes; "
                            "--backend pgvector writes to --dsn/--table")
        if args.kind == "ivf":
            raise UserError("--backend pgvector takes --kind exact (= flat) or hnsw; not ivf")
        args.kind = "exact" if args.kind == "flat" else args.kind
        if args.max_norm is not None and args.kind != "hnsw":
            raise UserError("--max-norm bounds the augmented vectors of --kind hnsw; an exact table has none: drop it "
                            "or add --kind hnsw")
        return
    refuse_unused(args, ("--dsn", "--table", "--max-norm"), "--backend pgvector", "add it, or leave them out")
    if args.output is None:
        raise UserError("--output is required: the index folder to write (or --backend pgvector --dsn ... --table ...)")
    if args.kind == "exact":
        args.kind = "flat"


def _index_build(args: argparse.Namespace) -> int:
    if not args.phrase and (args.trie or args.phrase_dtype != "float32"):
        raise UserError(f"{'--trie' if args.trie else '--phrase-dtype'} is for phrase indexes: add --phrase (and a "
                        "phrase model)")
    _check_backend(args)
    if (args.input is None) == (args.from_vectors is None):
        both = args.input is not None  # the message read as if neither had been given
        raise UserError(f"{'--input and --from-vectors both name the documents: ' if both else ''}give the documents: "
                        "--input FILE (encoded now with --model) or --from-vectors DIR (shards from hyte encode "
                        f"--corpus){', not both' if both else ''}")
    if args.from_vectors is not None:
        return _index_build_from_vectors(args)
    if args.model is None:
        raise UserError("--model is required with --input: the HyTE model that encodes the documents")
    _check_destination(args)
    texts, ids = read_texts(args.input)
    if args.phrase:  # global index + phrase store (H+)
        from ..encoders import PhraseEncoder
        from ..phrase.loading import load_phrase_model
        from ..retrieval.folder import build_phrase_index_folder

        model, tokenizer = load_phrase_model(str(args.model))
        folder = build_phrase_index_folder(
            model, tokenizer, texts, args.output, ids=ids, kind=args.kind, dtype=args.phrase_dtype,
            model_name=str(args.model), batch_size=args.batch_size, max_length=args.max_length,
            overwrite=args.overwrite, **_trie_override(args, texts, tokenizer, args.max_length))
        note_truncated(PhraseEncoder(model, tokenizer, max_length=args.max_length), texts, KEPT)
        stats = folder.index.store.stats()
        print(f"indexed {len(folder.index)} documents in {args.output}: global index ({args.kind}) + phrase store "
              f"({stats['vectors_per_document']:.1f} unit vectors and {stats['bytes_per_document']:.0f} bytes per "
              f"document, {args.phrase_dtype})")
        return 0
    from ..encoders import load_encoder

    encoder = load_encoder(args.model, kind="hyte", max_length=args.max_length)
    if args.backend == "pgvector":
        from ..retrieval.postgres import build_pgvector_index, redacted

        with build_pgvector_index(encoder, texts, args.dsn, args.table, ids=ids, kind=args.kind,
                                  max_norm=args.max_norm, overwrite=args.overwrite, batch_size=args.batch_size,
                                  show_progress_bar=True) as index:
            count, where = len(index), f"table {args.table} of {redacted(index.dsn)}" + _recall_note(index)
        kept = " (the table keeps the full text)"
    else:
        from ..retrieval.folder import build_index_folder

        index = build_index_folder(encoder, texts, args.output, ids=ids, kind=args.kind, batch_size=args.batch_size,
                                   show_progress_bar=True, overwrite=args.overwrite).index
        count, where, kept = len(index), args.output + _recall_note(index), KEPT
    note_truncated(encoder, texts, kept)
    print(f"indexed {count} documents ({args.kind}) in {where}")
    return 0


def _index_build_from_vectors(args: argparse.Namespace) -> int:
    from ..corpus import read_vector_shards

    if args.phrase:
        raise UserError("--from-vectors holds one vector per document; a phrase index is built with --input")
    if args.model is not None:
        raise UserError("--from-vectors records the model the shards were encoded with; leave out --model")
    _check_destination(args)
    manifest, _, documents, vectors = read_vector_shards(args.from_vectors)
    options = {"model_name": manifest["model"], "model_fingerprint": manifest["model_fingerprint"]}
    if args.backend == "pgvector":
        from ..retrieval.postgres import PgVectorIndex, redacted

        with PgVectorIndex.create(args.dsn, args.table, manifest["dim"], manifest["curvature"], args.kind,
                                  max_norm=args.max_norm, overwrite=args.overwrite, points=vectors,
                                  documents=documents, **options) as index:
            where = f"table {args.table} of {redacted(index.dsn)}" + _recall_note(index)
    else:
        from ..retrieval.folder import write_index_folder
        from ..retrieval.index import LorentzIndex

        index = LorentzIndex(manifest["dim"], manifest["curvature"], kind=args.kind, **options)
        index.add(vectors)
        write_index_folder(args.output, index, documents, overwrite=args.overwrite)
        where = args.output + _recall_note(index)
    print(f"indexed {len(documents)} documents ({args.kind}) from the vector shards in {args.from_vectors}, without "
          f"encoding, in {where}")
    return 0


def _recall_note(index) -> str:
    """For an approximate index, the recall@10 it reaches against exact search on 200 of its own documents."""
    if index.is_exact:
        return ""
    return f"; measured recall@10 against exact search: {index.measure_recall(k=10, sample=200):.3f}"


def add_index_options(parser: argparse.ArgumentParser) -> None:
    """The options ``open_searcher`` reads: the index (a folder, or a pgvector table) and the query model."""
    parser.add_argument("--index", default=None, help="index folder from hyte index build (holds the texts)")
    parser.add_argument("--dsn", default=None, help="instead of --index: a pgvector index's server (with --table), "
                                                    "postgresql://USER@HOST:PORT/DATABASE")
    parser.add_argument("--table", default=None, help="a pgvector index's table name")
    parser.add_argument("--model", default=None, help=INDEX_MODEL_HELP)
    parser.add_argument("--no-check-model", dest="check_model", action="store_false",
                        help="experts: allow a query model that is neither the index's model nor declared "
                             "compatible with it (hyte train compatible); same dimension and curvature still required")


def open_searcher(args: argparse.Namespace):
    """The searcher --index or --dsn/--table names (exactly one of them), with --model or the index's own model."""
    from ..retrieval.searcher import HyteSearcher

    if args.index is not None and args.dsn is not None:
        raise UserError("--index and --dsn both name an index: give one of them (--index FOLDER, or --dsn DSN "
                        "--table NAME for a pgvector index)")
    if args.index is None and args.dsn is None:
        raise UserError("give the index to search: --index FOLDER, or --dsn DSN --table NAME for a pgvector index")
    if args.dsn is not None:
        if args.table is None:
            raise UserError("--dsn needs --table: the name the index was built with")
        return HyteSearcher.from_pgvector(args.dsn, args.table, args.model, check_model=args.check_model)
    if args.table is not None:
        raise UserError("--table goes with --dsn (a pgvector index); --index names a folder")
    return HyteSearcher.from_folder(args.index, args.model, check_model=args.check_model)


# Below this sd of the candidates' specificity, "broader" and "narrower" are decided by radius differences as small as
# the shipped quickstart model's whole spread (sd 0.025-0.030, issue 45): the filter then splits near-equals.
SPREAD_TOO_SMALL = 0.05


def _print_passages(searcher, queries: list[str], args: argparse.Namespace) -> None:
    import numpy as np

    own = searcher.specificity(queries)
    spreads = ([float(np.std([p.specificity for p in hits])) for hits in searcher.search_batch(
        queries, args.k_candidates)] if args.relation else [None] * len(queries))
    for query, passages, specificity, spread in zip(
            queries, searcher.search_batch(queries, args.k, relation=args.relation,
                                           candidates=args.k_candidates if args.relation else None), own, spreads):
        print(f"query: {query}  spec={specificity:.3f}" + (f"  ({args.relation} hits only)" if args.relation else ""))
        if spread is not None and spread < SPREAD_TOO_SMALL:
            print(f"  note: the {args.k_candidates} nearest hits' specificity spreads by sd {spread:.3f} only: "
                  f"{args.relation} here rests on differences that small; a model trained with a hierarchy term "
                  "spreads it further")
        if not passages and args.relation:  # an empty answer looked like a failure
            print(f"  no hit among the {args.k_candidates} nearest is {args.relation} than the query; raise "
                  "--k-candidates to look further")
        for rank, passage in enumerate(passages, start=1):
            print(f"  {rank:2d}. d={passage.distance:.4f}  spec={passage.specificity:.3f}  [{passage.id}] "
                  f"{passage.text[:100]}")


def _index_search(args: argparse.Namespace) -> int:
    from ..retrieval.folder import open_index_folder, resolve_index_model

    if args.rerank is None and args.relation is None:
        refuse_unused(args, ("--k-candidates",), "choosing among the nearest hits for --rerank, --broader or "
                      "--narrower", "without one of them it changes nothing: drop it or add one")
    if args.k_candidates is not None and args.k_candidates < args.k:
        raise UserError(f"--k-candidates {args.k_candidates} is below --k {args.k}: the {args.k} hits are chosen "
                        f"among the --k-candidates nearest; give --k-candidates >= {args.k}")
    args.k_candidates = args.k_candidates or 100

    if args.index is None or args.dsn is not None or args.table is not None:  # open_searcher names what is missing
        if args.rerank is not None or args.trie:
            raise UserError("--rerank and --trie need a phrase index folder (--index); a pgvector index is plain")
        queries = queries_of(args)
        _print_passages(open_searcher(args), queries, args)
        return 0
    folder = open_index_folder(args.index)
    queries = queries_of(args)
    args.k = k_within(args.k, len(folder.index), "showing")
    args.k_candidates = max(args.k_candidates, args.k)
    if args.model is None:
        args.model = resolve_index_model(folder)
    if folder.kind == "phrase":
        if args.relation is not None:
            raise UserError(f"--{args.relation} picks hits by radius in a plain index; {args.index} is a phrase index, "
                            "whose search reranks by phrases: drop the option, or search a plain index (hyte index "
                            "build without --phrase)")
        from ..lineage import check_query_model
        from ..phrase.loading import load_phrase_model

        model, tokenizer = load_phrase_model(str(args.model))
        check_query_model(folder.index, model, str(args.model), allow_incompatible=not args.check_model)
        scores, found = folder.index.search_texts(model, tokenizer, queries, k=args.k, rerank=args.rerank,
                                                  k_candidates=args.k_candidates, check_model=False,
                                                  **_trie_override(args, queries, tokenizer))
        print_hits(queries, found, scores, folder.documents, "global" if args.rerank is None else args.rerank)
        return 0
    if args.rerank is not None or args.trie:
        option = "--rerank" if args.rerank is not None else "--trie"
        raise UserError(f"{option} needs a phrase index (hyte index build --phrase); {args.index} is a plain one")
    from ..encoders import load_encoder
    from ..lineage import check_query_encoder

    encoder = load_encoder(args.model, kind="hyte")
    check_query_encoder(folder.index, encoder, str(args.model), allow_incompatible=not args.check_model)
    if folder.documents is None:  # an index saved before folders held texts: ids and distances only
        if args.relation is not None:
            raise UserError(f"--{args.relation} needs the index's texts; {args.index} has none (rebuild it)")
        scores, found = folder.index.search(encoder.encode(queries, role="query"), k=args.k)
        print_hits(queries, found, folder.index.to_distances(scores), None, "d")
        return 0
    from ..retrieval.searcher import HyteSearcher

    _print_passages(HyteSearcher(encoder, folder.index, folder.documents, check_model=args.check_model), queries, args)
    return 0


def add_commands(sub) -> None:
    encode = sub.add_parser("encode", help="embed texts into .npy or .safetensors")
    encode.add_argument("--model", required=True,
                        help="model folder, Hub id or bundled model (bundled:all-MiniLM-L6-v2); with --input any "
                             "encoder (a plain one gives its Euclidean vectors), with --corpus a HyTE model")
    encode.add_argument("--input", default=None, help=".txt (one text per line) or .jsonl with a 'text' field")
    encode.add_argument("--output", required=True,
                        help="output file, .npy or .safetensors (with --corpus: a folder of vector shards)")
    encode.add_argument("--corpus", default=None,
                        help="instead of --input: documents (.txt/.jsonl) encoded into Parquet shards in the folder "
                             "--output; a rerun resumes, encoding only the shards that are missing")
    encode.add_argument("--shard-size", type=positive_int, default=None,
                        help="with --corpus: documents per shard (default 10000)")
    encode.add_argument("--ray", default=None, metavar="ADDRESS",
                        help="with --corpus: encode on a Ray cluster (ray.init address: auto, HOST:PORT, or local); "
                             "the corpus and --output must be on a file system every node sees")
    encode.add_argument("--ray-workers", type=positive_int, default=None, help="with --ray: encoder actors (default 2)")
    encode.add_argument("--role", choices=["document", "query"], default="document",
                        help="queries come out sign-flipped (-x0, xs) for inner-product search")
    encode.add_argument("--batch-size", type=positive_int, default=32)
    encode.add_argument("--max-length", type=positive_int, default=None, help="truncate texts to this many tokens")
    encode.add_argument("--overwrite", action="store_true", help="replace the file --output names if it exists")
    encode.set_defaults(func=_encode)

    index = sub.add_parser("index", help="build or search a FAISS index of HyTE document vectors")
    index_sub = index.add_subparsers(dest="index_command", required=True)
    build = index_sub.add_parser("build", help="encode documents and build an index directory")
    build.add_argument("--model", default=None, help=MODEL_HELP)
    build.add_argument("--input", default=None, help=".txt or .jsonl documents")
    build.add_argument("--from-vectors", default=None, metavar="DIR",
                       help="instead of --input and --model: the vector shards of hyte encode --corpus, loaded "
                            "without encoding")
    build.add_argument("--output", default=None,
                       help="index folder to write: new or empty (an existing index only with --overwrite)")
    build.add_argument("--backend", choices=["faiss", "pgvector"], default="faiss",
                       help="faiss: an index folder (--output); pgvector: a PostgreSQL table (--dsn, --table) that "
                            "holds the vectors and the texts")
    build.add_argument("--dsn", default=None, help="with --backend pgvector: postgresql://USER@HOST:PORT/DATABASE")
    build.add_argument("--table", default=None, help="with --backend pgvector: the index's table name")
    build.add_argument("--max-norm", type=positive_float, default=None,
                       help="with --backend pgvector --kind hnsw: the augmentation bound M (default 1.25 x the "
                            "largest |x| of these documents; later documents beyond it are refused)")
    build.add_argument("--kind", choices=["flat", "exact", "ivf", "hnsw"], default="flat",
                       help="flat (also called exact) is exact; ivf/hnsw are approximate and report their measured "
                            "recall (pgvector: exact or hnsw)")
    build.add_argument("--batch-size", type=positive_int, default=32)
    build.add_argument("--max-length", type=positive_int, default=None)
    build.add_argument("--phrase", action="store_true",
                       help="phrase model (hyte train phrase): also store each document's top-B phrase vectors "
                            "and lexical weights, for search --rerank")
    build.add_argument("--phrase-dtype", choices=["float32", "float16"], default="float32",
                       help="with --phrase: storage type of the phrase vectors")
    build.add_argument("--trie", action="store_true",
                       help="with --phrase: the HPO + ICD-10-CM terminology trie overrides the CRF's units inside "
                            "its matches (use it at search time too)")
    build.add_argument("--overwrite", action="store_true", help="replace the index folder --output already holds")
    build.set_defaults(func=_index_build)
    search = index_sub.add_parser("search", help="search an index with query texts")
    add_index_options(search)
    group = search.add_mutually_exclusive_group(required=True)
    group.add_argument("--query")
    group.add_argument("--queries", help=".txt or .jsonl of queries")
    search.add_argument("--k", type=positive_int, default=10)
    search.add_argument("--rerank", choices=["phrase", "hybrid", "lexical"], default=None,
                        help="phrase indexes: rescore the global top --k-candidates by weighted MaxSim over phrase "
                             "units, the lexical view, or the fusion of global, phrase and lexical scores")
    search.add_argument("--k-candidates", type=positive_int, default=None,
                        help="with --rerank, --broader or --narrower: the nearest hits to choose from (100 if not "
                             "given)")
    relation = search.add_mutually_exclusive_group()
    relation.add_argument("--broader", dest="relation", action="store_const", const="broader",
                          help="only hits more general than the query: nearer the origin (lower spec)")
    relation.add_argument("--narrower", dest="relation", action="store_const", const="narrower",
                          help="only hits more specific than the query: farther from the origin (higher spec)")
    search.add_argument("--trie", action="store_true",
                        help="phrase indexes: the terminology trie overrides the CRF's query units in its matches")
    search.set_defaults(func=_index_search)
