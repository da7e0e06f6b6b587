"""The training-length fidelity: train a pipeline's iterative learner for t iterations, record its
learning curve, and continue a partly trained model from t1 to t2 instead of starting over.

Budget-aware planning for iterative learners (BAPI: Belakaria, Doppa, Fusi and Sheth, 2022) trains
a configuration for a chosen number of epochs or boosting rounds, looks at its learning curve,
and later trains it further; what is charged is only the extra iterations. This module is that
part of the evaluation engine. A request with ``iterations = t`` reaches
:func:`run_iterative_trial` (through :meth:`TrialContext.run`); the algorithm's
:class:`~admm_automl.space.Iterations` says how it is trained further:

* ``"warm_start"``: set the training-length parameter to the next checkpoint on the fitted
  estimator, with ``warm_start=True``, and ``fit`` again (HistGradientBoosting, GradientBoosting,
  random forests, extra trees: only the new iterations are trained);
* ``"partial_fit"``: one ``partial_fit`` call per epoch (SGD, MLP), ``classes`` given at the first.

**Checkpoints (the learning curve).** The validation loss is measured every
``⌈t_max / 20⌉`` iterations and at t itself (:func:`checkpoints`): at most about 20 scorings for a
full training, whatever t_max is, on one grid shared by every request of the algorithm, so the
curves of a configuration trained in several steps line up. The curve is the mean over the
validation splits, in the observation and the journal; its last value is the loss.

**Same model whether continued or trained from scratch.** The steps before the learner are fitted
once, on the same rows, and kept with the model; the learner is advanced chunk by chunk in both
cases, so the two paths differ only in where the chunks end. That does not change the model:
scikit-learn's warm-started ensembles draw each new tree's randomness from their ``random_state``
in order (checked in the tests for HistGradientBoosting, GradientBoosting with subsampling, random
forests and extra trees), and ``partial_fit`` re-reads ``random_state`` at every call, so epoch
``e`` is given its own seed, derived from the run's model seed and ``e`` alone
(:func:`epoch_seed`): every epoch shuffles differently (with one fixed integer each epoch would
visit the rows in the same order) and epoch ``e`` shuffles the same way on both paths.

**The store of partly trained models** (:class:`ModelStore`) lives in the process that runs the
trials: one per worker process (per serial run, in the caller). Its models are kept in that
process's one :class:`~.kept.KeptStore` (kind ``"model"``, each sized by its pickled bytes), under
the byte budget they share with the fitted prefixes of :mod:`.prefix_cache` (``cache_size`` MiB,
at most a quarter of ``memory_limit``; 0 keeps no model), least recently used of either kind
evicted first. A worker that dies or is replaced loses its store. A continuation whose model was
evicted, or is held elsewhere, misses: with several workers a continuation hits only where the
model is held, and we do not route requests to workers (the pool's contract stays
``jobs -> results``). A miss retrains from scratch to t2, which gives the same model and curve
(above) at the full cost. A sequential solver's one-job batches always go to the first idle
worker, the same one, so they hit.
"""

from __future__ import annotations

import math
import pickle
import time
from typing import Any

import numpy as np

from ..constraints.base import combine_splits, measure_all
from .kept import KeptStore

#: the learning curve is scored every ⌈t_max / CURVE_POINTS⌉ iterations (and at t)
CURVE_POINTS = 20
#: the kind of the partly trained models in the worker's :class:`~.kept.KeptStore`
KIND = "model"


def checkpoints(t_max: int, start: int, stop: int) -> list[int]:
    """The lengths in ``(start, stop]`` at which the validation loss is measured: the multiples
    of ``⌈t_max / CURVE_POINTS⌉`` and ``stop``."""
    step = max(1, math.ceil(t_max / CURVE_POINTS))
    return list(range((start // step + 1) * step, stop, step)) + ([stop] if stop > start else [])


def epoch_seed(model_seed: int, epoch: int) -> int:
    """The ``random_state`` of epoch ``epoch`` (0-based) of a ``partial_fit`` learner."""
    return int(np.random.SeedSequence([int(model_seed), int(epoch)]).generate_state(1)[0] >> 1)


class ModelStore:
    """Partly trained pipelines by key, kept in ``store`` (the worker's pool of kept things, whose
    byte budget they share with other kinds; least recently used of any kind evicted first).

    A model is sized by its pickled bytes; one larger than the whole budget is not kept. For one
    key only the longest-trained model is kept: a request for a shorter length trains from
    scratch and leaves the longer one in place.
    """

    def __init__(self, store: KeptStore) -> None:
        self.store = store

    def __len__(self) -> int:
        return self.store.count(KIND)

    @property
    def n_bytes(self) -> int:
        """The bytes of the models held."""
        return self.store.bytes_of(KIND)

    def take(self, key: Any, length: int) -> tuple[int, Any] | None:
        """Remove and return ``(t, model)`` held for ``key`` if ``t <= length``."""
        item = self.store.get(KIND, key, touch=False)
        if item is None or item[0] > length:
            return None
        self.store.pop(KIND, key)
        return item

    def put(self, key: Any, length: int, model: Any) -> None:
        """Keep ``model`` trained to ``length`` (unless a longer one is held for ``key``)."""
        if not self.store.enabled:
            return
        held = self.store.get(KIND, key, touch=False)
        if held is not None and held[0] >= length:
            self.store.touch(KIND, key)
            return
        size = len(pickle.dumps(model, protocol=pickle.HIGHEST_PROTOCOL))
        self.store.put(KIND, key, (int(length), model), size)


def model_key(space: Any, z: tuple[int, ...], theta: np.ndarray, fidelity: float,
              split: int) -> tuple[str, float, int]:
    """The store key of the model of ``(z, θ)`` (any training length) on one split."""
    return space.key(z, theta), round(float(fidelity), 6), int(split)


def model_store(ctx: Any) -> ModelStore:
    """The store of partly trained models of the process's copy of the trial context, in the
    context's pool of kept things (made at its first use, so the context is pickled to the
    workers without it)."""
    return ModelStore(ctx.kept())


def _advance(estimator: Any, length: Any, done: int, stop: int, X: Any, y: Any,
             classes: Any, model_seed: int | None) -> None:
    """Train ``estimator`` from ``done`` to ``stop`` iterations."""
    from sklearn.base import is_classifier

    if length.method == "warm_start":
        estimator.set_params(warm_start=True, **{length.parameter: stop})
        estimator.fit(X, y)
        return
    for epoch in range(done, stop):
        if model_seed is not None:
            estimator.set_params(random_state=epoch_seed(model_seed, epoch))
        first = epoch == 0 and is_classifier(estimator)
        estimator.partial_fit(X, y, **({"classes": classes} if first else {}))


def run_iterative_trial(
    ctx: Any, z: tuple[int, ...], theta: np.ndarray, fidelity: float, iterations: int
) -> dict[str, Any]:
    """Train ``(z, θ)`` for ``iterations`` iterations on each split (continuing a held model when
    there is one), with the learning curve; the result dict of :func:`.worker.run_trial` plus
    ``iterations``, ``curve`` (``[[t, loss], ...]``), ``continued_from`` and
    ``trained_iterations`` (iterations trained in this trial, summed over the splits).

    A pipeline's fault raises (the executor records it as a failed trial); the model being
    trained is then not kept.
    """
    import warnings

    from .data import take_rows

    space = ctx.space
    space.decode(z, theta, iterations)  # checks the training length
    length = space.encoding.training_length(z)
    module = next(m.name for m, j in zip(space.modules, z) if m.choices[j].iterations is length)
    store = model_store(ctx)
    scorer = ctx.metric.make_scorer(ctx.labels)
    result: dict[str, Any] = {"status": "ok", "error": None, "fit_time": 0.0, "predict_time": 0.0}
    curves, starts = [], []
    measured: dict[str, list[float]] = {}
    for index, split in enumerate(ctx.splits):
        rows = split.train_rows(fidelity)
        X_train, y_train = take_rows(ctx.X, rows), ctx.y[rows]
        X_valid, y_valid = take_rows(ctx.X, split.valid), ctx.y[split.valid]
        key = model_key(space, z, theta, fidelity, index)
        held = store.take(key, iterations)
        if held is None:
            start_t = 0
            pipeline = ctx.pipeline(z, theta, iterations=iterations)
        else:
            start_t, pipeline = held
        if pipeline.steps[-1][0] != module:
            raise ValueError(
                f"the iterative algorithm of module {module!r} must be the last pipeline step to "
                "be trained for a number of iterations"
            )
        curve = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tic = time.perf_counter()
            head = pipeline[:-1]
            X_fit = head.fit_transform(X_train, y_train) if start_t == 0 else head.transform(X_train)
            result["fit_time"] += time.perf_counter() - tic
            estimator, done = pipeline.steps[-1][1], start_t
            for stop in checkpoints(length.t_max, start_t, iterations) or [iterations]:
                tic = time.perf_counter()
                _advance(estimator, length, done, stop, X_fit, y_train, ctx.labels,
                         ctx.random_state)
                result["fit_time"] += time.perf_counter() - tic
                done = stop
                tic = time.perf_counter()
                curve.append((stop, ctx.metric.loss(scorer, pipeline, X_valid, y_valid)))
                result["predict_time"] += time.perf_counter() - tic
            measure_all(ctx.measures, pipeline, X_valid, y_valid, split.valid, measured)
        store.put(key, iterations, pipeline)
        curves.append(dict(curve))
        starts.append(start_t)
    common = sorted(set.intersection(*(set(c) for c in curves)))
    mean_curve = [[t, float(np.mean([c[t] for c in curves]))] for t in common]
    loss = mean_curve[-1][1]
    if not math.isfinite(loss):
        result.update(status="failed", error=f"non-finite {ctx.metric.name} loss: {loss!r}")
    result.update(
        loss=loss, iterations=int(iterations), curve=mean_curve, continued_from=int(min(starts)),
        trained_iterations=int(sum(iterations - s for s in starts)),
        constraints=combine_splits(measured, ctx.splits, ctx.measures),
        n_train=int(len(ctx.splits[0].train_rows(fidelity))),
    )
    return result
