"""The ensemble's layers side by side on the same search: the stack layer against the weighted
ensemble (``--study stacking``), bagged members against members refitted on all rows
(``--study bagging``), the ensemble judged on held-out validation rows against the rows it
was chosen on (``--study check``), and bagged ensemble selection against one selection
(``--study bags``).

Protocol: for each dataset (the shared binary ones, scikit-learn's digits (multiclass) and
diabetes (regression)) and seed s, a 70/30 split (seed s; stratified for classes; datasets above
``--rows`` rows subsampled to that many first, seed s) and the default estimator on the 70 %:
``max_evals`` evaluations (an evaluation budget, not a time budget, so that both arms see the
very same search), a ``trial_timeout``, one worker, ``random_state=s``, a run directory. The
first fit has the first arm's setting; the second resumes the first's journal — every
evaluation and its kept validation predictions replayed, nothing evaluated again — with the
second arm's, so the two differ only in what is built over the same evaluations. Each model
``predict`` uses is scored on the 30 % by the run's own loss (1 − AUROC for binary, log-loss for
multiclass, RMSE for regression), as is the best single pipeline.

* ``stacking``: ``stacking=True`` against ``stacking=False`` (members refitted in both).
* ``bagging``: ``bagging=True`` against ``bagging=False`` (stacking on in both). A resumed run
  has no fold models of its earlier session, so the bagged arm must come first.
* ``check``: ``ensemble_check="held_out"`` against ``"in_sample"`` (bagging and stacking on in
  both; the resumed arm's bags are the same fold models fitted again). The table also prints
  each arm's median validation-to-test gap: the test loss of what predicts less its validation
  loss (the ensemble's pooled loss, or the best pipeline's).
* ``bags``: ``ensemble_bags=20`` (Caruana et al. 2004's bagged selection: 20 selections over
  random halves of the candidates, averaged) against ``ensemble_bags=1`` (bagging and stacking
  on in both; the validation-to-test gaps printed as for ``check``).

Rule, written before each study's run: the first arm's setting stays **on by default** if, over
the (dataset, seed) cells where the two arms' test losses differ, its test loss is lower at least
as often as it is higher, *and* the mean paired difference (first − second) of the binary cells'
test 1 − AUROC is ≤ 0. Otherwise it is turned off by default (kept as an option).

Usage::

    python experiments/ensemble_layers.py run --study stacking --data-dir ../shared/data --parallel 2
    python experiments/ensemble_layers.py table --study stacking
    python experiments/ensemble_layers.py --smoke --data-dir ../shared/data   # CI: one tiny cell

Results: ``experiments/results/<study>/<dataset>-<seed>.json`` (a cell that has one is not run
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
RESULTS = REPO / "experiments" / "results"
#: per study, its two arms (name, estimator settings); the first is fitted first
STUDIES = {
    "stacking": (("stack", {"stacking": True, "bagging": False}),
                 ("weighted", {"stacking": False, "bagging": False})),
    "bagging": (("bag", {"bagging": True}), ("refit", {"bagging": False})),
    "check": (("held_out", {"ensemble_check": "held_out"}),
              ("in_sample", {"ensemble_check": "in_sample"})),
    "bags": (("bags20", {"ensemble_bags": 20}), ("one", {"ensemble_bags": 1})),
}
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


def held_out_loss(model, X, y, task: str) -> float:
    """The run's own loss on (X, y) of what ``model`` predicts with."""
    from sklearn.metrics import log_loss, mean_squared_error, roc_auc_score

    if task == "regression":
        return float(np.sqrt(mean_squared_error(y, model.predict(X))))
    proba = model.predict_proba(X)
    if proba.shape[1] == 2:
        return float(1 - roc_auc_score(y, proba[:, 1]))
    return float(log_loss(y, proba, labels=model.classes_))


def run_cell(study: str, dataset: str, seed: int, data_dir: str | None, evals: int,
             timeout: float, rows: int) -> dict:
    from admm_automl import ADMMClassifier, ADMMRegressor

    X, X_test, y, y_test, task = load_cell(dataset, seed, data_dir, rows)
    cls = ADMMClassifier if task == "classification" else ADMMRegressor
    out = {"study": study, "dataset": dataset, "seed": seed, "task": task, "rows": len(y),
           "evals": evals, "arms": [arm for arm, _ in STUDIES[study]]}
    with tempfile.TemporaryDirectory() as run_dir:
        for arm, settings in STUDIES[study]:
            start = time.perf_counter()
            model = cls(max_evals=evals, trial_timeout=timeout, random_state=seed, n_jobs=1,
                        output_dir=run_dir, **settings).fit(X, y)
            out[arm] = {"test": held_out_loss(model, X_test, y_test, task),
                        "kind": model.ensemble_kind_, "valid": float(model.ensemble_loss_),
                        "valid_predicting": float(model.best_loss_ if model.ensemble_ is None
                                                  else model.ensemble_loss_),
                        "bags": sum(m["bag"] for m in (model.summary()["ensemble"] or {})
                                    .get("members", [])),
                        "members": len(model.ensemble_weights_),
                        "seconds": time.perf_counter() - start, "n_evals": int(model.n_evals_)}
        out["single"] = {"test": held_out_loss(model.best_pipeline_, X_test, y_test, task)
                         if task == "regression" or hasattr(model.best_pipeline_, "predict_proba")
                         else None, "valid": float(model.best_loss_)}
    out.update(machine=f"{platform.node()}, {os.cpu_count()} cores",
               date=time.strftime("%Y-%m-%d"))
    return out


def table(root: Path, study: str) -> str:
    """One row per cell and the study's rule (module docstring)."""
    cells = [json.loads(f.read_text()) for f in sorted(root.glob("*.json"))]
    if not cells:
        return f"no results in {root}"
    first, second = (arm for arm, _ in STUDIES[study])
    lines = [f"| dataset | seed | task | ensemble ({first} / {second}) | test loss {second} "
             f"| test loss {first} | Δ ({first} − {second}) | best single |",
             "|---|---|---|---|---|---|---|---|"]
    for c in cells:
        single = c["single"]["test"]
        lines.append(
            f"| {c['dataset']} | {c['seed']} | {c['task']} | {c[first]['kind'] or '—'} / "
            f"{c[second]['kind'] or '—'} | {c[second]['test']:.4f} | {c[first]['test']:.4f} | "
            f"{c[first]['test'] - c[second]['test']:+.4f} | "
            f"{'—' if single is None else f'{single:.4f}'} |")
    diffs = np.array([c[first]["test"] - c[second]["test"] for c in cells])
    binary = np.array([c[first]["test"] - c[second]["test"] for c in cells
                       if c["task"] == "classification" and c["dataset"] != "digits"])
    wins, losses = int((diffs < 0).sum()), int((diffs > 0).sum())
    mean_binary = float(binary.mean()) if len(binary) else 0.0
    on = wins >= losses and mean_binary <= 0
    lines += ["", f"{len(cells)} cells. Where the arms differ: {first} lower in {wins}, higher in "
              f"{losses}; mean Δ test 1 − AUROC over the {len(binary)} binary cells "
              f"{mean_binary:+.5f}. Rule ({first} lower at least as often as higher, binary mean "
              f"Δ ≤ 0): **{first} {'on' if on else 'off'} by default**."]
    gaps = {arm: [c[arm]["test"] - c[arm]["valid_predicting"] for c in cells
                  if "valid_predicting" in c[arm]] for arm in (first, second)}
    if all(gaps.values()):
        lines.append("Median validation-to-test gap (test loss − validation loss of what "
                     "predicts): " + ", ".join(f"{arm} {np.median(g):+.4f}"
                                               for arm, g in gaps.items()) + ".")
    members = {arm: [c[arm]["members"] for c in cells if "members" in c[arm]]
               for arm in (first, second)}
    if all(members.values()):
        lines.append("Members per ensemble (median, none counted as 0): " + ", ".join(
            f"{arm} {np.median(m):g}" for arm, m in members.items()) + ".")
    if np.count_nonzero(binary) >= 2:
        from scipy.stats import wilcoxon

        lines.append(f"Paired Wilcoxon on the binary cells: p = "
                     f"{wilcoxon(binary[binary != 0]).pvalue:.3f}.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", nargs="?", default="run", choices=("run", "run-one", "table"))
    parser.add_argument("--study", choices=sorted(STUDIES), default="stacking")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--datasets", nargs="+", help="default: every shared one, digits, diabetes")
    parser.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    parser.add_argument("--evals", type=int, default=40, help="evaluations per run")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per trial")
    parser.add_argument("--rows", type=int, default=10000, help="larger datasets subsampled")
    parser.add_argument("--root", type=Path, default=None, help="default: results/<study>")
    parser.add_argument("--parallel", type=int, default=1)
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--smoke", action="store_true", help="one tiny cell in a temporary folder")
    args = parser.parse_args(argv)
    args.root = args.root or RESULTS / args.study
    if args.smoke:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            cell = run_cell(args.study, "diabetes", 0, args.data_dir, 6, 10.0, args.rows)
            (root / "diabetes-0.json").write_text(json.dumps(cell))
            print(table(root, args.study))
        return
    if args.command == "run-one":
        (dataset,), (seed,) = args.datasets, args.seeds
        cell = run_cell(args.study, dataset, seed, args.data_dir, args.evals, args.timeout,
                        args.rows)
        args.root.mkdir(parents=True, exist_ok=True)
        (args.root / f"{dataset}-{seed}.json").write_text(json.dumps(cell, indent=1))
        return
    if args.command == "run":
        from admm_automl.benchmarks.runner import run_processes

        datasets = args.datasets or [*shared_datasets(args.data_dir), *BUNDLED]
        commands = [[sys.executable, __file__, "run-one", "--study", args.study,
                     "--datasets", d, "--seeds", str(s),
                     "--evals", str(args.evals), "--timeout", str(args.timeout),
                     "--rows", str(args.rows), "--root", str(args.root)]
                    + (["--data-dir", args.data_dir] if args.data_dir else [])
                    for s in args.seeds for d in datasets
                    if args.force or not (args.root / f"{d}-{s}.json").is_file()]
        print(f"{len(commands)} cells, {args.parallel} at a time, on {platform.node()} "
              f"(load {os.getloadavg()[0]:.1f}), results in {args.root}", flush=True)
        run_processes(commands, args.parallel)
    print(table(args.root, args.study))


if __name__ == "__main__":
    main()
