"""The refit after a search: the best pipeline, and the ensemble's members, fitted on all the
data under the trials' thread limit and within what is left of the time budget.

**The model returned is the model measured.** A trial measures its constraints on models fitted
on each fold's training rows; the refit sees all rows. For a constraint on the predictions
(a fairness gap, an error rate) the folds' held-out values are the estimate of the refit's on new
data. For one on the fitted object itself (``of_the_model``: its pickled size, its prediction
latency) the refit is another object: a quantile transformer keeps one quantile per training row
up to ``n_quantiles``, so a pipeline whose fold models pickled to 20 228 bytes under a 21 000
limit was refitted to 24 699; and a latency read in a worker process is read again in the process
that deploys the model. So the refitted model (and the ensemble ``predict`` uses) is measured
again, on the splits' validation rows as a trial measures its fold models
(:func:`measure_deployed`); if it misses a constraint its evaluation met, the
next pipelines that met every constraint in the search are refitted in rank order — at most
:data:`DEPLOY_TRIES`, while their estimated refits fit in the time left (plus the overrun
``fit`` tolerates without a warning, :func:`~.deadline.overrun_tolerance`), skipping those whose
value times the growth a refit of the same steps showed would miss — and the first that meets
them refitted is returned; if none does, the least violating of those tried, with a
:class:`~admm_automl.exceptions.ConstraintViolationWarning` and ``feasible_`` False. An ensemble
that misses them refitted is dropped for the single pipeline.

A best pipeline evaluated on a subsample only (a probe of large data whose full fit its trial
could not afford) is refitted on as many rows as the time left affords, never fewer than it was
evaluated on (:func:`affordable_rows`), with a warning: the time budget stays a limit.
"""

from __future__ import annotations

import contextlib
import os
import time
import warnings
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Sequence

import numpy as np

from ..clock import Deadline
from ..constraints.base import combine_splits, measure_all
from ..constraints.ranking import Constraints
from ..evaluation.data import take_rows
from ..evaluation.fold_models import read_models
from ..evaluation.splits import nested_order
from ..evaluation.trial import TrialContext
from ..exceptions import ConstraintViolationWarning, SubsampleOnlyWarning
from ..records import Observation
from ..space.space import PipelineSpace
from .bagging import bag_of
from .ensemble import build_ensemble, fit_ensemble
from .labels import fit_on_labels
from .outcome import Evaluation, SearchOutcome
from .results import Pick, best_attributes


#: where Linux says how many tasks are runnable right now (the fourth field, "running/total")
LOADAVG = "/proc/loadavg"


def cores_free() -> int:
    """The cores this process may use (its CPU affinity) less the tasks that other programs keep
    runnable right now, at least 1: the most of three reads of :data:`LOADAVG` 10 ms apart (a
    task between two time slices is briefly not runnable); where that file is missing, the
    one-minute load average, which also counts this run's own workers of the last minute."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    try:
        running = 0
        for i in range(3):
            if i:
                time.sleep(0.01)
            with open(LOADAVG, encoding="ascii") as f:
                running = max(running, int(f.read().split()[3].split("/")[0]) - 1)  # not us
    except (OSError, IndexError, ValueError):
        running = round(os.getloadavg()[0]) if hasattr(os, "getloadavg") else 0
    return max(1, cores - running)


@contextlib.contextmanager
def refit_threads(threads: int | None) -> Iterator[None]:
    """BLAS and OpenMP limited to ``threads`` threads inside the block, and to the cores free of
    other programs' work right now (:func:`cores_free`); None: no limit. The refit runs under the
    limit its trials ran under (one thread a worker, times the workers), so that a refit on a
    loaded machine takes about what the search predicted from its trials. Never more threads than
    free cores: an OpenMP team waits for its slowest thread at every barrier, spinning, so a
    histogram gradient-boosting refit with 2 threads on a 2-core machine whose other core was
    busy took 59 s where 1 thread took 0.7 s (28 000 rows, 64 iterations)."""
    if threads is None:
        yield
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=max(1, min(int(threads), cores_free()))):
        yield


def overrun_tolerance(budget: float) -> float:
    """Seconds past ``time_budget`` that ``fit`` may take without a warning: max(1 s, 2 %)."""
    return max(1.0, 0.02 * budget)


#: how many other pipelines that met every constraint in the search are refitted, best first,
#: when the refitted best misses a constraint measured on the model itself: each try costs a refit,
#: and past the first few the candidates' scores fall while a size or a latency rarely changes
#: much between neighbours of the ranking
DEPLOY_TRIES = 5

#: ``(z, θ, observation, feasible)`` of the pipeline the refit check returns in place of the best
Deployable = tuple[tuple[int, ...], np.ndarray, Observation, bool]


def refit(context: TrialContext, z: Sequence[int], theta: np.ndarray, X: Any, y: Any,
          iterations: int | None = None, rounds: int | None = None,
          rows: np.ndarray | None = None) -> tuple[Any, float]:
    """The pipeline of ``(z, θ)`` fitted on all of (X, y) — on ``rows`` of them when given —
    with the run's preprocessing and model seed (by :func:`fit_on_labels`), and the seconds it
    took; trained for ``iterations`` when the best evaluation had a training length, for
    ``rounds`` when its estimator stopped early; a fairness mitigation that takes its groups
    beside X is given its rows' (:meth:`~admm_automl.evaluation.TrialContext.fit_params`)."""
    pipeline = context.pipeline(z, theta, iterations=iterations, rounds=rounds)
    start = time.perf_counter()
    if rows is None:
        rows = np.arange(len(context.y))
    else:
        X, y = take_rows(X, rows), np.asarray(y)[rows]
    fit_on_labels(pipeline, X, y, context.y[rows], **context.fit_params(pipeline, rows))
    return pipeline, time.perf_counter() - start


def affordable_rows(ctx: TrialContext, evaluation: Evaluation, deadline: Deadline
                    ) -> np.ndarray | None:
    """The rows the best evaluation's pipeline is refitted on when it was evaluated on a
    subsample only (a probe, a low rung) and its estimated refit on all rows
    (:attr:`~.outcome.Evaluation.refit_seconds`) would not end within what is left of the time
    budget, plus the overrun ``fit`` tolerates: a class-stratified subsample of the share the
    time left affords, never less than the share it was evaluated on (about the probe's own fit
    time); None — all rows — otherwise.

    Its probe predicted a full fit too slow for a trial, so a refit on all rows can take many
    times what the budget has left (on 200 000 rows under a 10 s budget, 86 s): the budget is
    a limit the user relies on, and the subsample is what the search measured."""
    fidelity = float(evaluation.observation.fidelity)
    left = deadline.left()
    if fidelity >= 1.0 or left is None or deadline.budget is None:
        return None
    n = len(ctx.y)
    estimate = evaluation.refit_seconds
    share = max(fidelity, (max(left, 0.0) + overrun_tolerance(deadline.budget))
                / max(estimate, 1e-9))
    if share >= 1.0:
        return None
    order = nested_order(ctx.y if ctx.labels is not None else None,
                         np.random.default_rng(ctx.random_state))
    rows = np.sort(order[:max(1, int(np.ceil(share * n)))])
    warnings.warn(
        f"The best pipeline ({evaluation.pipeline}) was evaluated on {fidelity:.0%} of the "
        f"training rows only, and its refit on all {n} rows would take about {estimate:.3g} s "
        f"where {max(left, 0.0):.3g} s of the time budget are left: best_pipeline_ is fitted on "
        f"{len(rows)} of them ({len(rows) / n:.0%}, a class-stratified sample). A larger "
        "time_budget refits it on all rows.", SubsampleOnlyWarning, stacklevel=5)
    return rows


def refit_models(outcome: SearchOutcome, space: PipelineSpace, X: Any, y: np.ndarray,
                 fitted: dict[str, Any], ensemble_size: int, deadline: Deadline,
                 stacking: bool = True, ensemble_check: str = "in_sample",
                 ensemble_bags: int = 1) -> dict[str, Any]:
    """``best_pipeline_`` (and ``refit_time_``, ``deployed_constraints_``, and the ``best_*``
    attributes and ``feasible_`` when the refit check of the module docstring returns another
    pipeline) and, when one is built (:mod:`.ensemble`, with members whose refits fit in what is
    left of ``deadline``), ``ensemble_``, refitted on all of (X, y) under the trials' thread limit
    — its members kept as bags where the search kept their fold models (:mod:`.bagging`) — with
    its weights, validation loss and constraint values (measured on the ensemble itself, as a
    trial measures a pipeline); with ``stacking``, the ensemble may be a stack
    (:mod:`.stacking`); ``ensemble_check``: how it is judged against the single best, and
    ``ensemble_bags``: its bagged selection (:func:`~.ensemble.build_ensemble`)."""
    ctx, constraints = outcome.task.context, outcome.constraints
    with refit_threads(outcome.refit_threads):
        first = (fitted["best_z_"], fitted["best_theta_"],
                 outcome.by_eval_id[fitted["best_eval_id_"]].observation)
        best, seconds, deployed, other = deployable_refit(
            ctx, constraints, outcome.evaluations, first, X, y, deadline, fitted["feasible_"])
        chosen = {} if other is None else {
            **best_attributes(space, outcome.task.metric, *other[:3]), "feasible_": other[3]}
        best_id = chosen.get("best_eval_id_", fitted["best_eval_id_"])
        choice = build_ensemble(outcome, ensemble_size, best_id, deadline.left(),
                                stacking=stacking, check=ensemble_check, bags=ensemble_bags)
        ensemble = None if choice is None else fit_ensemble(
            choice, X, y, ctx.y, {best_id: best, **kept_bags(outcome, choice.weights)})
        if ensemble is not None and deployed:
            measured = measure_deployed(ctx, ensemble)
            if constraints.feasible(Observation(choice.loss, constraints=dict(choice.constraints)),
                                    measured):
                deployed = measured
            else:  # the single pipeline meets them refitted; the ensemble does not
                ensemble = choice = None
    return {**chosen, "best_pipeline_": best, "refit_time_": seconds, "ensemble_": ensemble,
            "deployed_constraints_": deployed,
            "ensemble_weights_": {} if choice is None else choice.weights,
            "ensemble_loss_": float("nan") if choice is None else choice.loss,
            "ensemble_kind_": None if choice is None else choice.kind,
            "ensemble_constraints_": {} if choice is None else dict(choice.constraints)}


def measure_deployed(ctx: TrialContext, model: Any) -> dict[str, float]:
    """The values of the run's constraints measured on the fitted object itself
    (``of_the_model``: size, latency) for ``model`` as ``predict`` uses it, read as a trial
    reads its fold models: on every split's validation rows, combined as the search combines
    them (:func:`~admm_automl.constraints.base.combine_splits`: the mean, or for a latency with
    ``confidence`` the bound of a new reading); empty when the run has none.

    Why every split and not one: a latency is a noisy reading (one model's readings in one
    process vary by 4-7 % on a quiet core, up to 20 % under load), and the search's value is the
    mean of one reading per fold. A single reading of the refitted model, set against a limit
    the search's mean met by a few per cent, rejected the chosen pipeline about as often as it
    was read above its mean — and the pipeline was chosen for reading low."""
    measures = {key: c for key, c in ctx.measures.items() if c.of_the_model}
    if not measures:
        return {}
    measured: dict[str, list[float]] = {}
    splits = _one_repeat(ctx.splits)
    for split in splits:
        measure_all(measures, model, take_rows(ctx.X, split.valid), ctx.y[split.valid],
                    split.valid, measured)
    return combine_splits(measured, splits, measures)


def _one_repeat(splits: Sequence[Any]) -> list[Any]:
    """The splits up to the first whose validation rows another already validated: one repeat
    of repeated folds (a further repeat reads the same model on the same rows again)."""
    seen: set[int] = set()
    out = []
    for split in splits:
        rows = set(np.asarray(split.valid).tolist())
        if rows & seen:
            break
        seen |= rows
        out.append(split)
    return out


def deployable_refit(ctx: TrialContext, constraints: Constraints,
                     evaluations: Sequence[Evaluation], best: Pick, X: Any, y: np.ndarray,
                     deadline: Deadline, feasible: bool
                     ) -> tuple[Any, float, dict[str, float], Deployable | None]:
    """The refit check of the module docstring: ``best`` (``(z, θ, observation)`` of the run's
    best evaluation among ``evaluations``; ``feasible``: whether it met every constraint) refitted
    on all of (X, y), with its refit seconds and its values measured refitted, and as fourth item
    None when ``best`` is returned and ``feasible`` stands, else ``(z, θ, observation,
    feasible)`` of the pipeline returned (``best`` itself, infeasible refitted, when it is the
    least violating of those tried)."""
    obs = best[2]
    evaluation = next((e for e in evaluations if e.eval_id == obs.eval_id), None)
    first = _refitted(ctx, constraints, best, X, y, rows=None if evaluation is None
                      else affordable_rows(ctx, evaluation, deadline))
    deployed = first.measured
    if not deployed or not feasible or first.violation == 0.0:
        return first.model, first.seconds, deployed, None
    # how much a refit of the same steps grew each value over the search's, by (z, key): a
    # candidate whose value times that growth misses is not refitted (a k-NN stores its rows,
    # whatever its k: every k-NN refit misses a size the first missed by a margin)
    growth = first.growth()
    tried = [first]
    skipped = 0
    for candidate in _feasible_evaluations(evaluations, constraints, exclude=obs.eval_id):
        # the search kept back the time of one refit: the others may use what is left and the
        # overrun fit tolerates without a warning (a refit of a small model takes milliseconds)
        left = deadline.left()
        if left is not None:
            left += overrun_tolerance(deadline.budget)
        if len(tried) > DEPLOY_TRIES or (left is not None and candidate.refit_seconds > left):
            break
        other, z = candidate.observation, tuple(candidate.z)
        expected = {key: other.constraints[key] * growth[z, key] for key in deployed
                    if (z, key) in growth and key in other.constraints}
        if expected and constraints.violation(other, expected) > 0.0:
            skipped += 1
            continue
        refitted = _refitted(ctx, constraints, (candidate.z, candidate.theta, other), X, y)
        if refitted.violation == 0.0:
            return refitted.model, refitted.seconds, refitted.measured, (*refitted.pick, True)
        growth.update(refitted.growth())
        tried.append(refitted)
    least = min(tried, key=lambda r: r.violation)
    misses = "; ".join(
        f"{c.key} {deployed[c.key]:.4g} refitted (limit {c.threshold:g}; "
        f"{obs.constraints.get(c.key, np.nan):.4g} in the search)"
        for c in constraints if c.key in deployed and not c.feasible(deployed[c.key]))
    warnings.warn(
        f"The refitted best pipeline misses a constraint measured on the model itself that its "
        f"evaluation met: {misses}. Of the other pipelines that met every constraint in the "
        f"search, {len(tried) - 1} were refitted and missed too, {skipped} were not refitted "
        "because a refit of the same steps grew past the limit; returning the least violating "
        "refit (deployed_constraints_ holds its values).", ConstraintViolationWarning,
        stacklevel=4)
    return least.model, least.seconds, least.measured, (*least.pick, False)


@dataclass(frozen=True)
class _Refitted:
    """One pipeline refitted by the refit check: ``pick``, ``(z, θ, observation)`` of its
    evaluation; the model fitted on all rows and the seconds its fit took; the values measured
    on it (:func:`measure_deployed`) and its violation with them in place of the search's
    (:meth:`~admm_automl.constraints.ranking.Constraints.violation`: 0 when it meets every
    constraint — every evaluation refitted there met them all in the search)."""

    pick: Pick
    model: Any
    seconds: float
    measured: dict[str, float]
    violation: float

    def growth(self) -> dict[tuple[tuple[int, ...], str], float]:
        """By ``(z, key)``: the ratio of each value measured on this refit of ``z`` to the one
        its evaluation recorded in the search."""
        z, _, obs = self.pick
        return {(tuple(z), key): value / obs.constraints[key]
                for key, value in self.measured.items() if obs.constraints.get(key)}


def _refitted(ctx: TrialContext, constraints: Constraints, pick: Pick, X: Any, y: np.ndarray,
              rows: np.ndarray | None = None) -> _Refitted:
    """The pipeline of ``pick`` (``(z, θ, observation)``) refitted on (X, y) (on ``rows`` of
    them when given; :func:`refit`), measured and judged (:class:`_Refitted`)."""
    z, theta, obs = pick
    model, seconds = refit(ctx, z, theta, X, y, iterations=obs.iterations,
                           rounds=obs.refit_rounds, rows=rows)
    measured = measure_deployed(ctx, model)
    return _Refitted(pick, model, seconds, measured, constraints.violation(obs, measured))


def _feasible_evaluations(evaluations: Sequence[Evaluation], constraints: Constraints,
                          exclude: int) -> list[Evaluation]:
    """The full-fidelity evaluations that met every constraint, best first, one per pipeline."""
    seen, out = set(), []
    ok = [e for e in evaluations if e.succeeded and e.full and e.eval_id != exclude
          and constraints.feasible(e.observation)]
    for evaluation in sorted(ok, key=lambda e: constraints.rank(e.observation)):
        key = repr(sorted(evaluation.config.items()))
        if key not in seen:
            seen.add(key)
            out.append(evaluation)
    return out


def kept_bags(outcome: SearchOutcome, members: Iterable[int]) -> dict[int, Any]:
    """The bags (:mod:`.bagging`) of the ``members``, by eval_id, when the run keeps bags: the
    fold models the search kept, or — for an evaluation of an earlier session of a resumed run,
    whose fold models are gone — the same fold models fitted again by the trial itself, so that
    a resumed run returns the model an uninterrupted one does. Empty when the run keeps none; a
    member whose bag cannot be made is left out, with a warning (the ensemble refits it)."""
    ctx = outcome.task.context
    if outcome.models_dir is None:
        return {}
    evaluations = outcome.by_eval_id
    bags = {}
    for eval_id in members:
        name = outcome.models.get(eval_id)
        member = evaluations[eval_id]
        if name is None and member.observation.iterations is None:
            name = ctx.run(tuple(member.z), member.theta, 1.0).get("models")
        models = None if name is None else read_models(outcome.models_dir, name)
        if models is not None and len(models) == len(ctx.splits):
            try:
                bags[eval_id] = bag_of(models, ctx.splits)
            except Exception as err:  # e.g. a learner scikit-learn cannot clone
                warnings.warn(f"evaluation {eval_id}'s fold models cannot be bagged "
                              f"({type(err).__name__}: {err}); it is refitted on all rows "
                              "instead", RuntimeWarning, stacklevel=2)
    return bags
