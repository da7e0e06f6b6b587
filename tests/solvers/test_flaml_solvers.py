"""The ``cfo`` and ``blendsearch`` θ-solvers (FLAML's searchers behind the ask/tell protocol):
the low-cost start and FLOW²'s moves, re-scoring after a dual update, one state per z in the ADMM
loop, the step lower bound of relaxed integers, the agnostic mode, determinism, and the joint
(conditional) space of JOPT."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from admm_automl.methods.driver import Schedule
from admm_automl.methods.admm import ADMMOptimizer
from admm_automl.problem import ThetaProblem
from admm_automl.records import Observation
from admm_automl.solvers import THETA_SOLVERS, Z_SOLVERS
from admm_automl.solvers.theta.random import RandomThetaSolver
from admm_automl.space.flaml import flaml_config, flaml_low_cost, flaml_point
from admm_automl.testing import SYNTHETIC

pytest.importorskip("flaml")

SOLVERS = ("cfo", "blendsearch")


def _problem(loss, dim, *, low_cost=None, start=None, history=(), grids=(), augment=None):
    """A θ-problem over ``loss(x)`` that logs what it evaluates."""
    log: list[np.ndarray] = []

    def evaluate(suggestions):
        out = []
        for s in suggestions:
            x = np.array(s.config, dtype=float)
            log.append(x)
            out.append(Observation(loss=float(loss(x)), eval_id=len(log) - 1))
        return out

    problem = ThetaProblem(
        dim=dim, evaluate=evaluate, augment=augment or (lambda x, obs: obs.loss),
        penalty=lambda x: 0.0, history=list(history), start=start,
        low_cost=None if low_cost is None else np.asarray(low_cost, dtype=float), grids=grids,
    )
    return problem, log


def _solver(name, problem, seed=0, **params):
    params.setdefault("cost", "evaluations")
    solver = THETA_SOLVERS.create({"name": name, "params": params})
    return solver.setup(problem, np.random.default_rng(seed))


# ----------------------------------------------------------------------------- the low-cost start
@pytest.mark.parametrize("name", SOLVERS)
def test_the_first_configuration_is_the_low_cost_point(name):
    """Declared coordinates at their low-cost values, the others at the start (the defaults),
    even when the history already holds a better point (the initial pipeline at its defaults)."""
    low_cost = [0.2, np.nan, 0.8, np.nan]
    history = [(np.full(4, 0.5), Observation(loss=0.0))]
    problem, log = _problem(lambda x: float(np.sum(x)), 4, low_cost=low_cost,
                            start=np.full(4, 0.5), history=history)
    _solver(name, problem).run(3)
    np.testing.assert_allclose(log[0], [0.2, 0.5, 0.8, 0.5])


def test_cfo_steps_around_the_low_cost_point_as_flow2_does():
    """FLOW² (Wu et al., AAAI 2021): from an incumbent that cannot be improved, pairs x ± δu with
    δ = 0.1·√d, until 2^d proposals have failed; then the step shrinks."""
    x0 = np.array([0.2, 0.5, 0.8, 0.5])
    problem, log = _problem(lambda x: float(np.sum((x - x0) ** 2)), 4,
                            low_cost=[0.2, np.nan, 0.8, np.nan], start=np.full(4, 0.5))
    _solver("cfo", problem).run(1 + 16 + 6)
    np.testing.assert_allclose(log[0], x0)
    steps = np.array(log[1:]) - x0
    first = steps[:16]
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 0.1 * np.sqrt(4), rtol=1e-9)
    np.testing.assert_allclose(first[0::2], -first[1::2], atol=1e-12)  # opposite directions
    assert np.all(np.linalg.norm(steps[16:], axis=1) < 0.2 - 1e-6)  # shrunk after 2^4 failures


@pytest.mark.parametrize("name", SOLVERS)
def test_the_search_moves_away_from_the_low_cost_point(name):
    """Cheap configurations first: the early ones stay near the low-cost point, the incumbent then
    travels to the optimum far from it."""
    optimum = np.full(3, 0.8)
    problem, log = _problem(lambda x: float(np.sum((x - optimum) ** 2)), 3,
                            low_cost=np.zeros(3), start=np.zeros(3))
    solver = _solver(name, problem)
    solver.run(60)
    early = np.linalg.norm(np.array(log[:5]), axis=1)
    assert early.max() < 0.5, early
    best = np.asarray(solver.best()[0])
    assert np.linalg.norm(best - optimum) < 0.2, best


@pytest.mark.parametrize("name", SOLVERS)
def test_agnostic_mode_starts_at_random(name):
    """low_cost=False: no controlled dimension and a random first configuration (the ablation of
    Wang et al., ICLR 2021, Fig. 11), drawn from the solver's seed."""
    def first(seed):
        problem, log = _problem(lambda x: float(np.sum(x)), 3, low_cost=np.zeros(3),
                                start=np.zeros(3))
        solver = _solver(name, problem, seed=seed, low_cost=False)
        solver.run(2)
        assert solver.searcher_._ls.init_config == {}
        return log[0]

    a, b, c = first(0), first(0), first(1)
    np.testing.assert_array_equal(a, b)
    assert np.linalg.norm(a) > 0.1 and not np.allclose(a, c)


def test_a_problem_without_low_cost_coordinates_runs_agnostic():
    problem, log = _problem(lambda x: float(np.sum(x)), 2, start=np.zeros(2))
    solver = _solver("cfo", problem)
    solver.run(2)
    assert solver.searcher_._ls.init_config == {}
    assert np.linalg.norm(log[0]) > 0.05  # not the start: a random completion


# ----------------------------------------------------------------------------- relaxed integers
def test_the_step_lower_bound_comes_from_the_grids_of_relaxed_integers():
    """δ_lb = (grid spacing at the incumbent) · √d, FLAML's integer rule on the δ-step's grid; a
    continuous problem keeps FLAML's 1e-4."""
    log_grid = np.log(np.arange(1, 101)) / np.log(100)  # a log-scaled integer in [1, 100]
    grids = (np.linspace(0.0, 1.0, 11), None, log_grid)
    problem, _ = _problem(lambda x: float(np.sum(x)), 3, low_cost=[0.0, np.nan, 0.0],
                          start=np.zeros(3), grids=grids)
    ls = _solver("cfo", problem).searcher_._ls
    # incumbent at the low-cost point: log-integer gap log(2)/log(100) = 0.15 > 0.1
    assert ls.step_lower_bound == pytest.approx(0.1 * np.sqrt(3))
    ls.best_config = {"x000": 0.0, "x001": 0.5, "x002": float(log_grid[49])}  # at the integer 50
    assert ls.step_lower_bound == pytest.approx((log_grid[50] - log_grid[49]) * np.sqrt(3))
    continuous, _ = _problem(lambda x: float(np.sum(x)), 3, start=np.zeros(3))
    assert _solver("cfo", continuous).searcher_._ls.step_lower_bound == pytest.approx(1e-4)


# ----------------------------------------------------------------------------- warm start, duals
@pytest.mark.parametrize("name", SOLVERS)
def test_update_problem_rescores_the_history_with_the_new_duals(name):
    """Two earlier points of equal loss: the ADMM penalty decides which is θ*. After a dual update
    that moves the penalty's centre, FLAML holds the re-scored values and its local search starts
    from the other point (the new trial is evaluated before the thread can move: its loss is the
    same everywhere, so it never improves)."""
    a, b = np.full(2, 0.2), np.full(2, 0.8)
    history = [(a, Observation(loss=0.5)), (b, Observation(loss=0.5))]

    def near(centre):
        return lambda x, obs: obs.loss + float(np.sum((np.asarray(x) - centre) ** 2))

    problem, log = _problem(lambda x: 0.5, 2, history=history, start=a, augment=near(a))
    solver = _solver(name, problem)  # a z's first θ-step starts fresh (here: at random) ...
    solver.update_problem(problem)  # ... ADMM's return to z warm-starts from the history
    solver.run(1)
    def local_start():  # the incumbent of FLAML's first local-search thread
        threads = solver.searcher_._search_thread_pool
        return np.array(list(threads[min(k for k in threads if k)]._search_alg.best_config.values()))

    np.testing.assert_allclose(local_start(), a)

    def told():  # FLAML's results: θ* (the best history point) and the new trials
        return {tuple(np.round(list(r["config"].values()), 9)): r["loss"]
                for r in solver.searcher_._result.values() if r}

    assert told() == pytest.approx({tuple(a): 0.5, tuple(np.round(log[-1], 9)): near(a)(
        log[-1], Observation(loss=0.5))})

    moved, log2 = _problem(lambda x: 0.5, 2, history=history + [(log[-1], Observation(loss=0.5))],
                           start=b, augment=near(b))
    solver.update_problem(moved)
    solver.run(1)
    np.testing.assert_allclose(local_start(), b)  # now from θ* = b
    assert told() == pytest.approx({tuple(b): 0.5, tuple(np.round(log2[-1], 9)): near(b)(
        log2[-1], Observation(loss=0.5))})


class _Recording(RandomThetaSolver):
    """A random θ-solver that keeps its state per z and records what the loop calls."""

    keeps_state = True
    made: list["_Recording"] = []

    def __init__(self) -> None:
        _Recording.made.append(self)

    def _setup(self) -> None:
        self.calls_ = [("setup", len(self.problem_.history))]

    def update_problem(self, problem) -> None:
        super().update_problem(problem)
        self.calls_.append(("update", len(problem.history)))


def test_admm_keeps_one_state_per_z_for_solvers_that_keep_state(make_engine):
    """One instance per algorithm selection, set up once and updated (with the grown history)
    whenever ADMM returns to its z; solvers without the flag get a new instance per θ-step."""
    _Recording.made = []
    z_solver = lambda: Z_SOLVERS.create("random")  # noqa: E731
    opt = ADMMOptimizer(SYNTHETIC.encoding, make_engine(SYNTHETIC), _Recording, z_solver,
                        max_evals=80, schedule=Schedule(3, 0, 3), seed=0)
    result = opt.run()
    thetas = [s.z for s in result.states]  # z of each θ-step is the previous iterate's
    assert len(_Recording.made) < len(thetas)  # ADMM returned to some z
    for solver in _Recording.made:
        kinds = [kind for kind, _ in solver.calls_]
        assert kinds[0] == "setup" and set(kinds[1:]) <= {"update"}
        sizes = [n for _, n in solver.calls_]
        assert sizes == sorted(sizes) and (len(sizes) == 1 or sizes[-1] > sizes[0])
    assert sum(len(s.calls_) for s in _Recording.made) >= len(thetas)


# ----------------------------------------------------------------------------- determinism
class _ConstantFitTime:
    """The toy engine with every fit taking the same (reported) time."""

    def __init__(self, engine) -> None:
        self.engine = engine

    def __call__(self, requests, **kwargs):
        return [replace(o, fit_time=0.05) for o in self.engine(requests, **kwargs)]


@pytest.mark.parametrize("name", SOLVERS)
@pytest.mark.parametrize("cost", ["evaluations", "time"])
def test_same_seed_same_history(make_optimizer, make_engine, name, cost):
    """With one unit per trial, or measured time from a black box of constant fit time, the same
    seed and evaluation budget repeat the history; another seed does not."""
    def history(seed):
        engine = _ConstantFitTime(make_engine(SYNTHETIC))
        theta = {"name": name, "params": {"cost": cost}}
        result = make_optimizer(engine=engine, theta=theta, max_evals=40, seed=seed,
                                schedule=Schedule(5, 0, 5)).run()
        assert result.n_evals == 40  # new evaluations; cache hits of relaxed repeats are free
        return [(e.z, np.round(e.theta, 12).tolist()) for e in result.evaluated]

    first = history(0)
    assert first == history(0) and first != history(1)


# ----------------------------------------------------------------------------- joint space (JOPT)
def test_flaml_configs_map_to_pipelines_and_back():
    enc = SYNTHETIC.encoding
    rng = np.random.default_rng(0)
    for _ in range(20):
        z = tuple(int(rng.integers(k)) for k in enc.n_choices)
        theta = enc.project(rng.uniform(size=enc.theta_dim))
        z2, theta2 = flaml_point(flaml_config(SYNTHETIC, z, theta), SYNTHETIC)
        assert z2 == z
        active = enc.active(z)
        np.testing.assert_allclose(theta2[active], theta[active], atol=1e-9)
    low = flaml_low_cost(SYNTHETIC)
    assert set(low) == {m.name for m in SYNTHETIC.modules}
    assert [len(v) for v in low.values()] == [len(m.choices) for m in SYNTHETIC.modules]


@pytest.mark.parametrize("name", SOLVERS)
def test_jopt_searches_flaml_s_conditional_space(make_engine, name):
    """With the pipeline space, JOPT's solver works on FLAML's nested choices (the paper's joint
    setting): only the chosen algorithms' hyperparameters move, the others keep their defaults.
    Without it, the flat joint box, where every coordinate moves."""
    from admm_automl.methods.registry import make_optimizer

    enc = SYNTHETIC.encoding
    theta = {"name": name, "params": {"cost": "evaluations"}}

    def run(space):
        return make_optimizer("jopt", enc, make_engine(SYNTHETIC), theta_solver=theta,
                              max_evals=40, seed=0, space=space).run()

    nested, flat = run(SYNTHETIC), run(None)
    assert nested.n_evals == flat.n_evals == 40
    assert nested.incumbent.observation.loss < 0.35

    def inactive_moved(result):
        return sum(
            not np.allclose(np.delete(e.theta, enc.active(e.z)),
                            np.delete(enc.project(enc.initial_theta), enc.active(e.z)))
            for e in result.evaluated)

    assert inactive_moved(nested) == 0 and inactive_moved(flat) > 10


# ----------------------------------------------------------------------------- Python, YAML, CLI
@pytest.mark.parametrize("method", ["admm", "jopt"])
@pytest.mark.parametrize("name", SOLVERS)
def test_the_estimator_runs_both_solvers(breast_cancer, method, name):
    from admm_automl import ADMM

    X, y = breast_cancer
    model = ADMM(search_space="paper_small", method=method, theta_solver=name, max_evals=6,
                 inner_iter=2, inner_iter_step=0, executor="serial", random_state=0).fit(X, y)
    assert len(model.history_) >= 6 and 0.5 < model.best_score_ <= 1.0


def test_yaml_and_command_line_select_them(tmp_path):
    import yaml

    from admm_automl import load_config
    from admm_automl.cli import main

    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({
        "estimator": {"search_space": "paper_small", "method": "jopt", "max_evals": 4,
                      "theta_solver": {"name": "blendsearch", "params": {"cost": "evaluations"}},
                      "executor": "serial", "random_state": 0},
        "data": {"dataset": "breast_cancer"},
    }), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["fit", "--config", str(path), "--output", str(out)]) == 0
    resolved = load_config(out / "config.resolved.yaml").estimator
    assert resolved["theta_solver"] == {"name": "blendsearch", "params": {"cost": "evaluations"}}
    assert main(["fit", "--dataset", "breast_cancer", "--search-space", "paper_small",
                 "--theta-solver", "cfo", "--max-evals", "4", "--seed", "0"]) == 0


# ----------------------------------------------------------------------------- trials in flight
@pytest.mark.parametrize("name", SOLVERS)
def test_asks_before_tells_are_flaml_s_concurrent_trials_and_a_dropped_one_is_withdrawn(name):
    """A batch asks FLAML once per suggestion, each under its own trial id (FLAML's pending
    trials); a suggestion the driver drops unevaluated is completed in FLAML as failed, so FLAML
    holds no trial that will never be told."""
    problem, _ = _problem(lambda x: float(np.sum((x - 0.3) ** 2)), 3, low_cost=[0.0, 0.0, 0.0],
                          start=np.full(3, 0.5))
    solver = _solver(name, problem)
    first = [solver.ask() for _ in range(4)]
    assert len({tuple(np.round(s.config, 9)) for s in first}) == 4
    running = set(solver.searcher_._trial_proposed_by)
    assert {solver.flaml_trials_[s.id][0] for s in first} <= running
    dropped = first[-1]
    del solver.pending_[dropped.id]  # as the asynchronous driver drops a repeat
    dropped_trial = solver.flaml_trials_[dropped.id][0]
    solver.ask()
    assert dropped.id not in solver.flaml_trials_
    assert dropped_trial not in solver.searcher_._trial_proposed_by
    for s in first[:-1]:
        solver.tell(s, Observation(loss=float(np.sum(np.asarray(s.config) ** 2))))
    assert not {solver.flaml_trials_.get(s.id) for s in first[:-1]} - {None}
