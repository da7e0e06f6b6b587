"""Synthetic problems and black boxes for testing solvers and optimisers without scikit-learn.

* :func:`make_theta_problem` / :func:`make_z_problem` — small sub-problems with a known optimum,
  optional bad observations and history, whose evaluations are logged.
* :class:`ToyEngine` — a cached black box over a pipeline space with a loss function of the readable
  configuration, the stand-in for the evaluation engine in tests of the optimisers.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Callable, Sequence

import numpy as np

from ..problem import QuadraticPenalty, ThetaProblem, ZProblem
from ..records import Observation, Request, Status

#: the kinds of bad observations a solver must accept
BAD_KINDS = ("nan", "nan-ok", "inf", "failed", "timeout", "memout")


def bad_observation(kind: str) -> Observation:
    """A failed or non-finite observation of one of :data:`BAD_KINDS`."""
    return {
        "nan": Observation(loss=math.nan, status=Status.FAILED, error="NaN score"),
        "nan-ok": Observation(loss=math.nan),
        "inf": Observation(loss=math.inf, status=Status.FAILED, error="inf score"),
        "failed": Observation(loss=1.0, status=Status.FAILED, error="RuntimeError: boom"),
        "timeout": Observation(loss=1.0, status=Status.TIMEOUT, error="timed out"),
        "memout": Observation(loss=1.0, status=Status.MEMOUT, error="memory"),
    }[kind]


class CallLog:
    """What a synthetic problem was asked: the configurations (θ, or (z, fidelity)) and the batch
    sizes."""

    def __init__(self) -> None:
        self.configs: list[Any] = []
        self.batches: list[int] = []

    def __len__(self) -> int:
        return len(self.configs)


def make_theta_problem(
    dim: int, *, bad: Callable[[int], str | None] | None = None, history: Sequence = (),
    discrete: Sequence[bool] | None = None, rho: float = 2.0, repeats_cached: bool = False,
    batch_size: int = 1, centre: float = 0.8,
) -> tuple[ThetaProblem, CallLog]:
    """A quadratic θ-problem: loss ‖x − 0.3‖², penalty (ρ/2)‖x − centre‖² (centre 0.8 in every
    coordinate by default), so the order by ``augment`` differs from the order by loss.

    ``bad(i)`` may name the kind of a bad observation for evaluation ``i``. With
    ``repeats_cached``, a point asked before is answered as a cache hit (``cached=True``), like the
    real engine. Two problems that differ only in ``centre`` and ``rho`` are the same black box
    under other ADMM duals (the penalty moves, the losses do not).
    """
    log = CallLog()
    target, b = np.full(dim, 0.3), np.full(dim, float(centre))
    seen: dict[bytes, Observation] = {}

    def evaluate(suggestions):
        log.batches.append(len(suggestions))
        out = []
        for s in suggestions:
            x = np.array(s.config, dtype=float, copy=True)
            key = np.round(x, 12).tobytes()
            if repeats_cached and key in seen:
                out.append(replace(seen[key], cached=True))
                continue
            i = len(log.configs)
            log.configs.append(x)
            kind = bad(i) if bad is not None else None
            obs = bad_observation(kind) if kind else Observation(
                loss=float(np.sum((x - target) ** 2)), eval_id=i)
            seen[key] = obs
            out.append(obs)
        return out

    penalty = QuadraticPenalty(float(rho), np.ones(dim, dtype=bool), b)  # as ADMM passes it
    problem = ThetaProblem(
        dim=dim, evaluate=evaluate, augment=lambda x, obs: obs.loss + penalty(x), penalty=penalty,
        discrete=np.zeros(dim, dtype=bool) if discrete is None else np.asarray(discrete, bool),
        names=tuple(f"x{i}" for i in range(dim)), history=list(history),
        start=np.full(dim, 0.5), batch_size=batch_size,
    )
    return problem, log


def make_z_problem(
    n_choices: Sequence[int] = (3, 4, 2), *, bad: Callable[[int], str | None] | None = None,
    history: Sequence = (), fidelity: tuple[float, float] | None = None,
    repeats_cached: bool = False, n_train: int | None = None, batch_size: int = 1,
) -> tuple[ZProblem, CallLog]:
    """A separable z-problem: loss Σ_i |z_i − best_i| / n_i (best_i = n_i // 2), and ``augment``
    adds 0.1·z_0, so the order by ``augment`` differs from the order by loss. Options as
    :func:`make_theta_problem` (repeats are keyed by (z, fidelity))."""
    log = CallLog()
    best = tuple(k // 2 for k in n_choices)
    seen: dict[tuple, Observation] = {}

    def evaluate(suggestions):
        log.batches.append(len(suggestions))
        out = []
        for s in suggestions:
            z = tuple(s.config)
            if repeats_cached and (z, s.fidelity) in seen:
                out.append(replace(seen[z, s.fidelity], cached=True))
                continue
            i = len(log.configs)
            log.configs.append((z, s.fidelity))
            kind = bad(i) if bad is not None else None
            loss = float(sum(abs(j - c) / k for j, c, k in zip(z, best, n_choices)))
            obs = bad_observation(kind) if kind else Observation(
                loss=loss, eval_id=i, fidelity=1.0 if s.fidelity is None else s.fidelity)
            seen[z, s.fidelity] = obs
            out.append(obs)
        return out

    problem = ZProblem(
        n_choices=tuple(n_choices), evaluate=evaluate,
        augment=lambda z, obs: obs.loss + 0.1 * float(z[0]),
        module_names=tuple(f"m{i}" for i in range(len(n_choices))),
        choice_names=tuple(tuple(f"c{j}" for j in range(k)) for k in n_choices),
        history=list(history), start=tuple(0 for _ in n_choices), fidelity=fidelity,
        n_train=n_train, batch_size=batch_size,
    )
    return problem, log


def curve_loss(x: np.ndarray, t: float) -> float:
    """The learning curve of :func:`make_curve_problem`: ``‖x − 0.3‖² + 0.5·exp(−t / τ(x))`` with
    ``τ(x) = 5 + 20·x_0`` iterations (non-increasing in t, slower for larger ``x_0``)."""
    x = np.asarray(x, dtype=float)
    return float(np.sum((x - 0.3) ** 2) + 0.5 * math.exp(-t / (5.0 + 20.0 * x[0])))


def make_curve_problem(
    dim: int = 2, *, t_max: int = 100, rho: float = 2.0, history: Sequence = (),
    t_min: int = 1, centre: float = 0.8, batch_size: int = 1,
    no_length: Callable[[np.ndarray], bool] | None = None,
) -> tuple[ThetaProblem, CallLog]:
    """The θ-problem of an iterative learner with a known learning curve (:func:`curve_loss`).

    Every point has the training length ``Iterations("max_iter", t_min, t_max, "partial_fit")``,
    except the points where ``no_length(x)`` is true (an algorithm without a training length, as
    over JOPT's joint space): ``training_length(x)`` is ``None`` there. A suggestion with
    ``iterations = t`` is answered like the real engine: the curve at the checkpoints of
    :func:`admm_automl.evaluation.iterative.checkpoints`, a configuration trained before continued
    from its longest length (``continued_from``), and the deterministic
    ``fit_time = (t − continued_from)·(1 + x_1)/100`` (the cost of the new iterations). Without
    ``iterations`` the point is trained to ``t_max``. The penalty is that of
    :func:`make_theta_problem` (``rho``, ``centre``). The problem does not refuse a length outside
    ``[t_min, t_max]`` nor one asked for a point without a training length (the real engine
    refuses some): the log records ``(x, iterations)`` as asked, for the checks to judge.
    """
    from ..evaluation.iterative import checkpoints
    from ..space import Iterations

    log = CallLog()
    length = Iterations("max_iter", int(t_min), int(t_max), "partial_fit")
    trained: dict[bytes, int] = {}
    b = np.full(dim, float(centre))

    def evaluate(suggestions):
        log.batches.append(len(suggestions))
        out = []
        for s in suggestions:
            x = np.array(s.config, dtype=float, copy=True)
            t = t_max if s.iterations is None else int(s.iterations)
            key = np.round(x, 12).tobytes()
            held = trained.get(key, 0)
            start = held if held <= t and s.iterations is not None else 0
            log.configs.append((x, s.iterations))
            curve = tuple((c, curve_loss(x, c)) for c in checkpoints(t_max, start, t))
            cost = (t - start) * (1.0 + x[min(1, dim - 1)]) / 100.0
            out.append(Observation(
                loss=curve_loss(x, t), eval_id=len(log.configs) - 1, fit_time=cost,
                duration=cost, iterations=s.iterations, continued_from=start,
                curve=curve if s.iterations is not None else (),
            ))
            trained[key] = max(held, t)
        return out

    penalty = QuadraticPenalty(float(rho), np.ones(dim, dtype=bool), b)  # as ADMM passes it

    def training_length(x):
        return None if no_length is not None and no_length(np.asarray(x, dtype=float)) else length

    problem = ThetaProblem(
        dim=dim, evaluate=evaluate, augment=lambda x, obs: obs.loss + penalty(x), penalty=penalty,
        discrete=np.zeros(dim, dtype=bool), names=tuple(f"x{i}" for i in range(dim)),
        history=list(history), start=np.full(dim, 0.5), training_length=training_length,
        batch_size=batch_size,
    )
    return problem, log


class ToyEngine:
    """A cached black box over ``space``: ``loss(config)`` of the readable configuration, repeats
    answered with ``cached=True``, like the real engine. Logs every new request in ``calls`` as
    ``(z, θ, fidelity, phase)``.

    ``fidelity_bias`` adds ``bias × (1 − fidelity)`` to the loss of partial-data evaluations;
    ``duration`` (seconds, or a function of the configuration) is reported per evaluation (as its
    duration and, for a success, its fit time) and,
    with a ``clock`` (an object with a ``now`` attribute), advances it. An evaluation longer than
    ``timeout`` is stopped there, as the real engine's per-trial limit does: status ``TIMEOUT``,
    the failure loss 1.0, ``duration=timeout``.

    ``submit``/``collect`` are the asynchronous engine's: a submitted request runs on one of the
    workers at once (the caller keeps at most as many in flight as it has workers) and ends
    ``duration`` later on the ``clock`` (which ``collect`` moves to that end); ``collect``
    returns the trial that ends first (the oldest, without a clock), as a cluster of workers
    would. A request asked while the same one is in flight is answered with it.
    """

    def __init__(self, space: Any, loss: Callable[[dict], float], *, fidelity_bias: float = 0.0,
                 duration: "float | Callable[[dict], float]" = 0.0, clock: Any = None,
                 timeout: float | None = None) -> None:
        self.space = space
        self.loss = loss
        self.fidelity_bias = fidelity_bias
        self.duration = duration
        self.timeout = timeout
        self.clock = clock
        self.calls: list[tuple] = []
        self.tags_seen: list[dict] = []
        self.time_left_seen: list[float | None] = []
        self.cache: dict[str, Observation] = {}
        self._tickets = 0
        #: in flight: (end time, order, ticket, key, observation); answered, not collected
        self._running: list[tuple[float, int, int, str, Observation]] = []
        self._ready: list[tuple[int, Observation]] = []

    def __call__(self, requests: Sequence[Request], time_left: float | None = None,
                 tags: dict | None = None) -> list[Observation]:
        self.time_left_seen.append(time_left)
        self.tags_seen.append(dict(tags or {}))
        out = []
        for r in requests:
            key = self._key(r)
            if key in self.cache:
                out.append(replace(self.cache[key], cached=True))
                continue
            obs = self._evaluate(r, tags)
            if self.clock is not None:
                self.clock.now += obs.duration
            self.cache[key] = obs
            out.append(obs)
        return out

    def submit(self, request: Request, time_left: float | None = None,
               tags: dict | None = None) -> int:
        self.time_left_seen.append(time_left)
        self.tags_seen.append(dict(tags or {}))
        ticket, self._tickets = self._tickets, self._tickets + 1
        key = self._key(request)
        running = [r for r in self._running if r[3] == key]
        if key in self.cache or running:
            source = self.cache[key] if key in self.cache else running[0][4]
            self._ready.append((ticket, replace(source, cached=True)))
            return ticket
        obs = self._evaluate(request, tags)
        now = 0.0 if self.clock is None else self.clock.now
        self._running.append((now + obs.duration, ticket, ticket, key, obs))
        return ticket

    def answered(self, ticket: int) -> bool:
        """Whether ``ticket`` is answered and waits for :meth:`collect` (as the engine's
        :meth:`~admm_automl.evaluation.PipelineObjective.answered`)."""
        return any(t == ticket for t, _ in self._ready)

    def collect(self, timeout: float | None = None) -> list[tuple[int, Observation]]:
        if not self._ready and self._running:
            first = min(self._running) if self.clock is not None else self._running[0]
            self._running.remove(first)
            end, _, ticket, key, obs = first
            if self.clock is not None:
                self.clock.now = max(self.clock.now, end)
            self.cache[key] = obs
            self._ready.append((ticket, obs))
        ready, self._ready = self._ready, []
        return ready

    def _key(self, r: Request) -> str:
        return f"{self.space.key(r.z, r.theta)}|{r.fidelity:.6g}"

    def _evaluate(self, r: Request, tags: dict | None) -> Observation:
        self.calls.append((r.z, np.array(r.theta), r.fidelity, (tags or {}).get("phase")))
        config = self.space.decode(r.z, r.theta)
        seconds = self.duration(config) if callable(self.duration) else self.duration
        timed_out = self.timeout is not None and seconds > self.timeout
        seconds = min(seconds, self.timeout) if timed_out else seconds
        if timed_out:
            return Observation(loss=1.0, status=Status.TIMEOUT, fidelity=r.fidelity,
                               duration=seconds, eval_id=len(self.calls) - 1)
        loss = self.loss(config) + self.fidelity_bias * (1.0 - r.fidelity)
        return Observation(loss=loss, fidelity=r.fidelity, fit_time=seconds,
                           duration=seconds, eval_id=len(self.calls) - 1)


class FakeClock:
    """A clock that only moves when told (``now``), for time budgets in tests."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now
