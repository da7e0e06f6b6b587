"""How the θ-solver ``bo`` feeds and sizes its GP, as pure functions of counts and arrays: which
observations a refit uses, when a refit is due, how many candidates and polish starts an
acquisition search gets, and the growing arrays of observed and pending points."""

from __future__ import annotations

import math

import numpy as np


def model_rows(g: np.ndarray, max_points: int) -> np.ndarray:
    """The observations the GP is refitted on: all of them, or beyond ``max_points`` the best
    half of ``max_points`` by value and the most recent others up to ``max_points``."""
    n, cap = len(g), int(max_points)
    if n <= cap:
        return np.arange(n)
    best = np.argsort(g, kind="stable")[: cap // 2]
    rest = np.setdiff1d(np.arange(n), best)[-(cap - len(best)):]
    return np.sort(np.concatenate([best, rest]))


def refit_due(n: int, n_fit: int, refit_growth: float, batch_size: int) -> bool:
    """Whether the hyperparameters are refitted at ``n`` observations, the last fit having had
    ``n_fit``: when they grew by ``refit_growth`` since, and by at least half the workers' number.

    With W workers at least W/2 new observations between refits: the points of a round of W
    trials come from fits at most half a round old (new points enter the fit by the block update
    meanwhile); a MAP refit on 300 points cost 0.3 s, and at 64 workers refits every 5 % were a
    quarter of the driver's time (none of this with one worker)."""
    floor = int(batch_size) // 2
    return n - n_fit >= max(1, math.ceil(float(refit_growth) * n_fit), floor)


def n_candidates(dim: int, n_model: int, n_pending: int = 0) -> int:
    """Candidates scored before the polish by default: 128 per dimension (512–1024), fewer as
    the GP grows so that scoring them stays O(1024·64²), at least 128; half as many (at least
    64) from :data:`POLISH_MAX_PENDING` suggestions pending on, where the search is not
    polished: scoring them is then the ask's largest cost (O(m·n²) for m candidates over a GP
    of n points, lies included: 213 candidates over ~410 points at 1 000 observations and 63
    pending), and the point asked is one of many spread by the lies. Not measured for the
    search's quality (see ``n_starts``)."""
    base = int(np.clip(128 * int(dim), 512, 1024))
    count = max(128, min(base, int(base * (64.0 / max(n_model, 64)) ** 2)))
    if int(n_pending) >= POLISH_MAX_PENDING:
        count = max(64, count // 2)
    return count


#: from this many suggestions pending on, an acquisition search is not polished (:func:`n_starts`)
POLISH_MAX_PENDING = 32


def n_starts(n_restarts: int, n_pending: int) -> int:
    """Starts of the acquisition's polish with ``n_pending`` suggestions pending: ``n_restarts``
    when none is, falling as ``8/(8 + n_pending)`` (5, 3, 2, 1 at 0, 8, 16, 31 pending), at least
    one, and none (no polish: the best candidates as scored) from :data:`POLISH_MAX_PENDING`
    pending on. The polish is most of a search's cost (57 of 68 ms a point at 64 workers; 62 %
    of an ask with 63 pending after the lies were kept, ~23 L-BFGS-B iterations over a GP of
    ~263 points) and each start is polished over the whole GP, lies included, so its cost grows
    with the pending set while what it buys falls: a point asked with 63 others in flight is one
    of 64 spread by the lies, not by the polish, and the posterior around the lies is already
    flattened, so the exact optimum of the next point matters less than its arrival. 32 is
    where the formula has come down to its one start, and a point asked with 32 or more in
    flight is in the position of the later points of a batch of 32, which :meth:`ask_batch`
    never polished (measured on Hartmann-6, batches of 32 over 256 evaluations, 10 seeds: mean
    regret 0.0657 against 0.0642 with every point searched, see the ``bo`` solver's
    ``ask_batch``). The threshold itself was not tuned."""
    if int(n_pending) >= POLISH_MAX_PENDING:
        return 0
    return max(1, math.ceil(int(n_restarts) * 8 / (8 + max(0, int(n_pending)))))


class Rows:
    """A growing array (amortised O(1) appends; ``array`` is a view of the filled part)."""

    def __init__(self, data: np.ndarray) -> None:
        self._data = np.array(data, dtype=float)
        self._n = len(self._data)

    def append(self, row) -> None:
        if self._n == len(self._data):
            grown = np.empty((max(16, 2 * self._n),) + self._data.shape[1:])
            grown[: self._n] = self._data[: self._n]
            self._data = grown
        self._data[self._n] = row
        self._n += 1

    @property
    def array(self) -> np.ndarray:
        return self._data[: self._n]
