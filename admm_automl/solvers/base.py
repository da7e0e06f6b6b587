"""The ask/tell protocol every solver follows.

``setup(problem, rng)`` starts a solver on a sub-problem; ``ask()`` proposes a :class:`Suggestion`;
``tell(suggestion, observation)`` feeds the raw result back; ``best()`` is the best configuration
seen, scored with ``problem.augment`` (history included); ``run(n_evals)`` asks, evaluates and tells
``n_evals`` times. A library that only offers run-to-completion overrides ``run``.

Rules shared by all solvers (checked by the conformance tests):

* ``__init__`` only stores hyperparameters; all state is built in ``setup`` (attributes end in ``_``).
* all randomness comes from the ``rng`` given to ``setup``;
* ``tell`` accepts failed observations (their loss is already the metric's worst value);
* evaluation happens only through ``problem.evaluate``.
"""

from __future__ import annotations

import abc
import inspect
from typing import Any, ClassVar

import numpy as np

from ..exceptions import SolverError, UnknownSuggestionError
from ..problem import ThetaProblem, ZProblem
from ..records import Observation, Suggestion


class ParamsMixin:
    """scikit-learn style ``get_params``/``set_params`` from the ``__init__`` signature, so that
    :func:`sklearn.base.clone` and nested ``set_params(theta_solver__x=...)`` work."""

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return sorted(
            p.name for p in sig.parameters.values() if p.name != "self" and p.kind != p.VAR_KEYWORD
        )

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params: Any) -> "ParamsMixin":
        valid = self._param_names()
        for key, value in params.items():
            if key not in valid:
                raise ValueError(
                    f"Invalid parameter {key!r} for {type(self).__name__}. Valid: {valid!r}"
                )
            setattr(self, key, value)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"


class BaseSolver(ParamsMixin, abc.ABC):
    """Template for solvers: id bookkeeping, history, ``run`` and ``best``."""

    #: registry name (set by the ``register`` decorator)
    name: ClassVar[str] = ""
    #: "theta" or "z"
    kind: ClassVar[str] = ""
    #: whether ``ask`` may be called several times before ``tell`` (parallel batches)
    supports_batch: ClassVar[bool] = False
    #: whether suggestions carry a fidelity (a fraction of the training rows) below 1
    supports_fidelity: ClassVar[bool] = False

    # -------------------------------------------------------------- lifecycle
    def setup(self, problem: Any, rng: np.random.Generator) -> "BaseSolver":
        """Start on ``problem``; drop any state from an earlier problem."""
        self.problem_ = problem
        self.rng_ = rng
        self.pending_: dict[int, Suggestion] = {}
        self.trials_: list[tuple[Any, Observation]] = []
        self.n_asked_ = 0
        self._setup()
        return self

    def update_problem(self, problem: Any) -> None:
        """Move to a new ADMM iterate of the same kind of problem, keeping solver state."""
        self.problem_ = problem
        self.trials_ = []

    def _setup(self) -> None:
        """Hook for subclasses: build state from ``self.problem_``."""

    # -------------------------------------------------------------- ask / tell
    def ask(self) -> Suggestion:
        if not hasattr(self, "problem_"):
            raise SolverError(f"{type(self).__name__}.ask() called before setup()")
        config, fidelity = self._ask()
        suggestion = Suggestion(self.n_asked_, config, fidelity)
        self.n_asked_ += 1
        self.pending_[suggestion.id] = suggestion
        return suggestion

    def tell(self, suggestion: Suggestion, observation: Observation) -> None:
        if self.pending_.pop(suggestion.id, None) is None:
            raise UnknownSuggestionError(
                f"{type(self).__name__}.tell() got suggestion id {suggestion.id}, which was not "
                "asked or was already told"
            )
        self.trials_.append((suggestion.config, observation))
        self._tell(suggestion, observation)

    @abc.abstractmethod
    def _ask(self) -> tuple[Any, float | None]:
        """Return ``(config, fidelity)``."""

    def _tell(self, suggestion: Suggestion, observation: Observation) -> None:
        """Hook for subclasses."""

    # -------------------------------------------------------------- driving
    def run(self, n_evals: int) -> None:
        """Ask, evaluate and tell ``n_evals`` times (budget errors propagate to the caller).

        A solver with ``supports_batch`` asks ``problem.batch_size`` suggestions at a time, so a
        parallel executor evaluates them together.
        """
        left = int(n_evals)
        batch = max(1, int(getattr(self.problem_, "batch_size", 1))) if self.supports_batch else 1
        while left > 0:
            suggestions = [self.ask() for _ in range(min(batch, left))]
            observations = self.problem_.evaluate(suggestions)
            for suggestion, observation in zip(suggestions, observations):
                self.tell(suggestion, observation)
            left -= len(suggestions)

    def best(self) -> tuple[Any, Observation] | None:
        """Best ``(config, observation)`` of this problem's history and this solver's trials."""
        candidates = list(self.problem_.history) + list(self.trials_)
        if not candidates:
            return None
        scores = np.array([self.problem_.augment(c, o) for c, o in candidates], dtype=float)
        scores[~np.isfinite(scores)] = np.inf  # a NaN score never wins
        return candidates[int(np.argmin(scores))]


class BaseThetaSolver(BaseSolver):
    """Continuous optimiser over the active unit box of a :class:`ThetaProblem`."""

    kind = "theta"
    problem_: ThetaProblem


class BaseZSolver(BaseSolver):
    """Algorithm selection over the module choices of a :class:`ZProblem`."""

    kind = "z"
    problem_: ZProblem
