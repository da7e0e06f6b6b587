"""The time policy of a run, in one place: every decision the time budget drives.

``time_budget`` covers all of ``fit``: set-up and worker start-up, the search, its overhead and
the refit after it. Its one clock, :class:`~admm_automl.clock.Deadline`, is started when ``fit``
starts and handed to the set-up, the search's budget, the objective and the refit, instead of
start times and "time left" passed separately. The decisions it drives, here:

* the **reserve**: a time-budgeted search keeps back the estimated refit of its best pipeline and,
  with the ensemble on, of its next best evaluations (:func:`refit_reserve`);
* the **per-trial timeout** with no ``trial_timeout``: a quarter of the time left, at least a
  tenth of the budget (:data:`AUTO_TIMEOUT_FRACTION`, :data:`AUTO_MIN_TIMEOUT_FRACTION`);
* **probes**: from :data:`PROBE_MIN_ROWS` training rows a pipeline is first fitted on a tenth of
  them, and on all only if that predicts it can finish in its timeout;
* the **cv rule**: ``cv="auto"`` cross-validates while the budget affords it
  (:func:`~admm_automl.evaluation.splits.resolve_cv`), and on small data repeats the folds while
  it affords that (:func:`~admm_automl.evaluation.splits.resolve_repeats`);
* the **refit threads**: the refit runs under the same BLAS/OpenMP thread limit as the trials
  (:func:`refit_threads`), so that a loaded machine does not stretch it past the budget;
* the **end**: an error when the budget ended before any evaluation finished
  (:func:`check_time_budget`), a warning when ``fit`` overran it, saying whether the search (a
  serial one) or the refit did (:func:`warn_overrun`).

The timeout and probe rules are applied by the objective as a
:class:`~admm_automl.evaluation.policy.TrialPolicy` (:func:`trial_policy`); their values
live here.
"""

from __future__ import annotations

import warnings
from typing import Any

from ..clock import Deadline
from ..evaluation.policy import TrialPolicy
# the refit's own time rules live with the refit; named here too, beside the rest of the policy
from ..final.refit import overrun_tolerance, refit_threads
from ..exceptions import SearchError, TimeBudgetWarning

__all__ = ["AUTO_MIN_TIMEOUT_FRACTION", "AUTO_TIMEOUT_FRACTION", "Deadline",
           "ENSEMBLE_RESERVE_MAX_FRACTION", "ENSEMBLE_RESERVE_MEMBERS", "PROBE_MIN_ROWS",
           "check_time_budget", "refit_reserve", "refit_threads", "trial_policy", "warn_overrun"]

#: a trial may take at most this fraction of the time left: with a quarter, at least three more
#: trials as slow as the slowest allowed one still fit after it, so no single pipeline can take a
#: run's last chances, while a good learner that needs a few seconds on large data still gets them
#: early in a run (auto-sklearn's fixed per-run limit, a tenth of the whole budget, would stop the
#: full-data boosted trees of a 60 s run on 45 000 rows after 6 s)
AUTO_TIMEOUT_FRACTION = 0.25
#: ... but at least this fraction of the whole budget (auto-sklearn's default per-run limit), so
#: that the end of a run still fits full-data trials of a few seconds
AUTO_MIN_TIMEOUT_FRACTION = 0.1
#: the training rows from which full-data requests are probed on a subsample first (smaller data
#: fit fast)
PROBE_MIN_ROWS = 10_000

#: under a time budget with the ensemble on, the search also keeps back the estimated refits of
#: this many of its next best evaluations, for the ensemble's other members (in the benchmark
#: against FLAML, ensembles had up to 8 members, most 3-5) ...
ENSEMBLE_RESERVE_MEMBERS = 4
#: ... at most this fraction of the budget (the search comes first)
ENSEMBLE_RESERVE_MAX_FRACTION = 0.2


def trial_policy(deadline: Deadline, trial_timeout: float | None) -> TrialPolicy:
    """The trials' rules: a fixed ``trial_timeout``; or, under ``deadline``'s time budget, a
    timeout of a quarter of the time left (at least a tenth of the budget) and probes on large
    data."""
    if trial_timeout is not None or deadline.budget is None:
        return TrialPolicy(trial_timeout=trial_timeout, probe_min_rows=PROBE_MIN_ROWS)
    return TrialPolicy(timeout_fraction=AUTO_TIMEOUT_FRACTION,
                       min_timeout=deadline.budget * AUTO_MIN_TIMEOUT_FRACTION,
                       probe_min_rows=PROBE_MIN_ROWS)


def refit_reserve(library: Any, time_budget: float, ensemble: bool) -> float:
    """The seconds a time-budgeted search keeps back for the refit after it: the estimated refit
    of its best pipeline so far (:meth:`.library.PredictionLibrary.refit_estimate`) and, with the
    ensemble on, of its ``ENSEMBLE_RESERVE_MEMBERS`` next best kept evaluations, those at most
    ``ENSEMBLE_RESERVE_MAX_FRACTION`` of the budget."""
    best, others = library.refit_estimate(ENSEMBLE_RESERVE_MEMBERS if ensemble else 0)
    return best + min(others, ENSEMBLE_RESERVE_MAX_FRACTION * time_budget)


def check_time_budget(budget: float, records: list[dict[str, Any]], executor: str,
                      elapsed: float) -> None:
    """After a search with a time budget: an error when the budget ended before any evaluation
    finished (there is nothing to refit, and a larger budget is the remedy). (An overrun is
    reported at the end of ``fit``, refit included: :func:`warn_overrun`.)

    Not evaluating the first pipeline to its end whatever the budget was a choice: a budget is a
    limit the user can rely on, and one fit may take far longer than the whole budget.
    """
    if all(r.get("budget_stop") for r in records):
        if records:
            first = records[0]
            what = (f"the first evaluation ({first['pipeline']}) began "
                    f"{first['time'] - first['duration']:.3g} s after the start (set-up: data "
                    "checks, splits, worker start-up) and was stopped after "
                    f"{first['duration']:.3g} s")
        else:
            what = ("the set-up (data checks, splits, worker start-up) took it all "
                    f"({elapsed:.3g} s)")
        raise SearchError(
            f"time_budget={budget:g} s ended before any pipeline evaluation finished: {what}. "
            "Give a larger time_budget, or max_evals alone (evaluations without a time limit)."
        )


def warn_overrun(budget: float | None, executor: str, search_end: float, end: float,
                 callback_seconds: dict[str, float] | None = None) -> None:
    """At the end of ``fit``: a warning when it overran ``time_budget`` by more than
    max(1 s, 2 %), with the part that did: the user's callbacks (``callback_seconds``, by name),
    which run between evaluations in the search's time and which nothing stops; the search
    (``search_end`` seconds after the start), which only the serial executor lets run past the
    budget (it cannot stop a running fit); or the refit on all rows (up to ``end``), longer than
    the reserve estimated from the search."""
    if budget is None or end - budget <= overrun_tolerance(budget):
        return
    in_callbacks = sum((callback_seconds or {}).values())
    if search_end - budget > overrun_tolerance(budget) and in_callbacks > overrun_tolerance(budget):
        name, slowest = max(callback_seconds.items(), key=lambda item: item[1])
        why = (f"the search ended at {search_end:.3g} s, {in_callbacks:.3g} s of it in the "
               f"callbacks ({name}: {slowest:.3g} s)")
        advice = ("callbacks run between evaluations, in the search's time, and nothing stops "
                  "them: make them quicker, or do the slow part after fit")
    elif search_end - budget > overrun_tolerance(budget):
        why = (f"the search ended at {search_end:.3g} s; executor={executor!r} runs an "
               "evaluation that is under way when the budget ends to its end" if executor ==
               "serial" else f"the search ended at {search_end:.3g} s")
        advice = ("use executor='process' (or 'auto') to have it stopped" if executor == "serial"
                  else "the set-up or the last evaluations took longer than their limits")
    else:
        why = (f"the search ended at {search_end:.3g} s and the refit on all rows took "
               f"{end - search_end:.3g} s, more than the fit times seen in the search predicted")
        advice = "a smaller ensemble_size shortens the refit"
    warnings.warn(f"fit took {end:.3g} s for time_budget={budget:g} s: {why}; {advice}",
                  TimeBudgetWarning, stacklevel=3)
