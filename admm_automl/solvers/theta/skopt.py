"""``skopt``: scikit-optimize's GP Bayesian optimisation behind the ask/tell protocol."""

from __future__ import annotations

import math
import warnings

import numpy as np

from ...exceptions import MissingDependencyError
from ..base import BaseThetaSolver
from ..registry import THETA_SOLVERS
from ..._numerics.gp import single_threaded_blas


def _import_optimizer():
    try:
        from skopt import Optimizer
    except ImportError as err:  # pragma: no cover - a core dependency
        raise MissingDependencyError(
            "theta solver 'skopt' needs scikit-optimize >= 0.10.2: pip install "
            f"'scikit-optimize>=0.10.2' ({err})"
        ) from None
    return Optimizer


@THETA_SOLVERS.register("skopt")
class SkoptThetaSolver(BaseThetaSolver):
    """scikit-optimize GP-BO (Optimizer(base_estimator="GP", acq_func="EI")), Liu et al.'s "BO".

    A thin adapter over :class:`skopt.Optimizer` on the unit box: its GP is
    ``ConstantKernel × Matern(ν=2.5) + WhiteKernel`` with normalised targets, its acquisition is
    maximised by L-BFGS-B from the best of ``n_points`` random candidates. Unlike ``bo`` it models
    the *augmented* value ``problem.augment(x, obs)`` as one black box (the penalty is not
    separated), which is what the paper compares against.

    Warm start: every ``problem.history`` observation is told first, re-scored with the current
    duals through ``problem.augment`` (so the initial random phase is shortened or skipped). If
    ``problem.start`` is not in the history it is asked first. While other suggestions are pending
    (parallel batches), the next one comes from a copy of the optimiser told the pending points
    with the constant-liar value ``min(y)`` (scikit-optimize's ``cl_min``).

    Bad observations: a failed trial already carries the metric's worst loss; a NaN or ±inf value
    is told as the worst finite value seen so far (values that arrive before any finite one are
    held back and told once one arrives). The optimiser's ``random_state`` is drawn from the rng
    given to ``setup``.

    Parameters
    ----------
    n_initial_points : int, default=10
        Random points before the GP is used (history points count).
    acq_func : str, default="EI"
        scikit-optimize's acquisition ("EI", "PI", "LCB", "gp_hedge", ...).
    xi : float, default=0.01
        EI/PI exploration margin (absolute, in units of the objective).
    n_points : int, default=10000
        Random candidates scored before the L-BFGS-B polish.
    n_restarts_optimizer : int, default=5
        L-BFGS-B starts of the acquisition polish.
    gp_restarts : int, default=2
        Extra random starts of the GP's marginal-likelihood maximisation (scikit-optimize's
        default GP, built by ``skopt.utils.cook_estimator("GP", n_restarts_optimizer=...)``).

    References
    ----------
    Head et al., scikit-optimize (https://scikit-optimize.github.io), version >= 0.10.2.
    Liu, Ram et al., AAAI 2020, Section 5 and Appendix 3 ("BO").
    """

    supports_batch = True

    def __init__(
        self,
        n_initial_points: int = 10,
        acq_func: str = "EI",
        xi: float = 0.01,
        n_points: int = 10000,
        n_restarts_optimizer: int = 5,
        gp_restarts: int = 2,
    ) -> None:
        self.n_initial_points = n_initial_points
        self.acq_func = acq_func
        self.xi = xi
        self.n_points = n_points
        self.n_restarts_optimizer = n_restarts_optimizer
        self.gp_restarts = gp_restarts

    # ------------------------------------------------------------------ setup
    def _make_optimizer(self, seed: int):
        Optimizer = _import_optimizer()
        from skopt.space import Space
        from skopt.utils import cook_estimator

        dimensions = [(0.0, 1.0)] * int(self.problem_.dim)
        gp = cook_estimator(
            "GP", space=Space(dimensions), n_restarts_optimizer=int(self.gp_restarts),
            random_state=int(self.rng_.integers(2**31 - 1)),
        )
        return Optimizer(
            dimensions,
            base_estimator=gp,
            acq_func=self.acq_func,
            acq_optimizer="lbfgs",
            n_initial_points=int(self.n_initial_points),
            initial_point_generator="random",
            random_state=seed,
            acq_func_kwargs={"xi": float(self.xi)},
            acq_optimizer_kwargs={
                "n_points": int(self.n_points),
                "n_restarts_optimizer": int(self.n_restarts_optimizer),
            },
        )

    def _setup(self) -> None:
        problem = self.problem_
        self.opt_ = self._make_optimizer(int(self.rng_.integers(2**31 - 1)))
        self.worst_ = -math.inf
        self.held_: list[tuple[list[float], float]] = []
        known = [np.clip(np.asarray(x, dtype=float), 0.0, 1.0) for x, _ in problem.history]
        self.first_ = self._start_point()
        if problem.history:
            values = [problem.augment(x, obs) for x, obs in problem.history]
            self._tell_many([list(map(float, x)) for x in known], values)

    def update_problem(self, problem) -> None:
        """New ADMM iterate: a fresh optimiser told the new problem's history (re-scored with its
        duals); pending suggestions are forgotten."""
        super().update_problem(problem)
        self.pending_.clear()
        self._setup()

    # ------------------------------------------------------------------ helpers
    def _tell_many(self, xs: list[list[float]], values: list[float]) -> None:
        """Tell skopt, replacing non-finite values by the worst finite one seen (held back until
        a finite one exists)."""
        finite = [v for v in values if math.isfinite(v)]
        if finite:
            self.worst_ = max(self.worst_, max(finite))
        pairs = self.held_ + list(zip(xs, values))
        if not math.isfinite(self.worst_):
            self.held_ = pairs
            return
        self.held_ = []
        X = [x for x, _ in pairs]
        y = [float(v) if math.isfinite(v) else self.worst_ for _, v in pairs]
        with single_threaded_blas(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # skopt's duplicate-point notes, sklearn convergence
            self.opt_.tell(X, y)

    # ------------------------------------------------------------------ ask / tell
    def _ask(self) -> tuple[np.ndarray, None]:
        if self.first_ is not None:
            x, self.first_ = self.first_, None
            return x, None
        # pending here, and in flight for an earlier step of this problem: both are lies
        configs = [s.config for s in self.pending_.values()]
        configs += [c for c, _ in self._in_flight_elsewhere()]
        pending = [list(map(float, np.clip(c, 0.0, 1.0))) for c in configs]
        with single_threaded_blas(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            opt = self.opt_
            if pending and opt.yi:
                opt = opt.copy(random_state=int(self.rng_.integers(2**31 - 1)))
                opt.tell(pending, [float(min(opt.yi))] * len(pending))
            x = opt.ask()
        return np.clip(np.asarray(x, dtype=float), 0.0, 1.0), None

    def _tell(self, suggestion, observation) -> None:
        x = np.clip(np.asarray(suggestion.config, dtype=float), 0.0, 1.0)
        value = float(self.problem_.augment(suggestion.config, observation))
        self._tell_many([list(map(float, x))], [value])
