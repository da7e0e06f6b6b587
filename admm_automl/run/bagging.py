"""Moved to :mod:`admm_automl.final.bagging`; its classes stay importable from here, where the
fitted models pickled by earlier versions name them."""

from ..final.bagging import BaggedClassifier, BaggedRegressor, bag_of  # noqa: F401
