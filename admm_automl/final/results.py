"""What a finished search gives the estimator: ``history_``, ``cv_results_``, the best evaluation
and the other fitted attributes, built from the search's typed evaluations
(:class:`~.outcome.Evaluation`), its journal records (the tables that show them) and the
optimiser's result."""

from __future__ import annotations

import warnings
from typing import Any, Iterable, Sequence

import numpy as np

from ..constraints.ranking import Constraints
from ..methods.lagrangian import optimal_slack
from ..exceptions import (ConstraintViolationWarning, EvaluationFailedWarning, SearchError,
                          SubsampleOnlyWarning)
from ..evaluation.metrics import Metric, shown
from ..records import POINT, Observation
from ..space.space import PipelineSpace
from .outcome import Evaluation, SearchOutcome

#: ``(z, θ, observation)`` of an evaluation chosen for the refit (θ projected)
Pick = tuple[tuple[int, ...], np.ndarray, Observation]

#: a pipeline evaluated on a subsample only is returned, refitted on all rows, instead of the best
#: full-data evaluation when its loss is lower by more than this fraction of the latter's
#: (:func:`subsample_rival`). A subsample's loss is, for the same pipeline, most often above the
#: loss of its refit on all rows (learning curves fall with the rows), so a subsample that beats
#: the full-data best already understates its lead; the margin is for what stays uncertain: the
#: noise of two losses read on the same validation rows (on the smallest probed data, 10 000
#: training rows and 2 500 validation rows at the default split, the standard error of a 0.2
#: error rate is 0.008, 4 % of it, about 6 % for the difference of two models' rates), and the
#: refit of a pipeline that was never fitted on all rows, which the search judged too slow for a
#: trial (it may overrun the time budget; :func:`~admm_automl.run.deadline.warn_overrun` says so).
#: Within the margin the full-data best is kept: its refit is the model measured. Past it, the
#: full-data best is the one the search's own numbers show to be worse — as a chance-level model
#: (AUROC 0.50) beside a probe at 0.92 is.
SUBSAMPLE_MARGIN = 0.1


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


def history_frame(records: Sequence[dict[str, Any]], observations: Sequence[Observation],
                  constraints: Constraints, rho: float):
    """:func:`records_to_frame` plus, with constraints, ``violation`` and ``feasible`` per
    evaluation (``observations``: the records' own) and (ADMM mode) the optimal slack
    ``slack:<key>`` under the multipliers ``mu:<key>`` in force when it was made."""
    frame = records_to_frame(records)
    if not len(constraints) or frame.empty:
        return frame
    obs = list(observations)
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


def _best(outcome: SearchOutcome, space: PipelineSpace) -> Pick | None:
    """``(z, θ, observation)`` of the best full-fidelity evaluation of the run: the optimiser's
    incumbent, or a better one an earlier session recorded that this session never asked for."""
    rank = outcome.constraints.rank
    inc = outcome.result.incumbent
    best = (inc.z, space.encoding.project(inc.theta), inc.observation) if inc is not None else None
    seen = {e.observation.eval_id for e in outcome.result.evaluated}
    for ev in outcome.evaluations:
        if ev.eval_id in seen or not ev.full:
            continue
        if best is None or rank(ev.observation) < rank(best[2]):
            best = (ev.z, ev.theta, ev.observation)
    return best


def _best_subsample(outcome: SearchOutcome) -> Pick | None:
    """``(z, θ, observation)`` of the best successful evaluation on a subsample (a probe or a
    multi-fidelity solver's low rung) at the largest training size any reached, or None; for a
    run in which no pipeline finished on all rows, with a warning that says so."""
    rank = outcome.constraints.rank
    done = [e for e in outcome.evaluations if e.observation.fidelity < 1.0
            and not e.observation.budget_stop and e.succeeded]
    if not done:
        return None
    top = max(e.observation.fidelity for e in done)
    best = min((e for e in done if e.observation.fidelity == top),
               key=lambda e: rank(e.observation))
    fidelity = best.observation.fidelity
    n_train = len(outcome.task.context.splits[0].train)
    warnings.warn(
        f"No pipeline was evaluated on all {n_train} training rows before the search ended: "
        f"{len(done)} evaluation(s) succeeded on subsamples (the probes of large data, or a "
        f"multi-fidelity solver's first rungs). Returning the best on the largest one "
        f"({fidelity:.0%} of the rows), refitted on all rows (on as many as the time budget "
        "leaves, when their refit would overrun it); best_score_ is its score on that "
        "subsample. A larger time_budget lets the search fit pipelines on all rows.",
        SubsampleOnlyWarning, stacklevel=4)
    return best.z, best.theta, best.observation


def _pipeline_key(evaluation: Evaluation) -> str:
    """What names a pipeline across fidelities: its configuration."""
    return repr(sorted(evaluation.config.items()))


def subsample_rival(evaluations: Sequence[Evaluation], constraints: Constraints,
                    best: Observation) -> Evaluation | None:
    """The best successful evaluation of a pipeline evaluated on subsamples only (a
    probe whose full fit was never started or was cancelled at the end of the budget, a
    multi-fidelity solver's low rung) when its loss is below that of ``best``, the best
    full-data evaluation, by more than :data:`SUBSAMPLE_MARGIN` of it; else None. A pipeline
    whose full fit ran and failed or timed out is no rival (its refit would do the same). With
    constraints, both must meet them all: a value measured on a model of a tenth of the rows
    (its size, its latency) says less of its refit than its loss does."""
    if not constraints.feasible(best):
        return None
    fitted = {_pipeline_key(e) for e in evaluations if e.full}
    rivals = [e for e in evaluations
              if e.observation.fidelity < 1.0 and e.succeeded and not e.observation.budget_stop
              and _pipeline_key(e) not in fitted and constraints.feasible(e.observation)]
    if not rivals:
        return None
    rival = min(rivals, key=lambda e: constraints.rank(e.observation))
    obs = rival.observation
    return rival if obs.loss < best.loss - SUBSAMPLE_MARGIN * abs(best.loss) else None


def _better_subsample(outcome: SearchOutcome, best: Pick) -> Pick | None:
    """``(z, θ, observation)`` of the :func:`subsample_rival` of ``best`` (the best full-data
    evaluation), with a warning giving both scores; None when there is none."""
    rival = subsample_rival(outcome.evaluations, outcome.constraints, best[2])
    if rival is None:
        return None
    obs, metric = rival.observation, outcome.task.metric
    label, full = shown(metric.name, metric.offset, best[2].loss)
    _, sub = shown(metric.name, metric.offset, obs.loss)
    n_train = len(outcome.task.context.splits[0].train)
    warnings.warn(
        f"The best pipeline evaluated on all {n_train} training rows "
        f"({outcome.by_eval_id[best[2].eval_id].pipeline}) scored {label} "
        f"{full:.4g} on the validation rows, while {rival.pipeline} scored {sub:.4g} fitted "
        f"on {obs.fidelity:.0%} of the training rows, better by more than "
        f"{SUBSAMPLE_MARGIN:.0%} of the loss, and was never fitted on all of them (its probe "
        "predicted a fit past the trial's timeout, or the search ended first). Returning "
        f"{rival.pipeline} refitted on all rows (on as many as the time budget leaves, "
        "when their refit would overrun it); best_score_ is its subsample score. A larger "
        "time_budget (or trial_timeout) lets the search fit it on all rows.",
        SubsampleOnlyWarning, stacklevel=4)
    return rival.z, rival.theta, obs


def _rows_note(evaluations: Sequence[Evaluation], n_evals: int) -> str:
    """Why ``history_`` (a row per trial) has another number of rows than ``n_evals_`` (a
    pipeline's evaluation counted once), when it has: what else its rows are."""
    if len(evaluations) == n_evals:
        return ""
    cut = sum(e.observation.budget_stop for e in evaluations)
    cut_text = (f"{cut} cut or never begun at the end of the time budget (status 'cancelled'), "
                if cut else "")
    return (f" (history_ has {len(evaluations)} rows, a row per trial: {cut_text}subsample probes "
            "of pipelines then fitted on all rows, and an earlier session's trials this one did "
            "not ask for again are rows too, not evaluations of n_evals_)")


def fitted_attributes(outcome: SearchOutcome, space: PipelineSpace) -> dict[str, Any]:
    """The estimator's fitted attributes of a finished search (except the refitted pipeline).

    Raises :class:`~admm_automl.exceptions.SearchError` when every evaluation failed; warns when
    some failed, when no pipeline met the constraints, and when the returned one was evaluated on
    a subsample only: when none was evaluated on all rows (the best on a subsample is returned
    then: a probe never hides a model), or when one evaluated on subsamples only beats every
    full-data one by more than :data:`SUBSAMPLE_MARGIN` (:func:`subsample_rival`: the model
    returned is never one the search's own numbers show to be worse than another it could
    return).
    """
    import pandas as pd

    records, result, constraints = outcome.records, outcome.result, outcome.constraints
    metric = outcome.task.metric
    best = _best(outcome, space)
    if best is None or not best[2].ok:
        best = _best_subsample(outcome) or best
    else:
        best = _better_subsample(outcome, best) or best
    # cancelled trials are not evaluated
    evaluated = [e for e in outcome.evaluations if not e.observation.budget_stop]
    if best is None or not best[2].ok:
        errors = sorted({str(e.observation.error) for e in evaluated if not e.succeeded})
        raise SearchError(f"All {len(evaluated)} evaluated pipelines failed, so there is nothing "
                           f"to refit. Errors: {errors[:5]!r}")
    if outcome.n_failed:
        stopped = (f" ({outcome.n_timeouts} more were stopped at their time limit, which is "
                   "not a failure)" if outcome.n_timeouts else "")
        warnings.warn(f"{outcome.n_failed} of {result.n_evals} evaluated pipelines failed and "
                      f"were recorded with the worst loss{stopped}; see history_['error']"
                      f"{_rows_note(outcome.evaluations, result.n_evals)}.",
                      EvaluationFailedWarning, stacklevel=3)
    z, theta, obs = best
    feasible = constraints.feasible(obs)
    if not feasible:
        unmet = [line for line in constraints.describe(obs) if not line.endswith(", met")]
        warnings.warn(f"No evaluated pipeline met every constraint ({constraints}); returning the "
                      "least violating one, on the validation data: " + "; ".join(unmet) + ".",
                      ConstraintViolationWarning, stacklevel=3)
    return {
        "history_": history_frame(records, [e.observation for e in outcome.evaluations],
                                  constraints, outcome.rho),
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


def best_attributes(space: PipelineSpace, metric: Metric, z: Sequence[int], theta: np.ndarray,
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
    from .labels import label_indices

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
