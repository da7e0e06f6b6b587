"""The seeds of a run: one ``random_state`` → the independent random streams of the solvers, the
splits and the models (:func:`derive_seeds`, the estimator's), or a benchmark's, whose split is
the same for every method and seed (:func:`benchmark_seeds`)."""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..exceptions import InvalidParameterError


@dataclass(frozen=True)
class Seeds:
    """The independent random streams of a run, derived from one seed."""

    solvers: np.random.SeedSequence
    splits: int
    models: int


def derive_seeds(random_state: Any) -> Seeds:
    """Spawn the solvers', the splits' and the models' seeds from ``random_state`` (None, an int
    or a RandomState), in a fixed order."""
    if isinstance(random_state, np.random.RandomState):
        entropy = int(random_state.randint(np.iinfo(np.int32).max))
    elif random_state is None or isinstance(random_state, numbers.Integral):
        entropy = random_state
    else:
        raise InvalidParameterError(
            f"random_state must be None, an int or a RandomState, got {random_state!r}"
        )
    solvers, splits, models = np.random.SeedSequence(entropy).spawn(3)
    return Seeds(solvers, int(splits.generate_state(1)[0]), int(models.generate_state(1)[0] >> 1))


def benchmark_seeds(seed: int, split_seed: int = 0) -> Seeds:
    """The seeds of run ``seed`` of a benchmark: ``split_seed`` for the validation split, and
    ``seed`` itself as the solvers' seed and the models' ``random_state``.

    Not :func:`derive_seeds`, on purpose: a benchmark compares its methods on the same training
    and validation rows (Liu et al. 2020, Section 5; Kishimoto et al. 2021), so the split must not
    change with the run's seed; and its protocol (experiments/README.md) makes seed k the solvers'
    and the models' seed, so that a recorded run of seed k replays as it was recorded.
    """
    return Seeds(np.random.SeedSequence(seed), int(split_seed), int(seed))
