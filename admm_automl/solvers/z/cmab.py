"""Thompson-sampling combinatorial bandit for z-min (Liu et al. 2020, Appendix 4, Algorithm A1)."""

from __future__ import annotations

import heapq
import math
from typing import Any

import numpy as np

from ...exceptions import InvalidParameterError
from ...records import Observation, Suggestion
from ..base import BaseZSolver
from ..registry import Z_SOLVERS
from ._fidelity import value_of


@Z_SOLVERS.register("cmab")
class ThompsonSamplingZSolver(BaseZSolver):
    """Thompson-sampling combinatorial bandit with probabilistic rewards (the paper's z-solver).

    One arm per algorithm of every module, each with a Beta(α0 + r_j, δ0 + n_j − r_j) posterior.
    A pull samples every arm and takes the argmax per module; the evaluated pipeline's value f
    gives the continuous reward r̃ = 1 − min(max(f / f̂, 0), 1), binarised as r ~ Bernoulli(r̃),
    and every chosen arm gets n_j += 1, r_j += r. Each ask is one pull (``run(L)`` makes L pulls).

    Parameters
    ----------
    alpha0, delta0 : float, default=10
        Beta prior parameters of every arm (Liu et al. 2020 use 10 and 10).
    loss_bound : float or "auto", default=0.7
        f̂, the loss upper bound that maps the value to a reward, in the units of the loss: Liu et
        al. 2020 set 0.7 for 1 − AUROC (and study 0.3–0.9). A loss on another scale needs its
        own: on the artificial objective of their Appendix 15, whose pipelines score 0.43 to
        about 12 (median 4.3), 0.7 is below more than 99.9 % of them, so nearly every reward is 0
        and the posteriors only count which arms were pulled least.

        ``"auto"`` takes f̂ from the loss itself, as Algorithm A1 defines it: the input is the
        "upper bound f̂ of loss f", and step 9 "normalizes the continuous loss f with respect to
        its upper bound f̂ (assuming the lower bound is 0)". Where the metric has a worst value
        (``problem.metric_worst``: 1 for 1 − AUROC, 1 − accuracy and the other bounded losses)
        f̂ is that value, fixed for the run. Where it has none (RMSE, log-loss, a benchmark
        function such as the artificial objective) f̂ is the largest finite value of a
        full-data pull seen so far — the problem's history when the solver is set up or moved
        to a new iterate, then every pull told — updated *before* the pull's reward is computed,
        so f̂ covers every value seen (the first pull, and any pull that sets a new maximum, has
        f = f̂ and reward 0: it is the worst seen). The bound only grows, and persists across
        ADMM iterations with the arm statistics; failed pulls, whose value is not known, leave it
        unchanged. An augmented value above a known worst value (a constraint term added to
        the loss) gets reward 0, as the clip of r̃ = 1 − min(max(f/f̂, 0), 1) prescribes. The
        current bound is ``loss_bound_``.
    binarize : bool, default=True
        Bernoulli binarisation of the reward (Algorithm A1 step 10); False adds r̃ itself.

    Notes
    -----
    * Arm statistics live in ``counts_`` and ``rewards_`` and persist across ADMM iterations
      (``update_problem`` keeps them), as Liu et al. (2020) prescribe; only the trials of the
      current θ count for ``best()``.
    * The value is ``problem.augment(z, observation)`` (the z-min objective); a failed or
      non-finite value gives reward 0, and so does a pull answered on a subsample (a probe on
      large data whose full fit would not finish in its time limit): with the subsample's loss
      as its reward, every repeat of such a pipeline, answered by the cache, raised its arms
      again, and on adult whole z-steps went into 100 free repeats of a refused CatBoost. Every
      evaluation asks for full data (no fidelity).
    * A repeated pipeline is asked again (the objective's cache answers it for free) and still
      updates the posteriors (our choice: neither Liu et al. nor Kishimoto et al. say whether a
      repeated pipeline is re-fitted; Algorithm A1 updates the arms at every pull). So a call
      ``run(L)`` makes L new evaluations plus up to ``max(100, 10·L)`` free repeats, each a pull,
      where Algorithm A1 makes L pulls in all. On the artificial objective, ending each call
      after L pulls instead moved the mean incumbent by less than 0.001 (5 seeds, 1000
      evaluations, f̂ = 0.7 and 5).
    * Batch-capable: several asks before their tells draw independent samples; pending pulls
      count as reward-0 pulls, and a pull whose pipeline is pending or in flight takes the
      draw's best other pipeline (:meth:`_propose_untaken`).

    References
    ----------
    S. Liu, P. Ram, D. Vijaykeerthy, D. Bouneffouf, G. Bramble, H. Samulowitz, D. Wang, A. Conn,
    A. Gray. An ADMM Based Framework for AutoML Pipeline Configuration. AAAI 2020, Algorithm A1.
    S. Agrawal, N. Goyal. Analysis of Thompson sampling for the multi-armed bandit problem.
    COLT 2012 (probabilistic rewards). A. Durand, C. Gagné. Thompson sampling for combinatorial
    bandits and its application to online feature selection. AAAI Workshops 2014.
    """

    supports_batch = True

    def __init__(
        self,
        alpha0: float = 10.0,
        delta0: float = 10.0,
        loss_bound: float | str = 0.7,
        binarize: bool = True,
    ) -> None:
        self.alpha0 = alpha0
        self.delta0 = delta0
        self.loss_bound = loss_bound
        self.binarize = binarize

    def _setup(self) -> None:
        if not (self.alpha0 > 0 and self.delta0 > 0):
            raise InvalidParameterError(
                f"cmab: alpha0 and delta0 must be > 0, got {self.alpha0!r}, {self.delta0!r}"
            )
        auto = isinstance(self.loss_bound, str)
        if auto and self.loss_bound != "auto" or not auto and (
                isinstance(self.loss_bound, bool)
                or not isinstance(self.loss_bound, (int, float, np.number))
                or not (self.loss_bound > 0 and math.isfinite(self.loss_bound))):
            raise InvalidParameterError(
                f"cmab: loss_bound must be a finite number > 0 or 'auto', got {self.loss_bound!r}")
        self.counts_ = [np.zeros(k) for k in self.problem_.n_choices]
        self.rewards_ = [np.zeros(k) for k in self.problem_.n_choices]
        #: pulls pending per arm (asked, not told), kept as suggestions come and go
        self.pending_counts_ = [np.zeros(k) for k in self.problem_.n_choices]
        for suggestion in self.pending_.values():
            self._pending_added(suggestion)
        #: f̂ in force (``loss_bound="auto"``: None until a bound is known, see the parameter)
        self.loss_bound_: float | None = None if auto else float(self.loss_bound)
        self._bound_from_problem()

    def update_problem(self, problem: Any) -> None:
        super().update_problem(problem)
        self._bound_from_problem()

    def _bound_from_problem(self) -> None:
        """``loss_bound="auto"``: f̂ from the metric's worst value, or else raised to the largest
        finite full-data value of the problem's history."""
        if self.loss_bound != "auto":
            return
        worst = self._metric_worst()
        if worst is not None:
            self.loss_bound_ = worst
            return
        for z, obs in self.problem_.history:
            if obs.ok and obs.fidelity >= 1.0:
                self._raise_bound(value_of(self.problem_, tuple(z), obs))

    def _metric_worst(self) -> float | None:
        """The problem's ``metric_worst`` when it is a usable f̂ (finite, > 0), else None."""
        worst = getattr(self.problem_, "metric_worst", None)
        return float(worst) if worst is not None and math.isfinite(worst) and worst > 0 else None

    def _raise_bound(self, value: float) -> None:
        """``loss_bound="auto"`` without a known worst value: f̂ ← max(f̂, value) (finite only)."""
        if self.loss_bound == "auto" and self._metric_worst() is None and math.isfinite(value):
            self.loss_bound_ = value if self.loss_bound_ is None else max(self.loss_bound_, value)

    def _ask(self) -> tuple[tuple[int, ...], None]:
        """One Thompson draw per module. Pulls still pending (asked in a batch or in flight,
        not yet told) count as pulls with reward 0 until their result comes: the posterior of an
        arm being tried is not sampled as if it had not been, so a batch spreads over arms."""
        # one draw over every module's arms at once: a Generator draws an array's elements in
        # order, so the values are those of one call per module (the stream the same), at a
        # third of the cost (four calls of 11 arms or fewer on ``paper_large``: 58 against
        # 22 µs, the stream's own work being the smaller part)
        n, m, r = (np.concatenate(a) for a in (self.counts_, self.pending_counts_,
                                                self.rewards_))
        draw = self.rng_.beta(self.alpha0 + r, self.delta0 + n + m - r)
        self.draw_ = np.split(draw, np.cumsum([len(a) for a in self.counts_])[:-1])
        return tuple(int(np.argmax(omega)) for omega in self.draw_), None

    def _pending_added(self, suggestion: Suggestion) -> None:
        """A pull became pending: its arms count it (kept here, not recounted per ask: with
        64 trials in flight the recount was a tenth of the driver's time)."""
        super()._pending_added(suggestion)
        if hasattr(self, "pending_counts_"):
            for i, j in enumerate(suggestion.config):
                self.pending_counts_[i][int(j)] += 1.0

    def _pending_removed(self, suggestion: Suggestion) -> None:
        super()._pending_removed(suggestion)
        if hasattr(self, "pending_counts_"):
            for i, j in enumerate(suggestion.config):
                self.pending_counts_[i][int(j)] -= 1.0

    def _propose_untaken(self, taken: set) -> tuple[tuple[int, ...], None]:
        """A pull whose pipeline is pending or in flight (a batch, or asynchronous trials)
        takes the best pipeline of the same draw that is not, by the sum of the sampled arm
        values (the sum the per-module argmax maximises), instead of drawing again: with 64
        trials in flight over the 6 776 pipelines of ``paper_large``, redrawing until a pull
        was new took 8.6 draws per pull and half the driver's time. Nothing is pending in a
        sequential run, so its pulls are Algorithm A1's. Draws again only if every pipeline
        is taken."""
        z = self._best_untaken(taken)
        return (z, None) if z is not None else super()._propose_untaken(taken)

    def _best_untaken(self, taken: set) -> tuple[int, ...] | None:
        """The pipeline with the highest sum of the last draw's arm values whose identity is
        not in ``taken`` (best-first over the per-module orders; None if every one is)."""
        # plain lists: the search visits hundreds of pipelines per pull when 256 are in flight
        orders = [np.argsort(-w, kind="stable").tolist() for w in self.draw_]
        values = [w[o].tolist() for w, o in zip(self.draw_, orders)]
        start = (0,) * len(orders)
        heap, seen = [(-sum(v[0] for v in values), start)], {start}
        while heap:
            _, ranks = heapq.heappop(heap)
            z = tuple(o[k] for o, k in zip(orders, ranks))
            if (*map(float, z), 1.0) not in taken:  # the identity of a full-data pull
                return z
            for i in range(len(ranks)):
                if ranks[i] + 1 < len(orders[i]):
                    nxt = ranks[:i] + (ranks[i] + 1,) + ranks[i + 1:]
                    if nxt not in seen:
                        seen.add(nxt)
                        heapq.heappush(heap, (-sum(v[k] for v, k in zip(values, nxt)), nxt))
        return None

    def reward(self, value: float) -> float:
        """Continuous reward r̃ of a z-problem value (A39) under the current f̂
        (``loss_bound_``); 0 for a non-finite value. With ``loss_bound="auto"`` and no positive
        bound yet (no value seen, or none above 0), a value ≤ 0 has reward 1, as under any
        positive f̂, and a positive one 0."""
        if not math.isfinite(value):
            return 0.0
        bound = self.loss_bound_ if hasattr(self, "loss_bound_") else float(self.loss_bound)
        if bound is None or bound <= 0:
            return 1.0 if value <= 0 else 0.0
        return 1.0 - min(max(value / float(bound), 0.0), 1.0)

    def _tell(self, suggestion: Suggestion, observation: Observation) -> None:
        z = tuple(suggestion.config)
        # a pull answered by a subsample (a probe whose full fit the trial policy refused: it
        # would not finish in its time limit) is a failed pull, as a time-out is
        full = observation.ok and observation.fidelity >= 1.0
        value = value_of(self.problem_, z, observation) if full else math.inf
        self._raise_bound(value)  # "auto": f̂ covers this value before it is rewarded
        r_tilde = self.reward(value)
        r = float(self.rng_.random() < r_tilde) if self.binarize else r_tilde
        for i, j in enumerate(z):
            self.counts_[i][j] += 1.0
            self.rewards_[i][j] += r

    def arm_means(self) -> list[np.ndarray]:
        """Posterior mean reward of every arm, per module."""
        return [
            (self.alpha0 + r) / (self.alpha0 + self.delta0 + n)
            for n, r in zip(self.counts_, self.rewards_)
        ]
