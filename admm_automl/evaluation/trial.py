"""What runs inside an evaluation: build the pipeline, fit it on each split, score it.

The :class:`TrialContext` (data, splits, space, metric) reaches a worker process once per run;
each trial then sends only ``(z, θ, fidelity)``. The same function runs in-process for the serial
executor.

Executors only need a *task*: an object with a ``space`` and ``run(z, θ, fidelity[, iterations])
-> result dict``
(``status``, ``loss``, ``error``, ``traceback`` (optional), ``fit_time``, ``predict_time``,
``constraints``, ``n_train``; the executor adds ``duration``). :class:`TrialContext` is the task of
a pipeline on data; a benchmark function such as
:class:`admm_automl.benchmarks.ArtificialObjective` is another, evaluated through the same path. A
task may have a ``warm_up()`` method, which a worker process calls once after loading it, before
its first trial. A task's ``run`` that raises is answered by :func:`error_result` (status
``failed``, or ``memout`` for a ``MemoryError``) in every executor.
"""

from __future__ import annotations

import math
import time
import traceback
import warnings
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Sequence

import numpy as np

from ..constraints.base import combine_splits, measure_all
from ..space import PipelineSpace
from .data import (
    categories_first, category_columns, native_categories, ordinal_categories, take_rows,
)
from .fold_models import write_models
from .kept import DEFAULT_CACHE_MB, KeptStore
from .metrics import Metric
from .policy import FoldClock, LimitProjected, current_limit
from .prefix_cache import PrefixCache, fit_pipeline, prefix_keys
from .shrink import shrink_to_limit
from .splits import Split
from .stopping import RoundsBox, fit_stopped

#: with ``boost_to_fit``, the share of the seconds a trial's limit leaves that its boosted
#: rounds may take (:meth:`_Trial.box`); the rest is for the steps' predictions and the scores
BOX_SHARE = 0.8


@dataclass
class TrialContext:
    """Everything a trial needs besides its configuration."""

    space: PipelineSpace
    X: Any
    y: np.ndarray
    splits: list[Split]
    metric: Metric
    preprocessor: Any = None
    random_state: int | None = None
    #: every class label (classification), so probability losses know the full label set
    labels: np.ndarray | None = None
    #: constraints measured on every fitted pipeline: name -> object with
    #: ``measure(pipeline, X_valid, y_valid, valid_rows) -> float``
    measures: dict[str, Any] = field(default_factory=dict)
    #: MiB of what the process that runs the trials keeps between them (fitted pipeline prefixes
    #: and partly trained models, :mod:`.kept`; 0: nothing)
    cache_size: float = DEFAULT_CACHE_MB
    #: return the validation predictions of every trial (``result["predictions"]``, for the ensemble)
    keep_predictions: bool = False
    #: a folder where each full-data trial writes its fold models for the ensemble's bags
    #: (:mod:`.fold_models`; ``result["models"]`` names the file); None keeps none
    models_dir: str | None = None
    #: the group of each row given beside X (``fit(X, y, sensitive_features=s)``), an object
    #: array; the fits of a mitigation that reads them are passed their rows' (:meth:`fit_params`)
    sensitive_features: np.ndarray | None = None
    #: size a full-data trial of a learner with a tunable training length that does not stop
    #: early to the time limit it runs under, or do not start it (:mod:`.shrink`); off: every
    #: trial runs as configured
    shrink_to_fit: bool = False
    #: stop a boosted learner's rounds at its split's share of the time limit its trial runs
    #: under, keeping the best so far (:class:`~.stopping.RoundsBox`, :meth:`_Trial.box`); off:
    #: only its early stopping and the limit end them
    boost_to_fit: bool = False

    def fit_params(self, model: Any, rows: np.ndarray) -> dict[str, Any]:
        """What ``model.fit`` on ``rows`` takes beyond (X, y): the rows' ``sensitive_features``
        where ``model`` — a fairness mitigation, or a pipeline that ends in one — takes its
        groups beside X (``reads_sensitive_features``; named for a pipeline's last step); else
        nothing."""
        if self.sensitive_features is None:
            return {}
        step, name = model, ""
        if hasattr(model, "steps"):
            name, step = model.steps[-1]
            name += "__"
        if not getattr(step, "reads_sensitive_features", False):
            return {}
        return {f"{name}sensitive_features": take_rows(self.sensitive_features, rows)}

    def kept(self) -> KeptStore:
        """This process's one pool of things kept between trials of this task, ``cache_size``
        MiB for all of them (made on first use, never pickled: each worker process has its
        own)."""
        store = self.__dict__.get("_kept")
        if store is None:
            store = self.__dict__["_kept"] = KeptStore(self.cache_size)
        return store

    def prefix_cache(self) -> PrefixCache:
        """This process's pool of fitted prefixes for this task, in :meth:`kept` (its counters
        live as long as the pool)."""
        cache = self.__dict__.get("_prefix_cache")
        if cache is None:
            cache = self.__dict__["_prefix_cache"] = PrefixCache(store=self.kept())
        return cache

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_kept", None)
        state.pop("_prefix_cache", None)
        return state

    def encoding(self, z: Sequence[int]) -> str | None:
        """How the pipeline of ``z`` encodes the category columns — what its estimator asks for
        (:meth:`PipelineSpace.categories`: ``"ordinal"`` codes or ``"native"`` category columns)
        where the data have category columns, else ``"one_hot"`` — or None without a
        preprocessor."""
        if self.preprocessor is None:
            return None
        wanted = self.space.categories(z)
        return wanted if wanted != "one_hot" and self._encoded(wanted) is not None else "one_hot"

    def pipeline(self, z: Sequence[int], theta: np.ndarray, *, iterations: int | None = None,
                 rounds: int | None = None) -> Any:
        """The unfitted pipeline of ``(z, θ)`` as every trial, ensemble member and refit builds
        it: :meth:`PipelineSpace.to_pipeline` with the run's model seed, after a fresh copy of
        the run's preprocessor that encodes the category columns as :meth:`encoding` says.

        Under ``"native"`` the steps between the preprocessor and the estimator leave the
        category columns untouched (:func:`~.data.categories_first`: a scaler would turn codes
        into fractions), and an estimator that takes their positions (``category_parameter``,
        CatBoost's ``cat_features``) is given ``(0, …, k−1)``."""
        from sklearn.base import clone

        encoding = self.encoding(z)
        preprocessor = (None if encoding is None
                        else clone(self.preprocessor if encoding == "one_hot"
                                   else self._encoded(encoding)))
        pipeline = self.space.to_pipeline(z, theta, preprocessor=preprocessor,
                                          random_state=self.random_state,
                                          iterations=iterations, rounds=rounds)
        if encoding == "native":
            for i, (name, step) in enumerate(pipeline.steps[1:-1], start=1):
                if not (isinstance(step, str) and step == "passthrough"):
                    pipeline.steps[i] = (name, categories_first(step))
            parameter = self.space.category_parameter(z)
            if parameter is not None:
                # a tuple: CatBoost's get_params returns a copy of a list, which fails
                # scikit-learn's clone (the bags clone fitted fold models)
                pipeline[-1].set_params(
                    **{parameter: tuple(range(category_columns(self.preprocessor)))})
        return pipeline

    def _encoded(self, encoding: str) -> Any:
        """The run's preprocessor for ``"ordinal"`` (:func:`~.data.ordinal_categories`) or
        ``"native"`` (:func:`~.data.native_categories`), made once; None when it one-hot encodes
        nothing."""
        key = f"_{encoding}_preprocessor"
        if key not in self.__dict__:
            make = ordinal_categories if encoding == "ordinal" else native_categories
            self.__dict__[key] = make(self.preprocessor)
        return self.__dict__[key]

    def run(
        self, z: tuple[int, ...], theta: np.ndarray, fidelity: float, iterations: int | None = None
    ) -> dict[str, Any]:
        if iterations is not None:  # the training-length fidelity (learning curve, continuation)
            from .iterative import run_iterative_trial

            return run_iterative_trial(self, z, theta, fidelity, iterations)
        return run_trial(self, z, theta, fidelity)

    def warm_up(self) -> None:
        """Import what every trial uses (scikit-learn's pipeline and the metric's scorer), so that a
        worker's first trial is not charged ~2 s of imports against its timeout."""
        import sklearn.pipeline  # noqa: F401

        self.metric.make_scorer(self.labels)


def run_trial(
    ctx: TrialContext, z: tuple[int, ...], theta: np.ndarray, fidelity: float
) -> dict[str, Any]:
    """Fit and score one configuration on every split; never raises for a pipeline's fault.

    The steps before the estimator go through this process's pool of fitted prefixes
    (:mod:`.prefix_cache`): a pipeline whose prefix was fitted before fits only the rest, with
    identical results; what the pool saved is reported in ``result["prefix_cache"]``. An
    estimator that declares ``stopping`` stops its rounds early on each split's validation rows
    (:mod:`.stopping`); the rounds it kept are ``result["rounds"]``, one per split. With a
    ``models_dir``, a full-data trial writes its fitted pipelines there, one per split
    (``result["models"]``: the file's name, None when they were not kept). A last step that
    takes its decision from the other folds' held-out scores (the threshold optimizer with
    ``cv="folds"``) fits its learner on every split first, then its decision
    (:func:`deferred_peers`). Under a known limit (:func:`.policy.trial_limit`) the trial stops
    between folds, status ``timeout``, once its folds project its end past that limit
    (:class:`~.policy.FoldClock`). With the context's ``shrink_to_fit``, a trial that would not
    fit in that limit is first sized to it, at fewer iterations of its learner
    (``result["iterations"]``, the configured ones in ``result["shrunk_from"]``), or not started,
    status ``timeout`` (:mod:`.shrink`).
    """
    trial = _Trial(ctx, z, theta, fidelity)
    result = trial.result
    try:
        trial.scorer = ctx.metric.make_scorer(ctx.labels)
        trial.shrink()
        trial.fit_and_score()
        trial.conclude()
    except LimitProjected as stop:  # it would reach its limit: the seconds until then go elsewhere
        result.update(status="timeout", error=str(stop), budget_stop=stop.budget_end)
    except MemoryError:
        result.update(status="memout", error="MemoryError: the trial hit the memory limit")
    except Exception as err:  # one failing pipeline never ends a run
        result.update(
            status="failed", error=f"{type(err).__name__}: {err}", traceback=_last_frames(err)
        )
    trial.account()
    return result


class _Trial:
    """One run of :func:`run_trial`: its fits and scores split by split, and what it gathers
    from them into ``result`` (losses, measured constraints, rounds, predictions, models)."""

    def __init__(self, ctx: TrialContext, z: tuple[int, ...], theta: np.ndarray,
                 fidelity: float) -> None:
        self.ctx, self.z, self.theta, self.fidelity = ctx, z, theta, fidelity
        self.result: dict[str, Any] = {"status": "ok", "error": None, "fit_time": 0.0,
                                       "predict_time": 0.0}
        self.losses: list[float] = []
        self.measured: dict[str, list[float]] = {}
        self.cache = ctx.prefix_cache()
        self.before = self.cache.stats()
        self.predictions: list[Any] = []
        self.rounds: list[int] = []
        self.boxes: list[RoundsBox] = []
        self.models: list[Any] | None = (
            [] if ctx.models_dir is not None and fidelity >= 1.0 else None)
        self.stopping = ctx.space.stopping(z)
        self.wrapped = ctx.space.wraps(z)
        self.scorer: Any = None
        #: the training length the pipeline is built at (None: as configured; :meth:`shrink`)
        self.iterations: int | None = None

    def shrink(self) -> None:
        """Size the trial to its limit (:func:`~.shrink.shrink_to_limit`): its pipelines are
        then built at the length that fits, which the result records."""
        shrunk = shrink_to_limit(self.ctx, self.z, self.theta, self.fidelity)
        if shrunk is not None:
            self.iterations = shrunk.iterations
            self.result.update(iterations=shrunk.iterations, shrunk_from=shrunk.shrunk_from)

    def fit_and_score(self) -> None:
        """Every split fitted and scored in turn, or — where the last step decides from its
        peers' held-out scores (:func:`deferred_peers`) — every split's learner fitted, then
        every decision taken, then every split scored."""
        ctx, clock, n_splits = self.ctx, FoldClock(), len(self.ctx.splits)
        peers = deferred_peers(ctx.pipeline(self.z, self.theta, iterations=self.iterations),
                               ctx.splits)
        if peers is None:
            for i, split in enumerate(ctx.splits):
                self.score(split, *self.fit(i, split))
                clock.check(i + 1, n_splits)
            return
        fits = []
        for i, split in enumerate(ctx.splits):
            fits.append(self.fit(i, split, True))
            clock.check(i + 1, n_splits)
        start = time.perf_counter()
        decide_from_peers([f[0][-1] for f in fits], [f[2] for f in fits],
                          [f[3] for f in fits], peers)
        self.result["fit_time"] += time.perf_counter() - start
        for split, fitted in zip(ctx.splits, fits):
            self.score(split, *fitted)

    def fit(self, i: int, split: Split, learner_only: bool = False) -> tuple[Any, Any, Any, Any]:
        """Split ``i``'s pipeline fitted on its training rows: the pipeline, the estimator's
        input on the validation rows, the validation rows and labels; ``learner_only``: the
        last step's learner alone, its decision deferred (:func:`deferred_peers`)."""
        ctx, z, theta, fidelity = self.ctx, self.z, self.theta, self.fidelity
        pipeline = ctx.pipeline(z, theta, iterations=self.iterations)
        rows = split.train_rows(fidelity)
        X_train, y_train = take_rows(ctx.X, rows), ctx.y[rows]
        X_valid, y_valid = take_rows(ctx.X, split.valid), ctx.y[split.valid]
        stop = (None if self.stopping is None
                else partial(fit_stopped, y_valid=y_valid, stopping=self.stopping[1],
                             box=self.box(i)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            learner = None
            if self.wrapped and stop is not None:
                learner = self._stopped_learner(i, pipeline, X_train, y_train, X_valid, stop)
                stop = None
            if learner_only:
                pipeline[-1].fit_learner(X_train, y_train, learner=learner)
                valid = X_valid
            elif learner is not None and hasattr(pipeline[-1], "fit_learner"):
                pipeline[-1].fit(X_train, y_train, learner=learner)  # its inner folds only
                valid = X_valid
            else:
                keys = prefix_keys(ctx.space, z, theta, split=i, fidelity=fidelity,
                                   random_state=ctx.random_state, preprocessor=ctx.encoding(z))
                fitted = fit_pipeline(pipeline, keys, X_train, y_train, X_valid, self.cache,
                                      fit_estimator=stop,
                                      fit_params=ctx.fit_params(pipeline[-1], rows))
                pipeline, valid = fitted.pipeline, fitted.valid
                if fitted.rounds is not None:
                    self.rounds.append(fitted.rounds)
            self.result["fit_time"] += time.perf_counter() - start
        return pipeline, valid, X_valid, y_valid

    def box(self, i: int) -> RoundsBox | None:
        """With the context's ``boost_to_fit`` and a known limit, the moment split ``i``'s
        rounds stop at: :data:`BOX_SHARE` of the seconds the limit leaves, split evenly over the
        splits not fitted yet, so that the trial ends inside its limit with a model where it
        would otherwise be stopped with none; None otherwise (a run without time limits stays
        reproducible)."""
        limit = current_limit()
        if not self.ctx.boost_to_fit or limit is None:
            return None
        now = time.perf_counter()
        box = RoundsBox(now + BOX_SHARE * max(limit[0] - now, 0.0) / (len(self.ctx.splits) - i))
        self.boxes.append(box)
        return box

    def _stopped_learner(self, i: int, pipeline: Any, X_train: Any, y_train: Any, X_valid: Any,
                         stop: Any) -> Any:
        """The wrapped pipeline of a mitigation whose estimator stops its rounds early, fitted
        unwrapped and stopping on the validation rows as a plain trial does; the wrapper of
        ``pipeline`` is set to those rounds and may take it as its learner (the threshold
        optimizer: its inner folds are then its only other fits).

        Without it a mitigation fits every round of the searched cap, several times: the
        default portfolio's XGBoost caps 19 445 rounds of depth 13, and its mitigated trials
        all hit their time limit in 60 s runs on the adult census data."""
        from sklearn.base import clone

        ctx, stopping = self.ctx, self.stopping
        keys = prefix_keys(ctx.space, self.z, self.theta, split=i, fidelity=self.fidelity,
                           random_state=ctx.random_state, preprocessor=ctx.encoding(self.z),
                           wrapped=True)
        inner = fit_pipeline(clone(pipeline[-1].estimator), keys, X_train, y_train, X_valid,
                             self.cache, fit_estimator=stop)
        self.rounds.append(inner.rounds)
        pipeline[-1].estimator.set_params(
            **{f"{stopping[0]}__{stopping[1].parameter}": inner.rounds})
        return inner.pipeline

    def score(self, split: Split, pipeline: Any, valid: Any, X_valid: Any, y_valid: Any) -> None:
        """Loss, constraints and what is kept of one fitted split."""
        ctx = self.ctx
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            # the estimator on the prefix's output: as the pipeline on the raw rows
            loss, predictions = _predicted_loss(ctx, pipeline[-1], valid, y_valid)
            if loss is None:
                try:
                    loss = ctx.metric.loss(self.scorer, pipeline[-1], valid, y_valid)
                except ValueError as err:  # scikit-learn's check of its input, worded for a user
                    if "contains NaN" not in str(err) and "contains infinity" not in str(err):
                        raise
                    raise _non_finite(str(err)) from err
            self.losses.append(loss)
            self.result["predict_time"] += time.perf_counter() - start
            measure_all(ctx.measures, pipeline, X_valid, y_valid, split.valid, self.measured)
            if ctx.keep_predictions:
                self.predictions.append(validation_predictions(pipeline[-1], valid)
                                        if predictions is None else predictions)
            if self.models is not None:
                self.models.append(pipeline)

    def conclude(self) -> None:
        """The trial's loss (the mean over its splits; a non-finite one fails it), its rounds,
        predictions and the file of its models, once every split is scored."""
        result, loss = self.result, float(np.mean(self.losses))
        if self.rounds:
            result["rounds"] = self.rounds
        if any(box.fired for box in self.boxes):
            result["boxed"] = sum(box.fired for box in self.boxes)
        if self.predictions and all(p is not None for p in self.predictions):
            result["predictions"] = np.concatenate(self.predictions)
        if not math.isfinite(loss):
            result.update(status="failed",
                          error=f"non-finite {self.ctx.metric.name} loss: {loss!r}")
        elif self.models:
            result["models"] = write_models(self.ctx.models_dir, self.models)
        result["loss"] = loss

    def account(self) -> None:
        """What every result carries, however the trial ended: the constraints measured, the
        training rows and what the pool of fitted prefixes saved."""
        ctx, result = self.ctx, self.result
        result["constraints"] = combine_splits(self.measured, ctx.splits, ctx.measures)
        result["n_train"] = (int(len(ctx.splits[0].train_rows(self.fidelity))) if ctx.splits
                             else 0)
        if self.cache.enabled:
            after = self.cache.stats()
            result["prefix_cache"] = {k: after[k] - self.before[k]
                                      for k in ("hits", "misses", "fits_saved", "seconds_saved")}


def deferred_peers(pipeline: Any, splits: Sequence[Split]) -> list[list[int]] | None:
    """For a pipeline whose last step takes its decision from scores held out elsewhere
    (``cv="folds"``; ``fit_learner`` / ``held_out`` / ``fit_thresholds``: the threshold
    optimizer), the splits
    each split's decision is taken from — those whose validation rows all lie in its training
    rows (the other folds of its repeat) — or None: another pipeline, one holdout split, or a
    split with no such peer; the step then fits as it is (its own inner folds).

    Why: the threshold optimizer chooses its thresholds on held-out scores; a trial's other
    folds hold out every row already, so taking each fold's thresholds from the others' scores
    costs one fit of the learner a fold where inner folds cost four (Run B of the constrained
    campaign: 7-10 evaluations in 60 s, mitigated ones at about four times their pipeline's
    cost). The thresholds of fold i then depend on models that saw fold i's rows, as the
    out-of-fold predictions of a stacked ensemble do; they never see fold i's scores.
    """
    step = pipeline[-1] if hasattr(pipeline, "steps") else pipeline
    if getattr(step, "cv", None) != "folds" or not all(
            hasattr(step, m) for m in ("fit_learner", "held_out", "fit_thresholds")):
        return None
    if len(splits) < 2:
        return None
    peers = [[j for j, other in enumerate(splits)
              if j != i and np.isin(other.valid, split.train).all()]
             for i, split in enumerate(splits)]
    return peers if all(peers) else None


def decide_from_peers(steps: Sequence[Any], X_valid: Sequence[Any], y_valid: Sequence[Any],
                      peers: Sequence[Sequence[int]]) -> None:
    """Each split's step, its learner fitted, takes its decision (``fit_thresholds``) from its
    peers' held-out scores of their validation rows (:func:`deferred_peers`)."""
    held = [step.held_out(X) for step, X in zip(steps, X_valid)]
    for step, chosen in zip(steps, peers):
        step.fit_thresholds(np.concatenate([held[j][0] for j in chosen]),
                            np.concatenate([np.asarray(y_valid[j]) for j in chosen]),
                            np.concatenate([held[j][1] for j in chosen]))


def _non_finite(detail: str) -> ValueError:
    return ValueError("the pipeline produced non-finite values (NaN or infinity) when predicting "
                      f"the validation data ({detail})")


def _predicted_loss(ctx: TrialContext, estimator: Any, X_valid: Any, y_valid: np.ndarray
                    ) -> tuple[float | None, np.ndarray | None]:
    """A split's loss from one prediction that the ensemble keeps too (then ``(loss,
    predictions)``), where the metric has a shortcut (:meth:`~.metrics.Metric.shortcut`) and the
    scorer would read those same predictions: class probabilities for log-loss, and for 1 − AUROC
    of an estimator without ``decision_function`` (the scorer ranks by it where there is one);
    a regressor's values for RMSE and MAE. Else ``(None, None)``: the scorer scores it.

    Why: scored by the scorer and then asked for its predictions for the ensemble, every split
    predicted twice — a forest of a thousand trees spends as long on its validation rows
    again — and paid the scorer's milliseconds of input checks."""
    from sklearn.base import is_classifier

    classifier = is_classifier(estimator)
    if classifier and (not hasattr(estimator, "predict_proba") or (
            ctx.metric.name == "roc_auc" and hasattr(estimator, "decision_function"))):
        return None, None
    shortcut = ctx.metric.shortcut(y_valid, ctx.labels)
    if shortcut is None:
        return None, None
    raw = np.asarray(estimator.predict_proba(X_valid) if classifier
                     else estimator.predict(X_valid))
    expected = (len(y_valid), len(ctx.labels)) if classifier else np.shape(y_valid)
    if raw.shape != expected or raw.dtype.kind not in "fiu":
        return None, None  # a split missing a class, say: the scorer says what it makes of it
    if not np.isfinite(raw).all():
        raise _non_finite("its predictions contain NaN or infinity")
    return shortcut(raw), raw.astype(float)


def validation_predictions(pipeline: Any, X_valid: Any) -> np.ndarray | None:
    """What the ensemble averages: class probabilities of a classifier (None without
    ``predict_proba``), predictions of a regressor; one row per validation row."""
    from sklearn.base import is_classifier

    if not is_classifier(pipeline):
        return np.asarray(pipeline.predict(X_valid), dtype=float)
    if not hasattr(pipeline, "predict_proba"):
        return None
    return np.asarray(pipeline.predict_proba(X_valid), dtype=float)


def executor_result(status: str, error: str) -> dict[str, Any]:
    """The result of a trial that the executor ended or lost (timeout, dead worker, not run)."""
    return {
        "status": status, "loss": math.nan, "error": error, "fit_time": 0.0, "predict_time": 0.0,
        "constraints": {}, "n_train": None,
    }


def error_result(err: BaseException) -> dict[str, Any]:
    """The result of a task whose ``run`` raised ``err`` (``memout`` for a ``MemoryError``)."""
    status = "memout" if isinstance(err, MemoryError) else "failed"
    result = executor_result(status, f"{type(err).__name__}: {err}")
    result["traceback"] = _last_frames(err)
    return result


def _last_frames(err: BaseException) -> str:
    return "".join(traceback.format_exception(type(err), err, err.__traceback__)[-3:])
