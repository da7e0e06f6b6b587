"""The ``flash`` z-solver (admm_automl/solvers/z/flash.py): FLASH's path model and EIPS as the
z-step, fed by every evaluation of the run; and ``ADMM(z_solver="flash")`` end to end on toy
engines with every θ-solver and with constraints."""

from __future__ import annotations

import numpy as np
import pytest

from admm_automl.exceptions import InvalidParameterError
from admm_automl.problem import ZProblem
from admm_automl.records import Observation, Status
from admm_automl.solvers import Z_SOLVERS
from admm_automl._numerics import flash as F
from admm_automl.solvers.z.flash import FlashZSolver, observation_seconds
from admm_automl.testing import general_theta_solvers, make_z_problem, wide_space

SIZES = (4, 3)


def additive_loss(z):
    """Module 0: choice 3 is best; module 1: choice 1 is best (an additive truth)."""
    return 0.1 * abs(z[0] - 3) + 0.2 * abs(z[1] - 1)


def problem(observations=None, augment=None, history=()):
    asked = []

    def evaluate(suggestions):
        asked.extend(tuple(s.config) for s in suggestions)
        return [Observation(loss=additive_loss(s.config)) for s in suggestions]

    return ZProblem(
        n_choices=SIZES, evaluate=evaluate,
        augment=augment or (lambda z, obs: obs.loss), history=list(history),
        observations=observations,
    ), asked


def test_the_initial_asks_are_the_d_optimal_design():
    """With nothing observed, the first n_init asks are distinct paths of full rank (every
    algorithm covered), and they follow the greedy design rule."""
    solver = FlashZSolver().setup(problem()[0], np.random.default_rng(0))
    rank = F.path_rank(SIZES)
    assert solver.n_init_ == rank == 6
    zs = [solver.ask().config for _ in range(rank)]
    assert len(set(zs)) == rank
    assert np.linalg.matrix_rank(F.encode_paths(np.array(zs), SIZES)) == rank
    for i in range(len(SIZES)):
        assert {z[i] for z in zs} == set(range(SIZES[i]))  # every algorithm is tried


def test_every_evaluation_of_the_run_feeds_the_models():
    """Observations made elsewhere in the run (other θ, θ-steps) count: with the design already
    covered by them the solver exploits the additive model (ξ = 0) and asks the one unobserved
    path that is best, (3, 1); without them it would still be in its design."""
    everything = [z for z in F.all_paths(SIZES).tolist() if tuple(z) != (3, 1)]
    run = [(tuple(z), Observation(loss=additive_loss(z), fit_time=0.1)) for z in everything]
    solver = FlashZSolver(xi=0.0).setup(problem(lambda: run)[0], np.random.default_rng(1))
    assert solver.ask().config == (3, 1)
    alone = FlashZSolver(xi=0.0).setup(problem()[0], np.random.default_rng(1))
    assert len(alone._observed()) == 0  # on its own it would start the design


def test_the_model_is_fitted_to_problem_augment():
    """The value modelled is ``problem.augment`` (loss plus the current constraint terms): a
    large term on module 0's choice 3 moves the pick away from the loss-optimal path."""
    everything = [z for z in F.all_paths(SIZES).tolist() if tuple(z) not in ((3, 1), (2, 1))]
    run = [(tuple(z), Observation(loss=additive_loss(z))) for z in everything]
    augment = lambda z, obs: obs.loss + (1.0 if z[0] == 3 else 0.0)  # noqa: E731
    solver = FlashZSolver(xi=0.0).setup(problem(lambda: run, augment)[0],
                                        np.random.default_rng(2))
    assert solver.ask().config == (2, 1)


def test_paths_asked_under_the_current_theta_are_not_asked_again():
    """The argmax skips paths asked (or pending) in this z-problem: a repeat would be a cache
    hit; in a later problem (a new θ) they are candidates again."""
    everything = F.all_paths(SIZES).tolist()
    run = [(tuple(z), Observation(loss=additive_loss(z))) for z in everything]
    prob, _ = problem(lambda: run, history=[((3, 1), Observation(loss=0.0))])
    solver = FlashZSolver(xi=0.0).setup(prob, np.random.default_rng(3))
    first = solver.ask()
    second = solver.ask()
    assert (3, 1) not in (first.config, second.config) and first.config != second.config
    later, _ = problem(lambda: run)
    solver.update_problem(later)
    assert solver.ask().config == (3, 1)


def test_failed_evaluations_enter_the_models_as_the_worst_value_with_their_time():
    """A failed path keeps its failure loss (the worst value) and a NaN gets the worst finite one;
    both models are fitted and the failed algorithm is avoided. Its cost is the measured time."""
    run = [((z0, z1), Observation(loss=additive_loss((z0, z1)), fit_time=1.0))
           for z0 in range(4) for z1 in range(3) if z0 != 3 and (z0, z1) != (2, 1)]
    run += [((3, 0), Observation(loss=1.0, status=Status.FAILED, duration=1.0)),
            ((3, 2), Observation(loss=float("nan"), status=Status.FAILED, duration=1.0))]
    solver = FlashZSolver(xi=0.0).setup(problem(lambda: run)[0], np.random.default_rng(4))
    assert solver.ask().config == (2, 1)  # not (3, 1): module 0's choice 3 looks worst
    assert observation_seconds(run[-2][1]) == 1.0  # ended by the executor: its wall time
    assert observation_seconds(Observation(loss=0, fit_time=1.0, predict_time=0.5,
                                           duration=9.0)) == 1.5
    # a success that reports no time (an analytic function) costs 0, not its noisy wall time
    assert observation_seconds(Observation(loss=0, duration=0.003)) == 0.0


def test_timed_out_evaluations_teach_the_cost_model_only():
    """Module 0's choice 3 is the best; two runs of (3, 2) timed out. Censored, the pick is the
    unobserved (3, 1), which the additive model predicts best from (3, 0); scored as the worst
    loss (censor_timeouts=False), choice 3 is avoided."""
    run = [((z0, z1), Observation(loss=additive_loss((z0, z1)), fit_time=0.5))
           for z0 in range(3) for z1 in range(3)]
    run += [((3, 0), Observation(loss=additive_loss((3, 0)), fit_time=0.5))] * 2
    run += [((3, 2), Observation(loss=1.0, status=Status.TIMEOUT, duration=0.6))] * 2
    censored = FlashZSolver(xi=0.0).setup(problem(lambda: run)[0], np.random.default_rng(5))
    assert censored.ask().config == (3, 1)
    worst = FlashZSolver(xi=0.0, censor_timeouts=False).setup(problem(lambda: run)[0],
                                                            np.random.default_rng(5))
    assert worst.ask().config[0] != 3


def test_partial_interrupted_and_cached_evaluations_are_left_out():
    run = [((0, 0), Observation(loss=0.1, fidelity=0.5)),
           ((1, 0), Observation(loss=0.1, budget_stop=True)),
           ((2, 0), Observation(loss=0.1, cached=True)),
           ((3, 0), Observation(loss=0.1))]
    solver = FlashZSolver().setup(problem(lambda: run)[0], np.random.default_rng(0))
    assert solver._observed().paths.array.tolist() == [[3, 0]]


@pytest.mark.parametrize("params, message", [
    ({"n_init": 0}, "n_init must be an integer >= 1, got 0"),
    ({"xi": -1.0}, "xi must be a finite number >= 0"),
    ({"ridge_alpha": 0.0}, "ridge_alpha must be a finite number > 0, got 0.0"),
    ({"cost_transform": "sqrt"}, "cost_transform must be one of"),
    ({"censor_timeouts": "no"}, "censor_timeouts must be a bool, got 'no'"),
])
def test_bad_parameters_get_clear_errors(params, message):
    with pytest.raises(InvalidParameterError, match=message):
        Z_SOLVERS.create({"name": "flash", "params": params}).setup(
            make_z_problem()[0], np.random.default_rng(0))


# ----------------------------------------------------------------------------- inside ADMM
BIG = wide_space(3, 4)  # 6 x 6 = 36 pipelines


@pytest.mark.parametrize("theta_solver", general_theta_solvers())  # bapi: its own tests
def test_admm_with_the_flash_z_solver_runs_with_every_theta_solver(make_engine, make_optimizer,
                                                                   theta_solver):
    """``ADMM(z_solver="flash")``: the budget is exact, the z-steps ask distinct paths per θ, and
    the z-solver's models see the θ-steps' evaluations too."""
    engine = make_engine(BIG)
    opt = make_optimizer("admm", engine=engine, space=BIG, theta=theta_solver,
                         z={"name": "flash", "params": {"n_init": 4}}, max_evals=24)
    result = opt.run()
    assert result.n_evals == 24 == len(engine.calls)
    phases = [c[3] for c in engine.calls]
    assert "z" in phases and "theta" in phases
    assert result.incumbent.observation.loss == min(e.observation.loss for e in result.evaluated)


def test_admm_with_the_flash_z_solver_handles_constraints(make_optimizer):
    """With a constraint in ADMM mode the run ends with a feasible incumbent: the z-solver models
    the z-problem's augmented value (loss + the multiplier and slack terms)."""
    from admm_automl.testing import wide_loss

    class Size:
        key, threshold, sense = "size", 1.0, "<="

    def engine(requests, time_left=None, tags=None):
        out = []
        for r in requests:
            config = BIG.decode(r.z, r.theta)
            size = 2.0 if config["model"] == "b" else 0.5  # the loss-optimal model violates it
            out.append(Observation(loss=wide_loss(config), constraints={"size": size}))
        return out

    result = make_optimizer("admm", engine=engine, space=BIG, theta="random",
                            z={"name": "flash", "params": {"n_init": 4}}, constraints=[Size()],
                            max_evals=60).run()
    best = result.incumbent.observation
    assert best.constraints["size"] <= 1.0
    assert "mu:size" in result.trace[-1]


# ------------------------------------ the arrays kept from one ask to the next (many workers)
class RereadFlash(FlashZSolver):
    """The ``flash`` ask as it was before the arrays were kept: every observation converted,
    filtered and scored again, the asked paths found by a set, the one-hot products (the
    reference the kept arrays must reproduce)."""

    def _ask(self):
        from admm_automl.solvers.base import random_z
        from admm_automl.solvers.z.flash import fit_models, usable

        n_choices = self.problem_.n_choices
        pending = [tuple(s.config) for s in self.pending_.values()]
        pending += [tuple(int(j) for j in c) for c, _ in self._in_flight_elsewhere()]
        asked = {tuple(z) for z, _ in self.problem_.history}
        asked.update(tuple(c) for c, _ in self.trials_)
        asked.update(pending)
        free = self.paths_[[p not in asked for p in self.path_tuples_]]
        if len(free) == 0:
            return random_z(self.rng_, n_choices), None
        source = self.problem_.observations
        pairs = source() if source is not None else self.own_
        data = [(tuple(int(j) for j in z), obs) for z, obs in pairs if usable(obs)]
        seen = {z for z, _ in data}.union(pending)
        if len(seen) < self.n_init_ or not data:
            observed = F.encode_paths(np.array(sorted(seen)), n_choices) if seen else None
            design = F.greedy_d_optimal_design(F.encode_paths(free, n_choices), 1, self.rng_,
                                               observed=observed)
            return tuple(int(j) for j in free[design.indices[0]]), None
        models = fit_models(data, self.problem_.augment, n_choices, alpha=self.ridge_alpha_,
                            transform=self.cost_transform_,
                            censor_timeouts=self.censor_timeouts)
        best = F.rank_with_random_ties(models.log_eips(free, self.xi_), self.rng_)[0]
        return tuple(int(j) for j in free[best]), None


def _wide_loss(z):
    return 0.05 * abs(z[0] - 3) + 0.1 * abs(z[1] - 1) + 0.02 * z[2] + 0.03 * (z[3] % 2)


def _wide_problem(run, augment, history=()):
    return ZProblem(n_choices=(6, 4, 5, 3), evaluate=lambda s: [], augment=augment,
                    history=list(history), observations=(lambda: run) if run is not None else None)


def _observation(z, i):
    status = Status.TIMEOUT if i % 11 == 5 else Status.OK
    return Observation(loss=_wide_loss(z), fit_time=0.01 * (1 + z[0]), status=status,
                       cached=(i % 13 == 7))


@pytest.mark.parametrize("width", [1, 8])
@pytest.mark.parametrize("shared", [False, True])
def test_the_kept_arrays_give_the_asks_of_the_reread_path(width, shared):
    """A run of 60 proposals, serial (width 1) or with 7 trials pending at each ask (width 8),
    with the run's observations shared (``problem.observations``) or the solver's own, timed
    out and cached evaluations among them, and a new ADMM iterate (new duals: another
    ``augment``) halfway: every proposal equals the re-reading reference's."""
    paths = []
    for cls in (FlashZSolver, RereadFlash):
        run = [] if shared else None
        augment = lambda z, obs: obs.loss  # noqa: E731
        solver = cls(xi=0.0).setup(_wide_problem(run, augment), np.random.default_rng(3))
        flying, asked, i = list(solver.ask_batch(width)), [], 0
        while len(asked) < 60:
            done = flying.pop(0)
            obs = _observation(done.config, i)
            if run is not None:
                run.append((done.config, obs))
            solver.tell(done, obs)
            i += 1
            if i == 30:  # new duals: the values must be read again
                history = [(done.config, obs)]
                solver.update_problem(_wide_problem(
                    run, lambda z, o: o.loss + (0.2 if z[1] == 1 else 0.0), history))
            new = solver.ask()
            asked.append(new.config)
            flying.append(new)
        paths.append(asked)
    assert paths[0] == paths[1]
