"""FLASH numerics (Zhang et al., KDD 2016): pure functions on arrays, no solver protocol.

FLASH's first layer is a linear model over *pipeline paths*: a path picks one algorithm per
module and is encoded as the concatenation of one one-hot block per module (length
``N = Σ_k n_k``, exactly ``K`` ones). This module holds everything FLASH computes on those vectors:

* the encoding and its vectorised decoding, the set of all paths and a stratified sample of it
  when the space is too large to enumerate;
* the ridge performance model and the ridge cost model with their Gaussian predictive
  distribution (the paper's Eq. 1 and predictive variance);
* expected improvement (Eq. 2) and EI per unit of predicted log-cost (EIPS, Eq. 4), as written
  and in log space, and both models fitted together on a run's observations;
* the greedy D-optimal initial design (the paper's Algorithm 2);
* the top-r pruning of the algorithm graph (end of Phase 2 of the paper's Algorithm 1);
* parameter validation and the defaults.

The solver that drives these (``ask``/``tell``, phases, the θ back end) lives elsewhere and passes
arrays in. Every choice the paper leaves open is stated where it is made, with its reason; the
authors' released code (github.com/yuyuz/FLASH) settles several of them and is cited as such.

Units. FLASH's experiments minimise the *percent* classification error and use ξ = 100 in
Phase 2. This package's losses are on the metric's own scale ([0, 1] for an error rate), so ξ is
given in loss units and the default ``DEFAULT_XI = 1.0`` is the paper's ξ = 100 rescaled.

References
----------
Y. Zhang, M. T. Bahadori, H. Su, J. Sun. FLASH: Fast Bayesian Optimization for Data Analytic
Pipelines. KDD 2016 (arXiv:1602.06468).
J. Snoek, H. Larochelle, R. P. Adams. Practical Bayesian Optimization of Machine Learning
Algorithms. NeurIPS 2012 (expected improvement per second).
S. Ament et al. Unexpected Improvements to Expected Improvement for Bayesian Optimization.
NeurIPS 2023 (stable log-EI).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Sequence

import numpy as np
from scipy import linalg, special

from ..exceptions import InvalidParameterError
from .gp import log_h
from ..space.encoding import all_pipelines

# ---------------------------------------------------------------------------------------------
# Defaults (the paper's §"experimental settings" and the released code's config.cfg)
# ---------------------------------------------------------------------------------------------

# The Phase-1 and Phase-2 budgets (n_init, n_prune) default to ``path_rank(n_choices)`` =
# N − K + 1 evaluations (``None`` in check_n_init / check_n_prune): the paper uses 30 for its
# 4/2/13/14 layout and calls it "the number of algorithms", but that layout has N = 33; 30 is
# N − K + 1, the rank of the path space, the largest design the D-criterion tells apart.

#: r, the number of best paths whose algorithms form the pruned graph (paper: 10).
DEFAULT_TOP_R = 10
#: ξ of Phase 2 in loss units: the paper's ξ = 100 on percent error is 1.0 on a [0, 1] error.
DEFAULT_XI = 1.0
#: ξ when ranking paths to build the pruned graph (paper: 0, pure exploitation).
DEFAULT_XI_SELECT = 0.0
#: ridge penalty on the unscaled sum of squares (paper: not stated; released code: sklearn
#: ``Ridge(alpha=1.0)``).
DEFAULT_RIDGE_ALPHA = 1.0
#: fit an unpenalised intercept (released code; the paper's Eq. 1 has none, see :func:`fit_ridge`).
DEFAULT_FIT_INTERCEPT = True
#: the cost model's target: log(1 + τ). The paper (Eq. 4) and its code use log τ, which is
#: negative for runs under a second — most runs on this package's benchmark data — so the EIPS
#: denominator would sit at its floor for every fast path; log(1 + τ) stays positive and is within
#: log(1 + 1/τ) of log τ for slow runs (0.1 at 10 s), where the paper's damping matters.
DEFAULT_COST_TRANSFORM = "log1p"
#: the cost transforms :func:`transform_cost` knows.
COST_TRANSFORMS = ("log", "log1p", "identity")
#: enumerate every path up to this many (larger spaces use a stratified sample).
DEFAULT_MAX_ENUMERATE = 100_000
#: size of the stratified sample of paths in larger spaces.
DEFAULT_N_CANDIDATES = 5_000

#: floor of the predictive standard deviation: σ_ε² is 0 when the fit interpolates (n ≤ 2).
MIN_STD = 1e-9
#: floor of the EIPS denominator (the predicted transformed cost), see :func:`eips`.
MIN_COST = 1e-3
#: floor of a measured duration before the log transform (a full cache hit can take ~0 s).
MIN_SECONDS = 1e-6
#: two scores (log-EIPS or log-gains of the design) within this are a tie, broken at random.
TIE_ATOL = 1e-9


# ---------------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------------


def _is_int(value: object) -> bool:
    return isinstance(value, Integral) and not isinstance(value, bool)


def check_n_choices(n_choices: Sequence[int]) -> tuple[int, ...]:
    """The module sizes as a tuple of ints >= 1 (at least one module)."""
    try:
        sizes = tuple(n_choices)
    except TypeError:
        raise InvalidParameterError(
            f"n_choices must be a sequence of module sizes, got {n_choices!r}"
        ) from None
    if not sizes or not all(_is_int(k) and k >= 1 for k in sizes):
        raise InvalidParameterError(
            f"n_choices must be a non-empty sequence of integers >= 1, got {n_choices!r}"
        )
    return tuple(int(k) for k in sizes)


def check_n_init(n_init: int | None, n_choices: Sequence[int] | None = None) -> int:
    """Validate the Phase-1 budget (evaluations of the initial design); ``None`` is the default.

    The default is ``path_rank(n_choices)`` = N − K + 1: beyond that many paths the paper's
    D-criterion is 0 for every candidate, and it is the paper's 30 on its benchmark layout.

    Raises
    ------
    InvalidParameterError
        If ``n_init`` is not an integer >= 1, or is ``None`` without ``n_choices``.
    """
    if n_init is None:
        if n_choices is None:
            raise InvalidParameterError("n_init=None (the default) needs n_choices")
        return path_rank(n_choices)
    if not _is_int(n_init) or n_init < 1:
        raise InvalidParameterError(f"n_init must be an integer >= 1, got {n_init!r}")
    return int(n_init)


def check_n_prune(n_prune: int | None, n_choices: Sequence[int] | None = None) -> int:
    """Validate the Phase-2 budget (EIPS evaluations before pruning); ``None`` is the default.

    0 is allowed (prune right after the initial design). The default is ``path_rank(n_choices)``,
    as for :func:`check_n_init` (the paper uses 30 for both).
    """
    if n_prune is None:
        if n_choices is None:
            raise InvalidParameterError("n_prune=None (the default) needs n_choices")
        return path_rank(n_choices)
    if not _is_int(n_prune) or n_prune < 0:
        raise InvalidParameterError(f"n_prune must be an integer >= 0, got {n_prune!r}")
    return int(n_prune)


def check_top_r(top_r: int, n_paths: int) -> int:
    """Validate r, the number of best paths kept when pruning: ``1 <= top_r <= n_paths``.

    ``n_paths`` is the number of paths ranked (all paths, or the sample when the space is too
    large to enumerate).
    """
    if not _is_int(top_r) or not 1 <= top_r <= n_paths:
        raise InvalidParameterError(
            f"top_r must be an integer between 1 and the number of paths ({n_paths}), "
            f"got {top_r!r}"
        )
    return int(top_r)


def check_ridge_alpha(alpha: float) -> float:
    """Validate the ridge penalty: a finite number > 0 (it is what makes β unique)."""
    if not isinstance(alpha, Real) or isinstance(alpha, bool) or not 0 < alpha < math.inf:
        raise InvalidParameterError(f"ridge_alpha must be a finite number > 0, got {alpha!r}")
    return float(alpha)


def check_xi(xi: float, name: str = "xi") -> float:
    """Validate an EI exploration offset: a finite number >= 0, in loss units."""
    if not isinstance(xi, Real) or isinstance(xi, bool) or not 0 <= xi < math.inf:
        raise InvalidParameterError(
            f"{name} must be a finite number >= 0 (in loss units), got {xi!r}"
        )
    return float(xi)


def check_cost_transform(transform: str) -> str:
    """Validate the cost model's target transform (one of :data:`COST_TRANSFORMS`)."""
    if transform not in COST_TRANSFORMS:
        raise InvalidParameterError(
            f"cost_transform must be one of {', '.join(map(repr, COST_TRANSFORMS))}, "
            f"got {transform!r}"
        )
    return str(transform)


# ---------------------------------------------------------------------------------------------
# Path encoding
# ---------------------------------------------------------------------------------------------


def path_offsets(n_choices: Sequence[int]) -> np.ndarray:
    """Index of each module's first slot in the one-hot path vector, shape (K,)."""
    sizes = check_n_choices(n_choices)
    return np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(int)


def n_paths(n_choices: Sequence[int]) -> int:
    """Number of paths Π_k n_k (adjacent modules are fully connected)."""
    return math.prod(check_n_choices(n_choices))


def path_rank(n_choices: Sequence[int]) -> int:
    """Rank of the matrix of all path vectors, N − K + 1.

    Each module's block of a path vector sums to 1, so the blocks share the all-ones direction:
    ``1 + Σ_k (n_k − 1)`` independent directions (30 for the paper's 4/2/13/14 layout).
    """
    sizes = check_n_choices(n_choices)
    return sum(sizes) - len(sizes) + 1


def encode_paths(z: np.ndarray | Sequence[int], n_choices: Sequence[int]) -> np.ndarray:
    """One-hot path vectors of choice vectors.

    Parameters
    ----------
    z : array-like of int, shape (K,) or (n, K)
        One algorithm index per module.
    n_choices : sequence of int
        Module sizes.

    Returns
    -------
    ndarray of float, shape (N,) or (n, N)
        The concatenated one-hot blocks, e.g. ``[0, 1, 0, 0, 1]`` for z = (1, 2), n = (2, 3).

    Raises
    ------
    InvalidParameterError
        If the shape does not match the number of modules or an index is out of range.
    """
    sizes = np.asarray(check_n_choices(n_choices))
    zs = np.asarray(z)
    single = zs.ndim == 1
    zs = np.atleast_2d(zs)
    if zs.ndim != 2 or zs.shape[1] != len(sizes) or not np.issubdtype(zs.dtype, np.integer):
        raise InvalidParameterError(
            f"z must hold {len(sizes)} integer indices per path, got an array of shape "
            f"{np.shape(z)} and dtype {zs.dtype}"
        )
    bad = (zs < 0) | (zs >= sizes)
    if bad.any():
        row = int(np.argwhere(bad)[0][0])
        raise InvalidParameterError(
            f"path {zs[row].tolist()!r} is out of range for n_choices={tuple(sizes.tolist())}"
        )
    out = np.zeros((len(zs), int(sizes.sum())))
    out[np.arange(len(zs))[:, None], path_offsets(sizes.tolist()) + zs] = 1.0
    return out[0] if single else out


def decode_paths(P: np.ndarray, n_choices: Sequence[int]) -> np.ndarray:
    """Choice vectors of one-hot path vectors (inverse of :func:`encode_paths`).

    Raises
    ------
    InvalidParameterError
        If a row is not a valid path vector (wrong length, or not exactly one 1 per module).
    """
    sizes = check_n_choices(n_choices)
    X = np.asarray(P, dtype=float)
    single = X.ndim == 1
    X = np.atleast_2d(X)
    if X.ndim != 2 or X.shape[1] != sum(sizes):
        raise InvalidParameterError(
            f"path vectors must have length N = {sum(sizes)}, got an array of shape {np.shape(P)}"
        )
    blocks = np.split(X, np.cumsum(sizes)[:-1], axis=1)
    valid = np.all(np.isin(X, (0.0, 1.0)), axis=1)
    for block in blocks:
        valid &= block.sum(axis=1) == 1.0
    if not valid.all():
        row = int(np.flatnonzero(~valid)[0])
        raise InvalidParameterError(
            f"row {row} is not a path vector (one 1 per module of sizes {sizes}): "
            f"{X[row].tolist()!r}"
        )
    z = np.stack([block.argmax(axis=1) for block in blocks], axis=1)
    return z[0] if single else z


def all_paths(n_choices: Sequence[int]) -> np.ndarray:
    """Every choice vector in lexicographic order, shape (Π n_k, K); for small spaces only."""
    return all_pipelines(check_n_choices(n_choices))


def candidate_paths(
    n_choices: Sequence[int],
    rng: np.random.Generator,
    *,
    max_enumerate: int = DEFAULT_MAX_ENUMERATE,
    n_candidates: int = DEFAULT_N_CANDIDATES,
) -> np.ndarray:
    """The paths the design and the acquisition search over, shape (B, K).

    All paths (lexicographic order, ``rng`` unused) when there are at most ``max_enumerate``;
    otherwise a stratified random sample (the paper only asks for B > N candidates): each module's
    column is a random permutation of its choices repeated to length
    ``B = max(n_candidates, max n_k)``, so every algorithm appears ⌊B/n_k⌋ or ⌈B/n_k⌉ times, and
    the columns are independent. Duplicate rows are dropped (lexicographic order), so slightly
    fewer than B may come back.
    """
    sizes = check_n_choices(n_choices)
    if n_paths(sizes) <= max_enumerate:
        return all_paths(sizes)
    if not _is_int(n_candidates) or n_candidates < 1:
        raise InvalidParameterError(
            f"n_candidates must be an integer >= 1, got {n_candidates!r}"
        )
    size = max(int(n_candidates), max(sizes))
    columns = [rng.permutation(np.resize(np.arange(k), size)) for k in sizes]
    return np.unique(np.stack(columns, axis=1), axis=0)


# ---------------------------------------------------------------------------------------------
# Ridge models (paper Eq. 1 and its predictive variance)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RidgePathModel:
    """A fitted ridge model over path vectors with a Gaussian predictive distribution.

    Attributes
    ----------
    coef : ndarray, shape (N,)
        β.
    intercept : float
        b (0 for the paper's literal Eq. 1).
    noise_var : float
        σ_ε², the population variance (ddof = 0) of the in-sample residuals.
    precision_inv : ndarray, shape (N, N)
        (PᵀP + αI)⁻¹ on the *uncentred* design matrix P, as in the paper and the released code.
    """

    coef: np.ndarray
    intercept: float
    noise_var: float
    precision_inv: np.ndarray

    def mean(self, P: np.ndarray) -> np.ndarray:
        """μ(p) = βᵀp + b for each row of ``P`` (shape (n, N) -> (n,), or (N,) -> scalar)."""
        return np.asarray(P, dtype=float) @ self.coef + self.intercept

    def predict(self, P: np.ndarray, min_std: float = MIN_STD) -> tuple[np.ndarray, np.ndarray]:
        """Predictive mean and standard deviation ``(μ, s)`` for each row of ``P``.

        ``s(p) = max(sqrt(σ_ε² (1 + pᵀ(PᵀP + αI)⁻¹p)), min_std)``. The paper writes this quantity
        as σ̂_p but it is a variance; EI needs its square root. The floor keeps EI defined when
        σ_ε² = 0 (an interpolating fit).
        """
        X = np.asarray(P, dtype=float)
        rows = np.atleast_2d(X)
        leverage = np.einsum("ij,ij->i", rows @ self.precision_inv, rows)  # pᵀ(PᵀP + αI)⁻¹p
        if X.ndim == 1:
            leverage = leverage[0]
        std = np.sqrt(self.noise_var * (1.0 + leverage))
        return self.mean(X), np.maximum(std, min_std)


def fit_ridge(
    P: np.ndarray,
    y: np.ndarray,
    alpha: float = DEFAULT_RIDGE_ALPHA,
    *,
    fit_intercept: bool = DEFAULT_FIT_INTERCEPT,
) -> RidgePathModel:
    """Fit the additive ridge model ``y ≈ βᵀp + b`` over path vectors.

    Parameters
    ----------
    P : ndarray, shape (n, N)
        One observed path vector per row (repeats allowed).
    y : ndarray, shape (n,)
        Observed targets (losses, or transformed costs); must be finite — the caller maps failed
        runs to a value first (the released code uses the worst error, 100 %).
    alpha : float, default=1.0
        Ridge penalty α.
    fit_intercept : bool, default=True
        ``True`` — **Variant A**, the released code's ``sklearn.linear_model.Ridge(alpha)``: an
        unpenalised intercept, β from the centred system
        ``((P−P̄)ᵀ(P−P̄) + αI) β = (P−P̄)ᵀ(y−ȳ)``, ``b = ȳ − P̄ᵀβ``.
        ``False`` — **Variant B**, the paper's Eq. 1 read literally,
        ``argmin (1/n)‖Pβ − y‖² + α‖β‖²``: no intercept, ``(PᵀP + nαI) β = Pᵀy``. It shrinks
        every prediction towards 0 (on the five-observation toy problem of the tests it
        predicts 6.5 where Variant A predicts 19.7 for errors of 12–25), which distorts EI; it
        is here for comparison only.

    Returns
    -------
    RidgePathModel
        With σ_ε² = population variance of the in-sample residuals (the released code's
        ``np.var``) and ``(PᵀP + αI)⁻¹`` for the predictive variance — the same α, no n factor,
        uncentred P, in both variants, as in the paper's variance formula.

    Notes
    -----
    Written with numpy/scipy rather than scikit-learn's ``Ridge``: ``Ridge`` returns β and b but
    neither the residual variance nor (PᵀP + αI)⁻¹, which the predictive variance needs, and the
    whole fit is one N×N Cholesky solve (N = Σ n_k, a few dozen). Each module's block of P sums
    to the all-ones column, so PᵀP is singular; the penalty α > 0 is what makes β unique. Single
    β entries are defined only up to shifts within a block; predictions for paths are well defined.
    """
    X = np.asarray(P, dtype=float)
    target = np.asarray(y, dtype=float)
    alpha = check_ridge_alpha(alpha)
    if X.ndim != 2 or X.shape[0] == 0 or target.shape != (X.shape[0],):
        raise InvalidParameterError(
            f"fit_ridge needs P of shape (n, N) with n >= 1 and y of shape (n,), got "
            f"{np.shape(P)} and {np.shape(y)}"
        )
    if not np.all(np.isfinite(target)):
        raise InvalidParameterError(
            f"fit_ridge needs finite targets (map failed runs to a finite value first), got "
            f"{target[~np.isfinite(target)][:3].tolist()!r}"
        )
    n, dim = X.shape
    eye = np.eye(dim)
    if fit_intercept:
        x_mean, y_mean = X.mean(axis=0), float(target.mean())
        Xc = X - x_mean
        coef = linalg.solve(Xc.T @ Xc + alpha * eye, Xc.T @ (target - y_mean), assume_a="pos")
        intercept = y_mean - float(x_mean @ coef)
    else:
        coef = linalg.solve(X.T @ X + n * alpha * eye, X.T @ target, assume_a="pos")
        intercept = 0.0
    residuals = X @ coef + intercept - target
    precision_inv = linalg.cho_solve(linalg.cho_factor(X.T @ X + alpha * eye), eye)
    return RidgePathModel(coef, intercept, float(np.var(residuals)), precision_inv)


def transform_cost(seconds: np.ndarray, transform: str = DEFAULT_COST_TRANSFORM) -> np.ndarray:
    """The cost model's target from measured durations.

    * ``"log"`` — log τ, the paper's E[log τ] (Eq. 4) and the released code. Durations are floored
      at :data:`MIN_SECONDS` first (a full cache hit can take ~0 s; log 0 is −inf). Runs shorter
      than 1 s have log τ < 0, which makes the EIPS denominator non-positive: see :func:`eips`.
    * ``"log1p"`` (the default) — log(1 + τ): positive for every τ > 0, within log(1 + 1/τ) of
      log τ for slow runs (0.1 at 10 s) and ≈ τ for sub-second ones, so it keeps the paper's damping where runs
      are long and stays a usable divisor where they are short (the paper does not say what
      happens when log τ ≤ 0).
    * ``"identity"`` — τ in seconds (Snoek et al.'s EI per second, without the paper's damping).

    Raises
    ------
    InvalidParameterError
        On an unknown transform, or a negative or non-finite duration.
    """
    transform = check_cost_transform(transform)
    tau = np.asarray(seconds, dtype=float)
    bad = ~(np.isfinite(tau) & (tau >= 0))
    if bad.any():
        raise InvalidParameterError(
            f"durations must be finite and >= 0 seconds, got {tau[bad][:3].tolist()!r}"
        )
    if transform == "log":
        return np.log(np.maximum(tau, MIN_SECONDS))
    if transform == "log1p":
        return np.log1p(tau)
    return tau


def fit_cost_model(
    P: np.ndarray,
    seconds: np.ndarray,
    alpha: float = DEFAULT_RIDGE_ALPHA,
    *,
    transform: str = DEFAULT_COST_TRANSFORM,
    fit_intercept: bool = DEFAULT_FIT_INTERCEPT,
) -> RidgePathModel:
    """The ridge cost model: :func:`fit_ridge` on ``transform_cost(seconds, transform)``.

    Its :meth:`RidgePathModel.mean` is the predicted transformed cost, used directly as the EIPS
    denominator (the released code uses ``β_τᵀp + b_τ`` as E[log τ(p)]).
    """
    return fit_ridge(P, transform_cost(seconds, transform), alpha, fit_intercept=fit_intercept)


# ---------------------------------------------------------------------------------------------
# Acquisition (paper Eq. 2 and Eq. 4)
# ---------------------------------------------------------------------------------------------


def expected_improvement(
    mean: np.ndarray, std: np.ndarray, best: float, xi: float = DEFAULT_XI
) -> np.ndarray:
    """EI of the paper's Eq. 2 for minimisation, computed as written.

    ``u = (m⁺ − ξ − μ)/s``, ``EI = s·(uΦ(u) + φ(u))``. With a large ξ, ``u`` is strongly negative
    and EI underflows to exactly 0 in float64 once ``u < ≈ −38`` (ξ = 100 percent points and
    s = 2 already do); rank with :func:`log_expected_improvement` instead.
    """
    s = np.asarray(std, dtype=float)
    u = (best - xi - np.asarray(mean, dtype=float)) / s
    return s * (u * special.ndtr(u) + np.exp(-0.5 * u * u) / math.sqrt(2.0 * math.pi))


def log_expected_improvement(
    mean: np.ndarray, std: np.ndarray, best: float, xi: float = DEFAULT_XI
) -> np.ndarray:
    """log EI, finite for every finite input: ``log s + log h(u)`` with ``h(u) = uΦ(u) + φ(u)``.

    ``log h`` is the package's stable routine (the asymptote ``log φ(u) − 2 log|u|`` far in the
    tail, the scaled complementary error function in between; Ament et al. 2023), so paths keep
    their order where EI itself is 0.
    """
    s = np.asarray(std, dtype=float)
    u = (best - xi - np.asarray(mean, dtype=float)) / s
    return np.log(s) + log_h(u)


def eips(
    mean: np.ndarray,
    std: np.ndarray,
    cost: np.ndarray,
    best: float,
    xi: float = DEFAULT_XI,
    min_cost: float = MIN_COST,
) -> np.ndarray:
    """EI per unit of predicted transformed cost, the paper's Eq. 4: ``EI / max(c, min_cost)``.

    ``c`` is the cost model's prediction (of log(1 + τ) by default, E[log τ] in the paper). The
    paper divides by it unguarded; a prediction ≤ 0 (runs under a second with the log transform,
    or a ridge extrapolation) would flip or blow up the ratio, so it is floored at ``min_cost``
    (every path predicted cheaper than that counts as costing ``min_cost``). The default
    ``transform="log1p"`` of the cost model keeps predictions positive, so that the floor is
    rarely reached.
    """
    return expected_improvement(mean, std, best, xi) / np.maximum(cost, min_cost)


def log_eips(
    mean: np.ndarray,
    std: np.ndarray,
    cost: np.ndarray | None,
    best: float,
    xi: float = DEFAULT_XI,
    min_cost: float = MIN_COST,
) -> np.ndarray:
    """``log EIPS = log EI − log max(c, min_cost)``; with ``cost=None``, log EI alone.

    This is what FLASH's Phase 2 and the pruning rank by: it orders paths exactly as
    :func:`eips` wherever EIPS is representable, and keeps ordering them where EI underflows
    (with the paper's ξ every EIPS is 0 once s < ≈ 2.7 percent points; the released code then
    takes the first path in enumeration order).
    """
    log_ei = log_expected_improvement(mean, std, best, xi)
    if cost is None:
        return log_ei
    return log_ei - np.log(np.maximum(cost, min_cost))


def rank_with_random_ties(
    scores: np.ndarray, rng: np.random.Generator, atol: float = TIE_ATOL
) -> np.ndarray:
    """Indices of ``scores`` from best (largest) to worst, ties in uniformly random order.

    Sorted scores whose successive gaps are at most ``atol`` form one tie group (so symmetric
    paths whose scores differ only by rounding are ties); the order inside a group is a random
    permutation drawn from ``rng``. The paper's code breaks ties by enumeration order, which
    favours the first algorithms of each module.
    """
    values = np.asarray(scores, dtype=float)
    if np.isnan(values).any():
        raise InvalidParameterError("scores to rank contain NaN")
    order = np.argsort(-values, kind="stable")
    ordered = values[order]
    with np.errstate(invalid="ignore"):  # -inf - -inf is NaN: same group
        new_group = np.diff(ordered) < -atol
    group = np.concatenate([[0], np.cumsum(new_group)])
    return order[np.lexsort((rng.random(len(values)), group))]


# ---------------------------------------------------------------------------------------------
# Both models on a run's observations (Algorithm 1, lines 6, 8 and 12)
# ---------------------------------------------------------------------------------------------


def fill_failed(values: np.ndarray) -> np.ndarray:
    """``values`` with every non-finite entry replaced by the largest finite one (0 if none).

    The paper's code records a failed run as the worst error (100 %) and keeps it in both ridge
    fits. In this package a failed evaluation already carries the run's failure loss (the metric's
    worst value), so only a NaN or infinite value (a caller that chose NaN as the failure loss)
    needs a stand-in, and the worst value seen is the closest to the paper's rule.
    """
    y = np.array(values, dtype=float)
    finite = np.isfinite(y)
    y[~finite] = y[finite].max() if finite.any() else 0.0
    return y


@dataclass(frozen=True)
class PathModels:
    """The performance and cost models fitted on the same observations, and m⁺.

    Attributes
    ----------
    perf, cost : RidgePathModel
        Ridge models of the value and of the transformed cost.
    best : float
        m⁺, the lowest (filled) value observed.
    n_choices : tuple of int
        Module sizes of the path encoding.
    """

    perf: RidgePathModel
    cost: RidgePathModel
    best: float
    n_choices: tuple[int, ...]

    def log_eips(self, paths: np.ndarray, xi: float, min_std: float = MIN_STD,
                 min_cost: float = MIN_COST) -> np.ndarray:
        """:func:`log_eips` of each choice vector in ``paths`` (shape (L, K)) against m⁺."""
        X = encode_paths(np.atleast_2d(np.asarray(paths)), self.n_choices)
        mean, std = self.perf.predict(X, min_std)
        return log_eips(mean, std, self.cost.mean(X), self.best, xi, min_cost)

    def subgraph(self, paths: np.ndarray, top_r: int, rng: np.random.Generator,
                 xi: float = DEFAULT_XI_SELECT) -> "Subgraph":
        """:func:`build_subgraph` with these models and m⁺."""
        return build_subgraph(self.perf, self.cost, paths, self.n_choices, self.best, top_r,
                              rng, xi=xi)


def fit_path_models(
    paths: np.ndarray,
    values: np.ndarray,
    seconds: np.ndarray,
    n_choices: Sequence[int],
    *,
    alpha: float = DEFAULT_RIDGE_ALPHA,
    transform: str = DEFAULT_COST_TRANSFORM,
    fit_intercept: bool = DEFAULT_FIT_INTERCEPT,
    censored: np.ndarray | None = None,
) -> PathModels:
    """Fit both ridge models on the observed paths (choice vectors, shape (n, K), repeats
    allowed): the performance model on :func:`fill_failed` ``(values)``, the cost model on
    ``transform_cost(seconds, transform)``.

    ``censored`` (bool, shape (n,)) marks rows whose value is unknown rather than bad (a run
    stopped by its time limit): they stay in the cost model, which learns from their time that
    the path is slow, and are left out of the performance model and of m⁺. If every row is
    censored, none is (the performance model needs one row).
    """
    sizes = check_n_choices(n_choices)
    X = encode_paths(np.atleast_2d(np.asarray(paths)), sizes)
    y = fill_failed(values)
    keep = np.ones(len(y), dtype=bool) if censored is None else ~np.asarray(censored, bool)
    if not keep.any():
        keep[:] = True
    perf = fit_ridge(X[keep], y[keep], alpha, fit_intercept=fit_intercept)
    cost = fit_cost_model(X, seconds, alpha, transform=transform, fit_intercept=fit_intercept)
    return PathModels(perf, cost, float(y[keep].min()), sizes)


# ---------------------------------------------------------------------------------------------
# Greedy D-optimal initial design (paper Algorithm 2)
# ---------------------------------------------------------------------------------------------


def d_criterion(matrix: np.ndarray, n_eigenvalues: int) -> float:
    """The paper's ``D_ℓ(M)``: the product of the ``n_eigenvalues`` largest eigenvalues of M.

    The paper keeps ``min(ℓ, p)`` eigenvalues with p undefined; its code uses the dimension N.
    Beyond the rank of the path space every such product is 0 up to rounding, which is why
    :func:`greedy_d_optimal_design` uses the pseudo-determinant instead (it agrees up to that
    rank). Reference implementation by eigendecomposition, for checks and small matrices.
    """
    eig = np.linalg.eigvalsh(np.asarray(matrix, dtype=float))
    return float(np.prod(eig[::-1][: int(n_eigenvalues)]))


@dataclass(frozen=True)
class Design:
    """A greedy D-optimal design.

    Attributes
    ----------
    indices : ndarray of int, shape (n_init,)
        Rows of the candidate matrix in the order chosen (repeats possible beyond the rank).
    log_scores : ndarray, shape (n_init,)
        log of the criterion after each pick: the log pseudo-determinant of H = Σ p pᵀ over the
        chosen (and observed) paths, i.e. of the product of its ``min(ℓ, rank)`` largest
        eigenvalues.
    """

    indices: np.ndarray
    log_scores: np.ndarray


def greedy_d_optimal_design(
    candidates: np.ndarray,
    n_init: int,
    rng: np.random.Generator,
    *,
    observed: np.ndarray | None = None,
    rtol: float = 1e-8,
) -> Design:
    """Greedy D-optimal choice of ``n_init`` paths among ``candidates`` (paper Algorithm 2).

    Parameters
    ----------
    candidates : ndarray, shape (B, N)
        Candidate path vectors (:func:`encode_paths` of :func:`candidate_paths`).
    n_init : int
        Number of paths to choose (>= 1).
    rng : numpy.random.Generator
        The first path (without ``observed``) and every tie are drawn from it.
    observed : ndarray, shape (m, N), optional
        Paths already evaluated (e.g. by other solvers of an ADMM run): they start H, and the
        first pick is then chosen by the criterion instead of at random.
    rtol : float, default=1e-8
        A candidate adds a new direction when its squared distance to the span of the chosen
        paths exceeds ``rtol`` times the largest squared candidate norm (K for path vectors).

    Returns
    -------
    Design

    Notes
    -----
    The paper picks, at step ℓ, ``argmax_j D_ℓ(H + p_j p_jᵀ)`` with ``D_ℓ`` the product of the
    ``min(ℓ, ·)`` largest eigenvalues. Path vectors span only N − K + 1 dimensions, so once ℓ
    exceeds that every product of ℓ eigenvalues is 0 and the paper's choice is rounding noise.
    Here the criterion keeps ``min(ℓ, r)`` eigenvalues, r the rank reached, so that it still
    ranks candidates beyond the rank, and it is evaluated in closed form rather than by B
    eigendecompositions per pick:

    * while a candidate lies outside span(H) (equivalently ℓ ≤ rank), the pseudo-determinant of
      ``H + ppᵀ`` is ``pdet(H) · ‖(I − Π)p‖²`` with Π the projection on span(H): the choice
      maximises the distance to the span (kept as Gram–Schmidt residuals of all candidates,
      O(BN) per pick) — identical to the paper's rule up to rounding;
    * once every candidate lies in span(H), ``pdet(H + ppᵀ) = pdet(H) · (1 + pᵀH⁺p)``: the choice
      maximises the leverage (one Cholesky of H in its span per pick); repeats are allowed, as
      in the released code.

    Ties (log-gains within :data:`TIE_ATOL`) are broken uniformly at random, as in the released
    code. The batch and the paper's online version coincide because nothing in Phase 1 depends
    on observed losses.
    """
    C = np.asarray(candidates, dtype=float)
    if C.ndim != 2 or C.shape[0] == 0:
        raise InvalidParameterError(
            f"candidates must be a non-empty (B, N) matrix, got shape {np.shape(candidates)}"
        )
    n_init = check_n_init(n_init)
    dim = C.shape[1]
    tol = rtol * float(np.max(np.einsum("ij,ij->i", C, C)))
    residuals = C.copy()  # candidates minus their projection on span(H)
    basis = np.zeros((dim, 0))  # orthonormal basis of span(H)
    gram = np.zeros((dim, dim))  # H
    log_pdet = 0.0

    def add(p: np.ndarray) -> None:
        nonlocal residuals, basis, gram
        gram += np.outer(p, p)
        r = p - basis @ (basis.T @ p)
        r -= basis @ (basis.T @ r)  # re-orthogonalise (classical Gram–Schmidt twice)
        norm2 = float(r @ r)
        if norm2 > tol:
            u = r / math.sqrt(norm2)
            basis = np.column_stack([basis, u])
            residuals -= np.outer(residuals @ u, u)

    def log_gains() -> np.ndarray:
        outside = np.einsum("ij,ij->i", residuals, residuals)
        if outside.max() > tol:
            with np.errstate(divide="ignore"):
                return np.log(np.where(outside > tol, outside, 0.0))
        coords = C @ basis
        factor = linalg.cho_factor(basis.T @ gram @ basis)
        leverage = np.einsum("ij,ij->i", coords, linalg.cho_solve(factor, coords.T).T)
        return np.log1p(leverage)

    if observed is not None:
        for p in np.atleast_2d(np.asarray(observed, dtype=float)):
            if p.shape != (dim,):
                raise InvalidParameterError(
                    f"observed paths must have length {dim}, got shape {np.shape(observed)}"
                )
            add(p)
        if basis.shape[1]:
            log_pdet = float(np.linalg.slogdet(basis.T @ gram @ basis)[1])
    indices = np.empty(n_init, dtype=int)
    log_scores = np.empty(n_init)
    for step in range(n_init):
        if step == 0 and not basis.shape[1]:
            j = int(rng.integers(len(C)))
            gain = math.log(float(C[j] @ C[j]))
        else:
            gains = log_gains()
            j = int(rank_with_random_ties(gains, rng)[0])
            gain = float(gains[j])
        add(C[j])
        log_pdet += gain
        indices[step], log_scores[step] = j, log_pdet
    return Design(indices, log_scores)


# ---------------------------------------------------------------------------------------------
# Pruning (end of Phase 2 of the paper's Algorithm 1)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Subgraph:
    """The pruned algorithm graph G′.

    Attributes
    ----------
    masks : tuple of bool ndarray
        One per module, shape (n_k,): the algorithms kept.
    top_paths : ndarray of int, shape (r, K)
        The r best paths, best first, whose algorithms were kept.
    """

    masks: tuple[np.ndarray, ...]
    top_paths: np.ndarray

    @property
    def n_choices(self) -> tuple[int, ...]:
        """Number of algorithms kept per module."""
        return tuple(int(m.sum()) for m in self.masks)

    def kept(self) -> tuple[tuple[int, ...], ...]:
        """Indices of the kept algorithms of each module."""
        return tuple(tuple(int(i) for i in np.flatnonzero(m)) for m in self.masks)


def subgraph_masks(paths: np.ndarray, n_choices: Sequence[int]) -> tuple[np.ndarray, ...]:
    """Per-module masks of the algorithms used by any of ``paths`` (shape (r, K))."""
    sizes = check_n_choices(n_choices)
    zs = np.atleast_2d(np.asarray(paths, dtype=int))
    masks = []
    for k, size in enumerate(sizes):
        mask = np.zeros(size, dtype=bool)
        mask[zs[:, k]] = True
        masks.append(mask)
    return tuple(masks)


def build_subgraph(
    perf: RidgePathModel,
    cost: RidgePathModel | None,
    paths: np.ndarray,
    n_choices: Sequence[int],
    best: float,
    top_r: int,
    rng: np.random.Generator,
    *,
    xi: float = DEFAULT_XI_SELECT,
    min_std: float = MIN_STD,
    min_cost: float = MIN_COST,
) -> Subgraph:
    """BuildSubgraph: keep the algorithms of the ``top_r`` paths of highest EIPS (ξ = 0).

    Parameters
    ----------
    perf, cost : RidgePathModel
        The fitted performance and cost models (``cost=None`` ranks by EI alone).
    paths : ndarray of int, shape (L, K)
        The paths to rank: :func:`all_paths`, or the :func:`candidate_paths` sample.
    n_choices : sequence of int
        Module sizes.
    best : float
        m⁺, the best (lowest) loss observed so far.
    top_r : int
        r, between 1 and L.
    rng : numpy.random.Generator
        Breaks ties in the ranking.
    xi : float, default=0.0
        The paper ranks with ξ = 0 here (pure exploitation).

    Returns
    -------
    Subgraph
        G′ as the product of the per-module sets of algorithms used by the top r paths, as the
        released code builds it. The paper only says "the subgraph of the top r paths", which
        could also mean exactly those r paths; the product keeps a plain per-module space, which
        is what the θ back end and the z-solvers search, and may hold more than r paths.

    Notes
    -----
    Paths are ranked by :func:`log_eips` (the same order as EIPS where EIPS is representable),
    ties at random.
    """
    zs = np.atleast_2d(np.asarray(paths))
    top_r = check_top_r(top_r, len(zs))
    xi = check_xi(xi, "xi")
    X = encode_paths(zs, n_choices)
    mean, std = perf.predict(X, min_std)
    scores = log_eips(mean, std, None if cost is None else cost.mean(X), best, xi, min_cost)
    top = zs[rank_with_random_ties(scores, rng)[:top_r]]
    return Subgraph(subgraph_masks(top, n_choices), top)
