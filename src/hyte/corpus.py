"""Encode a corpus into vector shards, in one process or with Ray Data across a cluster, resumably.

    output/
      manifest.json         what the shards hold: model, its fingerprint, curvature, dimension, the corpus
                            (path, size, SHA-256), shard size and count; a rerun must match it to resume
      shard-00000.parquet   rows [0, shard_size) of the corpus: index_id int64, id string, text string,
      shard-00001.parquet   vector fixed_size_list<float32>[D] (document points, time coordinate first)
      ...

Shard i holds corpus rows [i * shard_size, (i + 1) * shard_size). Each shard is written to a temporary name and
renamed when complete, so a killed job leaves only complete shards, and a rerun encodes only the missing ones
(Ray Data's own checkpointing was not used: its filter actor asks for a whole CPU and 1 GiB, which hangs a cluster of
1-CPU nodes, and its output appends, duplicating rows on a rerun; ``../shared/notes/ecosystem-serving.md``).

On Ray (``ray_address``), the shards are the rows of a Ray Data dataset mapped by a pool of actors, each of which
loads the model once and writes the shards it encodes: the corpus file and the output folder must be visible to
every node at the same path (a shared file system), and hyte installed on every node. ``hyte index build
--from-vectors`` loads the shards into a ``LorentzIndex`` folder or a pgvector table without encoding again.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .artifacts import MANIFEST, claim_folder, holds
from .identity import differences, file_digest
from .io import read_json_file, read_texts, write_text_atomically

__all__ = ["CorpusEncoding", "encode_corpus", "read_vector_shards"]

FORMAT_VERSION = 1
DEFAULT_SHARD_SIZE = 10_000
# What to do about a damaged manifest: its shards cannot be matched to a model or corpus without it.
_REENCODE = ("encode the corpus again: rerun the hyte encode --corpus command that wrote this folder with --overwrite "
             "(encode_corpus(..., overwrite=True))")


@dataclass(frozen=True)
class CorpusEncoding:
    """What ``encode_corpus`` did: the folder, how many shards it has and how many this run encoded; how many of the
    corpus's documents are longer than the model's ``token_limit`` (encoded from their start only)."""

    output: Path
    shards: int
    encoded: int
    documents: int
    truncated: int
    token_limit: int


def _shard_path(output: Path, shard: int) -> Path:
    return output / f"shard-{shard:05d}.parquet"


def _prepare_output(output: Path, manifest: dict[str, Any], overwrite: bool) -> None:
    """Create ``output`` with ``manifest``, or check that an earlier run's manifest matches it (then its complete
    shards are kept); ``_check_output_usable`` has refused anything else in the way."""
    previous = output / MANIFEST
    if previous.is_file():
        try:
            recorded = _what_decides_the_vectors(read_json_file(previous, _REENCODE))
        except ValueError:
            if not overwrite:
                raise
            recorded = {}  # damaged, and everything is to be encoded again anyway: every shard counts as stale
        changed = differences(recorded, _what_decides_the_vectors(manifest))
        if changed and not overwrite:
            raise FileExistsError(f"{output} holds vectors of another encoding ({'; '.join(changed[:3])}): choose a "
                                  "new folder, or pass --overwrite (overwrite=True) to encode everything again")
        if changed:
            for stale in output.glob("shard-*.parquet"):
                stale.unlink()
    write_text_atomically(previous, json.dumps(manifest, indent=2) + "\n")  # creates ``output`` too


def _what_decides_the_vectors(manifest: dict[str, Any]) -> dict[str, Any]:
    """The manifest without the corpus file's path: a byte-identical copy elsewhere (same size and SHA-256) is the
    same corpus, so a rerun naming it resumes."""
    corpus = {key: value for key, value in (manifest.get("corpus") or {}).items() if key != "path"}
    return {**manifest, "corpus": corpus}


def _shard_is_complete(path: Path, rows: int) -> bool:
    """Whether ``path`` is a readable shard of ``rows`` rows: a file cut short (an interrupted copy, a full disk)
    is encoded again rather than kept."""
    import pyarrow.parquet as pq

    if not path.is_file():
        return False
    try:
        return pq.read_metadata(path).num_rows == rows
    except (OSError, ValueError):  # pyarrow's ArrowInvalid is a ValueError
        print(f"{path.name} is damaged (unreadable Parquet): encoding it again")
        return False


# Names of files users give where a folder is meant ("--output vectors.npy"): the shards would go into a folder
# named like a file, which every other tool then takes for one.
_FILE_SUFFIXES = (".npy", ".npz", ".safetensors", ".parquet", ".json", ".jsonl", ".txt", ".csv", ".tsv", ".pt",
                  ".bin", ".pkl", ".h5")


def _check_output_usable(output: Path) -> None:
    """A new or empty folder, or one an earlier run wrote (module docstring); nothing else is written into."""
    if output.suffix.lower() in _FILE_SUFFIXES and not holds(output, "vectors"):
        one_file = (" (one file of vectors is written by hyte encode --input FILE --output FILE.npy)"
                    if output.suffix.lower() in (".npy", ".safetensors") else "")
        raise ValueError(f"output {output} is named like a {output.suffix} file, but it must be a folder: the vector "
                         f"shards are written into it (one Parquet file per shard, and {MANIFEST}). Give a folder "
                         f"name, e.g. {output.with_suffix('')}{one_file}")
    if output.exists() and not holds(output, "vectors") and (not output.is_dir() or any(output.iterdir())):
        raise FileExistsError(f"{output} exists and is not a vector-shard folder of hyte encode --corpus: choose a "
                              "new or empty folder")
    claim_folder(output, option="output", replaces="vectors", remedy="a new or empty folder outside hyte's folders")


def _encode_shard(encoder, texts: list[str], ids: list, shard: int, manifest: dict[str, Any], output: Path,
                  batch_size: int) -> int:
    """Encode shard ``shard`` of ``texts`` (rows [shard x shard_size, ...)) and write it as one Parquet file, under a
    temporary name renamed once complete; returns its row count. One process and the Ray actors both call it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    size = manifest["shard_size"]
    start, stop = shard * size, min((shard + 1) * size, len(texts))
    vectors = encoder.encode(texts[start:stop], role="document", batch_size=batch_size, show_progress_bar=False)
    table = pa.table({
        "index_id": pa.array(np.arange(start, stop), type=pa.int64()),
        "id": pa.array([str(identifier) for identifier in ids[start:stop]], type=pa.string()),
        "text": pa.array(texts[start:stop], type=pa.string()),
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.astype(np.float32).ravel()), vectors.shape[1]),
    }).replace_schema_metadata({"model_fingerprint": manifest["model_fingerprint"]})
    temporary = output / f".{_shard_path(output, shard).name}.tmp"
    pq.write_table(table, temporary)
    os.replace(temporary, _shard_path(output, shard))
    return stop - start


def encode_corpus(model: str | os.PathLike, corpus: str | os.PathLike, output: str | os.PathLike, *,
                  shard_size: int = DEFAULT_SHARD_SIZE, batch_size: int = 32, max_length: int | None = None,
                  ray_address: str | None = None, workers: int = 2, cpus_per_worker: float = 0.5,
                  overwrite: bool = False, show_progress_bar: bool | None = None) -> CorpusEncoding:
    """Encode the documents of ``corpus`` (.txt or .jsonl, as ``hyte.io.read_texts`` reads them) with the HyTE
    ``model`` into Parquet shards in ``output`` (module docstring); returns what was done.

    ``ray_address``: None encodes in this process; otherwise ``ray.init(address=...)`` ("auto", "HOST:PORT",
    "local") and ``workers`` actors of ``cpus_per_worker`` CPUs each (fractional, so that a small cluster keeps a
    slot for Ray Data's own tasks; one torch thread per actor).
    """
    from .encoders import load_encoder
    from .lineage import model_fingerprint
    from .retrieval.folder import model_reference

    if shard_size < 1:
        raise ValueError(f"shard_size must be >= 1; got {shard_size}")
    if ray_address is None and (workers, cpus_per_worker) != (2, 0.5):
        raise ValueError("workers and cpus_per_worker size the Ray actors: give ray_address too (or leave them out)")
    if workers < 1 or not cpus_per_worker > 0:
        raise ValueError(f"workers must be >= 1 and cpus_per_worker > 0; got {workers} and {cpus_per_worker}")
    corpus, output = Path(corpus), Path(output)
    _check_output_usable(output)  # before the slow part (reading, loading the model)
    texts, ids = read_texts(corpus)
    ids = list(range(len(texts))) if ids is None else ids
    encoder = load_encoder(model, kind="hyte", max_length=max_length)
    shards = -(-len(texts) // shard_size)
    manifest = {"format_version": FORMAT_VERSION, "model": model_reference(model),
                "model_fingerprint": model_fingerprint(encoder.model), "dim": encoder.dim,
                "curvature": encoder.curvature, "role": "document", "max_length": max_length, "corpus": {
                    "path": str(corpus.absolute()), "bytes": corpus.stat().st_size, "sha256": file_digest(corpus)},
                "count": len(texts), "shard_size": shard_size, "shards": shards}
    _prepare_output(output, manifest, overwrite)
    todo = [shard for shard in range(shards)
            if not _shard_is_complete(_shard_path(output, shard), min(shard_size, len(texts) - shard * shard_size))]
    if todo and ray_address is None:
        from tqdm.auto import tqdm

        for shard in tqdm(todo, desc="shards", unit="shard", disable=show_progress_bar is False):
            _encode_shard(encoder, texts, ids, shard, manifest, output, batch_size)
    elif todo:
        _encode_on_ray(ray_address, manifest, corpus, output, todo, batch_size, max_length, workers, cpus_per_worker)
    missing = [shard for shard in todo if not _shard_path(output, shard).is_file()]
    if missing:
        raise RuntimeError(f"{len(missing)} shards were not written ({missing[:5]}...): rerun to encode them")
    # Lengths only, in chunks: one more tokenizer pass, small beside encoding; the shards keep the full texts.
    return CorpusEncoding(output, shards, len(todo), len(texts), encoder.count_truncated(texts), encoder.token_limit)


class _ShardEncoder:
    """A Ray Data actor: loads the model and the corpus once, then encodes and writes the shards it is given."""

    def __init__(self, manifest: dict[str, Any], corpus: str, output: str, batch_size: int,
                 max_length: int | None):
        import torch

        from .encoders import load_encoder

        torch.set_num_threads(1)  # actors share the node's cores; more threads per actor only contend
        texts, ids = read_texts(corpus)
        self.texts, self.ids = texts, list(range(len(texts))) if ids is None else ids
        self.encoder = load_encoder(manifest["model"], kind="hyte", max_length=max_length)
        self.manifest, self.output, self.batch_size = manifest, Path(output), batch_size

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        rows = [_encode_shard(self.encoder, self.texts, self.ids, shard, self.manifest, self.output, self.batch_size)
                for shard in batch["shard"].tolist()]
        return {"shard": batch["shard"], "rows": np.array(rows, dtype=np.int64)}


def _encode_on_ray(address: str, manifest: dict[str, Any], corpus: Path, output: Path, shards: list[int],
                   batch_size: int, max_length: int | None, workers: int, cpus_per_worker: float) -> None:
    try:
        import ray
        from ray.data import ActorPoolStrategy
    except ImportError:
        raise ImportError("encoding on Ray needs ray[data]: pip install 'hyte-embeddings[ray]'") from None
    # Workers do not inherit the driver's environment: offline mode and the usage-statistics opt-out travel along.
    environment = {name: os.environ[name] for name in ("HF_HUB_OFFLINE", "HF_HOME", "TRANSFORMERS_OFFLINE")
                   if name in os.environ}
    started_here = not ray.is_initialized()
    if started_here:
        try:
            ray.init(address=address, runtime_env={"env_vars": {**environment, "RAY_USAGE_STATS_ENABLED": "0"}},
                     log_to_driver=False, include_dashboard=False if address == "local" else None)
        except ConnectionError as error:  # Ray's own message points to an --address flag hyte does not have
            raise ConnectionError(f"no Ray cluster at {address!r} ({str(error).split('.')[0]}): start one (ray start "
                                  "--head), give its HOST:PORT, or 'local' to start one in this process") from None
    try:
        dataset = ray.data.from_items([{"shard": shard} for shard in shards])
        done = dataset.map_batches(
            _ShardEncoder, batch_size=1, num_cpus=cpus_per_worker,
            compute=ActorPoolStrategy(size=max(1, min(workers, len(shards)))),
            fn_constructor_kwargs={"manifest": manifest, "corpus": str(corpus.absolute()),
                                   "output": str(output.absolute()), "batch_size": batch_size,
                                   "max_length": max_length},
        ).take_all()
        if sorted(row["shard"] for row in done) != sorted(shards):
            raise RuntimeError("Ray returned another set of shards than it was given")
    finally:
        if started_here:
            ray.shutdown()


def read_vector_shards(directory: str | os.PathLike) -> tuple[dict[str, Any], np.ndarray, list[dict], np.ndarray]:
    """Load a complete shard folder: (manifest, index ids (N,), documents [{"id", "text"}] row i = index id i,
    vectors (N, D) float32). A missing shard or one of another model is refused (rerun hyte encode --corpus)."""
    import pyarrow.parquet as pq

    directory = Path(directory)
    if not holds(directory, "vectors"):
        raise FileNotFoundError(f"{directory} holds no vector shards ({MANIFEST} is missing): make them with "
                                "`hyte encode --corpus FILE --output DIR`")
    manifest = read_json_file(directory / MANIFEST, _REENCODE)
    if manifest.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"{directory}: vector-shard format {manifest.get('format_version')!r} is not supported "
                         f"(this hyte reads version {FORMAT_VERSION})")
    missing = [shard for shard in range(manifest["shards"]) if not _shard_path(directory, shard).is_file()]
    if missing:
        raise FileNotFoundError(f"{directory}: {len(missing)} of {manifest['shards']} shards are missing (first: "
                                f"{_shard_path(directory, missing[0]).name}); rerun the same hyte encode --corpus "
                                "command to finish them")
    tables = [pq.read_table(_shard_path(directory, shard)) for shard in range(manifest["shards"])]
    for shard, table in enumerate(tables):
        fingerprint = (table.schema.metadata or {}).get(b"model_fingerprint", b"").decode()
        if fingerprint != manifest["model_fingerprint"]:
            raise ValueError(f"{_shard_path(directory, shard)} holds vectors of another model than {MANIFEST} names; "
                             "encode again with --overwrite")
    index_ids = np.concatenate([table["index_id"].to_numpy() for table in tables])
    if not np.array_equal(index_ids, np.arange(manifest["count"])):
        raise ValueError(f"{directory}: the shards do not hold rows 0..{manifest['count'] - 1} once each; encode "
                         "again with --overwrite")
    documents = [{"id": identifier, "text": text} for table in tables
                 for identifier, text in zip(table["id"].to_pylist(), table["text"].to_pylist())]
    vectors = np.concatenate([table["vector"].combine_chunks().flatten().to_numpy().reshape(len(table), -1)
                              for table in tables]).astype(np.float32)
    return manifest, index_ids, documents, vectors
