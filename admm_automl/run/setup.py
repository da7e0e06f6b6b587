"""The search as the estimator runs it, set up from the run's other parts: its seeds
(:mod:`.seeds`), its task (:mod:`.task`), its run header (:mod:`.header`), its executor
(:mod:`.executor`) and its time policy (:mod:`.deadline`).

* :func:`open_objective` — executor + journal + cached objective (the benchmark runner and the
  experiment scripts open theirs with it too).
* :func:`run_search` — one search, as the estimator runs it; its
  :class:`~admm_automl.final.outcome.SearchOutcome` carries the evaluations typed.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from typing import Any, Mapping, Sequence

import numpy as np

from ..evaluation.executors import refuse_nested_search
from ..evaluation.kept import kept_budget_mb
from ..evaluation.objective import PipelineObjective
from ..evaluation.policy import TrialPolicy
from ..evaluation.shrink import SHRINK_MIN_ROWS, resolve_auto
from ..evaluation.splits import resolve_cv, resolve_repeats
from ..exceptions import InvalidParameterError, ResumeError
from ..final.library import ENSEMBLE_POOL, PredictionLibrary
from ..final.outcome import Point, SearchOutcome, Task, evaluations_of
from ..journal import Journal
from ..methods.driver import RunListener, Schedule, tell
from ..methods.registry import get_method, make_optimizer
from ..space.space import PipelineSpace
from .deadline import Deadline, check_time_budget, refit_reserve, trial_policy
from .executor import make_executor
from .header import run_header
from .lock import run_directory
from .params import SearchSettings
from .seeds import derive_seeds
from .task import prepare_task

logger = logging.getLogger(__name__)


def open_objective(
    task_or_context: Any, *, executor: Any, worst_loss: float, output_dir: Any = None,
    header: Mapping[str, Any] | None = None, resume: bool = True,
    trial_timeout: float | None = None, deadline: Deadline | None = None,
    policy: TrialPolicy | None = None, observers: Sequence[Any] = (), crash_marks: bool = True,
) -> PipelineObjective:
    """The cached, journaled objective over a task (a :class:`TrialContext` or any object with
    ``space`` and ``run``); the journal is ``output_dir/journal.jsonl`` when a directory is given,
    its records timed on ``deadline`` (default: a clock started now). The trials follow ``policy`` (default: a fixed ``trial_timeout``, or none); ``observers`` are
    told of every recorded evaluation (e.g. a
    :class:`~admm_automl.final.library.PredictionLibrary`);
    ``crash_marks``: see :class:`~admm_automl.evaluation.objective.PipelineObjective`."""
    path = run_directory(output_dir) / "journal.jsonl" if output_dir is not None else None
    journal = Journal(path, dict(header or {}), resume=resume)
    policy = TrialPolicy(trial_timeout=trial_timeout) if policy is None else policy
    return PipelineObjective(task_or_context, executor, journal, worst_loss=worst_loss,
                             policy=policy, deadline=deadline, observers=observers,
                             crash_marks=crash_marks)


#: with neither max_evals nor time_budget, this many evaluations
DEFAULT_MAX_EVALS = 100


def _explained(err: ResumeError, s: SearchSettings, header: dict[str, Any]) -> ResumeError:
    """``err`` (a journal of another run) with what to do where an ``"auto"`` setting chose
    differently for the resumed run than for the recorded one; else ``err`` itself."""
    text = str(err)
    if s.cv == "auto" and "splits." in text:
        splits = header["splits"]
        now = (f"{splits['cv']}-fold, {splits.get('repeats', 1)} time(s)" if splits["cv"]
               else "one holdout split")
        return ResumeError(
            f"{text} The splits are cv='auto''s choice, which depends on the data's size and on "
            f"the time budget (now {now}), so a resume with another time_budget can choose "
            "others: resume with the time_budget the run began with, or pin the splits from a "
            "run's start with an explicit cv (such as cv=5, never repeated, or cv='holdout').")
    auto = [name for name in ("shrink_to_fit", "boost_to_fit")
            if getattr(s, name) == "auto" and name in text]
    if auto:
        settings = " and ".join(name + "='auto'" for name in auto)
        resume = " and ".join(f"{name}=False (fit --no-{name.replace('_', '-')})"
                              for name in auto)
        return ResumeError(
            f"{text} {settings} (the default) size trials to their time limit from "
            f"{SHRINK_MIN_ROWS} training rows on; a journal of an earlier version, made without, "
            f"resumes with {resume}.")
    return err


def run_search(
    X: Any, y: np.ndarray, settings: SearchSettings, *, space: PipelineSpace, task: str,
    target_type: str, sensitive_features: Any = None, deadline: Deadline | None = None,
    listeners: Sequence[RunListener] = (),
) -> SearchOutcome:
    """One search as the estimator runs it, with ``settings`` (a
    :data:`~admm_automl.run.params.SearchSettings`). The time budget is ``deadline``'s clock, started by
    the caller so that it covers what came before (default: from now), and drives the time policy
    of :mod:`.deadline`: the folds (:func:`resolve_cv`), the reserve for the refit, the trials'
    timeouts and probes. ``listeners`` are the run's
    :class:`~admm_automl.methods.driver.RunListener` (e.g. a progress display; the settings'
    ``callbacks`` are one more, :mod:`.callbacks`). ADMM evaluates
    the warm-start portfolio first; with ``ensemble_size`` the best evaluations' validation
    predictions are kept in ``outcome.predictions``
    (:mod:`admm_automl.final.library`)."""
    from ..constraints import mitigated_starts
    from ..space.portfolio import kept_configs, portfolio_points, resolve_portfolio

    refuse_nested_search()  # before anything touches the output directory
    s = settings
    deadline = Deadline(s.time_budget) if deadline is None else deadline
    seeds = derive_seeds(s.random_state)
    n_features = X.shape[1] if len(getattr(X, "shape", ())) == 2 else 1
    cv = resolve_cv(s.cv, len(y), n_features, s.time_budget)
    repeats = resolve_repeats(s.cv, len(y), n_features, s.time_budget)
    prepared = prepare_task(
        X, y, space=space, task=task, target_type=target_type, scoring=s.scoring, cv=cv,
        repeats=repeats,
        validation_size=s.validation_size, split_seed=seeds.splits, model_seed=seeds.models,
        constraints=s.constraints, sensitive_features=sensitive_features,
        cache_size=kept_budget_mb(s.cache_size, s.memory_limit),
    )
    prepared.context.keep_predictions = s.ensemble_size > 0
    prepared.context.shrink_to_fit = resolve_auto(s.shrink_to_fit, len(y))
    prepared.context.boost_to_fit = resolve_auto(s.boost_to_fit, len(y))
    # the mitigated starts are the leading configurations the space keeps (a portfolio led by
    # LightGBM and CatBoost still gets two mitigated starts in an install without them)
    portfolio = kept_configs(resolve_portfolio(s.portfolio, space, task), space)
    warm_start = (portfolio_points(mitigated_starts(portfolio, space), space)
                  if get_method(s.method)[0].has_split else [])
    executor = make_executor(
        s.executor, n_jobs=s.n_jobs, memory_limit_mb=s.memory_limit,
        needs_isolation=s.trial_timeout is not None or s.time_budget is not None,
        dask_address=s.dask_address,
    )
    if s.trial_timeout is not None and not executor.enforces_timeout:
        raise InvalidParameterError(
            "trial_timeout needs worker processes to stop a runaway fit: use executor='process' "
            "(or 'auto')"
        )
    header = run_header(prepared, cv=cv, validation_size=s.validation_size, repeats=repeats)
    ctx = prepared.context
    # the trials keep their fold models for the ensemble's bags (final/bagging.py says when)
    bagging = (s.ensemble_size > 0 and s.bagging and len(ctx.splits) >= 2
               and not prepared.constraints)
    models_dir = ctx.models_dir = (tempfile.mkdtemp(prefix="admm-automl-bags-") if bagging
                                   else None)
    try:
        return _search(s, prepared, space, executor, header, deadline, listeners, warm_start,
                       seeds.solvers)
    except BaseException:
        if models_dir is not None:
            shutil.rmtree(models_dir, ignore_errors=True)
        raise


def _search(s: SearchSettings, prepared: Task, space: PipelineSpace, executor: Any,
            header: dict[str, Any], deadline: Deadline, listeners: Sequence[RunListener],
            warm_start: list[Point], seed: np.random.SeedSequence) -> SearchOutcome:
    """The search of :func:`run_search` once its task and executor are set up."""
    from ..constraints.ranking import Constraints

    ctx = prepared.context
    models_dir = ctx.models_dir
    rows = sum(len(split.valid) for split in ctx.splits)  # class probabilities, or values
    library = PredictionLibrary(len(ctx.y), len(ctx.splits),
                                ENSEMBLE_POOL if s.ensemble_size else 0,
                                rank=Constraints(prepared.constraints).rank,
                                run_dir=s.output_dir, models_dir=models_dir,
                                shape=(rows,) if ctx.labels is None else (rows, len(ctx.labels)))
    try:
        objective = open_objective(
            ctx, executor=executor, worst_loss=prepared.worst_loss, output_dir=s.output_dir,
            header=header, resume=s.resume, deadline=deadline,
            policy=trial_policy(deadline, s.trial_timeout), observers=[library],
        )
    except ResumeError as err:
        raise _explained(err, s, header) from None
    if s.callbacks:
        from .callbacks import CallbackListener

        callback_listener = CallbackListener(s.callbacks, objective.journal)
        listeners = [*listeners, callback_listener]
    if objective.journal.n_resumed:  # say so: a resumed run looks like a fast one otherwise
        tell(listeners, note=f"resumed: {objective.journal.n_resumed} evaluations of an earlier "
             "session replayed from the journal, not run again")
        logger.info("resuming %s: %d evaluations of an earlier session are replayed, not run "
                    "again", objective.journal.path, objective.journal.n_resumed)
    max_evals = s.max_evals
    if max_evals is None and s.time_budget is None:
        max_evals = DEFAULT_MAX_EVALS
    reserve = None if s.time_budget is None else (
        lambda: refit_reserve(library, s.time_budget, s.ensemble_size > 0))
    workers = getattr(executor, "n_workers", 1)
    try:
        # asynchronous only with several workers: with one, the history is the batches' anyway
        # and the batch loop is the one that adds cheap proposals under a time budget
        optimizer = make_optimizer(
            s.method, space.encoding, objective, theta_solver=s.theta_solver,
            z_solver=s.z_solver, rho=s.rho, space=space,
            schedule=Schedule.of(s.inner_iter, s.inner_iter_step, s.inner_iter_max),
            constraints=prepared.constraints, constraint_mode=s.constraint_mode,
            penalty_weight=s.penalty_weight, n_train=len(prepared.context.splits[0].train),
            max_evals=max_evals, deadline=deadline, seed=seed,
            batch_size=workers, asynchronous=s.asynchronous and workers > 1,
            reserve=reserve, listeners=tuple(listeners), warm_start=warm_start,
        )
        result = optimizer.run()
        left = None if s.time_budget is None else deadline.left() - reserve()
        library.restore_lost({r["eval_id"]: r for r in objective.journal.records}, space,
                             executor, left)
    finally:
        objective.close()
    if s.time_budget is not None:
        check_time_budget(s.time_budget, objective.journal.records, executor.name,
                          deadline.elapsed())
    records = objective.journal.records
    return SearchOutcome(prepared, result, records,
                         evaluations_of(records, space, len(ctx.y), len(ctx.splits)),
                         objective.n_failed, optimizer.constraints, s.rho, library.predictions,
                         _trial_threads(executor), executor.name, models_dir, library.models,
                         objective.n_timeouts,
                         callback_listener.seconds if s.callbacks else {})


def _trial_threads(executor: Any) -> int | None:
    """The BLAS/OpenMP threads the trials of a local process pool used in all (one a worker,
    times the workers); None where they ran unlimited (serial) or on other machines (Dask)."""
    if executor.name != "process" or getattr(executor, "threads", None) is None:
        return None
    return int(executor.n_workers) * int(executor.threads)

