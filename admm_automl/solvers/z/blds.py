"""Bandit Limited Discrepancy Search (Kishimoto et al., BLDS, 2021)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ...exceptions import InvalidParameterError
from ...records import Observation
from ..registry import Z_SOLVERS
from ..base import random_z
from ...problem import all_pipelines
from ...problem import ZProblem
from ._fidelity import Ladder, Program, ProgramZSolver, value_of

#: the built-in confidence bounds of ``BLDSZSolver(bound=...)``
BOUNDS = ("monotone", "literal", "even_dar", "literal_ucb")
#: readings of the first training's size, ``BLDSZSolver(first_size=...)``: the exponent k of its
#: b·η^k rows
FIRST_SIZES = {"b_eta": 1, "b": 0}
#: where a new incumbent's ladder goes on, ``BLDSZSolver(incumbent_ladder=...)``
INCUMBENT_LADDERS = ("own", "carry")
#: former names, refused with the name to use now (the former default changed its name when the
#: default became ``"monotone"``, so that no run silently changes its bound)
RENAMED_BOUNDS = {"reconstructed": "even_dar"}


def literal_bound(d: float, cl_over_delta: float) -> tuple[float, float]:
    """The confidence terms exactly as printed by Kishimoto et al. (2021), ``(below, above)``.

    With X = cL·D_k²/(D_k·δ) = (cL/δ)·D, they print UCB = v + sqrt(X) and
    LCB = v − sqrt(X·log X) (natural log). Read literally the interval widens as data grows, and
    X·log X < 0 whenever 0 < X < 1, i.e. D < δ/(cL) (9600 rows at their cL/δ = 1/9600): there the
    square root has no real value. Our rule where it is undefined: the term below is the real part
    of the printed expression, 0 (the LCB is v itself) while X ≤ 1; the term above is 0 for
    X ≤ 0.
    """
    x = cl_over_delta * d
    above = math.sqrt(x) if x > 0 else 0.0
    below = math.sqrt(x * math.log(x)) if x > 1.0 else 0.0
    return below, above


def even_dar_radius(d: float, cl_over_delta: float) -> float:
    """sqrt(ln((cL/δ)·D²) / D), clamped to 0 while the log is not positive: the symmetric
    successive-elimination radius sqrt(ln(c·n·t²/δ)/t) of Even-Dar, Mannor and Mansour (2006)
    with n = L pipelines and t = D, the natural reading of the printed symbols. Not monotone at
    the paper's constant: see :func:`monotone_bound`."""
    arg = cl_over_delta * d * d
    return math.sqrt(math.log(arg) / d) if arg > 1.0 and d > 0 else 0.0


def literal_ucb_radius(d: float, cl_over_delta: float) -> float:
    """sqrt((cL/δ)·D): the UCB term as printed in Kishimoto et al. (2021), used symmetrically."""
    return math.sqrt(max(cl_over_delta * d, 0.0))


def _past_peak(d: float, cl_over_delta: float, log_at_peak: float) -> tuple[float, float]:
    """``(X, D̃)``: D̃ = max(D, D_peak), where D_peak solves ln((cL/δ)·D²) = ``log_at_peak``,
    and X = (cL/δ)·D̃²."""
    d_peak = math.exp(log_at_peak / 2.0) / math.sqrt(cl_over_delta)
    d = max(d, d_peak)
    return cl_over_delta * d * d, d


def monotone_bound(d: float, cl_over_delta: float) -> tuple[float, float]:
    """Our reconstruction of the confidence terms of Kishimoto et al. (2021), ``(below, above)``:

    * above (UCB = v + term): sqrt(ln X / D̃) with X = (cL/δ)·D̃² and D̃ = max(D, e/sqrt(cL/δ));
    * below (LCB = v − term): sqrt(ln X / D̃ · ln X) = ln X / sqrt(D̃) with
      D̃ = max(D, e²/sqrt(cL/δ)).

    Why. The printed formula is garbled (:func:`literal_bound`). Its symbols, c (> 4), L, δ,
    D_k² and a log, are those of the successive-elimination radius sqrt(ln(c·n·t²/δ)/t) of
    Even-Dar, Mannor and Mansour (2006) with n = L arms and t = D (:func:`even_dar_radius`), the
    natural reading. At the paper's cL/δ = 1/9600, far below Even-Dar et al.'s c·n/δ ≥ 4n, that
    radius is not monotone: ln(X)/D grows until X = e² (D ≈ 266) and falls after (0.020 at
    D = 100, 0.084 at 200, 0.087 at 266, 0.078 at 600), the less data the *more* certain below
    the peak, against the paper's own reason for the term (it triggers retraining when v "might
    be inaccurate due to a small number of training examples"). Each term is therefore replaced
    by its least non-increasing majorant: both are unimodal in D, so the majorant is the term
    evaluated at max(D, D_peak), D_peak being where it peaks (X = e² above, X = e⁴ below). No
    value is lowered (the bound never claims more certainty than Even-Dar's radius), only the
    rising part below D_peak is flattened, and the log stays ≥ 2, so both terms are defined at
    every D > 0.

    The asymmetry is the paper's: its LCB multiplies the UCB's radicand by the log of the same
    expression, and in Even-Dar's form that expression is the log's argument (cL/δ)·D_k², so the
    LCB's radicand is ln(X)/D · ln(X). The interval then reaches 1.7 times further below v than
    above it at the first levels and at least twice as far from D = e²/sqrt(cL/δ) (724 rows) on,
    which fits what a partial training means for a learning curve: a pipeline's loss on a subset
    overestimates its loss on the full training set.

    Values at cL/δ = 1/9600 (below, above): D = 200 (the first level): 0.149, 0.087;
    D = 600: 0.149, 0.078; D = 1400: 0.142, 0.062; D = 12600: 0.087, 0.028.
    """
    x_above, d_above = _past_peak(d, cl_over_delta, 2.0)
    x_below, d_below = _past_peak(d, cl_over_delta, 4.0)
    above = math.sqrt(math.log(x_above) / d_above)
    below = math.log(x_below) / math.sqrt(d_below)
    return below, above


_BOUND_FUNCTIONS: dict[str, Callable[[float, float], "float | tuple[float, float]"]] = {
    "monotone": monotone_bound,
    "literal": literal_bound,
    "even_dar": even_dar_radius,
    "literal_ucb": literal_ucb_radius,
}


def _nonnegative(term: float) -> float:
    """A bound term as used: negative or non-finite counts as 0."""
    t = float(term)
    return t if math.isfinite(t) and t > 0 else 0.0


@dataclass
class _Record:
    """What BLDS knows of one pipeline: trainings so far, latest value and its interval."""

    level: int  # index of the latest level trained (0 = the first size, bη or b rows)
    consumed: float  # D: the rows of its trainings so far
    value: float
    lcb: float
    ucb: float
    done: bool  # trained on full data, or failed (our choice: a failure is never refined again)


@Z_SOLVERS.register("blds")
class BLDSZSolver(ProgramZSolver):
    """Bandit Limited Discrepancy Search: multi-fidelity local search around the incumbent.

    First-improvement search over the pipelines that differ from the incumbent in at most
    ``disc`` modules, enumerated as limited discrepancy search does (Algorithm 1 of Kishimoto
    et al., 2021). The k-th training of a pipeline uses b·η^k training rows, bη the first (the
    last level is the whole training split; the ladder DAUB and Hyperband share), or
    b·η^(k−1), b the first, with ``first_size="b"``. Every trained
    pipeline carries an interval [value − below(D), value + above(D)] where D is the number of
    rows it has consumed. A candidate whose UCB is below the
    incumbent's LCB replaces it; an overlapping candidate is trained once more and replaces the
    incumbent if its new UCB is below the incumbent's UCB. The incumbent moves up one level before
    each neighbourhood search (a new incumbent from its own level, or, with
    ``incumbent_ladder="carry"``, from the level of the one it replaced); when it reaches full
    data the search restarts from a random pipeline not yet fully trained.

    Parameters
    ----------
    disc : int, default=1
        Maximum number of modules changed relative to the incumbent (BLDS(1), BLDS(2)).
    b : float, default=100
        Base size in rows: the first training of a pipeline uses ``b * eta`` rows (``b`` rows
        with ``first_size="b"``).
    eta : float, default=2
        Growth factor of the training-set size.
    cl_over_delta : float, default=1/9600
        The constant cL/δ of the confidence bounds (the value used in Kishimoto et al.'s
        experiments).
    bound : {"monotone", "literal", "even_dar", "literal_ucb"} or callable, default="monotone"
        The terms below and above v as functions of D: ``"monotone"``, our reconstruction of the
        paper's garbled formula, non-increasing in D and wider below than above
        (:func:`monotone_bound`); ``"literal"``, the formula exactly as printed
        (:func:`literal_bound`); ``"even_dar"``, the symmetric radius sqrt(ln((cL/δ)·D²)/D)
        (:func:`even_dar_radius`; the default before, named ``"reconstructed"`` then, a name now
        refused); ``"literal_ucb"``, the printed UCB term used symmetrically
        (:func:`literal_ucb_radius`); or a callable ``bound(D, cl_over_delta)`` returning one
        radius (symmetric) or a pair ``(below, above)``.
    order : {"random", "fixed"}, default="random"
        Order of the alternatives at each module: shuffled per visit with the solver's rng, or
        the space's order. Both try the incumbent's own algorithm last, as the paper's worked
        example (Appendix B) implies.
    first_size : {"b_eta", "b"}, default="b_eta"
        How many rows a pipeline's first training uses. The paper says both. ``"b_eta"``: its
        schedule, "when training p for the k-th time, BLDS selects bη^k samples", which the
        worked example (Appendix B) also fits: a candidate first trained, then "re-trained with
        an increased training subset (i.e., 400 samples)", i.e. 200 = bη rows first at b = 100,
        η = 2. The ladder is bη, bη², …, shared with DAUB and Hyperband. ``"b"``: its
        GETCURRENTPERFORMANCE, which "evaluates p with V after training p with b samples", and
        its D_k = Σ_{j=1..k} bη^(j−1), which is the data of k trainings of b, bη, … rows (D_1 = b).
        The ladder is then b, bη, bη², … (BLDS's own; DAUB and Hyperband keep theirs), and D, the
        rows consumed, equals that printed D_k at every level below full data, where the last
        size is capped at the training-set size. It changes the first interval: at the paper's
        cL/δ = 1/9600, ``bound="even_dar"`` gives a radius of 0.020 at D_1 = 100 and 0.084 at
        D = 200; the default ``"monotone"`` bound is flat below D ≈ 266 and gives (0.149, 0.087)
        at both. A start evaluated at the first level of the other ladder (bη rows) sits on this
        one as its second level.
    incumbent_ladder : {"own", "carry"}, default="own"
        Where a new incumbent's next training goes. ``"own"``: one level above its own latest
        training, as Algorithm 1 reads (INCREASEANDTRAIN counts a pipeline's own trainings, "when
        training p for the k-th time"). ``"carry"``: one level above the incumbent it replaced
        (its own next level if that is higher), as the worked example (Appendix B) does: p4
        replaces p1, "the current best pipeline trained with 800 samples", and "BLDS re-trains
        p4 with an increased training subset (i.e., 1600 samples)", though p4 had only its first
        training; no per-pipeline count gives 1600 there. The incumbent's data thus keeps
        growing across replacements and a local search reaches full data in at most one pass
        per level. D stays the rows the pipeline has consumed: after the jump, its own sizes
        summed (200 + 1600 for the example's p4), not the data of a climb it did not make.

    Notes
    -----
    Choices made where the paper is silent or inconsistent:

    * Confidence bounds: the printed formula is garbled, so the default is our reconstruction
      (``bound="monotone"``, reasons in :func:`monotone_bound`), pluggable by ``bound``; a
      negative or non-finite term counts as 0.
    * Fidelity schedule: the paper writes both "bη^k samples" for the k-th training and, once,
      "b samples" for the first; by default we follow the former, which its worked example
      confirms (a candidate retrained on 400 rows after its first training), so the first
      training uses bη rows (:func:`~._fidelity.fidelity_levels`); ``first_size="b"`` follows
      the latter. D sums the rows actually used (the last
      level is capped at the training-set size), not the printed Σ_{j≤k} bη^(j−1), which counts
      the b·η^(k−1) schedule (:meth:`~._fidelity.Ladder.cumulative`).
    * Training subsets (unspecified in the paper) are the objective's nested stratified
      prefixes; validation is always on the full validation split.
    * The incumbent is never a candidate of its own neighbourhood (Algorithm 1, read literally,
      reaches the incumbent as a leaf and could retrain it and "accept" it as its own
      improvement). A pass with limit θ visits every pipeline within distance ≤ θ, as printed,
      not exactly θ.
    * ``order="random"`` is the default rather than the space's fixed order (the paper fixes
      none): inside ADMM each z-min call restarts the search (below), and a fixed order would
      revisit the same first neighbours at every call; it also makes the seed matter when the
      start is given.
    * Restarts draw uniformly among pipelines not yet fully trained (so a restart is never
      wasted on a finished pipeline); the cache persists across restarts, as the paper states.
    * A failed evaluation (the paper does not say how failures are scored) gets radius 0 and
      is never refined. Raising an already-full pipeline returns its cached bounds without
      training.
    * Values are ``problem.augment(z, observation)`` (the z-min objective; the loss in plain
      algorithm selection); a non-finite value counts as +inf.
    * The start: ``problem.start`` when given (the paper lets "any pipeline obtained with other
      AutoML methods" start), else a uniform random pipeline (FINDINITIALPIPELINE). History
      entries on the ladder seed the cache at their level (:meth:`history_levels`), and the
      start's entry is its first INCREASEANDTRAIN (Algorithm 1, line 5): a start evaluated at
      the first level (``SelectionOptimizer(initial="random", initial_fidelity=...)``) is
      searched around at that level, as the paper's random p_init is after its first training;
      one at full data is searched around at once. A warm start (``problem.warm_start``: a
      portfolio's pipelines, "obtained with other AutoML methods") comes before both: the
      search starts from its first pipeline and restarts from the next ones not yet trained
      before random ones, each trained on the ladder from its first level.
    * Inside ADMM, θ changes between z-min calls, so cached values are no longer valid: the
      cache is **cleared in update_problem** and the search restarts from ``problem.start``
      (the current z), whose full-fidelity observation in ``problem.history`` seeds the cache.
      Re-asked pipelines whose θ did not change are answered by the objective's cache.
    * With the whole space fully trained, random full-fidelity pipelines are re-asked.

    References
    ----------
    A. Kishimoto, D. Bouneffouf, R. Marinescu, P. Ram, A. Rawat, M. Wistuba, P. Palmes, A. Botea.
    Bandit Limited Discrepancy Search and Application to Machine Learning Pipeline Optimization.
    AutoML Workshop at ICML 2021 (AAAI 2022 extended version).
    W. D. Harvey, M. L. Ginsberg. Limited discrepancy search. IJCAI 1995.
    E. Even-Dar, S. Mannor, Y. Mansour. Action elimination and stopping conditions for the
    multi-armed bandit and reinforcement learning problems. JMLR 7, 2006.
    """

    places_warm_start = True

    def __init__(
        self,
        disc: int = 1,
        b: float = 100,
        eta: float = 2.0,
        cl_over_delta: float = 1.0 / 9600.0,
        bound: "str | Callable[[float, float], float | tuple[float, float]]" = "monotone",
        order: str = "random",
        first_size: str = "b_eta",
        incumbent_ladder: str = "own",
    ) -> None:
        self.disc = disc
        self.b = b
        self.eta = eta
        self.cl_over_delta = cl_over_delta
        self.bound = bound
        self.order = order
        self.first_size = first_size
        self.incumbent_ladder = incumbent_ladder

    # ------------------------------------------------------------------ state
    def _ladder_for(self, problem: ZProblem) -> Ladder:
        """BLDS's ladder: the shared one, or one that starts at b rows (``first_size="b"``)."""
        if not isinstance(self.first_size, str) or self.first_size not in FIRST_SIZES:
            raise InvalidParameterError(
                f"blds: first_size must be one of {tuple(FIRST_SIZES)}, got {self.first_size!r}"
            )
        return Ladder.for_problem(problem, self.b, self.eta,
                                  first_power=FIRST_SIZES[self.first_size])

    def _init_state(self) -> None:
        if not isinstance(self.disc, (int, np.integer)) or self.disc < 1:
            raise InvalidParameterError(f"blds: disc must be an integer >= 1, got {self.disc!r}")
        if self.order not in ("random", "fixed"):
            raise InvalidParameterError(
                f"blds: order must be 'random' or 'fixed', got {self.order!r}"
            )
        if not isinstance(self.incumbent_ladder, str) or (
                self.incumbent_ladder not in INCUMBENT_LADDERS):
            raise InvalidParameterError(
                f"blds: incumbent_ladder must be one of {INCUMBENT_LADDERS}, got "
                f"{self.incumbent_ladder!r}"
            )
        self._bound_fn = self._bound_function()
        self.cache_: dict[tuple[int, ...], _Record] = {}
        self.n_restarts_ = 0
        self._seed_cache()

    def _on_new_problem(self) -> None:
        self.cache_ = {}
        self._seed_cache()
        self._restart_program()

    def _bound_function(self) -> Callable[[float, float], "float | tuple[float, float]"]:
        """The function of ``bound``, a former name refused with the name to use now."""
        if callable(self.bound):
            return self.bound
        if self.bound in RENAMED_BOUNDS:
            raise InvalidParameterError(
                f"blds: bound={self.bound!r} is now called {RENAMED_BOUNDS[self.bound]!r} (the "
                "symmetric radius sqrt(ln((cL/δ)·D²)/D)); the default is now 'monotone'. Use one "
                f"of {BOUNDS} or a callable"
            )
        if self.bound not in _BOUND_FUNCTIONS:
            raise InvalidParameterError(
                f"blds: bound must be one of {BOUNDS} or a callable, got {self.bound!r}"
            )
        return _BOUND_FUNCTIONS[self.bound]

    def _seed_cache(self) -> None:
        """History entries on the ladder are known trainings at their level."""
        for z, level, obs in self.history_levels():
            self._store(z, level, obs)

    def bound_terms(self, level: int, consumed: float | None = None) -> tuple[float, float]:
        """``(below, above)``: how far the LCB and the UCB of a pipeline trained up to ``level``
        lie from its value (a single radius counts on both sides; negative or non-finite terms
        count as 0). D is ``consumed`` when given, else the rows of a climb through every level
        up to ``level``."""
        d = self.ladder_.cumulative(level) if consumed is None else float(consumed)
        terms = self._bound_fn(d, float(self.cl_over_delta))
        below, above = (terms, terms) if np.isscalar(terms) else terms
        return _nonnegative(below), _nonnegative(above)

    def _store(self, z: tuple[int, ...], level: int, obs: Observation) -> _Record:
        old = self.cache_.get(z)
        if self.incumbent_ladder == "carry" and old is not None and level > old.level:
            consumed = old.consumed + self.ladder_.rows[level]  # a jump adds its own rows only
        else:  # a climb through every level (a history entry counts as one)
            consumed = self.ladder_.cumulative(level)
        v = value_of(self.problem_, z, obs)
        failed = not obs.ok or math.isinf(v)
        below, above = (0.0, 0.0) if failed else self.bound_terms(level, consumed)
        rec = _Record(level, consumed, v, v - below, v + above,
                      failed or level >= self.ladder_.top)
        if old is None or level >= old.level:
            self.cache_[z] = rec
        return self.cache_[z]

    # ------------------------------------------------------------------ Algorithm 1
    def _increase_and_train(self, z: tuple[int, ...], floor: int = 0) -> Program:
        """Train ``z`` one level above its latest training, or at ``floor`` if that is higher
        (``incumbent_ladder="carry"``), never above full data."""
        rec = self.cache_.get(z)
        if rec is not None and rec.done:
            return rec.lcb, rec.ucb
        level = min(max(0 if rec is None else rec.level + 1, floor), self.ladder_.top)
        obs = yield z, level
        rec = self._store(z, level, obs)
        return rec.lcb, rec.ucb

    def _current_performance(self, z: tuple[int, ...]) -> Program:
        rec = self.cache_.get(z)
        if rec is not None:
            return rec.lcb, rec.ucb
        return (yield from self._increase_and_train(z))

    def _alternatives(self, i: int, own: int) -> list[int]:
        others = [a for a in range(self.problem_.n_choices[i]) if a != own]
        if self.order == "random" and len(others) > 1:
            others = [others[j] for j in self.rng_.permutation(len(others))]
        return others + [own]

    def _search(
        self, p: tuple[int, ...], p0: tuple[int, ...], lcb: float, ucb: float, i: int, theta: int
    ) -> Program:
        if theta == 0 or i >= len(p):
            if p == p0:  # the incumbent is not its own candidate
                return None
            l, u = yield from self._current_performance(p)
            if u < lcb:
                return p
            if l <= ucb:
                l, u = yield from self._increase_and_train(p)
            return p if u < ucb else None
        for a in self._alternatives(i, p[i]):
            if a == p[i]:
                r = yield from self._search(p, p0, lcb, ucb, i + 1, theta)
            else:
                q = p[:i] + (a,) + p[i + 1 :]
                r = yield from self._search(q, p0, lcb, ucb, i + 1, theta - 1)
            if r is not None:
                return r
        return None

    def _initial_pipeline(self) -> tuple[int, ...] | None:
        """The next warm-start pipeline not yet trained, else a uniform random pipeline not yet
        fully trained (our choice for restarts), or None."""
        warm = self._warm_next(self.cache_)
        if warm is not None:
            return warm
        n_choices = self.problem_.n_choices
        for _ in range(64):
            z = random_z(self.rng_, n_choices)
            rec = self.cache_.get(z)
            if rec is None or not rec.done:
                return z
        total = int(np.prod(n_choices))
        if sum(rec.done for rec in self.cache_.values()) >= total:
            return None
        if total <= 200_000:  # small or nearly exhausted space: choose among the rest exactly
            rest = [z for z in map(tuple, all_pipelines(n_choices).tolist())
                    if z not in self.cache_ or not self.cache_[z].done]
            return rest[int(self.rng_.integers(len(rest)))] if rest else None
        return random_z(self.rng_, n_choices)

    def _program(self) -> Program:
        start = self.problem_.start
        p0 = tuple(int(j) for j in start) if start is not None else None
        if getattr(self.problem_, "warm_start", None) is not None:
            p0 = self._warm_next(self.cache_) or p0  # a pipeline found good elsewhere first
        # the history's training of the start is its first INCREASEANDTRAIN (line 5)
        trained = p0 is not None and p0 in self.cache_
        while True:
            if p0 is None:
                p0 = self._initial_pipeline()
                if p0 is None:
                    return
                self.n_restarts_ += 1
            floor = 0  # "carry": the level the next training of a new incumbent starts from
            while True:  # local search around p0
                if trained:
                    lcb0, ucb0 = self.cache_[p0].lcb, self.cache_[p0].ucb
                    trained = False
                else:
                    lcb0, ucb0 = yield from self._increase_and_train(p0, floor)
                floor = 0
                for theta in range(1, int(self.disc) + 1):
                    new = yield from self._search(p0, p0, lcb0, ucb0, 0, theta)
                    if new is not None:
                        if self.incumbent_ladder == "carry":
                            floor = self.cache_[p0].level + 1
                        p0 = new
                        break
                if self.cache_[p0].done:
                    break
            p0 = None

    def describe_state(self) -> dict[str, Any]:
        """Diagnostics: cache size, fully trained pipelines, restarts."""
        return {
            "cached": len(self.cache_),
            "full": sum(r.done for r in self.cache_.values()),
            "restarts": self.n_restarts_,
        }
