"""Bayesian optimisation over the algorithm choices (AdADMM(BO, BO)'s z-solver, Liu et al. 2020)."""

from __future__ import annotations

import math

import numpy as np

from ...exceptions import InvalidParameterError
from ...records import Observation, Suggestion
from ..._numerics import gp as _gp
from ..base import BaseZSolver, random_z
from ..registry import Z_SOLVERS
from ...problem import all_pipelines
from ._fidelity import value_of


@Z_SOLVERS.register("bo")
class GPBayesOptZSolver(BaseZSolver):
    """Gaussian-process BO over one-hot encodings of the algorithm choices, with EI.

    The first ``n_initial_points`` asks (fewer when ``problem.history`` already has observations)
    are uniform random; then a GP is fitted on the one-hot vectors of every pipeline evaluated
    under the current θ, and the unevaluated pipeline of highest expected improvement is asked. The
    GP is the GP core's scikit-learn one (:func:`admm_automl._numerics.gp.sklearn_gp.fit_gp`), with
    one length scale for all one-hot coordinates, and the (log) EI the θ-solver's
    (:func:`admm_automl._numerics.gp.acquisition.log_expected_improvement`).
    Candidates are every pipeline when the space has at most ``max_enumerate`` of them, otherwise
    ``n_candidates`` uniform ones plus all one-module changes of the best ``n_local`` pipelines.

    Parameters
    ----------
    n_initial_points : int, default=5
        Random asks before the GP is used (counting history entries).
    xi : float, default=0.01
        EI exploration margin, in units of the standard deviation of the observed values.
    max_enumerate : int, default=5000
        Enumerate all pipelines up to this many.
    n_candidates : int, default=2000
        Random candidates in larger spaces.
    n_local : int, default=3
        Best pipelines whose one-module neighbours are candidates in larger spaces.

    Notes
    -----
    * Values are ``problem.augment``; failed or non-finite values enter the GP as the worst
      finite value seen (a GP needs finite targets).
    * Observations are valid for one θ only: the data set is **cleared in update_problem** (the
      new problem's history — the current z at the new θ — seeds it), so every ADMM z-min call
      starts with ``n_initial_points`` random asks.
    * When every candidate has been evaluated (or the GP fit fails), a random pipeline is asked.

    References
    ----------
    S. Liu et al. An ADMM Based Framework for AutoML Pipeline Configuration. AAAI 2020
    (AdADMM(BO, BO)). J. Snoek, H. Larochelle, R. P. Adams. Practical Bayesian optimization of
    machine learning algorithms. NeurIPS 2012.
    """

    supports_cheap_proposals = True

    def __init__(
        self,
        n_initial_points: int = 5,
        xi: float = 0.01,
        max_enumerate: int = 5000,
        n_candidates: int = 2000,
        n_local: int = 3,
    ) -> None:
        self.n_initial_points = n_initial_points
        self.xi = xi
        self.max_enumerate = max_enumerate
        self.n_candidates = n_candidates
        self.n_local = n_local

    def _setup(self) -> None:
        if not isinstance(self.n_initial_points, (int, np.integer)) or self.n_initial_points < 1:
            raise InvalidParameterError(
                f"bo: n_initial_points must be an integer >= 1, got {self.n_initial_points!r}"
            )
        n_choices = self.problem_.n_choices
        self.offsets_ = np.concatenate([[0], np.cumsum(n_choices)[:-1]]).astype(int)
        self.dim_ = int(sum(n_choices))
        total = int(np.prod(n_choices))
        self.all_ = all_pipelines(n_choices) if total <= int(self.max_enumerate) else None
        self._reset_data()

    def update_problem(self, problem) -> None:
        super().update_problem(problem)
        self._reset_data()

    def _reset_data(self) -> None:
        self.data_: dict[tuple[int, ...], float] = {}
        for z, obs in self.problem_.history:
            if obs is not None:
                self._add(tuple(int(j) for j in z), obs)

    def _add(self, z: tuple[int, ...], obs: Observation) -> None:
        self.data_[z] = value_of(self.problem_, z, obs) if obs.ok else math.inf

    def one_hot(self, zs: np.ndarray) -> np.ndarray:
        zs = np.atleast_2d(np.asarray(zs, dtype=int))
        x = np.zeros((len(zs), self.dim_))
        x[np.arange(len(zs))[:, None], self.offsets_[None, :] + zs] = 1.0
        return x

    def _candidates(self) -> np.ndarray:
        if self.all_ is not None:
            cands = self.all_
        else:
            n_choices = self.problem_.n_choices
            rand = np.stack(
                [self.rng_.integers(k, size=int(self.n_candidates)) for k in n_choices], axis=1
            )
            ranked = sorted(self.data_, key=lambda z: self.data_[z])[: int(self.n_local)]
            local = []
            for z in ranked:
                for i, k in enumerate(n_choices):
                    for a in range(k):
                        if a != z[i]:
                            local.append(z[:i] + (a,) + z[i + 1 :])
            cands = np.concatenate([rand, np.array(local, dtype=int).reshape(-1, len(n_choices))])
            cands = np.unique(cands, axis=0)
        mask = np.array([tuple(c) not in self.data_ for c in cands.tolist()], dtype=bool)
        return cands[mask]

    def _ask(self) -> tuple[tuple[int, ...], None]:
        if len(self.data_) < int(self.n_initial_points):
            return random_z(self.rng_, self.problem_.n_choices), None
        cands = self._candidates()
        if len(cands) == 0:
            return random_z(self.rng_, self.problem_.n_choices), None
        zs = list(self.data_)
        y = _gp.clean_targets(np.array([self.data_[z] for z in zs], dtype=float))
        if y is None:
            return random_z(self.rng_, self.problem_.n_choices), None
        try:
            with _gp.single_threaded_blas():
                gp, _ = _gp.fit_gp(self.one_hot(np.array(zs)), y, kernel=_gp.default_kernel(
                    self.dim_, ard=False), n_restarts=1,
                    random_state=int(self.rng_.integers(2**31 - 1)))
                mu, sigma = _gp.predict(gp, self.one_hot(cands))
        except (ValueError, np.linalg.LinAlgError):
            return random_z(self.rng_, self.problem_.n_choices), None
        spread = float(y.std()) or 1.0
        score = _gp.log_expected_improvement(mu, sigma, float(y.min()) - float(self.xi) * spread)
        top = np.flatnonzero(score >= score.max() - 1e-12)
        pick = top[int(self.rng_.integers(len(top)))]
        return tuple(int(j) for j in cands[pick]), None

    def _tell(self, suggestion: Suggestion, observation: Observation) -> None:
        self._add(tuple(int(j) for j in suggestion.config), observation)
