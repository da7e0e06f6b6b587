"""A trial that cannot finish in its time limit, run at a training length that fits it.

A forest's trees are fitted one after the other, with no early stopping to cut them short, so a
random forest or extra trees of a thousand trees on large data can take far longer than the
limit its trial runs under (:func:`.policy.trial_limit`). Stopped between its folds once they
project past that limit (:class:`~.policy.FoldClock`), such a trial still pays for a fold or
more and says nothing of its learner; under a 60 s budget a warm-start extra trees of 1 283 trees
ate 12-17 s that way. With ``shrink_to_fit`` on, a full-data trial of a learner whose training
length is a tunable hyperparameter and that does not stop early (:func:`shrinkable`: the default
space's forests) is sized to its limit before it starts (:func:`shrink_to_limit`):

* its first split's whole pipeline — the steps before the learner too, whose fits cost time as
  well — is fitted on :data:`SHRINK_SAMPLE` of that split's training rows, as a throwaway fit;
  its seconds, scaled to all the rows and every split, predict the whole trial;
* when that prediction passes :data:`SHRINK_MARGIN` of the seconds its limit leaves, the trial
  runs whole (every split, all rows) at the training length predicted to take
  :data:`SHRINK_TARGET` of them, and records it as its ``iterations`` (which the refit trains)
  with the configured one as ``shrunk_from``;
* a trial whose fewest iterations (the hyperparameter's lower bound) are predicted past that
  target is not started: status ``timeout``, its error quoting the prediction.

The seconds at a shorter length are read off a line through the throwaway fit and a second one
at half its length: the fit's seconds scaled in proportion to the length are optimistic below
it, since what does not shrink with it (the steps before the learner, the data's handling)
stays. The line is kept between that proportional scaling and a flat line (its slope and
intercept not negative), and the second fit is made only when it fits in the trial's share at
its worst (as long as the first), else the proportional scaling stands in for the line.

A target of a fifth of the limit, itself a quarter of the time left, is about what an average
evaluation of a run of twenty takes: at half of it a shrunk forest took the seconds of several
of the next trials (``experiments/README.md``, the runs of a forest shrunk to fit its limit).
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..space.hyperparameters import Int
from .data import take_rows
from .policy import LimitProjected, current_limit

#: the fraction of the first split's training rows the throwaway fits are made on
SHRINK_SAMPLE = 1 / 8
#: a trial predicted past this share of the seconds its limit leaves is shrunk
SHRINK_MARGIN = 0.5
#: a shrunk trial runs at the length predicted to take this share of the seconds its limit leaves
SHRINK_TARGET = 0.2
#: ``shrink_to_fit="auto"`` and ``boost_to_fit="auto"`` size trials to their limit from this
#: many training rows on. Below it the campaigns of ``experiments/README.md`` found the shrink
#: level on the mean but losing on small datasets (sonar, oil_spill): a run of many cheap trials
#: there picks its model on noisier validation scores, and the learners it would size take a
#: second or two anyway; from it on each was not worse than running trials as configured (a
#: non-inferiority rule on new splits).
SHRINK_MIN_ROWS = 3000


def resolve_auto(setting: bool | str, n_rows: int) -> bool:
    """Whether a setting that sizes a run's trials to their limit (``shrink_to_fit``,
    ``boost_to_fit``) is on: True or False as given, ``"auto"`` (the default) from
    :data:`SHRINK_MIN_ROWS` training rows on."""
    return n_rows >= SHRINK_MIN_ROWS if setting == "auto" else bool(setting)


@dataclass(frozen=True)
class Length:
    """The training length of a pipeline that may be shrunk: its parameter, its configured value
    and its fewest (the hyperparameter's lower bound)."""

    parameter: str
    configured: int
    fewest: int


def shrinkable(ctx: Any, z: tuple[int, ...], theta: np.ndarray) -> Length | None:
    """The :class:`Length` of the pipeline ``(z, θ)`` when its learner's training length
    (:class:`~admm_automl.space.Iterations`) is a tunable integer and the learner does not stop
    early (``stopping``: its rounds are cut already); None otherwise, or where the last module
    wraps the pipeline (a mitigation fits it several times, on its own folds and groups, which
    one throwaway fit does not predict)."""
    space = ctx.space
    if space.stopping(z) is not None or space.wraps(z):
        return None
    try:
        length = space.encoding.training_length(z)
    except ValueError:  # several algorithms declare a length: none is the pipeline's
        return None
    if length is None:
        return None
    module, algorithm = next((m, m.choices[j]) for m, j in zip(space.modules, z)
                             if m.choices[j].iterations is length)
    hp = next((h for h in algorithm.tunable if h.name == length.parameter), None)
    if not isinstance(hp, Int):
        return None
    configured = int(space.decode(z, theta)[f"{module.name}__{length.parameter}"])
    return Length(length.parameter, configured, max(1, int(hp.low)))


@dataclass(frozen=True)
class Shrunk:
    """The length a trial runs at to fit its limit (``iterations``) and its configured one."""

    iterations: int
    shrunk_from: int


def shrink_to_limit(ctx: Any, z: tuple[int, ...], theta: np.ndarray,
                    fidelity: float) -> Shrunk | None:
    """The length the trial of ``(z, θ)`` at ``fidelity`` runs at to fit the limit it runs under
    (module docstring), or None: it runs as configured. Raises :class:`~.policy.LimitProjected`
    when even its fewest iterations are predicted past the target. Nothing is fitted unless the
    context's ``shrink_to_fit`` is on, the limit is known, the trial is on all rows (a probe or a
    subsample rung is the cheap answer already) and its learner is :func:`shrinkable`."""
    limit = current_limit()
    if not ctx.shrink_to_fit or limit is None or fidelity < 1.0 or not ctx.splits:
        return None
    length = shrinkable(ctx, z, theta)
    if length is None:
        return None
    end, budget_end = limit
    split = ctx.splits[0]
    rows = split.train_rows(SHRINK_SAMPLE)
    scale = len(split.train) / len(rows) * len(ctx.splits)
    seconds = _throwaway(ctx, z, theta, rows, length.configured)
    if seconds is None:  # the fit failed on a few rows: the trial's own fits will say why
        return None
    left = end - time.perf_counter()
    if scale * seconds <= SHRINK_MARGIN * left:
        return None
    points = [(length.configured, scale * seconds)]
    half = length.configured // 2
    if half >= 1 and seconds <= SHRINK_TARGET * left:  # at its worst as long as the first
        again = _throwaway(ctx, z, theta, rows, half)
        if again is not None:
            points.append((half, scale * again))
        left = end - time.perf_counter()
    intercept, slope = _line(points)
    left = max(left, 0.0)
    target = SHRINK_TARGET * left
    fewest = intercept + slope * length.fewest
    if fewest > target:
        name = length.parameter
        why = "the time budget's end" if budget_end else "its time limit"
        fits = ", ".join(f"{s:.3g} s at {name}={n}" for n, s in points)
        raise LimitProjected(
            f"not started: at its fewest {name}={length.fewest} it is predicted to take "
            f"{fewest:.3g} s, past {SHRINK_TARGET:.0%} of the {left:.3g} s {why} leaves "
            f"({target:.3g} s); predicted as {intercept:.3g} s + {slope:.3g} s x {name}, "
            f"through throwaway fits on {len(rows)} of split 1's {len(split.train)} training "
            f"rows scaled to the whole trial ({fits})", budget_end)
    iterations = length.configured if slope <= 0 else math.floor((target - intercept) / slope)
    return Shrunk(min(max(iterations, length.fewest), length.configured), length.configured)


def _line(points: list[tuple[int, float]]) -> tuple[float, float]:
    """``(intercept, slope)`` of the trial's seconds against its length: through the two points
    (length, seconds), the slope kept between 0 (flat) and the first point's seconds per
    iteration (proportional, no intercept); with one point, proportional."""
    (length, seconds), proportional = points[0], points[0][1] / points[0][0]
    if len(points) == 1:
        return 0.0, proportional
    half, at_half = points[1]
    slope = min(max((seconds - at_half) / (length - half), 0.0), proportional)
    return seconds - slope * length, slope


def _throwaway(ctx: Any, z: tuple[int, ...], theta: np.ndarray, rows: np.ndarray,
               iterations: int) -> float | None:
    """The seconds of the whole pipeline of ``(z, θ)`` at ``iterations`` fitted on ``rows``
    (not through the pool of fitted prefixes: their fits are part of what is predicted), or None
    when the fit raised (a MemoryError is raised on: all rows would need more)."""
    pipeline = ctx.pipeline(z, theta, iterations=iterations)
    X, y = take_rows(ctx.X, rows), ctx.y[rows]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        try:
            pipeline.fit(X, y, **ctx.fit_params(pipeline[-1], rows))
        except MemoryError:
            raise
        except Exception:
            return None
        return time.perf_counter() - start
