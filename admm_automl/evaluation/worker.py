"""What runs inside an evaluation: build the pipeline, fit it on each split, score it.

The :class:`TrialContext` (data, splits, space, metric) is sent to a worker process once; each trial
then sends only ``(z, θ, fidelity)``. The same function runs in-process for the serial executor.

Executors only need a *task*: an object with a ``space`` and ``run(z, θ, fidelity) -> result dict``
(``status``, ``loss``, ``error``, ``fit_time``, ``predict_time``, ``constraints``, ``n_train``).
:class:`TrialContext` is the task of a pipeline on data; a benchmark function such as
:class:`admm_automl.benchmarks.ArtificialObjective` is another, evaluated through the same path.
"""

from __future__ import annotations

import math
import time
import traceback
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..space import PipelineSpace
from .metrics import Metric
from .splits import Split


def take_rows(X: Any, rows: np.ndarray) -> Any:
    """Rows of a numpy array, a pandas object or a sparse matrix."""
    return X.iloc[rows] if hasattr(X, "iloc") else X[rows]


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

    def run(self, z: tuple[int, ...], theta: np.ndarray, fidelity: float) -> dict[str, Any]:
        return run_trial(self, z, theta, fidelity)


def run_trial(
    ctx: TrialContext, z: tuple[int, ...], theta: np.ndarray, fidelity: float
) -> dict[str, Any]:
    """Fit and score one configuration on every split; never raises for a pipeline's fault."""
    from sklearn.base import clone

    result: dict[str, Any] = {"status": "ok", "error": None, "fit_time": 0.0, "predict_time": 0.0}
    losses: list[float] = []
    measured: dict[str, list[float]] = {name: [] for name in ctx.measures}
    try:
        scorer = ctx.metric.make_scorer(ctx.labels)
        for split in ctx.splits:
            pipeline = ctx.space.to_pipeline(
                z,
                theta,
                preprocessor=None if ctx.preprocessor is None else clone(ctx.preprocessor),
                random_state=ctx.random_state,
            )
            rows = split.train_rows(fidelity)
            X_valid, y_valid = take_rows(ctx.X, split.valid), ctx.y[split.valid]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                start = time.perf_counter()
                pipeline.fit(take_rows(ctx.X, rows), ctx.y[rows])
                result["fit_time"] += time.perf_counter() - start
                start = time.perf_counter()
                losses.append(ctx.metric.loss(scorer, pipeline, X_valid, y_valid))
                result["predict_time"] += time.perf_counter() - start
                for name, constraint in ctx.measures.items():
                    measured[name].append(
                        float(constraint.measure(pipeline, X_valid, y_valid, split.valid))
                    )
        loss = float(np.mean(losses))
        if not math.isfinite(loss):
            result.update(status="failed", error=f"non-finite {ctx.metric.name} loss: {loss!r}")
        result["loss"] = loss
    except MemoryError:
        result.update(status="memout", error="MemoryError: the trial hit the memory limit")
    except Exception as err:  # one failing pipeline never ends a run
        tb = traceback.format_exception(type(err), err, err.__traceback__)
        result.update(status="failed", error=f"{type(err).__name__}: {err}", traceback="".join(tb[-3:]))
    result["constraints"] = {k: float(np.mean(v)) for k, v in measured.items() if v}
    result["n_train"] = int(len(ctx.splits[0].train_rows(fidelity))) if ctx.splits else 0
    return result


# ---------------------------------------------------------------------- process-pool side
_CONTEXT: Any = None  # the task of this worker process


def init_worker(ctx: Any, memory_limit_mb: int | None, threads: int | None) -> None:
    """Pool initializer: keep the context, cap the address space and the BLAS/OpenMP threads."""
    global _CONTEXT
    import signal

    # Pebble's SIGTERM handler runs only between Python bytecodes, so a worker inside a long C call
    # (a BLAS product, liblinear) would outlive its timeout by Pebble's 3 s grace period before
    # SIGKILL; the default disposition ends it at once.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _CONTEXT = ctx
    if memory_limit_mb:
        import resource

        limit = int(memory_limit_mb) * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    if threads:
        from threadpoolctl import threadpool_limits

        threadpool_limits(threads)


def run_in_worker(z: tuple[int, ...], theta: np.ndarray, fidelity: float) -> dict[str, Any]:
    assert _CONTEXT is not None, "worker not initialised"
    return _CONTEXT.run(z, theta, fidelity)
