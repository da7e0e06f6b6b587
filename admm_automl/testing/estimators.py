"""Misbehaving and instrumented estimators, for tests of failure capture, timeouts, memory limits,
trials sized to their limit and caching (they live in an importable module so that worker
processes can load them by their class path)."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.naive_bayes import GaussianNB
from sklearn.preprocessing import StandardScaler

#: the environment variable that arms :class:`KilledAtFitNB`: a signal's name and a count,
#: ``"SIGKILL 3"``
KILL_AT_FIT = "ADMM_AUTOML_TEST_KILL_AT_FIT"


class _Base(ClassifierMixin, BaseEstimator):
    def _remember(self, y: Any) -> None:
        self.classes_ = np.unique(y)

    def predict(self, X: Any) -> np.ndarray:
        return np.repeat(self.classes_[:1], len(X))


class RaisingClassifier(_Base):
    """Raises in ``fit``."""

    def __init__(self, message: str = "this estimator always fails") -> None:
        self.message = message

    def fit(self, X: Any, y: Any) -> "RaisingClassifier":
        raise RuntimeError(self.message)


class SegfaultingClassifier(_Base):
    """Kills its own process with SIGSEGV in ``fit``, as a crash in compiled code does."""

    def fit(self, X: Any, y: Any) -> "SegfaultingClassifier":
        import os
        import signal

        os.kill(os.getpid(), signal.SIGSEGV)
        return self  # pragma: no cover


class KilledAtFitNB(GaussianNB):
    """Gaussian naive Bayes whose process is killed at a chosen fit: with
    ``ADMM_AUTOML_TEST_KILL_AT_FIT="SIGKILL 3"`` in the environment its third fit in the process
    sends SIGKILL (any signal by name) to the process; without it, it is ``GaussianNB``. A real
    signal ends the run in the middle of a trial at a point a test chooses, as a user's kill or
    the out-of-memory killer would, so that a resumed run can be compared with an uninterrupted
    one (which fits the same models: the variable changes nothing else)."""

    #: fits in this process (all instances: each trial fits a clone)
    n_fits = 0

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> "KilledAtFitNB":
        KilledAtFitNB.n_fits += 1
        armed = os.environ.get(KILL_AT_FIT, "").split()
        if armed and KilledAtFitNB.n_fits == int(armed[1]):
            os.kill(os.getpid(), getattr(signal, armed[0]))
            time.sleep(60)  # a signal whose default action ends the process never returns here
        return super().fit(X, y, sample_weight=sample_weight)


class SlowGaussianNB(GaussianNB):
    """Gaussian naive Bayes that sleeps ``seconds`` in ``fit``: a good model slow to fit whatever
    its rows, so that its probe on a tenth of large data predicts a full fit of ten times that
    (for the choice between a probed pipeline and a fully fitted one)."""

    def __init__(self, seconds: float = 0.2, *, priors: Any = None,
                 var_smoothing: float = 1e-9) -> None:
        super().__init__(priors=priors, var_smoothing=var_smoothing)
        self.seconds = seconds

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> "SlowGaussianNB":
        time.sleep(self.seconds)
        return super().fit(X, y, sample_weight=sample_weight)


class NaNClassifier(_Base):
    """Fits, then predicts NaN probabilities (a NaN score)."""

    def fit(self, X: Any, y: Any) -> "NaNClassifier":
        self._remember(y)
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        return np.full((len(X), len(self.classes_)), np.nan)


class SleepingClassifier(_Base):
    """Sleeps ``seconds`` in ``fit`` (a runaway fit, for timeouts)."""

    def __init__(self, seconds: float = 60.0) -> None:
        self.seconds = seconds

    def fit(self, X: Any, y: Any) -> "SleepingClassifier":
        time.sleep(self.seconds)
        self._remember(y)
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        return np.full((len(X), len(self.classes_)), 1.0 / len(self.classes_))


class NappingForest(_Base):
    """A forest whose fit takes a known time: it sleeps ``fixed`` seconds, and ``seconds`` per
    tree and per thousand rows, as a random forest's fit grows with its trees and its rows on
    large data (for trials sized to their time limit, whatever the machine's load, which only
    lengthens a sleep). Every fit of the process is recorded in the class attribute ``fits`` as
    ``(rows, trees)``; it predicts the training rows' class shares."""

    fits: list[tuple[int, int]] = []

    def __init__(self, n_estimators: int = 100, seconds: float = 1e-3, fixed: float = 0.0,
                 warm_start: bool = False, random_state: Any = None) -> None:
        self.n_estimators = n_estimators
        self.seconds = seconds
        self.fixed = fixed
        self.warm_start = warm_start
        self.random_state = random_state

    def fit(self, X: Any, y: Any) -> "NappingForest":
        NappingForest.fits.append((len(X), int(self.n_estimators)))
        time.sleep(self.fixed + self.seconds * self.n_estimators * len(X) / 1000)
        self._remember(y)
        self.shares_ = np.array([np.mean(np.asarray(y) == c) for c in self.classes_])
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        return np.tile(self.shares_, (len(X), 1))


class BusyClassifier(_Base):
    """Spins in one long C call in ``fit`` (``sum`` over a huge range) that never checks for
    signals, like a BLAS product or liblinear: a Python-level SIGTERM handler cannot run."""

    def __init__(self, n: int = 10**12) -> None:
        self.n = n

    def fit(self, X: Any, y: Any) -> "BusyClassifier":
        self.total_ = sum(range(self.n))
        self._remember(y)
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        return np.full((len(X), len(self.classes_)), 1.0 / len(self.classes_))


class MemoryHogClassifier(_Base):
    """Allocates ``megabytes`` of memory in ``fit`` (for the memory limit)."""

    def __init__(self, megabytes: int = 4096) -> None:
        self.megabytes = megabytes

    def fit(self, X: Any, y: Any) -> "MemoryHogClassifier":
        block = np.ones(self.megabytes * 1024 * 1024 // 8)
        self._remember(y)
        self.total_ = float(block[0])
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        return np.full((len(X), len(self.classes_)), 1.0 / len(self.classes_))


class CountingScaler(StandardScaler):
    """A ``StandardScaler`` that counts its fits in the class attribute ``n_fits`` (per process),
    so a test can see which fits a cache saved."""

    n_fits = 0

    def fit(self, X: Any, y: Any = None, sample_weight: Any = None) -> "CountingScaler":
        type(self).n_fits += 1
        return super().fit(X, y, sample_weight)
