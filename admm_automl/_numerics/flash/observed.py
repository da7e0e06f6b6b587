"""A run's observed paths kept as arrays that grow at each tell, so that refitting FLASH's two
ridge models at an ask does not read every observation again (:class:`ObservedPaths`)."""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from .paths import check_n_choices, path_offsets


class _Column:
    """A growing array (amortised O(1) appends); ``array`` is a view of the filled part."""

    def __init__(self, dtype, width: int | None = None) -> None:
        self._shape = () if width is None else (int(width),)
        self._data = np.empty((16,) + self._shape, dtype=dtype)
        self._n = 0

    def append(self, value) -> None:
        if self._n == len(self._data):
            grown = np.empty((2 * self._n,) + self._shape, dtype=self._data.dtype)
            grown[: self._n] = self._data[: self._n]
            self._data = grown
        self._data[self._n] = value
        self._n += 1

    def __len__(self) -> int:
        return self._n

    @property
    def array(self) -> np.ndarray:
        return self._data[: self._n]


class ObservedPaths:
    """The paths (choice vectors), costs in seconds, censoring flags and values of the
    observations that feed FLASH's models, in the order they were observed, as numpy arrays
    appended to at each tell: an ask reads them as they are instead of converting every
    observation again (at 1 000 observations that conversion was ~60 % of an ask).

    The values (the performance model's targets) depend on the ADMM terms of the current
    problem, so they are kept per ``owner`` (the problem that scored them): :meth:`values`
    scores only the rows added since, and all of them again when the owner changes (new duals).
    The ``items`` given to :meth:`append` are whatever the caller's ``value`` function takes
    (an observation), kept so that the values can be re-read.
    """

    def __init__(self, n_choices: Sequence[int]) -> None:
        offsets = path_offsets(n_choices)
        self._offsets = offsets
        width = int(sum(check_n_choices(n_choices)))
        #: ``PᵀP`` of the one-hot path vectors, of all rows and of the censored ones: counts of
        #: pairs of ones, exact in floating point whatever the order they are added in
        self.gram = np.zeros((width, width))
        self.censored_gram = np.zeros((width, width))
        self.paths = _Column(np.int64, len(offsets))
        self.columns = _Column(np.intp, len(offsets))
        self.seconds = _Column(float)
        self.censored = _Column(bool)
        self._items: list = []
        self._values = _Column(float)
        self._owner: object = None
        self._distinct: set[tuple[int, ...]] = set()

    def __len__(self) -> int:
        return len(self._items)

    def append(self, path: tuple[int, ...], seconds: float, censored: bool, item) -> None:
        """One more observation: its choice vector (a tuple of ints), cost, whether its value is
        censored (a run stopped by its time limit) and what ``value`` scores."""
        self.paths.append(path)
        columns = self._offsets + np.asarray(path, dtype=np.intp)
        self.columns.append(columns)
        self.gram[np.ix_(columns, columns)] += 1.0
        if censored:
            self.censored_gram[np.ix_(columns, columns)] += 1.0
        self.seconds.append(seconds)
        self.censored.append(censored)
        self._items.append(item)
        self._distinct.add(path)

    @property
    def distinct(self) -> set[tuple[int, ...]]:
        """The distinct paths observed (do not change it)."""
        return self._distinct

    def values(self, value: Callable[[tuple[int, ...], object], float],
               owner: object) -> np.ndarray:
        """``value(path, item)`` of every row as a float array: the rows scored by the same
        ``owner`` are kept, the others scored now (all of them when ``owner`` changed)."""
        if owner is not self._owner:
            self._owner, self._values = owner, _Column(float)
        paths = self.paths.array
        for i in range(len(self._values), len(self._items)):
            self._values.append(float(value(tuple(int(j) for j in paths[i]), self._items[i])))
        return self._values.array

