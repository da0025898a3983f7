"""Hub round trips against a loopback Hub (``hub_server.py``): real client, real uploads, real loads by hub id.

huggingface_hub reads HF_ENDPOINT when it is imported, and this test process imported it long ago (offline, see
conftest), so everything that talks to the loopback Hub runs in fresh processes whose environment points at it:

1. one process *with* hyte pushes (and first tries the pushes that must fail before sending anything);
2. one process *without* hyte loads every pushed repository by hub id (transformers, the card's own snippets,
   sentence-transformers, PEFT) and writes what it encoded to .npy files.

This process builds the models, encodes locally, and compares. The server records every request, so the tests also
check what was never sent.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import warnings
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("faiss")
pytest.importorskip("peft")

from huggingface_hub import ModelCard  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

import hyte  # noqa: E402
from conftest import run_without_hyte, tiny_fh_config  # noqa: E402
from hub_server import HubServer  # noqa: E402
from hyte.cli.push import add_commands  # noqa: E402
from hyte.hub import push_to_hub, render_model_card  # noqa: E402

try:
    from hyte.integrations.sentence_transformers import save_sentence_transformer, sentence_transformer
except ImportError:  # sentence-transformers not installed
    save_sentence_transformer = None

TEXTS = [
    "short stature",
    "Elevated body temperature due to failed thermoregulation.",
    "Increased size of the heart, clinically defined as a cardiothoracic ratio above 0.5.",
]
EVAL_RESULTS = {
    "retrieval": [{"dataset_name": "HPO definitions", "dataset_type": "hyte/hpo-ir", "split": "test",
                   "metrics": {"ndcg@10": 0.5123, "recall@10": 0.7, "mrr@10": 0.4567}}],
    "hierarchy": [{"dataset_name": "HPO hierarchy", "metrics": {"spechr": 0.875, "recall@1": 0.625}}],
}
CARD_INFO = {"license": "mit", "datasets": ["hpo-definitions"], "language": "en",
             "base_model": "sentence-transformers/all-MiniLM-L6-v2",
             "training": {"loss": "LorentzContrastiveLoss", "max_steps": 100, "learning_rate": 2e-5}}

FH, H, ST, LORA = "org/hyte-fh-tiny", "org/hyte-h-minilm", "org/hyte-st-tiny", "org/hyte-h-lora"
PHRASE = "org/hyte-phrase-tiny"
# Pushes that must fail before any request: repo id -> what the message must say.
REFUSED = {
    "no-credentials": "hf auth login",
    "bad--name": "invalid repo id",
    "not-hyte": "model_type 'bert'",
    "with-pickle": "training_args.bin",
}


def hub_env(hub: HubServer, home: Path) -> dict[str, str]:
    """Environment of a process that talks to the loopback hub (read by huggingface_hub at import)."""
    return {"HF_ENDPOINT": hub.base, "HF_TOKEN": "hf_fake", "HF_HOME": str(home), "HF_HUB_OFFLINE": "0",
            "HF_HUB_DISABLE_XET": "1"}


def run_with_hyte(code: str, cwd: Path, env: dict[str, str], timeout: int = 300) -> str:
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, capture_output=True, text=True,
                            timeout=timeout, env={**os.environ, **env})
    if result.returncode != 0:
        raise AssertionError(f"push process failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return result.stdout


def last_json_line(stdout: str):
    return json.loads(stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------------------------------------------------
# Fixtures: the server, the local models and their vectors, the push process, the load process
# ----------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hub():
    server = HubServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def local(tmp_path_factory, bert_tokenizer, minilm_path):
    """Saved model folders and the vectors this process encodes from them (before any push)."""
    root = tmp_path_factory.mktemp("hub-local")
    folders, vectors = {}, {}

    torch.manual_seed(0)
    fh = hyte.HyTEFHModel(tiny_fh_config(curvature=0.5)).eval()
    folders[FH] = root / "fh"
    fh.save_pretrained(folders[FH])
    bert_tokenizer.save_pretrained(folders[FH])
    vectors[FH] = {role: fh.encode(TEXTS, bert_tokenizer, role=role) for role in ("document", "query")}

    h = hyte.HyTEHModel.from_base(minilm_path, hidden_size=65).eval()
    folders[H] = root / "h"
    h.save_pretrained(folders[H])
    bert_tokenizer.save_pretrained(folders[H])
    (folders[H] / "eval_results.json").write_text(json.dumps(EVAL_RESULTS))
    (folders[H] / "hyte_card.json").write_text(json.dumps(CARD_INFO))
    vectors[H] = {role: h.encode(TEXTS, bert_tokenizer, role=role) for role in ("document", "query")}

    # LoRA on HyTE-H's projection. lora_B starts at zero (an identity adapter); random values make the check bite.
    from peft import LoraConfig, get_peft_model

    peft_model = get_peft_model(hyte.HyTEHModel.from_pretrained(folders[H]).eval(),
                                LoraConfig(r=4, target_modules=["projection"]))
    with torch.no_grad():
        for name, parameter in peft_model.named_parameters():
            if "lora_B" in name:
                parameter.normal_(0, 0.1)
    folders[LORA] = root / "lora"
    peft_model.save_pretrained(folders[LORA])
    vectors[LORA] = {"document": peft_model.encode(TEXTS, bert_tokenizer, role="document")}

    from phrase_helpers import tiny_backbone, tiny_phrase_model

    phrase = tiny_phrase_model(tiny_backbone("lorentz", bert_tokenizer), bert_tokenizer)
    folders[PHRASE] = root / "phrase"
    phrase.save_pretrained(folders[PHRASE])
    bert_tokenizer.save_pretrained(folders[PHRASE])
    vectors[PHRASE] = {role: np.stack([e["global"] for e in phrase.encode_phrases(TEXTS, bert_tokenizer, role=role)])
                       for role in ("document", "query")}

    if save_sentence_transformer is not None:
        st = sentence_transformer(fh, bert_tokenizer, prompts={"query": "query: ", "document": "passage: "})
        folders[ST] = root / "st"
        save_sentence_transformer(st, folders[ST])
        vectors[ST] = {"document": st.encode_document(TEXTS), "query": st.encode_query(TEXTS)}

    # Folders whose pushes must be refused: a plain BERT folder, and a HyTE folder with a pickle in it.
    folders["not-hyte"] = Path(minilm_path)
    folders["with-pickle"] = root / "with-pickle"
    shutil.copytree(folders[FH], folders["with-pickle"])
    (folders["with-pickle"] / "training_args.bin").write_bytes(b"\x80\x04pickle")
    # Pushed first to the branch that the HyTE-FH push then replaces: these extra files must not survive it.
    folders["fh-extra"] = root / "fh-extra"
    shutil.copytree(folders[FH], folders["fh-extra"])
    (folders["fh-extra"] / "modules.json").write_text("[]")
    (folders["fh-extra"] / "1_Old").mkdir()
    (folders["fh-extra"] / "1_Old" / "config.json").write_text("{}")
    return folders, vectors


@pytest.fixture(scope="module")
def pushed(hub, local, tmp_path_factory):
    """Run the push process; return its report (error messages, returned URLs) and the local README snapshots."""
    folders, _ = local
    work = tmp_path_factory.mktemp("hub-push")
    readmes_before = {repo: (folders[repo] / "README.md").read_bytes() for repo in folders
                      if repo in (FH, H, ST, LORA, PHRASE) and (folders[repo] / "README.md").is_file()}
    paths = {repo: str(folder) for repo, folder in folders.items()}
    stdout = run_with_hyte(
        f"""
        import json, os
        from hyte.hub import push_adapter, push_to_hub

        paths = {paths!r}
        report = {{"errors": {{}}, "urls": {{}}}}

        def refused(name, *args, **kwargs):
            try:
                push_to_hub(*args, **kwargs)
            except ValueError as error:
                report["errors"][name] = str(error)
            else:
                raise AssertionError(f"the push {{name}} was not refused")

        token = os.environ.pop("HF_TOKEN")  # and HF_HOME holds no stored login
        refused("no-credentials", paths[{FH!r}], "org/no-credentials")
        os.environ["HF_TOKEN"] = token
        refused("bad--name", paths[{FH!r}], "org/bad--name")
        refused("not-hyte", paths["not-hyte"], "org/not-hyte")
        refused("with-pickle", paths["with-pickle"], "org/with-pickle")

        # The branch first: it starts from main's initial commit, so all pushes below carry a model. The second
        # push to it must delete what the first left and the second folder lacks.
        push_to_hub(paths["fh-extra"], {FH!r}, revision="v1")
        report["urls"]["fh-v1"] = push_to_hub(paths[{FH!r}], {FH!r}, revision="v1")
        report["urls"]["fh"] = push_to_hub(paths[{FH!r}], {FH!r})
        report["urls"]["h"] = push_to_hub(paths[{H!r}], {H!r}, private=True, commit_message="HyTE-H on MiniLM")
        if {ST!r} in paths:
            report["urls"]["st"] = push_to_hub(paths[{ST!r}], {ST!r})
        report["urls"]["lora"] = push_adapter(paths[{LORA!r}], {LORA!r}, base_model={H!r})
        report["urls"]["phrase"] = push_to_hub(paths[{PHRASE!r}], {PHRASE!r})
        print(json.dumps(report))
        """,
        cwd=work,
        env=hub_env(hub, work / "hf-home"),
    )
    return last_json_line(stdout), readmes_before


@pytest.fixture(scope="module")
def loaded(hub, pushed, tmp_path_factory):
    """Load every pushed repository by hub id where hyte cannot be imported; return (report, folder of .npy)."""
    work = tmp_path_factory.mktemp("hub-load")
    stdout = run_without_hyte(
        f"""
        import json, re
        import numpy as np
        from huggingface_hub import ModelCard
        from transformers import AutoModel, AutoTokenizer

        TEXTS = {TEXTS!r}
        report = {{}}

        def snippets(card):
            return re.findall(r"```python\\n(.*?)```", card.text, flags=re.DOTALL)

        for repo_id, revision, name in (({FH!r}, "main", "fh"), ({FH!r}, "v1", "fh-v1"), ({H!r}, "main", "h")):
            model = AutoModel.from_pretrained(repo_id, revision=revision, trust_remote_code=True).eval()
            tokenizer = AutoTokenizer.from_pretrained(repo_id, revision=revision, trust_remote_code=True)
            assert "transformers_modules" in type(model).__module__, type(model).__module__
            for role in ("document", "query"):
                np.save(f"{{name}}-{{role}}.npy", model.encode(TEXTS, tokenizer, role=role))

        phrase = AutoModel.from_pretrained({PHRASE!r}, trust_remote_code=True).eval()
        tokenizer = AutoTokenizer.from_pretrained({PHRASE!r}, trust_remote_code=True)
        assert "transformers_modules" in type(phrase).__module__, type(phrase).__module__
        for role in ("document", "query"):
            encoded = phrase.encode_phrases(TEXTS, tokenizer, role=role)
            np.save(f"phrase-{{role}}.npy", np.stack([e["global"] for e in encoded]))
        report["phrase_card_tags"] = ModelCard.load({PHRASE!r}).data.tags

        # The card's transformers + FAISS snippets, exactly as written.
        card = ModelCard.load({H!r})
        report["eval_results"] = [[r.task_type, r.dataset_name, r.dataset_type, r.dataset_split, r.metric_type,
                                   r.metric_value] for r in card.data.eval_results]
        report["card_data"] = card.data.to_dict()
        namespace = {{}}
        exec("\\n".join(snippets(card)[:2]), namespace)
        report["snippet"] = {{"documents": namespace["documents"], "queries": namespace["queries"],
                             "ids": namespace["ids"].tolist()}}
        np.save("snippet-document.npy", namespace["document_vectors"])
        np.save("snippet-query.npy", namespace["query_vectors"])

        if {"st" in pushed[0]["urls"]!r}:
            from sentence_transformers import SentenceTransformer

            st = SentenceTransformer({ST!r}, trust_remote_code=True)
            np.save("st-document.npy", st.encode_document(TEXTS))
            np.save("st-query.npy", st.encode_query(TEXTS))
            namespace = {{}}
            exec(snippets(ModelCard.load({ST!r}))[2], namespace)  # the card's sentence-transformers snippet
            report["st_snippet_scores"] = namespace["scores"].tolist()

        from peft import PeftConfig, PeftModel
        base = AutoModel.from_pretrained({H!r}, trust_remote_code=True).eval()
        tokenizer = AutoTokenizer.from_pretrained({H!r}, trust_remote_code=True)
        report["lora_base"] = PeftConfig.from_pretrained({LORA!r}).base_model_name_or_path
        adapted = PeftModel.from_pretrained(base, {LORA!r}).eval()
        np.save("lora-document.npy", adapted.encode(TEXTS, tokenizer, role="document"))
        namespace = {{}}
        exec(snippets(ModelCard.load({LORA!r}))[0], namespace)  # the adapter card's snippet
        report["lora_snippet_shape"] = list(namespace["document_vectors"].shape)
        print(json.dumps(report))
        """,
        cwd=work,
        env=hub_env(hub, work / "hf-home"),
    )
    return last_json_line(stdout), work


# ----------------------------------------------------------------------------------------------------------------
# (a) Models round-trip: pushed with the real client, loaded by hub id without hyte, identical vectors
# ----------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("repo_id, name", [(FH, "fh"), (FH, "fh-v1"), (H, "h"), (PHRASE, "phrase")])
def test_pushed_model_loads_without_hyte_and_encodes_identically(local, loaded, repo_id, name):
    _, vectors = local
    _, work = loaded
    for role in ("document", "query"):
        np.testing.assert_array_equal(np.load(work / f"{name}-{role}.npy"), vectors[repo_id][role])


@pytest.mark.slow
def test_push_returns_urls_and_creates_branch_and_private_repo(hub, pushed):
    report, _ = pushed
    assert report["urls"]["fh"] == f"{hub.base}/{FH}"
    assert report["urls"]["fh-v1"] == f"{hub.base}/{FH}/tree/v1"
    fh_repo = hub.repos[("model", FH)]
    assert set(fh_repo.branches) == {"main", "v1"}
    # Same content, and nothing left of the first push to v1 (modules.json, 1_Old/config.json).
    assert fh_repo.resolve("v1").files == fh_repo.resolve("main").files
    assert fh_repo.resolve("v1").message == "Upload HyTE model"
    assert hub.repos[("model", H)].private and not fh_repo.private
    assert hub.repos[("model", H)].resolve("main").message == "HyTE-H on MiniLM"


@pytest.mark.slow
def test_pushed_repo_holds_the_folder_plus_card_and_leaves_the_folder_alone(hub, local, pushed):
    folders, _ = local
    _, readmes_before = pushed
    for repo_id in (FH, H, ST):
        if repo_id not in folders:
            continue
        files = hub.repos[("model", repo_id)].resolve("main").files
        expected = {str(path.relative_to(folders[repo_id])) for path in folders[repo_id].rglob("*") if path.is_file()}
        assert set(files) == expected | {"README.md", ".gitattributes"}, repo_id
        # The card is ours (not transformers' or sentence-transformers' template) ...
        assert b"Queries are sign-flipped" in files["README.md"]
        # ... and writing it into the (hard-linked) staging copy did not touch the model folder.
        if repo_id in readmes_before:
            assert (folders[repo_id] / "README.md").read_bytes() == readmes_before[repo_id]
        else:
            assert not (folders[repo_id] / "README.md").exists()
    assert {"eval_results.json", "hyte_card.json"} <= set(hub.repos[("model", H)].resolve("main").files)
    # The adapter's config went up with the base model's Hub id; the local file keeps its own.
    assert (folders[LORA] / "README.md").read_bytes() == readmes_before[LORA]
    assert json.loads((folders[LORA] / "adapter_config.json").read_text())["base_model_name_or_path"] != H


# ----------------------------------------------------------------------------------------------------------------
# (b) The card: parses, holds the evaluation numbers, its snippets run as written
# ----------------------------------------------------------------------------------------------------------------


def test_a_run_from_a_hub_model_names_it_and_the_data_it_was_trained_on(hub, pushed, tmp_path):
    """A fine-tune that starts from a HyTE model given by Hub id reads its hyte_card.json from the Hub (as
    from_pretrained reads its weights): the new card names that repository and its earlier data, not only its base.
    A repository without one (a model saved without training) gives its base alone."""
    stdout = run_with_hyte(
        f"""
        import json
        from hyte.training import parse_config
        from hyte.training.loop import card_lineage

        lineage = {{}}
        for repo_id in ({H!r}, {FH!r}):
            config = parse_config({{"stage": "contrastive", "model": {{"build": "load", "path": repo_id}},
                                   "data": {{"source": "hpo"}},
                                   "training": {{"output_dir": "run"}}}})
            lineage[repo_id] = card_lineage(config, base_model=repo_id)
        print(json.dumps(lineage))
        """, tmp_path, hub_env(hub, tmp_path / "hf-home"))
    lineage = last_json_line(stdout)
    assert lineage[H]["base_model"] == H
    assert lineage[H]["fine_tuned_from"] == {"model": H, "base_model": CARD_INFO["base_model"],
                                             "datasets": CARD_INFO["datasets"]}
    assert lineage[H]["datasets"][0] == CARD_INFO["datasets"][0] and len(lineage[H]["datasets"]) > 1
    assert "fine_tuned_from" not in lineage[FH] and lineage[FH]["base_model"] == FH


@pytest.mark.slow
def test_pushed_card_parses_and_holds_the_evaluation_results(loaded):
    report, _ = loaded
    expected = [["information-retrieval", "HPO definitions", "hyte/hpo-ir", "test", "ndcg_at_10", 0.5123],
                ["information-retrieval", "HPO definitions", "hyte/hpo-ir", "test", "recall_at_10", 0.7],
                ["information-retrieval", "HPO definitions", "hyte/hpo-ir", "test", "mrr_at_10", 0.4567],
                ["hierarchy-retrieval", "HPO hierarchy", "hpo_hierarchy", None, "spechr", 0.875],
                ["hierarchy-retrieval", "HPO hierarchy", "hpo_hierarchy", None, "recall_at_1", 0.625]]
    assert report["eval_results"] == expected
    data = report["card_data"]
    assert data["library_name"] == "transformers" and data["pipeline_tag"] == "feature-extraction"
    assert data["license"] == "mit" and data["base_model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert {"hyte", "hyperbolic", "lorentz"} <= set(data["tags"]) and "sentence-transformers" not in data["tags"]
    assert data["datasets"] == ["hpo-definitions"] and data["language"] == "en"


@pytest.mark.slow
def test_card_transformers_and_faiss_snippets_run_as_written(local, loaded, bert_tokenizer):
    report, work = loaded
    h = hyte.HyTEHModel.from_pretrained(local[0][H]).eval()
    documents = h.encode(report["snippet"]["documents"], bert_tokenizer, role="document")
    queries = h.encode(report["snippet"]["queries"], bert_tokenizer, role="query")
    np.testing.assert_array_equal(np.load(work / "snippet-document.npy"), documents)
    np.testing.assert_array_equal(np.load(work / "snippet-query.npy"), queries)
    # FAISS IndexFlatIP with the flipped queries = nearest by Lorentz inner product (= geodesic distance).
    expected_ids = np.argsort(-(queries.astype(np.float64) @ documents.T.astype(np.float64)), axis=1)[:, :2]
    assert report["snippet"]["ids"] == expected_ids.tolist()


# ----------------------------------------------------------------------------------------------------------------
# (c) sentence-transformers and (d) a LoRA adapter
# ----------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_pushed_sentence_transformer_loads_without_hyte(local, pushed, loaded):
    if save_sentence_transformer is None:
        pytest.skip("hyte.integrations.sentence_transformers.save_sentence_transformer is not available")
    _, vectors = local
    report, work = loaded
    np.testing.assert_array_equal(np.load(work / "st-document.npy"), vectors[ST]["document"])
    np.testing.assert_array_equal(np.load(work / "st-query.npy"), vectors[ST]["query"])
    assert np.array(report["st_snippet_scores"]).shape == (2, 2)


@pytest.mark.slow
def test_pushed_adapter_loads_onto_its_base(local, loaded):
    _, vectors = local
    report, work = loaded
    assert report["lora_base"] == H  # push_adapter wrote the Hub id of the base into adapter_config.json
    np.testing.assert_array_equal(np.load(work / "lora-document.npy"), vectors[LORA]["document"])
    assert not np.array_equal(vectors[LORA]["document"], vectors[H]["document"])  # the adapter changes the output
    assert report["lora_snippet_shape"] == [1, 65]


# ----------------------------------------------------------------------------------------------------------------
# (e) Refused pushes send nothing
# ----------------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_refused_pushes_fail_clearly_before_any_request(hub, pushed):
    report, _ = pushed
    for name, phrase in REFUSED.items():
        assert phrase in report["errors"][name], (name, report["errors"][name])
    assert "configuration_hyte.py is missing" in report["errors"]["not-hyte"]
    assert not [path for _, path in hub.requests if any(f"org/{name}" in path for name in REFUSED)]
    commits = {path for method, path in hub.requests if method == "POST" and "/commit/" in path}
    expected = {f"/api/models/{FH}/commit/v1", f"/api/models/{FH}/commit/main", f"/api/models/{H}/commit/main",
                f"/api/models/{LORA}/commit/main", f"/api/models/{PHRASE}/commit/main"}
    if "st" in report["urls"]:
        expected.add(f"/api/models/{ST}/commit/main")
    assert commits == expected


def test_invalid_repo_ids_and_folders_are_refused_locally(local, tmp_path):
    folders, _ = local
    for repo_id in ("no-namespace", "org/name/extra", "org/bad name", "org/.hidden", "org/x.git"):
        with pytest.raises(ValueError, match="repo id"):
            push_to_hub(folders[FH], repo_id, dry_run_dir=tmp_path / "never")
    with pytest.raises(FileNotFoundError):
        push_to_hub(tmp_path / "missing", "org/name", dry_run_dir=tmp_path / "never")
    assert not (tmp_path / "never").exists()


def test_weights_that_are_not_the_models_are_refused_before_any_request(local, tmp_path):
    """Weights that lack the config's parameters would load as random weights everywhere; damaged ones not at all."""
    folders, _ = local
    foreign = tmp_path / "foreign"
    shutil.copytree(folders[FH], foreign)
    save_file({"unrelated.weight": torch.zeros(2, 2)}, foreign / "model.safetensors")
    with pytest.raises(ValueError, match="lacks .* of the model's parameters"):
        push_to_hub(foreign, "org/name", dry_run_dir=tmp_path / "never")
    damaged = tmp_path / "damaged"
    shutil.copytree(folders[FH], damaged)
    weights = damaged / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    with pytest.raises(ValueError, match="weights file cannot be read"):
        push_to_hub(damaged, "org/name", dry_run_dir=tmp_path / "never")
    assert not (tmp_path / "never").exists()


# ----------------------------------------------------------------------------------------------------------------
# (f) Dry run, and the command line
# ----------------------------------------------------------------------------------------------------------------


def test_dry_run_writes_the_repository_content(local, tmp_path):
    folders, _ = local
    source = tmp_path / "model"
    shutil.copytree(folders[H], source)
    (source / ".cache").mkdir()  # left by downloads: never uploaded
    (source / ".cache" / "x.lock").write_text("")
    result = push_to_hub(source, "org/dry", dry_run_dir=tmp_path / "repo")
    assert result == str(tmp_path / "repo")
    written = {path.name for path in (tmp_path / "repo").iterdir()}
    assert written == {path.name for path in folders[H].iterdir()} | {"README.md"}
    card = ModelCard.load(tmp_path / "repo" / "README.md")
    assert card.data.model_name == "dry" and len(card.data.eval_results) == 5
    assert 'AutoModel.from_pretrained("org/dry", trust_remote_code=True)' in card.text
    assert str(card) == str(render_model_card(source, "org/dry"))
    with pytest.raises(ValueError, match="not empty"):
        push_to_hub(source, "org/dry", dry_run_dir=tmp_path / "repo")
    (tmp_path / "a-file.txt").write_text("mine")
    with pytest.raises(ValueError, match="dry-run folder .*a-file.txt is a file"):
        push_to_hub(source, "org/dry", dry_run_dir=tmp_path / "a-file.txt")
    assert (tmp_path / "a-file.txt").read_text() == "mine"
    # A dry-run folder inside the model copied the model into itself.
    with pytest.raises(ValueError, match="lies inside the model folder"):
        push_to_hub(source, "org/dry", dry_run_dir=source / "inside")
    assert not (source / "inside").exists()
    (tmp_path / "other-model").mkdir()
    (tmp_path / "other-model" / "config.json").write_text("{}")
    with pytest.raises(ValueError, match="lies inside a model folder"):  # claimed through hyte.artifacts
        push_to_hub(source, "org/dry", dry_run_dir=tmp_path / "other-model" / "repo")
    assert not (tmp_path / "other-model" / "repo").exists()



def test_a_card_names_a_bundled_base_by_its_hub_id_and_no_local_path(local, tmp_path):
    """A model trained from the bundled MiniLM had ``base_model: bundled:all-MiniLM-L6-v2`` in its
    card, which is no Hub link. The alias and the bundled folder become the Hub id; a local path is left out."""
    from hyte.bundled import BUNDLED_MINILM, bundled_minilm_path

    folders, _ = local
    source = tmp_path / "model"
    shutil.copytree(folders[H], source)
    info_path = source / "hyte_card.json"
    info = json.loads(info_path.read_text()) if info_path.exists() else {}
    for base, expected in ((BUNDLED_MINILM, "sentence-transformers/all-MiniLM-L6-v2"),
                           (bundled_minilm_path(), "sentence-transformers/all-MiniLM-L6-v2"),
                           (str(tmp_path), None), ("org/encoder", "org/encoder")):
        info_path.write_text(json.dumps({**info, "base_model": base}))
        assert render_model_card(source, "org/dry").data.base_model == expected, base
    # The eval_results.json training writes holds the untrained model's scores under
    # "before_training"; the card refused it. It is kept in the file and left out of the model-index.
    evaluated = json.loads((source / "eval_results.json").read_text())
    (source / "eval_results.json").write_text(json.dumps({**evaluated, "before_training": {"ndcg@10": 0.1}}))
    assert len(render_model_card(source, "org/dry").data.eval_results) == 5
    # Training records the base in hyte_card.json by the same public name (it wrote bundled:...).
    from hyte.results import public_model_name

    assert public_model_name(bundled_minilm_path()) == "sentence-transformers/all-MiniLM-L6-v2"



def test_a_push_says_what_it_leaves_behind_and_when_nothing_records_training(local, tmp_path, capsys):
    folders, _ = local
    parser = argparse.ArgumentParser(prog="hyte")
    add_commands(parser.add_subparsers(dest="command", required=True))
    source = tmp_path / "model"
    shutil.copytree(folders[H], source)
    (source / "README.md").write_text("# My model\n\nTrained by hand on my notes.\n")  # hand-written: not a card
    args = parser.parse_args(["push", str(source), "--repo-id", "org/mine", "--dry-run", str(tmp_path / "repo")])
    assert args.func(args) == 0
    printed = capsys.readouterr().out
    assert "note: " in printed and "README.md is not uploaded" in printed and "hyte_card.json under \"notes\"" in printed
    assert "untrained" not in printed  # this folder records its training and evaluation
    # The way to keep the text: hyte_card.json "notes" becomes the card's Notes section.
    info = json.loads((source / "hyte_card.json").read_text())
    (source / "hyte_card.json").write_text(json.dumps({**info, "notes": "Trained by hand on my notes."}))
    (source / "README.md").unlink()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing to warn about any more
        push_to_hub(source, "org/mine", dry_run_dir=tmp_path / "repo2")
    assert "## Notes\n\nTrained by hand on my notes." in (tmp_path / "repo2" / "README.md").read_text()
    # A folder recording neither training nor evaluation: warned, and the card says it may be untrained.
    (source / "eval_results.json").unlink()
    (source / "hyte_card.json").write_text(json.dumps({k: v for k, v in info.items() if k != "training"}))
    with pytest.warns(UserWarning, match="nothing in .* records training or evaluation"):
        push_to_hub(source, "org/mine", dry_run_dir=tmp_path / "repo3")
    assert "may be an untrained initialisation" in (tmp_path / "repo3" / "README.md").read_text()


def test_push_command_dry_run_and_user_errors(local, tmp_path, capsys):
    folders, _ = local
    parser = argparse.ArgumentParser(prog="hyte")
    add_commands(parser.add_subparsers(dest="command", required=True))

    def run(*argv: str) -> int:
        args = parser.parse_args(["push", *argv])
        return args.func(args)

    assert run(str(folders[LORA]), "--repo-id", LORA, "--adapter", "--base-model", H,
               "--dry-run", str(tmp_path / "adapter")) == 0
    assert "nothing uploaded" in capsys.readouterr().out
    adapter_config = json.loads((tmp_path / "adapter" / "adapter_config.json").read_text())
    assert adapter_config["base_model_name_or_path"] == H
    assert json.loads((folders[LORA] / "adapter_config.json").read_text())["base_model_name_or_path"] != H
    card = ModelCard.load(tmp_path / "adapter" / "README.md")
    assert card.data.library_name == "peft" and card.data.base_model == H
    assert f'PeftModel.from_pretrained(base, "{LORA}")' in card.text
    with pytest.raises(ValueError, match="--adapter"):
        run(str(folders[FH]), "--repo-id", FH, "--base-model", H)
    with pytest.raises(ValueError, match="is a LoRA adapter folder, not a model"):
        run(str(folders[LORA]), "--repo-id", LORA, "--dry-run", str(tmp_path / "wrong"))


def test_twelfth_trial_push_of_a_folder_that_is_no_model_says_what_it_is(tmp_path):
    """`hyte push INDEX_FOLDER` listed six files a model lacks; it names the folder's kind and its model, as
    search and export do, before any file check or request."""
    index = tmp_path / "index"
    index.mkdir()
    (index / "index.json").write_text(json.dumps({"format_version": 1, "kind": "plain", "model": "/d/model"}))
    (index / "documents.jsonl").write_text('{"id": 0, "text": "a"}\n')
    run = tmp_path / "run"
    (run / "final").mkdir(parents=True)
    (run / "final" / "config.json").write_text("{}")
    for folder, words in ((index, "is an index folder, not a model: give the model it was built with: /d/model"),
                          (run, f"is a training run's folder, not a model: its model is {run / 'final'}"),
                          (tmp_path, "is not a model folder (it has no config.json)")):
        with pytest.raises(ValueError, match="hyte push uploads a model folder") as refused:
            push_to_hub(folder, "org/name", dry_run_dir=tmp_path / "never")
        assert words in str(refused.value) and "is missing" not in str(refused.value)
    assert not (tmp_path / "never").exists()


@pytest.mark.slow
def test_pushed_phrase_model_card_names_its_kind(loaded):
    report, _ = loaded
    assert {"hyte", "hyte-phrase", "hyperbolic", "lorentz"} <= set(report["phrase_card_tags"])


def test_eucbert_card_snippet_ranks_by_cosine_as_written(tmp_path, bert_tokenizer):
    """EucBERT's vectors keep their norms: the card's snippet must scale them, or its ranking is not the model's."""
    import re

    from hyte.encoders import HyteEncoder

    torch.manual_seed(0)
    folder = tmp_path / "eucbert"
    model = hyte.EucBERTModel(hyte.EucBERTConfig(vocab_size=len(bert_tokenizer), hidden_size=32, num_hidden_layers=1,
                                                 num_attention_heads=2, intermediate_size=64)).eval()
    model.save_pretrained(folder)
    bert_tokenizer.save_pretrained(folder)
    card = render_model_card(folder)
    assert "euclidean-baseline" in card.data.tags and "dot products" not in card.text.split("### FAISS")[0]
    namespace = {}
    exec("\n".join(re.findall(r"```python\n(.*?)```", card.text, flags=re.DOTALL)[:2]), namespace)  # noqa: S102 (the card's own snippet is what is tested)
    encoder = HyteEncoder(model, bert_tokenizer)
    expected = encoder.scores(encoder.encode(namespace["queries"], role="query"),
                              encoder.encode(namespace["documents"]))
    top = np.argsort(-expected, axis=1, kind="stable")[:, :2]  # the FAISS snippet's search: the 2 nearest, by cosine
    assert namespace["ids"].tolist() == top.tolist()
    np.testing.assert_allclose(namespace["scores"], np.take_along_axis(expected, top, axis=1), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("geometry", ["lorentz", "euclidean"])
def test_phrase_card_snippet_runs_as_written(tmp_path, bert_tokenizer, geometry):
    """A phrase model has no ``encode``: its card's snippet called one and failed; it takes the global view."""
    import re

    from hyte.encoders import PhraseEncoder
    from phrase_helpers import tiny_backbone, tiny_phrase_model

    model = tiny_phrase_model(tiny_backbone(geometry, bert_tokenizer), bert_tokenizer).eval()
    model.save_pretrained(tmp_path / "phrase")
    bert_tokenizer.save_pretrained(tmp_path / "phrase")
    card = render_model_card(tmp_path / "phrase")
    namespace = {}
    exec(re.findall(r"```python\n(.*?)```", card.text, flags=re.DOTALL)[0], namespace)  # noqa: S102 (the card's own snippet is what is tested)
    encoder = PhraseEncoder(model, bert_tokenizer)
    expected = encoder.scores(encoder.encode(namespace["queries"], role="query"),
                              encoder.encode(namespace["documents"]))
    np.testing.assert_allclose(namespace["scores"], expected, rtol=1e-5, atol=1e-5)
