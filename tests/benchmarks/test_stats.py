"""Deciding a claim: the paired test, ranks with bootstrap intervals and the verdict rules, each
checked on numbers worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from admm_automl.benchmarks.stats import (Best, CatchUp, Lower, Matches, SometimesWorse, Verdict,
                                          Worst, mean_ranks, min_p, paired_p, rank_intervals,
                                          win_fraction)


def test_paired_p_is_the_exact_signed_rank_p():
    a = np.arange(10) * 0.1
    b = a + np.arange(1, 11) * 0.01  # a lower on every pair, all differences distinct
    assert paired_p(a, b) == pytest.approx(1 / 2 ** 10)  # only the all-negative sign pattern
    assert paired_p(a, b, "greater") == pytest.approx(1.0)
    assert min_p(10) == pytest.approx(1 / 2 ** 10)


def test_paired_p_drops_ties_and_pairs_where_neither_reached_the_target():
    a = [1.0, 2.0, math.inf, 5.0]
    b = [1.0, 3.0, math.inf, math.inf]  # a tie, a win, neither, a reached-only-by-a
    assert paired_p(a, b) == pytest.approx(0.25)  # two wins left: (1/2)^2
    assert paired_p([1.0, 1.0], [1.0, 1.0]) == 1.0


def test_win_fraction_counts_strict_wins_only():
    assert win_fraction([1, 2, 3, 4], [2, 2, 1, 5]) == 0.5


def test_mean_ranks_share_ties_and_put_nan_last():
    values = np.array([[0.1, 0.2, np.nan],
                       [0.3, 0.3, 0.1]])
    np.testing.assert_allclose(mean_ranks(values), [(1 + 2.5) / 2, (2 + 2.5) / 2, (3 + 1) / 2])


def test_rank_intervals_cover_the_mean_and_shrink_to_it_when_every_pair_agrees():
    agree = np.tile([0.1, 0.2, 0.3], (8, 1))
    mean, low, high = rank_intervals(agree)
    np.testing.assert_allclose([mean, low, high], [[1, 2, 3]] * 3)
    mixed = np.random.default_rng(0).random((20, 3))
    mean, low, high = rank_intervals(mixed)
    assert np.all(low <= mean) and np.all(mean <= high) and np.all(high - low > 0.2)


def test_lower_reproduced_contradicted_and_not_reproduced():
    a = np.linspace(0.1, 0.2, 10)
    b = a + np.linspace(0.01, 0.1, 10)
    assert Lower(0.8, 0.01).decide(a, b).word == "reproduced"
    assert Lower(0.8, 0.01).decide(b, a).word == "contradicted"
    mixed = a.copy()
    mixed[::2] = b[::2] + 0.05  # lower on half the pairs only
    verdict = Lower(0.8, 0.01).decide(mixed, b)
    assert verdict.word == "not reproduced" and verdict.numbers["wins"] == 0.5


def test_lower_says_when_too_few_pairs_can_reach_the_threshold():
    verdict = Lower(0.8, 0.01).decide([0.1, 0.2, 0.3, 0.4, 0.5], [0.2, 0.3, 0.4, 0.5, 0.6])
    assert verdict.word == "not reproduced"  # 5 agreeing pairs: p = 1/32 > 0.01
    assert "smallest possible p is 0.031" in verdict.reason


def test_matches_is_non_inferiority_within_the_tolerance():
    rng = np.random.default_rng(1)
    best = 0.5 + 0.01 * rng.random(10)
    other = best * 1.5
    # 2 % above the best fixed on every pair: within a 5 % tolerance, so it matches
    checkpoints = {t: (best * 1.02, {"I16": best, "I64": other}) for t in ("0.1T", "T")}
    verdict = Matches(0.05, 0.8, 0.01).decide(checkpoints)
    assert verdict.word == "reproduced" and verdict.numbers["gap T"] == pytest.approx(0.02)
    # 20 % behind at one checkpoint on every pair: contradicted
    checkpoints["T"] = (best * 1.2, {"I16": best, "I64": other})
    assert Matches(0.05, 0.8, 0.01).decide(checkpoints).word == "contradicted"
    # 20 % behind in the median but mixed pair by pair: not reproduced
    mixed = best * np.where(np.arange(10) % 2, 1.4, 0.99)
    assert Matches(0.05, 0.8, 0.01).decide({"T": (mixed, {"I16": best})}).word == "not reproduced"


def test_best_needs_the_lowest_rank_and_a_significant_lead_at_every_checkpoint():
    base = np.linspace(0.1, 0.2, 10)
    lead = {t: (base, {"B": base + 0.05, "C": base + 0.1}) for t in ("0.1T", "0.3T")}
    assert Best(0.7, 0.05).decide(lead).word == "reproduced"
    behind = dict(lead, **{"0.3T": (base + 0.2, {"B": base + 0.05, "C": base + 0.1})})
    assert Best(0.7, 0.05).decide(behind).word == "contradicted"
    close = {"T": (base, {"B": base + np.where(np.arange(10) % 2, 0.01, -0.01)})}
    assert Best(0.7, 0.05).decide(close).word == "not reproduced"


def test_worst_is_best_mirrored_the_highest_rank_and_a_significant_gap_at_every_checkpoint():
    base = np.linspace(0.1, 0.2, 10)
    trail = {t: (base + 0.1, {"B": base + 0.05, "C": base}) for t in ("0.1T", "1T")}
    assert Worst(0.7, 0.05).decide(trail).word == "reproduced"
    # below C on every pair at one checkpoint: not the worst there, contradicted
    ahead = dict(trail, **{"1T": (base - 0.05, {"B": base + 0.05, "C": base})})
    assert Worst(0.7, 0.05).decide(ahead).word == "contradicted"
    # the highest rank but tied with B on half the pairs and mixed on the rest: not reproduced
    close = {"1T": (base + 0.1, {"B": base + 0.1 + np.where(np.arange(10) % 2, 0.01, -0.01),
                                 "C": base})}
    verdict = Worst(0.7, 0.05).decide(close)
    assert verdict.word == "not reproduced" and "B" in verdict.reason
    # every method without a model (the worst loss everywhere): ties decide nothing
    tied = {"1T": (np.ones(10), {"B": np.ones(10), "C": np.ones(10)})}
    assert Worst(0.7, 0.05).decide(tied).word == "not reproduced"


def test_catch_up_needs_an_early_lead_that_is_gone_at_the_end():
    base = np.linspace(0.1, 0.2, 10)
    # 20 % ahead of the best other at 0.1T; the best other 2 % behind at T: caught up
    caught = {"0.1T": (base, {"B": base * 1.2, "C": base * 1.5}),
              "1T": (base, {"B": base * 1.02, "C": base * 1.5})}
    verdict = CatchUp(0.05, 0.7, 0.05).decide(caught)
    assert verdict.word == "reproduced"
    assert verdict.numbers["gap 0.1T"] == pytest.approx(0.2)
    assert verdict.numbers["gap 1T"] == pytest.approx(0.02)
    # a lead at T over both, on every pair: nobody caught up, contradicted
    kept = dict(caught, **{"1T": (base, {"B": base * 1.2, "C": base * 1.5})})
    assert CatchUp(0.05, 0.7, 0.05).decide(kept).word == "contradicted"
    # behind from the start: nothing to catch up with, not reproduced
    behind = {"0.1T": (base * 1.3, {"B": base, "C": base * 1.5}),
              "1T": (base, {"B": base, "C": base * 1.5})}
    verdict = CatchUp(0.05, 0.7, 0.05).decide(behind)
    assert verdict.word == "not reproduced" and "no lead" in verdict.reason
    # a lead at T over B in the medians that the pairs leave open (mixed): not reproduced
    mixed = base * np.where(np.arange(10) % 2, 1.5, 0.95)
    open_lead = dict(caught, **{"1T": (base, {"B": mixed, "C": base * 1.5})})
    verdict = CatchUp(0.05, 0.7, 0.05).decide(open_lead)
    assert verdict.word == "not reproduced" and "the lead stays" in verdict.reason


def test_sometimes_worse_counts_the_pairs_much_worse_than_the_others_median():
    others = {"B": np.full(6, 0.10), "C": np.full(6, 0.12), "D": np.ones(6)}  # D: no model
    # the median of B and C (D has no value below 1) is 0.11; 25 % above it is 0.1375
    mine = np.array([0.14, 0.15, 0.11, 0.10, 0.13, 0.12])
    rule = SometimesWorse(margin=0.25, min_pairs=2, no_value=1.0)
    verdict = rule.decide({"1T": (mine, others)})
    assert verdict.word == "reproduced" and verdict.numbers["much worse"] == 2
    one = mine.copy()
    one[1] = 0.11
    assert rule.decide({"1T": (one, others)}).word == "not reproduced"
    never = np.full(6, 0.11)
    assert rule.decide({"1T": (never, others)}).word == "contradicted"
    # D counted as a value: the median of 0.10, 0.12 and 1 is 0.12, 25 % above is 0.15
    assert SometimesWorse(0.25, 2).decide({"1T": (mine, others)}).word == "contradicted"
    # stuck since 0.3T: a pair that still improved after 0.3T does not count
    earlier = mine.copy()
    earlier[0] = 0.2  # 0.2 at 0.3T, 0.14 at T: improving, not converged
    stuck = SometimesWorse(0.25, 2, since="0.3T", no_value=1.0)
    assert stuck.decide({"0.3T": (earlier, others), "1T": (mine, others)}).numbers[
        "much worse"] == 1
    assert stuck.decide({"0.3T": (mine, others), "1T": (mine, others)}).word == "reproduced"
    # a pair where no other method has a value is not counted; none counted decides nothing
    none = {"B": np.ones(6), "C": np.ones(6)}
    verdict = rule.decide({"1T": (mine, none)})
    assert verdict.numbers["pairs"] == 0 and verdict.word == "not reproduced"
    with pytest.raises(ValueError, match="not one of"):
        stuck.decide({"1T": (mine, others)})


def test_a_verdict_is_one_of_three_words():
    with pytest.raises(ValueError, match="one of"):
        Verdict("probably", "")
