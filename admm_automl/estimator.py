"""The scikit-learn layer: the only module that knows X, y, splits and refitting.

``ADMM`` searches a pipeline space by the ADMM decomposition of seed 001 and refits the best
pipeline on all the data; ``ADMMClassifier`` and ``ADMMRegressor`` fix the task so that scikit-learn
knows the estimator type before ``fit``.
"""

from __future__ import annotations

import contextlib
import logging
import numbers
import warnings
from pathlib import Path
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

from .admm import CONSTRAINT_MODES, Bound, Schedule
from .constraints import make_constraints
from .evaluation import PipelineObjective, TrialContext, get_metric, make_executor, make_splits
from .exceptions import (
    ConstraintViolationWarning,
    DataError,
    EvaluationFailedWarning,
    InvalidParameterError,
)
from .history import Journal, records_to_frame
from .solvers import THETA_SOLVERS, Z_SOLVERS
from .space import load_space
from .space.space import import_class

logger = logging.getLogger("admm_automl")
DEFAULT_MAX_EVALS = 100


def _as_frame_if_mixed(X: Any) -> Any:
    """Keep DataFrames and numeric arrays; turn object arrays into a DataFrame with inferred types."""
    if hasattr(X, "iloc"):
        return X
    X = np.asarray(X) if not hasattr(X, "dtype") else X
    if X.dtype.kind == "O":
        import pandas as pd

        frame = pd.DataFrame(X).infer_objects()
        for col in frame.columns:  # numbers stored as objects become numeric columns
            converted = pd.to_numeric(frame[col], errors="coerce")
            if converted.notna().sum() == frame[col].notna().sum():
                frame[col] = converted
        return frame
    return X


def make_preprocessor(X: Any) -> Any:
    """Imputation of every column, plus one-hot encoding of non-numeric ones (always applied first).

    Columns are addressed by position, so the fitted pipeline accepts the same kind of input.
    """
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    numeric_imputer = SimpleImputer(strategy="median", keep_empty_features=True)
    if not hasattr(X, "iloc"):
        return numeric_imputer
    import pandas as pd

    numeric = [
        i for i, dtype in enumerate(X.dtypes)
        if pd.api.types.is_numeric_dtype(dtype) and not isinstance(dtype, pd.CategoricalDtype)
    ]
    other = [i for i in range(X.shape[1]) if i not in numeric]
    if not other:
        return numeric_imputer
    categorical = make_pipeline(
        SimpleImputer(strategy="most_frequent", keep_empty_features=True),
        OneHotEncoder(handle_unknown="ignore", sparse_output=False),
    )
    return ColumnTransformer(
        [("numeric", numeric_imputer, numeric), ("categorical", categorical, other)],
        verbose_feature_names_out=False,
    )


def _check_no_inf(X: Any) -> None:
    if hasattr(X, "iloc"):
        numeric = X.select_dtypes(include="number")
        bad = [c for c in numeric.columns if np.isinf(numeric[c].to_numpy(dtype=float)).any()]
        if bad:
            raise DataError(f"Input X contains infinity in column(s) {bad!r}; replace it with NaN "
                            "(which is imputed) or a finite value.")


@contextlib.contextmanager
def _verbosity(verbose: int):
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
            return hasattr(self.best_pipeline_, attr)
        try:
            last = load_space(self.search_space).modules[-1]
            task = self._fixed_task or (self.task if self.task != "auto" else None)
            return all(
                hasattr(import_class(a.class_path), attr)
                for a in last.choices
                if a.class_path is not None and (task is None or a.task in ("any", task))
            )
        except Exception:  # an invalid space is reported by fit
            return True

    return check


class ADMM(BaseEstimator):
    """AutoML pipeline search by ADMM (Liu et al., AAAI 2020), with pluggable sub-solvers.

    Parameters
    ----------
    search_space : str, path or PipelineSpace, default="paper_small"
        A built-in space name (see ``admm_automl.list_spaces()``), a YAML file or a space object.
    theta_solver : str, dict or solver, default="bo"
        θ-min solver: a registered name, ``{"name": ..., "params": {...}}`` or an instance
        (``admm_automl.list_theta_solvers()``).
    z_solver : str, dict or solver, default="cmab"
        z-min solver, likewise (``admm_automl.list_z_solvers()``). The defaults with the adaptive
        schedule are seed 001's AdADMM-F16(BO, Ba).
    method : {"admm", "jopt", "select"}, default="admm"
        ``"admm"``: the ADMM split (θ-min, δ-min, z-min). ``"jopt"``: the baseline without the
        split, one ``theta_solver`` over the joint space of all choices and hyperparameters
        (``z_solver`` unused). ``"select"``: algorithm selection only, ``z_solver`` with every
        hyperparameter at its default (``theta_solver`` unused; seed 000's experiment).
    max_evals : int, optional
        Number of pipeline evaluations (cache hits are free). With neither ``max_evals`` nor
        ``time_budget`` given, 100 evaluations.
    time_budget : float, optional
        Wall-clock seconds for the search, optimiser overhead included; the final refit comes after.
        A running evaluation is stopped when the budget ends. Time budgets are not reproducible.
    rho : float, default=1.0
        ADMM penalty ρ.
    inner_iter, inner_iter_step, inner_iter_max : int, default=16, 16, 128
        Evaluations per sub-problem call at ADMM iteration t: ``min(inner_iter + inner_iter_step·t,
        inner_iter_max)``. ``inner_iter_step=0`` is fixed-I ADMM; the default is AdADMM-F16.
    constraints : list, optional
        Black-box constraints (seed 001 §4): expressions ``"latency <= 2e-5"``, ``"fpr <= 0.1"``,
        ``"accuracy >= 0.9"``; mappings ``{"name": "disparate_impact", "threshold": 0.1,
        "group_by": "age", "bins": [20, 30, 40, 50, 60, 70]}``; callables
        ``fn(pipeline, X_valid, y_valid, groups) -> float`` (bounded by ``<= 0``); or constraint
        objects from :mod:`admm_automl.constraints`. The incumbent is the best *feasible*
        pipeline; if none is feasible the least violating one is refitted with a warning.
    constraint_mode : {"admm", "penalty", "filter"}, default="admm"
        ``"admm"``: slack variables and multipliers (Algorithm 2); ``"penalty"``: a fixed-weight
        penalty ``penalty_weight * Σ relative violation``; ``"filter"``: search unconstrained and
        pick the best feasible pipeline afterwards (the paper's UCST baseline).
    penalty_weight : float, default=1.0
        Weight of the ``"penalty"`` mode.
    scoring : str or callable, optional
        Loss to minimise: None (1 - AUROC for binary, log-loss for multiclass, RMSE for
        regression), a built-in name (``roc_auc``, ``accuracy``, ``log_loss``, ``rmse``, ``r2``, ...;
        bounded scores are used as 1 - score) or any scikit-learn scorer name or callable.
    cv : int, optional
        k-fold cross-validation; None uses one holdout split of ``validation_size``.
    validation_size : float, default=0.2
        Holdout fraction (stratified for classification); the split is fixed for the whole run.
    executor : {"auto", "serial", "process"}, default="auto"
        ``"process"`` runs trials in worker processes that a timeout or memory limit can stop;
        ``"auto"`` uses it when ``trial_timeout``, ``time_budget``, ``memory_limit`` or ``n_jobs > 1``
        needs it.
    n_jobs : int, default=1
        Worker processes.
    trial_timeout : float, optional
        Seconds one evaluation may take before it is stopped (status ``timeout``).
    memory_limit : int, optional
        Address-space limit per worker process in MiB (status ``memout`` when hit).
    output_dir : str or path, optional
        Where ``journal.jsonl`` (one record per evaluation, appended as it happens) is written.
        An existing journal there is read first and its evaluations are not repeated (resume).
    random_state : int, RandomState or None
        Seeds the splits, the solvers and the pipelines' own ``random_state``. The same seed, an
        evaluation budget and the serial executor give the same history.
    verbose : int, default=0
        1 logs every ADMM iteration, 2 every evaluation.
    task : {"auto", "classification", "regression"}, default="auto"
        Inferred from ``y`` when "auto".

    Attributes
    ----------
    best_pipeline_ : sklearn.pipeline.Pipeline
        The best configuration refitted on all of X, y (a plain scikit-learn object).
    best_params_ : dict
        Its configuration, as ``{"module": choice, "module__param": value}``.
    best_loss_, best_score_ : float
        Its validation loss and the corresponding score (``offset - loss``; higher is better).
    history_ : pandas.DataFrame
        One row per evaluation: pipeline, ``param:*`` columns, fidelity, loss, status, error, times.
    cv_results_ : dict of arrays
        scikit-learn style summary of the evaluations (``params``, ``mean_test_score``, ...).
    admm_trace_ : pandas.DataFrame
        One row per ADMM iteration: ρ, ‖θ̃d − δ‖, ‖λ‖, best loss, evaluations used, time.
    feasible_ : bool
        Whether ``best_pipeline_`` met every constraint on the validation data.
    constraints_ : list of BaseConstraint
        The parsed constraints (bound to the training data).
    best_eval_id_ : int
        The ``eval_id`` of the best evaluation in ``history_``.
    n_evals_, stop_reason_, task_, metric_, classes_, n_features_in_, feature_names_in_
    """

    def __init__(
        self,
        *,
        search_space: Any = "paper_small",
        theta_solver: Any = "bo",
        z_solver: Any = "cmab",
        method: str = "admm",
        max_evals: int | None = None,
        time_budget: float | None = None,
        rho: float = 1.0,
        inner_iter: int = 16,
        inner_iter_step: int = 16,
        inner_iter_max: int = 128,
        constraints: Any = None,
        constraint_mode: str = "admm",
        penalty_weight: float = 1.0,
        scoring: Any = None,
        cv: int | None = None,
        validation_size: float = 0.2,
        executor: str = "auto",
        n_jobs: int = 1,
        trial_timeout: float | None = None,
        memory_limit: int | None = None,
        output_dir: Any = None,
        random_state: Any = None,
        verbose: int = 0,
        task: str = "auto",
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
        self.random_state = random_state
        self.verbose = verbose
        self.task = task

    _fixed_task: str | None = None

    # ------------------------------------------------------------------ validation
    def _validate_params(self) -> None:
        def positive(name: str, value: Any, integral: bool, allow_none: bool = True) -> None:
            if value is None and allow_none:
                return
            kind = numbers.Integral if integral else numbers.Real
            if isinstance(value, bool) or not isinstance(value, kind) or not value > 0:
                what = "a positive integer" if integral else "a positive number"
                raise InvalidParameterError(
                    f"The {name!r} parameter of {type(self).__name__} must be {what}"
                    f"{' or None' if allow_none else ''}. Got {value!r} instead."
                )

        positive("max_evals", self.max_evals, True)
        positive("time_budget", self.time_budget, False)
        positive("rho", self.rho, False, allow_none=False)
        positive("inner_iter", self.inner_iter, True, allow_none=False)
        positive("inner_iter_max", self.inner_iter_max, True, allow_none=False)
        positive("n_jobs", self.n_jobs, True, allow_none=False)
        positive("trial_timeout", self.trial_timeout, False)
        positive("memory_limit", self.memory_limit, True)
        if self.cv is not None:
            positive("cv", self.cv, True)
            if self.cv < 2:
                raise InvalidParameterError(f"cv must be >= 2 folds or None, got {self.cv!r}")
        if not isinstance(self.inner_iter_step, numbers.Integral) or self.inner_iter_step < 0:
            raise InvalidParameterError(
                f"inner_iter_step must be an integer >= 0, got {self.inner_iter_step!r}"
            )
        Schedule(self.inner_iter, self.inner_iter_step, self.inner_iter_max)
        positive("penalty_weight", self.penalty_weight, False, allow_none=False)
        if self.constraint_mode not in CONSTRAINT_MODES:
            raise InvalidParameterError(
                f"constraint_mode must be one of {CONSTRAINT_MODES!r}, got {self.constraint_mode!r}"
            )
        make_constraints(self.constraints)
        if self.task not in ("auto", "classification", "regression"):
            raise InvalidParameterError(
                f"task must be 'auto', 'classification' or 'regression', got {self.task!r}"
            )
        if self.method not in ("admm", "jopt", "select"):
            raise InvalidParameterError(
                f"method must be 'admm', 'jopt' or 'select', got {self.method!r}"
            )
        # resolve names now so that an unknown one fails before any work
        load_space(self.search_space)
        THETA_SOLVERS.create(self.theta_solver)
        Z_SOLVERS.create(self.z_solver)

    def _validate_data(self, X: Any, y: Any) -> tuple[Any, np.ndarray, str, str]:
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y is None."
            )
        X = self._check_X(X, reset=True)
        y = check_array(y, ensure_2d=False, dtype=None, input_name="y", ensure_min_samples=0)
        y = column_or_1d(y, warn=True)
        check_consistent_length(X, y)
        task = self._fixed_task or self.task
        target_type = type_of_target(y, input_name="y")
        if task == "auto":
            task = "classification" if target_type in ("binary", "multiclass") else "regression"
        if task == "classification":
            check_classification_targets(y)
            self.classes_ = np.unique(y)
            if len(self.classes_) < 2:
                raise DataError(
                    f"y contains a single class ({self.classes_[0]!r}); classification needs at "
                    "least 2 classes"
                )
            target_type = "binary" if len(self.classes_) == 2 else "multiclass"
        else:
            try:
                y = y.astype(float)
            except (TypeError, ValueError):
                raise DataError(f"regression needs a numeric target, got dtype {y.dtype}") from None
            target_type = "continuous"
        return X, y, task, target_type

    # ------------------------------------------------------------------ fit
    def fit(self, X: Any, y: Any, *, sensitive_features: Any = None) -> "ADMM":
        """Search the space on (X, y), then refit the best pipeline on all of it.

        ``sensitive_features`` (one group label per row) feeds fairness constraints that have no
        ``group_by`` column.
        """
        self._validate_params()
        X, y, task, target_type = self._validate_data(X, y)
        if sensitive_features is not None and len(sensitive_features) != len(y):
            raise DataError(
                f"sensitive_features has {len(sensitive_features)} rows but X has {len(y)}"
            )
        with _verbosity(self.verbose):
            return self._fit(X, y, task, target_type, sensitive_features)

    def _seeds(self) -> tuple[np.random.SeedSequence, int, int]:
        rs = self.random_state
        if isinstance(rs, np.random.RandomState):
            entropy = int(rs.randint(np.iinfo(np.int32).max))
        elif rs is None or isinstance(rs, numbers.Integral):
            entropy = rs
        else:
            raise InvalidParameterError(f"random_state must be None, an int or a RandomState, got {rs!r}")
        root = np.random.SeedSequence(entropy)
        solvers, splits, models = root.spawn(3)
        return solvers, int(splits.generate_state(1)[0]), int(models.generate_state(1)[0] >> 1)

    def _fit(
        self, X: Any, y: np.ndarray, task: str, target_type: str, sensitive_features: Any
    ) -> "ADMM":
        import time

        start_time = time.monotonic()  # the time budget covers set-up and worker start-up too
        space = load_space(self.search_space).for_task(task)
        metric = get_metric(self.scoring, task, target_type)
        solver_seed, split_seed, model_seed = self._seeds()
        try:
            splits = make_splits(
                y, classification=task == "classification", cv=self.cv,
                validation_size=self.validation_size, seed=split_seed,
            )
        except ValueError as err:
            raise DataError(f"cannot make the validation split(s): {err}") from None
        ctx = TrialContext(
            space, X, y, splits, metric, make_preprocessor(X), model_seed,
            labels=self.classes_ if task == "classification" else None,
        )
        constraints = make_constraints(self.constraints)
        for constraint in constraints:  # errors in the data come here, before any training
            constraint.bind(X, y, groups=sensitive_features, splits=splits, task=task)
        ctx.measures = {c.key: c for c in constraints}
        self.constraints_ = constraints
        worst = metric.worst if metric.worst is not None else self._baseline_loss(ctx, task)
        max_evals = self.max_evals
        if max_evals is None and self.time_budget is None:
            max_evals = DEFAULT_MAX_EVALS
        executor = make_executor(
            self.executor, n_jobs=self.n_jobs, memory_limit_mb=self.memory_limit,
            needs_isolation=self.trial_timeout is not None or self.time_budget is not None,
        )
        if self.trial_timeout is not None and not executor.enforces_timeout:
            raise InvalidParameterError(
                "trial_timeout needs worker processes to stop a runaway fit: use "
                "executor='process' (or 'auto')"
            )
        journal_path = Path(self.output_dir) / "journal.jsonl" if self.output_dir else None
        previous = Journal.read(journal_path) if journal_path and journal_path.exists() else []
        objective = PipelineObjective(
            ctx, executor, Journal(journal_path), worst_loss=worst, trial_timeout=self.trial_timeout,
            start_time=start_time,
        )
        n_resumed = objective.preload(previous)
        if n_resumed:
            logger.info("resuming: %d earlier evaluations loaded from %s", n_resumed, journal_path)
        from .joint import OPTIMIZERS

        optimizer = OPTIMIZERS[self.method](
            space.encoding,
            objective,
            lambda: THETA_SOLVERS.create(self.theta_solver),
            lambda: Z_SOLVERS.create(self.z_solver),
            rho=self.rho,
            schedule=Schedule(self.inner_iter, self.inner_iter_step, self.inner_iter_max),
            max_evals=max_evals,
            time_budget=self.time_budget,
            seed=solver_seed,
            batch_size=self.n_jobs,
            n_train=len(splits[0].train),
            constraints=[Bound(c.key, c.threshold, c.sense) for c in constraints],
            constraint_mode=self.constraint_mode,
            penalty_weight=self.penalty_weight,
            start_time=start_time,
        )
        try:
            result = optimizer.run()
        finally:
            objective.close()
        self._set_results(space, metric, objective, result, task, optimizer)
        self._refit(space, ctx, X, y)
        return self

    @staticmethod
    def _baseline_loss(ctx: TrialContext, task: str) -> float:
        """Loss of a constant predictor: the failure value of an unbounded metric."""
        from sklearn.dummy import DummyClassifier, DummyRegressor
        from sklearn.pipeline import make_pipeline

        dummy = DummyClassifier(strategy="prior") if task == "classification" else DummyRegressor()
        scorer = ctx.metric.make_scorer(ctx.labels)
        losses = []
        for split in ctx.splits:
            from .evaluation.worker import take_rows

            model = make_pipeline(clone(ctx.preprocessor), dummy).fit(
                take_rows(ctx.X, split.train), ctx.y[split.train]
            )
            losses.append(ctx.metric.loss(scorer, model, take_rows(ctx.X, split.valid),
                                          ctx.y[split.valid]))
        return float(np.mean(losses))

    def _set_results(self, space, metric, objective, result, task, optimizer) -> None:
        import pandas as pd

        records = objective.journal.records
        self.history_ = self._with_constraint_columns(records_to_frame(records), records, optimizer)
        self.admm_trace_ = pd.DataFrame(result.trace)
        self.n_evals_ = result.n_evals
        self.stop_reason_ = result.stop_reason
        self.task_ = task
        self.metric_ = metric.name
        self.n_failed_ = objective.n_failed
        inc = result.incumbent
        if inc is None or not inc.observation.ok:
            errors = sorted({str(r.get("error")) for r in records if r.get("status") != "ok"})
            raise RuntimeError(
                f"All {len(records)} evaluated pipelines failed, so there is nothing to refit. "
                f"Errors: {errors[:5]!r}"
            )
        if objective.n_failed:
            warnings.warn(
                f"{objective.n_failed} of {len(records)} evaluated pipelines failed and were "
                "recorded with the worst loss; see history_['error'].",
                EvaluationFailedWarning,
                stacklevel=4,
            )
        self.feasible_ = optimizer.rank(inc.observation)[0] == 0
        if not self.feasible_:
            warnings.warn(
                f"No evaluated pipeline met every constraint ({', '.join(map(str, optimizer.constraints))}); "
                f"returning the least violating one (relative violation "
                f"{optimizer.violation(inc.observation):.3g}).",
                ConstraintViolationWarning,
                stacklevel=4,
            )
        self.best_eval_id_ = inc.observation.eval_id
        self.best_z_ = inc.z
        self.best_theta_ = space.encoding.project(inc.theta)
        self.best_params_ = space.decode(self.best_z_, self.best_theta_)
        self.best_loss_ = inc.observation.loss
        self.best_score_ = metric.offset - inc.observation.loss
        self.cv_results_ = self._cv_results(records, metric)

    @staticmethod
    def _with_constraint_columns(frame, records, optimizer):
        """Feasibility, violation and (ADMM mode) the slack each evaluation had under the μ in
        force when it was made."""
        if not optimizer.constraints or frame.empty:
            return frame
        from .admm import optimal_slack
        from .records import Observation, Status

        obs = [
            Observation(loss=r["loss"], status=Status(r["status"]),
                        constraints=r.get("constraints") or {})
            for r in records
        ]
        frame["violation"] = [optimizer.violation(o) if o.ok else np.nan for o in obs]
        frame["feasible"] = [optimizer.rank(o)[0] == 0 for o in obs]
        if optimizer.constraint_mode == "admm":
            names = [b.name for b in optimizer.constraints]
            mu = frame[[f"mu:{n}" for n in names]].to_numpy(dtype=float)
            g = np.array([optimizer.g(o) for o in obs])
            slack = optimal_slack(g, mu, optimizer.rho)
            for k, n in enumerate(names):
                frame[f"slack:{n}"] = slack[:, k]
        return frame

    @staticmethod
    def _cv_results(records, metric) -> dict[str, Any]:
        losses = np.array([r["loss"] for r in records], dtype=float)
        scores = metric.offset - losses
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

    def _refit(self, space, ctx, X, y) -> None:
        import time

        pipeline = space.to_pipeline(
            self.best_z_, self.best_theta_, preprocessor=clone(ctx.preprocessor),
            random_state=ctx.random_state,
        )
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pipeline.fit(X, y)
        self.refit_time_ = time.perf_counter() - start
        self.best_pipeline_ = pipeline

    # ------------------------------------------------------------------ prediction
    def _check_X(self, X: Any, reset: bool = False) -> Any:
        """Validate X (shape, inf, feature names and count) and keep mixed columns as a frame."""
        if not reset:
            check_is_fitted(self)
        if hasattr(X, "iloc"):
            if X.shape[0] < (2 if reset else 1) or X.shape[1] < 1:
                raise DataError(f"X has shape {X.shape}; need at least 2 rows and 1 column")
            _check_no_inf(X)
        else:
            X = check_array(
                X, dtype=None, ensure_all_finite="allow-nan", input_name="X",
                ensure_min_samples=2 if reset else 1,
            )
        validate_data(self, X, skip_check_array=True, reset=reset)
        return _as_frame_if_mixed(X)

    def predict(self, X: Any) -> np.ndarray:
        """Predictions of ``best_pipeline_``."""
        X = self._check_X(X)
        return self.best_pipeline_.predict(X)

    @available_if(_pipeline_has("predict_proba"))
    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities of ``best_pipeline_``."""
        X = self._check_X(X)
        return self.best_pipeline_.predict_proba(X)

    @available_if(_pipeline_has("predict_log_proba"))
    def predict_log_proba(self, X: Any) -> np.ndarray:
        X = self._check_X(X)
        return self.best_pipeline_.predict_log_proba(X)

    @available_if(_pipeline_has("decision_function"))
    def decision_function(self, X: Any) -> np.ndarray:
        X = self._check_X(X)
        return self.best_pipeline_.decision_function(X)

    def score(self, X: Any, y: Any) -> float:
        """Accuracy (classification) or R² (regression), as scikit-learn's mixins define ``score``.

        The search metric is :meth:`metric_score`.
        """
        check_is_fitted(self)
        if self.task_ == "classification":
            return ClassifierMixin.score(self, X, y)
        return RegressorMixin.score(self, X, y)

    def metric_score(self, X: Any, y: Any) -> float:
        """The search metric on (X, y) as a score, ``offset - loss`` (e.g. AUROC for 1 - AUROC)."""
        X = self._check_X(X)
        metric = get_metric(self.scoring, self.task_, self._target_type())
        scorer = metric.make_scorer(getattr(self, "classes_", None))
        return float(metric.offset - metric.loss(scorer, self.best_pipeline_, X, y))

    def _target_type(self) -> str:
        if self.task_ == "regression":
            return "continuous"
        return "binary" if len(self.classes_) == 2 else "multiclass"

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
