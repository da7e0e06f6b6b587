"""The one run set-up used by the estimator, the command line, the benchmark runner and every
experiment script: seeds, task, executor, objective and method (:mod:`.setup`), the time policy
(:mod:`.deadline`), and what follows a search: its outcome, every evaluation typed
(:mod:`.outcome`), the fitted attributes and the refit (:mod:`.results`, :mod:`.refit`), the
ensemble (:mod:`.ensemble`), and the run directory's one-writer lock (:mod:`.lock`)."""
