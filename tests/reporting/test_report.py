"""The run directory, the plots and the HTML/Markdown report, from a real small run.

The run: ADMM with random solvers on 300 rows of breast-cancer data, over a space whose estimators
include one that always raises (real failures), a k-NN and a decision tree (integer
hyperparameters, so the ADMM coupling has something to couple), under a model-size bound that some pipelines break.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("matplotlib")

from admm_automl import ADMM  # noqa: E402
from admm_automl.exceptions import InvalidParameterError, MissingDependencyError  # noqa: E402
from admm_automl.reporting.plots import modules  # noqa: E402
from admm_automl.reporting.report import failures, leaderboard, write_report  # noqa: E402
from admm_automl.reporting.rundir import read_run  # noqa: E402
from admm_automl.testing import tiny_space  # noqa: E402

SPACE = tiny_space({
    "k_neighbors": {"class": "sklearn.neighbors.KNeighborsClassifier",
                    "hyperparameters": {"n_neighbors": {"type": "int", "low": 1, "high": 30,
                                                        "default": 5}}},
    "decision_tree": {"class": "sklearn.tree.DecisionTreeClassifier",
                      "hyperparameters": {
                          "max_depth": {"type": "int", "low": 1, "high": 10, "default": 5},
                          "min_samples_leaf": {"type": "int", "low": 1, "high": 20, "default": 1},
                      }},
    "always_fails": {"class": "admm_automl.testing.estimators.RaisingClassifier"},
}, name="report_test")
FIGURES = ("convergence", "algorithms", "constraints", "multipliers", "residuals")
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def run(tmp_path_factory, breast_cancer):
    """A fitted model whose output_dir holds the run files."""
    import matplotlib

    matplotlib.use("Agg")
    out = tmp_path_factory.mktemp("run")
    X, y = breast_cancer
    model = ADMM(search_space=SPACE, theta_solver="random", z_solver="random", max_evals=18,
                 inner_iter=3, inner_iter_step=0, random_state=0, output_dir=out,
                 constraints=["model_size <= 4000"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y)
    return model, out


@pytest.fixture(scope="module")
def reports(run, tmp_path_factory):
    """``(html from the model, html from the run directory)``, rendered once for the module."""
    model, out = run
    return model.report(tmp_path_factory.mktemp("report") / "r.html"), write_report(out)


def test_the_run_directory_holds_what_the_report_needs(run):
    model, out = run
    for name in ("journal.jsonl", "trace.csv", "summary.json", "config.resolved.yaml",
                 "best_pipeline.pkl"):
        assert (out / name).is_file(), name
    data = read_run(out)
    pd.testing.assert_frame_equal(data.history, model.history_, check_like=True)
    pd.testing.assert_frame_equal(data.trace, model.admm_trace_, check_dtype=False)
    s = data.summary
    assert s["best_eval_id"] == model.best_eval_id_ and s["n_evals"] == model.n_evals_ == 18
    assert s["n_failed"] == model.n_failed_ > 0
    assert s["validation_score"] == pytest.approx(model.best_score_)
    size = model.history_.set_index("eval_id").loc[model.best_eval_id_, "constraint:model_size"]
    refitted = model.deployed_constraints_["model_size"]
    assert s["deployed_constraints"] == {"model_size": refitted} and refitted <= 4000
    assert s["constraints"] == [{"key": "model_size", "sense": "<=", "threshold": 4000.0,
                                 "text": "model_size <= 4000",
                                 "validation": f"model_size <= 4000: {refitted:.4g} refitted "
                                               f"({size:.4g} in the search), met"}]
    assert s["constraint_mode"] == "admm" and s["machine"]["cores"] >= 1
    assert (s["search_space"], s["theta_solver"], s["z_solver"], s["max_evals"]) == (
        "report_test", "random", "random", 18)
    # model.summary() is what summary.json holds (less the time it was written)
    live = json.loads(json.dumps(model.summary(), default=str))
    assert {k: v for k, v in live.items() if k != "finished"} == {
        k: v for k, v in s.items() if k != "finished"}
    assert modules(out) == modules(model) == ["scaler", "estimator"]  # in the pipeline's order
    # a space object cannot be loaded back from YAML: the file says so and keeps its repr
    text = (out / "config.resolved.yaml").read_text()
    assert text.startswith("# not loadable as a configuration:")
    assert data.config["estimator"]["max_evals"] == 18


def test_report_content_matches_history(run, reports):
    model, _ = run
    html_path = reports[0]
    tmp_path = html_path.parent
    html = html_path.read_text(encoding="utf-8")
    images = re.findall(r"src='data:image/png;base64,([^']+)'", html)
    assert len(images) == len(FIGURES)
    assert all(base64.b64decode(data).startswith(PNG) for data in images)
    md = (tmp_path / "r.md").read_text(encoding="utf-8")
    for name in FIGURES:
        assert f"](r_files/{name}.png)" in md
        assert (tmp_path / "r_files" / f"{name}.png").read_bytes().startswith(PNG)
    # the numbers are those of history_
    h = model.history_
    assert f"| validation AUROC | {model.best_score_:.4g} |" in md
    assert "| constraints, on the validation data | model_size <= 4000: " in md  # as the CLI
    assert f"{model.n_evals_} ({model.n_failed_} failed), stopped by max_evals" in html
    board = leaderboard(model)
    assert board.iloc[0]["eval_id"] == model.best_eval_id_
    rows = h.set_index("eval_id").loc[board["eval_id"]]
    np.testing.assert_allclose(board["loss"], rows["loss"])
    np.testing.assert_allclose(board["score"], 1.0 - rows["loss"])
    np.testing.assert_allclose(board["model_size" if "model_size" in board else
                                     "constraint:model_size"], rows["constraint:model_size"])
    assert list(board["feasible"]) == sorted(board["feasible"], reverse=True)  # feasible first
    # the estimator's own leaderboard(), with each pipeline's share of the ensemble
    assert model.leaderboard(n=len(board)).drop(columns="hyperparameters").equals(
        board.drop(columns="hyperparameters"))
    # this run keeps no ensemble (tests/run/test_default.py checks the shares of one that does)
    assert model.ensemble_weights_ == {} and not board["ensemble_weight"].any()
    first = re.search(r"^\| 1 \| (\d+) \| ([^|]+) \| ([0-9.e-]+) \|", md, re.M)
    assert first and int(first.group(1)) == model.best_eval_id_
    assert float(first.group(3)) == pytest.approx(model.best_loss_, rel=1e-3)
    # every successful evaluation in one table the page sorts by a click (the leaderboard's order)
    ok = int((h["status"] == "ok").sum())
    table = re.search(r"<table class='sortable'>(.*?)</table>", html, re.S)
    assert table and table.group(1).count("<tr>") == ok + 1  # the header and one row each
    assert "<script>" in html and "table.sortable th" in html
    assert f"## Every successful evaluation ({ok})" in md
    # failures with their error text
    bad = failures(model)
    assert bad["count"].sum() == (h["status"] != "ok").sum() == model.n_failed_
    assert "this estimator always fails" in html
    assert f"## Failures ({model.n_failed_})" in md


def test_report_from_the_run_directory_equals_the_report_from_the_model(run, reports):
    _, out = run
    assert reports[1] == out / "report.html" and (out / "report.md").is_file()
    html = reports[1].read_text(encoding="utf-8")
    assert "What the losses depend on" in html and "fingerprint" in html  # the journal header
    md_dir = (out / "report.md").read_text(encoding="utf-8")
    md_model = reports[0].with_suffix(".md").read_text("utf-8")
    board = lambda md: md[md.index("## Leaderboard"):md.index("## Failures")]  # noqa: E731
    assert board(md_dir) == board(md_model)


def test_a_stopped_run_reports_what_its_journal_holds(run, tmp_path):
    """A run directory with only the journal (the run was killed) still gives a report."""
    _, out = run
    shutil.copy(out / "journal.jsonl", tmp_path / "journal.jsonl")
    md = write_report(tmp_path).with_suffix(".md").read_text(encoding="utf-8")
    assert "did not finish (no summary.json)" in md
    assert "## Convergence" in md and "## ADMM" not in md  # no trace, no ADMM figure


def test_not_a_run_directory(tmp_path):
    with pytest.raises(InvalidParameterError, match="is not a run directory: it has no journal"):
        write_report(tmp_path)
    with pytest.raises(InvalidParameterError, match="an .html file"):
        write_report(tmp_path, tmp_path / "x.pdf")


def test_plot_helpers_return_axes_with_the_run_data(run):
    import matplotlib.pyplot as plt

    model, _ = run
    h = model.history_
    ax = model.plot_convergence(x="evaluations")
    lines = {line.get_label(): line for line in ax.get_lines()}
    ok = (h["status"] == "ok") & h["feasible"]
    expected = np.minimum.accumulate(np.where(ok, h["loss"], np.inf))
    expected[np.isinf(expected)] = np.nan  # no line before the first feasible evaluation
    np.testing.assert_allclose(lines["best feasible"].get_ydata(), expected)
    np.testing.assert_allclose(lines["best feasible"].get_xdata(), np.arange(1, len(h) + 1))
    assert ax.get_ylabel() == "loss (1 − AUROC)"
    # failures (loss 1.0) are drawn in a band above the successful losses, not at 1.0
    dots = {c.get_label(): c.get_offsets()[:, 1] for c in ax.collections}
    worst_ok = h.loc[h["status"] == "ok", "loss"].max()
    assert (dots["failed (drawn above the rest)"] > worst_ok).all()
    assert ax.get_ylim()[1] < h.loc[h["status"] != "ok", "loss"].min()

    axes = model.plot_algorithms()
    assert [a.get_title() for a in axes] == ["scaler", "estimator"]
    labels = [t.get_text() for t in axes[1].get_yticklabels()]
    n_bad = int((h["param:estimator"] == "always_fails").sum())
    assert f"always_fails ({n_bad}, {n_bad} failed)" in labels

    (ax,) = model.plot_constraints()
    threshold = [line for line in ax.get_lines() if line.get_label().startswith("threshold")]
    assert threshold and threshold[0].get_ydata()[0] == 4000

    t = model.admm_trace_
    np.testing.assert_allclose(model.plot_multipliers().get_lines()[0].get_ydata(),
                               t["mu:model_size"])
    residual = {line.get_label(): line.get_ydata() for line in model.plot_residuals().get_lines()}
    np.testing.assert_allclose(residual["‖θ̃d − δ‖"], t["primal_residual"])
    np.testing.assert_allclose(residual["‖λ‖"], t["lambda_norm"])
    # the axes of a figure of one's own
    fig, mine = plt.subplots(1, 2)
    assert list(model.plot_algorithms(ax=mine)) == list(mine)
    with pytest.raises(InvalidParameterError, match="needs 2 axes, got 1"):
        model.plot_algorithms(ax=mine[0])
    plt.close("all")


def test_one_admm_iteration_gives_its_values_not_single_dots(breast_cancer, tmp_path):
    X, y = breast_cancer
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = ADMM(search_space=SPACE, theta_solver="random", z_solver="random", max_evals=4,
                     inner_iter=16, random_state=0, constraints=["model_size <= 4000"]).fit(X, y)
    assert len(model.admm_trace_) == 1
    md = write_report(model, tmp_path / "r.html").with_suffix(".md").read_text()
    assert "One ADMM iteration: ‖λ‖ = " in md and ", μ model_size = " in md
    assert "residuals.png" not in md and "multipliers.png" not in md
    assert "Feasible pipelines first, by validation loss, then the others by how far" in md


def test_method_without_split_has_no_admm_figures(breast_cancer):
    X, y = breast_cancer
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = ADMM(search_space=SPACE, method="select", z_solver="random", max_evals=4,
                     random_state=0).fit(X, y)
    with pytest.raises(InvalidParameterError, match="only the ADMM method has them"):
        model.plot_residuals()
    with pytest.raises(InvalidParameterError, match="no constraints"):
        model.plot_constraints()


def test_without_matplotlib_a_clear_error(run, monkeypatch, tmp_path):
    model, _ = run
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # what an absent package imports as
    with pytest.raises(MissingDependencyError, match=r"pip install 'admm-automl\[report\]'"):
        model.report(tmp_path)
    with pytest.raises(MissingDependencyError, match="need matplotlib"):
        model.plot_convergence()


# ----------------------------------------------------------------------------- as a person sees it
def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(_chromium() is None, reason="Chromium is not installed (make chromium "
                    "installs Debian's package): the screenshot check of the HTML report is skipped")
def test_report_screenshot_in_headless_chromium(reports, tmp_path):
    """Chromium renders the report: its figures are drawn (the blue of the evaluations shows on
    the page) and the page is not blank."""
    import matplotlib.image as mpimg

    html = reports[0]
    shot = tmp_path / "shot.png"
    subprocess.run(
        [_chromium(), "--headless", "--no-sandbox", "--disable-gpu",
         "--disable-background-networking", "--no-first-run",
         f"--user-data-dir={tmp_path / 'profile'}", "--hide-scrollbars",
         "--window-size=1280,2400", f"--screenshot={shot}", html.as_uri()],
        check=True, capture_output=True, timeout=120,
    )
    image = mpimg.imread(shot)[..., :3]
    assert image.shape[:2] == (2400, 1280)
    assert image.std() > 0.05  # not a blank page
    dark = (image.mean(axis=2) < 0.3).mean()
    assert 0.001 < dark < 0.5  # text, axes and tables, on a light page
    blue = np.abs(image - np.array([0x4C, 0x72, 0xB0]) / 255).max(axis=2) < 0.08
    assert blue.sum() > 200, "the embedded figures were not drawn"


def test_the_report_of_a_run_killed_before_its_first_evaluation(tmp_path, capsys):
    """A run directory with the journal's header (and a serial trial's start mark) but no
    evaluation: the report says there is none yet (it used to end with a bare KeyError)."""
    from admm_automl.cli import main
    from admm_automl.journal import Journal

    Journal(tmp_path / "journal.jsonl", {"metric": "roc_auc", "package_version": "0"}).close()
    with open(tmp_path / "journal.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"started": {"key": "k", "z": [0], "theta": [], "fidelity": 1.0,
                                         "iterations": None}}) + "\n")
    (tmp_path / ".lock").touch()
    assert main(["report", str(tmp_path)]) == 0, capsys.readouterr().err
    text = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "| evaluations | none yet: the run stopped before its first evaluation was recorded" \
        in text
    assert '"metric": "roc_auc"' in text  # what the run is, for when it resumes


def _lines_outside_code_blocks(markdown: str) -> list[str]:
    """The lines of ``markdown`` a CommonMark reader shows as text (outside fenced blocks)."""
    outside, fence = [], None
    for line in markdown.splitlines():
        run_ = re.fullmatch(r"(`{3,})\s*", line)
        if fence is None and line.startswith("```"):
            fence = re.match(r"`+", line).group()
        elif fence is not None and run_ and len(run_.group(1)) >= len(fence):
            fence = None
        elif fence is None:
            outside.append(line)
    return outside


def test_an_error_text_holding_a_fence_stays_inside_its_code_block(breast_cancer, tmp_path):
    message = "the estimator said:\n```\n# not a heading of the report\n```\nand stopped"
    space = tiny_space({"gnb": {"class": "sklearn.naive_bayes.GaussianNB"},
                        "fails": {"class": "admm_automl.testing.estimators.RaisingClassifier",
                                  "hyperparameters": {"message": {"type": "fixed",
                                                                  "value": message}}}})
    X, y = breast_cancer
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ADMM(search_space=space, theta_solver="random", z_solver="random", max_evals=6,
             inner_iter=3, inner_iter_step=0, random_state=0, executor="serial", cv=None,
             output_dir=tmp_path).fit(X, y)
    text = write_report(tmp_path).with_suffix(".md").read_text(encoding="utf-8")
    assert "# not a heading of the report" in text  # the failure is reported ...
    outside = _lines_outside_code_blocks(text)
    assert "# not a heading of the report" not in outside  # ... inside its block
    assert "and stopped" not in outside
