"""The one run set-up: seeds, task (data, splits, metric, constraints), objective, journal and
optimiser, shared by the estimator, the benchmark runner and the experiment scripts.

* :func:`derive_seeds` — one ``random_state`` → the solvers' seed sequence, the split seed and the
  models' ``random_state``; :func:`benchmark_seeds`, a benchmark's (one split for every method).
* :func:`single_threaded_executor` — a benchmark's executor, one BLAS thread a worker.
* :func:`prepare_task` — the :class:`~admm_automl.evaluation.TrialContext` of a run (splits,
  metric, preprocessing, constraints bound to the data) and the loss of a failed pipeline.
* :func:`run_header` — what the recorded losses depend on (the journal guards resume with it);
  :func:`function_header`, the same for a test function such as the artificial objective.
* :func:`open_objective` — executor + journal + cached objective.
* :func:`task_space`, :func:`space_has`, :func:`display_metric` — what the estimator asks of the
  space and the metric before a search.
* :func:`run_search` — all of the above for one search, as the estimator runs it; its
  :class:`~.outcome.SearchOutcome` carries the evaluations typed.
"""

from __future__ import annotations

import logging
import math
import numbers
import shutil
import tempfile
import warnings
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from ..evaluation.data import fingerprint, make_preprocessor, take_rows
from ..evaluation.executors import refuse_nested_search
from ..evaluation.kept import kept_budget_mb
from ..evaluation.metrics import get_metric
from ..evaluation.objective import PipelineObjective
from ..evaluation.policy import TrialPolicy
from ..evaluation.prefix_cache import DEFAULT_CACHE_MB
from ..evaluation.splits import make_splits, resolve_cv, resolve_repeats
from ..evaluation.trial import TrialContext
from ..exceptions import DataError, InvalidParameterError, ResumeError
from ..journal import Journal
from ..methods.driver import RunListener, Schedule, tell
from ..methods.registry import get_method, make_optimizer
from ..space.space import PipelineSpace
from .deadline import Deadline, check_time_budget, refit_reserve
from .executor import make_executor
from ..final.library import ENSEMBLE_POOL, PredictionLibrary
from .lock import run_directory
from ..final.outcome import Point, SearchOutcome, Task, evaluations_of
from .params import SearchSettings

@dataclass(frozen=True)
class Seeds:
    """The independent random streams of a run, derived from one seed."""

    solvers: np.random.SeedSequence
    splits: int
    models: int


logger = logging.getLogger(__name__)


def derive_seeds(random_state: Any) -> Seeds:
    """Spawn the solvers', the splits' and the models' seeds from ``random_state`` (None, an int
    or a RandomState), in a fixed order."""
    if isinstance(random_state, np.random.RandomState):
        entropy = int(random_state.randint(np.iinfo(np.int32).max))
    elif random_state is None or isinstance(random_state, numbers.Integral):
        entropy = random_state
    else:
        raise InvalidParameterError(
            f"random_state must be None, an int or a RandomState, got {random_state!r}"
        )
    solvers, splits, models = np.random.SeedSequence(entropy).spawn(3)
    return Seeds(solvers, int(splits.generate_state(1)[0]), int(models.generate_state(1)[0] >> 1))


def benchmark_seeds(seed: int, split_seed: int = 0) -> Seeds:
    """The seeds of run ``seed`` of a benchmark: ``split_seed`` for the validation split, and
    ``seed`` itself as the solvers' seed and the models' ``random_state``.

    Not :func:`derive_seeds`, on purpose: a benchmark compares its methods on the same training
    and validation rows (Liu et al. 2020, Section 5; Kishimoto et al. 2021), so the split must not
    change with the run's seed; and its protocol (experiments/README.md) makes seed k the solvers'
    and the models' seed, so that a recorded run of seed k replays as it was recorded.
    """
    return Seeds(np.random.SeedSequence(seed), int(split_seed), int(seed))


def single_threaded_executor(kind: str = "process", n_workers: int = 1) -> Any:
    """The executor of a benchmark or experiment run, from :func:`~.executor.make_executor`:
    ``kind`` (``"serial"``, ``"process"`` or ``"dask"``) with ``n_workers`` workers, no memory
    limit, and BLAS/OpenMP held to one thread in each worker, so that runs side by side, one core
    each, do not compete for the cores (``"serial"`` runs the trials in this process, under the
    threads the calling script set)."""
    return make_executor(kind, n_jobs=n_workers, memory_limit_mb=None,
                         needs_isolation=kind != "serial", threads=1)


def function_header(name: str, space: Any, **settings: Any) -> dict[str, Any]:
    """The run header (see :func:`run_header`) of a search whose losses are a function of the
    configuration alone rather than of pipelines fitted on data, such as the artificial objective
    of Liu et al. 2020: the package version, the function's ``name`` and ``settings``, the space."""
    from .. import __version__

    return {"package_version": __version__, "function": {"name": name, **settings},
            "space": {"name": space.name, "fingerprint": _digest(space.modules)}}


def prepare_task(
    X: Any, y: np.ndarray, *, space: Any, task: str, target_type: str, scoring: Any = None,
    cv: int | None = None, validation_size: float = 0.2, split_seed: int = 0,
    model_seed: int | None = None, constraints: Any = None, sensitive_features: Any = None,
    cache_size: float = DEFAULT_CACHE_MB, repeats: int = 1,
) -> Task:
    """Splits (``cv``-fold ``repeats`` times, or a holdout), metric, preprocessing and
    constraints for pipelines of ``space`` on (X, y)."""
    from ..constraints import make_constraints

    metric = get_metric(scoring, task, target_type)
    space.check_classes()
    try:
        splits = make_splits(y, classification=task == "classification", cv=cv,
                             validation_size=validation_size, seed=split_seed, repeats=repeats)
    except ValueError as err:
        raise DataError(f"cannot make the validation split(s): {err}") from None
    labels = np.unique(y) if task == "classification" else None
    ctx = TrialContext(space, X, y, splits, metric, make_preprocessor(X), model_seed, labels=labels,
                       cache_size=cache_size)
    bound = make_constraints(constraints)
    for constraint in bound:  # errors in the data come here, before any training
        constraint.bind(X, y, groups=sensitive_features, splits=splits, task=task)
    ctx.measures = {c.key: c for c in bound}
    if sensitive_features is not None:  # a mitigation may take them at fit (:func:`task_space`)
        ctx.sensitive_features = np.asarray(sensitive_features, dtype=object)
    baseline = baseline_loss(ctx, task)  # also: can the metric be computed on every split?
    worst = metric.worst if metric.worst is not None else baseline
    return Task(task, ctx, metric, bound, float(worst), split_seed)


def baseline_loss(ctx: TrialContext, task: str) -> float:
    """The loss of a constant predictor (class prior / mean), averaged over the validation splits:
    the failure loss of a metric with no upper bound, such as RMSE or log-loss.

    It is also the check that the metric can be computed on every validation split at all: where
    a constant predictor cannot be scored (AUROC on a split that holds one class, R² on one row),
    no pipeline can, so :class:`DataError` says which split and why before any search.
    """
    from sklearn.dummy import DummyClassifier, DummyRegressor

    scorer = ctx.metric.make_scorer(ctx.labels)
    losses = []
    for i, split in enumerate(ctx.splits):
        dummy = DummyClassifier(strategy="prior") if task == "classification" else DummyRegressor()
        why = "a constant predictor scores NaN"
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                dummy.fit(take_rows(ctx.X, split.train), ctx.y[split.train])
                loss = ctx.metric.loss(scorer, dummy, take_rows(ctx.X, split.valid),
                                       ctx.y[split.valid])
        except Exception as err:  # the metric's own reason
            loss, why = math.nan, f"{type(err).__name__}: {err}"
        if not math.isfinite(loss):
            raise DataError(_unscorable(ctx, task, i, why))
        losses.append(loss)
    return float(np.mean(losses))


def _rows(y: np.ndarray) -> str:
    """``"300 rows: 298 of class 0, 2 of class 1"``."""
    labels, counts = np.unique(y, return_counts=True)
    per_class = ", ".join(f"{n} of class {label!r}" for label, n in zip(labels.tolist(), counts))
    return f"{len(y)} row(s): {per_class}"


def _unscorable(ctx: TrialContext, task: str, i: int, why: str) -> str:
    """Why the metric cannot be computed on validation split ``i``, and what to do."""
    valid = ctx.y[ctx.splits[i].valid]
    where = "split" if len(ctx.splits) == 1 else f"fold {i + 1} of {len(ctx.splits)}"
    if task == "classification":
        if len(np.unique(valid)) == 1:
            why = f"it holds {len(valid)} row(s), all of class {valid[:1].tolist()[0]!r}"
        else:
            why = f"it holds {_rows(valid)}; {why}"
        data = f"the data have {_rows(ctx.y)}"
        advice = ("give more rows of the rare classes, a larger validation_size or cv with fewer "
                  "folds (so that every class reaches every validation split), or a metric that "
                  "is defined with one class present, e.g. scoring='accuracy' or 'log_loss'")
    else:
        scale = float(np.max(np.abs(ctx.y))) if len(ctx.y) else 0.0
        with np.errstate(all="ignore"):
            overflows = not np.isfinite(np.mean(np.square(ctx.y - np.mean(ctx.y))))
        if overflows and len(valid) > 1:  # the values, not the rows, are the problem
            return (f"the {ctx.metric.name} metric cannot be computed: the target's values are "
                    f"too large for float64 arithmetic (largest |y| = {scale:.3g}; their squares "
                    "overflow). Rescale y (e.g. divide it by a power of ten, or fit log(y)).")
        why = f"it holds {len(valid)} row(s); {why}"
        data = f"the data have {len(ctx.y)} rows"
        advice = "give more rows, a larger validation_size or cv with fewer folds"
    return (f"the {ctx.metric.name} metric cannot be computed on the validation {where}: {why} "
            f"({data}). Every pipeline would fail: {advice}.")


def _stable(value: Any) -> Any:
    """A form of ``value`` whose repr is the same in every process (functions and classes by
    their import path, not their address)."""
    if isinstance(value, dict):
        return {str(k): _stable(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_stable(v) for v in value]
    if callable(value) and hasattr(value, "__qualname__"):
        return f"{getattr(value, '__module__', '?')}.{value.__qualname__}"
    return value


def _digest(value: Any) -> str:
    import hashlib

    return hashlib.sha256(repr(_stable(value)).encode()).hexdigest()[:16]


def run_header(task: Task, *, cv: int | None, validation_size: float, repeats: int = 1
               ) -> dict[str, Any]:
    """What the losses recorded for ``task`` depend on; a journal refuses to resume under another
    (``repeats`` is written only above 1, so that the journals of earlier versions resume)."""
    from .. import __version__

    ctx = task.context
    measures = {
        key: {k: v for k, v in c.get_params().items() if k not in ("threshold", "sense")}
        for key, c in ctx.measures.items()
    }
    data = {"rows": int(len(ctx.y)), "fingerprint": fingerprint(ctx.X, ctx.y)}
    if ctx.sensitive_features is not None:  # other groups, other constraint values
        data["sensitive_features"] = fingerprint(ctx.sensitive_features)
    return {
        "package_version": __version__,
        "data": data,
        "metric": task.metric.name if isinstance(task.metric.scorer, str)
        else f"{task.metric.name} ({getattr(task.metric.scorer, '__module__', '?')})",
        "splits": {"cv": cv, "validation_size": None if cv else validation_size,
                   "seed": task.split_seed, **({"repeats": repeats} if repeats > 1 else {})},
        "model_seed": ctx.random_state,
        "space": {"name": ctx.space.name, "fingerprint": _digest(ctx.space.modules)},
        "constraint_measures": _digest(measures) if measures else None,
    }


def open_objective(
    task_or_context: Any, *, executor: Any, worst_loss: float, output_dir: Any = None,
    header: Mapping[str, Any] | None = None, resume: bool = True,
    trial_timeout: float | None = None, start_time: float | None = None,
    policy: TrialPolicy | None = None, observers: Sequence[Any] = (), crash_marks: bool = True,
) -> PipelineObjective:
    """The cached, journaled objective over a task (a :class:`TrialContext` or any object with
    ``space`` and ``run``); the journal is ``output_dir/journal.jsonl`` when a directory is given.
    The trials follow ``policy`` (default: a fixed ``trial_timeout``, or none); ``observers`` are
    told of every recorded evaluation (e.g. a :class:`~.library.PredictionLibrary`);
    ``crash_marks``: see :class:`~admm_automl.evaluation.objective.PipelineObjective`."""
    path = run_directory(output_dir) / "journal.jsonl" if output_dir is not None else None
    journal = Journal(path, dict(header or {}), resume=resume)
    policy = TrialPolicy(trial_timeout=trial_timeout) if policy is None else policy
    return PipelineObjective(task_or_context, executor, journal, worst_loss=worst_loss,
                             policy=policy, start_time=start_time, observers=observers,
                             crash_marks=crash_marks)


#: with neither max_evals nor time_budget, this many evaluations
DEFAULT_MAX_EVALS = 100


def task_space(search_space: Any, task: str, n_rows: int, constraints: Any = None,
               fairness_mitigation: Any = False, theta_solver: Any = None,
               sensitive_features: bool = False) -> PipelineSpace:
    """The space a search of ``task`` on ``n_rows`` rows searches: ``search_space`` (a name, a
    file or a space) without the algorithms of the other task or too slow for that many rows,
    and with fairlearn's mitigations for the first group-fairness constraint they apply to
    (``fairness_mitigation`` "auto" or True; :func:`~admm_automl.constraints.mitigation_module`;
    ``sensitive_features``: the fit is given the groups beside X, which a constraint without
    ``group_by`` compares), unless ``theta_solver`` trains learners for chosen lengths (BAPI): a
    wrapped learner cannot be continued.

    Raises
    ------
    InvalidParameterError
        ``fairness_mitigation=True`` where no constraint can be mitigated.
    """
    from ..constraints import make_constraints, mitigation_module
    from ..space import load_space

    space = load_space(search_space).for_task(task).for_data(n_rows)
    if fairness_mitigation is False or space.modules[-1].wraps:
        return space
    from ..solvers import THETA_SOLVERS

    found = [m for c in make_constraints(constraints)
             if (m := mitigation_module(c, sensitive_features)) is not None]
    by_length = theta_solver is not None and getattr(THETA_SOLVERS.create(theta_solver),
                                                     "needs_training_length", False)
    if task == "classification" and found and not by_length:
        return space.wrapped(found[0])
    if fairness_mitigation is True:
        raise InvalidParameterError(
            "fairness_mitigation=True needs a classification task, a θ-solver that does not "
            "choose training lengths, and a group-fairness constraint that fairlearn's "
            "mitigations equalise (demographic parity, equalized odds or equal opportunity; "
            "disparate_impact with metric selection_rate, tpr or fpr) whose groups are columns "
            "of X (group_by) or given as fit(..., sensitive_features=)")
    return space


def space_has(search_space: Any, task: str | None, attr: str) -> bool:
    """Whether every learner of ``search_space`` for ``task`` (None: any) has ``attr`` (such as
    ``predict_proba``), so that a pipeline the search returns is sure to have it; True for a
    space that cannot be loaded (``fit`` reports that)."""
    from ..space import load_space
    from ..space.space import import_class

    try:
        return all(hasattr(import_class(a.class_path), attr)
                   for a in load_space(search_space).modules[-1].choices
                   if a.class_path is not None and (task is None or a.task in ("any", task)))
    except Exception:  # an invalid space is reported by fit
        return True


def display_metric(scoring: Any, task: str, target_type: str) -> tuple[str, float]:
    """``(name, offset)`` of the run's metric, for the progress display."""
    metric = get_metric(scoring, task, target_type)
    return metric.name, metric.offset


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
    predictions are kept in ``outcome.predictions`` (:mod:`.library`)."""
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
    # the trials keep their fold models for the ensemble's bags (:mod:`.bagging` says when)
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
            header=header, resume=s.resume, start_time=deadline.start,
            policy=deadline.trial_policy(s.trial_timeout), observers=[library],
        )
    except ResumeError as err:
        if s.cv != "auto" or "splits." not in str(err):
            raise
        splits = header["splits"]
        now = (f"{splits['cv']}-fold, {splits.get('repeats', 1)} time(s)" if splits["cv"]
               else "one holdout split")
        raise ResumeError(
            f"{err} The splits are cv='auto''s choice, which depends on the data's size and on "
            f"the time budget (now {now}), so a resume with another time_budget can choose "
            "others: resume with the time_budget the run began with, or pin the splits from a "
            "run's start with an explicit cv (such as cv=5, never repeated, or cv='holdout')."
        ) from None
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
            max_evals=max_evals, time_budget=s.time_budget, seed=seed,
            batch_size=workers, asynchronous=s.asynchronous and workers > 1,
            start_time=deadline.start,
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
    return SearchOutcome(prepared, result, records, evaluations_of(records, space),
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


