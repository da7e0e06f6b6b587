"""The reproduction harness of experiments/reproduce: what a pair's value is, which runs a
campaign makes, and a claim decided end to end on real (tiny) runs of the artificial objective."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "experiments" / "reproduce"))

import harness  # noqa: E402
from admm_automl.benchmarks.stats import Lower  # noqa: E402

RECORDS = [  # time, loss, fidelity
    {"time": 1.0, "loss": 0.5, "fidelity": 0.1},  # below full data: never an incumbent
    {"time": 2.0, "loss": 0.4, "fidelity": 1.0},
    {"time": 5.0, "loss": 0.3, "fidelity": 1.0},
    {"time": 9.0, "loss": 0.35, "fidelity": 1.0},
]


def test_the_training_cost_curve_sums_the_evaluations_durations_not_the_wall_clock():
    records = [dict(r, duration=d) for r, d in zip(RECORDS, (0.5, 1.0, 2.0, 0.5))]
    # the loss on part of the rows costs training time but is never the incumbent
    assert harness.cost_curve(records) == [(0.5, math.inf), (1.5, 0.4), (3.5, 0.3), (4.0, 0.3)]


def claim(**kw):
    base = dict(name="c", paper="p", problems=("artificial",),
                methods={"A": "AdADMM-F16(BO,Ba)", "R": "Random"}, method="A", against=("R",),
                rule=Lower(0.8, 0.05), budget=10.0, space="paper_small")
    return harness.Claim(**{**base, **kw})


def test_the_incumbent_at_a_fraction_of_the_time_or_of_the_evaluations():
    timed = claim()
    assert harness.incumbent(RECORDS, 0.1, timed, {"worst_loss": 1.0}) == 1.0  # none by 1 s
    assert harness.incumbent(RECORDS, 0.3, timed, {"worst_loss": 1.0}) == 0.4
    assert harness.incumbent(RECORDS, 1.0, timed, {"worst_loss": None}) == 0.3
    # the other reading, shown beside the rule's: a loss on part of the rows counts too
    assert harness.incumbent(RECORDS, 0.1, timed, {"worst_loss": 1.0}, full_only=False) == 0.5
    counted = claim(budget=None, max_evals=3)
    assert harness.incumbent(RECORDS, 1 / 3, counted, {"worst_loss": 1.0}) == 0.4
    assert math.isnan(harness.incumbent([], 1.0, counted, {"worst_loss": None}))


def test_time_to_a_target_counts_full_data_only():
    assert harness.time_to(RECORDS, 0.4) == 2.0
    assert harness.time_to(RECORDS, 0.45) == 2.0  # the 0.5 at 10 % of the rows does not count
    assert harness.time_to(RECORDS, 0.2) == math.inf


def test_a_claim_needs_its_methods_and_one_budget():
    with pytest.raises(ValueError, match="not in its methods"):
        claim(against=("JOPT",))
    with pytest.raises(ValueError, match="time budget or max_evals"):
        claim(max_evals=10)


def test_runs_shared_by_two_claims_are_made_once_seeds_first():
    a = claim(name="a", seeds=(0, 1))
    b = claim(name="b", seeds=(0, 1, 2), methods={"A": "AdADMM-F16(BO,Ba)", "R": "Random"})
    jobs = harness.jobs([a, b])
    assert [(j.method, j.seed) for j in jobs] == [("A", 0), ("R", 0), ("A", 1), ("R", 1),
                                                 ("A", 2), ("R", 2)]
    other_budget = claim(name="c", budget=20.0, seeds=(0,))
    assert len(harness.jobs([a, other_budget])) == 6  # another budget is another run
    other_space = claim(name="d", seeds=(0,), space="paper_large")
    with pytest.raises(ValueError, match="'a' and 'd' would share the runs .* differ in space"):
        harness.jobs([a, other_space])


def test_a_claim_is_decided_end_to_end_on_real_runs(tmp_path):
    c = claim(budget=None, max_evals=12, seeds=(0, 1, 2))
    for job in harness.jobs([c]):
        harness.run_job(job, tmp_path, None)
        assert (job.folder(tmp_path) / "journal.jsonl").is_file()
    runs = harness.Runs.load(c, tmp_path)
    assert runs.pairs() == [("artificial", 0), ("artificial", 1), ("artificial", 2)]
    names, values = runs.matrix(1.0)
    assert names == ["A", "R"] and values.shape == (3, 2) and (values > 0).all()
    text = harness.report(runs)
    assert "Rule (written before the runs): reproduced if A is below R" in text
    # three pairs cannot reach p < 0.05 either way (the smallest possible p is 1/8)
    assert "**Verdict: not reproduced**" in text and "smallest possible p is 0.12" in text


def test_a_pairwise_rule_decides_against_the_first_rival_and_shows_the_others(tmp_path):
    c = claim(budget=None, max_evals=8, seeds=(0, 1, 2),
              methods={"A": "AdADMM-F16(BO,Ba)", "R": "Random", "J": "JOPT(Random)"},
              against=("R", "J"))
    for job in harness.jobs([c]):
        harness.run_job(job, tmp_path, None)
    text = harness.report(harness.Runs.load(c, tmp_path))
    assert "reproduced if A is below R on" in text  # the rule names the first rival only
    assert "| A vs R |" in text and "| A vs J |" in text  # both comparisons are shown
    assert "**Verdict: not reproduced**" in text


@pytest.mark.parametrize("paper", ["liu2020", "blds", "flash", "blendsearch", "bapi"])
def test_every_papers_claims_name_valid_methods_and_share_runs_consistently(paper):
    """Each suite's methods parse (a typo in a label would only show hours into a campaign),
    and claims that share a run folder would make the same run, in full and in smoke form (a
    constrained claim's methods are the estimator's constraint modes)."""
    import importlib

    from admm_automl.benchmarks.runner import parse_method

    module = importlib.import_module(paper)
    for claims in (module.CLAIMS, module.smoke(module.CLAIMS)):
        assert harness.jobs(claims)
        for c in claims:
            for label in c.methods.values():
                if c.constrained:
                    assert label in ("admm", "penalty", "filter")
                else:
                    parse_method(label)


def test_kishimotos_section_4_statements_are_decided_on_earlys_runs():
    """catch_up, cmab_much_worse, rnd_stuck and daub_poor add no run to `early`'s campaign, in
    full and in smoke form (where they add one run of each of their own methods)."""
    import blds

    named = {c.name: c for c in blds.CLAIMS}
    statements = ["catch_up", "cmab_much_worse", "rnd_stuck", "daub_poor"]
    early = harness.jobs([named["early"]])
    both = harness.jobs([named["early"], *[named[n] for n in statements]])
    assert len(both) == len(early) == 2 * 5 * 6
    assert {j.claim.name for j in both} == {"early"}
    smoke = {c.name: c for c in blds.smoke(blds.CLAIMS)}
    own = harness.jobs([smoke["early"], *[smoke[n] for n in statements]])
    assert len(own) - len(harness.jobs([smoke["early"]])) == 3  # CMAB, RND, DAUB on seed 0


def test_a_pair_can_be_read_as_time_to_a_references_final_value_or_as_its_infeasible_share():
    """time_to_reference: the seconds to reach the final value the reference found on the same
    pair (Liu et al.'s speedup, pair by pair); infeasible: 1 − a constrained run's feasible
    fraction."""
    c = claim(methods={"A": "AdADMM-F16(BO,Ba)", "R": "Random", "J": "JOPT(BO)"},
              against=("R",), kind="time_to_reference", speedup_reference="J", seeds=(0, 1))
    summary = {"worst_loss": 1.0}
    reference = {0: [{"time": 3.0, "loss": 0.5}, {"time": 8.0, "loss": 0.32}],  # final 0.32
                 1: [{"time": 2.0, "loss": 0.2}]}  # final 0.2
    ours = [{"time": 1.0, "loss": 0.4}, {"time": 4.0, "loss": 0.3}]
    runs = harness.Runs(c, {(p, m): {s: summary for s in c.seeds} for p in c.problems
                            for m in c.methods},
                        {("artificial", "J"): reference,
                         ("artificial", "A"): {0: ours, 1: ours},
                         ("artificial", "R"): {0: ours[:1], 1: ours}})
    assert runs.value("artificial", "A", 0) == 4.0  # 0.3 ≤ 0.32 at 4 s
    assert runs.value("artificial", "R", 0) == math.inf  # 0.4 never reaches 0.32
    assert runs.value("artificial", "J", 0) == 8.0  # the reference reaches its own at its end
    assert runs.value("artificial", "A", 1) == math.inf  # 0.3 never reaches 0.2
    assert "seconds to reach J's final value on the same pair" in harness.report(runs)
    with pytest.raises(ValueError, match="needs a speedup_reference"):
        claim(kind="time_to_reference")
    with pytest.raises(ValueError, match="kind 'feasible' is not one of"):
        claim(kind="feasible")
    feasible = claim(problems=("heart_statlog",), methods={"A": "admm", "R": "filter"},
                     kind="infeasible", seeds=(0,))
    assert feasible.constrained and claim(kind="constrained").constrained
    assert "below means a larger fraction of evaluations that met" in feasible.rule_text()
    runs = harness.Runs(feasible, {("heart_statlog", "A"): {0: {"feasible_fraction": 0.25}},
                                   ("heart_statlog", "R"): {0: {"feasible_fraction": 0.1}}}, {})
    assert runs.value("heart_statlog", "A", 0) == pytest.approx(0.75)
    assert runs.matrix()[1].tolist() == [[pytest.approx(0.75), pytest.approx(0.9)]]
    constrained = claim(name="k", problems=("heart_statlog",),
                        methods={"A": "admm", "R": "filter"}, kind="constrained", seeds=(0,))
    assert len(harness.jobs([feasible, constrained])) == 2  # the same runs, read two ways


def test_a_claims_own_checkpoints_are_its_columns_and_its_rules(tmp_path):
    c = claim(budget=None, max_evals=8, seeds=(0, 1), checkpoints=(0.5, 1.0))
    for job in harness.jobs([c]):
        harness.run_job(job, tmp_path, None)
    text = harness.report(harness.Runs.load(c, tmp_path))
    assert "| method | 0.5T | 1T | rank at T |" in text and "0.1T" not in text


@pytest.mark.serial  # a 3 s time budget: beside another test worker it may end with no pipeline
def test_held_out_rows_score_each_checkpoints_incumbent(tmp_path):
    """With test_size, the search never sees the held-out rows, and after the run the incumbent
    of each checkpoint is refitted on the search rows and scored on them."""
    from sklearn.metrics import accuracy_score

    from admm_automl.datasets import load_dataset
    from admm_automl.evaluation.data import make_preprocessor
    from admm_automl.journal import Journal

    c = claim(problems=("breast_cancer",), methods={"A": "Random", "R": "JOPT(Random)"},
              budget=3.0, seeds=(0,), scoring="accuracy", test_size=0.25,
              checkpoints=(0.5, 1.0))
    job, other = harness.jobs([c])
    summary = harness.run_job(job, tmp_path, None)
    harness.run_job(other, tmp_path, None)
    problem = harness.load_problem(c, "breast_cancer", 0, None)
    X, y = load_dataset("breast_cancer")
    assert problem.info["rows"] == len(y) - math.ceil(0.25 * len(y))  # the test rows held out
    assert set(summary["test"]) == {"0.5", "1"}
    records = Journal.read(job.folder(tmp_path) / "journal.jsonl")
    best = min((r for r in records if r["status"] == "ok"), key=lambda r: r["loss"])
    X_s, y_s, X_t, y_t = harness.search_rows(c, X, y, 0)
    z, theta = problem.space.encode(best["config"])
    model = problem.space.to_pipeline(z, theta, preprocessor=make_preprocessor(X_s),
                                      random_state=0).fit(X_s, y_s)
    assert summary["test"]["1"] == pytest.approx(1 - accuracy_score(y_t, model.predict(X_t)))
    assert "the test loss of the incumbent" in harness.report(harness.Runs.load(c, tmp_path))


def test_a_claim_refuses_a_speedup_reference_it_does_not_run():
    with pytest.raises(ValueError, match="speedup reference 'EI' is not one of its methods"):
        claim(speedup_reference="EI")
    assert claim(speedup_reference="R").speedup_reference == "R"


def test_a_claim_over_pollen_is_also_read_without_it():
    """pollen's labels carry no signal: a claim that holds it prints its verdict without it
    too, by the same rule, beside the rule's own (which still counts every pair)."""
    c = claim(problems=("pollen", "sylvine"), seeds=tuple(range(8)))
    summary = {"n_evals": 2, "worst_loss": 1.0, "machine": {"load": 2.0}, "commit": "abc"}

    def records(loss):
        return [{"time": 1.0, "loss": loss, "fidelity": 1.0, "duration": 1.0}]

    # A is below R on every sylvine seed and above it on every pollen seed
    summaries = {(p, m): {s: summary for s in c.seeds} for p in c.problems for m in c.methods}
    runs = harness.Runs(c, summaries, {
        (p, m): {s: records(0.1 if (p == "sylvine") == (m == "A") else 0.2) for s in c.seeds}
        for p in c.problems for m in c.methods})
    assert runs.without(["pollen"]).pairs() == [("sylvine", s) for s in c.seeds]
    text = harness.report(runs)
    assert "**Verdict: not reproduced**" in text  # 8 of 16 pairs: the rule's verdict
    assert ("Without pollen (labels that carry no signal: its ranks are noise), 8 pairs: mean "
            "rank at T A 1.00, R 2.00; by the same rule reproduced") in text
    assert "Without" not in harness.report(runs.without(["pollen"]))
