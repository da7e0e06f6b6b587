"""Wang, Wu, Huang and Saied, "Economical Hyperparameter Optimization with Blended Search
Strategy" (ICLR 2021): the headline claims and their rules.

The paper's set-up, kept: LightGBM's 9 numerical hyperparameters in FLAML's space (each method
searches FLAML's own space of the learner: ``JOPT`` over a one-learner space), 1 − AUROC on
binary tasks, BlendSearch against its two parts, local search (CFO, Wu et al. 2021) and BO
(Optuna's TPE at its default settings), every method from the same low-cost point (our ``tpe``
with ``low_cost=true``, which the paper's BO gets), trial cost = measured fit + predict time;
and the "random initialization" ablation (Fig. 11) without a low-cost point for any method.
Scaled down: 120 s per run instead of 1 h, four shared datasets of 5 000–45 000 rows instead of
the AutoML benchmark's 37, 5 seeds instead of 10 folds, one stratified 80/20 validation split per
seed. The ADMM claim is not the paper's: it asks whether BlendSearch helps as ADMM's θ-solver.
The rules were written here before any run of this campaign.
"""

from __future__ import annotations

from admm_automl.benchmarks.stats import Best, Lower, Matches
from admm_automl.space.loader import load_space

from harness import Claim

#: LightGBM alone, from the `default` space (its ranges are FLAML's), its rounds fitted as
#: searched: the paper's LightGBM is not stopped early (FLAML tunes n_estimators itself)
LIGHTGBM = load_space("default").for_task("classification").restrict(
    scaler="none", estimator="lightgbm").without_stopping()
DATASETS = ("electricity", "phishing_websites", "sylvine", "cpu_small")
METHODS = {
    "BlendSearch": "JOPT(blendsearch)",
    "CFO": "JOPT(cfo)",
    "BO (TPE)": "JOPT(tpe)@theta.low_cost=true",
}
AGNOSTIC = {
    "BlendSearch": "JOPT(blendsearch)@theta.low_cost=false",
    "CFO": "JOPT(cfo)@theta.low_cost=false",
    "BO (TPE)": "JOPT(tpe)",
}
COMMON = dict(space=LIGHTGBM, budget=120, checkpoints=(0.1, 0.3, 1.0))

CLAIMS = [
    Claim(
        "lightgbm",
        "BlendSearch performs like the better of local search and BO early and surpasses both "
        "later: the best aggregated rank over time tuning LightGBM (Section 4.1, Figs. 3, 4a)",
        DATASETS, METHODS, "BlendSearch", ("CFO", "BO (TPE)"), Best(0.7, 0.05),
        **{**COMMON, "checkpoints": (0.3, 1.0)},
    ),
    Claim(
        "lightgbm_early",
        "early on BlendSearch is no worse than the better of CFO and BO (Section 4.1): its "
        "median at 0.1T within 5 % of the better one's",
        DATASETS, METHODS, "BlendSearch", ("CFO", "BO (TPE)"),
        Matches(0.05, 0.8, 0.05),
        **{**COMMON, "checkpoints": (0.1,)},
    ),
    Claim(
        "agnostic",
        "with random initialization (no low-cost point for any method) BlendSearch still has "
        "the best aggregated rank (Appendix, Fig. 11)",
        DATASETS[:2], AGNOSTIC, "BlendSearch", ("CFO", "BO (TPE)"), Best(0.7, 0.05),
        **{**COMMON, "checkpoints": (0.3, 1.0)},
    ),
    Claim(
        "admm",
        "not the paper's: BlendSearch as ADMM's θ-solver ends below the default GP-BO "
        "(AdADMM-F16(·,Ba) on the `default` space)",
        DATASETS[2:], {"ADMM(BlendSearch)": "AdADMM-F16(blendsearch,Ba)",
                       "ADMM(BO)": "AdADMM-F16(BO,Ba)"},
        "ADMM(BlendSearch)", ("ADMM(BO)",), Lower(0.8, 0.05), space="default", budget=300,
    ),
]


def smoke(claims: list[Claim]) -> list[Claim]:
    """The first claim at 8 s and two seeds with two methods, on a 1000-row dataset: what CI
    runs, the harness end to end; its verdicts mean nothing."""
    from dataclasses import replace

    c = claims[0]
    two = {k: v for k, v in c.methods.items() if k in (c.method, c.against[0])}
    return [replace(c, seeds=(0, 1), methods=two, against=c.against[:1],
                    problems=("fri_c2_1000_10",), budget=8)]
