"""The fold models of a trial, kept on disk for the bags of the ensemble
(:mod:`admm_automl.final.bagging`, which says why and when).

A trial writes them, pickled, to one new file in the run's private temporary folder and reports
the file's name; nothing else writes there, which is why reading them back with pickle is safe
(a run directory, which a user may share, never holds them).
"""

from __future__ import annotations

import pickle
import uuid
from pathlib import Path
from typing import Any, Sequence

from .._files import write_file

__all__ = ["MAX_MODEL_MB", "read_models", "write_models"]

#: MiB of one evaluation's pickled fold models above which they are not kept
MAX_MODEL_MB = 64.0


def write_models(folder: str | Path, models: Sequence[Any]) -> str | None:
    """Pickle ``models`` to a new file in ``folder`` (atomically) and return its name; None when
    they take more than :data:`MAX_MODEL_MB` MiB or cannot be written (they are then refitted
    if chosen, never a failure of the trial). The models are pickled one by one, so that pickling
    stops at the first that crosses the limit rather than after all of them."""
    try:
        parts = []
        for model in models:
            parts.append(pickle.dumps(model, protocol=pickle.HIGHEST_PROTOCOL))
            if sum(map(len, parts)) > MAX_MODEL_MB * 2**20:
                return None
        name = f"{uuid.uuid4().hex}.pkl"
        write_file(Path(folder) / name, pickle.dumps(parts, protocol=pickle.HIGHEST_PROTOCOL))
        return name
    # MemoryError too: keeping the models must not turn a trial that fitted within a worker's
    # memory limit into a ``memout``
    except (OSError, MemoryError, pickle.PicklingError, TypeError, AttributeError):
        return None


def read_models(folder: str | Path, name: str) -> list[Any] | None:
    """The fold models a trial wrote (:func:`write_models`), or None when the file is gone. The
    folder is the run's own, written only by its trials, which is why unpickling it is safe."""
    try:
        return [pickle.loads(part) for part in pickle.loads((Path(folder) / name).read_bytes())]
    except (OSError, pickle.UnpicklingError, EOFError):
        return None
