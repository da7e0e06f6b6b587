"""What a person watches during ``fit``: a live progress display (rich) and the log lines.

:class:`ProgressDisplay` is a :class:`~admm_automl.methods.driver.RunListener`: the recorder feeds it
every batch and every iteration of any method (ADMM, JOPT, selection, ...), and it shows the budget
used (evaluations and/or time), the evaluations done and failed, the best score so far (and, with
constraints, the best *feasible* one) and the pipeline being evaluated. rich redraws it four times a
second from its own thread, so the clock moves while a long evaluation runs; in a notebook rich
draws it in an ipywidgets output.

:func:`watching` is what ``fit`` runs under: log lines at ``verbose`` (1: one per iteration, 2: one
per evaluation) and the display when :func:`display_wanted` says so. Log lines printed while the
display is up appear above it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import math
import multiprocessing
import sys
from typing import Any, Iterator, Sequence

from ..evaluation.metrics import shown
from ..exceptions import MissingDependencyError
from ..methods.driver import Evaluated, Point, Recorder, RunListener

logger = logging.getLogger("admm_automl")


class _StderrHandler(logging.StreamHandler):
    """A handler that writes to ``sys.stderr`` as it is when a line is logged (the standard
    library's last-resort handler does the same), so that lines go through rich's redirection
    while the display is up instead of tearing it."""

    @property
    def stream(self):  # type: ignore[override]
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


def in_worker_process() -> bool:
    """Whether this process was started by another Python process (a multiprocessing, joblib or
    loky worker): such a process never shows a display, whose lines would mix with its parent's."""
    return (multiprocessing.parent_process() is not None
            or multiprocessing.current_process().name != "MainProcess")


def display_wanted(progress: bool | None, verbose: int, console: Any) -> bool:
    """Whether ``fit`` shows the live display on ``console`` (a ``rich.console.Console``).

    ``progress=False`` never; ``True`` always (asked: also when the output is not a terminal);
    ``None`` when ``verbose >= 1`` and the output is a terminal or a notebook with ipywidgets.
    Never in a worker process.
    """
    if progress is False or in_worker_process() or not (progress or verbose >= 1):
        return False
    if console.is_jupyter:  # rich draws into an ipywidgets output, and warns at every frame without
        return importlib.util.find_spec("ipywidgets") is not None
    return bool(progress) or console.is_terminal


class ProgressDisplay(RunListener):
    """A live view of a run (see the module docstring).

    Parameters
    ----------
    console : rich.console.Console, optional
        Where to draw (default: standard error).
    metric : tuple (name, offset), optional
        Shows the best loss as its score (``offset − loss``, e.g. AUROC) when the offset is not
        zero; without it, the loss.
    """

    def __init__(self, console: Any = None, *, metric: tuple[str, float] | None = None) -> None:
        from rich.console import Console

        self.console = console if console is not None else Console(stderr=True)
        self.metric = metric
        self.name = ""
        self.recorder: Recorder | None = None
        self.best_any = math.inf
        self.current = ""
        self.stop_reason = ""
        self.stage_text = ""
        self.notes: list[str] = []
        #: whether the display stays up after the run until :meth:`close` (:func:`watching`
        #: keeps it through the refit)
        self.stays = False
        self._live: Any = None

    def start(self) -> None:
        """Start drawing (idempotent): :func:`watching` starts it before the data are read, so
        the first seconds are not blank; else the run's start does."""
        from rich.live import Live

        if self._live is None:
            self._live = Live(self, console=self.console, refresh_per_second=4,
                              redirect_stdout=False)
            self._live.start()

    # ------------------------------------------------------------------ the listener
    def stage(self, text: str) -> None:
        self.stage_text = text
        self._refresh()

    def note(self, text: str) -> None:
        self.notes.append(text)
        self._refresh()

    def _refresh(self) -> None:
        """Draw now (between rich's four frames a second), so that every stage is seen."""
        if self._live is not None:
            self._live.refresh()

    def run_started(self, recorder: Recorder, name: str) -> None:
        self.recorder, self.name, self.stage_text = recorder, name, ""
        self.start()

    def evaluating(self, recorder: Recorder, points: Sequence[Point], phase: str) -> None:
        pipelines = sorted({recorder.pipeline(point[0]) for point in points})
        more = f" and {len(pipelines) - 1} more" if len(pipelines) > 1 else ""
        solver = recorder.tags.get("solver")
        step = f"{phase}, {solver}" if solver and solver != phase else phase
        self.current = f"{pipelines[0]}{more} ({step})" if pipelines else ""

    def evaluated(self, recorder: Recorder, items: Sequence[Evaluated]) -> None:
        for item in items:
            obs = item.observation
            if obs.ok and obs.fidelity >= 1.0:
                self.best_any = min(self.best_any, obs.loss)
        # an asynchronous run still has trials in flight (those answered now no longer count)
        running = recorder.in_flight
        self.current = f"{running} trial{'s' * (running > 1)} running" if running > 0 else ""

    def run_finished(self, recorder: Recorder, stop_reason: str) -> None:
        self.stop_reason = stop_reason
        if not self.stays:
            self.close()

    def close(self) -> None:
        """Draw the last state and stop redrawing (idempotent)."""
        if self._live is not None:
            self._live.stop()
            self._live = None

    # ------------------------------------------------------------------ drawing
    def _score(self, loss: float) -> str:
        if not math.isfinite(loss):
            return "–"
        if self.metric is None:
            return f"loss {loss:.4g}"
        label, value = shown(self.metric[0], self.metric[1], loss)
        return f"{label} {value:.4f}"

    def lines(self) -> list[str]:
        """What the display shows, as plain text lines (after the budget bar)."""
        rec = self.recorder
        if rec is None:
            return [self.stage_text or "starting"] + self.notes
        budget = rec.budget
        used = [f"{rec.n_evals}" + (f"/{budget.max_evals}" if budget.max_evals else "")
                + " evaluations"]
        elapsed = budget.elapsed()
        used.append(_clock(elapsed) + (f"/{_clock(budget.time_budget)}" if budget.time_budget
                                       else ""))
        out = [f"{self.name} iteration {rec.iteration}: " + ", ".join(used)
               + f" ({rec.n_failed} failed"
               + (f", {rec.n_timeouts} stopped at their time limit)" if rec.n_timeouts
                  else ")")]
        best = f"best {self._score(self.best_any)}"
        if len(rec.constraints):
            inc = rec.incumbent
            feasible = (self._score(inc.observation.loss)
                        if inc is not None and rec.constraints.feasible(inc.observation)
                        else "none yet")
            best += f"; best feasible ({rec.constraints}): {feasible}"
        out.append(best)
        if self.stop_reason:
            out.append(f"stopped by {self.stop_reason}"
                       + (f"; {self.stage_text}" if self.stage_text else ""))
        elif self.current:
            out.append(f"evaluating {self.current}")
        return out + self.notes

    def fraction(self) -> float:
        """The share of the budget used: the larger of evaluations and time."""
        rec = self.recorder
        if rec is None:
            return 0.0
        budget, parts = rec.budget, [0.0]
        if budget.max_evals:
            parts.append(rec.n_evals / budget.max_evals)
        if budget.time_budget:
            parts.append(budget.elapsed() / budget.time_budget)
        return min(max(parts), 1.0)

    def __rich__(self) -> Any:
        from rich.console import Group
        from rich.progress_bar import ProgressBar
        from rich.table import Table
        from rich.text import Text

        done = self.fraction()
        head = Table.grid(padding=(0, 1))
        head.add_row(ProgressBar(total=1.0, completed=done, width=max(10, min(60, self.console.width - 12))),
                     Text(f"{done:.0%} of the budget", style="bold"))
        return Group(head, *(Text(line, overflow="ellipsis", no_wrap=True)
                             for line in self.lines()))


def _clock(seconds: float) -> str:
    seconds = int(max(seconds, 0))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def _have_rich(progress: bool | None) -> bool:
    """Whether rich, which draws the display, is installed: ``progress=True`` asked for the
    display, so its absence is an error that says how to install it; with ``verbose`` alone
    the log lines are enough."""
    if importlib.util.find_spec("rich") is not None:
        return True
    if progress:
        raise MissingDependencyError("progress=True needs rich for the live display, which is "
                                     "not installed: pip install 'admm-automl[report]'")
    return False


@contextlib.contextmanager
def watching(verbose: int, progress: bool | None = None,
             metric: tuple[str, float] | None = None) -> Iterator[list[RunListener]]:
    """Log at ``verbose`` (1: INFO, one line per iteration; 2: DEBUG, one per evaluation) and
    yield the listeners of the run: a :class:`ProgressDisplay` when :func:`display_wanted`."""
    handler = None
    old = logger.level
    if verbose:
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("[admm-automl] %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG if verbose > 1 else logging.INFO)
    display = None
    if progress is not False and (progress or verbose) and _have_rich(progress):
        from rich.console import Console

        console = Console(stderr=True, force_terminal=True if progress else None)
        if display_wanted(progress, verbose, console):
            display = ProgressDisplay(console, metric=metric)
            display.stays = True
            display.start()
    try:
        yield [display] if display is not None else []
    finally:
        if display is not None:
            display.close()
        if handler is not None:
            logger.removeHandler(handler)
            logger.setLevel(old)
