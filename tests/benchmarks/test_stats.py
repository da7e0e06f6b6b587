"""Deciding a claim: the paired test, ranks with bootstrap intervals and the verdict rules, each
checked on numbers worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from admm_automl.benchmarks.stats import (Best, Lower, Matches, Verdict, mean_ranks, min_p,
                                          paired_p, rank_intervals, win_fraction)


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


def test_a_verdict_is_one_of_three_words():
    with pytest.raises(ValueError, match="one of"):
        Verdict("probably", "")
