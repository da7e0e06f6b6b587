"""The ask/tell protocol every solver follows.

``setup(problem, rng)`` starts a solver on a sub-problem; ``ask()`` proposes a :class:`Suggestion`
(``ask_batch(n)``: ``n`` at once, each pending when the next is made, for ``n`` free workers);
``tell(suggestion, observation)`` feeds the raw result back; ``best()`` is the best configuration
seen, scored with ``problem.augment`` (history included); ``run(n_evals)`` asks, evaluates and tells
until ``n_evals`` *new* evaluations are made: answers from the objective's cache are free, at most
``max(100, 10·n_evals)`` of them per call, so an exhausted space ends the call; a problem with a
finite number of configurations (every θ coordinate discrete, or the z choices at full fidelity)
ends it at the first cache hit once each has been told (in the history or in this call). A solver
that must drive someone else's loop (RBFOpt) overrides the protected ``_run`` and evaluates
through ``_evaluate``, which keeps that count (the loops are in :mod:`admm_automl.solvers.loop`).

Rules shared by all solvers (checked by the conformance tests):

* ``__init__`` only stores hyperparameters; all state is built in ``setup`` (attributes end in ``_``).
* all randomness comes from the ``rng`` given to ``setup``;
* ``tell`` accepts failed observations (their loss is already the metric's worst value);
* evaluation happens only through ``problem.evaluate``.

State across ADMM iterations: a θ-solver is created afresh for every θ-step unless its class sets
``keeps_state = True``. Then the ADMM loop keeps one instance per algorithm selection z: ``setup``
at the first θ-step of z, ``update_problem`` (with the new duals, history and start) whenever ADMM
returns to z — so a solver whose state belongs to one z's θ-box (FLAML's search threads, a
learning-curve model) carries it on. Such a solver must re-score what it keeps with the new
problem's ``augment``: the duals have changed. Solvers that do not set it keep bit-identical
fixed-seed histories whatever other solvers do.

Helpers for subclasses: :meth:`BaseSolver._start_point` (the problem's start unless the history has
it) and :func:`random_z` (one uniform choice per module).
"""

from __future__ import annotations

import abc
import importlib.util
import math
import weakref
from collections import Counter
from typing import Any, ClassVar

import numpy as np

from .._params import ParamsMixin
from ..exceptions import MissingDependencyError, SolverError, UnknownSuggestionError
from ..problem import ThetaProblem, ZProblem
from ..records import Observation, Suggestion
from .loop import RunLoop


#: two θ points closer than this (Euclidean, unit box) count as the same configuration
DUPLICATE_TOL = 1e-6


#: times a batch solver is asked again when it proposes a configuration still in flight
PENDING_RETRIES = 16


def _identity(config: Any, fidelity: float | None) -> tuple:
    """A hashable identity of a proposal: its coordinates (to 1e-9) and fidelity (None: 1)."""
    values = np.round(np.asarray(config, dtype=float).ravel(), 9)
    return (*values.tolist(), 1.0 if fidelity is None else float(fidelity))


class PendingSuggestions(dict):
    """``pending_``: the suggestions asked and not yet told, by id — a dict that tells its solver
    when one is added or removed (:meth:`BaseSolver._pending_added`, ``_pending_removed``), so
    that what every ask must know about them (their identities; ``cmab``'s pulls per arm) is
    kept as they come and go instead of recomputed from all of them at every ask."""

    def __init__(self, owner: "BaseSolver") -> None:
        super().__init__()
        # weak: a solver dropped by the optimiser is freed at once, not by the cycle collector
        # (its problem's view of the trials in flight goes with it)
        self._owner = weakref.ref(owner)

    def _added(self, suggestion: Suggestion) -> None:
        owner = self._owner()
        if owner is not None:
            owner._pending_added(suggestion)

    def _removed(self, suggestion: Suggestion) -> None:
        owner = self._owner()
        if owner is not None:
            owner._pending_removed(suggestion)

    def __setitem__(self, key: int, suggestion: Suggestion) -> None:
        if key in self:
            self._removed(super().pop(key))
        super().__setitem__(key, suggestion)
        self._added(suggestion)

    def __delitem__(self, key: int) -> None:
        self._removed(super().pop(key))

    def pop(self, key: int, *default: Any) -> Any:
        if key in self:
            suggestion = super().pop(key)
            self._removed(suggestion)
            return suggestion
        if default:
            return default[0]
        raise KeyError(key)

    def popitem(self) -> tuple[int, Suggestion]:
        key, suggestion = super().popitem()
        self._removed(suggestion)
        return key, suggestion

    def clear(self) -> None:
        for key in list(self):
            del self[key]

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, suggestion in dict(*args, **kwargs).items():
            self[key] = suggestion

    def setdefault(self, key: int, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]

    # a copy or a pickle of the solver gets a dict that tells the copy, not the original
    def __reduce__(self) -> tuple:
        return _rebuild_pending, (self._owner(), dict(self))

    def __deepcopy__(self, memo: dict) -> "PendingSuggestions":
        import copy

        owner = self._owner()
        new = PendingSuggestions.__new__(PendingSuggestions)
        dict.__init__(new, copy.deepcopy(dict(self), memo))
        new._owner = weakref.ref(memo.get(id(owner), owner))
        return new


def _rebuild_pending(owner: Any, items: dict) -> PendingSuggestions:
    """:class:`PendingSuggestions` from a pickle: the items as they were (the owner's kept
    multisets travel with the owner)."""
    new = PendingSuggestions.__new__(PendingSuggestions)
    dict.__init__(new, items)
    new._owner = (lambda: None) if owner is None else weakref.ref(owner)
    return new


class Taken:
    """What a new proposal must not repeat (:meth:`BaseSolver._taken`): the identities of the
    solver's pending suggestions and of the trials its problem has in flight, read from the
    multisets both keep as suggestions come and go, plus those ``add``-ed for a batch; nothing
    is copied when it is made."""

    __slots__ = ("_sets", "_extra")

    def __init__(self, *sets: Any) -> None:
        self._sets = sets
        self._extra: set[tuple] = set()

    def __contains__(self, key: tuple) -> bool:
        return key in self._extra or any(key in s for s in self._sets)

    def add(self, key: tuple) -> None:
        self._extra.add(key)

    def __bool__(self) -> bool:
        return bool(self._extra) or any(len(s) for s in self._sets)


def random_z(rng: np.random.Generator, n_choices: tuple[int, ...]) -> tuple[int, ...]:
    """One uniform choice per module."""
    return tuple(int(rng.integers(k)) for k in n_choices)


class BaseSolver(ParamsMixin, RunLoop, abc.ABC):
    """Template for solvers: id bookkeeping, history, ``run`` and ``best``."""

    #: registry name (set by the ``register`` decorator)
    name: ClassVar[str] = ""
    #: "theta" or "z"
    kind: ClassVar[str] = ""
    #: whether ``ask`` may be called several times before ``tell`` (parallel batches)
    supports_batch: ClassVar[bool] = False
    #: whether suggestions carry a fidelity (a fraction of the training rows) below 1
    supports_fidelity: ClassVar[bool] = False
    #: whether the ADMM loop keeps one instance per algorithm selection z and calls
    #: ``update_problem`` when it returns to z, instead of a fresh instance per θ-step
    keeps_state: ClassVar[bool] = False
    #: whether :meth:`ask_cheap` works, so that an overhead-aware :meth:`run` can add cheap
    #: proposals to a batch (the solver's ``tell`` must accept any configuration)
    supports_cheap_proposals: ClassVar[bool] = False
    #: packages the solver needs beyond the core install, as ``(module, what to pip install)``
    requires: ClassVar[tuple[tuple[str, str], ...]] = ()

    @classmethod
    def check_requirements(cls) -> None:
        """Raise :class:`MissingDependencyError`, saying what to install, when a package in
        :attr:`requires` is missing (run before any work, so that a run does not fail at its
        first θ-step after minutes of search)."""
        for module, install in cls.requires:
            if importlib.util.find_spec(module) is None:
                raise MissingDependencyError(
                    f"{cls.kind}-solver {cls.name!r} needs {module}, which is not installed: "
                    f"pip install {install}")

    # -------------------------------------------------------------- lifecycle
    def setup(self, problem: Any, rng: np.random.Generator) -> "BaseSolver":
        """Start on ``problem``; drop any state from an earlier problem."""
        self.problem_ = problem
        self.rng_ = rng
        #: :meth:`_identity` of each suggestion, by id, once asked for (:meth:`_key`)
        self.identities_: dict[int, tuple] = {}
        #: the identities of the pending suggestions, a multiset kept by ``pending_``
        self.pending_keys_: Counter = Counter()
        self.pending_: dict[int, Suggestion] = PendingSuggestions(self)
        #: an asynchronous run's suggestions left in flight by an earlier call (their tickets)
        self.flying_: dict[int, Suggestion] = {}
        self.trials_: list[tuple[Any, Observation]] = []
        self.n_asked_ = 0
        self.fresh_left_ = self.cached_left_ = 0
        self.last_cached_ = False
        self._count_configurations()
        self._setup()
        return self

    def update_problem(self, problem: Any) -> None:
        """Move to a new ADMM iterate of the same kind of problem, keeping solver state."""
        self.problem_ = problem
        self.trials_ = []
        self._count_configurations()

    def _count_configurations(self) -> None:
        """The problem's number of distinct configurations (None: unbounded) and those told so
        far, from its history."""
        self.n_configurations_ = self._n_configurations()
        self.told_ = set()
        if self.n_configurations_ is not None:
            self.told_ = {self._configuration(x) for x, _ in self._known_history()}

    def _n_configurations(self) -> int | None:
        """Hook: how many distinct configurations the problem has (None: unbounded, unknown)."""
        return None

    def _known_history(self) -> list[tuple[Any, Observation]]:
        """Hook: the history entries that count as told configurations and compete in
        :meth:`best` (default: all of ``problem.history``)."""
        return list(self.problem_.history)

    def _configuration(self, config: Any) -> Any:
        """Hook: a hashable identity of the configuration ``config`` evaluates."""
        return config

    def _setup(self) -> None:
        """Hook for subclasses: build state from ``self.problem_``."""

    # -------------------------------------------------------------- ask / tell
    def ask(self) -> Suggestion:
        """A new suggestion. A solver with ``supports_batch`` whose proposal repeats one still
        pending (asked, not yet told: in flight) is asked again, up to :data:`PENDING_RETRIES`
        times: the engine would answer the repeat from the trial in flight, so it would take a
        worker's turn and teach nothing. So is one that repeats a trial the problem says is in
        flight for an earlier step (``problem.in_flight``)."""
        if not hasattr(self, "problem_"):
            raise SolverError(f"{type(self).__name__}.ask() called before setup()")
        return self._issue_new(*self._propose())

    def _propose(self) -> tuple[Any, float | None]:
        """The next proposal of :meth:`ask`: :meth:`_ask` (a z-solver proposes the problem's
        warm start first, :meth:`BaseZSolver._propose`)."""
        return self._ask()

    def ask_batch(self, n: int) -> list[Suggestion]:
        """``n`` suggestions, each pending when the next is made: what :meth:`run` asks when
        ``n`` workers are free at once. By default :meth:`ask` ``n`` times (what they must not
        repeat found once for all of them); a solver may make them together at less cost
        (``bo``: one acquisition search for the lot), as long as ``ask_batch(1)`` is
        ``[ask()]``."""
        n = int(n)
        if n <= 1 or not self.supports_batch or type(self).ask is not BaseSolver.ask:
            return [self.ask() for _ in range(n)]
        if not hasattr(self, "problem_"):
            raise SolverError(f"{type(self).__name__}.ask_batch() called before setup()")
        taken = self._taken()
        return [self._issue_new(*self._propose(), taken) for _ in range(n)]

    def _issue_new(self, config: Any, fidelity: float | None,
                   taken: set[tuple] | None = None) -> Suggestion:
        """Issue a proposal of :meth:`_ask`, asked again while it repeats a pending one (see
        :meth:`ask`). ``taken``: :meth:`_taken`, computed once for a batch (the new suggestion
        is added to it)."""
        if self.supports_batch:
            taken = self._taken() if taken is None else taken
            if taken and self._identity(config, fidelity) in taken:
                config, fidelity = self._propose_untaken(taken)
        suggestion = self._issue(config, fidelity)
        if taken is not None:
            taken.add(self._key(suggestion))
        return suggestion

    def _propose_untaken(self, taken: set[tuple]) -> tuple[Any, float | None]:
        """Hook: a proposal in place of one that repeats an identity in ``taken``. By default
        :meth:`_ask` again, up to :data:`PENDING_RETRIES` times (the last answer stands if every
        one repeats); a solver that can name its next-best proposal directly answers it so
        (``cmab``: the same draw's best pipeline not in ``taken``)."""
        for _ in range(PENDING_RETRIES):
            config, fidelity = self._ask()
            if self._identity(config, fidelity) not in taken:
                break
        return config, fidelity

    def _taken(self) -> Taken:
        """The identities of the pending suggestions and of the trials the problem has in
        flight for earlier steps (``problem.in_flight``): what a new proposal must not repeat.
        Both are kept as suggestions are issued and told and as trials are submitted and
        answered (``pending_keys_``; the engine's ``in_flight.identities``), so an ask does not
        walk the trials in flight; a problem whose ``in_flight`` is a plain callable is read
        in full."""
        if type(self.pending_) is not PendingSuggestions:  # a subclass replaced it
            self.pending_keys_ = Counter(self._key(s) for s in self.pending_.values())
        in_flight = getattr(self.problem_, "in_flight", None)
        identities = getattr(in_flight, "identities", None)
        if identities is not None:
            flying = identities(self._identity)
        else:
            flying = {self._identity(c, f) for c, f in (in_flight() if in_flight else ())}
        return Taken(self.pending_keys_, flying)

    def _in_flight_elsewhere(self) -> list[tuple[Any, float | None]]:
        """``(config, fidelity)`` of the trials the problem has in flight for earlier steps
        (``problem.in_flight``) that are not pending here: what a solver that models its pending
        suggestions (a constant liar) should model as pending too. Reads them all: for solvers
        whose ask costs far more than that (``skopt``, ``flash``)."""
        in_flight = getattr(self.problem_, "in_flight", None)
        if in_flight is None:
            return []
        mine = {self._key(s) for s in self.pending_.values()}
        return [(c, f) for c, f in in_flight() if self._identity(c, f) not in mine]

    def _pending_added(self, suggestion: Suggestion) -> None:
        """Hook of ``pending_`` (:class:`PendingSuggestions`): ``suggestion`` became pending."""
        if self.supports_batch:
            self.pending_keys_[self._key(suggestion)] += 1

    def _pending_removed(self, suggestion: Suggestion) -> None:
        """Hook of ``pending_``: ``suggestion`` is no longer pending (told or dropped)."""
        key = self.identities_.pop(suggestion.id, None)
        if key is not None and key in self.pending_keys_:
            self.pending_keys_[key] -= 1
            if self.pending_keys_[key] <= 0:
                del self.pending_keys_[key]

    def _key(self, suggestion: Suggestion) -> tuple:
        """:meth:`_identity` of an issued suggestion, computed once (a batch of many workers
        compares every new proposal with all those in flight)."""
        key = self.identities_.get(suggestion.id)
        if key is None:
            key = self._identity(suggestion.config, suggestion.fidelity)
            self.identities_[suggestion.id] = key
        return key

    def _identity(self, config: Any, fidelity: float | None) -> tuple:
        """What the problem evaluates for a proposal, hashable: on a θ-problem its coordinates
        clipped to the unit box and its discrete ones at their nearest admissible value
        (``problem.grids``), as the engine projects them, so that two proposals one pipeline
        apart are one."""
        grids = getattr(self.problem_, "grids", ())
        values = np.asarray(config, dtype=float).ravel()
        if grids and len(grids) == values.size:
            values = np.clip(values, 0.0, 1.0)
            for k, grid in enumerate(grids):
                if grid is not None:
                    values[k] = grid[np.abs(grid - values[k]).argmin()]
        return _identity(values, fidelity)

    def ask_cheap(self, n: int) -> list[Suggestion]:
        """``n`` cheap suggestions (``Suggestion.cheap``) from :meth:`_cheap_configs`: what the
        overhead-aware :meth:`run` adds to a batch when the solver's own ask costs more than an
        evaluation. Only for solvers with ``supports_cheap_proposals``."""
        if not self.supports_cheap_proposals:
            raise SolverError(f"{type(self).__name__} does not take cheap proposals")
        return [self._issue(config, None, cheap=True) for config in self._cheap_configs(int(n))]

    def _issue(self, config: Any, fidelity: float | None, cheap: bool = False) -> Suggestion:
        suggestion = Suggestion(self.n_asked_, config, fidelity, cheap=cheap)
        self.n_asked_ += 1
        self.pending_[suggestion.id] = suggestion
        return suggestion

    def _cheap_configs(self, n: int) -> list[Any]:
        """Hook for solvers with ``supports_cheap_proposals``: ``n`` configurations that cost
        next to nothing to propose."""
        raise NotImplementedError

    def tell(self, suggestion: Suggestion, observation: Observation) -> None:
        if self.pending_.pop(suggestion.id, None) is None:
            raise UnknownSuggestionError(
                f"{type(self).__name__}.tell() got suggestion id {suggestion.id}, which was not "
                "asked or was already told"
            )
        self.identities_.pop(suggestion.id, None)  # a subclass's plain ``pending_`` keeps none
        self.trials_.append((suggestion.config, observation))
        if self.n_configurations_ is not None:
            self.told_.add(self._configuration(suggestion.config))
        self._tell(suggestion, observation)

    @abc.abstractmethod
    def _ask(self) -> tuple[Any, float | None]:
        """Return ``(config, fidelity)``."""

    def _tell(self, suggestion: Suggestion, observation: Observation) -> None:
        """Hook for subclasses."""

    def _start_point(self) -> np.ndarray | None:
        """``problem.start`` (clipped to the box) unless the history already holds it."""
        start = getattr(self.problem_, "start", None)
        if start is None:
            return None
        start = np.clip(np.asarray(start, dtype=float), 0.0, 1.0)
        known = (np.asarray(x, dtype=float) for x, _ in self.problem_.history)
        if any(np.linalg.norm(x - start) <= DUPLICATE_TOL for x in known):
            return None
        return start

    def _comparable_trials(self) -> list[tuple[Any, Observation]]:
        """Hook: this solver's trials that compete in :meth:`best` (default: all)."""
        return list(self.trials_)

    def best(self) -> tuple[Any, Observation] | None:
        """Best ``(config, observation)`` of this problem's history and this solver's trials."""
        candidates = self._known_history() + self._comparable_trials()
        if not candidates:
            return None
        scores = np.array([self.problem_.augment(c, o) for c, o in candidates], dtype=float)
        scores[~np.isfinite(scores)] = np.inf  # a NaN score never wins
        return candidates[int(np.argmin(scores))]


class BaseThetaSolver(BaseSolver):
    """Continuous optimiser over the active unit box of a :class:`ThetaProblem`."""

    kind = "theta"
    problem_: ThetaProblem

    def _n_configurations(self) -> int | None:
        """The product of the grid sizes when every coordinate is discrete (an upper bound when
        some are conditional: inactive coordinates do not change the configuration)."""
        grids = getattr(self.problem_, "grids", ())
        if not grids or len(grids) != self.problem_.dim or any(g is None for g in grids):
            return None
        return int(np.prod([len(g) for g in grids]))

    def _configuration(self, config: Any) -> tuple[int, ...]:
        """The grid index of each coordinate: where the projection to admissible values takes
        it (the nearest value)."""
        x = np.clip(np.asarray(config, dtype=float), 0.0, 1.0)
        return tuple(int(np.abs(g - v).argmin()) for g, v in zip(self.problem_.grids, x))
    def _cheap_configs(self, n: int) -> list[np.ndarray]:
        """Half uniform points, half Gaussian perturbations of the best point so far (scale
        log-uniform in [0.01, 0.3] per point), drawn from the solver's stream: random search and
        a (1+1)-evolution strategy's move, the two cheap rules that do well where evaluations
        cost microseconds (our choice; one ``best()`` per batch)."""
        dim = int(self.problem_.dim)
        best = self.best() if n else None
        out = []
        for _ in range(n):
            if best is None or self.rng_.random() < 0.5:
                out.append(self.rng_.uniform(0.0, 1.0, size=dim))
            else:
                scale = math.exp(self.rng_.uniform(math.log(0.01), math.log(0.3)))
                centre = np.asarray(best[0], dtype=float)
                out.append(np.clip(centre + self.rng_.normal(0.0, scale, size=dim), 0.0, 1.0))
        return out


class BaseZSolver(BaseSolver):
    """Algorithm selection over the module choices of a :class:`ZProblem`.

    The problem's warm start (``problem.warm_start``: pipelines found good elsewhere, in order)
    is proposed before the solver's own proposals, unless the solver sets
    ``places_warm_start`` and puts those pipelines where its own method starts (Hyperband's
    first bracket, DAUB's bootstrap, BLDS's local searches).
    """

    kind = "z"
    problem_: ZProblem
    #: whether the solver places ``problem.warm_start`` itself (else it is proposed first)
    places_warm_start: ClassVar[bool] = False

    def _propose(self) -> tuple[Any, float | None]:
        if not self.places_warm_start:
            z = self._warm_next()
            if z is not None:
                return z, None
        return self._ask()

    def _warm_next(self, skip: Any = ()) -> tuple[int, ...] | None:
        """The first pipeline of ``problem.warm_start`` neither pending here nor in ``skip``
        (None: none left, or no warm start)."""
        warm = getattr(self.problem_, "warm_start", None)
        if warm is None:
            return None
        pending = None  # made only when there is a warm start left to check against it
        for z in warm():
            if pending is None:
                pending = {tuple(int(j) for j in s.config) for s in self.pending_.values()}
            z = tuple(int(j) for j in z)
            if z not in pending and z not in skip:
                return z
        return None

    def _n_configurations(self) -> int | None:
        """Every combination of choices, at full fidelity (lower fidelities are more points)."""
        if getattr(self.problem_, "fidelity", None) is not None:
            return None
        return int(np.prod(self.problem_.n_choices))

    def _configuration(self, config: Any) -> tuple[int, ...]:
        return tuple(int(j) for j in config)

    def _identity(self, config: Any, fidelity: float | None) -> tuple:
        """:func:`_identity` of a choice vector without numpy (the same tuple for integer
        choices): ``cmab`` checks hundreds of pipelines per pull against those in flight."""
        try:
            values = tuple(float(int(j)) for j in config)
        except (TypeError, ValueError):
            return super()._identity(config, fidelity)
        if any(v != j for v, j in zip(values, config)):  # not integers: the general rule
            return super()._identity(config, fidelity)
        return (*values, 1.0 if fidelity is None else float(fidelity))

    def _known_history(self) -> list[tuple[Any, Observation]]:
        """The full-data history entries: a pipeline trained on a subset (a start evaluated at
        the first level of the multi-fidelity ladder) has a loss biased upwards that is not
        comparable with full-data ones, and was not evaluated at the fidelity these solvers ask,
        so it is neither a told configuration nor a candidate of :meth:`best`. The
        multi-fidelity solvers read the whole history through their ladder."""
        return [(z, o) for z, o in self.problem_.history if o is None or o.fidelity >= 1.0]

    def _comparable_trials(self) -> list[tuple[Any, Observation]]:
        """The full-data trials: a pipeline whose full-data request was answered on a subsample
        (a probe whose full fit was refused) has a loss that is not comparable, and was not
        fitted as the z-step asks."""
        return [(c, o) for c, o in self.trials_ if o.fidelity >= 1.0]

    def _cheap_configs(self, n: int) -> list[tuple[int, ...]]:
        """Uniform choices (:func:`random_z`)."""
        return [random_z(self.rng_, self.problem_.n_choices) for _ in range(n)]
