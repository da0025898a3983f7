"""``run(config)``: the stage registry. Every training stage, core (``hyte.training.stages``) or feature
(``hyte.phrase.training``, ``hyte.compatibility.training``), is run from here by its config's ``stage``; the core
never dispatches to a feature."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from transformers import set_seed

from .compatibility.training import train_compatible
from .phrase.training import train_phrase
from .training.config import RunConfig
from .training.run_folder import RecordRun, claim_output_dir, finished_run, hold_output_dir
from .training.stages import train_contrastive, train_finetune, train_mlm

logger = logging.getLogger(__name__)

__all__ = ["STAGES", "run"]


# Stage name (a RunConfig's ``stage``) -> its training function. The core stages and the feature packages' stages
# (H+ phrase heads, HBCT compatible upgrades) alike: a feature plugs in by adding its entry here.
STAGES: dict[str, Callable[..., Path]] = {
    "mlm": train_mlm,
    "contrastive": train_contrastive,
    "finetune": train_finetune,
    "phrase": train_phrase,
    "compatible": train_compatible,
}


def run(config: RunConfig, resume: bool = False, callbacks: list | None = None, overwrite: bool = False) -> Path:
    """Run the stage named by the config; returns the final model folder. ``callbacks``: Trainer callbacks.

    ``resume``: continue from the last checkpoint in ``training.output_dir`` when there is one (of the same run);
    a run that already reached ``max_steps`` is left as it is (its final folder is returned, nothing rewritten);
    a folder that already holds a run is refused unless ``resume`` or ``overwrite`` (``claim_output_dir``, checked
    before anything slow), and so is a folder another live run holds (``hold_output_dir``, for the whole run). The
    seed is set before the model is built, so new weights (HyTE-FH, the HyTE-H projection) are reproducible too.
    """
    with hold_output_dir(Path(config.training.output_dir)):
        claim_output_dir(config, resume=resume, overwrite=overwrite)
        finished = finished_run(config) if resume else None
        if finished is not None:
            logger.warning("%s already holds this run, finished (%s): nothing to resume", config.training.output_dir,
                           finished)
            return finished
        set_seed(config.training.seed)
        return STAGES[config.stage](config, resume=resume, callbacks=[*(callbacks or []), RecordRun(config)])
