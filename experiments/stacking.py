"""The stack layer against the weighted ensemble, side by side on the same search.

Protocol: for each dataset (the shared binary ones, scikit-learn's digits (multiclass) and
diabetes (regression)) and seed s, a 70/30 split (seed s; stratified for classes; datasets above
``--rows`` rows subsampled to that many first, seed s) and the default estimator on the 70 %:
``max_evals`` evaluations (an evaluation budget, not a time budget, so that both arms see the
very same search), a ``trial_timeout``, one worker, ``random_state=s``, a run directory. The
first fit has ``stacking=True``; the second, ``stacking=False``, resumes the first's journal —
every evaluation and its kept validation predictions replayed, nothing evaluated again — so the
two differ only in what is built over the same members. Each model ``predict`` uses is scored on
the 30 % by the run's own loss (1 − AUROC for binary, log-loss for multiclass, RMSE for
regression), as is the best single pipeline.

Rule, written before the run: stacking stays **on by default** if, over the (dataset, seed) cells
where the two arms' test losses differ, the stack arm's is lower at least as often as it is
higher, *and* the mean paired difference (stack − weighted) of the binary cells' test 1 − AUROC is
≤ 0. Otherwise it is turned off by default (kept as an option).

Usage::

    python experiments/stacking.py run --data-dir ../shared/data --parallel 2
    python experiments/stacking.py table
    python experiments/stacking.py --smoke --data-dir ../shared/data   # CI: one tiny cell

Results: ``experiments/results/stacking/<dataset>-<seed>.json`` (a cell that has one is not run
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
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "experiments" / "results" / "stacking"
BUNDLED = ("digits", "diabetes")
SEEDS = (0, 1, 2)


def shared_datasets(data_dir: str | None) -> list[str]:
    from admm_automl.datasets import list_data_dir

    return sorted(list_data_dir(data_dir))


def load_cell(dataset: str, seed: int, data_dir: str | None, rows: int) -> tuple:
    """``(X_train, X_test, y_train, y_test, task)`` of the protocol's split."""
    from sklearn.model_selection import train_test_split

    from admm_automl.datasets import load_bundled, load_dataset

    X, y = load_bundled(dataset) if dataset in BUNDLED else load_dataset(dataset, data_dir)
    task = "regression" if dataset == "diabetes" else "classification"
    stratify = (lambda target: target) if task == "classification" else (lambda target: None)
    if len(y) > rows:
        X, _, y, _ = train_test_split(X, y, train_size=rows, random_state=seed,
                                      stratify=stratify(y))
    return (*train_test_split(X, y, test_size=0.3, random_state=seed, stratify=stratify(y)), task)


def test_loss(model, X, y, task: str) -> float:
    """The run's own loss on (X, y) of what ``model`` predicts with."""
    from sklearn.metrics import log_loss, mean_squared_error, roc_auc_score

    if task == "regression":
        return float(np.sqrt(mean_squared_error(y, model.predict(X))))
    proba = model.predict_proba(X)
    if proba.shape[1] == 2:
        return float(1 - roc_auc_score(y, proba[:, 1]))
    return float(log_loss(y, proba, labels=model.classes_))


def run_cell(dataset: str, seed: int, data_dir: str | None, evals: int, timeout: float,
             rows: int) -> dict:
    from admm_automl import ADMMClassifier, ADMMRegressor

    X, X_test, y, y_test, task = load_cell(dataset, seed, data_dir, rows)
    cls = ADMMClassifier if task == "classification" else ADMMRegressor
    out = {"dataset": dataset, "seed": seed, "task": task, "rows": len(y), "evals": evals}
    with tempfile.TemporaryDirectory() as run_dir:
        for arm, stacking in (("stack", True), ("weighted", False)):
            start = time.perf_counter()
            model = cls(max_evals=evals, trial_timeout=timeout, random_state=seed,
                        output_dir=run_dir, stacking=stacking).fit(X, y)
            out[arm] = {"test": test_loss(model, X_test, y_test, task),
                        "kind": model.ensemble_kind_, "valid": float(model.ensemble_loss_),
                        "members": len(model.ensemble_weights_),
                        "seconds": time.perf_counter() - start, "n_evals": int(model.n_evals_)}
        out["single"] = {"test": test_loss(model.best_pipeline_, X_test, y_test, task)
                         if task == "regression" or hasattr(model.best_pipeline_, "predict_proba")
                         else None, "valid": float(model.best_loss_)}
    out.update(machine=f"{platform.node()}, {os.cpu_count()} cores",
               date=time.strftime("%Y-%m-%d"))
    return out


def table(root: Path) -> str:
    cells = [json.loads(f.read_text()) for f in sorted(root.glob("*.json"))]
    if not cells:
        return f"no results in {root}"
    lines = ["| dataset | seed | task | stack chosen | test loss weighted | test loss stack "
             "| Δ (stack − weighted) | best single |", "|---|---|---|---|---|---|---|---|"]
    for c in cells:
        single = c["single"]["test"]
        lines.append(
            f"| {c['dataset']} | {c['seed']} | {c['task']} | "
            f"{'yes' if c['stack']['kind'] == 'stack' else 'no'} | {c['weighted']['test']:.4f} | "
            f"{c['stack']['test']:.4f} | {c['stack']['test'] - c['weighted']['test']:+.4f} | "
            f"{'—' if single is None else f'{single:.4f}'} |")
    diffs = np.array([c["stack"]["test"] - c["weighted"]["test"] for c in cells])
    binary = np.array([c["stack"]["test"] - c["weighted"]["test"] for c in cells
                       if c["task"] == "classification" and c["dataset"] != "digits"])
    wins, losses = int((diffs < 0).sum()), int((diffs > 0).sum())
    chosen = sum(c["stack"]["kind"] == "stack" for c in cells)
    mean_binary = float(binary.mean()) if len(binary) else 0.0
    on = wins >= losses and mean_binary <= 0
    lines += ["", f"{len(cells)} cells; the stack chosen in {chosen}. Where the arms differ: stack "
              f"lower in {wins}, higher in {losses}; mean Δ test 1 − AUROC over the "
              f"{len(binary)} binary cells {mean_binary:+.5f}. Rule (stack lower at least as "
              f"often as higher, binary mean Δ ≤ 0): **{'on' if on else 'off'} by default**."]
    if len(binary) and np.count_nonzero(binary) >= 2:
        from scipy.stats import wilcoxon

        lines.append(f"Paired Wilcoxon on the binary cells: p = "
                     f"{wilcoxon(binary[binary != 0]).pvalue:.3f}.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", nargs="?", default="run", choices=("run", "run-one", "table"))
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--datasets", nargs="+", help="default: every shared one, digits, diabetes")
    parser.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    parser.add_argument("--evals", type=int, default=40, help="evaluations per run")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per trial")
    parser.add_argument("--rows", type=int, default=10000, help="larger datasets subsampled")
    parser.add_argument("--root", type=Path, default=RESULTS)
    parser.add_argument("--parallel", type=int, default=1)
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--smoke", action="store_true", help="one tiny cell in a temporary folder")
    args = parser.parse_args(argv)
    if args.smoke:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            cell = run_cell("diabetes", 0, args.data_dir, 6, 10.0, args.rows)
            (root / "diabetes-0.json").write_text(json.dumps(cell))
            print(table(root))
        return
    if args.command == "run-one":
        (dataset,), (seed,) = args.datasets, args.seeds
        cell = run_cell(dataset, seed, args.data_dir, args.evals, args.timeout, args.rows)
        args.root.mkdir(parents=True, exist_ok=True)
        (args.root / f"{dataset}-{seed}.json").write_text(json.dumps(cell, indent=1))
        return
    if args.command == "run":
        from admm_automl.benchmarks.runner import run_processes

        datasets = args.datasets or [*shared_datasets(args.data_dir), *BUNDLED]
        commands = [[sys.executable, __file__, "run-one", "--datasets", d, "--seeds", str(s),
                     "--evals", str(args.evals), "--timeout", str(args.timeout),
                     "--rows", str(args.rows), "--root", str(args.root)]
                    + (["--data-dir", args.data_dir] if args.data_dir else [])
                    for s in args.seeds for d in datasets
                    if args.force or not (args.root / f"{d}-{s}.json").is_file()]
        print(f"{len(commands)} cells, {args.parallel} at a time, on {platform.node()} "
              f"(load {os.getloadavg()[0]:.1f}), results in {args.root}", flush=True)
        run_processes(commands, args.parallel)
    print(table(args.root))


if __name__ == "__main__":
    main()
