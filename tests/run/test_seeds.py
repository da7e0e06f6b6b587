"""The seeds of a run (admm_automl/run/seeds.py)."""

from __future__ import annotations

import numpy as np
import pytest

from admm_automl.exceptions import InvalidParameterError
from admm_automl.run.seeds import benchmark_seeds, derive_seeds


def _streams(seeds):
    return (tuple(seeds.solvers.generate_state(4)), seeds.splits, seeds.models)


def test_one_random_state_gives_the_same_streams_and_another_gives_others():
    assert _streams(derive_seeds(0)) == _streams(derive_seeds(0))
    assert _streams(derive_seeds(0)) != _streams(derive_seeds(1))
    seeds = derive_seeds(0)
    assert seeds.splits != seeds.models  # spawned apart, not one number used twice
    assert 0 <= seeds.models < 2**31  # a random_state every scikit-learn estimator takes


def test_a_random_state_object_is_read_once_and_anything_else_is_refused():
    a, b = derive_seeds(np.random.RandomState(3)), derive_seeds(np.random.RandomState(3))
    assert _streams(a) == _streams(b)
    with pytest.raises(InvalidParameterError, match="random_state must be None, an int"):
        derive_seeds("0")


def test_a_benchmark_keeps_its_split_whatever_the_run_seed():
    first, second = benchmark_seeds(0, split_seed=7), benchmark_seeds(1, split_seed=7)
    assert first.splits == second.splits == 7
    assert (first.models, second.models) == (0, 1)
    assert tuple(second.solvers.generate_state(2)) == tuple(
        np.random.SeedSequence(1).generate_state(2))
