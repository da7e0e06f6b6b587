"""The task of a run: the data's splits, metric, preprocessing and constraints as one
:class:`~admm_automl.final.outcome.Task` (:func:`prepare_task`), the loss of a failed pipeline
(:func:`baseline_loss`, which is also the check that the metric can be computed on every
validation split at all, with the message that says why not and what to do), and the metric's name
for the progress display (:func:`display_metric`)."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from ..evaluation.data import make_preprocessor, take_rows
from ..evaluation.metrics import get_metric
from ..evaluation.prefix_cache import DEFAULT_CACHE_MB
from ..evaluation.splits import make_splits
from ..evaluation.trial import TrialContext
from ..exceptions import DataError
from ..final.outcome import Task


def prepare_task(
    X: Any, y: np.ndarray, *, space: Any, task: str, target_type: str, scoring: Any = None,
    cv: int | None = None, validation_size: float = 0.2, split_seed: int = 0,
    model_seed: int | None = None, constraints: Any = None, sensitive_features: Any = None,
    cache_size: float = DEFAULT_CACHE_MB, repeats: int = 1,
) -> Task:
    """Splits (``cv``-fold ``repeats`` times, or a holdout), metric, preprocessing and
    constraints for pipelines of ``space`` on (X, y)."""
    from ..constraints import make_constraints

    metric = get_metric(scoring, task, target_type)
    space.check_classes()
    try:
        splits = make_splits(y, classification=task == "classification", cv=cv,
                             validation_size=validation_size, seed=split_seed, repeats=repeats)
    except ValueError as err:
        raise DataError(f"cannot make the validation split(s): {err}") from None
    labels = np.unique(y) if task == "classification" else None
    ctx = TrialContext(space, X, y, splits, metric, make_preprocessor(X), model_seed, labels=labels,
                       cache_size=cache_size)
    bound = make_constraints(constraints)
    for constraint in bound:  # errors in the data come here, before any training
        constraint.bind(X, y, groups=sensitive_features, splits=splits, task=task)
    ctx.measures = {c.key: c for c in bound}
    if sensitive_features is not None:  # a mitigation may take them at fit (:func:`.spaces.task_space`)
        ctx.sensitive_features = np.asarray(sensitive_features, dtype=object)
    baseline = baseline_loss(ctx, task)  # also: can the metric be computed on every split?
    worst = metric.worst if metric.worst is not None else baseline
    return Task(task, ctx, metric, bound, float(worst), split_seed)


def baseline_loss(ctx: TrialContext, task: str) -> float:
    """The loss of a constant predictor (class prior / mean), averaged over the validation splits:
    the failure loss of a metric with no upper bound, such as RMSE or log-loss.

    It is also the check that the metric can be computed on every validation split at all: where
    a constant predictor cannot be scored (AUROC on a split that holds one class, R² on one row),
    no pipeline can, so :class:`DataError` says which split and why before any search.
    """
    from sklearn.dummy import DummyClassifier, DummyRegressor

    scorer = ctx.metric.make_scorer(ctx.labels)
    losses = []
    for i, split in enumerate(ctx.splits):
        dummy = DummyClassifier(strategy="prior") if task == "classification" else DummyRegressor()
        why = "a constant predictor scores NaN"
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                dummy.fit(take_rows(ctx.X, split.train), ctx.y[split.train])
                loss = ctx.metric.loss(scorer, dummy, take_rows(ctx.X, split.valid),
                                       ctx.y[split.valid])
        except Exception as err:  # the metric's own reason
            loss, why = math.nan, f"{type(err).__name__}: {err}"
        if not math.isfinite(loss):
            raise DataError(_unscorable(ctx, task, i, why))
        losses.append(loss)
    return float(np.mean(losses))


def _rows(y: np.ndarray) -> str:
    """``"300 rows: 298 of class 0, 2 of class 1"``."""
    labels, counts = np.unique(y, return_counts=True)
    per_class = ", ".join(f"{n} of class {label!r}" for label, n in zip(labels.tolist(), counts))
    return f"{len(y)} row(s): {per_class}"


def _unscorable(ctx: TrialContext, task: str, i: int, why: str) -> str:
    """Why the metric cannot be computed on validation split ``i``, and what to do."""
    valid = ctx.y[ctx.splits[i].valid]
    where = "split" if len(ctx.splits) == 1 else f"fold {i + 1} of {len(ctx.splits)}"
    if task == "classification":
        if len(np.unique(valid)) == 1:
            why = f"it holds {len(valid)} row(s), all of class {valid[:1].tolist()[0]!r}"
        else:
            why = f"it holds {_rows(valid)}; {why}"
        data = f"the data have {_rows(ctx.y)}"
        advice = ("give more rows of the rare classes, a larger validation_size or cv with fewer "
                  "folds (so that every class reaches every validation split), or a metric that "
                  "is defined with one class present, e.g. scoring='accuracy' or 'log_loss'")
    else:
        scale = float(np.max(np.abs(ctx.y))) if len(ctx.y) else 0.0
        with np.errstate(all="ignore"):
            overflows = not np.isfinite(np.mean(np.square(ctx.y - np.mean(ctx.y))))
        if overflows and len(valid) > 1:  # the values, not the rows, are the problem
            return (f"the {ctx.metric.name} metric cannot be computed: the target's values are "
                    f"too large for float64 arithmetic (largest |y| = {scale:.3g}; their squares "
                    "overflow). Rescale y (e.g. divide it by a power of ten, or fit log(y)).")
        why = f"it holds {len(valid)} row(s); {why}"
        data = f"the data have {len(ctx.y)} rows"
        advice = "give more rows, a larger validation_size or cv with fewer folds"
    return (f"the {ctx.metric.name} metric cannot be computed on the validation {where}: {why} "
            f"({data}). Every pipeline would fail: {advice}.")


def display_metric(scoring: Any, task: str, target_type: str) -> tuple[str, float]:
    """``(name, offset)`` of the run's metric, for the progress display."""
    metric = get_metric(scoring, task, target_type)
    return metric.name, metric.offset

