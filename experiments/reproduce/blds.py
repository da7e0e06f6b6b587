"""Kishimoto, Bouneffouf, Marinescu, Ram, Rawat, Wistuba, Palmes and Botea, "Bandit Limited
Discrepancy Search and Application to Machine Learning Pipeline Optimization" (2021): the
headline claims and their rules.

The paper's set-up, kept: algorithm selection only (every algorithm at scikit-learn's defaults)
over its 4-stage space of 3072 pipelines (the ``blds`` space), 1 − AUROC on a 70/30 split, one
core per run, b = 100 and η = 2 for every multi-fidelity method, cL/δ = 1/9600 for BLDS, and every
method starting from the same random pipeline (FINDINITIALPIPELINE), trained first on the
ladder's first level (bη rows). Scaled down: 300 s per run instead of 2 h (the paper's
early-phase window is 30–500 s, and its bank-marketing number is at 138 s), 2 of its 10 datasets,
5 seeds instead of 10. The rules were written here before any run of this campaign.
"""

from __future__ import annotations

from admm_automl.benchmarks.stats import Best, CatchUp, Lower, SometimesWorse, Worst

from harness import Claim


def first_level(problem) -> float:
    """The fraction of the training rows of the ladder's first level (bη rows)."""
    from admm_automl.solvers.z import fidelity_levels

    return fidelity_levels(problem.n_train)[0]


METHODS = {
    "BLDS(1)": "SELECT(BLDS)@z.disc=1",
    "BLDS(2)": "SELECT(BLDS)@z.disc=2",
    "Hyperband": "SELECT(Hyperband)",
    "DAUB": "SELECT(DAUB)",
    "CMAB": "SELECT(Ba)",
    "RND": "SELECT(RND)",
}
#: BLDS(1) in the paper's other readings: the first training on b rows with D_k = Σ_{j≤k}
#: bη^(j−1) (GETCURRENTPERFORMANCE: "after training p with b samples"), and a new incumbent's
#: ladder carried on from the one it replaced (Appendix B: p4 replaces p1, trained on 800 rows,
#: and is re-trained on 1600)
PAPER_READING = "SELECT(BLDS)@z.disc=1,z.first_size=b,z.incumbent_ladder=carry"
#: the same with the symmetric Even-Dar, Mannor and Mansour (2006) radius: under the default
#: (monotone) bound the first size changes nothing, since that bound is flat below its peak
#: (between 200 and ~2 800 rows its lower term is 0.149 at both sizes), so neither elimination
#: test fires at these losses and the first reading is only measured with a radius that shrinks
PAPER_READING_EVEN_DAR = PAPER_READING + ",z.bound=even_dar"
COMMON = dict(space="blds", validation_size=0.3, budget=300,
              options={"initial": "random", "initial_fidelity": first_level})
DATASETS = ("bank_marketing", "electricity")


def _rivals(method: str) -> tuple[str, ...]:
    """The methods of `early` but ``method``, BLDS(1) first when it is one (the rival a smoke
    form keeps: `early`'s smoke runs it anyway)."""
    first = () if method == "BLDS(1)" else ("BLDS(1)",)
    return first + tuple(m for m in METHODS if m not in (method, "BLDS(1)"))


#: Section 4's other statements about Fig. 1 (`catch_up`, `cmab_much_worse`, `rnd_stuck`,
#: `daub_poor`) are decided on `early`'s runs: the same methods, datasets, budget, seeds and
#: options, so one campaign decides all five. Their time axis is ours: `early` reads its 300 s
#: as the paper's 30–500 s window; these read "early" as the first checkpoint (0.1T = 30 s) and
#: "when running for a longer time" as T, a compressed reading of a paper whose runs last 2 h.
#: The value is, as for `early`, the best loss of a model trained on all rows (1.0 before the
#: first). The medians of `early`'s first campaign (seeds 0–4, 2026-11-26) were printed before
#: these rules were written; they are decided on runs made after them (a new results root).

CLAIMS = [
    Claim(
        "early",
        "BLDS(1) reaches better values sooner than BLDS(2), CMAB, DAUB, Hyperband and random "
        "search, and leads for the first 30–500 s on bank-marketing and others (Section 4, Fig. 1)",
        DATASETS, METHODS, "BLDS(1)", tuple(m for m in METHODS if m != "BLDS(1)"),
        Best(0.7, 0.05), **COMMON,
    ),
    Claim(
        "early_even_dar",
        "the same with BLDS(1)'s former bound, the symmetric Even-Dar, Mannor and Mansour (2006) "
        "radius (our reading of the garbled formula before the monotone one): an ablation",
        DATASETS, {**{m: v for m, v in METHODS.items() if m != "BLDS(1)"},
                   "BLDS(1) Even-Dar": "SELECT(BLDS)@z.disc=1,z.bound=even_dar"},
        "BLDS(1) Even-Dar", tuple(m for m in METHODS if m != "BLDS(1)"),
        Best(0.7, 0.05), **COMMON,
    ),
    Claim(
        "vs_hyperband",
        "BLDS(1) reaches 1 − AUROC = 0.07398 on bank-marketing in 138 s, 19.4× sooner than "
        "Hyperband (Section 4)",
        ("bank_marketing",), {"BLDS(1)": METHODS["BLDS(1)"], "Hyperband": METHODS["Hyperband"]},
        "BLDS(1)", ("Hyperband",), Lower(0.8, 0.05), kind="time_to", target=0.07398, **COMMON,
    ),
    Claim(
        "reading_paper",
        "(a reading ablation, not the paper's claim) BLDS(1) in the paper's other readings "
        "(first training on b rows, D_k summed from b; a new incumbent's ladder carried on) "
        "ends below BLDS(1) as read before",
        DATASETS, {"BLDS(1) paper reading": PAPER_READING, "BLDS(1)": METHODS["BLDS(1)"]},
        "BLDS(1) paper reading", ("BLDS(1)",), Lower(0.7, 0.05), **COMMON,
    ),
    Claim(
        "reading_paper_even_dar",
        "(a reading ablation, not the paper's claim) BLDS(1) in the paper's other readings with "
        "the Even-Dar radius (first training on b rows, D_k summed from b; a new incumbent's "
        "ladder carried on; the symmetric radius, under which the first size changes the "
        "interval) ends below BLDS(1) as read before",
        DATASETS, {"BLDS(1) paper reading, Even-Dar": PAPER_READING_EVEN_DAR,
                   "BLDS(1)": METHODS["BLDS(1)"]},
        "BLDS(1) paper reading, Even-Dar", ("BLDS(1)",), Lower(0.7, 0.05), **COMMON,
    ),
    Claim(
        "early_paper_reading",
        "the `early` claim with BLDS(1) in the paper's other readings",
        DATASETS, {**{m: v for m, v in METHODS.items() if m != "BLDS(1)"},
                   "BLDS(1) paper reading": PAPER_READING},
        "BLDS(1) paper reading", tuple(m for m in METHODS if m != "BLDS(1)"),
        Best(0.7, 0.05), **COMMON,
    ),
    Claim(
        "early_paper_reading_even_dar",
        "the `early` claim with BLDS(1) in the paper's other readings and the Even-Dar radius — "
        "the reading that has full-data models from 0.3T where BLDS(1) as read has none until "
        "T. Rule written 2026-12-01 05:15 UTC, before any of the rivals' runs in the root they "
        "share (results/blds-open); the reading's own runs were made and compared with BLDS(1) "
        "as read (`reading_paper_even_dar`) before it",
        DATASETS, {**{m: v for m, v in METHODS.items() if m != "BLDS(1)"},
                   "BLDS(1) paper reading, Even-Dar": PAPER_READING_EVEN_DAR},
        "BLDS(1) paper reading, Even-Dar", tuple(m for m in METHODS if m != "BLDS(1)"),
        Best(0.7, 0.05), **COMMON,
    ),
    Claim(
        "catch_up",
        "when running longer the other schemes catch up with BLDS(1): they 'return objective "
        "values competitive to those found by BLDS(1)' (Section 4, Fig. 1); our reading: BLDS(1) "
        "leads at 0.1T by more than 5 % of its median and at T the best other median is within "
        "5 % of its own or below",
        DATASETS, METHODS, "BLDS(1)", _rivals("BLDS(1)"), CatchUp(0.05, 0.7, 0.05), **COMMON,
    ),
    Claim(
        "cmab_much_worse",
        "CMAB 'sometimes converges to values that are much worse than those obtained by the "
        "other methods' (Section 4, Fig. 1); our reading: on at least 2 pairs its value at T is "
        "more than 25 % above the median of the other methods that have a model on all rows, "
        "and no better than at 0.3T (converged)",
        DATASETS, METHODS, "CMAB", _rivals("CMAB"),
        SometimesWorse(margin=0.25, min_pairs=2, since="0.3T", no_value=1.0), **COMMON,
    ),
    Claim(
        "rnd_stuck",
        "random search 'also occasionally suffers from a suboptimal solution' (Section 4, "
        "Fig. 1); our reading: on at least 2 pairs RND's value at T is more than 10 % above the "
        "median of the other methods that have a model on all rows, and no better than at 0.3T "
        "(stuck)",
        DATASETS, METHODS, "RND", _rivals("RND"),
        SometimesWorse(margin=0.10, min_pairs=2, since="0.3T", no_value=1.0), **COMMON,
    ),
    Claim(
        "daub_poor",
        "'DAUB performs poorly in general' and 'suffers from much slower convergence' (Section 4, "
        "Fig. 1); our reading: the worst mean rank at every checkpoint, above the next-worst "
        "method by `early`'s strength of rule",
        DATASETS, METHODS, "DAUB", _rivals("DAUB"),
        Worst(0.7, 0.05), **COMMON,
    ),
    Claim(
        "disc",
        "BLDS(2) under-performs BLDS(1): a discrepancy of 2 re-trains many more pipelines "
        "before it restarts (Section 4)",
        DATASETS, {"BLDS(1)": METHODS["BLDS(1)"], "BLDS(2)": METHODS["BLDS(2)"]},
        "BLDS(1)", ("BLDS(2)",), Lower(0.8, 0.05), **COMMON,
    ),
]


def smoke(claims: list[Claim]) -> list[Claim]:
    """The claims on `early`'s methods and the two readings ablations at 5 s with two methods
    each (the claimed one and its first rival: BLDS(1) for the four Section 4 statements and
    the readings), on a 1000-row dataset, two seeds — one for the claims whose claimed method
    `early`'s smoke does not run, so that they add five runs: what CI runs, the harness end to
    end; its verdicts mean nothing."""
    from dataclasses import replace

    # one seed where a claim's claimed method is one no other smoke claim runs: the four
    # statements' and the two readings' (each against BLDS(1), which `early` runs)
    own = ("cmab_much_worse", "rnd_stuck", "daub_poor", "reading_paper",
           "reading_paper_even_dar")
    out = []
    for c in claims:
        if c.name in ("disc", "early_even_dar", "early_paper_reading",
                      "early_paper_reading_even_dar"):
            continue
        two = {k: v for k, v in c.methods.items() if k in (c.method, c.against[0])}
        out.append(replace(c, seeds=(0,) if c.name in own else (0, 1), methods=two,
                           against=c.against[:1], problems=("fri_c2_1000_10",), budget=5))
    return out
