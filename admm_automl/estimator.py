"""The scikit-learn face of the package: parameters, ``fit`` as a short story, refit, prediction.

``ADMM`` searches a pipeline space by the ADMM decomposition of Liu et al. (AAAI 2020) and refits
the best pipeline on all the data; ``ADMMClassifier`` and ``ADMMRegressor`` fix the task so that
scikit-learn knows the estimator type before ``fit``. The search itself is set up by
:func:`admm_automl.evaluation.setup.run_search`.
"""

from __future__ import annotations

import contextlib
import logging
import time
import warnings
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, clone
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import (
    check_array,
    check_consistent_length,
    check_is_fitted,
    column_or_1d,
    validate_data,
)

from . import _validation as v
from ._recorder import Schedule
from .constraints import make_constraints
from .ensemble import build_ensemble
from .evaluation import get_metric
from .evaluation.data import as_frame_if_mixed, check_no_inf
from .evaluation.setup import METHODS, SearchSettings, run_search
from .exceptions import DataError, InvalidParameterError
from .results import fitted_attributes
from .solvers import THETA_SOLVERS, Z_SOLVERS
from .space import load_space
from .space.portfolio import resolve_portfolio
from .space.space import import_class

logger = logging.getLogger("admm_automl")

_RULES = {
    "method": [v.options(*METHODS)],
    "max_evals": [v.int_at_least(1), v.NONE],
    "time_budget": [v.POSITIVE_NUMBER, v.NONE],
    "rho": [v.POSITIVE_NUMBER],
    "inner_iter": [v.int_at_least(1)],
    "inner_iter_step": [v.int_at_least(0)],
    "inner_iter_max": [v.int_at_least(1)],
    "constraint_mode": [v.options("auto", "admm", "penalty", "filter")],
    "penalty_weight": [v.POSITIVE_NUMBER],
    "cv": [v.options("auto"), v.int_at_least(2), v.NONE],
    "validation_size": [v.FRACTION],
    "executor": [v.options("auto", "serial", "process")],
    "n_jobs": [v.int_at_least(1)],
    "trial_timeout": [v.POSITIVE_NUMBER, v.NONE],
    "memory_limit": [v.int_at_least(1), v.NONE],
    "output_dir": [v.PATH, v.NONE],
    "resume": [v.BOOL],
    "random_state": [v.SEED],
    "verbose": [v.int_at_least(0)],
    "task": [v.options("auto", "classification", "regression")],
    "ensemble_size": [v.int_at_least(0)],
}


@contextlib.contextmanager
def _verbosity(verbose: int):
    """Log to stderr during ``fit``: iterations at ``verbose=1``, every evaluation at 2."""
    if not verbose:
        yield
        return
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("[admm-automl] %(message)s"))
    old = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG if verbose > 1 else logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)


def _pipeline_has(attr: str):
    """``available_if`` check: the refitted pipeline has ``attr``; before ``fit``, every candidate
    of the space's last module has it (so it is sure to exist after ``fit``)."""

    def check(self) -> bool:
        if hasattr(self, "best_pipeline_"):
            return hasattr(self._model(), attr)
        try:
            task = self._fixed_task or (self.task if self.task != "auto" else None)
            return all(hasattr(import_class(a.class_path), attr)
                       for a in load_space(self.search_space).modules[-1].choices
                       if a.class_path is not None and (task is None or a.task in ("any", task)))
        except Exception:  # an invalid space is reported by fit
            return True

    return check


def _check_target(X: Any, y: Any, task: str, owner: str) -> tuple[np.ndarray, str, str]:
    """``(y, task, target type)``: one target per row of X, the task inferred when "auto",
    classes checked."""
    if y is None:
        raise ValueError(f"{owner} requires y to be passed, but the target y is None.")
    y = column_or_1d(check_array(y, ensure_2d=False, dtype=None, input_name="y",
                                 ensure_min_samples=0), warn=True)
    check_consistent_length(X, y)
    target_type = type_of_target(y, input_name="y")
    if task == "auto":
        task = "classification" if target_type in ("binary", "multiclass") else "regression"
    if task == "classification":
        check_classification_targets(y)
        classes = np.unique(y)
        if len(classes) < 2:
            raise DataError(f"y contains a single class ({classes[0]!r}); classification needs "
                            "at least 2 classes")
        return y, task, "binary" if len(classes) == 2 else "multiclass"
    try:
        return y.astype(float), task, "continuous"
    except (TypeError, ValueError):
        raise DataError(f"regression needs a numeric target, got dtype {y.dtype}") from None


def _label_indices(classes: np.ndarray, y: Any) -> np.ndarray:
    """The indices in ``classes`` of the labels ``y``; an unseen label is an error."""
    y = column_or_1d(np.asarray(y))
    index = np.clip(np.searchsorted(classes, y), 0, len(classes) - 1)
    unseen = classes[index] != y
    if unseen.any():
        raise DataError(f"y has labels not seen in fit: {sorted(set(y[unseen].tolist()))[:5]!r}")
    return index


def _refit(model: Any, X: Any, y: np.ndarray, y_index: np.ndarray) -> Any:
    """``model`` fitted on all of (X, y), its warnings silenced (the search saw them); on the
    label indices ``y_index`` if it refuses the labels themselves (XGBoost takes only 0..K-1)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return model.fit(X, y)
        except Exception:
            if y is y_index or np.array_equal(y, y_index):
                raise
            return model.fit(X, y_index)


def _refit_models(outcome: Any, space: Any, X: Any, y: np.ndarray, fitted: dict[str, Any],
                  ensemble_size: int) -> dict[str, Any]:
    """``best_pipeline_`` and, when one is built (:mod:`admm_automl.ensemble`), ``ensemble_``,
    refitted on all of (X, y); the ensemble's weights and loss; the time it took."""
    start = time.perf_counter()
    ctx = outcome.task.context
    best = _refit(space.to_pipeline(fitted["best_z_"], fitted["best_theta_"],
                                    preprocessor=clone(ctx.preprocessor),
                                    random_state=ctx.random_state), X, y, ctx.y)
    choice = build_ensemble(outcome, space, ensemble_size, fitted["best_eval_id_"])
    return {"best_pipeline_": best,
            "ensemble_": None if choice is None else _refit(choice.model, X, y, ctx.y),
            "ensemble_weights_": {} if choice is None else choice.weights,
            "ensemble_loss_": float("nan") if choice is None else choice.loss,
            "refit_time_": time.perf_counter() - start}


class ADMM(BaseEstimator):
    """AutoML pipeline search by ADMM (Liu et al., AAAI 2020), with pluggable sub-solvers.

    Parameters
    ----------
    search_space : str, path or PipelineSpace, default="default"
        A built-in space name (``admm_automl.list_spaces()``), a YAML file or a space object.
        ``"default"``: HistGradientBoosting, LightGBM, XGBoost, forests, linear models, k-NN and
        an RBF SVM; ``paper_small`` / ``paper_large`` / ``blds`` reproduce the papers. Algorithms
        whose ``max_rows`` is below the number of rows are left out.
    theta_solver, z_solver : str, dict or solver, default="bo", "cmab"
        The θ-step and z-step solvers: a registered name, ``{"name": ..., "params": {...}}`` or an
        instance (``list_theta_solvers()``, ``list_z_solvers()``). With the adaptive schedule the
        defaults are the paper's AdADMM-F16(BO, Ba).
    method : {"admm", "jopt", "select"}, default="admm"
        The ADMM split; ``"jopt"``: one ``theta_solver`` over the joint space of all choices and
        hyperparameters; ``"select"``: ``z_solver`` with every hyperparameter at its default.
    max_evals : int, optional
        New pipeline evaluations (cache hits are free; a resumed run's count). With neither
        ``max_evals`` nor ``time_budget``, 100.
    time_budget : float, optional
        Wall-clock seconds of this search, overhead included (the refit comes after). With worker
        processes an evaluation running at the end is stopped. Not reproducible.
    rho : float, default=1.0
        ADMM penalty ρ.
    inner_iter, inner_iter_step, inner_iter_max : int, default=16, 16, 128
        New evaluations per sub-problem at iteration t: ``min(inner_iter + inner_iter_step·t,
        inner_iter_max)``; ``inner_iter_step=0`` is fixed-I ADMM.
    constraints : list, optional
        Black-box constraints: expressions (``"latency <= 2e-5"``, ``"fpr <= 0.1"``), mappings
        (``{"name": "disparate_impact", "threshold": 0.1, "group_by": "age", "bins": [...]}``),
        callables ``fn(pipeline, X_valid, y_valid, groups) -> float`` (bounded by ``<= 0``) or
        :mod:`admm_automl.constraints` objects. The best *feasible* pipeline is refitted; if none
        is feasible, the least violating one, with a warning.
    constraint_mode : {"auto", "admm", "penalty", "filter"}, default="auto"
        Slack variables and multipliers (``"admm"``, the default of the ADMM method), a fixed
        penalty ``penalty_weight × Σ relative violation`` (``"penalty"``, the default of ``jopt``
        and ``select``, which refuse ``"admm"``), or constraints ignored during the search and
        applied to the choice of the result (``"filter"``).
    penalty_weight : float, default=1.0
        Weight of the ``"penalty"`` mode.
    scoring : str or callable, optional
        Loss: None (1 − AUROC binary, log-loss multiclass, RMSE regression), a built-in name
        (bounded scores are used as 1 − score), a scikit-learn scorer name or a callable.
    cv : int, "auto" or None, default="auto"
        k-fold cross-validation; None: one holdout split of ``validation_size`` (stratified for
        classification), fixed for the run; ``"auto"``: 5 folds below 5000 rows, else a holdout
        (:func:`admm_automl.evaluation.setup.resolve_cv` says why).
    validation_size : float, default=0.2
    executor : {"auto", "serial", "process"}, default="auto"
        Worker processes (which a timeout or memory limit can stop) or this process; ``"auto"``
        uses workers when ``trial_timeout``, ``time_budget``, ``memory_limit`` or ``n_jobs > 1``
        needs them.
    n_jobs : int, default=1
    trial_timeout : float, optional
        Seconds one evaluation may take (status ``timeout``). None with a ``time_budget``: a
        quarter of the time left, at least a tenth of the budget; and from 10 000 training rows
        a pipeline is first fitted on a tenth of them, and on all only if that predicts it can
        finish (:mod:`admm_automl.evaluation.objective`).
    memory_limit : int, optional
        Address-space limit per worker in MiB (status ``memout``).
    output_dir : str or path, optional
        Where ``journal.jsonl`` is appended, one record per evaluation as it happens.
    resume : bool, default=True
        A journal in ``output_dir`` from the same data, task, metric, splits, seed and space is
        resumed: its evaluations are replayed, not repeated. One from another run is refused with
        an error naming the difference; ``resume=False`` keeps it as ``journal-1.jsonl`` and
        starts afresh.
    random_state : int, RandomState or None
        Seeds the splits, the solvers and the pipelines' ``random_state``. Same seed, evaluation
        budget and serial executor give the same history.
    verbose : int, default=0
        1 logs every iteration, 2 every evaluation.
    task : {"auto", "classification", "regression"}, default="auto"
    portfolio : "auto", None, path or list of dict, default="auto"
        Configurations the ADMM method evaluates first (after the initial pipeline), then starting
        from the best: ``"auto"`` is the portfolio shipped for a built-in space (learned offline
        by ``experiments/portfolio.py``), None none.
    ensemble_size : int, default=0
        Steps of greedy ensemble selection with replacement over the best evaluations' validation
        predictions (Caruana et al. 2004); 0 is off. The ensemble (``ensemble_``) is used when it
        beats the best single pipeline on validation data and meets the constraints.

    Attributes
    ----------
    best_pipeline_ : sklearn.pipeline.Pipeline
        The best configuration refitted on all of X, y (a plain scikit-learn object). A classifier
        is fitted on your labels, or on their indices in ``classes_`` if it takes no other labels
        (XGBoost): then ``classes_[best_pipeline_.predict(X)]`` are the labels.
    ensemble_ : VotingClassifier, VotingRegressor or None
        The refitted ensemble that ``predict`` uses, when one was built (``ensemble_size``);
        ``ensemble_weights_`` maps its members' ``eval_id`` to their weight, ``ensemble_loss_``
        is its validation loss.
    best_params_ : dict
        Its configuration, ``{"module": choice, "module__param": value}``.
    best_loss_, best_score_ : float
        Its validation loss and score (``offset − loss``; higher is better).
    history_ : pandas.DataFrame
        One row per evaluation of the run (resumed ones included), as in the journal.
    cv_results_ : dict of arrays
        scikit-learn style summary of the evaluations.
    admm_trace_ : pandas.DataFrame
        One row per iteration: best loss, evaluations, time; for ADMM ρ, ‖θ̃d − δ‖, ‖λ‖, u, μ.
    feasible_ : bool
        Whether ``best_pipeline_`` met every constraint on the validation data.
    constraints_ : list of BaseConstraint
        The parsed constraints, bound to the training data.
    best_eval_id_, n_evals_, n_failed_, stop_reason_, task_, metric_, classes_, n_features_in_,
    feature_names_in_
    """

    _fixed_task: str | None = None

    def __init__(
        self, *, search_space: Any = "default", theta_solver: Any = "bo",
        z_solver: Any = "cmab", method: str = "admm", max_evals: int | None = None,
        time_budget: float | None = None, rho: float = 1.0, inner_iter: int = 16,
        inner_iter_step: int = 16, inner_iter_max: int = 128, constraints: Any = None,
        constraint_mode: str = "auto", penalty_weight: float = 1.0, scoring: Any = None,
        cv: Any = "auto", validation_size: float = 0.2, executor: str = "auto",
        n_jobs: int = 1, trial_timeout: float | None = None, memory_limit: int | None = None,
        output_dir: Any = None, resume: bool = True, random_state: Any = None, verbose: int = 0,
        task: str = "auto", portfolio: Any = "auto", ensemble_size: int = 0,
    ) -> None:
        self.search_space = search_space
        self.theta_solver = theta_solver
        self.z_solver = z_solver
        self.method = method
        self.max_evals = max_evals
        self.time_budget = time_budget
        self.rho = rho
        self.inner_iter = inner_iter
        self.inner_iter_step = inner_iter_step
        self.inner_iter_max = inner_iter_max
        self.constraints = constraints
        self.constraint_mode = constraint_mode
        self.penalty_weight = penalty_weight
        self.scoring = scoring
        self.cv = cv
        self.validation_size = validation_size
        self.executor = executor
        self.n_jobs = n_jobs
        self.trial_timeout = trial_timeout
        self.memory_limit = memory_limit
        self.output_dir = output_dir
        self.resume = resume
        self.random_state = random_state
        self.verbose = verbose
        self.task = task
        self.portfolio = portfolio
        self.ensemble_size = ensemble_size

    def _validate_params(self) -> None:
        """Check every parameter, and resolve names, before any work."""
        v.validate_params(type(self).__name__, self.get_params(deep=False), _RULES)
        Schedule(self.inner_iter, self.inner_iter_step, self.inner_iter_max)
        if self.method != "admm" and self.constraint_mode == "admm":
            raise InvalidParameterError(
                f"method={self.method!r} has no ADMM split, so constraint_mode='admm' does not "
                "apply: use 'penalty' or 'filter' (or 'auto')"
            )
        make_constraints(self.constraints)
        resolve_portfolio(self.portfolio, load_space(self.search_space), "classification")
        THETA_SOLVERS.create(self.theta_solver)
        Z_SOLVERS.create(self.z_solver)

    def fit(self, X: Any, y: Any, *, sensitive_features: Any = None) -> "ADMM":
        """Search the space on (X, y), then refit the best pipeline on all of it.

        ``sensitive_features`` (one group label per row) feeds fairness constraints that have no
        ``group_by`` column.
        """
        start = time.monotonic()  # the time budget covers set-up and worker start-up too
        self._validate_params()
        X = self._check_X(X, reset=True)
        y, task, target_type = _check_target(X, y, self._fixed_task or self.task,
                                             type(self).__name__)
        if sensitive_features is not None and len(sensitive_features) != len(y):
            raise DataError(f"sensitive_features has {len(sensitive_features)} rows but X has "
                            f"{len(y)}")
        y_search = y
        if task == "classification":  # the search sees label indices (XGBoost takes no others)
            self.classes_, y_search = np.unique(y, return_inverse=True)
        with _verbosity(self.verbose):
            space = load_space(self.search_space).for_task(task).for_data(len(y))
            outcome = run_search(X, y_search, SearchSettings.from_params(self.get_params(deep=False)),
                                 space=space, task=task, target_type=target_type,
                                 sensitive_features=sensitive_features, start_time=start)
            fitted = fitted_attributes(outcome, space)
            fitted.update(_refit_models(outcome, space, X, y, fitted, self.ensemble_size))
            for name, value in fitted.items():
                setattr(self, name, value)
        return self

    def _model(self) -> Any:
        """What predictions come from: the ensemble when one was built, else the best pipeline."""
        return self.best_pipeline_ if self.ensemble_ is None else self.ensemble_

    def _on_indices(self) -> bool:
        """Whether the model was fitted on label indices rather than the labels (see ``_refit``)."""
        classes = getattr(self._model(), "classes_", None)
        return (self.task_ == "classification" and classes is not None
                and not np.array_equal(classes, self.classes_))

    # ------------------------------------------------------------------ prediction
    def _check_X(self, X: Any, reset: bool = False) -> Any:
        """Validate X (shape, inf, feature names and count) and keep mixed columns as a frame."""
        if not reset:
            check_is_fitted(self)
        if hasattr(X, "iloc"):
            if X.shape[0] < (2 if reset else 1) or X.shape[1] < 1:
                raise DataError(f"X has shape {X.shape}; need at least 2 rows and 1 column")
            check_no_inf(X)
        else:
            X = check_array(X, dtype=None, ensure_all_finite="allow-nan", input_name="X",
                            ensure_min_samples=2 if reset else 1)
        validate_data(self, X, skip_check_array=True, reset=reset)
        return as_frame_if_mixed(X)

    def predict(self, X: Any) -> np.ndarray:
        """Predictions of ``ensemble_`` if there is one, else of ``best_pipeline_``."""
        X = self._check_X(X)
        predictions = self._model().predict(X)
        return self.classes_[predictions] if self._on_indices() else predictions

    @available_if(_pipeline_has("predict_proba"))
    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities (columns in the order of ``classes_``)."""
        X = self._check_X(X)
        return self._model().predict_proba(X)

    @available_if(_pipeline_has("predict_log_proba"))
    def predict_log_proba(self, X: Any) -> np.ndarray:
        X = self._check_X(X)
        return self._model().predict_log_proba(X)

    @available_if(_pipeline_has("decision_function"))
    def decision_function(self, X: Any) -> np.ndarray:
        X = self._check_X(X)
        return self._model().decision_function(X)

    def score(self, X: Any, y: Any) -> float:
        """Accuracy (classification) or R² (regression), as scikit-learn's mixins define it; the
        search metric is :meth:`metric_score`."""
        check_is_fitted(self)
        mixin = ClassifierMixin if self.task_ == "classification" else RegressorMixin
        return mixin.score(self, X, y)

    def metric_score(self, X: Any, y: Any) -> float:
        """The search metric on (X, y) as a score, ``offset − loss`` (e.g. AUROC for 1 − AUROC)."""
        X = self._check_X(X)
        labels = None
        if self._on_indices():
            y, labels = _label_indices(self.classes_, y), np.arange(len(self.classes_))
        elif self.task_ == "classification":
            labels = self.classes_
        target = ("continuous" if self.task_ == "regression"
                  else "binary" if len(self.classes_) == 2 else "multiclass")
        metric = get_metric(self.scoring, self.task_, target)
        return float(metric.offset - metric.loss(metric.make_scorer(labels), self._model(), X, y))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        tags.non_deterministic = self.time_budget is not None
        return tags


class ADMMClassifier(ClassifierMixin, ADMM):
    """ADMM pipeline search for classification (the task is fixed; see :class:`ADMM`)."""

    _fixed_task = "classification"


class ADMMRegressor(RegressorMixin, ADMM):
    """ADMM pipeline search for regression (the task is fixed; see :class:`ADMM`)."""

    _fixed_task = "regression"
