"""The capability-gated checks of :mod:`admm_automl.testing.solver_checks` themselves: which checks
apply to which solver, and, for every gated check, a deliberately broken toy solver that fails it
(and, where the check is subtle, a correct toy that passes it). The built-in solvers are run
through the checks in ``test_conformance.py``."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from admm_automl.solvers import BaseThetaSolver, BaseZSolver
from admm_automl.solvers.base import random_z
from admm_automl.solvers.theta.bapi import BAPIThetaSolver
from admm_automl.solvers.theta.bo import GPBayesOptThetaSolver
from admm_automl.solvers.z.hyperband import HyperbandZSolver
from admm_automl.testing import (
    CAPABILITIES,
    THETA_CAPABILITY_CHECKS,
    THETA_CHECKS,
    Z_CAPABILITY_CHECKS,
    Z_CHECKS,
    SolverCapabilities,
    check_theta_solver,
    solver_capabilities,
    yield_solver_checks,
)
from admm_automl.testing import solver_checks as sc


# ------------------------------------------------------------------ toy solvers
class UniformTheta(BaseThetaSolver):
    """Uniform random θ; the base of the θ toys."""

    def __init__(self) -> None:
        pass

    def _ask(self):
        return self.rng_.uniform(0.0, 1.0, size=self.problem_.dim), None


class UniformZ(BaseZSolver):
    def __init__(self) -> None:
        pass

    def _ask(self):
        return random_z(self.rng_, self.problem_.n_choices), None


class _BatchOf(object):
    """A ``_run`` that hands the problem ``batch_size`` suggestions at once, declared or not."""

    def _run(self):
        batch = max(1, int(self.problem_.batch_size))
        while not self._run_done():
            self._evaluate([self.ask() for _ in range(min(batch, self.fresh_left_))])


class _OneAtATime(object):
    """A ``_run`` that never batches."""

    def _run(self):
        while not self._run_done():
            self._evaluate([self.ask()])


# supports_batch -----------------------------------------------------------------------------
class RepeatingBatchTheta(UniformTheta):
    """Declares batches, but asks the pending point again instead of a new one."""

    supports_batch = True

    def _ask(self):
        if self.pending_:
            return np.array(next(iter(self.pending_.values())).config), None
        return super()._ask()


class UnbatchedZ(_OneAtATime, UniformZ):
    """Declares batches, but its loop never asks more than one at a time."""

    supports_batch = True


class SynchronousBatchTheta(_BatchOf, UniformTheta):
    """Declares batches, but its own loop evaluates in batches even when the problem can take
    one suggestion at a time (``submit``): asynchronously, nothing is ever in flight."""

    supports_batch = True


class RepeatingBatchZ(UniformZ):
    """Declares batches, but asks the pending choice again instead of a new one: asynchronously
    only one suggestion is ever in flight (a repeat is not submitted)."""

    supports_batch = True

    def _ask(self):
        if self.pending_:
            return tuple(next(iter(self.pending_.values())).config), None
        return super()._ask()


class _BlindToFlights(object):
    """Declares batches, but what a proposal must not repeat leaves out the trials in flight
    for earlier steps (``problem.in_flight``): only its own pending suggestions."""

    supports_batch = True

    def _taken(self):
        from admm_automl.solvers.base import Taken

        super()._taken()  # keeps the pending multiset up to date
        return Taken(self.pending_keys_)


class FlightBlindTheta(_BlindToFlights, UniformTheta):
    pass


class FlightBlindZ(_BlindToFlights, UniformZ):
    pass


class UndeclaredBatchTheta(_BatchOf, UniformTheta):
    """Batches without declaring it."""


class UndeclaredBatchZ(_BatchOf, UniformZ):
    pass


# supports_fidelity --------------------------------------------------------------------------
class FullDataFidelityZ(UniformZ):
    """Declares fidelities, but always asks the whole data."""

    supports_fidelity = True


class PartialBestZ(UniformZ):
    """Declares fidelities and asks partial data, but ``best`` ranks partial and full losses
    together (the base z-solver's ``best`` keeps full-data trials only; this one all)."""

    supports_fidelity = True

    def _comparable_trials(self):
        return list(self.trials_)

    def _ask(self):
        hi = self.problem_.fidelity[1] if self.problem_.fidelity else 1.0
        return random_z(self.rng_, self.problem_.n_choices), (hi / 4 if self.n_asked_ % 2 else hi)


class UndeclaredFidelityZ(UniformZ):
    def _ask(self):
        return random_z(self.rng_, self.problem_.n_choices), 0.5


# keeps_state --------------------------------------------------------------------------------
class LocalSearchTheta(BaseThetaSolver):
    """Keeps state: an incumbent (point, value, observation), with Gaussian steps around it.
    ``update_problem`` re-scores the incumbent from the new history: a correct solver."""

    keeps_state = True

    def __init__(self) -> None:
        pass

    def _rescore(self):
        problem = self.problem_
        scored = [(np.asarray(x, dtype=float), problem.augment(x, o), o)
                  for x, o in problem.history]
        self.incumbent_ = min(scored, key=lambda t: t[1]) if scored else None

    def _setup(self):
        self._rescore()

    def update_problem(self, problem):
        super().update_problem(problem)
        self._rescore()

    def _ask(self):
        dim = self.problem_.dim
        if self.incumbent_ is None:
            return self.rng_.uniform(0.0, 1.0, size=dim), None
        step = self.rng_.normal(0.0, 0.05, size=dim)
        return np.clip(self.incumbent_[0] + step, 0.0, 1.0), None

    def _tell(self, suggestion, observation):
        value = self.problem_.augment(suggestion.config, observation)
        if self.incumbent_ is None or value < self.incumbent_[1]:
            self.incumbent_ = (np.asarray(suggestion.config, dtype=float), value, observation)


class StaleAsksTheta(LocalSearchTheta):
    """Does not re-score its incumbent when the duals change: asks around the old best."""

    def update_problem(self, problem):
        BaseThetaSolver.update_problem(self, problem)


class StaleBestTheta(StaleAsksTheta):
    """...and ``best`` returns that stale incumbent."""

    def best(self):
        return None if self.incumbent_ is None else (self.incumbent_[0], self.incumbent_[2])


# needs_training_length ----------------------------------------------------------------------
_UNSEEDED = np.random.default_rng()


class LengthTheta(UniformTheta):
    """Chooses training lengths by ``rule``: "correct" (uniform in [t_min, t_max], none where a
    point has no training length), "over" (t_max + 5), "full" (always t_max), "everywhere" (10,
    also where a point has none), "fraction" (t_max // 5, whatever t_min), "unseeded" (lengths
    from a global generator), "blind" (50 also on a problem without training lengths)."""

    needs_training_length = True

    def __init__(self, rule: str = "correct") -> None:
        self.rule = rule

    def _iterations(self, length):
        rule = self.rule
        if rule == "blind":
            return 50
        if length is None:
            return 10 if rule == "everywhere" else None
        return {
            "correct": lambda: int(self.rng_.integers(length.t_min, length.t_max + 1)),
            "over": lambda: length.t_max + 5,
            "full": lambda: length.t_max,
            "everywhere": lambda: 10,
            "fraction": lambda: max(1, length.t_max // 5),
            "unseeded": lambda: int(_UNSEEDED.integers(length.t_min, length.t_max + 1)),
        }[rule]()

    def ask(self):
        suggestion = super().ask()
        find = self.problem_.training_length
        length = None if find is None else find(np.asarray(suggestion.config, dtype=float))
        suggestion = replace(suggestion, iterations=self._iterations(length))
        self.pending_[suggestion.id] = suggestion
        return suggestion


class UndeclaredLengthTheta(LengthTheta):
    needs_training_length = False


# supports_cheap_proposals -------------------------------------------------------------------
class OutOfBoxCheapTheta(UniformTheta):
    supports_cheap_proposals = True

    def _cheap_configs(self, n):
        return [self.rng_.uniform(0.5, 1.5, size=self.problem_.dim) for _ in range(n)]


class UnmarkedCheapZ(UniformZ):
    """Declares cheap proposals, but hands out its ordinary asks, not marked cheap."""

    supports_cheap_proposals = True

    def ask_cheap(self, n):
        return [self.ask() for _ in range(int(n))]


class UndeclaredCheapTheta(UniformTheta):
    """Takes cheap proposals without declaring it."""

    def ask_cheap(self, n):
        return [self._issue(c, None, cheap=True) for c in self._cheap_configs(int(n))]


class UndeclaredCheapZ(UniformZ):
    def ask_cheap(self, n):
        return [self._issue(c, None, cheap=True) for c in self._cheap_configs(int(n))]


# ------------------------------------------------------------------ every gated check can fail
#: (check, broken toy, what the failure says)
BROKEN = [
    (sc.check_theta_asynchronous, SynchronousBatchTheta, "in flight after each submit: \\[\\]"),
    (sc.check_z_asynchronous, RepeatingBatchZ, "in flight after each submit: \\[1, 1"),
    (sc.check_theta_batch_asks, RepeatingBatchTheta, "asks one point twice"),
    (sc.check_z_batch_asks, UnbatchedZ, "batch sizes"),
    (sc.check_theta_batch_with_pending, FlightBlindTheta, "a batch repeats a trial in flight"),
    (sc.check_z_batch_with_pending, FlightBlindZ, "a batch repeats a trial in flight"),
    (sc.check_theta_asks_one_at_a_time, UndeclaredBatchTheta, "batch sizes"),
    (sc.check_z_asks_one_at_a_time, UndeclaredBatchZ, "batch sizes"),
    (sc.check_z_fidelity_uses_partial_data, FullDataFidelityZ, "never used less"),
    (sc.check_z_fidelity_best_is_full_data, PartialBestZ, "best.. returned an observation at"),
    (sc.check_z_full_data_only, UndeclaredFidelityZ, "does not declare supports_fidelity"),
    (sc.check_theta_keeps_state_rescores, StaleAsksTheta, "nearer the best point under the old"),
    (sc.check_theta_keeps_state_rescores, StaleBestTheta, "still ranks by the old"),
    (sc.check_theta_training_lengths_in_range, lambda: LengthTheta("over"),
     r"iterations=105 outside \[t_min, t_max\]"),
    (sc.check_theta_training_lengths_in_range, lambda: LengthTheta("full"),
     "every training went to t_max"),
    (sc.check_theta_training_lengths_in_range, lambda: LengthTheta("everywhere"),
     "for a point without a training length"),
    (sc.check_theta_training_lengths_respect_t_min, lambda: LengthTheta("fraction"),
     r"iterations=20 outside \[t_min, t_max\] = \[40, 100\]"),
    (sc.check_theta_training_length_reproducible, lambda: LengthTheta("unseeded"),
     "the same seed gave different"),
    (sc.check_theta_without_training_length, lambda: LengthTheta("blind"),
     "iterations on a problem without lengths"),
    (sc.check_theta_sets_no_training_length, UndeclaredLengthTheta,
     "does not declare needs_training_length"),
    (sc.check_theta_cheap_proposals, OutOfBoxCheapTheta, r"\["),  # _assert_theta: the point
    (sc.check_z_cheap_proposals, UnmarkedCheapZ, "not marked cheap"),
    (sc.check_theta_no_cheap_proposals, UndeclaredCheapTheta, "expected SolverError"),
    (sc.check_z_no_cheap_proposals, UndeclaredCheapZ, "expected SolverError"),
]


def _toy_name(make) -> str:
    solver = make()
    rule = getattr(solver, "rule", None)
    return type(solver).__name__ + (f"({rule})" if rule else "")


@pytest.mark.parametrize("check,make,message", BROKEN,
                         ids=[f"{c.__name__[6:]}-{_toy_name(m)}" for c, m, _ in BROKEN])
def test_a_broken_toy_solver_fails_the_gated_check(check, make, message):
    with pytest.raises(AssertionError, match=message):
        check(make)


def test_every_gated_check_has_a_broken_toy():
    gated = {check for table in (THETA_CAPABILITY_CHECKS, Z_CAPABILITY_CHECKS)
             for declared, undeclared in table.values() for check in declared + undeclared}
    assert gated == {check for check, _, _ in BROKEN}


CORRECT = [
    (sc.check_theta_keeps_state_rescores, LocalSearchTheta),
    (sc.check_theta_training_lengths_in_range, LengthTheta),
    (sc.check_theta_training_lengths_respect_t_min, LengthTheta),
    (sc.check_theta_training_length_reproducible, LengthTheta),
    (sc.check_theta_without_training_length, LengthTheta),
]


@pytest.mark.parametrize("check,make", CORRECT,
                         ids=[f"{c.__name__[6:]}-{m.__name__}" for c, m in CORRECT])
def test_a_correct_toy_solver_passes_the_subtle_checks(check, make):
    """The toys above fail for their defect, not for being toys."""
    check(make)


# ------------------------------------------------------------------ capabilities and listing
def test_capabilities_are_read_from_the_class_or_an_instance():
    caps = solver_capabilities(BAPIThetaSolver)
    assert caps == solver_capabilities(BAPIThetaSolver())
    assert caps == SolverCapabilities("theta", supports_batch=False, supports_fidelity=False,
                                      keeps_state=True, supports_cheap_proposals=True,
                                      needs_training_length=True)
    assert solver_capabilities(UniformTheta) == SolverCapabilities("theta")  # lacking: False
    assert solver_capabilities(HyperbandZSolver).supports_fidelity
    assert set(CAPABILITIES) == {"supports_batch", "supports_fidelity", "keeps_state",
                                 "supports_cheap_proposals", "needs_training_length"}
    with pytest.raises(ValueError, match="not a solver"):
        solver_capabilities(object())


def test_the_checks_that_apply_follow_the_capabilities():
    names = {c.__name__ for c in yield_solver_checks(BAPIThetaSolver)}
    assert {c.__name__ for c in THETA_CHECKS} <= names
    assert {"check_theta_keeps_state_rescores", "check_theta_training_lengths_in_range",
            "check_theta_training_lengths_respect_t_min",
            "check_theta_training_length_reproducible",
            "check_theta_without_training_length", "check_theta_cheap_proposals",
            "check_theta_asks_one_at_a_time"} <= names
    assert not names & {"check_theta_batch_asks", "check_theta_sets_no_training_length",
                        "check_theta_no_cheap_proposals"}
    bo = {c.__name__ for c in yield_solver_checks(GPBayesOptThetaSolver())}
    assert {"check_theta_batch_asks", "check_theta_cheap_proposals",
            "check_theta_sets_no_training_length"} <= bo
    assert "check_theta_keeps_state_rescores" not in bo
    z = list(yield_solver_checks(HyperbandZSolver))
    assert z[:len(Z_CHECKS)] == list(Z_CHECKS)  # general checks first
    assert {sc.check_z_fidelity_uses_partial_data, sc.check_z_fidelity_best_is_full_data,
            sc.check_z_asks_one_at_a_time, sc.check_z_no_cheap_proposals} <= set(z)
    assert len(z) == len(set(z))


def test_check_theta_solver_runs_the_gated_checks_and_refuses_a_z_solver():
    """``check_theta_solver`` runs the checks of the capabilities: a solver that passes every
    general check fails it for a stale state only."""
    for check in THETA_CHECKS:
        check(StaleAsksTheta)
    with pytest.raises(AssertionError, match="after update_problem"):
        check_theta_solver(StaleAsksTheta)
    with pytest.raises(AssertionError, match="z-solver given to check_theta_solver"):
        check_theta_solver(UniformZ)
