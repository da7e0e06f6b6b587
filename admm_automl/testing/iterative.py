"""Iterative learners that count the iterations they train, for tests of the training-length
fidelity (that continuing a model costs only the extra iterations). They live in an importable
module so that a space can name them by class path; the counts are per process."""

from __future__ import annotations

from collections import Counter
from typing import Any

from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import SGDClassifier

#: iterations trained in this process: ``"partial_fit"`` epochs and ``"warm_start"`` boosting
#: rounds (clear it at the start of a test)
TRAINED: Counter = Counter()


class CountingSGDClassifier(SGDClassifier):
    """scikit-learn's SGDClassifier; every ``partial_fit`` call (one epoch) adds 1 to
    ``TRAINED["partial_fit"]``."""

    def partial_fit(self, X: Any, y: Any, classes: Any = None, sample_weight: Any = None):
        TRAINED["partial_fit"] += 1
        return super().partial_fit(X, y, classes=classes, sample_weight=sample_weight)


class CountingHistGradientBoostingClassifier(HistGradientBoostingClassifier):
    """scikit-learn's HistGradientBoostingClassifier; every ``fit`` adds the boosting rounds it
    trained (``n_iter_`` after minus before, when warm-started) to ``TRAINED["warm_start"]``."""

    def fit(self, X: Any, y: Any, sample_weight: Any = None):
        before = getattr(self, "n_iter_", 0) if self.warm_start else 0
        super().fit(X, y, sample_weight=sample_weight)
        TRAINED["warm_start"] += self.n_iter_ - before
        return self
