"""``bo``: our Gaussian-process Bayesian optimisation for θ-min ("BO*" of Liu et al. 2020, App. 3).

The numerics live in :mod:`admm_automl._numerics.gp` (the model in ``gp.model``, the acquisition
in ``gp.acquisition``, its maximiser in ``gp.optim``, the rows a refit uses, its cadence, the
candidate and start counts and the growing arrays in ``gp.surrogate``); this module adapts them
to the ask/tell protocol.
"""

from __future__ import annotations

import warnings

import numpy as np

from ...exceptions import SolverFallbackWarning
from ..._validation import NON_NEGATIVE_NUMBER, NONE, int_at_least, options, validate_params
from ..base import DUPLICATE_TOL, BaseThetaSolver
from ..registry import THETA_SOLVERS
from ..._numerics import gp as _gp
from ..._numerics.gp import surrogate


@THETA_SOLVERS.register("bo")
class GPBayesOptThetaSolver(BaseThetaSolver):
    """Gaussian-process BO (ARD Matérn-5/2 + log-EI) with the ADMM penalty added analytically.

    Liu et al. (2020), Appendix 3 ("BO*"): a GP prior with an ARD Matérn-5/2 kernel and a noise
    term, expected improvement maximised inside the unit box. The surrogate is
    :class:`admm_automl._numerics.gp.model.MaternGP`: targets scaled to unit variance around a
    constant prior mean, hyperparameters (length scales, signal and noise variance) by *maximum a
    posteriori* under the priors of Optuna's GP sampler (``−(0.1/a + 0.1·a)`` on every inverse
    squared length scale ``a``, Gamma(2, 1) on the signal variance, Gamma(1.1, 30) on the noise
    variance, ≥ 1e-6), warm-started from the previous fit. Beyond the paper:

    * **Warm start.** Every observation in ``problem.history`` (earlier ADMM iterations of the same
      algorithm selection) is reused, re-scored with the current duals through
      ``problem.augment``; the initial design is shortened by the number of history points.
    * **Analytic penalty.** The GP models only the black-box part ``g = augment − penalty``; the
      acquisition is EI of ``N(μ(x) + penalty(x), σ(x)²)`` against the best augmented value
      observed, in the log-EI form of :class:`admm_automl._numerics.gp.acquisition.GPLogEI`
      (finite where plain EI underflows; Ament et al. 2023), with analytic gradients (a
      :class:`~admm_automl.problem.QuadraticPenalty` gives its own; another penalty is
      differenced).
    * **Cheap updates**, so that an ask stays cheap beside an evaluation: the hyperparameters are
      refitted only when the observations have grown by ``refit_growth``; in between, new points
      enter the last fit by block updates of ``K⁻¹`` and changed duals only re-read the targets;
      beyond ``max_points`` observations the fit uses the best half of ``max_points`` and the
      most recent others; the candidate set shrinks as the GP grows and all L-BFGS-B starts are
      polished in one vectorised run (:mod:`admm_automl._numerics.gp.surrogate`,
      :func:`admm_automl._numerics.gp.optim.maximize`). With many workers the polish has fewer
      starts as the pending set grows, at most ``max_points // 2`` pending points enter the GP
      as lies, a refit waits for half the workers' number of new observations, and a batch's
      later points are conditioned on by rank-one updates (:meth:`ask_batch`).

    Asks, in order: ``problem.start`` if it is not in the history yet; then uniform random points
    (Optuna's initial design) until ``n_initial_points`` observations exist (history included);
    then the log-EI maximiser (candidates plus perturbations of the five best points,
    ``n_restarts`` starts polished by L-BFGS-B), never a point already observed or pending. While
    other suggestions are pending (parallel batches), each is added to the GP with the
    constant-liar value ``min(g)`` (scikit-optimize's ``cl_min``), hyperparameters fixed; a batch
    asked at once comes from one acquisition search (:meth:`ask_batch`). Discrete coordinates stay
    relaxed (θ-min works on the relaxation). Cheap proposals for an overhead-aware run
    (:class:`~admm_automl.solvers.loop.OverheadBalance`) are told like any other observation.

    Bad observations: a failed trial already carries the metric's worst loss; a NaN or ±inf value
    is replaced by the worst finite value seen. With fewer than two finite values, or when the GP
    fit or the acquisition search raises (a :class:`SolverFallbackWarning` once per ``setup``),
    the ask is uniform random.

    What these settings were measured against is on the documentation's page of Liu et al.
    (2020), "The θ-solver ``bo``: what was measured".

    Parameters
    ----------
    n_initial_points : int, default=10
        Observations (history included) before the GP is used; 10 as Optuna's
        ``n_startup_trials`` (fewer or more did no better).
    xi : float, default=0.0
        Exploration margin of EI (improvement is measured from ``f* − xi·s``, ``s`` the standard
        deviation of the observed targets); 0 as Optuna: a margin stalls the refinement on
        objectives with a wide value range.
    n_candidates : int or None, default=None
        Candidates scored before the L-BFGS-B polish; None: 128 per dimension (512–1024), fewer
        once the GP holds more than 64 points (``surrogate.n_candidates``).
    n_restarts : int, default=5
        Starts of the L-BFGS-B polish, in one batched run; as good as Optuna's 10 separate runs
        at a fraction of the time.
    refit_growth : float, default=0.05
        Refit the hyperparameters when the observations grew by this fraction since the last fit
        (0: at every ask); 5 %: every ask up to 20 observations, every 10th at 200.
    max_points : int, default=300
        Observations the GP is refitted on at most; the cost of a fit stops growing there.
    prior_mean : {"max", "mean"}, default="max"
        The GP's constant prior mean: the worst observed value (De Ath et al. 2020: far from the
        data a mean-centred model sends EI to the faces and corners of the box) or their mean
        (Optuna's and scikit-learn's).

    References
    ----------
    Liu, Ram et al., "An ADMM Based Framework for AutoML Pipeline Configuration", AAAI 2020,
    Appendix 3. Snoek, Larochelle, Adams, "Practical Bayesian Optimization of Machine Learning
    Algorithms", NeurIPS 2012 (Matérn-5/2 + EI). De Ath, Fieldsend, Everson, "What do you mean?
    The role of the mean function in Bayesian optimisation", GECCO 2020 (the prior mean). Ament et
    al., "Unexpected Improvements to Expected Improvement for Bayesian Optimization", NeurIPS 2023
    (log-EI). Optuna's ``GPSampler`` (Akiba et al., KDD 2019) for the priors, the scaling of the
    targets and the acquisition starts.
    """

    supports_batch = True
    supports_cheap_proposals = True

    def __init__(
        self,
        n_initial_points: int = 10,
        xi: float = 0.0,
        n_candidates: int | None = None,
        n_restarts: int = 5,
        refit_growth: float = 0.05,
        max_points: int = 300,
        prior_mean: str = "max",
    ) -> None:
        self.n_initial_points = n_initial_points
        self.xi = xi
        self.n_candidates = n_candidates
        self.n_restarts = n_restarts
        self.refit_growth = refit_growth
        self.max_points = max_points
        self.prior_mean = prior_mean

    # ------------------------------------------------------------------ setup
    def _validate(self) -> None:
        validate_params(self.name, vars(self), {
            "n_initial_points": [int_at_least(0)],
            "xi": [NON_NEGATIVE_NUMBER],
            "n_candidates": [int_at_least(0), NONE],
            "n_restarts": [int_at_least(0)],
            "refit_growth": [NON_NEGATIVE_NUMBER],
            "max_points": [int_at_least(2)],
            "prior_mean": [options(*_gp.PRIOR_MEANS)],
        })

    def _setup(self) -> None:
        self._validate()
        problem = self.problem_
        dim = int(problem.dim)
        start = self._start_point()
        design: list[np.ndarray] = [] if start is None else [start]
        n_design = max(0, int(self.n_initial_points) - len(problem.history) - len(design))
        design.extend(self.rng_.uniform(0.0, 1.0, size=(n_design, dim)))
        self.design_ = design
        self.params_ = None  # the last fitted kernel hyperparameters (warm start of the next fit)
        self.fallback_warned_ = False
        self.gp_ = None
        #: the GP with the pending points as lies, kept from one ask to the next, and the rows
        #: of the points told since the last ask (by suggestion id): see :meth:`_model_points`
        self.liars_ = _gp.KeptLies()
        self.told_rows_: dict[int, int] = {}
        self._load(problem.history)

    def _load(self, pairs) -> None:
        """Score ``pairs`` with the current problem: the arrays every ask reads."""
        problem = self.problem_
        dim = int(problem.dim)
        X = np.array([np.asarray(x, dtype=float) for x, _ in pairs]).reshape(len(pairs), dim)
        self.X_ = surrogate.Rows(X)
        pen = _gp.penalty_rows(problem.penalty, X) if len(X) else np.zeros(0)
        aug = np.array([problem.augment(x, o) for x, (_, o) in zip(X, pairs)], dtype=float)
        self.pen_ = surrogate.Rows(pen)
        self.g_ = surrogate.Rows(aug - pen)
        gp = getattr(self, "gp_", None)
        rows = getattr(self, "gp_rows_", np.zeros(0, dtype=int))
        if gp is None or not (len(rows) and rows[-1] < len(X) and np.array_equal(X[rows], gp.X)):
            self.gp_, self.gp_rows_, self.n_fit_ = None, np.zeros(0, dtype=int), 0
        if hasattr(self, "liars_"):  # the rows are numbered afresh
            self.liars_.reset()
            self.told_rows_.clear()

    def update_problem(self, problem) -> None:
        """New ADMM iterate: the observations are re-scored with the new duals at once. When the
        new history starts with the points the GP was fitted on, the GP is kept (its targets are
        re-read at the next ask); else it is refitted there, warm-started from the last
        hyperparameters."""
        super().update_problem(problem)
        self._load(problem.history)

    def _tell(self, suggestion, observation) -> None:
        x = np.asarray(suggestion.config, dtype=float)
        pen = float(_gp.penalty_rows(self.problem_.penalty, x[None, :])[0])
        self.told_rows_[suggestion.id] = len(self.X_.array)
        self.X_.append(x)
        self.pen_.append(pen)
        self.g_.append(float(self.problem_.augment(x, observation)) - pen)

    # ------------------------------------------------------------------ ask
    def _ask(self) -> tuple[np.ndarray, None]:
        if self.design_:
            return np.array(self.design_.pop(0), dtype=float), None
        return self._next_point(self._model_points()), None

    def ask_batch(self, n: int) -> list:
        """``n`` suggestions from one acquisition search: the first is :meth:`ask`'s; each next
        one is the best point of the same search (its polished starts and candidates) re-scored
        under the GP told the suggestions issued before it at the constant-liar value, without
        a polish of its own. So a batch of ``n`` costs one search and ``n − 1`` scorings of its
        points instead of ``n`` searches: at 64 workers, asking each point by its own search
        (68 ms, 57 of them the polish) kept the driver busy and the workers idle.

        Measured on Hartmann-6 before it was kept (10 seeds, batches of 8 over 96 evaluations
        and of 32 over 256): 4.0× and 5.7× less time per point, final regret not worse (median
        0.0000 against 0.0001, paired Wilcoxon p = 0.32; 0.060 against 0.009, p = 0.13: which
        of the function's two basins a seed ends in decides the median). A short polish of each
        later point (20 L-BFGS-B iterations) doubled the time and did not do better (0.0001;
        0.119). The design points come first, as in :meth:`ask`.

        Each later point is conditioned on by a rank-one update of the posterior at the search's
        points (:class:`~admm_automl._numerics.gp.Fantasies`) rather than by appending it to the
        GP and predicting them all again: the same constant liar up to the targets' scaling,
        which stays the search's, at O(m·n) a point instead of O(m·n²) (m points, n in the GP;
        a batch of 64 over a GP of 300 points paid ~8 ms a point for that re-scoring). With
        the fewer polish starts and refits that many pending points bring (``surrogate.n_starts``,
        :meth:`_surrogate`), measured again on Hartmann-6 (10 seeds): batches of 8 over 96
        evaluations, mean regret 0.0358 as before at 11.6 against 17.0 ms a point; of 32
        over 256, 0.0657 against 0.0642 (5 of 10 seeds in the local basin either way) at 4.6
        against 9.4 ms a point."""
        n = int(n)
        if n <= 1 or not hasattr(self, "problem_"):
            return super().ask_batch(n)
        out = [self.ask() for _ in range(min(n, len(self.design_)))]
        if len(out) < n:
            taken = self._taken()
            points = self._model_points()
            while len(out) < n:
                out.append(self._issue_new(self._next_point(points, stacklevel=3), None, taken))
        return out

    def _next_point(self, points, stacklevel: int = 4) -> np.ndarray:
        """The next point of the generator :meth:`_model_points`, or a uniform random one
        when there is nothing to model yet or the GP step fails (warned once per ``setup``,
        ``stacklevel`` frames up: the caller of :meth:`ask` by default)."""
        try:
            with _gp.single_threaded_blas():
                x = next(points, None)
        except Exception as err:  # a broken model must not end the run
            if not self.fallback_warned_:
                self.fallback_warned_ = True
                warnings.warn(
                    f"bo: the Gaussian-process step failed ({type(err).__name__}: {err}); asking "
                    "random points instead",
                    SolverFallbackWarning,
                    stacklevel=stacklevel,
                )
            x = None
        if x is None:
            x = self.rng_.uniform(0.0, 1.0, size=self.problem_.dim)
        return x

    def _surrogate(self, X: np.ndarray, g: np.ndarray,
                   defer: bool = False) -> tuple[_gp.MaternGP, np.ndarray]:
        """The GP of the black-box part and the observation rows it should hold: refitted
        (hyperparameters by MAP) when the observations grew by ``refit_growth`` since the last
        fit, else the last fit with the new points appended and the targets re-read (the duals
        may have changed them). With ``defer`` (points pending and the GP with their lies kept,
        :meth:`_model_points`) the last fit is returned as it is, with the rows it should hold:
        the kept GP takes the new points and targets instead, and this one catches up at the
        next ask without pending points (one block update of them all)."""
        n = len(g)
        workers = int(getattr(self.problem_, "batch_size", 1))
        due = surrogate.refit_due(n, self.n_fit_, self.refit_growth, workers)
        if self.gp_ is None or due:
            rows = surrogate.model_rows(g, self.max_points)
            # with several workers the fit's K⁻¹ by potri: the same up to rounding at half
            # the cost (a serial run keeps its exact history; ``MaternGP``'s ``fast_inverse``)
            self.gp_ = _gp.MaternGP(X[rows], g[rows], self.params_, prior_mean=self.prior_mean,
                                    fast_inverse=workers > 1)
            self.params_ = self.gp_.params
            self.gp_rows_, self.n_fit_ = rows, n
        elif self.gp_rows_[-1] < n - 1:
            new = np.arange(self.gp_rows_[-1] + 1, n)
            if defer:
                return self.gp_, np.concatenate([self.gp_rows_, new])
            self.gp_rows_ = np.concatenate([self.gp_rows_, new])
            self.gp_ = self.gp_.append(X[new], g[self.gp_rows_])
        if defer:
            return self.gp_, self.gp_rows_
        targets = g[self.gp_rows_]
        if not np.array_equal(targets, self.gp_.y):
            self.gp_ = self.gp_.with_targets(targets)
        return self.gp_, self.gp_rows_

    def _model_points(self):
        """Model-based proposals, one per ``next``, each made after the one before was issued:
        the log-EI maximiser under the GP with every pending point at the constant-liar value
        (``None`` when no candidate is new), then the points of the same search re-scored as
        newly pending points join the GP (:meth:`ask_batch`): a point of the search that was
        issued is conditioned on by a rank-one update of the posterior at the search's points
        (:class:`~admm_automl._numerics.gp.Fantasies`, the targets' scaling fixed), any other
        newly pending point by appending it to the GP. At most ``max_points // 2`` pending
        points (the latest) are lies in the GP, so that its size stays below 1.5·``max_points``
        whatever the number of workers; older pending points are still never proposed again."""
        problem = self.problem_
        dim = int(problem.dim)
        X, g_raw, pen = self.X_.array, self.g_.array, self.pen_.array
        if np.isfinite(g_raw).sum() < 2:  # nothing to model yet
            return
        g = _gp.clean_targets(g_raw)
        # with points pending and their lies kept from the last ask, the GP of the observations
        # is not brought up to date: the kept GP takes the new observations (KeptLies)
        defer = len(self.pending_) > 0 and self.liars_.holds(self.gp_)
        gp, rows = self._surrogate(X, g, defer)
        aug = g + pen
        best = float(aug.min())
        lie = float(g.min())  # constant liar: pending points take the best black-box value seen
        spread = float(np.std(g))
        spread = spread if spread > 0 else 1.0
        told: set[int] = set()
        taken = surrogate.Rows(X)  # observed and pending points: a proposal must be new to both
        ranked = order = fantasies = last = None
        issued: set[int] = set()  # indices into ``ranked`` of the points yielded
        max_lies = max(1, int(self.max_points) // 2)
        while True:
            new = [s for key, s in self.pending_.items() if key not in told]
            told.update(s.id for s in new)
            P = np.array([np.asarray(s.config, dtype=float) for s in new]).reshape(len(new), dim)
            for row in P:
                taken.append(row)
            if ranked is not None and len(new) == 1 and last is not None and np.array_equal(
                    P[0], np.clip(ranked[last], 0.0, 1.0)):
                # the point just issued, one of this search's: a rank-one update
                if fantasies is None:
                    fantasies = _gp.Fantasies(gp, ranked)
                fantasies.condition(last, lie)
                best = min(best, lie + float(ranked_pen[last]))
                mean, std = fantasies.predict()
                with np.errstate(invalid="ignore", over="ignore"):  # non-finite: never chosen
                    values = _gp.log_expected_improvement(
                        mean + ranked_pen, std, best - float(self.xi) * spread, 1e-10 * spread)
            else:
                if len(new) and ranked is None:
                    # the GP with the lies kept from the last ask: only the point told since
                    # (its lie becomes its observation) and the point issued since change
                    lies = {s.id: P[i] for i, s in enumerate(new)}
                    lies = dict(list(lies.items())[-max_lies:])
                    gp = self.liars_.update(gp, self.gp_rows_, rows, X, g[rows], lies, lie,
                                            self.told_rows_)
                elif len(new):
                    gp = gp.append(P, np.concatenate([gp.y, np.full(len(P), lie)]))
                if ranked is None:
                    self.told_rows_.clear()
                if len(new):
                    best = min(best, float((lie + _gp.penalty_rows(problem.penalty, P)).min()))
                    fantasies = None
                acquisition = _gp.GPLogEI(gp, best - float(self.xi) * spread, problem.penalty,
                                          min_std=1e-10 * spread)
                if ranked is None:
                    centres = X[np.argsort(aug, kind="stable")[:5]]
                    ranked = _gp.maximize(
                        acquisition, dim, self.rng_, centres=centres,
                        n_candidates=(surrogate.n_candidates(dim, len(gp.X),
                                                             len(self.pending_))
                                      if self.n_candidates is None else int(self.n_candidates)),
                        n_starts=surrogate.n_starts(self.n_restarts, len(self.pending_)),
                        batched=True, lengthscales=gp.params.inv_sq_lengthscales ** -0.5,
                    )
                    ranked_pen = _gp.penalty_rows(problem.penalty, ranked)
                    values = None
                else:
                    values = acquisition(ranked)
            if values is None:
                order = np.arange(len(ranked))
            else:
                values = np.where(np.isfinite(values), values, -np.inf)
                order = np.argsort(-values, kind="stable")
            # the points this search issued are taken (and, the lies being noisy, often still
            # ranked first): skipped without measuring their distance to every taken row
            last = next((int(i) for i in order if int(i) not in issued
                         and np.min(np.linalg.norm(taken.array - ranked[i], axis=1))
                         > DUPLICATE_TOL), None)
            if last is not None:
                issued.add(last)
            yield None if last is None else np.clip(ranked[last], 0.0, 1.0)
