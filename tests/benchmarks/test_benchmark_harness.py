"""The benchmark harness: artificial objective, method names, peers, runner and analysis."""

from __future__ import annotations

import json

import numpy as np
import pytest

from admm_automl.methods.admm import Schedule
from admm_automl.benchmarks import analysis
from admm_automl.benchmarks.artificial import EPS, ArtificialObjective
from admm_automl.benchmarks.runner import artificial_problem, data_problem, parse_method, run
from admm_automl.exceptions import InvalidParameterError
from admm_automl.journal import Journal
from admm_automl.space import load_space
from admm_automl.testing import tiny_space

TINY = tiny_space().for_task("classification")  # scaler {none, standard} × {gnb, logreg(C)}


# ------------------------------------------------------------------------------ artificial
def test_artificial_objective_matches_the_appendix_formula_by_hand():
    f = ArtificialObjective(TINY, seed=3)
    enc = TINY.encoding
    theta = enc.initial_theta.copy()
    (c_slot,) = enc.slots[1][1]  # logistic regression's C
    theta[c_slot] = 0.25
    # module 1 (scaler "none", no hyperparameters): constant scale |c|
    v1 = abs(f.weights[0][0][0])
    f1 = np.max(np.abs(0.0 + v1 * f.draws[0][0]))
    # module 2 (logistic regression, one coordinate): |w (t + ε) / (t + ε)| = |w|
    v2 = abs(f.weights[1][1][0] * (0.25 + EPS) / (0.25 + EPS))
    f2 = np.max(np.abs(f1 + v2 * f.draws[1][1]))
    assert f.value((0, 1), theta) == pytest.approx(f2)


def test_artificial_objective_is_deterministic_and_ignores_inactive_hyperparameters():
    space = load_space("paper_large").for_task("classification")
    f, g = ArtificialObjective(space, seed=0), ArtificialObjective(space, seed=0)
    enc = space.encoding
    rng = np.random.default_rng(0)
    z = tuple(int(rng.integers(k)) for k in enc.n_choices)
    theta = rng.random(enc.theta_dim)
    assert f.value(z, theta) == g.value(z, theta)
    assert ArtificialObjective(space, seed=1).value(z, theta) != f.value(z, theta)
    active = np.zeros(enc.theta_dim, dtype=bool)
    active[enc.active(z)] = True
    moved = theta.copy()
    moved[~active] = rng.random((~active).sum())
    assert f.value(z, moved) == f.value(z, theta)  # only θ of chosen algorithms matters
    # an algorithm with two or more coordinates (with one, the normalised ratio is just |w|)
    i, j = next((i, j) for i, j in enumerate(z) if len(enc.slots[i][j]) >= 2)
    changed = theta.copy()
    changed[enc.slots[i][j]] = 1.0 - changed[enc.slots[i][j]]
    assert f.value(z, changed) != f.value(z, theta)


def test_artificial_objective_is_the_executor_task():
    f = ArtificialObjective(TINY)
    result = f.run((1, 0), TINY.encoding.initial_theta, 1.0)
    assert result["status"] == "ok"
    assert result["loss"] == f.value((1, 0), TINY.encoding.initial_theta) > 0


# -------------------------------------------------------------------------------- methods
@pytest.mark.parametrize(
    "label, kind, theta, z, schedule",
    [
        ("AdADMM-F16(BO,Ba)", "admm", "bo", "cmab", Schedule(16, 16, 128)),
        ("AdADMM-F8(BO,BO)", "admm", "bo", "bo", Schedule(16, 8, 128)),
        ("ADMM-I32(RBFOpt,BLDS)", "admm", "rbfopt", "blds", Schedule(32, 0, 32)),
        ("JOPT(BO)", "jopt", "bo", None, Schedule()),
        ("Random", "jopt", "random", None, Schedule()),
        ("FLASH(BO)", "flash", "bo", None, Schedule()),
        ("AdADMM-F16(BO,FLASH)", "admm", "bo", "flash", Schedule(16, 16, 128)),
        # Liu et al. 2020, App. 13: up to 256 iterations on the artificial objective
        ("AdADMM-F8(BO,BO)@cap=256", "admm", "bo", "bo", Schedule(16, 8, 256)),
    ],
)
def test_parse_method_reads_the_paper_names(label, kind, theta, z, schedule):
    m = parse_method(label)
    assert (m.kind, m.theta_solver, m.z_solver, m.schedule) == (kind, theta, z, schedule)


def test_parse_method_options_and_peers():
    m = parse_method("AdADMM-F16(BO,Ba)@rho=10,z.loss_bound=0.5")
    assert m.rho == 10.0 and m.z_solver == {"name": "cmab", "params": {"loss_bound": 0.5}}
    assert m.slug == "AdADMM-F16_BO_Ba_rho=10_z.loss_bound=0.5"
    assert (parse_method("Optuna(TPE)").kind, parse_method("Optuna(TPE)").option) == ("optuna", "tpe")
    assert parse_method("FLAML(CFO)").option == "cfo"
    assert (parse_method("SMAC3(HPO)").kind, parse_method("SMAC3(HPO)").option) == ("smac3", "hpo")
    assert parse_method("SMAC3(BOHB)").option == "bohb"
    m = parse_method("FLASH(Random)@flash.top_r=5,cache=0")
    assert (m.kind, m.theta_solver, m.params, m.cache_size) == ("flash", "random", {"top_r": 5}, 0)
    assert parse_method("FLASH(BO)").cache_size is None


@pytest.mark.parametrize(
    "label, message",
    [
        ("AdADMM-I16(BO,Ba)", "AdADMM-F<step>"),
        ("Hyperopt", "unknown method 'Hyperopt'"),
        ("Optuna(CMAES)", "Optuna supports tpe, random"),
        ("JOPT(BO)@rho=2", "ADMM methods only"),
        ("AdADMM-F16(BO,Ba)@colour=red", "unknown option 'colour'"),
        ("AdADMM-F16(BO,Ba)@rho", "not key=value"),
        ("FLASH(BO)@flash.top_r=0", "top_r must be an integer >= 1, got 0"),
        ("JOPT(BO)@flash.n_init=3", "flash.<param> applies to FLASH only"),
        ("FLASH(BO)@cache=-1", "cache size must be a finite number of MiB >= 0"),
        ("SMAC3(BB)", "SMAC3 supports hpo"),
        ("ADMM-I16(BO,Ba)@cap=256", "cap applies to adaptive ADMM only"),
        ("JOPT(BO)@cap=256", "cap applies to adaptive ADMM only"),
        ("AdADMM-F16(BO,Ba)@cap=8", "maximum >= start"),
    ],
)
def test_parse_method_rejects_bad_names_clearly(label, message):
    with pytest.raises(InvalidParameterError, match=message.replace("(", r"\(").replace("<", "<")):
        parse_method(label)


# --------------------------------------------------------------------------------- runner
ALL_KINDS = ["AdADMM-F16(BO,Ba)", "JOPT(BO)", "Random", "Optuna(TPE)", "FLAML(BlendSearch)",
             "FLAML(CFO)", "FLASH(BO)", "SMAC3(HPO)"]


def _peer_available(label: str) -> bool:
    import importlib.util

    lib = {"Optuna": "optuna", "FLAML": "flaml", "SMAC3": "smac"}.get(label.split("(")[0])
    return lib is None or importlib.util.find_spec(lib) is not None


@pytest.mark.parametrize("label", ALL_KINDS)
def test_every_method_runs_on_the_artificial_objective_within_max_evals(label, tmp_path):
    if not _peer_available(label):
        pytest.skip(f"{label} needs the experiments extra")
    problem = artificial_problem(TINY)
    summary = run(problem, label, seed=0, max_evals=12, out_dir=tmp_path)
    records = Journal.read(tmp_path / "journal.jsonl")
    assert 1 <= summary["n_evals"] <= 12
    assert len(records) == summary["n_records"]
    assert summary["best_loss"] == pytest.approx(min(r["loss"] for r in records))
    assert json.loads((tmp_path / "run.json").read_text())["method"] == label
    f = ArtificialObjective(TINY, seed=0)
    for r in records[:3]:  # the journal holds the artificial value of the decoded pipeline
        z, theta = TINY.encode(r["config"])
        assert r["loss"] == pytest.approx(f.value(z, theta))


@pytest.mark.parametrize("label", ["AdADMM-F16(BO,Ba)", "Optuna(TPE)", "FLAML(BlendSearch)",
                                   "FLASH(Random)", "SMAC3(HPO)"])
def test_same_seed_and_budget_give_the_same_history(label, tmp_path):
    if not _peer_available(label):
        pytest.skip(f"{label} needs the experiments extra")
    problem = artificial_problem(load_space("paper_small").for_task("classification"))
    histories = []
    for k in (0, 1):
        run(problem, label, seed=5, max_evals=20, out_dir=tmp_path / str(k))
        histories.append([(r["key"], r["loss"]) for r in Journal.read(tmp_path / str(k) / "journal.jsonl")])
    assert len(histories[0]) >= 10
    assert histories[0] == histories[1]


@pytest.mark.parametrize("label", ["AdADMM-F16(BO,Ba)", "JOPT(BO)"])
@pytest.mark.parametrize("overhead_aware", [True, False])
def test_run_gives_every_method_the_help_it_is_told(label, overhead_aware, monkeypatch, tmp_path):
    """A benchmark passes the same help (the overhead-aware loop's cheap proposals, or none) to
    ADMM and to JOPT, and says which in run.json."""
    from admm_automl.solvers.theta.bo import GPBayesOptThetaSolver

    asked = []
    original = GPBayesOptThetaSolver.ask_cheap
    monkeypatch.setattr(GPBayesOptThetaSolver, "ask_cheap",
                        lambda self, n: asked.append(n) or original(self, n))
    problem = artificial_problem(load_space("paper_small").for_task("classification"))
    summary = run(problem, label, seed=0, max_evals=60, time_budget=60,
                  overhead_aware=overhead_aware, out_dir=tmp_path)
    assert (sum(asked) > 0) is overhead_aware
    saved = json.loads((tmp_path / "run.json").read_text())
    assert saved["overhead_aware"] is overhead_aware and saved["commit"] == summary["commit"]


def test_data_problem_shares_one_split_and_seeds_the_models():
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    problem = data_problem("bc", X, y.to_numpy(), space=TINY)
    a, b = problem.make_task(0), problem.make_task(1)
    np.testing.assert_array_equal(a.splits[0].valid, b.splits[0].valid)
    assert (a.random_state, b.random_state) == (0, 1)
    assert problem.worst_loss == 1.0 and problem.n_train == len(a.splits[0].train)
    summary = run(problem, "Random", seed=0, max_evals=3)
    assert summary["n_evals"] == 3 and 0.0 <= summary["best_loss"] < 0.5


def test_run_needs_a_budget():
    with pytest.raises(InvalidParameterError, match="time_budget or max_evals"):
        run(artificial_problem(TINY), "Random", seed=0)


# ------------------------------------------------------------------------------- analysis
def test_incumbent_curve_counts_only_finished_full_fidelity_evaluations():
    grid = np.array([0.5, 1.0, 2.0, 3.0, 4.0])
    records = [
        {"time": 0.9, "loss": 0.5, "fidelity": 1.0},
        {"time": 1.5, "loss": 0.1, "fidelity": 0.25},  # low fidelity: not an incumbent
        {"time": 2.5, "loss": 0.4, "fidelity": 1.0},
        {"time": 3.5, "loss": 0.0, "fidelity": 1.0, "budget_stop": True},  # stopped: not a score
    ]
    np.testing.assert_allclose(analysis.incumbent_curve(records, grid, 1.0), [1.0, 0.5, 0.5, 0.4, 0.4])


def _write_run(root, problem, method, seed, points, budget=100.0):
    folder = root / problem / method / f"seed{seed}"
    folder.mkdir(parents=True)
    with open(folder / "journal.jsonl", "w") as fh:
        for t, loss in points:
            fh.write(json.dumps({"time": t, "loss": loss, "fidelity": 1.0}) + "\n")
    (folder / "run.json").write_text(json.dumps({
        "problem": problem, "method": method, "seed": seed, "time_budget": budget,
        "worst_loss": 1.0, "n_evals": len(points),
    }))


def test_speedup_improvement_ranks_and_wins_by_hand(tmp_path):
    # reference reaches its final 0.4 at t=50; the method reaches 0.4 at t=5 and ends at 0.3
    for seed in (0, 1, 2):
        _write_run(tmp_path, "p", "ref", seed, [(1.0, 0.6), (50.0, 0.4)])
        _write_run(tmp_path, "p", "new", seed, [(5.0, 0.4), (80.0, 0.3)])
        _write_run(tmp_path, "q", "ref", seed, [(1.0, 0.2)])
        _write_run(tmp_path, "q", "new", seed, [(1.0, 0.5)])
    report = analysis.Report(analysis.load_runs(tmp_path), ["ref", "new"], ["p", "q"])
    grid = report.grid["p"]
    s = report.speedup("ref", "new", "p")
    t_ref, t_new = grid[np.argmax(grid >= 50.0)], grid[np.argmax(grid >= 5.0)]
    assert s["speedup"] == pytest.approx(t_ref / t_new)
    assert 9.0 < s["speedup"] < 11.0
    assert s["improvement"] == pytest.approx(25.0)
    assert report.speedup("ref", "new", "q")["speedup"] is None  # never reaches 0.2
    ranks = report.average_ranks()
    assert ranks["new"][-1] == 1.5 and ranks["ref"][-1] == 1.5  # one win each at the end
    assert ranks["ref"][0] == 1.5  # before any score both are at the worst loss: a tie
    assert "| ref | 1/2 |" in report.wins_table() and "| new | 1/2 |" in report.wins_table()
    assert "| p | 0.4 | 0.3 |" in report.speedup_table("ref", "new", paper={"p": (10, 25)})
    table = report.anytime_table(fractions=(1.0,))
    assert "| ref | 0.4 |" in table and "| new | 0.3 |" in table


def test_median_and_quantiles_over_seeds(tmp_path):
    for seed, loss in enumerate([0.1, 0.2, 0.6]):
        _write_run(tmp_path, "p", "m", seed, [(1.0, loss)])
    report = analysis.Report(analysis.load_runs(tmp_path), ["m"], ["p"])
    assert report.median("p", "m")[-1] == pytest.approx(0.2)
    lo, hi = report.iqr("p", "m")
    assert (lo[-1], hi[-1]) == pytest.approx((0.15, 0.4))
    assert report.median("p", "m")[0] == 1.0  # no score yet at budget/1000: the worst loss


def test_time_to_final_and_throughput_by_hand(tmp_path):
    """The median curve of 'new' reaches its final 0.3 at t = 80; 'ref' its 0.4 at t = 50. The
    throughput table reads evaluations per minute and the prefix-cache counters of run.json."""
    for seed in (0, 1, 2):
        _write_run(tmp_path, "p", "ref", seed, [(1.0, 0.6), (50.0, 0.4)])
        _write_run(tmp_path, "p", "new", seed, [(5.0, 0.4), (80.0, 0.3)])
        path = tmp_path / "p" / "new" / f"seed{seed}" / "run.json"
        summary = json.loads(path.read_text())
        summary.update(wall_time=60.0, prefix_cache={"fits_saved": 10 * seed, "seconds_saved": 1.5})
        path.write_text(json.dumps(summary))
    report = analysis.Report(analysis.load_runs(tmp_path), ["ref", "new"], ["p"])
    grid = report.grid["p"]
    assert report.time_to_final("p", "new") == grid[np.argmax(grid >= 80.0)]
    assert report.time_to_final("p", "ref") == grid[np.argmax(grid >= 50.0)]
    assert "| p | new | 2 | 10 | 1.5 |" in report.throughput_table()
    assert "| p | ref | — | 0 | 0 |" in report.throughput_table()  # no wall time, no counters
    assert report.time_to_final_table().count("| p |") == 1


def test_a_campaign_runs_each_pending_job_in_its_own_process_and_skips_done_ones(tmp_path, capsys):
    """The experiment scripts' driver: one process per job with the one-run arguments and the
    script's options; a job whose run.json has the same budget is not run again."""
    from admm_automl.benchmarks.campaign import Job, is_done, run_campaign, run_dir

    script = tmp_path / "one_run.py"
    script.write_text(
        "import argparse, json, pathlib\n"
        "p = argparse.ArgumentParser()\n"
        "for name in ('--problem', '--method', '--seed', '--budget', '--root', '--rows'):\n"
        "    p.add_argument(name)\n"
        "p.add_argument('--run-one', action='store_true')\n"
        "a = p.parse_args()\n"
        "from admm_automl.benchmarks.campaign import run_dir\n"
        "out = run_dir(a.root, a.problem, a.method, int(a.seed))\n"
        "out.mkdir(parents=True)\n"
        "(out / 'run.json').write_text(json.dumps({'time_budget': float(a.budget), 'rows': a.rows}))\n"
    )
    root = tmp_path / "results"
    jobs = [Job("sylvine:mlp", "AdADMM-F16(BO,Ba)", 0, 5.0), Job("sylvine:mlp", "Random", 1, 5.0)]
    ran = run_campaign(str(script), jobs, root=root, parallel=2,
                       options={"--rows": 600, "--data-dir": None})
    assert ran == jobs and all(is_done(root, job) for job in jobs)
    path = run_dir(root, "sylvine:mlp", "AdADMM-F16(BO,Ba)", 0)
    assert path.relative_to(root).parts == ("sylvine__mlp", "AdADMM-F16_BO_Ba", "seed0")
    assert json.loads((path / "run.json").read_text()) == {"time_budget": 5.0, "rows": "600"}
    assert run_campaign(str(script), jobs, root=root, parallel=2) == []
    longer = [Job("sylvine:mlp", "Random", 1, 10.0)]  # another budget is another run
    assert not is_done(root, longer[0])
    assert "2 runs, 2 at a time" in capsys.readouterr().out


def test_smac3_hyperband_runs_its_rungs_through_the_shared_engine(tmp_path):
    """``SMAC3(Hyperband)`` (the BAPI benchmark's peer) trains configurations at the rungs
    t_max/27 … t_max of the one iterative learner, and a promotion continues the model the worker
    holds."""
    pytest.importorskip("smac")
    from sklearn.datasets import load_digits

    from admm_automl.benchmarks.runner import data_problem, run
    from admm_automl.journal import Journal
    from admm_automl.space.loader import load_space

    X, y = load_digits(return_X_y=True)
    space = load_space("iterative").for_task("classification").restrict(
        scaler="standard_scaler", estimator="mlp")
    problem = data_problem("digits:mlp", X[:400], y[:400], space=space, scoring="accuracy")
    summary = run(problem, "SMAC3(Hyperband)", seed=0, max_evals=40, out_dir=tmp_path)
    records = [r for r in Journal.read(tmp_path / "journal.jsonl") if "loss" in r]
    assert summary["n_evals"] == 40
    assert {r["iterations"] for r in records} == {4, 11, 33, 100}
    assert any(r["continued_from"] is not None for r in records if r["iterations"] > 4)


# ------------------------------------------------------------------------- constrained Optuna
def test_optuna_peer_given_constraints_steers_tpe_to_feasible_pipelines():
    """The Optuna peer with constraints is Optuna's constrained TPE: every trial reports its
    relative violations, and the sampler learns to avoid the infeasible region that holds the
    lowest losses (model ``b``), where the unconstrained TPE of the same seed is drawn to it."""
    pytest.importorskip("optuna")
    from dataclasses import dataclass, replace

    from admm_automl.benchmarks.peers import run_optuna
    from admm_automl.clock import Deadline
    from admm_automl.methods.driver import Budget
    from admm_automl.testing import SYNTHETIC, ToyEngine, synthetic_loss

    @dataclass
    class Size:  # a pipeline with model b is "too large"
        key: str = "size"
        threshold: float = 1.0
        sense: str = "<="

    space = SYNTHETIC.for_task("classification")

    def engine():
        toy = ToyEngine(space, synthetic_loss)
        chosen = []

        def evaluate(requests, time_left=None, tags=None):
            out = []
            for r, obs in zip(requests, toy(requests, time_left, tags)):
                model = space.decode(r.z, r.theta)["model"]
                chosen.append(model)
                out.append(replace(obs, constraints={"size": 2.0 if model == "b" else 0.5}))
            return out
        return evaluate, chosen

    picks = {}
    for label, constraints in (("constrained", [Size()]), ("plain", [])):
        evaluate, chosen = engine()
        n, reason = run_optuna(space, evaluate, Budget(60, Deadline(None)), seed=0, option="tpe",
                               constraints=constraints)
        assert (n, reason) == (60, "max_evals")
        picks[label] = chosen[30:].count("b")
    assert picks["constrained"] <= 6 and picks["plain"] >= 20, picks  # of 30; uniform: 10


def test_a_failed_run_does_not_stop_the_others_and_is_named_at_the_end(tmp_path):
    """A campaign never loses a run silently: every command runs, and the ones that exited
    non-zero are named with their exit status once all have ended."""
    import sys

    from admm_automl.benchmarks.runner import run_processes

    def touch(name: str, status: int) -> list[str]:
        return [sys.executable, "-c",
                f"import pathlib, sys; pathlib.Path({str(tmp_path / name)!r}).touch(); "
                f"sys.exit({status})"]

    commands = [touch("a", 0), touch("b", 3), touch("c", 0), touch("d", 1)]
    with pytest.raises(SystemExit, match=r"2 of 4 runs failed") as raised:
        run_processes(commands, parallel=2)
    assert all((tmp_path / name).is_file() for name in "abcd")
    message = str(raised.value)
    assert "exit status 3" in message and "exit status 1" in message
    assert message.count("exit status") == 2  # only the failed commands are named
    run_processes([touch("e", 0)], parallel=1)  # all passing: returns quietly
