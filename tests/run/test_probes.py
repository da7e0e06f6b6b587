"""Probes never hide a model: when the time budget ends with every pipeline evaluated on a
subsample only (the probes of large data), fit returns the best of them refitted on all rows and
says so, instead of "all evaluated pipelines failed"."""

from __future__ import annotations

import math

import pytest

from admm_automl import ADMM
from admm_automl.evaluation.policy import PROBE_FIDELITY, TrialPolicy
from admm_automl.exceptions import SubsampleOnlyWarning
from admm_automl.run import deadline
from admm_automl.testing import tiny_space


def test_a_run_of_probes_only_returns_the_best_probe_refitted_on_all_rows(monkeypatch,
                                                                          breast_cancer_full):
    # every pipeline is probed, and every probe predicts a full fit past its timeout: the
    # situation of 45 000 rows and a 10 s budget, on 569 rows
    monkeypatch.setattr(deadline, "PROBE_MIN_ROWS", 0)
    monkeypatch.setattr(TrialPolicy, "full_duration", staticmethod(lambda probe: math.inf))
    X, y = breast_cancer_full
    with pytest.warns(SubsampleOnlyWarning, match=r"No pipeline was evaluated on all 455 training "
                      r"rows .* Returning the best on the largest one \(10% of the rows\)"):
        model = ADMM(search_space=tiny_space(), theta_solver="random", z_solver="random",
                     time_budget=3, executor="serial", cv=None, random_state=0).fit(X, y)
    history = model.history_
    assert len(history) >= 2 and (history["status"] == "ok").all()
    assert (history["fidelity"] == PROBE_FIDELITY).all()
    assert model.best_loss_ == history["loss"].min()
    assert model.best_eval_id_ == history.loc[history["loss"].idxmin(), "eval_id"]
    assert model.score(X, y) > 0.85  # refitted on all rows, not on the probe's 45
