"""``experiments/portfolio.py`` learns the classification and the regression list in separate
runs; each run must rewrite only its own task's part of the package's portfolio and of the
held-out file, and keep the other task's list, header line and description line."""

from __future__ import annotations

import argparse
from pathlib import Path

import yaml


def _write(script, tmp_path: Path, task: str, datasets: list[str], candidate: dict) -> None:
    args = argparse.Namespace(task=task, datasets=datasets, max_rows=100, search_evals=4,
                              per_dataset=1, timeout=5.0, out=str(tmp_path / "default.yaml"),
                              lodo_out=str(tmp_path / "lodo.yaml"))
    lodo = {name: {"portfolio": [0], "portfolio_loss": 0.1, "default_loss": 0.2,
                   "portfolio_regret": 0.0, "default_regret": 0.5} for name in datasets}
    script.write_portfolios(args, ["--task", task], [candidate], [None], [0], lodo, 60.0)


def test_each_task_rewrites_only_its_own_part(tmp_path, load_script):
    script = load_script("portfolio")
    _write(script, tmp_path, "classification", ["a", "b"], {"estimator": "lr"})
    _write(script, tmp_path, "regression", ["r"], {"estimator": "ridge"})
    _write(script, tmp_path, "classification", ["a", "b"], {"estimator": "rf"})

    text = (tmp_path / "default.yaml").read_text()
    node = yaml.safe_load(text)
    assert node["classification"] == [{"estimator": "rf"}]
    assert node["regression"] == [{"estimator": "ridge"}]
    header = [line for line in text.splitlines() if line.startswith("# ")]
    assert [line.split(":")[0] for line in header[:2]] == ["# classification", "# regression"]
    assert "--task regression" in header[1]
    assert [line.split(":")[0] for line in node["description"].splitlines()] == [
        "classification", "regression"]

    lodo = yaml.safe_load((tmp_path / "lodo.yaml").read_text())
    assert lodo["datasets"]["a"]["classification"] == [{"estimator": "rf"}]
    assert lodo["datasets"]["r"]["regression"] == [{"estimator": "ridge"}]
    assert len(lodo["description"].splitlines()) == 2
