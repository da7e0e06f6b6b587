"""Belakaria, Doppa, Fusi and Sheth, "Bayesian Optimization over Iterative Learners with
Structured Responses: A Budget-aware Planning Approach" (BAPI, 2022): the headline claims and
their rules.

The paper's set-up, kept: iterative learners whose training length the method chooses
(scikit-learn's MLP trained epoch by epoch with ``partial_fit``, and HistGradientBoosting continued
with ``warm_start``; t_max = 100), validation error (1 − accuracy) as the loss, BAPI with a
horizon of at most 4 (``bapi`` at its defaults) against its ablation without the monotone
learning-curve constraint, EI (every configuration trained to t_max: our ``bo``), Hyperband and
BOHB (SMAC3's facades with the training length as budget), and random search, all through one
worker that holds partly trained models, so a promotion is continued as BAPI's continuations are.
Scaled down: 120 s per run — at least 15 full trainings of the MLP on these datasets, which the
paper's "small budgets" leave unsaid — on 4 tasks instead of 13, 5 seeds instead of 10, one
stratified 80/20 validation split per seed. The rules were written here before any run of this
campaign.

The ``epsilon`` claim is not the paper's: it tests the piece suspected when the first runs of
``table1`` showed BAPI stopping most of its evaluations at the first check (20 of 100 epochs)
as converged, its conservative stopping length being within ε = 0.01 of the predicted asymptote
on curves whose final differences between methods are smaller than that (the paper lowered ε to
0.005 where "the variation in the validation error" was small). Added, with its rule, after those
first runs and before any run of its own (2026-11-27).
"""

from __future__ import annotations

from admm_automl.benchmarks.stats import Best, Lower
from admm_automl.space.loader import load_space

from harness import Claim

_ITERATIVE = load_space("iterative").for_task("classification")
MLP = _ITERATIVE.restrict(scaler="standard_scaler", estimator="mlp")
HGB = _ITERATIVE.restrict(scaler="standard_scaler", estimator="hist_gradient_boosting")
METHODS = {
    "BAPI-4": "JOPT(bapi)",
    "BAPI-4-NM": "JOPT(bapi)@theta.monotone=false",
    "EI": "JOPT(BO)",
    "Hyperband": "SMAC3(Hyperband)",
    "BOHB": "SMAC3(BOHB)",
    "Random": "Random",
    "BAPI-4-ε0.001": "JOPT(bapi)@theta.epsilon=0.001",
    "BAPI-4-εauto": "JOPT(bapi)@theta.epsilon=auto",
}
RIVALS = ("EI", "Hyperband", "BOHB", "Random")
COMMON = dict(budget=120, scoring="accuracy", speedup_reference="EI", training_cost=True)

CLAIMS = [
    Claim(
        "table1",
        "BAPI has the best average rank over the tasks at the end of the budget (Table 1: 2.9, "
        "Hyperband 6.1)",
        ("sylvine", "pollen", "cpu_small"), {k: METHODS[k] for k in ("BAPI-4", *RIVALS)},
        "BAPI-4", RIVALS, Best(0.7, 0.05), space=MLP, checkpoints=(1.0,), **COMMON,
    ),
    Claim(
        "anytime",
        "(ours, not a claim of the paper, whose Table 1 ranks final values only; our reading of "
        "its 'the gain was significant in the case of limited budget') BAPI is ahead early too: "
        "the best average rank at a quarter and half of the budget",
        ("sylvine", "pollen", "cpu_small"), {k: METHODS[k] for k in ("BAPI-4", *RIVALS)},
        "BAPI-4", RIVALS, Best(0.7, 0.05), space=MLP, checkpoints=(0.25, 0.5), **COMMON,
    ),
    Claim(
        "table1_hgb",
        "the same on a boosted learner (HistGradientBoosting, t = boosting rounds)",
        ("phishing_websites",), {k: METHODS[k] for k in ("BAPI-4", *RIVALS)}, "BAPI-4", RIVALS,
        Best(0.7, 0.05), space=HGB, checkpoints=(1.0,), **COMMON,
    ),
    Claim(
        "monotone",
        "the monotone learning-curve model helps: BAPI-4 ends below BAPI-4 without it (the "
        "ablation)",
        ("sylvine", "pollen", "cpu_small"),
        {"BAPI-4": METHODS["BAPI-4"], "BAPI-4-NM": METHODS["BAPI-4-NM"]}, "BAPI-4",
        ("BAPI-4-NM",), Lower(0.8, 0.05), space=MLP, **{**COMMON, "speedup_reference": None},
    ),
    Claim(
        "epsilon",
        "(not the paper's; the suspected piece) a tighter conservative-stopping tolerance helps "
        "on these curves: BAPI-4 at ε = 0.001 ends below BAPI-4 at the paper's ε = 0.01",
        ("sylvine", "cpu_small"),
        {k: METHODS[k] for k in ("BAPI-4-ε0.001", "BAPI-4", "Hyperband")}, "BAPI-4-ε0.001",
        ("BAPI-4", "Hyperband"), Lower(0.7, 0.05), space=MLP,
        **{**COMMON, "speedup_reference": None},
    ),
    Claim(
        "epsilon_auto",
        "(a reading ablation) ε from the data by the paper's own rule for a metric without a "
        "natural scale ends below the fixed ε = 0.01 (at which 91–100 % of configurations stop "
        "at their first check on these curves)",
        ("sylvine", "cpu_small"), {k: METHODS[k] for k in ("BAPI-4-εauto", "BAPI-4")},
        "BAPI-4-εauto", ("BAPI-4",), Lower(0.7, 0.05), space=MLP,
        **{**COMMON, "speedup_reference": None},
    ),
    Claim(
        "table1_auto",
        "Table 1's claim with BAPI-4 at ε from the data: the best average rank at the end",
        ("sylvine", "pollen", "cpu_small"), {k: METHODS[k] for k in ("BAPI-4-εauto", *RIVALS)},
        "BAPI-4-εauto", RIVALS, Best(0.7, 0.05), space=MLP, checkpoints=(1.0,), **COMMON,
    ),
]


def smoke(claims: list[Claim]) -> list[Claim]:
    """`table1` at 8 s and two seeds with BAPI-4 and Hyperband, and the data-scaled ε's
    ablation at one seed (its rival BAPI-4 is the first claim's run, so one run more), on a
    1000-row dataset: what CI runs, the harness end to end; its verdicts mean nothing."""
    from dataclasses import replace

    small = dict(problems=("fri_c2_1000_10",), budget=8, speedup_reference=None)
    out = []
    for c in claims:
        if c.name == "table1":
            two = {k: v for k, v in c.methods.items() if k in (c.method, "Hyperband")}
            out.append(replace(c, seeds=(0, 1), methods=two, against=("Hyperband",), **small))
        elif c.name == "epsilon_auto":
            out.append(replace(c, seeds=(0,), **small))
    return out
