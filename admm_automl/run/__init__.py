"""The one run set-up used by the estimator, the command line, the benchmark runner and every
experiment script: the checks of the data (:mod:`.inputs`), the seeds (:mod:`.seeds`), the task
(:mod:`.task`) and its space (:mod:`.spaces`), the run header (:mod:`.header`), the executor
(:mod:`.executor`), the search itself (:mod:`.setup`: objective and method), the time policy
(:mod:`.deadline`), and the run directory's one-writer lock (:mod:`.lock`). What follows a
search, the final model, is :mod:`admm_automl.final`'s."""
