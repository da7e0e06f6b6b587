"""The time policy of a run (admm_automl/run/deadline.py): the automatic trial timeout and
probes the run's clock sets, the reserve a search keeps back for the refit, and what the end of
the budget reports."""

from __future__ import annotations

import warnings

import pytest

from admm_automl.exceptions import SearchError, TimeBudgetWarning
from admm_automl.run.deadline import (
    ENSEMBLE_RESERVE_MEMBERS, PROBE_MIN_ROWS, Deadline, check_time_budget, refit_reserve,
    trial_policy, warn_overrun,
)


def test_the_automatic_timeout_is_a_quarter_of_the_time_left_at_least_a_tenth_of_the_budget():
    policy = trial_policy(Deadline(100.0), None)
    assert policy.timeout(80.0, True) == (20.0, False)  # a quarter of what is left
    assert policy.timeout(30.0, True) == (10.0, False)  # but at least a tenth of the budget
    assert policy.timeout(6.0, True) == (6.0, True)  # and never past the budget's end
    assert policy.timeout(80.0, False) == (80.0, True)  # until a pipeline succeeded: the end
    # a trial_timeout given is kept as it is; no time budget: no automatic timeout
    assert trial_policy(Deadline(100.0), 3.0).timeout(80.0, True) == (3.0, False)
    assert trial_policy(Deadline(None), None).timeout(None, True) == (None, False)


def test_full_data_trials_are_probed_first_from_the_probe_row_limit_under_a_timeout():
    policy = trial_policy(Deadline(60.0), None)
    assert policy.probes(PROBE_MIN_ROWS, 10.0)
    assert not policy.probes(PROBE_MIN_ROWS - 1, 10.0)
    assert not policy.probes(PROBE_MIN_ROWS, None)  # no limit: nothing to predict against


def test_the_refit_reserve_is_the_best_refit_plus_the_ensemble_s_at_most_a_fifth_of_the_budget():
    class Library:
        asked: list = []

        def refit_estimate(self, others):
            self.asked.append(others)
            return 2.0, (50.0 if others else 0.0)

    library = Library()
    assert refit_reserve(library, 100.0, ensemble=True) == pytest.approx(2.0 + 20.0)
    assert refit_reserve(library, 1000.0, ensemble=True) == pytest.approx(2.0 + 50.0)
    assert refit_reserve(library, 100.0, ensemble=False) == 2.0
    assert library.asked == [ENSEMBLE_RESERVE_MEMBERS, ENSEMBLE_RESERVE_MEMBERS, 0]


def test_a_time_budget_that_ends_before_any_evaluation_is_an_error_that_says_so():
    stopped = {"pipeline": "none -> sleeper", "time": 1.9, "duration": 1.2, "budget_stop": True}
    with pytest.raises(SearchError, match=r"time_budget=2 s ended before any pipeline evaluation "
                       r"finished: the first evaluation \(none -> sleeper\) began 0.7 s after the "
                       r"start .* stopped after 1.2 s\. Give a larger time_budget"):
        check_time_budget(2.0, [stopped], "process", 2.0)
    with pytest.raises(SearchError, match=r"set-up \(data checks, splits, worker start-up\) took "
                       r"it all \(1.5 s\)"):
        check_time_budget(1.0, [], "process", 1.5)
    check_time_budget(2.0, [{**stopped, "budget_stop": False}], "process", 2.0)  # one finished


def test_a_fit_that_overruns_its_time_budget_warns_and_says_which_part_did():
    with pytest.warns(TimeBudgetWarning, match=r"fit took 9.7 s for time_budget=3 s: the search "
                      r"ended at 9.5 s; executor='serial' runs .*executor='process'"):
        warn_overrun(3.0, "serial", 9.5, 9.7)
    # the search within the budget, the refit past it (5 s -> 6.3 s was silent)
    with pytest.warns(TimeBudgetWarning, match=r"fit took 6.3 s for time_budget=5 s: the search "
                      r"ended at 4.9 s and the refit on all rows took 1.4 s"):
        warn_overrun(5.0, "process", 4.9, 6.3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_overrun(3.0, "serial", 3.9, 3.95)  # within max(1 s, 2 %)
        warn_overrun(None, "serial", 9.0, 9.7)  # no time budget
