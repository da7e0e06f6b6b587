"""The final model, built from a finished search: its outcome with every evaluation typed
(:mod:`.outcome`), the library of kept validation predictions and refit estimates
(:mod:`.library`), the fitted attributes and the best evaluation (:mod:`.results`), the refit on
all rows and its constraint re-check (:mod:`.refit`), the ensemble (:mod:`.ensemble`), its stack
layer (:mod:`.stacking`) and bags (:mod:`.bagging`), and the labels a model is fitted on
(:mod:`.labels`).

It sits between the methods and the run set-up (:mod:`admm_automl.run`): the set-up runs a search
and hands its :class:`~.outcome.SearchOutcome` here; nothing here imports the set-up."""
