"""Command line: ``admm-automl list`` and ``admm-automl fit`` (outputs, files, and clear errors)."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import pickle
import re
import warnings

import numpy as np
import pytest
import yaml

from admm_automl import load_config
from admm_automl.cli import main
from admm_automl.methods.registry import METHODS
from admm_automl.solvers import THETA_SOLVERS, Z_SOLVERS
from admm_automl.journal import Journal
from admm_automl.records import Status

#: the run report needs matplotlib (the [report] extra); without it fit says so and goes on
HAS_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None

NUMBER = r"([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"


def _run(argv):
    """main(argv) with stdout/stderr captured (usable from module-scoped fixtures)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def _check_saved_model(out, stdout, ensemble):
    """The run directory's model.pkl is the estimator the CLI scored: loaded, on the test rows
    of the run's own split, it predicts with the ensemble (or the best pipeline) and gives the
    test score summary.json records; the last lines of the output name the file."""
    from admm_automl.cli import _split_data

    with open(out / "model.pkl", "rb") as fh:
        model = pickle.load(fh)
    assert (model.ensemble_ is not None) == ensemble
    config = load_config(out / "config.resolved.yaml")
    _, X_test, _, y_test = _split_data(config, model)
    used = model.ensemble_ if ensemble else model.best_pipeline_
    expected = used.predict(X_test)
    if model.task_ == "classification" and not np.array_equal(used.classes_, model.classes_):
        expected = model.classes_[expected]
    np.testing.assert_array_equal(model.predict(X_test), expected)
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert model.metric_score(X_test, y_test) == pytest.approx(summary["test_score"], abs=1e-12)
    what = "the ensemble" if ensemble else "the best pipeline"
    assert f"Saved model: {out / 'model.pkl'}, the fitted estimator that predicts with {what}" \
        in stdout
    assert "joblib.load(path)" in stdout.strip().splitlines()[-1]


# ----------------------------------------------------------------------------- list
def test_list(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "theta solvers:" in out and "z solvers:" in out
    methods = out.split("methods:\n")[1].split("theta solvers:")[0]
    assert [line.split()[0] for line in methods.splitlines()] == list(METHODS)
    for name in METHODS:
        assert f"  {name:<16} {METHODS[name].summary}\n" in methods
    for name in THETA_SOLVERS.names():
        assert re.search(rf"^  {name}\s+\S", out.split("z solvers:")[0], re.M), name
    for name in Z_SOLVERS.names():
        assert re.search(rf"^  {name}\s+\S", out.split("z solvers:")[1], re.M), name
    for name, count in (("paper_small", 108), ("paper_large", 6776), ("blds", 3072)):
        assert re.search(rf"^  {name}\s+{count} classification pipelines", out, re.M), name
    metrics = out.split("metrics:")[1]
    for metric in ("roc_auc", "accuracy", "log_loss", "rmse", "r2"):
        assert metric in metrics


# ----------------------------------------------------------------------------- fit on a bundled set
@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli_fit")
    code, stdout, stderr = _run(
        ["fit", "--dataset", "breast_cancer", "--max-evals", "8", "--seed", "0", "--cv", "holdout",
         "--output", out]
    )
    return code, stdout, stderr, out


@pytest.mark.slow
def test_fit_returns_zero_and_reports_scores(fitted):
    code, stdout, stderr, _ = fitted
    assert code == 0, stderr
    assert re.search(r"^Best (single )?pipeline: \w+( -> \w+)* \(evaluation \d+\)$", stdout, re.M)
    assert re.search(r"^  estimator: \w+\(", stdout, re.M)
    assert re.search(r"^Evaluations: 8 \(\d+ failed(, \d+ stopped at their time limit)?\), "
                     r"stopped by max_evals$", stdout, re.M)
    # which step and solver made the evaluations: the z-solver from the second one, then the
    # warm start's configurations θ could not hold (when the portfolio has them), then bo
    assert re.search(r"^Steps: 1 initial pipeline; \d+ z-steps by cmab \(from evaluation 2\); "
                     r"(\d+ θ-steps by warm start \(from evaluation \d+\); )?\d+ θ-steps by bo",
                     stdout, re.M)
    for label in ("Validation AUROC", "Test AUROC"):
        match = re.search(rf"^{label}: {NUMBER}( \(.*\))?$", stdout, re.M)
        assert match, label
        assert 0.0 <= float(match.group(1)) <= 1.0
        assert float(match.group(1)) > 0.8  # breast_cancer is easy; a broken metric would not be


def test_every_method_has_a_summary_line():
    """A method added to METHODS adds its one line for `admm-automl list`."""
    assert all(len(m.summary) < 200 and "\n" not in m.summary for m in METHODS.values())


@pytest.mark.slow
def test_fit_writes_the_report_and_says_where(fitted):
    code, stdout, _, out = fitted
    assert code == 0
    if not HAS_MATPLOTLIB:  # the bare core: the run succeeds and says how to get the report
        assert "Report: not written" in stdout and f"admm-automl report {out}" in stdout
        return
    assert f"Report: {out / 'report.html'} (Markdown: {out / 'report.md'})" in stdout
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "data:image/png;base64," in html and "Leaderboard" in html
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["steps"][1]["step"] == "z-steps" and summary["steps"][1]["solver"] == "cmab"
    assert "| steps | 1 initial pipeline; " in (out / "report.md").read_text(encoding="utf-8")
    assert re.search(rf"test AUROC \| {summary['test_score']:.4g} \|",
                     (out / "report.md").read_text(encoding="utf-8"))


@pytest.mark.slow
def test_report_command(fitted, tmp_path):
    _, _, _, out = fitted
    target = tmp_path / "again.html"
    code, stdout, stderr = _run(["report", out, "--output", target])
    if not HAS_MATPLOTLIB:  # the bare core: a run error that says what to install
        assert code == 1 and "pip install 'admm-automl[report]'" in stderr, stderr
        return
    assert code == 0, stderr
    assert stdout == f"Report: {target} (Markdown: {tmp_path / 'again.md'})\n"
    assert target.is_file() and (tmp_path / "again_files" / "convergence.png").is_file()


@pytest.mark.slow
def test_predict_command_predicts_with_the_saved_model(fitted, tmp_path, capsys):
    """`admm-automl predict RUN_DIR DATA.csv` gives what the run directory's model.pkl predicts:
    the columns it was fitted on are picked from the file (the target, an extra column and
    another order left out), to a file or to standard output."""
    import pandas as pd
    from sklearn.datasets import load_breast_cancer

    _, _, _, out = fitted
    data = load_breast_cancer(as_frame=True).frame.head(25)
    data["row_id"] = range(len(data))
    csv = tmp_path / "new.csv"
    data[list(data.columns[::-1])].to_csv(csv, index=False)
    with open(out / "model.pkl", "rb") as fh:
        expected = pickle.load(fh).predict(data.drop(columns=["target", "row_id"]))
    target = tmp_path / "predictions.csv"
    assert main(["predict", str(out), str(csv), "--output", str(target)]) == 0
    assert capsys.readouterr().out == (f"Predictions: {target} (25 rows, by "
                                       f"{out / 'model.pkl'})\n")
    written = pd.read_csv(target)
    assert list(written.columns) == ["prediction"]
    np.testing.assert_array_equal(written["prediction"], expected)
    assert main(["predict", str(out), str(csv)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["prediction"] + [str(v) for v in expected]


@pytest.mark.slow
def test_predict_command_errors_name_what_is_missing(fitted, tmp_path, capsys):
    _, _, _, out = fitted
    csv = tmp_path / "few.csv"
    csv.write_text("mean radius,mean texture\n1,2\n", encoding="utf-8")
    assert main(["predict", str(out), str(csv)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"admm-automl: error: {csv} lacks 28 of the columns the model was "
                          "fitted on: mean perimeter, ") and "\n" == err[-1]
    assert main(["predict", str(tmp_path), str(csv)]) == 2
    assert f"{tmp_path / 'model.pkl'} not found" in capsys.readouterr().err
    assert main(["predict", str(out), str(tmp_path / "none.csv")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_report_of_a_directory_that_is_not_a_run(capsys, tmp_path):
    err = _error(capsys, ["report", tmp_path])
    assert err == f"admm-automl: error: {str(tmp_path)!r} is not a run directory: it has no " \
                  f"journal.jsonl ({tmp_path / 'journal.jsonl'})\n"


def test_quiet_prints_nothing(tmp_path, capsys):
    out = tmp_path / "q"
    code = main(["fit", "--dataset", "iris", "--max-evals", "3", "--seed", "0", "--quiet",
                 "--output", str(out)])
    captured = capsys.readouterr()
    assert code == 0 and captured.out == "" and captured.err == ""
    assert (out / "report.html").is_file() == HAS_MATPLOTLIB
    assert load_config(out / "config.resolved.yaml").estimator["progress"] is False


def test_a_run_error_is_one_line_and_exit_code_1(tmp_path, capsys):
    """Every pipeline fails: a run error (1), said in one line, no traceback."""
    space = tmp_path / "failing.yaml"
    space.write_text(yaml.safe_dump({
        "name": "failing",
        "modules": [{"name": "estimator", "choices": [
            {"name": "fails", "class": "admm_automl.testing.estimators.RaisingClassifier"}]}],
    }), encoding="utf-8")
    code = main(["fit", "--dataset", "iris", "--search-space", str(space), "--max-evals", "2",
                 "--quiet"])
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith("admm-automl: error: All 1 evaluated pipelines failed")
    assert err.count("\n") == 1 and "Traceback" not in err
    assert main(["--traceback", "fit", "--dataset", "iris", "--search-space", str(space),
                 "--max-evals", "2", "--quiet"]) == 1
    assert "Traceback (most recent call last)" in capsys.readouterr().err


@pytest.mark.slow
def test_fit_writes_journal(fitted):
    _, _, _, out = fitted
    header, *lines = (out / "journal.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    # serial trials (auto with max_evals alone) run between a start mark and their record
    marks = [r for r in records if set(r) == {"started"}]
    records = [r for r in records if "eval_id" in r]
    assert len(records) == 8 and len(marks) in (0, 8)
    assert json.loads(header)["run"]["data"]["rows"] > 0  # the run header guards resume
    statuses = {s.value for s in Status}
    for record in records:
        assert record["status"] in statuses
        assert isinstance(record["loss"], (int, float))
        if record["status"] == "ok":
            assert 0.0 <= record["loss"] <= 1.0


@pytest.mark.slow
def test_fit_writes_loadable_resolved_config(fitted):
    _, _, _, out = fitted
    config = load_config(out / "config.resolved.yaml")
    assert config.estimator["max_evals"] == 8
    assert config.estimator["random_state"] == 0
    assert config.estimator["output_dir"] == str(out)
    assert config.data == {"dataset": "breast_cancer"}
    assert config.make_estimator().get_params()["max_evals"] == 8


@pytest.mark.slow
def test_fit_writes_a_plain_pipeline(fitted):
    from sklearn.datasets import load_breast_cancer
    from sklearn.pipeline import Pipeline

    _, stdout, _, out = fitted
    with open(out / "best_pipeline.pkl", "rb") as fh:
        pipe = pickle.load(fh)
    assert isinstance(pipe, Pipeline)
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    pred = pipe.predict(X.iloc[:50])
    assert pred.shape == (50,) and set(np.unique(pred)) <= {0, 1}
    assert (pred == y.iloc[:50].to_numpy()).mean() > 0.8
    # the printed pipeline is the pickled one, each step by its class and the parameters that
    # differ from its defaults (not its repr, which lists every default over many lines)
    from admm_automl.reporting.describe import describe

    assert f"  estimator: {pipe.steps[-1][1]}".split("(")[0] in stdout
    for name, step in pipe.steps:
        assert re.sub(r"\s+", " ", describe(step)) in re.sub(r"\s+", " ", stdout)
    steps = stdout.split("pipeline: ", 1)[1].split("\nEvaluations:")[0].splitlines()[1:]
    assert len(steps) >= len(pipe.steps) and all(len(line) <= 100 for line in steps), steps
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["n_evals"] == 8 and summary["metric"] == "roc_auc"


# ----------------------------------------------------------------------------- fit on a CSV
@pytest.fixture
def csv_path(tmp_path):
    """150 rows of breast_cancer (4 numeric columns with NaNs), a string column with NaNs, and
    a string target."""
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer(as_frame=True)
    frame = data.data.iloc[:150, :4].copy()
    rng = np.random.default_rng(0)
    frame["color"] = rng.choice(["red", "green", "blue"], size=150)
    frame.iloc[::7, 0] = np.nan
    frame.loc[frame.index[::11], "color"] = np.nan
    frame["label"] = np.where(data.target.iloc[:150] == 1, "benign", "malignant")
    path = tmp_path / "data.csv"
    frame.to_csv(path, index=False)
    return path


@pytest.mark.slow
def test_fit_csv(tmp_path, csv_path):
    out = tmp_path / "out"
    code, stdout, stderr = _run(
        ["fit", "--data", csv_path, "--target", "label", "--max-evals", "6", "--seed", "1", "--output", out]
    )
    assert code == 0, stderr
    match = re.search(rf"^Test AUROC: {NUMBER}$", stdout, re.M)
    assert match and 0.0 <= float(match.group(1)) <= 1.0
    assert len(Journal.read(out / "journal.jsonl")) == 6
    config = load_config(out / "config.resolved.yaml")
    assert config.data == {"csv": str(csv_path), "target": "label"}
    import pandas as pd

    with open(out / "best_pipeline.pkl", "rb") as fh:
        pipe = pickle.load(fh)
    X = pd.read_csv(csv_path).drop(columns="label")
    assert set(pipe.predict(X)) <= {"benign", "malignant"}
    # a text column makes the first step a column transformer: still no object reprs
    assert "ColumnTransformer(" in stdout
    assert "0x" not in stdout and " object at " not in stdout, stdout


@pytest.mark.slow
def test_fit_with_config_file(tmp_path, csv_path):
    """A config file supplies data and estimator; command-line flags override it."""
    path = tmp_path / "config.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "estimator": {"max_evals": 50, "random_state": 2, "inner_iter": 2},
                "data": {"csv": str(csv_path), "target": "label", "test_size": 0.3},
            }
        ),
        encoding="utf-8",
    )
    out = tmp_path / "out"
    code, stdout, stderr = _run(["fit", "--config", path, "--max-evals", "4", "--output", out])
    assert code == 0, stderr
    assert re.search(r"^Evaluations: 4 ", stdout, re.M)
    resolved = load_config(out / "config.resolved.yaml")
    assert resolved.estimator["max_evals"] == 4 and resolved.estimator["inner_iter"] == 2
    assert resolved.data["test_size"] == 0.3


# ----------------------------------------------------------------------------- errors
def _error(capsys, argv):
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    assert code == 2, captured
    assert captured.out == ""
    return captured.err


def test_unknown_dataset(capsys):
    err = _error(capsys, ["fit", "--dataset", "irs", "--max-evals", "2"])
    assert err.startswith("admm-automl: error: ")
    assert "Unknown dataset 'irs'. Did you mean 'iris'?" in err
    assert "'breast_cancer'" in err


def test_missing_target_column(capsys, csv_path):
    err = _error(capsys, ["fit", "--data", csv_path, "--target", "lable", "--max-evals", "2"])
    assert "target column 'lable' is not in" in err
    assert "Did you mean 'label'?" in err
    assert "'color'" in err and "'mean radius'" in err


def test_data_without_target(capsys, csv_path):
    err = _error(capsys, ["fit", "--data", csv_path, "--max-evals", "2"])
    assert "--data needs --target" in err


def test_missing_csv_file(capsys, tmp_path):
    err = _error(capsys, ["fit", "--data", tmp_path / "nope.csv", "--target", "y"])
    assert "nope.csv' does not exist" in err


def test_no_data(capsys):
    err = _error(capsys, ["fit", "--max-evals", "2"])
    assert "no data: give --dataset" in err


@pytest.mark.parametrize("flag, registry", [("--theta-solver", THETA_SOLVERS), ("--z-solver", Z_SOLVERS)])
def test_unknown_solver(capsys, flag, registry):
    err = _error(capsys, ["fit", "--dataset", "iris", flag, "randm", "--max-evals", "2"])
    assert f"Unknown {registry.kind} 'randm'. Did you mean 'random'?" in err
    listed = ", ".join(repr(n) for n in registry.names())
    assert f"Available: {listed}." in err


def test_negative_time_budget(capsys):
    err = _error(capsys, ["fit", "--dataset", "iris", "--time-budget", "-1"])
    assert "'time_budget' parameter of ADMM must be a positive number" in err
    assert "Got -1.0" in err


def test_zero_max_evals(capsys):
    err = _error(capsys, ["fit", "--dataset", "iris", "--max-evals", "0"])
    assert "'max_evals'" in err and "Got 0" in err


def test_unknown_search_space(capsys):
    err = _error(capsys, ["fit", "--dataset", "iris", "--search-space", "paper_smal", "--max-evals", "2"])
    assert "Unknown search space 'paper_smal'. Did you mean 'paper_small'?" in err


def test_config_with_unknown_key(capsys, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("estimator:\n  max_evalz: 3\n", encoding="utf-8")
    err = _error(capsys, ["fit", "--config", path, "--dataset", "iris"])
    assert f"{path}: estimator.max_evalz: unknown key. Did you mean 'max_evals'?" in err


def test_argparse_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as info:
        main(["fit", "--dataset", "iris", "--data", "x.csv"])
    assert info.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main(["fit", "--max-evals", "many"])
    assert info.value.code == 2
    assert "invalid int value: 'many'" in capsys.readouterr().err
    for bad, said in (("1.5", "1.5 is not a fraction in (0, 1)"), ("x", "'x' is not a number")):
        with pytest.raises(SystemExit) as info:
            main(["fit", "--dataset", "iris", "--test-size", bad])
        assert info.value.code == 2
        assert f"argument --test-size: {said}" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main(["fit", "--dataset", "iris", "--cv", "1"])
    assert info.value.code == 2
    assert "expected 'auto', 'holdout' or a number of folds >= 2, got '1'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main(["fit", "--dataset", "iris", "--quiet", "-v"])
    assert info.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_task_scoring_and_ensemble_size_options_reach_the_estimator(tmp_path):
    code, stdout, stderr = _run(["fit", "--dataset", "diabetes", "--max-evals", "3", "--seed",
                                 "0", "--task", "regression", "--scoring", "mae",
                                 "--ensemble-size", "0", "--output", str(tmp_path)])
    assert code == 0, stderr
    _check_saved_model(tmp_path, stdout, ensemble=False)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["task"] == "regression" and summary["metric"] == "mae"
    config = (tmp_path / "config.resolved.yaml").read_text()
    assert "ensemble_size: 0" in config and "scoring: mae" in config


def test_the_portfolio_option(tmp_path, capsys):
    out = tmp_path / "none"
    assert main(["fit", "--dataset", "breast_cancer", "--max-evals", "2", "--seed", "0", "-q",
                 "--portfolio", "none", "--output", str(out)]) == 0
    assert "portfolio: null" in (out / "config.resolved.yaml").read_text()
    assert main(["fit", "--dataset", "breast_cancer", "--max-evals", "2",
                 "--portfolio", str(tmp_path / "missing.yaml")]) == 2
    assert "portfolio file" in capsys.readouterr().err


def test_the_ensemble_predict_uses_is_shown_and_recorded(tmp_path, capsys):
    # a space file of fast learners of different kinds (the default space's boosted learners
    # took most of this test's time), without the portfolio: these 8 evaluations give an
    # ensemble of several members that beats the best single pipeline
    from admm_automl.testing.spaces import DIVERSE_LEARNERS

    space = tmp_path / "diverse.yaml"
    space.write_text(yaml.safe_dump({"name": "diverse", "modules": [
        {"name": "scaler", "choices": [{"name": "none"}, {
            "name": "standard", "class": "sklearn.preprocessing.StandardScaler"}]},
        {"name": "estimator", "choices": [{"name": k, **v} for k, v in DIVERSE_LEARNERS.items()]},
    ]}), encoding="utf-8")
    out = tmp_path / "run"
    assert main(["fit", "--dataset", "breast_cancer", "--max-evals", "8", "--seed", "0",
                 "--executor", "serial", "--cv", "holdout", "--portfolio", "none",
                 "--search-space", str(space), "--output", str(out)]) == 0
    stdout = capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    ensemble = summary["ensemble"]
    assert ensemble is not None and len(ensemble["members"]) >= 2
    assert sum(m["weight"] for m in ensemble["members"]) == pytest.approx(1.0)
    assert f"Model: an ensemble of {len(ensemble['members'])} pipelines" in stdout
    assert "Best single pipeline:" in stdout and "the test score below is the ensemble's" in stdout
    # the validation score beside the test score is of what predicts too: the ensemble's, with
    # the best single pipeline's after it
    shown = re.search(rf"^Model: an ensemble of \d+ pipelines \(validation AUROC {NUMBER}\)",
                      stdout, re.M).group(1)
    line = re.search(rf"^Validation AUROC: {NUMBER} \(the ensemble's; the best single "
                     rf"pipeline's {NUMBER}\)$", stdout, re.M)
    assert line and line.group(1) == shown
    assert float(line.group(2)) == pytest.approx(1 - summary["best_loss"], abs=1e-4)
    _check_saved_model(out, stdout, ensemble=True)
    if HAS_MATPLOTLIB:
        report = (out / "report.md").read_text()
        assert "model used by predict" in report and "an ensemble of" in report
    else:
        assert "Report: not written" in stdout and "admm-automl[report]" in stdout


# ----------------------------------------------------------------------------- fairness
@pytest.fixture
def unfair_csv(tmp_path):
    """600 rows whose labels differ by the column ``sex`` (about 88 % against 13 % positive),
    so no plain learner meets a demographic parity limit, and ranked by ``x`` within each group,
    so a mitigation can select equal shares of both; and a one-learner space."""
    import pandas as pd

    rng = np.random.default_rng(0)
    group, x = rng.integers(0, 2, 600), rng.normal(size=600)
    positive = 1.0 / (1.0 + np.exp(-3.0 * (x + 1.2 * (2 * group - 1))))
    frame = pd.DataFrame({"x": x, "noise": rng.normal(size=600),
                          "sex": np.where(group == 1, "m", "f"),
                          "label": np.where(rng.random(600) < positive, "yes", "no")})
    path = tmp_path / "unfair.csv"
    frame.to_csv(path, index=False)
    space = tmp_path / "linear.yaml"
    space.write_text(yaml.safe_dump({"name": "linear", "modules": [{"name": "estimator", "choices": [
        {"name": "logistic_regression", "class": "sklearn.linear_model.LogisticRegression"}]}]}),
        encoding="utf-8")
    return path, space


def test_group_by_makes_a_fairness_limit_work_from_the_command_line(tmp_path, unfair_csv):
    """``--constraint "demographic_parity_difference <= 0.2" --group-by sex`` (the labels'
    own difference is about 0.75): the limit compares the column's groups, the search reaches
    a mitigation, and the saved model keeps the parity on the run's own test rows."""
    import fairlearn.metrics as fm

    from admm_automl.cli import _split_data

    path, space = unfair_csv
    out = tmp_path / "out"
    code, stdout, stderr = _run([
        "fit", "--data", path, "--target", "label", "--search-space", space,
        "--theta-solver", "random", "--z-solver", "random", "--executor", "serial",
        "--max-evals", "6", "--seed", "0", "--cv", "holdout", "--ensemble-size", "0",
        "--constraint", "demographic_parity_difference <= 0.2", "--group-by", "sex",
        "--output", out])
    assert code == 0, stderr
    assert "Constraints met" in stdout and "demographic_parity_difference" in stdout, stdout
    config = load_config(out / "config.resolved.yaml")
    assert config.estimator["constraints"] == [{
        "name": "demographic_parity_difference", "threshold": 0.2, "sense": "<=",
        "group_by": "sex"}]
    with open(out / "model.pkl", "rb") as fh:
        model = pickle.load(fh)
    assert model.best_params_["mitigation"] != "none"
    _, X_test, _, y_test = _split_data(config, model)
    assert fm.demographic_parity_difference(y_test == "yes", y_test == "yes",
                                            sensitive_features=X_test["sex"]) > 0.6
    assert fm.demographic_parity_difference(y_test == "yes", model.predict(X_test) == "yes",
                                            sensitive_features=X_test["sex"]) <= 0.25


def test_group_by_needs_a_constraint_to_compare_the_groups(capsys, unfair_csv):
    path, _ = unfair_csv
    err = _error(capsys, ["fit", "--data", path, "--target", "label", "--max-evals", "2",
                          "--constraint", "latency <= 1", "--group-by", "sex"])
    assert "--group-by sex: no group-fairness constraint" in err
    err = _error(capsys, ["fit", "--data", path, "--target", "label", "--max-evals", "2",
                          "--constraint", "demographic_parity_difference <= 0.1"])
    assert "--group-by COLUMN" in err
    err = _error(capsys, ["fit", "--data", path, "--target", "label", "--max-evals", "2",
                          "--constraint", "demographic_parity_difference <= 0.1",
                          "--group-by", "gender"])
    assert "group_by column 'gender' is not in X" in err
