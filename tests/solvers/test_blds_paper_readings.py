"""BLDS options that follow readings of Kishimoto et al. (2021) other than the default:
``first_size="b"`` (the first training on b rows, D_k = Σ_{j≤k} bη^(j−1)) and
``incumbent_ladder="carry"`` (a new incumbent retrained one level above the one it replaced, as
in their worked example). Synthetic z-problems and a toy engine only, no scikit-learn fits."""

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


# ----------------------------------------------------------------------------- incumbent_ladder
# Appendix B of Kishimoto et al. (2021), Figure 3: three modules of two algorithms, a_i = 0 and
# b_i = 1. p1 = (a1, a2, a3) is the incumbent "trained with 800 samples"; with θ = 1, p2 = (b1, a2,
# a3) and (a1, b2, a3) are worse (their LCB above p1's UCB); p3 = (a1, a2, b3) overlaps p1 and is
# "re-trained ... (i.e., 400 samples)", still worse; with θ = 2 the first pipeline reached,
# p4 = (b1, b2, a3), has its UCB below p1's LCB and replaces p1; "BLDS re-trains p4 with an
# increased training subset (i.e., 1600 samples)" and searches with θ = 1 around p4.
P1, P2, Q, P3, P4 = (0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 1, 0)
R, S, T = (1, 0, 1), (0, 1, 1), (1, 1, 1)


def _appendix_b_loss(z, rows):
    """p1 looks best on small subsets (0.05) and worse from 800 rows on (0.60), p4 moderate on
    small data (0.30) and good on 1600 rows (0.10): so p1 climbs to 800 rows rejecting every
    neighbour at once, and at 800 the example's pass happens. Margins ≥ 0.02 at the default
    bound under both first sizes."""
    if z == P1:
        return 0.05 if rows < 800 else 0.60
    if z == P4:
        return 0.30 if rows < 1600 else 0.10
    if z == P3:
        return 0.60
    return 0.90


# the training sizes of the walk: p1 climbs its ladder, its six neighbours (distance ≤ 2, the
# θ = 2 pass's order) are trained once at the first size, then the example's pass at 800 rows
NEIGHBOURS = [P2, Q, P3, P4, R, S]


@pytest.mark.parametrize("first_size, sizes, p3_refit", [
    ("b_eta", [200, 400, 800], 400),  # the example's 400: p3's second training under "b_eta"
    ("b", [100, 200, 400, 800], 200),  # under "b" p3's second training is 200, not the 400
])
def test_carry_follows_the_appendix_b_walk_to_1600(first_size, sizes, p3_refit):
    problem, calls = _problem(_appendix_b_loss, 3200, start=P1)
    solver = _blds(problem, disc=2, order="fixed", first_size=first_size,
                   incumbent_ladder="carry")
    solver.run(len(sizes) + len(NEIGHBOURS) + 3)
    first = sizes[0]
    expected = ([(P1, first)] + [(z, first) for z in NEIGHBOURS]
                + [(P1, r) for r in sizes[1:]]      # p1 "trained with 800 samples"
                + [(P3, p3_refit),                  # p3 overlaps p1: re-trained once
                   (P4, 1600),                      # p4 replaced p1: "re-trains p4 with 1600"
                   (T, first)])                     # θ = 1 around p4: its one new neighbour
    assert calls == expected
    # the example's comparisons, from the cache (p1 at 800 rows)
    p1 = solver.cache_[P1]
    assert p1.level == len(sizes) - 1 and p1.consumed == sum(sizes)
    assert solver.cache_[P2].lcb > p1.ucb and solver.cache_[Q].lcb > p1.ucb  # worse
    p3 = solver.cache_[P3]
    assert p3.lcb <= p1.ucb and p3.ucb >= p1.ucb  # overlaps, and after its refit still not better
    p4 = solver.cache_[P4]
    assert p4.consumed == first + 1600  # its own data, not a climb through 200…800
    below, above = solver.bound_terms(p4.level, first + 1600)
    assert (p4.value, p4.lcb, p4.ucb) == pytest.approx((0.10, 0.10 - below, 0.10 + above))


@pytest.mark.parametrize("first_size, sizes, p3_refit", [
    ("b_eta", [200, 400, 800], 400), ("b", [100, 200, 400, 800], 200)])
def test_own_ladder_retrains_the_new_incumbent_at_its_own_second_size(first_size, sizes,
                                                                       p3_refit):
    """The default, the same walk up to p4's acceptance; then p4's next training is its own
    second one (400 or 200 rows), not 1600, and D counts the climb through its own levels."""
    problem, calls = _problem(_appendix_b_loss, 3200, start=P1)
    solver = _blds(problem, disc=2, order="fixed", first_size=first_size)
    solver.run(len(sizes) + len(NEIGHBOURS) + 2)
    first = sizes[0]
    assert calls == ([(P1, first)] + [(z, first) for z in NEIGHBOURS]
                     + [(P1, r) for r in sizes[1:]] + [(P3, p3_refit), (P4, sizes[1])])
    assert solver.cache_[P4].consumed == first + sizes[1]


def test_carry_never_trains_above_full_data_and_the_search_ends_there():
    """An incumbent replaced at full data hands on the full-data level, not one above it."""
    problem, calls = _problem(_appendix_b_loss, 800, start=P1)  # 800 rows: the full split
    solver = _blds(problem, disc=2, order="fixed", incumbent_ladder="carry")
    solver.run(12)
    assert all(r <= 800 for _, r in calls)
    assert (P4, 800) in calls and solver.cache_[P4].done


def test_incumbent_ladder_is_validated():
    problem, _ = _problem(lambda z, r: 0.5, 1600)
    for bad in ("inherit", None, 1):
        with pytest.raises(InvalidParameterError, match="incumbent_ladder"):
            _blds(problem, incumbent_ladder=bad)


def test_options_are_reachable_from_the_estimators_z_solver_spec():
    """``ADMM(z_solver={"name": "blds", "params": {...}})``: the spec the estimator hands to
    the optimiser builds a BLDS with both options; run by algorithm selection over a toy engine
    with 1600 training rows, its first training after the full-data default start is b = 100
    rows."""
    from admm_automl import ADMM
    from admm_automl.methods.registry import make_optimizer
    from admm_automl.testing import SYNTHETIC, ToyEngine, synthetic_loss

    spec = {"name": "blds", "params": {"first_size": "b", "incumbent_ladder": "carry"}}
    est = ADMM(z_solver=spec)
    solver = Z_SOLVERS.create(est.z_solver)
    assert (solver.first_size, solver.incumbent_ladder) == ("b", "carry")
    engine = ToyEngine(SYNTHETIC, synthetic_loss, fidelity_bias=0.1)
    opt = make_optimizer("select", SYNTHETIC.encoding, engine, z_solver=est.z_solver,
                         space=SYNTHETIC, max_evals=4, seed=0, n_train=1600)
    opt.run()
    fidelities = [call[2] for call in engine.calls]
    assert fidelities[0] == 1.0 and fidelities[1] * 1600 == 100
    bad = {"name": "blds", "params": {"incumbent_ladder": "inherit"}}
    with pytest.raises(InvalidParameterError, match="incumbent_ladder"):
        make_optimizer("select", SYNTHETIC.encoding, ToyEngine(SYNTHETIC, synthetic_loss),
                       z_solver=bad, space=SYNTHETIC, max_evals=4, seed=0, n_train=1600).run()
