"""Pipeline paths as FLASH encodes them: one one-hot block per module, the layout's checks and
sizes, the vectorised decoding, the set of all paths and a stratified sample of it when the
space is too large to enumerate."""

from __future__ import annotations

import math
from numbers import Integral
from typing import Sequence

import numpy as np

from ...exceptions import InvalidParameterError
from ...problem import all_pipelines
from .defaults import DEFAULT_MAX_ENUMERATE, DEFAULT_N_CANDIDATES


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


def path_columns(z: np.ndarray, n_choices: Sequence[int]) -> np.ndarray:
    """The column of each module's one in the path vectors of choice vectors ``z`` (shape
    (n, K) -> (n, K)): ``encode_paths(z)[i]`` is 1 exactly at ``path_columns(z)[i]``. A linear
    model over path vectors is a sum of K of its entries there (see
    :meth:`~.ridge.RidgePathModel.predict_columns`)."""
    zs = np.atleast_2d(np.asarray(z))
    encode_paths(zs[:1], n_choices) if len(zs) else None  # the layout's checks
    return path_offsets(n_choices)[None, :] + zs.astype(np.intp)


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
