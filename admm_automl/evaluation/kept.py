"""What a worker process keeps between trials: one pool, one byte budget, least recently used
evicted first, whatever the kind of the thing kept.

Two parts of the engine keep things from one trial for later ones, each only to save time (a
miss costs a refit, never a different result):

* ``"prefix"`` — fitted pipeline prefixes and their output (:mod:`.prefix_cache`; Zhang et al.,
  KDD 2016), so a pipeline that shares its first steps with an earlier one does not fit them again;
* ``"model"`` — partly trained models of iterative learners (:mod:`.iterative`; the
  training-length fidelity of BAPI, Belakaria et al. 2022), so a continued training starts where
  the last one stopped; without its model it trains from scratch to the same model.

Both live in one :class:`KeptStore` per worker process (per serial run, in the caller), made by
the trial context at its first use and never pickled. Entries are keyed by ``(kind, key)`` and
sized in bytes by their kind; the store evicts across kinds by least recent use, so together they
never exceed the budget, and the budget goes where the search currently spends its trials (a
search of plain pipelines fills it with prefixes; a BAPI search continuing many models, with
models) rather than being split in advance.

**The budget** (:func:`kept_budget_mb`) is the run's ``cache_size`` MiB (default
:data:`DEFAULT_CACHE_MB`), at most a quarter of a worker's ``memory_limit`` when one is set: that
limit bounds the worker's whole address space (``RLIMIT_AS``), which must also hold the
interpreter and its libraries (a few hundred MiB of address space before any data), the task's
data and the fit under way, and a fit needs several copies of its training rows at once
(``fit_transform`` outputs, the validation rows transformed, the estimator's own copies). What is
kept only saves time, while a fit that runs into the limit is lost as ``memout``; so the pool
takes at most a quarter and leaves three quarters to the rest. The bytes counted are those of the
kept data, not the allocator's footprint (which is larger), another reason for a share well under
half. ``cache_size=0`` keeps nothing: no prefix is reused and every continued training retrains
from scratch.

**Sizes.** Each kind measures its own entries in bytes: a prefix by the arrays it holds
(:func:`nbytes`: the transformed rows dominate and are counted exactly); a model by its pickled
size, because the trees of scikit-learn's ensembles sit in compiled objects whose arrays
:func:`nbytes` cannot see (a 100-tree random forest on 569 rows: 2 kB by :func:`nbytes`, 370 kB
pickled). An entry larger than the whole budget is not kept.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import Any, Hashable

import numpy as np

from ..exceptions import InvalidParameterError

__all__ = ["DEFAULT_CACHE_MB", "KeptStore", "kept_budget_mb", "nbytes"]

#: MiB a worker process keeps between trials when no ``cache_size`` is given (a laptop with
#: 8–16 GiB runs a few workers and keeps room for the fits themselves)
DEFAULT_CACHE_MB = 256.0
#: the share of a worker's ``memory_limit`` the pool may take at most (see the module's docstring)
MEMORY_SHARE = 0.25
_MIB = 2**20


def kept_budget_mb(cache_size: float, memory_limit: float | None) -> float:
    """The MiB each worker process keeps between trials: ``cache_size``, but at most a quarter of
    a worker's ``memory_limit`` (MiB; None: no limit), which bounds the whole process, the fits
    included (the module's docstring says why a quarter)."""
    return cache_size if memory_limit is None else min(cache_size, memory_limit * MEMORY_SHARE)


def nbytes(obj: Any, depth: int = 3) -> int:
    """Bytes of the arrays held by ``obj``: a numpy array, a scipy sparse matrix, a pandas object,
    or (down to ``depth`` levels) the attributes, lists and dicts of a fitted estimator. Python
    scalars and strings are not counted; the arrays are what can be large."""
    if isinstance(obj, np.ndarray):
        return int(obj.nbytes)
    if hasattr(obj, "memory_usage") and hasattr(obj, "iloc"):  # pandas
        usage = obj.memory_usage(deep=True)
        return int(usage.sum() if hasattr(usage, "sum") else usage)
    if all(hasattr(obj, a) for a in ("data", "indices", "indptr")):  # CSR / CSC
        return int(obj.data.nbytes + obj.indices.nbytes + obj.indptr.nbytes)
    if depth <= 0:
        return 0
    if isinstance(obj, dict):
        return sum(nbytes(v, depth - 1) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(nbytes(v, depth - 1) for v in obj)
    if hasattr(obj, "__dict__") and not isinstance(obj, type):
        return sum(nbytes(v, depth - 1) for v in vars(obj).values())
    return 0


class KeptStore:
    """Things kept between trials, keyed by ``(kind, key)``, at most ``size_mb`` MiB of them
    together; the least recently used entry goes first, whatever its kind.

    Parameters
    ----------
    size_mb : float, default=256
        The budget in MiB (:func:`kept_budget_mb`); 0 keeps nothing.

    Attributes
    ----------
    capacity : int
        The budget in bytes.
    nbytes : int
        The bytes held, all kinds together.
    """

    def __init__(self, size_mb: float = DEFAULT_CACHE_MB) -> None:
        if isinstance(size_mb, bool) or not isinstance(size_mb, (int, float, np.number)) \
                or not 0 <= size_mb < math.inf:
            raise InvalidParameterError(
                f"cache size must be a finite number of MiB >= 0 (0 keeps nothing between trials), "
                f"got {size_mb!r}"
            )
        self.capacity = int(float(size_mb) * _MIB)
        self._items: OrderedDict[tuple[str, Hashable], tuple[Any, int]] = OrderedDict()
        self.nbytes = 0
        self._bytes: dict[str, int] = {}
        self._count: dict[str, int] = {}
        self._evictions: dict[str, int] = {}

    @property
    def enabled(self) -> bool:
        return self.capacity > 0

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, kind_key: object) -> bool:
        return kind_key in self._items

    def count(self, kind: str) -> int:
        """The entries of ``kind`` held."""
        return self._count.get(kind, 0)

    def bytes_of(self, kind: str) -> int:
        """The bytes of the entries of ``kind`` held."""
        return self._bytes.get(kind, 0)

    def evictions(self, kind: str) -> int:
        """The entries of ``kind`` dropped to make room (for an entry of any kind)."""
        return self._evictions.get(kind, 0)

    def get(self, kind: str, key: Hashable, touch: bool = True) -> Any:
        """The value of ``(kind, key)``, or None; with ``touch`` it is now the most recently
        used."""
        item = self._items.get((kind, key))
        if item is None:
            return None
        if touch:
            self._items.move_to_end((kind, key))
        return item[0]

    def touch(self, kind: str, key: Hashable) -> None:
        """Make ``(kind, key)`` the most recently used (nothing if it is not held)."""
        if (kind, key) in self._items:
            self._items.move_to_end((kind, key))

    def put(self, kind: str, key: Hashable, value: Any, size: int) -> bool:
        """Keep ``value`` (``size`` bytes) as the most recently used entry, in place of what
        ``(kind, key)`` held, evicting the least recently used entries of any kind to make room.
        A value larger than the whole budget is not kept (and what ``(kind, key)`` held stays).
        Whether it was kept."""
        size = int(size)
        if size > self.capacity:
            return False
        self.pop(kind, key)
        while self.nbytes + size > self.capacity:
            (old_kind, _), (_, old_size) = self._items.popitem(last=False)
            self._forget(old_kind, old_size)
            self._evictions[old_kind] = self._evictions.get(old_kind, 0) + 1
        self._items[(kind, key)] = (value, size)
        self.nbytes += size
        self._bytes[kind] = self._bytes.get(kind, 0) + size
        self._count[kind] = self._count.get(kind, 0) + 1
        return True

    def pop(self, kind: str, key: Hashable) -> Any:
        """Remove ``(kind, key)`` and return its value, or None."""
        item = self._items.pop((kind, key), None)
        if item is None:
            return None
        self._forget(kind, item[1])
        return item[0]

    def clear(self, kind: str | None = None) -> None:
        """Drop every entry of ``kind`` (None: of every kind); the eviction counts stay."""
        for kind_key in [k for k in self._items if kind is None or k[0] == kind]:
            self.pop(*kind_key)

    def stats(self) -> dict[str, Any]:
        """Per kind: its entries, bytes and evictions; and the bytes held and the budget."""
        kinds = sorted(set(self._count) | set(self._evictions))
        return {"capacity": self.capacity, "bytes": self.nbytes,
                "kinds": {k: {"entries": self.count(k), "bytes": self.bytes_of(k),
                              "evictions": self.evictions(k)} for k in kinds}}

    def _forget(self, kind: str, size: int) -> None:
        self.nbytes -= size
        self._bytes[kind] -= size
        self._count[kind] -= 1
