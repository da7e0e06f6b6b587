"""The scikit-learn face of the package: parameters, ``fit`` as a short story, refit, prediction.

``ADMM`` searches a pipeline space by the ADMM decomposition of Liu et al. (AAAI 2020) and refits
the best pipeline on all the data; ``ADMMClassifier`` and ``ADMMRegressor`` fix the task so that
scikit-learn knows the estimator type before ``fit``. The search itself is set up by
:func:`admm_automl.run.setup.run_search`.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from .evaluation.executors import refuse_nested_search
from .exceptions import ModelVersionWarning, RunDirectoryWarning
from .methods.driver import tell
from .reporting import plots
from .reporting.progress import watching
from .reporting.report import leaderboard, write_report
from .reporting.rundir import as_method, run_summary, write_run
from .run import params
from .clock import Deadline
from .run.deadline import warn_overrun
from .run.inputs import check_fit_X, check_sensitive_features, check_target, check_X
from .run.lock import run_lock
from .final.refit import refit_models
from .final.results import fitted_attributes, metric_score
from .run.setup import run_search
from .run.spaces import space_has, task_space
from .run.task import display_metric


def _pipeline_has(attr: str):
    """``available_if`` check: the refitted pipeline has ``attr``; before ``fit``, every candidate
    of the space's last module has it (so it is sure to exist after ``fit``)."""

    def check(self) -> bool:
        if hasattr(self, "best_pipeline_"):
            return hasattr(self._model(), attr)
        task = self._fixed_task or (self.task if self.task != "auto" else None)
        return space_has(self.search_space, task, attr)

    return check


class ADMM(BaseEstimator):
    """AutoML pipeline search by ADMM (Liu et al., AAAI 2020), with pluggable sub-solvers.

    Parameters
    ----------
    search_space : str, path or PipelineSpace, default="default"
        A built-in space name (``admm_automl.list_spaces()``), a YAML file or a space object:
        ``"default"`` (HistGradientBoosting, LightGBM, XGBoost, forests, linear models, k-NN, an
        RBF SVM; see the README), or ``paper_small`` / ``paper_large`` / ``blds`` to reproduce
        the papers. Algorithms whose ``max_rows`` is below the number of rows are left out.
    theta_solver, z_solver : str, dict or solver, default="bo", "cmab"
        The θ-step and z-step solvers: a registered name, ``{"name": ..., "params": {...}}`` or an
        instance (``list_theta_solvers()``, ``list_z_solvers()``). With the adaptive schedule the
        defaults are the paper's AdADMM-F16(BO, Ba).
    method : {"admm", "jopt", "select", "flash"} or dict, default="admm"
        The ADMM split; ``"jopt"``: one ``theta_solver`` over the joint space of all choices and
        hyperparameters; ``"select"``: ``z_solver`` with every hyperparameter at its default;
        ``"flash"``: FLASH (Zhang et al., KDD 2016) — a D-optimal design of pipelines, EIPS with
        a linear path model, then ``theta_solver`` on the pruned space
        (:class:`admm_automl.methods.flash.FlashOptimizer`). Like a solver, a method may be given as
        ``{"name": "flash", "params": {"top_r": 5, ...}}``; only ``"flash"`` has params of its own
        (:class:`admm_automl.methods.flash.FlashSettings`).
    max_evals : int, optional
        New pipeline evaluations (cache hits are free; a resumed run's count). With neither
        ``max_evals`` nor ``time_budget``, 100.
    time_budget : float, optional
        Wall-clock seconds of ``fit``: the search, overhead included, and the refit after it. The
        search keeps back the estimated refit time of its best pipeline (with the ensemble on,
        also of its next four best, at most a fifth of the budget), and the ensemble takes only
        members whose refits fit in what is left. With worker processes an evaluation running
        at the end of the search is stopped. Not reproducible.
    rho : float, default=1.0
        ADMM penalty ρ.
    inner_iter : "auto" or int, default="auto"
        New evaluations per sub-problem at iteration t: ``min(inner_iter + inner_iter_step·t,
        inner_iter_max)`` (Liu et al.'s adaptive ADMM); ``inner_iter_step=0`` is fixed-I ADMM.
        ``"auto"``: 16, and no call more than a quarter of the evaluations the budget has left
        (under a time budget, estimated from the seconds per evaluation so far), so that the
        z-solver decides from the first evaluations of any budget. Never fewer than the workers
        (``n_jobs``, or a Dask cluster's threads): a smaller step would leave some idle.
    inner_iter_step, inner_iter_max : int, default=16, 128
        The adaptive step F and the cap of the schedule.
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
    fairness_mitigation : "auto" or bool, default="auto"
        With a group-fairness constraint on a quantity fairlearn's mitigations equalise
        (demographic parity, equalized odds, equal opportunity; ``disparate_impact`` of a
        selection, true or false positive rate) whose groups are columns of X (``group_by``),
        the space gets a last module ``mitigation``: none, fairlearn's ``ThresholdOptimizer``
        or its ``ExponentiatedGradient`` reduction around the pipeline
        (:mod:`admm_automl.constraints.mitigation`), so that the search can meet a constraint
        no plain learner meets. Where the groups are given as ``fit(...,
        sensitive_features=)`` instead, the module holds none and the reduction only: the
        threshold optimizer would need the groups again at every prediction. ``"auto"`` adds it where it applies (not with a θ-solver that
        chooses training lengths, such as ``"bapi"``: a wrapped learner cannot be trained
        further); True also, and raises where it does not; False never.
    scoring : str or callable, optional
        Loss: None (1 − AUROC binary, log-loss multiclass, RMSE regression), a built-in name
        (bounded scores are used as 1 − score), a scikit-learn scorer name or a callable.
    cv : int, "auto", "holdout" or None, default="auto"
        k-fold cross-validation; ``"holdout"`` or None (the same): one holdout split of
        ``validation_size`` (stratified for classification), fixed for the run; ``"auto"``: 5 folds below 5000 rows, and with a
        ``time_budget`` also while rows × features ≤ 2500 × the budget in seconds (below 100,000
        rows), else a holdout (:func:`admm_automl.evaluation.splits.resolve_cv`); below 5000
        rows the 5 folds are repeated on new shuffles (up to 3 times) while rows × features ×
        repeats ≤ 500 × the budget (:func:`admm_automl.evaluation.splits.resolve_repeats`).
    validation_size : float, default=0.2
    executor : {"auto", "serial", "process", "dask"}, default="auto"
        Worker processes (which a timeout or memory limit can stop) or this process; ``"auto"``
        uses workers when ``trial_timeout``, ``time_budget``, ``memory_limit`` or ``n_jobs > 1``
        needs them. ``"dask"`` runs the trials on a Dask cluster (``pip install
        'admm-automl[dask]'``): the one at ``dask_address``, else the current Dask client (a
        ``distributed.Client`` created before ``fit``), else a local cluster of ``n_jobs`` worker
        processes on 127.0.0.1, started and closed by ``fit``. Timeouts, memory limit and failure
        capture are those of the process pool; a trial whose Dask worker dies is run again
        elsewhere (up to Dask's ``allowed-failures``), then recorded as failed.
    n_jobs : int, default=-1
        Trials run at once (worker processes, or the workers of a local Dask cluster); as in
        scikit-learn, -1 (the default) is one per core of those this process may use (its CPU
        affinity and container quota, by joblib's count), -2 all but one, ...: FLAML's and
        AutoGluon's defaults use every core too. Each trial runs on one core (BLAS and OpenMP
        at one thread). With one worker a seed fixes the history; with several, trials are
        asynchronous (below) and the order they end in decides the history, so pass
        ``n_jobs=1`` (or ``asynchronous=False``) for a run a seed repeats exactly. On a Dask
        cluster given by address or client, as many as its workers have threads.
    dask_address : str, optional
        Address of a Dask scheduler, e.g. ``"tcp://10.0.0.5:8786"`` (needs ``executor="dask"``).
    asynchronous : bool, default=True
        With several workers, hand a worker the next trial as soon as it is free instead of
        evaluating in batches of ``n_jobs`` trials that wait for their slowest one: each
        sub-solver keeps up to ``n_jobs`` suggestions in flight and learns each result as its
        trial ends (pending suggestions are never proposed again; ``bo`` treats them by its
        constant liar, ``cmab`` counts them as pulls). ADMM's steps overlap at their ends: a step
        hands idle workers to the next once all its trials are submitted and at most half are
        still running; those are recorded when they end (:mod:`admm_automl.methods.admm`). With
        one worker the history is the same. The order in which trials end decides what each
        ask knows, so with several workers a seed no longer fixes the history; ``False``
        (batches) gives a reproducible parallel run at the cost of idle workers: simulated on
        16 and 64 workers, asynchronous trials kept 92 % and 35 % of them busy against 42 % and
        26 % in batches, at an equal or lower best loss (``experiments/scale.py``).
    trial_timeout : float, optional
        Seconds one evaluation may take (status ``timeout``). None with a ``time_budget``: a
        quarter of the time left, at least a tenth of the budget; from 10 000 training rows a
        pipeline is first fitted on a tenth of them (:mod:`admm_automl.evaluation.objective`).
    shrink_to_fit : bool or "auto", default="auto"
        Size a trial to the time limit it runs under before it starts, where its learner's
        training length is tunable and it does not stop early (the default space's random
        forests and extra trees): its first split's pipeline is fitted on an eighth of its rows,
        and when that fit, scaled to the whole trial, passes half of the seconds the limit
        leaves, the trial runs at the trees predicted to take a fifth of them (recorded as its
        ``iterations``, which the refit trains, with the configured number as ``shrunk_from`` in
        ``history_``); one whose fewest trees would not fit is not started (status
        ``timeout``). Off: such a trial runs as configured and is stopped between its folds
        once they project past its limit (:mod:`admm_automl.evaluation.shrink`). ``"auto"``: on
        from 3 000 training rows, off below, where a run of many cheap trials picked noisier
        models in the campaigns that decided it (``experiments/README.md``).
    boost_to_fit : bool or "auto", default="auto"
        Stop a boosted learner's rounds (LightGBM, XGBoost, CatBoost) at its fold's share of the
        time limit its trial runs under — 80 % of the seconds the limit leaves, split evenly
        over the folds not fitted yet — keeping the best round so far, as AutoGluon stops its
        boosted models at their time limit; the trial then ends inside its limit with a model
        (its folds so stopped in ``history_["boxed"]``, its rounds as always in
        ``history_["rounds"]``, which the refit trains). Off: such a trial is stopped between
        its folds once they project past its limit, with no model. Only under a time limit
        (a ``time_budget`` or ``trial_timeout``). ``"auto"``: on from 3 000 training rows, as
        ``shrink_to_fit``.
    memory_limit : int, optional
        Address-space limit per worker process in MiB (status ``memout``).
    cache_size : float, default=256
        MiB per worker process of kept things, in one pool, least recently used out first:
        fitted pipeline prefixes (preprocessing, scaler, transformer, ...) reused by later
        pipelines with the same prefix, with identical results (Zhang et al., KDD 2016), and
        partly trained iterative learners that a longer training continues; at most a quarter of
        ``memory_limit``; 0 turns both off. ``prefix_cache_`` and ``history_["cache:*"]`` say
        what the prefixes saved.
    output_dir : str or path, optional
        The run directory: ``journal.jsonl`` is appended, one record per evaluation as it
        happens; at the end of ``fit`` the trace, the summary, the configuration and the
        refitted pipeline are written beside it (:mod:`admm_automl.reporting.rundir`), which
        ``admm-automl report DIR`` reads.
    resume : bool, default=True
        A journal in ``output_dir`` from the same data, task, metric, splits, seed and space is
        resumed: its evaluations are replayed, not repeated. One from another run is refused with
        an error naming the difference; ``resume=False`` keeps it as ``journal-1.jsonl`` and
        starts afresh.
    random_state : int, RandomState or None
        Seeds the splits, the solvers and the pipelines' ``random_state``. Same seed, evaluation
        budget and serial executor give the same history.
    verbose : int, default=0
        1 shows a live progress display (in a terminal or a notebook) and logs every iteration
        to standard error; 2 also logs every evaluation.
    progress : bool, optional
        The progress display: None follows ``verbose``; True shows it even when standard error
        is not a terminal; False never shows it (:mod:`admm_automl.reporting.progress`).
    task : {"auto", "classification", "regression"}, default="auto"
        "auto": text labels, two values, or whole numbers with few distinct values (at most 20,
        or at most 5 % of the rows, 10 % below 1000 rows) are classes; anything else is a
        regression target (:func:`admm_automl.run.inputs.infer_task`).
    portfolio : "auto", None, path or list of dict, default="auto"
        Configurations the ADMM method evaluates after the initial pipeline, starting from the
        best: ``"auto"`` is the portfolio shipped for a built-in space, None none.
    ensemble_size : int, default=16
        Steps of greedy ensemble selection (Caruana et al. 2004; 0 is off): ``ensemble_``, used
        when it beats the best pipeline on validation data and meets the constraints. Its
        candidates are the best 32 evaluations and the best of each learner; its members are
        refitted after the search, like ``best_pipeline_`` (under a ``time_budget``, only as many
        as fit in it).
    stacking : bool, default=True
        Also try a stack: a second layer (logistic regression, or non-negative least squares for
        a regression) fitted on the out-of-fold predictions the search kept of the ensemble's
        members and of each other learner's best (stacked generalisation, Wolpert 1992;
        AutoGluon's second layer), used instead of the weighted average when its own
        out-of-fold loss is lower (:mod:`admm_automl.final.stacking`). Its members are refitted
        (or bagged) like the ensemble's, within the time budget.
    ensemble_check : {"in_sample", "held_out"}, default="in_sample"
        How an ensemble is judged against the best pipeline: ``"in_sample"`` by the pooled
        validation loss its selection minimised; ``"held_out"`` also on validation rows it was
        not chosen on — the rows cut in two halves, the selection and the single best chosen on
        one and scored on the other, both ways — so that on small data an ensemble whose gain
        is its own fit to the validation rows is not used
        (:func:`admm_automl.final.ensemble.held_out_losses`).
    ensemble_bags : int, default=1
        Above 1, the weighted ensemble is chosen by *bagged* ensemble selection (Caruana et al.
        2004): that many greedy selections, each over a random half of the candidates, their
        weights averaged — a selection less fitted to the validation rows it climbs on, whose
        weights lean toward the simple average of the good candidates
        (:func:`admm_automl.final.ensemble.ensemble_selection`).
    bagging : bool, default=True
        With cross-validation and no constraints, the ensemble's members are bags: the fold
        models their evaluation fitted, kept from the search and averaged (AutoGluon's bagged
        models), which needs no refit and predicts as the ensemble was chosen on; False (or a
        member whose fold models were not kept, such as one from an earlier session of a
        resumed run) refits the member on all rows (:mod:`admm_automl.final.bagging`).
        ``best_pipeline_`` is always refitted.
    callbacks : list of callable, default=None
        Called in this process after each new evaluation, as ``callback(record, best)``: the
        evaluation's record (a dict, a row of ``history_``: ``eval_id``, ``pipeline``,
        ``config``, ``loss``, ``status``, ``fit_time``, ...) and the best record so far (None
        before one). A callback that returns True stops the search (``stop_reason_ ==
        "callback"``); the best pipeline found is refitted as after any other stop. An
        exception in a callback ends ``fit`` with it; the journal keeps what was evaluated.
        Not written to the run's configuration (a file names no code to run).

    Attributes
    ----------
    ensemble_, ensemble_weights_, ensemble_loss_ : estimator, dict, float
        The refitted ensemble ``predict`` uses (None if none): a ``VotingClassifier`` /
        ``VotingRegressor`` of weighted members, or a ``StackedClassifier`` /
        ``StackedRegressor`` (:mod:`admm_automl.final.stacking`) whose second layer combines its
        members; the members' weights by ``eval_id`` (1 each in a stack: its second layer's
        coefficients, ``ensemble_.final_estimator_``, combine them); its validation loss (of a
        stack, its second layer's out-of-fold loss).
    ensemble_kind_ : {"weighted", "stack"} or None
        Which of the two ``ensemble_`` is.
    ensemble_constraints_ : dict
        Each constraint's validation value measured on the ensemble itself (its latency is the
        ensemble's ``predict``, its size the ensemble's), by key; empty without an ensemble or
        constraints. An ensemble is kept only if these meet every constraint.
    best_pipeline_ : sklearn.pipeline.Pipeline
        The best configuration refitted on all of X, y (a plain scikit-learn object that
        predicts the labels); a learner that refuses the labels (XGBoost takes only 0..K-1) is
        its last step wrapped in :class:`~admm_automl.run.inputs.LabelEncodedClassifier`.
    best_params_ : dict
        Its configuration, ``{"module": choice, "module__param": value}``.
    best_iterations_ : int or None
        The training length it was evaluated at, when the search chose one (``theta_solver="bapi"``
        on learners that declare ``iterations``) or its trial was shrunk to fit its time limit
        (``shrink_to_fit``); it is in ``best_params_`` and the refit uses it.
    best_rounds_ : int or None
        The boosting rounds its evaluation kept by early stopping on the validation rows (the
        mean over the folds, rounded), when its learner declares ``stopping`` (the default
        space's HistGradientBoosting, LightGBM and XGBoost); ``best_params_`` holds the searched
        cap, the refit trains this many rounds.
    best_loss_, best_score_ : float
        Its validation loss and score (``offset − loss``; higher is better).
    history_ : pandas.DataFrame
        One row per evaluation of the run (resumed ones included), as in the journal.
    cv_results_ : dict of arrays
        scikit-learn style summary of the evaluations.
    admm_trace_ : pandas.DataFrame
        One row per iteration: best loss, evaluations, time; for ADMM ρ, ‖θ̃d − δ‖, ‖λ‖, u, μ.
    feasible_ : bool
        Whether the model ``predict`` uses met every constraint on the validation data
        (``best_pipeline_``'s evaluation, or ``ensemble_constraints_``) and, refitted, those
        measured on the model itself (``deployed_constraints_``).
    deployed_constraints_ : dict
        The values of the constraints measured on the fitted object itself (model size,
        latency), by key, read on the model ``predict`` uses after the refit on all rows; empty
        without such constraints. A refit can differ from the fold models the search measured
        (a quantile transformer grows with the rows): when the best pipeline misses one
        refitted, the next pipelines that met every constraint in the search are refitted
        until one meets them (:mod:`admm_automl.final.refit`), so ``best_*`` then describe that
        one.
    constraint_mode_ : str
        How the search treated the constraints (``"auto"`` resolved).
    constraints_ : list of BaseConstraint
        The parsed constraints, bound to the training data.
    n_failed_, n_timeouts_ : int
        Evaluations that failed (raised, ran out of memory, scored NaN), and those stopped at
        their own time limit (the per-trial timeout doing its job: not counted as failed).
    stop_reason_ : str
        Why the search ended: ``"max_evals"``, ``"time_budget"``, ``"exhausted"`` (no new
        configuration left), ``"callback"``, or ``"no_workers"`` (no worker process was left to
        run a trial: the workers died over and over and none could start).
    best_eval_id_, n_evals_, prefix_cache_, task_, metric_, classes_, n_features_in_,
    feature_names_in_
    """

    _fixed_task: str | None = None

    def __init__(
        self, *, search_space: Any = "default", theta_solver: Any = "bo",
        z_solver: Any = "cmab", method: str = "admm", max_evals: int | None = None,
        time_budget: float | None = None, rho: float = 1.0, inner_iter: int | str = "auto",
        inner_iter_step: int = 16, inner_iter_max: int = 128, constraints: Any = None,
        constraint_mode: str = "auto", penalty_weight: float = 1.0,
        fairness_mitigation: Any = "auto", scoring: Any = None,
        cv: Any = "auto", validation_size: float = 0.2, executor: str = "auto",
        n_jobs: int = -1, dask_address: str | None = None, asynchronous: bool = True,
        trial_timeout: float | None = None, shrink_to_fit: bool | str = "auto",
        boost_to_fit: bool | str = "auto",
        memory_limit: int | None = None, cache_size: float = 256.0, output_dir: Any = None,
        resume: bool = True,
        random_state: Any = None, verbose: int = 0, progress: bool | None = None,
        task: str = "auto", portfolio: Any = "auto", ensemble_size: int = 16,
        stacking: bool = True, ensemble_check: str = "in_sample", ensemble_bags: int = 1,
        bagging: bool = True, callbacks: Any = None,
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
        self.fairness_mitigation = fairness_mitigation
        self.scoring = scoring
        self.cv = cv
        self.validation_size = validation_size
        self.executor = executor
        self.n_jobs = n_jobs
        self.dask_address = dask_address
        self.asynchronous = asynchronous
        self.trial_timeout = trial_timeout
        self.shrink_to_fit = shrink_to_fit
        self.boost_to_fit = boost_to_fit
        self.memory_limit = memory_limit
        self.cache_size = cache_size
        self.output_dir = output_dir
        self.resume = resume
        self.random_state = random_state
        self.verbose = verbose
        self.progress = progress
        self.task = task
        self.portfolio = portfolio
        self.ensemble_size = ensemble_size
        self.stacking = stacking
        self.ensemble_check = ensemble_check
        self.ensemble_bags = ensemble_bags
        self.bagging = bagging
        self.callbacks = callbacks

    def _validate_params(self) -> None:
        """Check every parameter, and resolve names, before any work."""
        params.check(type(self).__name__, self.get_params(deep=False))

    def fit(self, X: Any, y: Any, *, sensitive_features: Any = None) -> "ADMM":
        """Search the space on (X, y), then refit the best pipeline on all of it.

        ``sensitive_features`` (one group label per row, or one column per sensitive feature
        for their intersection), as fairlearn takes them, are the groups of the fairness
        constraints that have no ``group_by`` column (and what a callable constraint is given).
        The search then also tries fairlearn's ``ExponentiatedGradient`` reduction around its
        pipelines (``fairness_mitigation``), whose fitted mixture predicts from X alone, so
        ``predict`` takes no groups. The threshold optimizer is searched only where the groups
        are columns of X (``group_by``): its thresholds are per group, so every prediction
        would need its row's group.
        """
        deadline = Deadline(self.time_budget)  # it covers set-up and worker start-up too
        self._validate_params()
        X = check_fit_X(self, X)
        y, task, target_type = check_target(X, y, self._fixed_task or self.task,
                                            type(self).__name__)
        check_sensitive_features(sensitive_features, len(y), self.constraints)
        y_search = y
        if task == "classification":  # the search sees label indices (XGBoost takes no others)
            self.classes_, y_search = np.unique(y, return_inverse=True)
        metric = display_metric(self.scoring, task, target_type)
        refuse_nested_search()  # before the output directory is touched
        with run_lock(self.output_dir):  # one writer, from the journal to the model files
            with watching(self.verbose, self.progress, metric) as listeners:
                tell(listeners, stage="preparing the data and the search space")
                space = task_space(self.search_space, task, len(y), self.constraints,
                                   self.fairness_mitigation, self.theta_solver,
                                   sensitive_features is not None)
                settings = params.settings_from(self.get_params(deep=False))
                outcome = run_search(X, y_search, settings, space=space, task=task,
                                     target_type=target_type,
                                     sensitive_features=sensitive_features,
                                     deadline=deadline, listeners=listeners)
                search_end = deadline.elapsed()
                tell(listeners, stage="refitting the best pipeline on all rows"
                     + (" and the ensemble" if self.ensemble_size else ""))
                try:
                    fitted = fitted_attributes(outcome, space)
                    fitted.update(refit_models(outcome, space, X, y, fitted, self.ensemble_size,
                                               deadline, self.stacking, self.ensemble_check,
                                               self.ensemble_bags))
                finally:
                    outcome.close()  # the kept fold models, now in the ensemble or not needed
            warn_overrun(self.time_budget, outcome.executor, search_end, deadline.elapsed(),
                         outcome.callback_seconds)
            for name, value in fitted.items():
                setattr(self, name, value)
            if self.output_dir is not None:
                try:
                    write_run(self, self.output_dir)
                except OSError as err:  # a full disk must not lose the fitted model
                    warnings.warn(
                        f"the run directory could not be written at the end of fit ({err}); the "
                        "fitted model is kept in memory: save it elsewhere (e.g. pickle it to "
                        "another disk). The journal of the search is complete.",
                        RunDirectoryWarning, stacklevel=2)
        return self

    # ------------------------------------------------------------------ prediction
    def _check_X(self, X: Any) -> Any:
        return check_X(self, X)

    def _model(self) -> Any:
        """What predictions come from: the ensemble when one was built, else the best pipeline."""
        return self.best_pipeline_ if self.ensemble_ is None else self.ensemble_

    def _on_indices(self) -> bool:
        """Whether the model was fitted on label indices rather than the labels."""
        classes = getattr(self._model(), "classes_", None)
        return (self.task_ == "classification" and classes is not None
                and not np.array_equal(classes, self.classes_))

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
        search metric is :meth:`metric_score`. Not the search metric, as ``GridSearchCV.score``
        would give: scikit-learn's estimator checks require a regressor's ``score`` to be R²
        (``check_regressors_train`` asks for more than 0.5), and tools that call ``score`` read
        it so; ``cross_val_score(model, X, y, scoring=...)`` scores any metric."""
        check_is_fitted(self)
        mixin = ClassifierMixin if self.task_ == "classification" else RegressorMixin
        return mixin.score(self, X, y)

    def metric_score(self, X: Any, y: Any) -> float:
        """The search metric on (X, y) as a score, ``offset − loss`` (e.g. AUROC for 1 − AUROC)."""
        X = self._check_X(X)
        return metric_score(self._model(), X, y, scoring=self.scoring, task=self.task_,
                            classes=getattr(self, "classes_", None),
                            on_indices=self._on_indices())

    def feature_importance(self, X: Any, y: Any, *, n_repeats: int = 5,
                           random_state: Any = None) -> Any:
        """Permutation importance of each input column for the model ``predict`` uses (the
        ensemble when there is one), on data you pass — held-out data gives the honest reading:
        how much the search metric's score (:meth:`metric_score`) drops when the column's values
        are shuffled, mean and standard deviation over ``n_repeats`` shuffles, most important
        first. scikit-learn's :func:`~sklearn.inspection.permutation_importance` (AutoGluon's
        ``feature_importance(data)`` measures the same); it refits nothing.

        Returns
        -------
        pandas.DataFrame
            Columns ``feature``, ``importance`` and ``std``, one row per input column.
        """
        import pandas as pd
        from sklearn.inspection import permutation_importance

        check_is_fitted(self)
        result = permutation_importance(
            self, X, y, scoring=lambda model, X_, y_: model.metric_score(X_, y_),
            n_repeats=n_repeats, random_state=random_state)
        names = getattr(self, "feature_names_in_", None)
        if names is None:
            names = [f"x{i}" for i in range(self.n_features_in_)]
        table = pd.DataFrame({"feature": list(names), "importance": result.importances_mean,
                              "std": result.importances_std})
        return table.sort_values("importance", ascending=False, ignore_index=True)

    # ------------------------------------------------------------------ report and figures
    report = as_method(write_report)
    leaderboard = as_method(leaderboard)
    summary = as_method(run_summary)
    plot_convergence = as_method(plots.plot_convergence)
    plot_algorithms = as_method(plots.plot_algorithms)
    plot_constraints = as_method(plots.plot_constraints)
    plot_multipliers = as_method(plots.plot_multipliers)
    plot_residuals = as_method(plots.plot_residuals)

    def __getstate__(self) -> dict[str, Any]:
        """The pickled state, with the package version that fitted it (scikit-learn records
        its own the same way), so that loading it elsewhere can say when versions differ."""
        from . import __version__

        return {**super().__getstate__(), "_admm_automl_version": __version__}

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Restore a pickled estimator, with a :class:`ModelVersionWarning` when another
        version of the package pickled it (one without the record: before 0.1.0)."""
        from . import __version__

        state = dict(state)
        pickled = state.pop("_admm_automl_version", "unknown (before 0.1.0)")
        if pickled != __version__:
            warnings.warn(
                f"This {type(self).__name__} was fitted and saved by admm-automl {pickled} and "
                f"is loaded by {__version__}: it may predict differently or fail. Fit it again "
                f"with {__version__}, or load it with {pickled}.", ModelVersionWarning,
                stacklevel=2)
        super().__setstate__(state)

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
