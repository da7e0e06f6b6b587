"""The library of a run's kept validation predictions (admm_automl/final/library.py): the best
evaluations and the best of every learner kept for the ensemble, and the refit estimates behind
the time budget's reserve."""

from __future__ import annotations

import numpy as np

from admm_automl.testing.spaces import diverse_space

DIVERSE = diverse_space()


def test_the_ensemble_library_keeps_the_best_evaluation_of_every_learner(breast_cancer):
    from admm_automl.run.executor import make_executor
    from admm_automl.records import Request
    from admm_automl.final.library import PredictionLibrary
    from admm_automl.run.setup import open_objective
    from admm_automl.run.task import prepare_task

    X, y = breast_cancer
    space = DIVERSE.for_task("classification")
    task = prepare_task(X, y, space=space, task="classification", target_type="binary")
    task.context.keep_predictions = True
    library = PredictionLibrary(len(y), len(task.context.splits), size=2)
    objective = open_objective(task.context, executor=make_executor(
        "serial", n_jobs=1, memory_limit_mb=None, needs_isolation=False),
                               worst_loss=task.worst_loss, observers=[library])
    names = space.encoding.choice_names[-1]
    requests = []
    for name in ("logistic_regression", "k_neighbors", "tree", "gaussian_nb"):
        z = (0, names.index(name))
        for u in (0.2, 0.5, 0.8):
            theta = space.encoding.project(np.full(space.encoding.theta_dim, u))
            requests.append(Request(z, theta))
    try:
        objective(requests)
    finally:
        objective.close()
    records = objective.journal.records
    kept = set(library.predictions)
    top = sorted(records, key=lambda r: r["loss"])[:2]
    assert {r["eval_id"] for r in top} <= kept
    for name in names:  # the best of every learner, however far down the ranking it is
        mine = [r for r in records if r["pipeline"].endswith(name)]
        if mine:
            assert min(mine, key=lambda r: r["loss"])["eval_id"] in kept
    assert len(kept) <= 2 + len(names)


def test_refit_estimate_scales_the_mean_fit_per_split_to_all_rows():
    from admm_automl.final.library import refit_seconds_estimate

    # 5 folds of 800 training rows, 10 s of fits in all (2 s each): 2.5 s on 1000 rows
    assert refit_seconds_estimate({"fit_time": 10.0, "n_train": 800}, 1000, 5) == 2.5
    # what the prefix cache saved counts: the refit fits every step
    assert refit_seconds_estimate({"fit_time": 6.0, "n_train": 800,
                                   "prefix_cache": {"seconds_saved": 4.0}}, 1000, 5) == 2.5
    assert refit_seconds_estimate({"fit_time": 0.0, "n_train": None}, 1000, 1) == 0.0
