"""The greedy D-optimal initial design of paths (the paper's Algorithm 2)."""

from __future__ import annotations

from dataclasses import dataclass
import math

import numpy as np
from scipy import linalg

from ...exceptions import InvalidParameterError
from .validation import check_n_init
from .acquisition import rank_with_random_ties


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
