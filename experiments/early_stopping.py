"""Early stopping of boosted trials, side by side: the same configurations of the default space's
boosted learners evaluated with and without it, through the same engine.

Protocol: on each dataset a stratified 70/30 split (seed 0); the search's 70 % is split 80/20 into
training and validation rows (the run's holdout, seed 0). For each boosted learner of the default
space (HistGradientBoosting, LightGBM, XGBoost), ``--configs`` configurations are drawn uniformly
from its hyperparameter box (seed 0: the same ones for both arms), and each is evaluated twice by
the engine's trial in a worker process (one thread, a ``--timeout`` per trial): with the space's
``stopping`` (the searched rounds are a cap; the trial stops on its validation rows) and without
(the rounds as configured). Each arm's model is then refitted on all search rows — the rounds
early stopping kept, or the configured ones — and scored on the 30 %. AUROC throughout; losses
are 1 − AUROC. A timed-out trial counts its timeout as its time and is not refitted.

Rule, written before the run (the issue's target): early stopping is **met** if the mean trial
duration with it is at most half the mean without, over every (dataset, learner, configuration),
*and* its validation loss is not worse: the median paired difference (with − without) ≤ 0 and the
mean ≤ 0.001. The test loss is reported beside it, not part of the rule.

Usage::

    python experiments/early_stopping.py run --data-dir ../shared/data --parallel 2
    python experiments/early_stopping.py table
    python experiments/early_stopping.py --smoke --data-dir ../shared/data   # CI: one tiny cell

Results: ``experiments/results/early_stopping/<dataset>.json`` (a dataset that has one is not run
again unless ``--force``).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "experiments" / "results" / "early_stopping"
DATASETS = ("pc4", "sylvine", "phishing_websites", "bank8FM")
LEARNERS = ("hist_gradient_boosting", "lightgbm", "xgboost")


def run_dataset(dataset: str, data_dir: str | None, n_configs: int, timeout: float,
                learners: tuple[str, ...] = LEARNERS) -> dict:
    """Both arms on every learner of one dataset: one row per (learner, configuration)."""
    from sklearn.model_selection import train_test_split

    from admm_automl.datasets import load_dataset
    from admm_automl.evaluation.data import make_preprocessor
    from admm_automl.evaluation.metrics import get_metric
    from admm_automl.journal import observation_of
    from admm_automl.records import Request
    from admm_automl.run.executor import single_threaded_executor
    from admm_automl.run.setup import open_objective
    from admm_automl.run.task import prepare_task
    from admm_automl.space import load_space

    X, y = load_dataset(dataset, data_dir)
    X_s, X_t, y_s, y_t = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    stopped = load_space("default").for_task("classification")
    arms = {"stopping": stopped, "full": stopped.without_stopping()}
    metric = get_metric("roc_auc", "classification", "binary")
    rng = np.random.default_rng(0)
    names = stopped.encoding.choice_names[-1]
    draws = [(name, rng.random(stopped.encoding.theta_dim))
             for name in learners if name in names for _ in range(n_configs)]
    rows = [{"learner": name} for name, _ in draws]
    for arm, space in arms.items():
        task = prepare_task(X_s, y_s, space=space, task="classification", target_type="binary",
                            scoring="roc_auc", cv=None, split_seed=0, model_seed=0, cache_size=0)
        objective = open_objective(task.context, executor=single_threaded_executor("process"),
                                   worst_loss=task.worst_loss, trial_timeout=timeout)
        try:
            for row, (name, units) in zip(rows, draws):
                z, _ = space.encode({"scaler": "none", "estimator": name})
                theta = space.encoding.project(units)
                obs = objective([Request(z, theta)])[0]
                record = objective.journal.records[-1]
                row["config"] = record["config"]
                row[f"{arm}_seconds"] = timeout if obs.status.value == "timeout" else obs.duration
                row[f"{arm}_status"] = obs.status.value
                row[f"{arm}_valid"] = obs.loss
                row[f"{arm}_rounds"] = observation_of(record).refit_rounds
                row[f"{arm}_test"] = None
                if obs.ok:
                    pipeline = space.to_pipeline(z, theta, preprocessor=make_preprocessor(X_s),
                                                 random_state=0, rounds=row[f"{arm}_rounds"])
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        pipeline.fit(X_s, y_s)
                    row[f"{arm}_test"] = metric.loss(metric.make_scorer(), pipeline, X_t, y_t)
        finally:
            objective.close()
    return {"dataset": dataset, "configs": n_configs, "timeout": timeout, "rows": rows,
            "machine": f"{platform.node()}, {os.cpu_count()} cores",
            "date": time.strftime("%Y-%m-%d")}


def table(root: Path) -> str:
    """Per learner and over all: mean trial seconds of each arm and their ratio, the paired
    validation and test loss differences, and the rule's verdict."""
    rows = [dict(r, dataset=d["dataset"]) for f in sorted(root.glob("*.json"))
            for d in [json.loads(f.read_text())] for r in d["rows"]]
    if not rows:
        return f"no results in {root}"

    def line(label: str, group: list[dict]) -> str:
        with_s = np.mean([r["stopping_seconds"] for r in group])
        full_s = np.mean([r["full_seconds"] for r in group])
        dv = np.array([r["stopping_valid"] - r["full_valid"] for r in group])
        tests = [r["stopping_test"] - r["full_test"] for r in group
                 if r["stopping_test"] is not None and r["full_test"] is not None]
        cut = np.mean([r["stopping_rounds"] / r["config"][_cap(r)] for r in group
                       if r["stopping_rounds"]])
        timeouts = sum(r["full_status"] == "timeout" for r in group)
        return (f"| {label} | {len(group)} | {full_s:.2f} | {with_s:.2f} | {with_s / full_s:.2f} "
                f"| {cut:.2f} | {np.median(dv):+.4f} / {np.mean(dv):+.4f} "
                f"| {np.median(tests):+.4f} / {np.mean(tests):+.4f} | {timeouts} |")

    out = ["| learner | trials | s without | s with | ratio | rounds kept / cap "
           "| Δ valid loss median / mean | Δ test loss median / mean | timeouts without |",
           "|---|---|---|---|---|---|---|---|---|"]
    for learner in LEARNERS:
        group = [r for r in rows if r["learner"] == learner]
        if group:
            out.append(line(learner, group))
    out.append(line("all", rows))
    ratio = np.mean([r["stopping_seconds"] for r in rows]) / np.mean(
        [r["full_seconds"] for r in rows])
    dv = np.array([r["stopping_valid"] - r["full_valid"] for r in rows])
    met = ratio <= 0.5 and np.median(dv) <= 0 and np.mean(dv) <= 1e-3
    datasets = sorted({r["dataset"] for r in rows})
    out += ["", f"Datasets: {', '.join(datasets)}. Rule: time ratio ≤ 0.5 and validation loss "
            f"not worse (median Δ ≤ 0, mean Δ ≤ 0.001): **{'met' if met else 'not met'}** "
            f"(ratio {ratio:.2f}, median Δ {np.median(dv):+.4f}, mean Δ {np.mean(dv):+.4f})."]
    return "\n".join(out)


def _cap(row: dict) -> str:
    key = "max_iter" if row["learner"] == "hist_gradient_boosting" else "n_estimators"
    return f"estimator__{key}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", nargs="?", default="run", choices=("run", "run-one", "table"))
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--configs", type=int, default=8, help="configurations per learner")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per trial")
    parser.add_argument("--root", type=Path, default=RESULTS)
    parser.add_argument("--parallel", type=int, default=1)
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--smoke", action="store_true", help="one tiny cell in a temporary folder")
    args = parser.parse_args(argv)
    if args.smoke:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            result = run_dataset("fri_c2_1000_10", args.data_dir, 2, 20.0,
                                 ("hist_gradient_boosting",))
            (root / "fri_c2_1000_10.json").write_text(json.dumps(result))
            print(table(root))
        return
    if args.command == "run-one":
        (dataset,) = args.datasets
        result = run_dataset(dataset, args.data_dir, args.configs, args.timeout)
        args.root.mkdir(parents=True, exist_ok=True)
        (args.root / f"{dataset}.json").write_text(json.dumps(result, indent=1))
        return
    if args.command == "run":
        from admm_automl.benchmarks.runner import run_processes

        commands = [[sys.executable, __file__, "run-one", "--datasets", d, "--configs",
                     str(args.configs), "--timeout", str(args.timeout), "--root", str(args.root)]
                    + (["--data-dir", args.data_dir] if args.data_dir else [])
                    for d in args.datasets if args.force or not (args.root / f"{d}.json").is_file()]
        print(f"{len(commands)} datasets, {args.parallel} at a time, on {platform.node()} "
              f"(load {os.getloadavg()[0]:.1f}), results in {args.root}", flush=True)
        run_processes(commands, args.parallel)
    print(table(args.root))


if __name__ == "__main__":
    main()
