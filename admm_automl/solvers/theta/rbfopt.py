"""``rbfopt``: RBFOpt (radial-basis-function surrogate optimisation) for θ-min.

RBFOpt only offers a run-to-completion loop, so :meth:`RBFOptThetaSolver.run` hands it an
objective that evaluates through ``problem.evaluate``. Its auxiliary problems need an AMPL-protocol
solver program; the ``ripopt`` executable shipped inside the ``pyomo-ripopt`` wheel is looked up at
run time (a plain PyPI install, no system package needed; it treats integers as continuous, which
is what θ-min needs, since integers are relaxed there). Both come with the ``rbfopt`` extra,
``pip install 'admm-automl[rbfopt]'``, not with the core: rbfopt pulls Pyomo, Sphinx and numpydoc,
and no default path uses it.
"""

from __future__ import annotations

import copy
import importlib.util
import math
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from ...exceptions import MissingDependencyError
from ...records import Suggestion
from ..base import BaseThetaSolver
from ..registry import THETA_SOLVERS

#: rbfopt rounds of a single run(n) call that may end without a new evaluation before padding
_MAX_IDLE_ROUNDS = 3
#: iterations one ask may replay or discard before it gives up and asks a random point
_MAX_ITERS_PER_ASK = 50


def find_ripopt() -> str | None:
    """Path of the ``ripopt`` program inside the installed ``pyomo-ripopt`` package, or None."""
    spec = importlib.util.find_spec("pyomo_ripopt")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        path = Path(folder) / "bin" / "ripopt"
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    return None


def _import_rbfopt() -> Any:
    try:
        import rbfopt
    except ImportError as err:
        raise MissingDependencyError(
            f"theta solver 'rbfopt' needs the rbfopt package, which is not installed ({err}): "
            "pip install 'admm-automl[rbfopt]'"
        ) from None
    return rbfopt


def _solver_program() -> str:
    path = find_ripopt()
    if path is None:
        raise MissingDependencyError(
            "theta solver 'rbfopt' needs the 'ripopt' program shipped in the pyomo-ripopt wheel "
            "for its auxiliary problems, and it was not found: pip install 'admm-automl[rbfopt]' "
            "(or pip install pyomo-ripopt)"
        )
    return path


class _NullStream:
    """RBFOpt's log goes nowhere (it insists on a stream with ``write`` and ``flush``)."""

    def write(self, text: str) -> None:
        pass

    def flush(self) -> None:
        pass


class _Stop(Exception):
    """Internal: the evaluation budget of this run is spent (ends RBFOpt's loop)."""


class _NeedValue(Exception):
    """Internal: RBFOpt asked for a point whose value is not known yet (ask/tell replay)."""

    def __init__(self, x: np.ndarray) -> None:
        super().__init__("need value")
        self.x = x


@contextmanager
def _rbfopt_random_state(holder: dict) -> Iterator[None]:
    """Run with RBFOpt's own stream in the global ``np.random`` (RBFOpt draws from it), then put
    the caller's global state back: the rest of the process never sees RBFOpt's seeding."""
    outer = np.random.get_state()
    np.random.set_state(holder["state"])
    try:
        yield
    finally:
        holder["state"] = np.random.get_state()
        np.random.set_state(outer)


@THETA_SOLVERS.register("rbfopt")
class RBFOptThetaSolver(BaseThetaSolver):
    """RBFOpt radial-basis-function surrogate search (Costa & Nannicini), as in Liu et al. 2020.

    ``run(n)`` calls RBFOpt's own loop (the protected ``_run`` hook) with ``max_evaluations = n`` and
    an objective that evaluates through ``problem.evaluate`` and scores with ``problem.augment`` (so the ADMM penalty is part
    of the black box, as in the paper). The auxiliary sub-problems are solved by the ``ripopt``
    program inside the ``pyomo-ripopt`` package (passed as both ``minlp_solver_path`` and
    ``nlp_solver_path``); without it setup raises :class:`MissingDependencyError` naming the
    package. Variables are continuous ("R"): discrete coordinates stay relaxed in θ-min.

    Guarantees and choices:

    * exactly ``n`` new evaluations, as every solver: RBFOpt evaluates its whole initial design at
      once, so the objective stops it after the ``n``-th new evaluation (a budget below the design size — about
      (dim+1)/2 Latin-hypercube points plus the midpoint — evaluates a prefix of the design); if
      RBFOpt stops early (all candidate points discarded), it is restarted warm, and after
      ``3`` such rounds without progress the rest of the budget is uniform random points;
    * :class:`~admm_automl.exceptions.BudgetExhausted` raised by ``problem.evaluate`` propagates
      out of RBFOpt unchanged (RBFOpt catches only ``LinAlgError`` around its objective);
    * warm start: every ``problem.history`` observation (and earlier trials) is given to RBFOpt as
      an initial node with its value re-scored by ``problem.augment``; with at least dim+1 of them
      RBFOpt's own initial design is skipped. ``problem.start`` is evaluated first when it is not
      in the history;
    * a point RBFOpt proposes that was already observed (e.g. the midpoint of its design when it
      is a warm-start node) is answered from memory, without an evaluation;
    * NaN/±inf values are given to RBFOpt as the worst finite value seen (0 if none is finite yet);
    * RBFOpt draws from the global ``np.random``; it is seeded from the rng given to ``setup`` and
      swapped in only while RBFOpt runs, so neither side disturbs the other;
    * ask/tell (``ask`` without ``run``) replays RBFOpt one iteration at a time from a snapshot
      until it wants an unknown point; a second ask while one is pending is uniform random
      (``supports_batch`` is False).

    Parameters
    ----------
    max_iterations_factor : int, default=10
        RBFOpt may run up to ``factor × n`` iterations (discarded ones included) per ``run(n)``.

    References
    ----------
    Costa, Nannicini, "RBFOpt: an open-source library for black-box optimization with costly
    function evaluations", Mathematical Programming Computation 10 (2018).
    Liu, Ram et al., AAAI 2020, Section 5.
    """

    #: the ``rbfopt`` extra: checked before any work (:meth:`check_requirements`)
    requires = (("rbfopt", "'admm-automl[rbfopt]'"), ("pyomo_ripopt", "'admm-automl[rbfopt]'"))

    def __init__(self, max_iterations_factor: int = 10) -> None:
        self.max_iterations_factor = max_iterations_factor

    # ------------------------------------------------------------------ setup
    def _setup(self) -> None:
        _import_rbfopt()  # fail early, with the install hint
        self.program_ = _solver_program()
        self.first_ = self._start_point()
        self.session_: dict | None = None

    def update_problem(self, problem) -> None:
        """New ADMM iterate: the next ``run`` or ``ask`` restarts RBFOpt warm from the new
        problem's history."""
        super().update_problem(problem)
        self.session_ = None

    # ------------------------------------------------------------------ values
    def _known(self) -> tuple[np.ndarray, np.ndarray]:
        """Every observed point and its augmented value (non-finite -> worst finite, or 0)."""
        problem = self.problem_
        pairs = list(problem.history) + list(self.trials_)
        dim = int(problem.dim)
        X = np.array([np.clip(np.asarray(x, dtype=float), 0.0, 1.0) for x, _ in pairs])
        X = X.reshape(len(pairs), dim)
        y = np.array([problem.augment(x, obs) for x, obs in pairs], dtype=float)
        finite = np.isfinite(y)
        y[~finite] = y[finite].max() if finite.any() else 0.0
        return X, y

    def _lookup(self, x: np.ndarray) -> float | None:
        """The value of an already observed point equal to ``x`` (RBFOpt re-proposes e.g. the box
        midpoint of its design when that point is a warm-start node), else None."""
        X, y = self._known()
        if len(X):
            gap = np.max(np.abs(X - np.asarray(x, dtype=float)), axis=1)
            if gap.min() <= 1e-9:
                return float(y[int(np.argmin(gap))])
        return None

    def _finite(self, value: float) -> float:
        if math.isfinite(value):
            return float(value)
        _, y = self._known()
        return float(y.max()) if len(y) else 0.0

    def _algorithm(self, objective: Callable[[np.ndarray], float], max_evaluations: int):
        """A fresh RbfoptAlgorithm warm-started with every known point; returns (alg, rng holder)."""
        rbfopt = _import_rbfopt()
        dim = int(self.problem_.dim)
        X, y = self._known()
        if len(X):  # identical points (cached repeats in the history) count once
            _, first = np.unique(np.round(X, 12), axis=0, return_index=True)
            keep = np.sort(first)
            X, y = X[keep], y[keep]
        seed = int(self.rng_.integers(2**31 - 1))
        settings = rbfopt.RbfoptSettings(
            max_evaluations=int(max_evaluations),
            max_iterations=max(1000, int(self.max_iterations_factor) * int(max_evaluations)),
            minlp_solver_path=self.program_,
            nlp_solver_path=self.program_,
            rand_seed=seed,
            print_solver_output=False,
        )
        box = rbfopt.RbfoptUserBlackBox(dim, np.zeros(dim), np.ones(dim), np.array(["R"] * dim), objective)
        holder = {"state": np.random.get_state()}
        with _rbfopt_random_state(holder):  # the constructor seeds the global stream
            alg = rbfopt.RbfoptAlgorithm(
                settings, box,
                init_node_pos=X if len(X) else None,
                init_node_val=y if len(X) else None,
                do_init_strategy=len(X) < dim + 1,
            )
        alg.set_output_stream(_NullStream())
        return alg, holder

    def _evaluate_one(self, x: np.ndarray) -> Any:
        """Ask ``x`` and evaluate it through the problem (the protocol's bookkeeping and count)."""
        suggestion = Suggestion(self.n_asked_, np.clip(np.asarray(x, dtype=float), 0.0, 1.0), None)
        self.n_asked_ += 1
        self.pending_[suggestion.id] = suggestion
        (observation,) = self._evaluate([suggestion])
        return observation

    # ------------------------------------------------------------------ run (RBFOpt's loop)
    def _run(self) -> None:
        """``problem.start`` if new, then RBFOpt's loop until the new evaluations are made."""
        self.session_ = None  # ask/tell replay state does not know the points evaluated here
        if not self._run_done() and self.first_ is not None:
            first, self.first_ = self.first_, None
            self._evaluate_one(first)
        idle = 0
        while not self._run_done() and idle < _MAX_IDLE_ROUNDS:
            before = (self.fresh_left_, self.cached_left_)
            self._rbfopt_round()
            idle = idle + 1 if (self.fresh_left_, self.cached_left_) == before else 0
        while not self._run_done():  # RBFOpt gave up (every candidate discarded): random points
            self._evaluate_one(self.rng_.uniform(0.0, 1.0, size=self.problem_.dim))

    def _rbfopt_round(self) -> None:
        """One RBFOpt run, stopped when :meth:`run` has its new evaluations."""
        holder: dict = {}

        def objective(x: np.ndarray) -> float:
            known = self._lookup(x)
            if known is not None:  # answered from memory: no evaluation, no budget
                return known
            if self._run_done():
                raise _Stop
            # the evaluation runs with the caller's global np.random, RBFOpt's is put aside
            inner = np.random.get_state()
            np.random.set_state(holder["outer"])
            try:
                observation = self._evaluate_one(np.array(x, dtype=float))
            finally:
                holder["outer"] = np.random.get_state()
                np.random.set_state(inner)
            return self._finite(self.problem_.augment(self.trials_[-1][0], observation))

        alg, rng_holder = self._algorithm(objective, self.fresh_left_)
        holder["outer"] = np.random.get_state()
        np.random.set_state(rng_holder["state"])
        try:
            alg.optimize()
        except _Stop:
            pass
        finally:
            np.random.set_state(holder["outer"])

    # ------------------------------------------------------------------ ask / tell (replay)
    def _ask(self) -> tuple[np.ndarray, None]:
        if self.first_ is not None:
            x, self.first_ = self.first_, None
            return x, None
        if self.pending_:  # one point at a time: RBFOpt cannot propose a second one yet
            return self.rng_.uniform(0.0, 1.0, size=self.problem_.dim), None
        x = self._replay_next()
        if x is None:
            x = self.rng_.uniform(0.0, 1.0, size=self.problem_.dim)
        return np.clip(x, 0.0, 1.0), None

    def _replay_next(self) -> np.ndarray | None:
        """Advance RBFOpt iteration by iteration until it asks a point whose value is unknown.

        Each iteration starts from a deep copy; when it needs an unknown value the copy is
        restored (with RBFOpt's random state), so after ``tell`` the same iteration is replayed,
        now finds the value, and continues.
        """
        if self.session_ is None:
            X, y = self._known()
            values: dict = {"points": list(X), "values": list(y)}

            def objective(x: np.ndarray) -> float:
                x = np.asarray(x, dtype=float)
                for point, value in zip(values["points"], values["values"]):
                    if np.max(np.abs(point - x)) <= 1e-12:
                        return value
                raise _NeedValue(np.array(x, dtype=float))

            alg, holder = self._algorithm(objective, 10**9)
            self.session_ = {"alg": alg, "rng": holder, "known": values}
        session = self.session_
        for _ in range(_MAX_ITERS_PER_ASK):
            alg = session["alg"]
            memo = {id(alg.bb): alg.bb, id(alg.output_stream): alg.output_stream}
            snapshot = copy.deepcopy(alg, memo)
            state = session["rng"]["state"]
            before = alg.itercount
            try:
                with _rbfopt_random_state(session["rng"]):
                    alg.optimize(pause_after_iters=1)
            except _NeedValue as need:
                session["alg"] = snapshot
                session["rng"]["state"] = state
                return need.x
            if alg.itercount == before:  # RBFOpt has stopped
                return None
        return None

    def _tell(self, suggestion: Suggestion, observation: Any) -> None:
        if self.session_ is not None:
            value = self._finite(self.problem_.augment(suggestion.config, observation))
            self.session_["known"]["points"].append(np.asarray(suggestion.config, dtype=float))
            self.session_["known"]["values"].append(value)
