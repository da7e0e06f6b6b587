"""Defaults of BAPI and the checks of its inputs.

Constants marked [paper] come from Belakaria, Doppa, Fusi and Sheth, "Bayesian Optimization over
Iterative Learners with Structured Responses: A Budget-aware Planning Approach" (AISTATS 2023);
the others are our choices where the paper is silent, each with its reason.
"""

from __future__ import annotations

import math

import numpy as np

from ...exceptions import InvalidParameterError

#: [paper] uncertainty ratio of the early-termination test (τ = 2 in every experiment)
TAU = 2.0
#: [paper] check interval p as a fraction of t_max (20 %; 10 % only for their costliest task)
CHECK_FRACTION = 0.2
#: [paper] tolerance ε of conservative stopping, in loss units (1 % of accuracy)
EPSILON = 0.01
#: [paper] longest planning horizon (BAPI-4; BAPI-8 uses 8)
H_MAX = 4
#: [paper] points of one learning curve that enter the objective GP (BAPI-4-L uses 1)
PTS_PER_CURVE = 3
#: virtual derivative points of the exponential-decay time kernel. The paper uses 2 (the ends),
#: which only fixes the direction at the ends: on our synthetic curve families the posterior mean
#: still rose between them (by up to 2e-3 over a loss range of 0.5; 3 points also failed), while 5
#: evenly spaced points gave a non-increasing mean everywhere we looked, at little extra cost
N_VIRTUAL_ED = 5
#: virtual derivative points of the RBF time kernel. The paper asks for a spacing below the
#: length scale; with fitted length scales above 1 that gave 5-7 points and the mean still rose
#: between them on our synthetic curves, while 20 (spacing 0.04 on [0.2, 1]) did not. The RBF
#: kernel is the alternative for curves that do not decay (the paper's reinforcement learning)
N_VIRTUAL_RBF = 20
#: variance of the virtual derivative observations, standardised units (Agrell 2019 uses 0 and
#: raises it for stability; a jitter keeps the k×k solves well conditioned)
VIRTUAL_NOISE = 1e-6
#: quasi-random normal base samples of the Monte Carlo q-EI (a power of two for Sobol' balance;
#: the paper is silent; 256 keeps a planning step well under a second)
N_BASE_SAMPLES = 256
#: Sobol' candidates scored per greedy step of the horizon (plus perturbations of the centres)
N_CANDIDATES = 512
#: best candidates polished by L-BFGS-B per greedy step
N_POLISH = 1
#: L-BFGS-B iterations of one polish
POLISH_MAXITER = 20
#: best trained configurations used as centres of local candidates (and as continuations)
N_CENTRES = 5
#: extra random starts of the marginal-likelihood maximisation, besides the warm start from the
#: previous fit (each start costs about 0.3 s at 100 rows in 5 dimensions with scikit-learn)
GP_RESTARTS = 1
#: floor of the predicted cost in the selection ratio, as a fraction of the median observed cost
COST_FLOOR_FRACTION = 1e-3


def n_initial(dim: int) -> int:
    """Size of the initial design, ``max(3, d + 1)`` (the paper does not give it)."""
    return max(3, int(dim) + 1)


def check_interval(t_max: int, fraction: float = CHECK_FRACTION) -> int:
    """``p`` in iterations: ``max(1, round(fraction · t_max))``."""
    check_int(t_max, "t_max", low=1)
    check_real(fraction, "fraction", low=0.0, high=1.0, low_open=True)
    return max(1, round(fraction * t_max))


def length_grid(t_max: int, t_min: float = CHECK_FRACTION) -> np.ndarray:
    """The training lengths ``{⌈t_min·t_max⌉, …, t_max} / t_max`` on which stopping is searched."""
    check_int(t_max, "t_max", low=1)
    check_real(t_min, "t_min", low=0.0, high=1.0, low_open=True)
    start = max(1, math.ceil(t_min * t_max - 1e-9))
    return np.arange(start, t_max + 1) / t_max


def check_grid(t_max: int, fraction: float = CHECK_FRACTION) -> np.ndarray:
    """:func:`length_grid` from the first check on: stopping is searched from ``p`` iterations
    (:func:`check_interval`), the first length at which a curve is ever checked."""
    return length_grid(t_max, check_interval(t_max, fraction) / t_max)


# ----------------------------------------------------------------------------- checks
def check_real(
    value: float,
    name: str,
    *,
    low: float = -math.inf,
    high: float = math.inf,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """``value`` as a float within the given interval, or an :class:`InvalidParameterError`."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InvalidParameterError(f"{name} must be a real number, got {value!r}") from None
    too_low = number <= low if low_open else number < low
    too_high = number >= high if high_open else number > high
    if math.isnan(number) or too_low or too_high:
        interval = f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
        raise InvalidParameterError(f"{name} must lie in {interval}, got {value!r}")
    return number


def check_int(value: int, name: str, *, low: int = 0) -> int:
    """``value`` as an int ``≥ low`` (bools refused), or an :class:`InvalidParameterError`."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise InvalidParameterError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def as_configurations(X: np.ndarray, name: str = "X", dim: int | None = None) -> np.ndarray:
    """``X`` as a finite 2-D float array in the unit box (rounding slack 1e-9 is clipped)."""
    arr = np.asarray(X, dtype=float)
    if arr.ndim == 1 and dim is not None and arr.size == dim:
        arr = arr[None, :]
    if arr.ndim != 2 or (dim is not None and arr.shape[1] != dim):
        want = f"(n, {dim})" if dim is not None else "(n, d)"
        raise InvalidParameterError(f"{name} must have shape {want}, got shape {arr.shape}")
    if (
        not np.all(np.isfinite(arr))
        or arr.min(initial=0.0) < -1e-9
        or arr.max(initial=0.0) > 1 + 1e-9
    ):
        raise InvalidParameterError(
            f"{name} must lie in the unit box [0, 1]^d, got values in "
            f"[{np.nanmin(arr):g}, {np.nanmax(arr):g}]"
        )
    return np.clip(arr, 0.0, 1.0)


def as_lengths(t: float | np.ndarray, n: int, name: str = "t") -> np.ndarray:
    """``t`` broadcast to shape (n,), every value a training fraction in (0, 1]."""
    arr = np.asarray(t, dtype=float)
    if arr.ndim > 1 or (arr.ndim == 1 and arr.size != n):
        raise InvalidParameterError(
            f"{name} must be a scalar or have shape ({n},), got {arr.shape}"
        )
    arr = np.broadcast_to(arr, (n,)).astype(float)
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0.0) or np.any(arr > 1.0 + 1e-12):
        bad = arr[~(np.isfinite(arr) & (arr > 0.0) & (arr <= 1.0 + 1e-12))][0]
        raise InvalidParameterError(
            f"{name} must be training fractions in (0, 1] (iterations / t_max), got {bad:g}"
        )
    return np.minimum(arr, 1.0)
