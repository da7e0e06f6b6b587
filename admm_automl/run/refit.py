"""The refit after a search: the best pipeline, and the ensemble's members, fitted on all the
data under the trials' thread limit and within what is left of the time budget."""

from __future__ import annotations

import time
from typing import Any, Sequence

import numpy as np

from ..evaluation.fold_models import read_models
from ..journal import observation_of
from .bagging import bag_of
from .deadline import refit_threads
from .ensemble import build_ensemble, fit_ensemble
from .inputs import fit_on_labels


def refit(space: Any, context: Any, z: Sequence[int], theta: np.ndarray, X: Any,
          y: Any, iterations: int | None = None, rounds: int | None = None) -> tuple[Any, float]:
    """The pipeline of ``(z, θ)`` fitted on all of (X, y) with the run's preprocessing and model
    seed (by :func:`fit_on_labels`), and the seconds it took; trained for ``iterations`` when the
    best evaluation had a training length, for ``rounds`` when its estimator stopped early."""
    pipeline = space.to_pipeline(z, theta, preprocessor=context.preprocessor_for(z),
                                 random_state=context.random_state, iterations=iterations,
                                 rounds=rounds)
    start = time.perf_counter()
    fit_on_labels(pipeline, X, y, context.y)
    return pipeline, time.perf_counter() - start


def refit_models(outcome: Any, space: Any, X: Any, y: np.ndarray, fitted: dict[str, Any],
                 ensemble_size: int, deadline: Any, stacking: bool = True) -> dict[str, Any]:
    """``best_pipeline_`` (and ``refit_time_``) and, when one is built (:mod:`.ensemble`, with
    members whose refits fit in what is left of ``deadline``), ``ensemble_``, refitted on all of
    (X, y) under the trials' thread limit — its members kept as bags where the search kept their
    fold models (:mod:`.bagging`) — with its weights, validation loss and constraint
    values (measured on the ensemble itself, as a trial measures a pipeline); with ``stacking``,
    the ensemble may be a stack (:mod:`.stacking`)."""
    ctx = outcome.task.context
    with refit_threads(outcome.refit_threads):
        best, seconds = refit(space, ctx, fitted["best_z_"], fitted["best_theta_"], X, y,
                              iterations=fitted["best_iterations_"],
                              rounds=fitted["best_rounds_"])
        best_id = fitted["best_eval_id_"]
        choice = build_ensemble(outcome, space, ensemble_size, best_id, deadline.left(),
                                stacking=stacking)
        ensemble = None if choice is None else fit_ensemble(
            choice, X, y, ctx.y, {best_id: best, **kept_bags(outcome, space, choice.weights)})
    return {"best_pipeline_": best, "refit_time_": seconds, "ensemble_": ensemble,
            "ensemble_weights_": {} if choice is None else choice.weights,
            "ensemble_loss_": float("nan") if choice is None else choice.loss,
            "ensemble_kind_": None if choice is None else choice.kind,
            "ensemble_constraints_": {} if choice is None else dict(choice.constraints)}


def kept_bags(outcome: Any, space: Any, members: Any) -> dict[int, Any]:
    """The bags (:mod:`.bagging`) of the ``members``, by eval_id, when the run keeps bags: the
    fold models the search kept, or — for an evaluation of an earlier session of a resumed run,
    whose fold models are gone — the same fold models fitted again by the trial itself, so that
    a resumed run returns the model an uninterrupted one does. Empty when the run keeps none."""
    ctx = outcome.task.context
    if outcome.models_dir is None:
        return {}
    records = outcome.by_eval_id
    bags = {}
    for eval_id in members:
        name = outcome.models.get(eval_id)
        if name is None and observation_of(records[eval_id]).iterations is None:
            z, theta = space.encode(records[eval_id]["config"])
            name = ctx.run(tuple(z), space.encoding.project(theta), 1.0).get("models")
        models = None if name is None else read_models(outcome.models_dir, name)
        if models is not None and len(models) == len(ctx.splits):
            bags[eval_id] = bag_of(models, ctx.splits)
    return bags
