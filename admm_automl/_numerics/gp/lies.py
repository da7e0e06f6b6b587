"""The GP of the observations with the pending points at a constant-liar value, kept from one
ask to the next (:class:`KeptLies`).

With W workers an asynchronous run asks one point each time a trial ends, with the other W − 1
in flight. The θ-solver ``bo`` models those as lies: the GP of the observations with every
pending point appended at the best value seen (scikit-optimize's ``cl_min``). Appending all
W − 1 again at every ask (a block update of ``K⁻¹``, O(n²W)) was 13 % of an ask at 64 workers,
although between two asks only one trial ended and one was issued. :class:`KeptLies` keeps the
lied GP instead and changes only what changed: the point told turns from a lie into an
observation (the same point, so ``K⁻¹`` is unchanged and only its target changes), new
observations and new lies enter by a block update that keeps the Cholesky factor along
(:meth:`~.model.MaternGP.append_factored`: updating the explicit inverse alone drifts), and the
targets are read again (O(n²)). The result is the GP built afresh on the same points, up to
rounding (~1e-12 in the tests) and the order of its points (the posterior does not depend on
it). It is built afresh (O(n³)) at the first ask with points pending, when the hyperparameters
change (a refit), when a lie leaves without being told (a lost trial, or more points pending
than the caller models) and after as many incremental changes as it has points.
"""

from __future__ import annotations

from typing import Hashable, Mapping

import numpy as np

from .model import MaternGP


class KeptLies:
    """A :class:`MaternGP` of observations (rows of the caller's observation arrays) and lies
    (points pending under a key), kept across calls of :meth:`update`.

    Each point of the kept GP is an observation (``slot_rows``: its row) or a lie (row −1,
    ``slot_keys``: its key by point index). ``rows`` must be sorted (the caller's are).
    """

    def __init__(self) -> None:
        self.gp: MaternGP | None = None
        self.slot_rows = np.zeros(0, dtype=int)
        self.slot_keys: dict[int, Hashable] = {}
        self.changes = 0
        self.rebuilds = 0

    def reset(self) -> None:
        """Forget the kept GP (the observation rows were renumbered)."""
        self.gp, self.changes = None, 0
        self.slot_rows, self.slot_keys = np.zeros(0, dtype=int), {}

    def holds(self, base: MaternGP | None) -> bool:
        """Whether a kept GP exists with ``base``'s hyperparameters (so :meth:`update` changes
        it rather than rebuilding it)."""
        return (self.gp is not None and base is not None and self.gp.params is base.params
                and self.gp.prior_mean == base.prior_mean and self.changes < len(self.gp.X))

    def update(self, base: MaternGP, base_rows: np.ndarray, rows: np.ndarray, X: np.ndarray,
               y: np.ndarray, lies: Mapping[Hashable, np.ndarray], lie: float,
               told: Mapping[Hashable, int]) -> MaternGP:
        """The GP of the observations ``X[rows]`` at targets ``y`` (one per row) with the
        points of ``lies`` (key -> point, in order) appended at the target ``lie``, the
        hyperparameters ``base``'s. ``base`` is the GP of ``X[base_rows]`` (``base_rows`` a
        prefix of ``rows``; its targets may be stale): what a rebuild starts from.

        ``told`` maps the keys of points told since the last call to their observation rows: a
        kept lie that was told and whose row is in ``rows`` becomes that observation (the same
        point, so only its target changes). Without a kept GP (:meth:`holds`), or when a kept
        lie left untold, the result is built afresh on ``X[rows]`` and the lies (``base`` gives
        the hyperparameters; ``base_rows`` is kept for the caller's record).
        """
        rows = np.asarray(rows, dtype=int)
        y = np.asarray(y, dtype=float)
        if not self.holds(base):
            return self._rebuild(base, np.asarray(base_rows, dtype=int), rows, X, y, lies, lie)
        slot_rows = self.slot_rows.copy()  # the observation row of each point, −1 for a lie
        slot_keys = dict(self.slot_keys)  # point index -> key, for the lies
        gone = [i for i, k in slot_keys.items() if k not in lies]
        for i in gone:
            row = told.get(slot_keys.pop(i))
            if (row is None or not np.array_equal(X[row], self.gp.X[i])
                    or np.any(slot_rows == row)):
                # a lie dropped untold (a lost trial, or beyond the caller's window): afresh
                return self._rebuild(base, np.asarray(base_rows, dtype=int), rows, X, y, lies,
                                     lie)
            slot_rows[i] = row  # the lie was told: the same point, now observed
        held = slot_rows[slot_rows >= 0]
        position = np.searchsorted(rows, held)
        if np.any(position >= len(rows)) or np.any(rows[np.minimum(position, len(rows) - 1)]
                                                     != held):
            return self._rebuild(base, np.asarray(base_rows, dtype=int), rows, X, y, lies, lie)
        held_keys = set(slot_keys.values())
        new_rows = np.setdiff1d(rows, held)
        new_keys = [k for k in lies if k not in held_keys]
        gp, dim, n = self.gp, X.shape[1], len(slot_rows)
        appended = len(new_rows) > 0 or len(new_keys) > 0
        if appended:
            slot_rows = np.concatenate([slot_rows, new_rows,
                                        np.full(len(new_keys), -1, dtype=int)])
            slot_keys.update({n + len(new_rows) + j: k for j, k in enumerate(new_keys)})
        targets = np.full(len(slot_rows), float(lie))
        observed = slot_rows >= 0
        targets[observed] = y[np.searchsorted(rows, slot_rows[observed])]
        if appended:
            X_new = np.vstack([X[new_rows].reshape(len(new_rows), dim),
                               np.array([np.asarray(lies[k], dtype=float) for k in new_keys]
                                        ).reshape(len(new_keys), dim)])
            gp = gp.append_factored(X_new, targets, in_place=True)
        elif not np.array_equal(targets, gp.y):
            gp = gp.with_targets(targets)
        self.changes += len(new_rows) + len(new_keys)
        self.gp, self.slot_rows, self.slot_keys = gp, slot_rows, slot_keys
        return gp

    def _rebuild(self, base: MaternGP, base_rows: np.ndarray, rows: np.ndarray, X: np.ndarray,
                 y: np.ndarray, lies: Mapping[Hashable, np.ndarray], lie: float) -> MaternGP:
        """A fresh factorisation of the observations at ``rows`` and the lies, with ``base``'s
        hyperparameters (O(n³): at the first ask with points pending, after a refit, after a
        lie left untold and after as many changes as the GP has points)."""
        keys = list(lies)
        self.rebuilds += 1
        self.changes = 0
        dim = X.shape[1]
        P = np.array([np.asarray(lies[k], dtype=float) for k in keys]).reshape(len(keys), dim)
        self.slot_rows = np.concatenate([rows, np.full(len(keys), -1, dtype=int)])
        self.slot_keys = {len(rows) + j: k for j, k in enumerate(keys)}
        self.gp = MaternGP(np.vstack([X[rows].reshape(len(rows), dim), P]),
                           np.concatenate([y, np.full(len(keys), float(lie))]), base.params,
                           fit=False, min_noise=base.min_noise, prior_mean=base.prior_mean)
        return self.gp
