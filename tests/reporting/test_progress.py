"""The recorder's listener hook, the live progress display and the log lines of ``verbose``."""

from __future__ import annotations

import io
import logging
import multiprocessing
import warnings

import pytest

from admm_automl import ADMM
from admm_automl.methods.driver import RunListener
from admm_automl.methods.registry import METHODS
from admm_automl.reporting.progress import ProgressDisplay, display_wanted, watching

Console = pytest.importorskip("rich.console", reason="the live display needs rich").Console


class Recording(RunListener):
    """Remembers every call, in order."""

    def __init__(self):
        self.calls = []

    def run_started(self, recorder, name):
        self.calls.append(("started", name))

    def evaluating(self, recorder, points, phase):
        self.calls.append(("evaluating", len(points), phase))

    def evaluated(self, recorder, items):
        self.calls.append(("evaluated", list(items)))

    def iteration_done(self, recorder, row):
        self.calls.append(("iteration", row))

    def run_finished(self, recorder, stop_reason):
        self.calls.append(("finished", stop_reason))


@pytest.mark.parametrize("method", list(METHODS))
def test_every_method_feeds_its_listeners(make_optimizer, method):
    """Every evaluation and every trace row reaches the listener, between one start and one end,
    whatever the method: the hook is the recorder's, not the method's."""
    listener = Recording()
    result = make_optimizer(method, max_evals=30, listeners=[listener]).run()
    kinds = [c[0] for c in listener.calls]
    assert kinds[0] == "started" and kinds[-1] == "finished"
    assert kinds.count("started") == kinds.count("finished") == 1
    assert listener.calls[-1] == ("finished", result.stop_reason)
    seen = [item for c in listener.calls if c[0] == "evaluated" for item in c[1]]
    assert seen == result.evaluated
    assert [c[1] for c in listener.calls if c[0] == "iteration"] == result.trace
    # each batch is announced before it is evaluated, with its size
    for before, after in zip(listener.calls, listener.calls[1:]):
        if after[0] == "evaluated":
            assert before[0] == "evaluating" and before[1] == len(after[1])


def test_listener_is_told_when_a_run_fails(make_optimizer, make_engine):
    def broken(requests, time_left=None, tags=None):
        raise KeyboardInterrupt

    listener = Recording()
    with pytest.raises(KeyboardInterrupt):
        make_optimizer("admm", engine=broken, listeners=[listener]).run()
    assert listener.calls[0][0] == "started" and listener.calls[-1] == ("finished", "error")


def _display(width=100):
    console = Console(file=io.StringIO(), force_terminal=True, width=width, record=True)
    return ProgressDisplay(console, metric=("roc_auc", 1.0))


def test_display_shows_budget_counts_best_and_pipeline(make_optimizer):
    display = _display()
    shown = []

    class Snapshot(RunListener):  # what the display says while a batch runs
        def evaluating(self, recorder, points, phase):
            shown.append(display.lines())

    result = make_optimizer("admm", max_evals=24, listeners=[display, Snapshot()]).run()
    first = shown[0]
    assert first[0] == "ADMM iteration 0: 0/24 evaluations, 0:00:00 (0 failed)"
    assert first[2].startswith("evaluating ") and first[2].endswith("(initial)")
    # the step and the solver that makes it
    assert any(" -> " in line[2] and "(theta, random)" in line[2] for line in shown)
    last = display.lines()
    assert last[0].startswith(f"ADMM iteration {result.trace[-1]['iteration']}: 24/24 evaluations")
    best = min(e.observation.loss for e in result.evaluated if e.observation.ok)
    assert last[1] == f"best AUROC {1.0 - best:.4f}"
    assert last[2] == "stopped by max_evals"
    assert display.fraction() == 1.0
    text = display.console.export_text()
    assert "100% of the budget" in text and "━" in text  # the final frame was drawn


def test_display_shows_best_feasible_with_constraints(make_optimizer):
    from types import SimpleNamespace

    display = _display()
    bound = SimpleNamespace(key="size", threshold=0.5, sense="<=")
    result = make_optimizer("admm", max_evals=20, constraints=[bound],
                            listeners=[display]).run()
    line = display.lines()[1]
    assert line.startswith("best AUROC ") and "; best feasible (size <= 0.5): " in line
    inc = result.incumbent.observation
    if inc.constraints.get("size", 1.0) <= 0.5:
        assert line.endswith(f"AUROC {1.0 - inc.loss:.4f}")
    else:
        assert line.endswith("none yet")


def test_display_counts_failures_and_the_time_budget(make_optimizer, make_engine, fake_clock):
    """A time budget shows as elapsed/total; observations that are not ok count as failed."""
    from admm_automl.testing import synthetic_loss

    calls = []

    def sometimes_nan(config):
        calls.append(config)
        return float("nan") if len(calls) % 3 == 0 else synthetic_loss(config)

    engine = make_engine(loss=sometimes_nan, duration=2.0, clock=fake_clock)
    display = _display()
    result = make_optimizer("admm", engine=engine, max_evals=None, time_budget=50.0,
                            clock=fake_clock, listeners=[display]).run()
    head = display.lines()[0]
    failed = sum(not e.observation.ok for e in result.evaluated if not e.observation.cached)
    assert failed == len(calls) // 3 > 0
    assert head.endswith(f"/0:00:50 ({failed} failed)")
    assert f"{result.n_evals} evaluations, 0:00:" in head
    assert display.fraction() == pytest.approx(min(fake_clock.now / 50.0, 1.0))


@pytest.mark.parametrize("progress, verbose, terminal, wanted", [
    (None, 0, True, False),   # verbose=0: quiet
    (None, 1, True, True),    # verbose=1 in a terminal
    (None, 1, False, False),  # ... not when the output is not a terminal
    (True, 0, False, True),   # asked: shown anyway
    (False, 2, True, False),  # never
])
def test_when_the_display_is_wanted(progress, verbose, terminal, wanted):
    console = Console(file=io.StringIO(), force_terminal=terminal, force_jupyter=False)
    assert display_wanted(progress, verbose, console) is wanted


def test_in_a_notebook_only_with_ipywidgets():
    """rich draws into an ipywidgets output in Jupyter (and warns at every frame without it)."""
    import importlib.util

    console = Console(file=io.StringIO(), force_jupyter=True)
    has_widgets = importlib.util.find_spec("ipywidgets") is not None
    assert display_wanted(None, 1, console) is has_widgets
    assert display_wanted(None, 0, console) is False


def _wanted_in_child(queue):
    console = Console(file=io.StringIO(), force_terminal=True, force_jupyter=False)
    queue.put(display_wanted(True, 2, console))


def test_never_in_a_worker_process():
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_wanted_in_child, args=(queue,))
    child.start()
    child.join(60)
    assert queue.get(timeout=5) is False


def test_watching_restores_logging():
    logger = logging.getLogger("admm_automl")
    level, handlers = logger.level, list(logger.handlers)
    with watching(2, progress=False) as listeners:
        assert listeners == [] and logger.level == logging.DEBUG
        assert len(logger.handlers) == len(handlers) + 1
    assert logger.level == level and logger.handlers == handlers


def _fit(breast_cancer, **params):
    from admm_automl.testing import tiny_space

    X, y = breast_cancer
    space = tiny_space({"k_neighbors": {"class": "sklearn.neighbors.KNeighborsClassifier",
                                        "hyperparameters": {"n_neighbors": {
                                            "type": "int", "low": 1, "high": 30, "default": 5}}},
                        "gaussian_nb": {"class": "sklearn.naive_bayes.GaussianNB"}})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ADMM(search_space=space, theta_solver="random", z_solver="random",
                    max_evals=6, inner_iter=2, inner_iter_step=0, random_state=0,
                    **params).fit(X, y)


def test_verbose_2_logs_every_evaluation_and_1_every_iteration(breast_cancer, caplog):
    with caplog.at_level(logging.DEBUG, logger="admm_automl"):
        model = _fit(breast_cancer, verbose=2)
    lines = [r.getMessage() for r in caplog.records if r.name == "admm_automl.methods.driver"]
    evaluations = [m for m in lines if m.startswith("evaluation ")]
    assert len(evaluations) == model.n_evals_ == 6
    for eval_id, message in enumerate(evaluations):
        row = model.history_.iloc[eval_id]
        assert message.startswith(f"evaluation {eval_id} ({row['phase']}, iteration "
                                  f"{row['admm_iter']}): {row['pipeline']} at fidelity 1")
        assert f"loss {row['loss']:.5g}" in message
    iterations = [m for m in lines if m.startswith("ADMM iteration ")]
    assert len(iterations) == len(model.admm_trace_)
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="admm_automl"):
        _fit(breast_cancer, verbose=1)
    assert not [r for r in caplog.records if r.getMessage().startswith("evaluation ")]


def test_fit_with_progress_draws_the_display(breast_cancer, capsys):
    """progress=True draws even when standard error is not a terminal (it is pytest's capture)."""
    model = _fit(breast_cancer, progress=True)
    err = capsys.readouterr().err
    assert "of the budget" in err
    assert f"{model.n_evals_}/6 evaluations" in err and "stopped by max_evals" in err
    _fit(breast_cancer, verbose=1)  # not a terminal: no display
    assert "of the budget" not in capsys.readouterr().err


def test_the_display_says_what_the_run_does_before_and_after_the_search(make_optimizer):
    display = _display()
    display.stays = True  # as watching() makes it: up through the refit
    display.stage("preparing the data and the search space")
    assert display.lines() == ["preparing the data and the search space"]
    display.note("resumed: 3 evaluations of an earlier session replayed from the journal")
    make_optimizer("admm", max_evals=6, listeners=[display]).run()
    display.stage("refitting the best pipeline on all rows")
    lines = display.lines()
    assert lines[2] == "stopped by max_evals; refitting the best pipeline on all rows"
    assert lines[3].startswith("resumed: 3 evaluations")
    assert display._live is not None  # still drawn until watching() closes it
    display.close()


def test_fit_shows_its_stages_and_a_resumed_run_says_so(breast_cancer, capsys, tmp_path):
    _fit(breast_cancer, progress=True, output_dir=tmp_path)
    err = capsys.readouterr().err
    assert "preparing the data and the search space" in err
    assert "refitting the best pipeline on all rows" in err
    _fit(breast_cancer, progress=True, output_dir=tmp_path)
    assert "resumed: 6 evaluations of an earlier session replayed" in capsys.readouterr().err


def test_without_rich_verbose_logs_and_progress_true_says_how_to_install(breast_cancer,
                                                                          monkeypatch, caplog):
    import importlib.util

    from admm_automl.exceptions import MissingDependencyError

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "rich" else real(name, *a))
    with caplog.at_level(logging.INFO, logger="admm_automl"):
        model = _fit(breast_cancer, verbose=1)
    assert model.n_evals_ == 6 and "ADMM iteration 0" in caplog.text
    with pytest.raises(MissingDependencyError,
                       match=r"progress=True needs rich .* pip install 'admm-automl\[report\]'"):
        _fit(breast_cancer, progress=True)
