"""Acquisition optimisation: candidates in the unit box, starts chosen among them, and their
polish by bound-constrained L-BFGS-B (:func:`maximize`, one routine for both acquisitions of
:mod:`.acquisition`).
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
from scipy import optimize
from scipy.stats import qmc

from .acquisition import GPLogEI, LogEI

#: what the polish of either kind may raise; the start then stands as it is
_POLISH_ERRORS = (ValueError, FloatingPointError, np.linalg.LinAlgError)


def sobol_points(n: int, dim: int, seed: int) -> np.ndarray:
    """The first ``n`` points of a scrambled Sobol' sequence in [0, 1]^dim (drawn as a power of
    two, so scipy's balance warning does not fire)."""
    if n <= 0:
        return np.empty((0, dim))
    m = max(0, math.ceil(math.log2(n)))
    return qmc.Sobol(dim, scramble=True, seed=seed).random_base2(m)[:n]


def candidate_points(dim: int, rng: np.random.Generator, centres: np.ndarray | None,
                     n_candidates: int, sobol: bool = True) -> np.ndarray:
    """``n_candidates`` scrambled Sobol' points (``sobol``) or uniform ones, plus Gaussian
    perturbations (scales 0.02 and 0.1) of ``centres`` (e.g. the best observed points) and the
    centres themselves."""
    if sobol:
        parts = [sobol_points(n_candidates, dim, int(rng.integers(2**32 - 1)))]
    else:
        parts = [rng.uniform(0.0, 1.0, size=(n_candidates, dim))]
    if centres is not None and len(centres):
        centres = np.atleast_2d(centres)
        per = max(8, n_candidates // (4 * len(centres)))
        for scale in (0.02, 0.1):
            noise = rng.normal(0.0, scale, size=(len(centres), per, dim))
            parts.append(np.clip(centres[:, None, :] + noise, 0.0, 1.0).reshape(-1, dim))
        parts.append(centres)
    return np.vstack(parts)


def scored_candidates(acquisition: Callable[[np.ndarray], np.ndarray], dim: int,
                      rng: np.random.Generator, centres: np.ndarray | None, n_candidates: int,
                      sobol: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`candidate_points`, their acquisition values (non-finite ones as −inf) and the
    order from the best down."""
    candidates = candidate_points(dim, rng, centres, n_candidates, sobol)
    values = acquisition(candidates)
    values = np.where(np.isfinite(values), values, -np.inf)
    return candidates, values, np.argsort(-values, kind="stable")


def maximize(
    acquisition: LogEI | GPLogEI,
    dim: int,
    rng: np.random.Generator,
    *,
    centres: np.ndarray | None = None,
    n_candidates: int = 1024,
    n_starts: int = 5,
    maxiter: int = 100,
    batched: bool = False,
    lengthscales: np.ndarray | None = None,
) -> np.ndarray:
    """Points of [0, 1]^dim ordered from the highest acquisition value down.

    ``acquisition(X)`` gives the values of the rows of ``X`` (higher is better). Candidates:
    ``n_candidates`` points plus Gaussian perturbations (scales 0.02 and 0.1) of ``centres``
    (e.g. the best observed points) and the centres themselves (:func:`candidate_points`). Up to
    ``n_starts`` of them are polished by bound-constrained L-BFGS-B; a polished point that is not
    better than its start is replaced by its start. The polished points come first (best first),
    then the remaining candidates (best first), so a caller can skip points it does not want
    (duplicates).

    ``batched=False`` (:class:`~.acquisition.LogEI`, or any acquisition with
    ``value_and_grad(x)``): scrambled Sobol' candidates; the ``n_starts`` best are the starts,
    each polished by its own L-BFGS-B run.

    ``batched=True`` (:class:`~.acquisition.GPLogEI`, or any acquisition with batched analytic
    gradients ``values_and_grads(X)``): uniform candidates rather than Sobol' (as Optuna; on
    Hartmann-6 more runs reached the global basin with them, 47 % against 38 % of 40 seeds, a
    difference within two standard errors). Starts, after Optuna's ``optimize_acqf_mixed``: the
    best candidate, the best centre (the incumbent) and ``n_starts − 2`` more drawn without
    replacement with probabilities ∝ ``exp(value − best value)`` (a roulette that spreads the
    starts over the promising modes instead of polishing one mode ``n_starts`` times). All starts
    are polished by *one* L-BFGS-B on the sum of their values (the starts are independent, so the
    summed objective is separable and its gradient is theirs; BoTorch's ``gen_candidates_scipy``
    does the same), which costs one vectorised acquisition call per iteration instead of one per
    start. Coordinates are scaled by ``lengthscales`` (Optuna's preconditioning: the acquisition
    is a function of ``x / ℓ``, so ``u = x / ℓ`` is evenly conditioned; ``None``: unscaled).
    """
    candidates, values, order = scored_candidates(acquisition, dim, rng, centres, n_candidates,
                                                  sobol=not batched)
    if batched:
        n_centres = len(np.atleast_2d(centres)) if centres is not None and len(centres) else 0
        chosen = _roulette_starts(values, order, n_centres, n_starts, rng)
        polished, polished_values = _polish_together(acquisition, candidates[chosen],
                                                     values[chosen], maxiter, lengthscales)
    else:
        chosen = order[: max(0, n_starts)]
        polished, polished_values = _polish_each(acquisition, candidates[chosen], values[chosen],
                                                 maxiter)
    return _ranked(candidates, values, order, chosen, polished, polished_values)


def _roulette_starts(values: np.ndarray, order: np.ndarray, n_centres: int, n_starts: int,
                     rng: np.random.Generator) -> list[int]:
    """Indices of the starts of the batched polish: the best candidate, the first centre (the
    last ``n_centres`` candidates are the centres) and a roulette ∝ ``exp(value − best)``."""
    chosen = [int(order[0])]
    if n_centres:
        chosen.append(len(values) - n_centres)  # the first centre
    extra = max(0, int(n_starts) - len(chosen))
    if extra and np.isfinite(values[order[0]]):
        probs = np.exp(values - values[order[0]])
        probs[chosen] = 0.0
        probs = np.where(np.isfinite(probs), probs, 0.0)
        extra = min(extra, int(np.count_nonzero(probs > 0)))
        if extra:
            chosen.extend(int(i) for i in rng.choice(len(values), size=extra, replace=False,
                                                     p=probs / probs.sum()))
    return list(dict.fromkeys(chosen))[: max(1, int(n_starts))] if n_starts > 0 else []


def _polish_each(acquisition: LogEI, starts: np.ndarray, start_values: np.ndarray,
                 maxiter: int) -> tuple[np.ndarray, np.ndarray]:
    """One L-BFGS-B run per start on ``value_and_grad``; the polished points and their values
    (a start that fails stands with its own value; a non-finite value is a plateau of 1e300)."""
    dim = starts.shape[1]
    bounds = [(0.0, 1.0)] * dim

    def objective(x: np.ndarray) -> tuple[float, np.ndarray]:
        value, grad = acquisition.value_and_grad(x)
        if not np.isfinite(value):
            return 1e300, np.zeros(dim)
        return -value, -grad

    polished, values = starts.copy(), np.array(start_values, dtype=float)
    for j, start in enumerate(starts):
        try:
            res = optimize.minimize(objective, start, jac=True, method="L-BFGS-B", bounds=bounds,
                                    options={"maxiter": maxiter})
        except _POLISH_ERRORS:
            continue
        polished[j], values[j] = np.clip(res.x, 0.0, 1.0), -float(res.fun)
    return polished, values


def _polish_together(acquisition: GPLogEI, starts: np.ndarray, start_values: np.ndarray,
                     maxiter: int, lengthscales: np.ndarray | None,
                     ) -> tuple[np.ndarray, np.ndarray]:
    """One L-BFGS-B run on the summed ``values_and_grads`` of all starts, in coordinates scaled
    by ``lengthscales``; the polished points and their values (the starts if it fails)."""
    k, dim = starts.shape
    if not k:
        return starts, start_values
    ls = np.ones(dim) if lengthscales is None else np.asarray(lengthscales, dtype=float)

    def objective(u: np.ndarray) -> tuple[float, np.ndarray]:
        X = np.clip(u.reshape(k, dim) * ls, 0.0, 1.0)
        v, g = acquisition.values_and_grads(X)
        bad = ~np.isfinite(v) | ~np.all(np.isfinite(g), axis=1)
        if bad.any():
            v = np.where(bad, -1e6, v)
            g = np.where(bad[:, None], 0.0, g)
        return -float(v.sum()), -(g * ls).ravel()

    bounds = [(0.0, 1.0 / l) for l in ls] * k
    try:
        res = optimize.minimize(objective, (starts / ls).ravel(), jac=True, method="L-BFGS-B",
                                bounds=bounds, options={"maxiter": maxiter, "gtol": 1e-2})
        polished = np.clip(res.x.reshape(k, dim) * ls, 0.0, 1.0)
        return polished, acquisition(polished)
    except _POLISH_ERRORS:
        return starts, start_values


def _ranked(candidates: np.ndarray, values: np.ndarray, order: np.ndarray, chosen,
            polished: np.ndarray, polished_values: np.ndarray) -> np.ndarray:
    """The polished points (each replaced by its start unless at least as good), best first,
    then the candidates that were not starts, in ``order``."""
    head = [(float(v1), x1) if v1 >= v0 else (float(v0), x0)
            for x0, v0, x1, v1 in zip(candidates[chosen], values[chosen],
                                      polished, polished_values)]
    head.sort(key=lambda t: -t[0])
    keep = np.ones(len(candidates), dtype=bool)
    keep[chosen] = False
    best = np.array([x for _, x in head]).reshape(len(head), candidates.shape[1])
    return np.vstack([best, candidates[order[keep[order]]]])
