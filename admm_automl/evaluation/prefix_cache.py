"""A bounded pool of fitted pipeline prefixes, so that pipelines sharing their first steps do not
fit them again (Zhang et al., KDD 2016, Algorithm 3).

Many pipelines of a search share a prefix: the same preprocessing and scaler, often the same
transformer with the same hyperparameters, in front of different estimators. For each prefix —
the steps before the estimator, up to step k — the pool keeps the fitted steps and their output:
the transformed training rows and the transformed validation rows. A pipeline whose prefix is in
the pool fits only its remaining steps.

* :class:`PrefixCache` — the pool: its entries are kept in the worker's one
  :class:`~.kept.KeptStore` (kind ``"prefix"``), whose byte budget they share with the partly
  trained models of :mod:`.iterative`, least-recently-used eviction by bytes across both; counters
  of hits, misses, fits saved and seconds saved; a budget of 0 turns it off.
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
  seed.
* **Capacity and eviction.** The paper gives no size and its code never evicts. The entries,
  measured by the transformed data and the arrays of the fitted steps (:func:`~.kept.nbytes`),
  share the worker's budget of kept things (:mod:`.kept`: ``cache_size`` MiB, default 256 per
  worker process, at most a quarter of ``memory_limit``) with the partly trained models; when a
  new entry would exceed it, the least recently used entries of either kind go first. An entry
  larger than the whole budget is not stored.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..exceptions import InvalidParameterError
from .kept import DEFAULT_CACHE_MB, KeptStore, nbytes

__all__ = [
    "DEFAULT_CACHE_MB", "KIND", "CachedFit", "PrefixCache", "fit_pipeline", "prefix_keys",
]

#: the kind of the pool's entries in the worker's :class:`~.kept.KeptStore`
KIND = "prefix"


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
        The pool's capacity in MiB (transformed data and fitted steps) when it has a store of its
        own; 0 turns caching off.
    store : KeptStore, optional
        The worker's pool of kept things to hold the entries in, shared with other kinds (its
        budget is then the capacity; give no ``size_mb``).

    Attributes
    ----------
    hits, misses : int
        :func:`fit_pipeline` calls that reused a cached prefix (of any length) / found none.
    fits_saved : int
        Steps that were not fitted because their fitted prefix was reused.
    seconds_saved : float
        The seconds those steps took when they were fitted (and their output computed).
    evictions : int
        Prefix entries dropped to make room (for an entry of any kind).
    """

    def __init__(self, size_mb: float | None = None, *, store: KeptStore | None = None) -> None:
        if store is not None and size_mb is not None:
            raise InvalidParameterError("give a prefix cache its size_mb or a store, not both")
        self.store = KeptStore(DEFAULT_CACHE_MB if size_mb is None else size_mb) \
            if store is None else store
        self.hits = self.misses = self.fits_saved = 0
        self.seconds_saved = 0.0

    @property
    def capacity(self) -> int:
        """The bytes of the budget the entries share."""
        return self.store.capacity

    @property
    def enabled(self) -> bool:
        return self.store.enabled

    @property
    def nbytes(self) -> int:
        """The bytes of the prefix entries held."""
        return self.store.bytes_of(KIND)

    @property
    def evictions(self) -> int:
        return self.store.evictions(KIND)

    def __len__(self) -> int:
        return self.store.count(KIND)

    def __contains__(self, key: object) -> bool:
        return (KIND, key) in self.store

    def get(self, key: str) -> _Entry | None:
        """The entry of ``key`` (now the most recently used), or None."""
        return self.store.get(KIND, key)

    def put(self, key: str, entry: _Entry) -> None:
        """Store ``entry``, evicting the least recently used entries (of any kind) to make room
        (an entry larger than the whole budget is not stored; a held key is left as it is)."""
        if key not in self:
            self.store.put(KIND, key, entry, entry.size)

    def clear(self) -> None:
        """Drop every prefix entry (the counters stay; other kinds stay)."""
        self.store.clear(KIND)

    def stats(self) -> dict[str, float]:
        """The counters, the number of entries and the bytes held."""
        return {"hits": self.hits, "misses": self.misses, "fits_saved": self.fits_saved,
                "seconds_saved": self.seconds_saved, "evictions": self.evictions,
                "entries": len(self), "bytes": self.nbytes}


def prefix_keys(space: Any, z: Sequence[int], theta: np.ndarray, *, split: int, fidelity: float,
                random_state: int | None, preprocessor: str | None = "one_hot",
                wrapped: bool = False) -> list[str]:
    """The key of every prefix of the pipeline ``space.to_pipeline(z, θ, ...)`` builds: one per
    step before the estimator (the preprocessor first, unless ``preprocessor`` is None; its
    encoding of the category columns, ``"one_hot"``, ``"ordinal"`` or ``"native"``, is a part of
    the key: under ``"native"`` the later steps leave the category columns alone),
    in order.

    A pipeline wrapped by the space's last module (:meth:`PipelineSpace.wraps`) has none: it is
    one step; ``wrapped=True`` gives the keys of the pipeline inside it (the wrapper's
    ``estimator``), whose prefixes are those of the same pipeline unwrapped.
    A key names the decoded steps up to it (algorithm and hyperparameter values; passthrough
    steps are left out, so they share the key of the prefix before them), the split index, the
    fidelity and the models' seed.
    """
    if space.wraps(z) and not wrapped:  # one step, the wrapper around the whole pipeline
        return []
    config = space.decode(z, theta)
    parts = [f"split={split}|fidelity={fidelity:.6g}|seed={random_state}"]
    keys = []
    if preprocessor is not None:
        parts.append("preprocess" if preprocessor == "one_hot" else f"preprocess={preprocessor}")
        keys.append("|".join(parts))
    stages = [(m, j) for m, j in zip(space.modules, z) if not m.wraps]
    for module, j in stages[:-1]:
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
    rounds : int or None
        What ``fit_estimator`` returned (the rounds early stopping kept), None without one.
    """

    pipeline: Any
    valid: Any
    hit: bool
    fits_saved: int
    seconds_saved: float
    rounds: int | None = None


def fit_pipeline(pipeline: Any, keys: Sequence[str], X_train: Any, y_train: Any, X_valid: Any,
                 cache: PrefixCache, *,
                 fit_estimator: Callable[[Any, Any, Any, Any], int] | None = None,
                 fit_params: dict[str, Any] | None = None) -> CachedFit:
    """Fit ``pipeline`` (unfitted) on the training rows, reusing the longest prefix in ``cache``.

    The steps after the cached prefix are fitted as :meth:`sklearn.pipeline.Pipeline.fit` fits
    them (``fit_transform`` on the training rows, the final estimator's ``fit`` on their output),
    their output on the validation rows is ``transform``, and each new prefix is stored. So the
    fitted pipeline, its predictions and every loss computed from them are identical to fitting
    the whole pipeline. ``keys`` are the prefixes' keys, one per step before the last
    (:func:`prefix_keys`).

    ``fit_estimator(estimator, X, y, X_valid)``, when given, fits the final estimator instead of
    its ``fit``, with the prefix's output on the training and validation rows (early stopping on
    the validation rows, :func:`~.stopping.fit_stopped`); what it returns is ``rounds``.
    ``fit_params`` go to the final estimator's ``fit`` (a fairness mitigation's
    ``sensitive_features``).

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
    rounds = None
    if fit_estimator is None:
        estimator.fit(train, y_train, **(fit_params or {}))
    else:
        rounds = fit_estimator(estimator, train, y_train, valid)
    return CachedFit(Pipeline(fitted + [(name, estimator)]), valid, found is not None,
                     saved_fits, saved_seconds, rounds)
