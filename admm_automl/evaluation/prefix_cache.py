"""A bounded pool of fitted pipeline prefixes, so that pipelines sharing their first steps do not
fit them again (Zhang et al., KDD 2016, Algorithm 3).

Many pipelines of a search share a prefix: the same preprocessing and scaler, often the same
transformer with the same hyperparameters, in front of different estimators. For each prefix —
the steps before the estimator, up to step k — the pool keeps the fitted steps and their output:
the transformed training rows and the transformed validation rows. A pipeline whose prefix is in
the pool fits only its remaining steps.

* :class:`PrefixCache` — the pool: a size in MiB, least-recently-used eviction by bytes, counters
  of hits, misses, fits saved and seconds saved; size 0 turns it off.
* :func:`prefix_keys` — the key of each prefix of a configuration of a search space: the decoded
  steps (algorithm and hyperparameters), the split, the fidelity and the models' seed.
* :func:`fit_pipeline` — fit a pipeline through the pool; a hit gives bit-identical results to
  fitting the whole pipeline (the same calls on the same data, the fitted steps reused).

One pool serves one task (one dataset and its splits): keys do not name the data, so a worker that
moves to another task must :meth:`~PrefixCache.clear` it (or make a new one).

Choices where the paper is silent, with the reason:

* **What is cached.** Every prefix of steps before the estimator, not the estimator: a repeated
  whole configuration is already answered by the objective's result cache, and the estimator's
  fit is what differs between pipelines. This is also what the authors' code does.
* **Keys.** A prefix is keyed by each step's algorithm and hyperparameters (passthrough steps are
  left out, as in the authors' code, so ``none → pca`` and ``pca`` share an entry), the split
  index, the fidelity (the training rows) and the models' ``random_state`` — randomised
  transformers (random projections, RBF sampler, FastICA) give the same output only with the same
  seed (the spec's G17).
* **Capacity and eviction.** The paper gives no size and its code never evicts. The pool holds at
  most ``size_mb`` MiB (default 256 per worker process: a laptop with 8–16 GiB runs a few workers
  and keeps room for the fits themselves), counting the transformed data and the arrays of the
  fitted steps; when a new entry would exceed it, the least recently used entries go first. An
  entry larger than the whole pool is not stored.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..exceptions import InvalidParameterError

__all__ = ["DEFAULT_CACHE_MB", "CachedFit", "PrefixCache", "fit_pipeline", "prefix_keys"]

#: the pool's size in MiB per worker process when none is given
DEFAULT_CACHE_MB = 256.0
_MIB = 2**20


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


@dataclass(frozen=True)
class _Entry:
    """A fitted prefix: its steps, its output on the training and validation rows, the seconds it
    took to compute from the raw data and the number of steps fitted for it."""

    steps: tuple[tuple[str, Any], ...]
    train: Any
    valid: Any
    seconds: float
    fits: int
    size: int


class PrefixCache:
    """A pool of fitted prefixes, bounded in size, least recently used evicted first.

    Parameters
    ----------
    size_mb : float, default=256
        The pool's capacity in MiB (transformed data and fitted steps); 0 turns caching off.

    Attributes
    ----------
    hits, misses : int
        :func:`fit_pipeline` calls that reused a cached prefix (of any length) / found none.
    fits_saved : int
        Steps that were not fitted because their fitted prefix was reused.
    seconds_saved : float
        The seconds those steps took when they were fitted (and their output computed).
    evictions : int
        Entries dropped to make room.
    """

    def __init__(self, size_mb: float = DEFAULT_CACHE_MB) -> None:
        if isinstance(size_mb, bool) or not isinstance(size_mb, (int, float, np.number)) \
                or not 0 <= size_mb < math.inf:
            raise InvalidParameterError(
                f"cache size must be a finite number of MiB >= 0 (0 turns the prefix cache off), "
                f"got {size_mb!r}"
            )
        self.capacity = int(float(size_mb) * _MIB)
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self.nbytes = 0
        self.hits = self.misses = self.fits_saved = self.evictions = 0
        self.seconds_saved = 0.0

    @property
    def enabled(self) -> bool:
        return self.capacity > 0

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def get(self, key: str) -> _Entry | None:
        """The entry of ``key`` (now the most recently used), or None."""
        entry = self._entries.get(key)
        if entry is not None:
            self._entries.move_to_end(key)
        return entry

    def put(self, key: str, entry: _Entry) -> None:
        """Store ``entry``, evicting the least recently used ones to make room (an entry larger
        than the pool is not stored)."""
        if entry.size > self.capacity or key in self._entries:
            return
        while self.nbytes + entry.size > self.capacity:
            _, old = self._entries.popitem(last=False)
            self.nbytes -= old.size
            self.evictions += 1
        self._entries[key] = entry
        self.nbytes += entry.size

    def clear(self) -> None:
        """Drop every entry (the counters stay)."""
        self._entries.clear()
        self.nbytes = 0

    def stats(self) -> dict[str, float]:
        """The counters, the number of entries and the bytes held."""
        return {"hits": self.hits, "misses": self.misses, "fits_saved": self.fits_saved,
                "seconds_saved": self.seconds_saved, "evictions": self.evictions,
                "entries": len(self), "bytes": self.nbytes}


def prefix_keys(space: Any, z: Sequence[int], theta: np.ndarray, *, split: int, fidelity: float,
                random_state: int | None, preprocessor: bool = True) -> list[str]:
    """The key of every prefix of the pipeline ``space.to_pipeline(z, θ, ...)`` builds: one per
    step before the estimator (the preprocessor first when ``preprocessor``), in order.

    A key names the decoded steps up to it (algorithm and hyperparameter values; passthrough
    steps are left out, so they share the key of the prefix before them), the split index, the
    fidelity and the models' seed.
    """
    config = space.decode(z, theta)
    parts = [f"split={split}|fidelity={fidelity:.6g}|seed={random_state}"]
    keys = []
    if preprocessor:
        parts.append("preprocess")
        keys.append("|".join(parts))
    for module, j in zip(space.modules[:-1], z):
        if module.choices[j].class_path is not None:
            prefix = f"{module.name}__"
            params = sorted((k, repr(v)) for k, v in config.items() if k.startswith(prefix))
            parts.append(f"{module.name}={config[module.name]}{params}")
        keys.append("|".join(parts))
    return keys


@dataclass(frozen=True)
class CachedFit:
    """A pipeline fitted through a :class:`PrefixCache`.

    Attributes
    ----------
    pipeline : sklearn.pipeline.Pipeline
        The fitted pipeline. Its prefix steps may be shared with the pool: never refit them.
    valid : array-like
        The validation rows transformed by the prefix (the final estimator's input), so the
        loss need not transform them again: ``pipeline[-1]`` on ``valid`` predicts exactly as
        ``pipeline`` on the raw validation rows.
    hit : bool
        Whether a cached prefix was reused.
    fits_saved : int
        Prefix steps not fitted thanks to the pool.
    seconds_saved : float
        The time those steps took when they were fitted.
    """

    pipeline: Any
    valid: Any
    hit: bool
    fits_saved: int
    seconds_saved: float


def fit_pipeline(pipeline: Any, keys: Sequence[str], X_train: Any, y_train: Any, X_valid: Any,
                 cache: PrefixCache) -> CachedFit:
    """Fit ``pipeline`` (unfitted) on the training rows, reusing the longest prefix in ``cache``.

    The steps after the cached prefix are fitted as :meth:`sklearn.pipeline.Pipeline.fit` fits
    them (``fit_transform`` on the training rows, the final estimator's ``fit`` on their output),
    their output on the validation rows is ``transform``, and each new prefix is stored. So the
    fitted pipeline, its predictions and every loss computed from them are identical to fitting
    the whole pipeline. ``keys`` are the prefixes' keys, one per step before the last
    (:func:`prefix_keys`).

    Raises
    ------
    InvalidParameterError
        If ``keys`` does not have one key per step before the estimator.
    """
    from sklearn.pipeline import Pipeline

    steps = list(pipeline.steps)
    if len(keys) != len(steps) - 1:
        raise InvalidParameterError(
            f"need one key per step before the estimator ({len(steps) - 1}), got {len(keys)}")
    fitted: list[tuple[str, Any]] = []
    train, valid, seconds, fits, start = X_train, X_valid, 0.0, 0, 0
    found = None
    if cache.enabled:
        found = next(((k, e) for k in reversed(range(len(keys)))
                      if (e := cache.get(keys[k])) is not None), None)
    if found is not None:  # continue from the longest cached prefix
        start, entry = found[0] + 1, found[1]
        fitted, train, valid = list(entry.steps), entry.train, entry.valid
        seconds, fits = entry.seconds, entry.fits
        cache.hits += 1
        cache.fits_saved += fits
        cache.seconds_saved += seconds
    else:
        cache.misses += 1
    saved_fits, saved_seconds = fits, seconds
    for k in range(start, len(keys)):
        name, step = steps[k]
        if step is not None and not (isinstance(step, str) and step == "passthrough"):
            begin = time.perf_counter()
            train = step.fit_transform(train, y_train)
            valid = step.transform(valid)
            seconds += time.perf_counter() - begin
            fits += 1
        fitted.append((name, step))
        if cache.enabled and keys[k] not in cache:
            size = nbytes(train) + nbytes(valid) + sum(nbytes(s) for _, s in fitted)
            cache.put(keys[k], _Entry(tuple(fitted), train, valid, seconds, fits, size))
    name, estimator = steps[-1]
    estimator.fit(train, y_train)
    return CachedFit(Pipeline(fitted + [(name, estimator)]), valid, found is not None,
                     saved_fits, saved_seconds)
