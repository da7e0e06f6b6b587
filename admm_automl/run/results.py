"""What a finished search gives the estimator: ``history_``, ``cv_results_``, the best evaluation
and the other fitted attributes, built from the journal records and the optimiser's result."""

from __future__ import annotations

import warnings
from typing import Any, Iterable, Sequence

import numpy as np

from ..methods._lagrangian import Constraints, optimal_slack
from ..exceptions import (ConstraintViolationWarning, EvaluationFailedWarning, SearchError,
                          SubsampleOnlyWarning)
from ..journal import observation_of
from ..records import POINT, Observation


def _cell(value: Any) -> Any:
    return repr(value) if isinstance(value, (list, dict)) else value


def records_to_frame(records: Iterable[dict[str, Any]]):
    """A pandas DataFrame, one row per evaluation; ``config``, ``constraints`` and (when the
    worker reports it) ``prefix_cache`` become ``param:*``, ``constraint:*`` and ``cache:*``
    columns."""
    import pandas as pd

    rows = []
    for rec in records:
        row = {k: v for k, v in rec.items() if k not in ("config", "constraints", "prefix_cache")}
        row.update({f"param:{k}": _cell(v) for k, v in rec.get("config", {}).items()})
        row.update({f"constraint:{k}": v for k, v in rec.get("constraints", {}).items()})
        row.update({f"cache:{k}": v for k, v in rec.get("prefix_cache", {}).items()})
        rows.append(row)
    return pd.DataFrame(rows)


def prefix_cache_totals(records: Iterable[dict[str, Any]]) -> dict[str, float]:
    """What the workers' pools of fitted prefixes saved over a run: hits, misses, prefix fits
    avoided, seconds saved, and the hit rate (hits per trial split that looked a prefix up)."""
    totals = {"hits": 0, "misses": 0, "fits_saved": 0, "seconds_saved": 0.0}
    for record in records:
        for key, value in (record.get("prefix_cache") or {}).items():
            if key in totals:
                totals[key] += value
    looked = totals["hits"] + totals["misses"]
    return {**totals, "hit_rate": totals["hits"] / looked if looked else 0.0}


def history_frame(records: Sequence[dict[str, Any]], constraints: Constraints, rho: float):
    """:func:`records_to_frame` plus, with constraints, ``violation`` and ``feasible`` per
    evaluation and (ADMM mode) the optimal slack ``slack:<key>`` under the multipliers ``mu:<key>``
    in force when it was made."""
    frame = records_to_frame(records)
    if not len(constraints) or frame.empty:
        return frame
    obs = [observation_of(r) for r in records]
    frame["violation"] = [constraints.violation(o) if o.ok else np.nan for o in obs]
    frame["feasible"] = [constraints.feasible(o) for o in obs]
    mu_columns = [f"mu:{k}" for k in constraints.keys]
    if constraints.mode == "admm" and all(c in frame for c in mu_columns):
        mu = frame[mu_columns].to_numpy(dtype=float)
        slack = optimal_slack(np.array([constraints.g(o) for o in obs]), mu, rho)
        for k, key in enumerate(constraints.keys):
            frame[f"slack:{key}"] = slack[:, k]
    return frame


def cv_results(records: Sequence[dict[str, Any]], offset: float) -> dict[str, Any]:
    """scikit-learn style summary: ``params``, ``mean_test_score`` (= offset − loss), ranks,
    times, fidelity and status, one entry per evaluation."""
    losses = np.array([r["loss"] for r in records], dtype=float)
    scores = offset - losses
    order = np.argsort(-scores, kind="stable")
    ranks = np.empty(len(scores), dtype=int)
    ranks[order] = np.arange(1, len(scores) + 1)
    return {
        "params": [r["config"] for r in records],
        "mean_test_score": scores,
        "rank_test_score": ranks,
        "mean_fit_time": np.array([r["fit_time"] for r in records], dtype=float),
        "mean_score_time": np.array([r["predict_time"] for r in records], dtype=float),
        "fidelity": np.array([r["fidelity"] for r in records], dtype=float),
        "status": np.array([r["status"] for r in records], dtype=object),
    }


def _best(outcome: Any, space: Any) -> tuple[tuple[int, ...], np.ndarray, Observation]:
    """``(z, θ, observation)`` of the best full-fidelity evaluation of the run: the optimiser's
    incumbent, or a better one an earlier session recorded that this session never asked for."""
    rank = outcome.constraints.rank
    inc = outcome.result.incumbent
    best = (inc.z, space.encoding.project(inc.theta), inc.observation) if inc is not None else None
    seen = {e.observation.eval_id for e in outcome.result.evaluated}
    for rec in outcome.records:
        if rec["eval_id"] in seen or float(rec["fidelity"]) < 1.0 or rec.get("budget_stop"):
            continue
        obs = observation_of(rec)
        if best is None or rank(obs) < rank(best[2]):
            z, theta = space.encode(rec["config"])
            best = (z, space.encoding.project(theta), obs)
    return best


def _best_subsample(outcome: Any, space: Any) -> tuple[tuple[int, ...], np.ndarray, Observation] | None:
    """``(z, θ, observation)`` of the best successful evaluation on a subsample (a probe or a
    multi-fidelity solver's low rung) at the largest training size any reached, or None; for a
    run in which no pipeline finished on all rows, with a warning that says so."""
    rank = outcome.constraints.rank
    done = [(float(r["fidelity"]), observation_of(r), r) for r in outcome.records
            if float(r["fidelity"]) < 1.0 and not r.get("budget_stop") and r.get("status") == "ok"]
    if not done:
        return None
    top = max(f for f, _, _ in done)
    fidelity, obs, rec = min(((f, o, r) for f, o, r in done if f == top),
                             key=lambda item: rank(item[1]))
    n_train = len(outcome.task.context.splits[0].train)
    warnings.warn(
        f"No pipeline was evaluated on all {n_train} training rows before the search ended: "
        f"{len(done)} evaluation(s) succeeded on subsamples (the probes of large data, or a "
        f"multi-fidelity solver's first rungs). Returning the best on the largest one "
        f"({fidelity:.0%} of the rows), refitted on all rows; best_score_ is its score on that "
        "subsample. A larger time_budget lets the search fit pipelines on all rows.",
        SubsampleOnlyWarning, stacklevel=4)
    z, theta = space.encode(rec["config"])
    return z, space.encoding.project(theta), obs


def fitted_attributes(outcome: Any, space: Any) -> dict[str, Any]:
    """The estimator's fitted attributes of a finished search (except the refitted pipeline).

    Raises :class:`~admm_automl.exceptions.SearchError` when every evaluation failed; warns when
    some failed, when no pipeline met the constraints, and when none was evaluated on all rows
    (the best on a subsample is returned then: a probe never hides a model).
    """
    import pandas as pd

    records, result, constraints = outcome.records, outcome.result, outcome.constraints
    metric = outcome.task.metric
    best = _best(outcome, space)
    if best is None or not best[2].ok:
        best = _best_subsample(outcome, space) or best
    evaluated = [r for r in records if not r.get("budget_stop")]  # cancelled trials are not
    if best is None or not best[2].ok:
        errors = sorted({str(r.get("error")) for r in evaluated if r.get("status") != "ok"})
        raise SearchError(f"All {len(evaluated)} evaluated pipelines failed, so there is nothing "
                           f"to refit. Errors: {errors[:5]!r}")
    if outcome.n_failed:
        stopped = (f" ({outcome.n_timeouts} more were stopped at their time limit, which is "
                   "not a failure)" if outcome.n_timeouts else "")
        warnings.warn(f"{outcome.n_failed} of {len(evaluated)} evaluated pipelines failed and "
                      f"were recorded with the worst loss{stopped}; see history_['error'].",
                      EvaluationFailedWarning, stacklevel=3)
    z, theta, obs = best
    feasible = constraints.feasible(obs)
    if not feasible:
        unmet = [line for line in constraints.describe(obs) if not line.endswith(", met")]
        warnings.warn(f"No evaluated pipeline met every constraint ({constraints}); returning the "
                      "least violating one, on the validation data: " + "; ".join(unmet) + ".",
                      ConstraintViolationWarning, stacklevel=3)
    return {
        "history_": history_frame(records, constraints, outcome.rho),
        "admm_trace_": pd.DataFrame(result.trace),
        "cv_results_": cv_results(records, metric.offset),
        "n_evals_": result.n_evals,
        "n_failed_": outcome.n_failed,
        "n_timeouts_": outcome.n_timeouts,
        "stop_reason_": result.stop_reason,
        "task_": outcome.task.kind,
        "metric_": metric.name,
        "constraints_": outcome.task.constraints,
        "constraint_mode_": constraints.mode,
        "feasible_": feasible,
        "prefix_cache_": prefix_cache_totals(records),
        **best_attributes(space, metric, z, theta, obs),
    }


def best_attributes(space: Any, metric: Any, z: Sequence[int], theta: np.ndarray,
                    obs: Observation) -> dict[str, Any]:
    """The ``best_*`` attributes of the evaluation ``obs`` of ``(z, θ)``."""
    return {
        "best_eval_id_": obs.eval_id,
        "best_z_": z,
        "best_theta_": theta,
        "best_params_": space.decode(z, theta, obs.iterations),
        "best_iterations_": obs.iterations,
        "best_rounds_": obs.refit_rounds,
        "best_loss_": obs.loss,
        "best_score_": metric.offset - obs.loss,
    }


def metric_score(model: Any, X: Any, y: Any, *, scoring: Any, task: str,
                 classes: np.ndarray | None, on_indices: bool) -> float:
    """The search metric of ``model`` on (X, y) as a score, ``offset − loss``; ``on_indices``:
    the model was fitted on the label indices in ``classes``."""
    from ..evaluation.metrics import get_metric
    from .inputs import label_indices

    labels = classes
    if on_indices:
        y, labels = label_indices(classes, y), np.arange(len(classes))
    target = ("continuous" if task == "regression"
              else "binary" if len(classes) == 2 else "multiclass")
    metric = get_metric(scoring, task, target)
    return float(metric.offset - metric.loss(metric.make_scorer(labels), model, X, y))


def describe_constraints(model: Any) -> list[str]:
    """One line per constraint of a fitted estimator about the model ``predict`` uses: the
    bound, the validation value, and met or by how much not (:meth:`Constraints.describe`). The
    values are the ensemble's own when one is used (``ensemble_constraints_``), else those of the
    best pipeline's evaluation; those measured on the refitted model itself (size, latency:
    ``deployed_constraints_``) replace theirs, shown beside them."""
    ensemble = getattr(model, "ensemble_constraints_", None)
    if getattr(model, "ensemble_", None) is not None and ensemble:
        obs = Observation(loss=float(model.ensemble_loss_), constraints=dict(ensemble))
    else:
        history = model.history_
        best = history.loc[history["eval_id"] == model.best_eval_id_].iloc[0]
        obs = Observation(loss=float(best["loss"]), constraints={
            key: best.get(f"constraint:{key}") for c in model.constraints_
            for key in (c.key, c.key + POINT)})
    return Constraints(model.constraints_).describe(
        obs, refitted=getattr(model, "deployed_constraints_", None))
