"""transformers' own common model test-suite (``ModelTesterMixin``), fetched for the installed version.

The suite ships in the transformers sdist, not in the wheel: the sdist of the installed version is downloaded once
with pip (from the configured package index, like any other install step) and its ``tests/test_modeling_common.py``
is unpacked into a cache folder. A failed download is an error, never a silent skip.

The sdist leaves out two modules that ``test_modeling_common`` imports: ``tests/exporters/test_export.py``
(``ExportTesterMixin``, a base class of ``ModelTesterMixin``) and ``tests/generation/test_utils.py``
(``GenerationTesterMixin``). Both are replaced by empty classes: generation does not apply to encoders, and
``test_hf_contracts.py`` has its own ``torch.export`` and ONNX tests in place of the export mixin.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import transformers

PACKAGE = "transformers_common_tests"
_STAND_INS = {
    "exporters/test_export.py": "class ExportTesterMixin:\n    pass\n",
    "generation/test_utils.py": "class GenerationTesterMixin:\n    pass\n",
}


def _cache_root() -> Path:
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "hyte" / "transformers-tests"
    return Path(os.environ.get("HYTE_TRANSFORMERS_TESTS", default)) / transformers.__version__


def _unpack(root: Path) -> None:
    version = transformers.__version__
    with tempfile.TemporaryDirectory() as download:
        command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
                   f"transformers=={version}", "-d", download]
        result = subprocess.run(command, capture_output=True, text=True)
        archives = list(Path(download).glob("transformers-*.tar.gz"))
        if result.returncode != 0 or not archives:
            raise RuntimeError(
                f"could not download the transformers {version} sdist for its test-suite "
                f"({' '.join(command)}):\n{result.stderr[-2000:]}"
            )
        package = root.with_name(root.name + ".partial") / PACKAGE
        package.mkdir(parents=True, exist_ok=True)
        with tarfile.open(archives[0]) as archive:
            member = archive.getmember(f"transformers-{version}/tests/test_modeling_common.py")
            (package / "test_modeling_common.py").write_bytes(archive.extractfile(member).read())
    (package / "__init__.py").write_text("")
    for relative, source in _STAND_INS.items():
        path = package / relative
        path.parent.mkdir(exist_ok=True)
        (path.parent / "__init__.py").write_text("")
        path.write_text(source)
    package.parent.rename(root)  # complete or absent: an interrupted download leaves only the .partial folder


def model_tester_mixin():
    """The installed transformers' ``ModelTesterMixin`` and ``ids_tensor``, downloading the suite if needed."""
    root = _cache_root()
    if not (root / PACKAGE / "test_modeling_common.py").exists():
        _unpack(root)
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    common = importlib.import_module(f"{PACKAGE}.test_modeling_common")
    return common.ModelTesterMixin, common.ids_tensor
