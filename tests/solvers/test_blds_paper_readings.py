"""BLDS options that follow readings of Kishimoto et al. (2021) other than the default:
``first_size="b"`` (the first training on b rows, D_k = Σ_{j≤k} bη^(j−1)). Synthetic z-problems
only, no scikit-learn fits."""

from __future__ import annotations

import math

import numpy as np
import pytest

from admm_automl.exceptions import InvalidParameterError
from admm_automl.problem import ZProblem
from admm_automl.records import Observation
from admm_automl.solvers import Z_SOLVERS

B, ETA = 100, 2  # the paper's b and η


def _problem(values, n_train, **kwargs):
    """A z-problem over 3 modules of 2 algorithms; ``values(z, rows)`` is the loss of z trained on
    ``rows`` rows; ``calls`` logs every evaluation as (z, rows)."""
    calls: list[tuple[tuple[int, ...], int]] = []

    def evaluate(suggestions):
        out = []
        for s in suggestions:
            z = tuple(s.config)
            f = 1.0 if s.fidelity is None else float(s.fidelity)
            rows = math.ceil(f * n_train)
            calls.append((z, rows))
            out.append(Observation(loss=values(z, rows), fidelity=f))
        return out

    problem = ZProblem(n_choices=(2, 2, 2), evaluate=evaluate, augment=lambda z, o: o.loss,
                       n_train=n_train, **kwargs)
    return problem, calls


def _blds(problem, seed=0, **params):
    solver = Z_SOLVERS.create({"name": "blds", "params": params})
    solver.setup(problem, np.random.default_rng(seed))
    return solver


def _printed_d(k):
    """D_k = Σ_{j=1..k} bη^(j−1), as printed."""
    return sum(B * ETA ** (j - 1) for j in range(1, k + 1))


# ----------------------------------------------------------------------------- first_size
@pytest.mark.parametrize("n_train", [1600, 34189])  # 34189: ADULT's training split in the paper
def test_first_size_b_ladder_starts_at_b_and_d_is_the_printed_sum(n_train):
    """b, bη, bη², … rows; D after the k-th training is Σ_{j≤k} bη^(j−1) at every level below
    full data (D_1 = b = 100), and the full-data level adds the training split's size."""
    problem, _ = _problem(lambda z, r: 0.5, n_train)
    ladder = _blds(problem, first_size="b").ladder_
    partial = ladder.rows[:-1]
    assert partial == tuple(B * ETA ** (k - 1) for k in range(1, len(partial) + 1))
    assert ladder.rows[0] == 100 and ladder.rows[-1] == n_train
    assert [ladder.cumulative(k) for k in range(len(partial))] == [
        _printed_d(k) for k in range(1, len(partial) + 1)]
    assert ladder.cumulative(0) == 100 and ladder.cumulative(1) == 300
    assert ladder.cumulative(ladder.top) == _printed_d(len(partial)) + n_train
    # the default reading: bη, bη², …; 9 partial levels of ADULT's 10 under "b", 8 under "b_eta"
    default = _blds(problem).ladder_
    assert default.rows[:2] == (200, 400) and default.cumulative(0) == 200
    assert len(default.rows) == len(ladder.rows) - 1


@pytest.mark.parametrize("first_size, rows, radius", [("b", 100, 0.0202), ("b_eta", 200, 0.0845)])
def test_first_training_uses_the_configured_size_and_its_radius(first_size, rows, radius):
    """The first pipeline BLDS trains gets b rows under "b" ("after training p with b samples")
    and bη under "b_eta"; its interval is v ± sqrt(ln((cL/δ)·D²)/D) at cL/δ = 1/9600 with
    D = D_1 = 100 (0.0202) or 200 (0.0845)."""
    problem, calls = _problem(lambda z, r: 0.3, 1600)
    solver = _blds(problem, bound="even_dar", first_size=first_size)
    solver.run(1)
    ((z, used),) = calls
    assert used == rows
    rec = solver.cache_[z]
    assert rec.level == 0 and rec.value == 0.3
    assert rec.ucb - 0.3 == pytest.approx(radius, abs=5e-5)
    assert 0.3 - rec.lcb == pytest.approx(radius, abs=5e-5)


def test_default_bound_is_flat_below_its_peak_so_both_first_sizes_give_one_interval():
    """The default "monotone" bound flattens the radius below D ≈ 266 rows, so D_1 = 100 and
    D = 200 give the same first interval, (0.1487, 0.0867) below and above v."""
    intervals = []
    for first_size in ("b", "b_eta"):
        problem, calls = _problem(lambda z, r: 0.3, 1600)
        solver = _blds(problem, first_size=first_size)
        solver.run(1)
        rec = solver.cache_[calls[0][0]]
        intervals.append((0.3 - rec.lcb, rec.ucb - 0.3))
    assert intervals[0] == pytest.approx((0.1487, 0.0867), abs=5e-5)
    assert intervals[1] == pytest.approx(intervals[0])


def test_first_size_leaves_daub_and_hyperband_on_the_shared_ladder():
    problem, _ = _problem(lambda z, r: 0.5, 1600)
    for name in ("daub", "hyperband"):
        solver = Z_SOLVERS.create(name)
        solver.setup(problem, np.random.default_rng(0))
        assert solver.ladder_.rows == (200, 400, 800, 1600)


def test_first_size_is_validated():
    problem, _ = _problem(lambda z, r: 0.5, 1600)
    for bad in ("bη", "B", None, 0, 1):
        with pytest.raises(InvalidParameterError, match="first_size"):
            _blds(problem, first_size=bad)
