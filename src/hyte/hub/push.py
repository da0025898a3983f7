"""Publish HyTE models and LoRA adapters on the Hugging Face Hub, with a HyTE model card.

Everything that can be checked locally is checked before the first request: the repo id, the folder (a complete,
self-contained, pickle-free HyTE checkpoint) and the credentials. Then the card is rendered into ``README.md`` of a
staging copy of the folder and the copy goes up in one commit (``HfApi.create_repo(exist_ok=True)`` +
``upload_folder``). transformers' own ``push_to_hub`` is not used because it replaces any README with its template
card. ``dry_run_dir`` writes exactly the repository content to a local folder instead. Files an earlier push left in
the branch and the folder lacks are deleted in the same commit: stale weight shards or modules would shadow the model.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import warnings
from fnmatch import fnmatch
from pathlib import Path

from huggingface_hub import HfApi, ModelCard, get_token
from huggingface_hub.utils import HFValidationError, validate_repo_id

from ..artifacts import CARD_FILE, EVAL_RESULTS_FILE, KINDS, NOT_MODELS, claim_folder, given_and_real, holds, kind_of
from ..io import check_path_kind
from ..model_kinds import BASE_CODE_FILES, MODEL_KINDS
from ..modeling_hyte import not_a_model_folder
from .card import render_adapter_card, render_model_card

__all__ = ["check_adapter_dir", "check_model_dir", "check_repo_id", "push_adapter", "push_to_hub"]

# The remote code that config.json's auto_map points at; without it the checkpoint only loads where hyte is installed.
# Pickle-based weight and state files: loading them can run arbitrary code, and the Hub flags them.
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".pkl", ".pickle", ".ckpt")
# Never part of the repository: hidden files and folders (.git, .cache left by downloads), Python caches.
_NOT_UPLOADED = (".*", "__pycache__")


def push_to_hub(model_dir: str | os.PathLike, repo_id: str, *, private: bool = False, revision: str | None = None,
                token: str | None = None, dry_run_dir: str | os.PathLike | None = None,
                commit_message: str | None = None) -> str:
    """Upload a saved HyTE model folder to the Hub as ``repo_id``, with a HyTE model card as README.md.

    ``model_dir``: written by the model's and the tokenizer's ``save_pretrained`` (also a sentence-transformers
    folder); its ``hyte_card.json`` and ``eval_results.json`` feed the card. All its files go up but hidden ones and
    ``__pycache__``, and the branch's files it lacks are deleted. ``repo_id``: ``"ORG/NAME"``, created if needed
    (``private`` applies only then); ``revision``: a branch (created if missing; default main); ``token``: default
    ``HF_TOKEN``, else ``hf auth login``'s; ``dry_run_dir``: a new or empty folder that gets the repository content
    instead (no credentials needed).

    Returns the repository URL (with ``/tree/<revision>`` for a branch), or ``dry_run_dir``. Raises, before anything
    is sent, ValueError (a bad repo id, an incomplete HyTE model folder, no credentials) or FileNotFoundError.
    """
    model_dir = Path(model_dir)
    token = _checked(repo_id, revision, check_model_dir, model_dir, token, dry_run_dir)
    card = render_model_card(model_dir, repo_id)
    for notice in push_notices(model_dir):
        warnings.warn(notice, UserWarning, stacklevel=2)
    return _publish(model_dir, repo_id, card, {}, private=private, revision=revision, token=token,
                    dry_run_dir=dry_run_dir, commit_message=commit_message or "Upload HyTE model")


def push_adapter(adapter_dir: str | os.PathLike, repo_id: str, *, base_model: str | None = None, private: bool = False,
                 revision: str | None = None, token: str | None = None, dry_run_dir: str | os.PathLike | None = None,
                 commit_message: str | None = None) -> str:
    """Upload a PEFT LoRA adapter folder (``adapter_config.json`` + ``adapter_model.safetensors``) with a card.

    ``base_model``: the Hub id of the HyTE model the adapter belongs to. It is written into the uploaded
    ``adapter_config.json`` as ``base_model_name_or_path`` (at training time that is usually a local path, useless
    to anyone loading from the Hub) and named in the card. Default: the value already in ``adapter_config.json``.
    The other arguments, the return value and the errors are those of ``push_to_hub``.
    """
    adapter_dir = Path(adapter_dir)
    if base_model is not None:
        check_repo_id(base_model)
    token = _checked(repo_id, revision, check_adapter_dir, adapter_dir, token, dry_run_dir)
    card = render_adapter_card(adapter_dir, repo_id, base_model=base_model)
    replacements = {}
    if base_model is not None:
        adapter_config = json.loads((adapter_dir / "adapter_config.json").read_text(encoding="utf-8"))
        adapter_config["base_model_name_or_path"] = base_model
        replacements["adapter_config.json"] = json.dumps(adapter_config, indent=2, sort_keys=True) + "\n"
    return _publish(adapter_dir, repo_id, card, replacements, private=private, revision=revision, token=token,
                    dry_run_dir=dry_run_dir, commit_message=commit_message or "Upload HyTE LoRA adapter")


# ----------------------------------------------------------------------------------------------------------------
# Checks (no network)
# ----------------------------------------------------------------------------------------------------------------


def push_notices(model_dir: str | os.PathLike) -> list[str]:
    """What a push does that the user may not expect, said before it happens (``push_to_hub`` warns with each): a
    hand-written README.md stays behind (the card replaces it), and a folder that records neither training nor
    evaluation goes up with a card saying it may be untrained."""
    model_dir = Path(model_dir)
    notices = []
    readme = model_dir / "README.md"
    if readme.is_file() and not _is_generated_card(readme.read_text(encoding="utf-8", errors="replace")):
        notices.append(f"{readme} is not uploaded: the repository's README.md is the generated HyTE card. To keep "
                       "text of your own in the card, put it in hyte_card.json under \"notes\" (it becomes the "
                       "card's \"Notes\" section)")
    info = _json_or_none(model_dir / CARD_FILE) or {}
    if not info.get("training") and _json_or_none(model_dir / EVAL_RESULTS_FILE) is None:
        notices.append(f"nothing in {model_dir} records training or evaluation (hyte_card.json \"training\", "
                       "eval_results.json): the card says it may be an untrained initialisation. Push the output of "
                       "hyte train / hyte quickstart to publish a trained model")
    return notices


def _is_generated_card(text: str) -> bool:
    """A card hyte or sentence-transformers wrote: YAML front matter tagged hyte or naming sentence-transformers."""
    front = text.split("---", 2)[1] if text.startswith("---") and text.count("---") >= 2 else ""
    return "- hyte" in front or "sentence-transformers" in front


def check_repo_id(repo_id: str) -> None:
    """Raise ValueError unless ``repo_id`` is ``ORG/NAME`` by the Hub's naming rules."""
    if not isinstance(repo_id, str) or repo_id.count("/") != 1:
        raise ValueError(f"repo id must be ORG/NAME (a user or organisation, a slash, a model name); got {repo_id!r}.")
    try:
        validate_repo_id(repo_id)
    except HFValidationError as error:
        raise ValueError(f"invalid repo id {repo_id!r}: {error}") from None


def check_revision(revision: str | None) -> None:
    """Raise ValueError unless ``revision`` (None = main) is a name git accepts for a branch (``git check-ref-format``:
    no spaces or control characters, none of ~ ^ : ? * [ \\, no "..", "@{" or "//", not starting or ending with "/"
    or ".", not ending with ".lock"): a dry run checks it too, so a real push does not fail at the Hub."""
    if revision is None:
        return
    problem = None
    if not isinstance(revision, str) or not revision:
        problem = "it is empty"
    elif re.search(r"[\x00-\x20\x7f~^:?*\[\\]", revision):
        problem = "it holds a space, a control character or one of ~ ^ : ? * [ \\"
    elif any(part in revision for part in ("..", "@{", "//")) or revision == "@":
        problem = 'it holds "..", "@{" or "//"'
    elif revision.startswith(("/", ".")) or revision.endswith(("/", ".", ".lock")):
        problem = 'it starts or ends with "/" or ".", or ends with ".lock"'
    if problem:
        raise ValueError(f"--revision {revision!r} is not a valid branch name ({problem}); use letters, digits, "
                         "'-', '_', '.' and '/', e.g. v2 or experiments/hyte-h")


def check_model_dir(model_dir: str | os.PathLike) -> None:
    """Raise unless ``model_dir`` is a complete HyTE checkpoint that loads from the Hub without ``hyte``.

    Required: ``config.json`` with a HyTE ``model_type`` and an ``auto_map`` (AutoConfig, AutoModel), the code files
    it points at, safetensors weights, the tokenizer; no pickle files; a sentence-transformers folder must be
    self-contained (every custom module type ``file.Class`` with ``file.py`` at the root). All problems are
    reported at once.
    """
    model_dir = check_path_kind(model_dir, "folder", "model folder")
    if holds(model_dir, "adapter") and not holds(model_dir, "model"):
        raise ValueError(f"{model_dir} is a LoRA adapter folder, not a model: push it with --adapter (push_adapter)")
    if not holds(model_dir, "model"):
        # What the folder is (a training run's, an index folder) and where its model is, as search and export say
        # it; the files a model lacks would all be listed otherwise, none of them the point.
        raise ValueError(f"{not_a_model_folder(model_dir)}. hyte push uploads a model folder (config.json, weights "
                         "and tokenizer, as save_pretrained writes them)")
    _refuse_checkpoint(model_dir, "final")
    problems = []
    config = _json_or_none(model_dir / "config.json")
    if config is None:
        problems.append("config.json is not valid JSON")
    else:
        if config.get("model_type") not in MODEL_KINDS:
            problems.append(f"config.json has model_type {config.get('model_type')!r}, not one of "
                            f"{', '.join(MODEL_KINDS)}")
        auto_map = config.get("auto_map") or {}
        missing = [name for name in ("AutoConfig", "AutoModel") if name not in auto_map]
        if missing:
            problems.append(f"config.json's auto_map lacks {', '.join(missing)} (save with the model's "
                            f"save_pretrained, which writes it)")
    kind = MODEL_KINDS.get((config or {}).get("model_type"))
    problems += [f"{name} is missing (save_pretrained copies it)"
                 for name in (kind.code_files if kind else BASE_CODE_FILES) if not (model_dir / name).is_file()]
    problems += _weight_problems(model_dir, "model")
    if not (model_dir / "tokenizer_config.json").is_file():
        problems.append("tokenizer files are missing (tokenizer.save_pretrained(model_dir))")
    if (model_dir / "modules.json").is_file():
        problems += _sentence_transformers_problems(model_dir)
    # Files of the folders that hold no model (an index built inside this one) would be published with it.
    problems += [f"{relative} belongs to {KINDS[kind].what}, not to the model (an index's documents.jsonl holds "
                 "your documents' texts): move it out of the folder before pushing"
                 for relative in _uploaded_files(model_dir) if (kind := kind_of(relative.name, NOT_MODELS))]
    if not problems:
        problems += _loading_problems(model_dir)
    if problems:
        raise ValueError(f"{model_dir} is not a HyTE model folder that can be pushed: {'; '.join(problems)}.")


def _loading_problems(model_dir: Path) -> list[str]:
    """The folder loaded as users will load it: weights that lack the model's parameters or cannot be read would
    otherwise go up and load as random weights, or not at all, on every machine."""
    from ..encoders import load_encoder  # loads torch models; only needed once the cheap checks have passed

    try:
        load_encoder(model_dir, kind="hyte")
    except (ValueError, OSError) as error:
        return [str(error).removeprefix(f"{model_dir}: ")]
    return []


def check_adapter_dir(adapter_dir: str | os.PathLike) -> None:
    """Raise unless ``adapter_dir`` is a PEFT adapter folder with safetensors weights and no pickle files."""
    adapter_dir = check_path_kind(adapter_dir, "folder", "adapter folder")
    _refuse_checkpoint(adapter_dir, "adapter")
    problems = (["adapter_config.json is missing or not valid JSON"]
                if _json_or_none(adapter_dir / "adapter_config.json") is None else [])
    problems += _weight_problems(adapter_dir, "adapter_model")
    if problems:
        raise ValueError(f"{adapter_dir} is not a PEFT adapter folder that can be pushed: {'; '.join(problems)}.")


def _refuse_checkpoint(folder: Path, pushed: str) -> None:
    """A Trainer checkpoint (``checkpoint-N`` with ``trainer_state.json``) is where a run resumes from, with its
    optimizer state; its model is the run's ``pushed`` folder (``final`` or ``adapter``), written when training ends.
    Refused by name: the generic checks would only advise deleting the optimizer files that resuming needs."""
    if holds(folder, "checkpoint"):
        run = folder.parent
        ready = (f"push {run / pushed}" if (run / pushed).is_dir() else
                 f"finish the run (hyte train ... --resume), then push {run / pushed}")
        raise ValueError(f"{folder} is a training checkpoint, the point the run in {run} resumes from (with its "
                         f"optimizer state), not a model to publish: {ready}")


def _json_or_none(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None


def _uploaded_files(folder: Path) -> list[Path]:
    """The files of ``folder`` that would be uploaded (relative paths): all but those ``_NOT_UPLOADED`` excludes."""
    files = (path.relative_to(folder) for path in sorted(folder.rglob("*")) if path.is_file())
    return [path for path in files
            if not any(fnmatch(part, pattern) for part in path.parts for pattern in _NOT_UPLOADED)]


def _weight_problems(folder: Path, stem: str) -> list[str]:
    """Safetensors weights ``{stem}.safetensors`` (or a complete sharded index) present, no pickle files."""
    problems = []
    index = _json_or_none(folder / f"{stem}.safetensors.index.json")
    if index is not None:
        missing = sorted({shard for shard in index.get("weight_map", {}).values() if not (folder / shard).is_file()})
        if missing:
            problems.append(f"weight shards listed in {stem}.safetensors.index.json are missing: {', '.join(missing)}")
    elif not (folder / f"{stem}.safetensors").is_file():
        problems.append(f"{stem}.safetensors is missing (only safetensors weights are pushed)")
    pickles = [str(path) for path in _uploaded_files(folder) if path.suffix in PICKLE_SUFFIXES]
    if pickles:
        problems.append(f"pickle files would be uploaded: {', '.join(pickles)} (they can run code when loaded; delete "
                        f"them, the weights must be safetensors)")
    return problems


def _sentence_transformers_problems(model_dir: Path) -> list[str]:
    """Custom module types that a machine without hyte could not import from the repository root."""
    modules = _json_or_none(model_dir / "modules.json")
    if not isinstance(modules, list):
        return ["modules.json is not a list of modules"]
    types = []
    for entry in modules:
        types.append(entry.get("type", ""))
        router = _json_or_none(model_dir / entry.get("path", "") / "router_config.json")
        if isinstance(router, dict):
            types += router.get("types", {}).values()
    files = {module_type: module_type.rpartition(".")[0] for module_type in types
             if not module_type.startswith("sentence_transformers.")}
    return [f"sentence-transformers module {module_type!r} has no code file at the folder root (save with "
            "hyte.integrations.sentence_transformers.save_sentence_transformer)"
            for module_type, file_name in files.items()
            if "." in file_name or not (model_dir / f"{file_name}.py").is_file()]


def _checked(repo_id: str, revision: str | None, check_folder, folder: Path, token: str | None,
             dry_run_dir) -> str | None:
    """Everything checked before a push, in order (repo id, branch, ``check_folder(folder)``, then the
    credentials, which a dry run does not need); returns the token to push with."""
    check_repo_id(repo_id)
    check_revision(revision)
    check_folder(folder)
    token = None if dry_run_dir is not None else token or get_token()
    if dry_run_dir is None and not token:
        raise ValueError("no Hugging Face token found: log in with `hf auth login`, set the HF_TOKEN environment "
                         "variable, or pass token=... (a token with write access, from "
                         "https://huggingface.co/settings/tokens).")
    return token


# ----------------------------------------------------------------------------------------------------------------
# Publishing
# ----------------------------------------------------------------------------------------------------------------


def _publish(source: Path, repo_id: str, card: ModelCard, replacements: dict[str, str], *, private: bool,
             revision: str | None, token: str | None, dry_run_dir: str | os.PathLike | None,
             commit_message: str) -> str:
    """Stage ``source`` + README.md (+ replaced files), then upload it, or leave it in ``dry_run_dir``."""
    replacements = {"README.md": str(card), **replacements}
    if dry_run_dir is not None:
        target = Path(dry_run_dir)
        if any(place.is_relative_to(source.resolve()) for place in given_and_real(target)):
            raise ValueError(f"dry-run folder {target} lies inside the model folder {source}, which it would copy "
                             "into itself: give a folder outside it")
        if target.is_dir() and any(target.iterdir()):
            raise ValueError(f"dry-run folder {target} is not empty; give a new or empty folder.")
        claim_folder(target, option="dry-run folder", remedy="a new or empty folder outside hyte's folders")
        # Real copies: the user may inspect and edit the result without touching the model folder.
        _stage(source, target, replacements, shutil.copy2)
        return str(target)
    api = HfApi(token=token)
    with tempfile.TemporaryDirectory(prefix="hyte-push-") as staging:
        # Hard links where possible: weights can be gigabytes, and the staged files are only read.
        _stage(source, Path(staging) / "repo", replacements, _link_or_copy)
        url = api.create_repo(repo_id, private=private, exist_ok=True)
        # A new branch must exist before a commit can go to it (pull-request refs exist already).
        if revision is not None and revision != "main" and not revision.startswith("refs/pr/"):
            api.create_branch(repo_id, branch=revision, exist_ok=True)
        api.upload_folder(repo_id=repo_id, folder_path=Path(staging) / "repo", revision=revision,
                          commit_message=commit_message, delete_patterns="*")
    return f"{url}/tree/{revision}" if revision is not None and revision != "main" else str(url)


def _stage(source: Path, target: Path, replacements: dict[str, str], copy_function) -> None:
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(*_NOT_UPLOADED), copy_function=copy_function,
                    dirs_exist_ok=True)
    for name, text in replacements.items():
        path = target / name
        # Unlink first: a hard-linked file written in place would change the original in the model folder.
        path.unlink(missing_ok=True)
        path.write_text(text, encoding="utf-8")


def _link_or_copy(source: str, destination: str) -> None:
    try:
        os.link(source, destination)
    except OSError:  # another file system, or links not supported
        shutil.copy2(source, destination)
