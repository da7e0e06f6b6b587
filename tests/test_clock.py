"""The one clock of a run (admm_automl/clock.py): what it counts, and that the search's budget
reads it rather than keeping a start time of its own (the objective's record times:
tests/evaluation/test_evaluation.py)."""

from __future__ import annotations

import pytest

from admm_automl.clock import Deadline
from admm_automl.exceptions import InvalidParameterError
from admm_automl.methods.driver import Budget, RunOptions
from admm_automl.testing import FakeClock


def test_the_deadline_counts_from_its_start_and_without_a_budget_has_no_time_left():
    clock = FakeClock()
    clock.now = 100.0
    deadline = Deadline(10.0, clock=clock)  # started now: at 100
    clock.now = 104.0
    assert deadline.start == 100.0
    assert deadline.elapsed() == 4.0 and deadline.left() == 6.0
    clock.now = 113.0
    assert deadline.left() == -3.0  # over: negative, not clipped
    assert Deadline(None, clock=clock).left() is None


def test_the_budget_counts_on_the_deadline_so_time_spent_before_the_search_is_spent():
    clock = FakeClock()
    deadline = Deadline(60.0, clock=clock)
    clock.now = 15.0  # the set-up: data checks, splits, worker start-up
    budget = Budget(None, deadline, reserve=lambda: 5.0)
    assert budget.elapsed() == 15.0
    assert budget.time_left() == 60.0 - 15.0 - 5.0
    assert budget.time_budget == 60.0 and budget.clock is clock
    with pytest.raises(InvalidParameterError, match="max_evals or time_budget"):
        Budget(None, Deadline(None, clock=clock))


def test_a_run_takes_its_budget_and_clock_from_the_deadline_and_refuses_a_second_one():
    clock = FakeClock()
    deadline = Deadline(30.0, clock=clock)
    options = RunOptions(deadline=deadline)
    assert options.time_budget == 30.0 and options.clock is clock
    assert RunOptions(deadline=deadline, time_budget=30.0).time_budget == 30.0  # the same: fine
    with pytest.raises(InvalidParameterError, match="time_budget=20.0"):
        RunOptions(deadline=deadline, time_budget=20.0)
    with pytest.raises(InvalidParameterError, match="clock="):
        RunOptions(deadline=deadline, clock=FakeClock())

