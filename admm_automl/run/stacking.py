"""Moved to :mod:`admm_automl.final.stacking`; its classes stay importable from here, where the
fitted models pickled by earlier versions name them."""

from ..final.stacking import StackedClassifier, StackedRegressor  # noqa: F401
