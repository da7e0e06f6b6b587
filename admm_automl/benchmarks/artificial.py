"""The artificial black-box objective of Liu et al. 2020 (Appendix 15) over any pipeline space.

For every algorithm j of every module i a weight vector ``w_ij ~ N(0, 1)`` (one entry per tunable
hyperparameter) and a fixed set of ``n_samples`` standard-normal draws ``e_ij`` are fixed by one
seed. With ``f_0 = 0`` and ``j`` the algorithm chosen in module i::

    v_i = |w_ijᵀ θ_ij / 1ᵀθ_ij|                      (θ_ij: the unit coordinates, projected)
    f_i = max_m |f_{i-1} + v_i · e_ij,m|              (n samples of N(f_{i-1}, v_i²), fixed seed)

and the objective is ``f_N``. It is deterministic, non-convex, depends on θ_ij only where z_ij = 1,
and chains the modules; it costs microseconds, so a time-budgeted run measures the optimiser's own
overhead and search efficiency.

Choices the appendix leaves open (ours):

* θ is the unit-box encoding the solvers see, at the projected (admissible) point, so relaxed
  integers and categoricals evaluate like the real objective f̃.
* The ratio is taken at θ_ij + 1e-3 (every coordinate shifted by ε = 1e-3), so it is defined and
  continuous at θ_ij = 0, where it equals the mean of w_ij; flooring 1ᵀθ instead would make the
  corner θ_ij = 0 an exact, trivially found zero of every algorithm.
* An algorithm with no tunable hyperparameter (e.g. the "none" choice) has a constant scale
  ``v_i = |c_ij|``, c_ij ~ N(0, 1) fixed by the seed (its ratio over a one-entry θ). A zero scale
  would make a hyperparameter-free pipeline an exact, trivially found optimum of 0.
* ``v_i`` is the *scale* (standard deviation) of the normal; the appendix calls it the scale in its
  prose.

What the function is like (``paper_large``, seed 0; measured, true of the appendix's formula):

* Its values are not a loss in [0, 1]: the best pipeline scores about 0.433, a uniformly random
  one 4.3 (median; up to about 12), and fewer than 0.1 % of random pipelines score below 0.7.
  Solver settings made for 1 − AUROC need this scale: the bandit's loss bound f̂ = 0.7 of Liu et
  al. turns nearly every pull into reward 0 here (``z.loss_bound`` of
  :class:`~admm_automl.solvers.z.cmab.ThompsonSamplingZSolver`).
* The algorithm choice dominates: 84 % of the variance of a random pipeline's value lies between
  selections z. 16 of the 37 algorithms (every selector, five scalers, GaussianNB, QDA, no
  transformer, Gaussian random projection) have at most one hyperparameter, and with one entry the
  appendix's ratio is w itself, so their v_i does not depend on θ. The best pipeline with
  ``select_fpr`` scores about 0.433, with ``select_percentile`` 0.658, with any other selector
  more than 0.85.
* At the algorithms' default θ only one of the 6776 pipelines scores below 0.70: ADMM's z-min,
  which scores pipelines at the current θ of their algorithms, rarely beats a pipeline that
  θ-min has tuned.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..space import PipelineSpace


EPS = 1e-3  # shift of θ in the ratio (see the module docstring)


class ArtificialObjective:
    """A task (``space`` + ``run``) that evaluates the artificial objective of Liu et al. 2020.

    Parameters
    ----------
    space : PipelineSpace
        Any pipeline space; only its encoding (modules, choices, θ slots) is used.
    seed : int
        Fixes every weight vector and every set of normal draws.
    n_samples : int
        The n of the appendix ("say 10").
    """

    def __init__(self, space: PipelineSpace, seed: int = 0, n_samples: int = 10) -> None:
        if n_samples < 1:
            raise ValueError(f"n_samples must be >= 1, got {n_samples!r}")
        self.space = space
        self.seed = seed
        self.n_samples = n_samples
        enc = space.encoding
        rng = np.random.default_rng(seed)
        self.weights = [[rng.standard_normal(max(len(s), 1)) for s in module] for module in enc.slots]
        self.draws = [[rng.standard_normal(n_samples) for _ in module] for module in enc.slots]

    def value(self, z: tuple[int, ...], theta: np.ndarray) -> float:
        """``f_N`` of the pipeline ``(z, θ)``."""
        enc = self.space.encoding
        z = enc.check_z(z)
        theta = enc.project(enc.check_theta(theta))
        f = 0.0
        for i, j in enumerate(z):
            t = theta[enc.slots[i][j]]
            w = self.weights[i][j]
            v = abs(float(w @ (t + EPS)) / float((t + EPS).sum())) if t.size else abs(float(w[0]))
            f = float(np.max(np.abs(f + v * self.draws[i][j])))
        return f

    def run(self, z: tuple[int, ...], theta: np.ndarray, fidelity: float = 1.0) -> dict[str, Any]:
        """The executor's entry point (fidelity has no effect)."""
        return {
            "status": "ok", "loss": self.value(z, theta), "error": None,
            "fit_time": 0.0, "predict_time": 0.0, "constraints": {}, "n_train": None,
        }
