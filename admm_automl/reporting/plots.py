"""Figures of a run, each on matplotlib axes that it returns (as Optuna's visualisation module).

Every function takes ``run``: a fitted estimator, a run directory or a
:class:`~admm_automl.reporting.rundir.RunData`; and ``ax``: the axes to draw on (a sequence of axes for the
functions that draw one panel per module or constraint), or None for a new figure. The estimator
has the same functions as methods (``model.plot_convergence()``).

* :func:`plot_convergence` — every loss and the best so far, against time or evaluations;
* :func:`plot_algorithms` — the losses of each algorithm of each module;
* :func:`plot_constraints` — each constraint's values over the evaluations, with its threshold;
* :func:`plot_multipliers` — the multipliers μ over the ADMM iterations;
* :func:`plot_residuals` — ‖λ‖ and ‖θ̃d − δ‖ over the ADMM iterations.

matplotlib is the optional extra ``report``: ``pip install 'admm-automl[report]'``.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..evaluation.metrics import LABELS
from ..exceptions import InvalidParameterError, MissingDependencyError
from .rundir import RunData, as_run

__all__ = ["plot_algorithms", "plot_constraints", "plot_convergence", "plot_multipliers",
           "plot_residuals"]

_OK, _BEST, _ANY, _BAD = "#4c72b0", "#dd8452", "#8c8c8c", "#c44e52"


def require_matplotlib() -> Any:
    """The ``matplotlib`` module, or :class:`MissingDependencyError` saying how to install it."""
    try:
        import matplotlib
    except ImportError:
        raise MissingDependencyError(
            "the run report and the plots need matplotlib, which is not installed: "
            "pip install 'admm-automl[report]'"
        ) from None
    return matplotlib


def _axes(ax: Any, n: int = 1, *, width: float = 6.4, height: float = 4.0) -> np.ndarray:
    """``n`` axes: the given ones (checked), or a new pyplot figure with one row of ``n``."""
    require_matplotlib()
    if ax is None:
        import matplotlib.pyplot as plt

        _, axes = plt.subplots(1, n, figsize=(width * n, height), squeeze=False,
                               layout="constrained")
        return axes[0]
    axes = np.atleast_1d(np.asarray(ax, dtype=object)).ravel()
    if len(axes) != n:
        raise InvalidParameterError(f"this figure needs {n} axes, got {len(axes)}")
    return axes


def _loss_label(run: RunData) -> str:
    name, offset = run.metric
    label = LABELS.get(name, name)
    return f"loss ({offset:g} − {label})" if offset else f"loss ({label})"


def full_fidelity(history: Any) -> Any:
    """The evaluations at full fidelity that were not cut by the end of the time budget."""
    keep = history["fidelity"].astype(float) >= 1.0
    if "budget_stop" in history:
        keep &= ~history["budget_stop"].eq(True)
    return history[keep]


def succeeded(history: Any) -> Any:
    return history["status"] == "ok"


def _maybe_log(ax: Any, values: np.ndarray, axis: str = "y") -> None:
    """Log scale when the values are positive and span more than a decade."""
    values = values[np.isfinite(values)]
    if len(values) and values.min() > 0 and values.max() / values.min() > 10:
        (ax.set_yscale if axis == "y" else ax.set_xscale)("log")


def plot_convergence(run: Any, *, x: str = "time", ax: Any = None) -> Any:
    """Every evaluation's loss and the best loss so far, against ``x`` = ``"time"`` (seconds
    since the start) or ``"evaluations"``.

    With constraints the line is the best *feasible* loss so far, and the best loss of any
    evaluation is dashed. Failed evaluations are red crosses in a band above the others (the
    worst loss they were given would squash the range that matters).
    """
    if x not in ("time", "evaluations"):
        raise InvalidParameterError(f"x must be 'time' or 'evaluations', got {x!r}")
    run = as_run(run)
    (ax,) = _axes(ax)
    h = run.history
    xs = (h["time"].astype(float).to_numpy() if x == "time"
          else np.arange(1, len(h) + 1, dtype=float))
    loss = h["loss"].astype(float).to_numpy()
    counted = h.index.isin(full_fidelity(h).index) & succeeded(h).to_numpy()
    failed = ~succeeded(h).to_numpy()
    feasible = (h["feasible"].fillna(False).astype(bool).to_numpy() if "feasible" in h
                else np.ones(len(h), dtype=bool))
    lower = ~counted & ~failed
    ok = loss[~failed & np.isfinite(loss)]
    log = bool(len(ok)) and ok.min() > 0 and ok.max() / ok.min() > 10
    shown_loss = loss.copy()
    if len(ok) and failed.any():  # failures in a band just above the successful losses
        top = ok.max() * 1.5 if log else ok.max() + 0.1 * ((ok.max() - ok.min()) or 1.0)
        shown_loss[failed] = top
    for mask, style in (
        (counted & feasible, dict(color=_OK, label="evaluation")),
        (counted & ~feasible, dict(facecolors="none", edgecolors=_BAD,
                                   label="violates a constraint")),
        (lower, dict(facecolors="none", edgecolors=_ANY, label="lower fidelity")),
        (failed, dict(marker="x", color=_BAD,
                      label="failed (drawn above the rest)" if len(ok) else "failed")),
    ):
        if mask.any():
            ax.scatter(xs[mask], shown_loss[mask], s=16, alpha=0.7, **style)
    best_any = np.minimum.accumulate(np.where(counted, loss, np.inf))
    best = np.minimum.accumulate(np.where(counted & feasible, loss, np.inf))
    if "feasible" in h:
        ax.step(xs, np.where(np.isfinite(best_any), best_any, np.nan), where="post", color=_ANY,
                linestyle="--", label="best of any")
    ax.step(xs, np.where(np.isfinite(best), best, np.nan), where="post", color=_BEST, lw=2,
            label="best feasible" if "feasible" in h else "best so far")
    if log:
        ax.set_yscale("log")
    ax.set_xlabel("seconds since the start" if x == "time" else "evaluations")
    ax.set_ylabel(_loss_label(run))
    ax.set_title(f"Best loss against {'time' if x == 'time' else 'evaluations'}")
    ax.legend(fontsize="small")
    ax.grid(alpha=0.3)
    return ax


def modules(run: Any) -> list[str]:
    """The pipeline's modules (the ``param:<module>`` columns of the history), in the order of
    the pipeline when the summary tells it (a journal's records have their keys sorted)."""
    run = as_run(run)
    h = run.history
    names = [c[len("param:"):] for c in h.columns if c.startswith("param:") and "__" not in c]
    order = [k for k in run.summary.get("best_params", {}) if "__" not in k]
    return sorted(names, key=lambda m: order.index(m) if m in order else len(order))


def plot_algorithms(run: Any, *, ax: Any = None) -> Any:
    """One panel per module: the losses of each of its algorithms (full-fidelity evaluations),
    as box plots with the evaluations on top; the tick labels count evaluations and failures.
    Returns one axes per module."""
    run = as_run(run)
    names = modules(run)
    if not names:
        raise InvalidParameterError("the run's history has no module columns (param:<module>)")
    axes = _axes(ax, len(names), width=4.6, height=max(2.5, 0.45 * most_choices(run, names)))
    h = full_fidelity(run.history)
    for axis, module in zip(axes, names):
        column = h[f"param:{module}"].astype(str)
        # the best algorithm (lowest loss) on top
        choices = sorted(column.unique(), key=lambda c: -h.loc[column == c, "loss"].min())
        data, labels = [], []
        for k, choice in enumerate(choices):
            rows = h[column == choice]
            losses = rows.loc[succeeded(rows), "loss"].astype(float).to_numpy()
            n_bad = int((~succeeded(rows)).sum())
            data.append(losses)
            labels.append(f"{choice} ({len(rows)}" + (f", {n_bad} failed)" if n_bad else ")"))
            jitter = np.linspace(-0.15, 0.15, len(losses)) if len(losses) > 1 else np.zeros(1)
            axis.scatter(losses, k + 1 + jitter[: len(losses)], s=8, color=_OK, alpha=0.5,
                         zorder=3)
        axis.boxplot([d if len(d) else [np.nan] for d in data], orientation="horizontal",
                     widths=0.6, showfliers=False)
        axis.set_yticks(range(1, len(labels) + 1), labels, fontsize="small")
        axis.set_title(module)
        axis.set_xlabel(_loss_label(run))
        _maybe_log(axis, np.concatenate([d for d in data if len(d)] or [np.array([])]), "x")
        axis.grid(alpha=0.3, axis="x")
    return axes


def most_choices(run: RunData, names: Sequence[str]) -> int:
    return max(run.history[f"param:{m}"].nunique() for m in names)


def plot_constraints(run: Any, *, ax: Any = None) -> Any:
    """One panel per constraint: its value at each evaluation (green when it meets this
    constraint, red when not), the threshold as a dashed line. Returns one axes per constraint."""
    run = as_run(run)
    specs = [c for c in run.constraints if f"constraint:{c['key']}" in run.history]
    if not specs:
        raise InvalidParameterError("the run has no constraints to plot")
    axes = _axes(ax, len(specs), width=5.0)
    h = run.history
    xs = np.arange(1, len(h) + 1)
    for axis, spec in zip(axes, specs):
        values = h[f"constraint:{spec['key']}"].astype(float).to_numpy()
        threshold = float(spec["threshold"])
        meets = values <= threshold if spec["sense"] == "<=" else values >= threshold
        axis.scatter(xs[meets], values[meets], s=14, color="#55a868", label="meets it")
        axis.scatter(xs[~meets], values[~meets], s=14, color=_BAD, label="violates it")
        axis.axhline(threshold, color="black", linestyle="--", lw=1,
                     label=f"threshold {spec['sense']} {threshold:g}")
        _maybe_log(axis, np.append(values, threshold))
        axis.set_title(spec.get("text") or spec["key"])
        axis.set_xlabel("evaluations")
        axis.set_ylabel(spec["key"])
        axis.legend(fontsize="small")
        axis.grid(alpha=0.3)
    return axes


def _trace_columns(run: RunData, columns: Sequence[str], what: str) -> Any:
    trace = run.trace
    if not len(trace) or any(c not in trace for c in columns):
        method = run.summary.get("method") or (run.config.get("estimator") or {}).get("method")
        raise InvalidParameterError(
            f"the run has no {what} in its trace (method {method!r}; only the ADMM method has "
            "them, and a run stopped before its end has no trace)"
        )
    return trace


def plot_multipliers(run: Any, *, ax: Any = None) -> Any:
    """The multiplier μ of each constraint after each ADMM iteration (Liu et al., AAAI 2020,
    Algorithm 2): it grows while the iterate violates the constraint."""
    run = as_run(run)
    keys = [c["key"] for c in run.constraints]
    if not keys:
        raise InvalidParameterError("the run has no constraints, so no multipliers μ")
    trace = _trace_columns(run, [f"mu:{k}" for k in keys], "multipliers μ")
    (ax,) = _axes(ax)
    for key in keys:
        ax.plot(trace["iteration"], trace[f"mu:{key}"], marker="o", ms=3, label=f"μ {key}")
    ax.set_xlabel("ADMM iteration")
    ax.set_ylabel("μ")
    ax.set_title("Constraint multipliers")
    ax.legend(fontsize="small")
    ax.grid(alpha=0.3)
    return ax


def plot_residuals(run: Any, *, ax: Any = None) -> Any:
    """‖λ‖ (the multiplier of the coupling θ̃d = δ) and the primal residual ‖θ̃d − δ‖ after each
    ADMM iteration, in the unit-box coordinates of the relaxed discrete hyperparameters."""
    run = as_run(run)
    trace = _trace_columns(run, ["lambda_norm", "primal_residual"], "ADMM residuals")
    (ax,) = _axes(ax)
    ax.plot(trace["iteration"], trace["lambda_norm"], marker="o", ms=3, label="‖λ‖")
    ax.plot(trace["iteration"], trace["primal_residual"], marker="s", ms=3,
            label="‖θ̃d − δ‖")
    ax.set_xlabel("ADMM iteration")
    ax.set_title("Coupling of the relaxed and the integer hyperparameters")
    ax.legend(fontsize="small")
    ax.grid(alpha=0.3)
    return ax
