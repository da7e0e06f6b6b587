"""The estimator's ``callbacks``: user functions told of each new evaluation, which may stop the
search (Optuna's ``callbacks=`` of ``study.optimize``, with the journal's record instead of a
trial object)."""

from __future__ import annotations

import copy
import time
from typing import Any, Callable, Sequence

import numpy as np

from ..exceptions import BudgetExhausted
from ..methods.driver import Recorder, RunListener


class CallbackListener(RunListener):
    """Calls each of ``callbacks`` as ``callback(record, best)`` for every evaluation that the
    run's journal records after the listener is made (a resumed journal's records are not new),
    after the recorder has taken the batch in; ``best`` is the record of the recorder's incumbent
    then. Each callback gets its own copies, so none can change the journal. Cancelled trials
    (cut by the budget's end, never begun) are no evaluations and are not passed. If a callback
    returns True, the rest of the batch is still passed and the search then stops with the stop
    reason ``"callback"`` (only a bool True stops: a callback that returns something else by
    accident does not).
    """

    def __init__(self, callbacks: Sequence[Callable[[dict, Any], Any]], journal: Any,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.callbacks = tuple(callbacks)
        self.clock = clock
        self.journal = journal
        self.seen = len(journal.records)
        self.by_id = {r.get("eval_id"): r for r in journal.records}
        #: seconds spent in each callback (by name), which count against the time budget
        self.seconds: dict[str, float] = {}

    def evaluated(self, recorder: Recorder, items: Sequence[Any]) -> None:
        new = self.journal.records[self.seen:]
        self.seen = len(self.journal.records)
        self.by_id.update((r.get("eval_id"), r) for r in new)
        incumbent = recorder.incumbent
        best = None if incumbent is None else self.by_id.get(incumbent.observation.eval_id)
        stop = False
        for record in new:
            if record.get("status") == "cancelled":
                continue
            for callback in self.callbacks:
                start = self.clock()
                answer = callback(copy.deepcopy(record), copy.deepcopy(best))
                name = getattr(callback, "__qualname__", None) or repr(callback)
                self.seconds[name] = self.seconds.get(name, 0.0) + self.clock() - start
                stop |= isinstance(answer, (bool, np.bool_)) and bool(answer)
        if stop:
            raise BudgetExhausted("callback")
