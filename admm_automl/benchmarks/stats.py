"""Deciding a paper's claim from several seeds: paired tests, ranks with bootstrap intervals, and
verdict rules written down before the runs.

A claim compares methods on *pairs*: one (problem, seed) is one pair, every method run on the
same split with the same seed. The value of a method on a pair is a loss (lower is better): the
incumbent at a time, or the time to reach a target. Every rule returns a :class:`Verdict`, one
of three words with the numbers behind it:

* **reproduced**: the data support the paper's claim by the rule;
* **contradicted**: the data support the opposite with the same strength;
* **not reproduced**: neither (too few pairs, a small or mixed effect).

The tests are scipy's: the Wilcoxon signed-rank test on the paired differences (exact for small
samples without ties, the normal approximation otherwise; zero differences are dropped, as
Wilcoxon (1945) does). With n pairs the smallest attainable one-sided p is 2⁻ⁿ, so a rule asking
for p < 0.01 needs at least 7 pairs that all agree: :func:`min_p` says so in the verdict rather
than letting an underpowered claim read as "not reproduced" without a reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

VERDICTS = ("reproduced", "not reproduced", "contradicted")


@dataclass(frozen=True)
class Verdict:
    """The outcome of a rule: ``word`` (one of :data:`VERDICTS`) and why, in numbers."""

    word: str
    reason: str
    numbers: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.word not in VERDICTS:
            raise ValueError(f"a verdict is one of {VERDICTS}, got {self.word!r}")


def min_p(n: int) -> float:
    """The smallest one-sided p of an exact signed-rank test on ``n`` non-zero differences."""
    return 0.5 ** n if n > 0 else 1.0


def paired_p(a: Sequence[float], b: Sequence[float], alternative: str = "less") -> float:
    """One-sided p of the Wilcoxon signed-rank test that ``a`` is lower than ``b`` pair by pair
    (``alternative="greater"``: higher). Pairs where both are infinite (neither reached a target)
    are dropped; an infinite value on one side only counts as the larger difference of its sign
    (ranks are all the test uses). 1.0 when no difference is left."""
    from scipy.stats import wilcoxon

    d = _differences(a, b)
    if not d.size:
        return 1.0
    return float(wilcoxon(d, alternative=alternative, zero_method="wilcox").pvalue)


def _differences(a: Sequence[float], b: Sequence[float]) -> np.ndarray:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"paired values need the same shape, got {a.shape} and {b.shape}")
    keep = ~(np.isinf(a) & np.isinf(b) & (np.sign(a) == np.sign(b))) & ~np.isnan(a) & ~np.isnan(b)
    a, b = a[keep], b[keep]
    d = np.where(np.isfinite(a) & np.isfinite(b), a - b, 0.0)
    finite = np.abs(d[np.isfinite(a) & np.isfinite(b)])
    big = 2.0 * (finite.max() if finite.size and finite.max() > 0 else 1.0)
    d = np.where(np.isinf(a) & ~np.isinf(b), np.sign(a) * big, d)
    d = np.where(np.isinf(b) & ~np.isinf(a), -np.sign(b) * big, d)
    return d[d != 0.0]


def win_fraction(a: Sequence[float], b: Sequence[float]) -> float:
    """The fraction of pairs on which ``a`` is strictly lower than ``b`` (ties are not wins)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.mean(a < b)) if a.size else math.nan


def mean_ranks(values: np.ndarray) -> np.ndarray:
    """Mean rank of each method (column) over pairs (rows); 1 = lowest value, ties share the
    mean rank, NaN ranks last."""
    from scipy.stats import rankdata

    v = np.where(np.isnan(values), np.inf, np.asarray(values, dtype=float))
    return rankdata(v, axis=1).mean(axis=0)


def rank_intervals(values: np.ndarray, n_boot: int = 2000, level: float = 0.95,
                   seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean ranks (as :func:`mean_ranks`) and their bootstrap percentile interval: the pairs
    (rows) are resampled with replacement ``n_boot`` times (Efron and Tibshirani, 1993).
    Returns (mean, low, high), one entry per method."""
    from scipy.stats import rankdata

    v = np.where(np.isnan(values), np.inf, np.asarray(values, dtype=float))
    ranks = rankdata(v, axis=1)
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, len(ranks), size=(n_boot, len(ranks)))
    boot = ranks[rows].mean(axis=1)
    tail = 100.0 * (1.0 - level) / 2.0
    return ranks.mean(axis=0), np.percentile(boot, tail, axis=0), np.percentile(boot, 100 - tail, axis=0)


# ------------------------------------------------------------------------------------ rules
@dataclass(frozen=True)
class Lower:
    """"``method`` ends below ``than``": reproduced when it is lower on at least
    ``min_fraction`` of the pairs and the one-sided paired test gives p < ``alpha``;
    contradicted when ``than`` is lower by the same rule; otherwise not reproduced."""

    min_fraction: float = 0.8
    alpha: float = 0.01

    def text(self, method: str, than: str) -> str:
        return (f"reproduced if {method} is below {than} on ≥ {self.min_fraction:.0%} of "
                f"(problem, seed) pairs with a one-sided paired Wilcoxon p < {self.alpha:g}; "
                f"contradicted if {than} is below {method} by the same rule")

    def decide(self, a: Sequence[float], b: Sequence[float]) -> Verdict:
        wins, losses = win_fraction(a, b), win_fraction(b, a)
        p_less, p_more = paired_p(a, b, "less"), paired_p(a, b, "greater")
        n = int(np.size(a))
        numbers = {"pairs": n, "wins": wins, "losses": losses, "p": p_less, "p_reverse": p_more}
        if wins >= self.min_fraction and p_less < self.alpha:
            return Verdict("reproduced", f"lower on {wins:.0%} of {n} pairs, p = {p_less:.2g}",
                           numbers)
        if losses >= self.min_fraction and p_more < self.alpha:
            return Verdict("contradicted", f"higher on {losses:.0%} of {n} pairs, "
                           f"p = {p_more:.2g}", numbers)
        note = (f"; with {n} pairs the smallest possible p is {min_p(n):.2g}"
                if min_p(n) >= self.alpha else "")
        return Verdict("not reproduced", f"lower on {wins:.0%}, higher on {losses:.0%} of {n} "
                       f"pairs, p = {p_less:.2g} (reverse {p_more:.2g}){note}", numbers)


@dataclass(frozen=True)
class Matches:
    """"``method`` matches the best of ``others`` at every time scale", a non-inferiority claim:
    reproduced when at every checkpoint its median is within ``tolerance`` (relative) of the
    best other median; contradicted when at some checkpoint the gap is beyond the tolerance and
    one other method is below it on ≥ ``min_fraction`` of the pairs with a one-sided paired p <
    ``alpha``; otherwise (a gap beyond the tolerance that the pairs do not confirm) not
    reproduced."""

    tolerance: float = 0.05
    min_fraction: float = 0.8
    alpha: float = 0.01

    def text(self, method: str, than: str) -> str:
        return (f"reproduced if at every checkpoint the median of {method} is within "
                f"{self.tolerance:.0%} of the best median among {than}; contradicted if at some "
                f"checkpoint it is further behind and one of them is below {method} on "
                f"≥ {self.min_fraction:.0%} of pairs with a one-sided paired Wilcoxon p < "
                f"{self.alpha:g}")

    def decide(self, checkpoints: Mapping[str, tuple[np.ndarray, Mapping[str, np.ndarray]]]
               ) -> Verdict:
        """``checkpoints``: name -> (the method's values, {other: values}) over the same pairs."""
        gaps, beaten = {}, []
        for name, (mine, others) in checkpoints.items():
            best = min(float(np.nanmedian(v)) for v in others.values())
            gaps[name] = (float(np.nanmedian(mine)) - best) / abs(best) if best else 0.0
            if gaps[name] <= self.tolerance:
                continue
            lower = Lower(self.min_fraction, self.alpha)
            beaten += [f"{other} at {name}" for other, values in others.items()
                       if lower.decide(values, mine).word == "reproduced"]
        gap_text = ", ".join(f"{k}: {100 * g:+.1f} %" for k, g in gaps.items())
        numbers = {f"gap {k}": g for k, g in gaps.items()}
        if beaten:
            return Verdict("contradicted", "significantly beaten by " + ", ".join(beaten)
                           + f" (median gap to the best {gap_text})", numbers)
        if all(g <= self.tolerance for g in gaps.values()):
            return Verdict("reproduced", f"median gap to the best {gap_text}", numbers)
        return Verdict("not reproduced", f"median gap to the best {gap_text}, not confirmed "
                       "pair by pair", numbers)


@dataclass(frozen=True)
class Best:
    """"``method`` is the best early": at every checkpoint it has the lowest mean rank over
    the pairs and is below the runner-up by :class:`Lower`'s rule (``min_fraction``, ``alpha``)
    — reproduced; contradicted when at some checkpoint another method is below it by that rule;
    otherwise not reproduced."""

    min_fraction: float = 0.7
    alpha: float = 0.05

    def text(self, method: str, than: str) -> str:
        return (f"reproduced if at every checkpoint {method} has the lowest mean rank among "
                f"{than} and is below the runner-up on ≥ {self.min_fraction:.0%} of pairs with a "
                f"one-sided paired Wilcoxon p < {self.alpha:g}; contradicted if some method is "
                f"below {method} by that rule at some checkpoint")

    def decide(self, checkpoints: Mapping[str, tuple[np.ndarray, Mapping[str, np.ndarray]]]
               ) -> Verdict:
        return _first_at_every_checkpoint(checkpoints, Lower(self.min_fraction, self.alpha), +1)


@dataclass(frozen=True)
class Worst:
    """"``method`` performs poorly": :class:`Best` mirrored — at every checkpoint it has the
    highest mean rank over the pairs and is above the next-worst method by :class:`Lower`'s
    rule (``min_fraction``, ``alpha``) — reproduced; contradicted when at some checkpoint it is
    below another method by that rule; otherwise not reproduced."""

    min_fraction: float = 0.7
    alpha: float = 0.05

    def text(self, method: str, than: str) -> str:
        return (f"reproduced if at every checkpoint {method} has the highest mean rank among "
                f"{than} and is above the next-worst on ≥ {self.min_fraction:.0%} of pairs with a "
                f"one-sided paired Wilcoxon p < {self.alpha:g}; contradicted if {method} is below "
                "some method by that rule at some checkpoint")

    def decide(self, checkpoints: Mapping[str, tuple[np.ndarray, Mapping[str, np.ndarray]]]
               ) -> Verdict:
        return _first_at_every_checkpoint(checkpoints, Lower(self.min_fraction, self.alpha), -1)


def _first_at_every_checkpoint(
        checkpoints: Mapping[str, tuple[np.ndarray, Mapping[str, np.ndarray]]], rule: "Lower",
        sign: int) -> Verdict:
    """The rule of :class:`Best` (``sign`` +1: the lowest values) and of :class:`Worst` (−1:
    the highest), one rule mirrored. "Ahead" means below for +1 and above for −1; a failed run
    (NaN) ranks last either way, as :func:`mean_ranks` ranks it."""
    def ahead(a: np.ndarray, b: np.ndarray) -> Verdict:
        return rule.decide(a, b) if sign > 0 else rule.decide(b, a)

    held, notes = True, []
    for name, (mine, others) in checkpoints.items():
        names = list(others)
        ranks = mean_ranks(np.column_stack([mine] + [others[k] for k in names]))
        rival = int(np.argmin(sign * ranks[1:]))
        for other in names:
            against = ahead(others[other], mine)
            if against.word == "reproduced":
                where = f"{other} is below it" if sign > 0 else f"it is below {other}"
                return Verdict("contradicted", f"{where} at {name} ({against.reason})")
        v = ahead(mine, others[names[rival]])
        held &= sign * ranks[0] <= sign * ranks[1 + rival] and v.word == "reproduced"
        notes.append(f"{name}: rank {ranks[0]:.2f} vs {names[rival]} {ranks[1 + rival]:.2f}, "
                     + ("" if sign > 0 else f"{names[rival]} ") + v.reason)
    return Verdict("reproduced" if held else "not reproduced", "; ".join(notes))


@dataclass(frozen=True)
class CatchUp:
    """"the others catch up with ``method`` later": it leads early and its lead is gone at the
    end. With gap = (the best other median − its median) / |its median| (positive: it is
    ahead), reproduced when the gap is above ``tolerance`` at the first checkpoint (a lead to
    catch up with) and at most ``tolerance`` at the last (the best other within ``tolerance``
    of it, or below); contradicted when at the last checkpoint the gap is still above
    ``tolerance`` and it is below every other method by :class:`Lower`'s rule
    (``min_fraction``, ``alpha``): nobody caught up; otherwise not reproduced (no early lead,
    or a lead the pairs leave open)."""

    tolerance: float = 0.05
    min_fraction: float = 0.7
    alpha: float = 0.05

    def text(self, method: str, than: str) -> str:
        return (f"reproduced if at the first checkpoint the best median among {than} is more than "
                f"{self.tolerance:.0%} above {method}'s (a lead) and at the last within "
                f"{self.tolerance:.0%} of it or below (caught up); contradicted if at the last "
                f"checkpoint it is further ahead and below every one of them on "
                f"≥ {self.min_fraction:.0%} of pairs with a one-sided paired Wilcoxon p < "
                f"{self.alpha:g}")

    def decide(self, checkpoints: Mapping[str, tuple[np.ndarray, Mapping[str, np.ndarray]]]
               ) -> Verdict:
        names = list(checkpoints)
        first, last = names[0], names[-1]

        def gap(name: str) -> tuple[float, str]:
            mine, others = checkpoints[name]
            medians = {k: float(np.nanmedian(v)) for k, v in others.items()}
            best = min(medians, key=medians.get)
            me = float(np.nanmedian(mine))
            return ((medians[best] - me) / abs(me) if me else medians[best] - me), best

        (lead, lead_by), (left, left_by) = gap(first), gap(last)
        numbers = {f"gap {first}": lead, f"gap {last}": left}
        text = (f"best other median {100 * lead:+.1f} % from it at {first} ({lead_by}), "
                f"{100 * left:+.1f} % at {last} ({left_by})")
        mine, others = checkpoints[last]
        rule = Lower(self.min_fraction, self.alpha)
        if left > self.tolerance and all(rule.decide(mine, v).word == "reproduced"
                                         for v in others.values()):
            return Verdict("contradicted", f"still below every other at {last}: nobody caught "
                           f"up; {text}", numbers)
        if lead > self.tolerance and left <= self.tolerance:
            return Verdict("reproduced", text, numbers)
        why = "no lead to catch up with" if lead <= self.tolerance else "the lead stays"
        return Verdict("not reproduced", f"{why}: {text}", numbers)


@dataclass(frozen=True)
class SometimesWorse:
    """"``method`` sometimes ends much worse than the others", an existence claim over pairs. On
    a pair it is *much worse* when its value at the last checkpoint is more than ``margin``
    (relative) above the median of the other methods' values there — those below ``no_value``
    (the problem's worst loss, a method's value before its first model) — and, with ``since``
    (a checkpoint's name), it has not improved since that checkpoint (it converged there). A
    pair where no other method has a value does not count. Reproduced when at least
    ``min_pairs`` pairs are much worse; contradicted when none is (of at least ``min_pairs``
    counted); otherwise not reproduced."""

    margin: float = 0.25
    min_pairs: int = 2
    since: str | None = None
    no_value: float | None = None

    def text(self, method: str, than: str) -> str:
        stuck = (f", not improved since {self.since}" if self.since else "")
        return (f"on a pair {method} is much worse when at the last checkpoint it is more than "
                f"{self.margin:.0%} above the median of {than} (those with a value"
                + (f" below {self.no_value:g}" if self.no_value is not None else "")
                + f"){stuck}; reproduced if ≥ {self.min_pairs} pairs are, contradicted if none is")

    def decide(self, checkpoints: Mapping[str, tuple[np.ndarray, Mapping[str, np.ndarray]]]
               ) -> Verdict:
        names = list(checkpoints)
        if self.since is not None and self.since not in checkpoints:
            raise ValueError(f"checkpoint {self.since!r} is not one of {names}")
        mine, others = checkpoints[names[-1]]
        mine = np.asarray(mine, dtype=float)
        rows = np.column_stack([np.asarray(v, dtype=float) for v in others.values()])
        if self.no_value is not None:
            rows = np.where(rows >= self.no_value, np.nan, rows)
        counted, worse = 0, 0
        for i in range(len(mine)):
            valid = rows[i][np.isfinite(rows[i])]
            if not valid.size:
                continue
            counted += 1
            reference = float(np.median(valid))
            bad = mine[i] > reference + self.margin * abs(reference) or np.isnan(mine[i])
            if self.since is not None:
                before = float(np.asarray(checkpoints[self.since][0], dtype=float)[i])
                bad &= not (mine[i] < before)
            worse += bool(bad)
        numbers = {"pairs": counted, "much worse": worse}
        text = f"much worse on {worse} of {counted} pairs"
        if counted < self.min_pairs:
            return Verdict("not reproduced", f"{text}: fewer than {self.min_pairs} pairs where "
                           "another method has a value", numbers)
        if worse >= self.min_pairs:
            return Verdict("reproduced", text, numbers)
        if worse == 0:
            return Verdict("contradicted", text, numbers)
        return Verdict("not reproduced", f"{text} (the rule asks {self.min_pairs})", numbers)
