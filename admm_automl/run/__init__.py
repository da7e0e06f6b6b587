"""The one run set-up used by the estimator, the command line, the benchmark runner and every
experiment script: seeds, task, executor, objective and method (:mod:`.setup`), the time policy
(:mod:`.deadline`), the checks of the data (:mod:`.inputs`), and the run directory's one-writer
lock (:mod:`.lock`). What follows a search, the final model, is :mod:`admm_automl.final`'s."""
