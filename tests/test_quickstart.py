"""``hyte quickstart``: the printed comparison is rendered from the results.json it writes."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from generator_cache import generator_cache  # noqa: F401  (a fixture)
from hyte.quickstart import BASE_NAME, HYTE_NAME, format_summary, run_quickstart


def test_summary_table_shows_every_model_score_and_the_change_against_the_base():
    scores = {"ndcg@10": 0.5, "recall@10": 0.7, "spechr": 0.6, "recall@1": 0.4,
              "radius_depth_spearman": {"spearman": None, "ci_low": None, "ci_high": None}}
    results = {"heldout": {BASE_NAME: {"hpo": scores, "icd10": scores},
                           HYTE_NAME: {"hpo": {**scores, "ndcg@10": 0.55, "spechr": 0.52,
                                               "radius_depth_spearman": {"spearman": 0.31, "ci_low": 0.2,
                                                                         "ci_high": 0.4}},
                                       "icd10": scores}}}
    table = format_summary(results)
    hyte_row = next(line for line in table.splitlines() if line.strip().startswith(HYTE_NAME))
    assert "0.550 (+0.050)" in hyte_row and "0.520 (-0.080)" in hyte_row and "0.310" in hyte_row
    base_row = next(line for line in table.splitlines() if line.strip().startswith(BASE_NAME))
    assert "n/a" in base_row and "(+" not in base_row
    assert "HPO, held-out branches" in table and "ICD-10-CM, held-out chapters" in table
    # The correlation comes with its bootstrap interval; an undefined one reads n/a.
    assert f"{BASE_NAME} n/a; {HYTE_NAME} +0.310 [+0.200, +0.400]" in table
    # The edge diagnostics (issue 24), each model's on its own line, where the results hold them.
    assert "is-a edges" not in table
    edges = {"child_farther": 0.81, "inside_cone": 0.125, "broader_top1": 0.4, "narrower_top1": 0.35,
             "radius_sd": 0.2, "radius_p05": 0.9, "radius_p95": 1.6, "num_edges": 300}
    results["heldout"][HYTE_NAME]["hpo"]["edges"] = edges
    results["heldout"][BASE_NAME]["hpo"]["edges"] = {**edges, "inside_cone": None}
    table = format_summary(results)
    assert "held-out is-a edges (300)" in table
    assert any(line.split() == [*HYTE_NAME.split(), "81%", "/", "12%", "/", "40%", "/", "35%", "/", "0.200",
                                "[0.90,", "1.60]"] for line in table.splitlines())


def test_model_card_is_named_after_the_final_folder_not_the_staging_one(tmp_path):
    from conftest import tiny_fh_config
    from hyte import HyTEFHModel
    from hyte.quickstart import _write_model_dir

    trained = tmp_path / "training" / "final"
    HyTEFHModel(tiny_fh_config()).save_pretrained(trained)
    (trained / "hyte_card.json").write_text(json.dumps({"training": {"stage": "finetune"}}))
    scores = {"ndcg@10": 0.5, "recall@10": 0.7, "mrr@10": 0.4, "spechr": 0.6, "recall@1": 0.4, "mrr": 0.5}
    model_dir = tmp_path / "my-model"
    _write_model_dir(trained, model_dir, {HYTE_NAME: {"hpo": scores}, BASE_NAME: {"hpo": scores}})
    card = (model_dir / "README.md").read_text()
    assert ".tmp" not in card and "# my-model" in card and "- name: my-model" in card
    assert f"from_pretrained({json.dumps(str(model_dir))}" in card


def test_specificity_checks_state_each_target_met_or_not_from_the_run_numbers(tmp_path):
    from conftest import tiny_fh_config
    from hyte import HyTEFHModel
    from hyte.quickstart import EUCLIDEAN_NAME, _write_model_dir, specificity_checks

    edges = {"child_farther": 0.85, "inside_cone": 0.1, "broader_top1": 0.4, "narrower_top1": 0.3, "radius_sd": 0.2,
             "radius_p05": 0.9, "radius_p95": 1.6, "num_edges": 300}
    scores = {"ndcg@10": 0.5, "recall@10": 0.7, "mrr@10": 0.4, "spechr": 0.6, "recall@1": 0.4, "mrr": 0.5,
              "radius_depth_spearman": {"spearman": 0.35, "ci_low": 0.2, "ci_high": 0.5}, "edges": edges}
    general = {"ndcg@10": 0.700, "recall@10": 0.8, "mrr@10": 0.6}
    heldout = {HYTE_NAME: {"hpo": scores, "icd10": {**scores, "edges": {**edges, "child_farther": 0.6},
                                                    "radius_depth_spearman": {"spearman": 0.4, "ci_low": -0.1,
                                                                              "ci_high": 0.7}},
                           "handbook": general},
               BASE_NAME: {"hpo": {**scores, "edges": {**edges, "child_farther": 0.3}},
                           "icd10": scores, "handbook": {**general, "ndcg@10": 0.710}}}
    checks = specificity_checks(heldout)
    assert [line.rsplit(": ", 1)[1] for line in checks] == ["met", "met", "not met", "not met", "not met"]
    assert not any("SpecHR" in line for line in checks)  # no Euclidean control in this run: not guessed
    heldout[EUCLIDEAN_NAME] = {"hpo": {**scores, "spechr": 0.54}, "icd10": {**scores, "spechr": 0.56}}
    spechr = [line for line in specificity_checks(heldout) if "SpecHR" in line]
    assert [line.endswith(": met") for line in spechr] == [True, False]
    heldout[HYTE_NAME]["handbook"] = {**general, "ndcg@10": 0.706}
    assert specificity_checks(heldout)[-1].endswith(": met")  # 0.004 below the base: inside the tolerance

    trained = tmp_path / "training" / "final"
    HyTEFHModel(tiny_fh_config()).save_pretrained(trained)
    (trained / "hyte_card.json").write_text(json.dumps({"training": {"stage": "finetune"}}))
    _write_model_dir(trained, tmp_path / "model", heldout)
    card = (tmp_path / "model" / "README.md").read_text()
    assert "## Notes" in card and "child farther out than its parent on 60% of held-out is-a edges" in card
    assert "BENCHMARKS.md" in card and "child farther out on 85% of is-a edges vs 30%" in card


def _next_steps() -> tuple[list[str], str]:
    """The README's "Next steps after the quickstart": its shell commands and its Python snippet, as written."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("### Next steps after the quickstart"):]
    section = section[:section.index("\n## ")]
    shell = re.search(r"```bash\n(.*?)```", section, re.DOTALL).group(1).strip().splitlines()
    python = re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)
    return shell, python


@pytest.mark.slow
def test_quickstart_prints_the_table_of_its_results_json(tmp_path, capsys, generator_cache, monkeypatch):
    model_dir = run_quickstart(tmp_path, steps=2, examples=48, queries=12, documents=80, per_depth=4)
    printed = capsys.readouterr().out
    results = json.loads((tmp_path / "results.json").read_text())
    assert format_summary(results) in printed
    assert set(results["heldout"]) == {BASE_NAME, HYTE_NAME}
    from hyte.quickstart import _evaluation_sets

    assert set(results["heldout"][HYTE_NAME]) == set(_evaluation_sets())  # man pages where Debian's packages are
    assert {"hpo", "icd10"} <= set(results["heldout"][HYTE_NAME])
    card = (model_dir / "README.md").read_text()
    assert "measured against the untrained base" in card
    assert printed.count("  query: ") == 3 and "its own term" in printed
    assert re.search(r"^  broader than HP:\d+ ", printed, re.MULTILINE)
    assert re.search(r"^  narrower than HP:\d+ ", printed, re.MULTILINE)
    # Only what the user needs stays: no Trainer checkpoints (each a model plus its optimizer state).
    assert not list(tmp_path.rglob("checkpoint-*")) and (tmp_path / "training" / "final").is_dir()
    assert f"training: {tmp_path / 'training'}" in printed and "disk:" in printed
    # The result files name no path of this machine (tmp_path is absolute), also not the run's config.
    for shared in (tmp_path / "results.json", model_dir / "hyte_card.json"):
        assert str(tmp_path) not in shared.read_text() and "site-packages" not in shared.read_text()
    assert json.loads((model_dir / "hyte_card.json").read_text())["training"]["config"]["training"][
        "output_dir"] == "training"

    # The README's next steps, as written, on this quickstart's folders (its default output folder replaced).
    from hyte.cli import main

    shell, python = _next_steps()
    assert [line.split()[:2] for line in shell] == [["hyte", "index"], ["hyte", "rag"]]
    monkeypatch.setenv("HYTE_CACHE", str(generator_cache.parent))
    capsys.readouterr()
    search = shlex.split(shell[0].replace("hyte-output/quickstart", str(tmp_path)))
    assert main(search[1:]) == 0
    hits = re.findall(r"^\s+\d+\. d=\S+\s+spec=\S+\s+\[(HP:\d+)\] (\S.*)$", capsys.readouterr().out,
                      re.MULTILINE)
    assert len(hits) == 3  # the definitions' ids and texts, from the index folder
    rag = shlex.split(shell[1].replace("hyte-output/quickstart", str(tmp_path)))
    assert main(rag[1:]) == 0  # no --model: the model the index names
    out = capsys.readouterr().out
    assert len(re.findall(r"^\s+\d\. d=\S+\s+spec=\S+\s+\[HP:\d+\]", out, re.MULTILINE)) == 3 and "answer (" in out
    namespace = {}
    exec(python.replace("hyte-output/quickstart", str(tmp_path)), namespace)
    assert [d.id for d in namespace["documents"]] == [doc_id for doc_id, _ in hits]

    # A rerun with other settings does not pass the finished 2-step model off as a 40-step one.
    with pytest.raises(FileExistsError, match=r"finished run of other settings \(.*training steps: 2 -> 40"):
        run_quickstart(tmp_path, steps=40, examples=48, queries=12, documents=80, per_depth=4)


def test_quickstart_refuses_a_model_run_or_index_folder_before_any_work(tmp_path):
    for marker in ("config.json", "run.json", "index.json"):
        folder = tmp_path / marker.split(".")[0]
        folder.mkdir()
        (folder / marker).write_text("{}")
        with pytest.raises(FileExistsError, match=f"is or lies inside an? .* folder \\(.* holds {marker}\\)"):
            run_quickstart(output_dir=folder, steps=1)
        # Nor a new folder inside one (its model/ and training/ would be uploaded with the model)
        with pytest.raises(FileExistsError, match=f"lies inside an? .* folder \\(.*{folder.name} holds"):
            run_quickstart(output_dir=folder / "sub", steps=1)
        assert [entry.name for entry in folder.iterdir()] == [marker]


def test_demo_refuses_a_file_as_its_output_folder_before_any_work(tmp_path):
    from hyte.demo import run_demo

    (tmp_path / "docs.txt").write_text("mine\n")
    with pytest.raises(NotADirectoryError, match="is a file: give a folder"):
        run_demo(output_dir=tmp_path / "docs.txt", num_documents=5)
    assert (tmp_path / "docs.txt").read_text() == "mine\n"
    with pytest.raises(ValueError, match="--output-dir is empty"):  # "" was the current folder
        run_demo(output_dir="", num_documents=5)
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    with pytest.raises(FileExistsError, match="lies inside a model folder"):
        run_demo(output_dir=model / "sub", num_documents=5)
    assert [entry.name for entry in model.iterdir()] == ["config.json"]

