"""What a threshold-optimized trial costs against the pipeline it wraps, and how well its
validation value of the fairness constraint foretells the refitted model's value on test rows.

The threshold optimizer (Hardt, Price and Srebro 2016, through fairlearn) chooses one threshold
per group on held-out scores. A cross-validated trial can take each fold's thresholds from the
other folds' validation scores ("peers", ``cv="folds"``: one fit of the learner a fold) or from
inner folds of each fold's training rows ("inner": four fits a fold, ``cv=3``; the default
until run B″ of experiments/README.md made it ``cv="folds"``).
Both are measured side by side, with the plain pipeline as the baseline, on the three fairness
tasks of ``constrained.py`` (the same rows, split and thresholds), for the portfolio's first
``--configs`` configurations — the pipelines the default's warm start post-processes first —
with the search's own trial set-up (5 folds, the constraint's 90 % bootstrap bound).

Per (task, seed, configuration): the trial's wall time (plain, peers, inner), the constraint's
value on validation (its point value) and whether its bound meets the threshold, and the value
of the refitted mitigated pipeline (fitted on all training rows, as the estimator refits it) on
the task's 25 % test rows.

Rules, written before the runs:

* cost — the median over (task, seed, configuration) of peers' time / plain's time is at most
  1.5 (issue's target; inner's median reported beside it);
* honesty — peers' validation point values are no further from the refitted model's test
  values than inner's (mean absolute difference at most inner's + 0.01), and peers calls
  feasible (bound within the threshold) a pipeline whose refit is over it on test in no more
  runs than inner does.

Usage (from the project root; one core)::

    nice .venv/bin/python experiments/mitigation_cost.py --data-dir ../shared/data
    .venv/bin/python experiments/mitigation_cost.py --smoke --data-dir ../shared/data
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import constrained  # noqa: E402

from admm_automl.constraints import ThresholdOptimizerClassifier, mitigated_starts  # noqa: E402
from admm_automl.evaluation import trial as trials  # noqa: E402
from admm_automl.records import POINT  # noqa: E402
from admm_automl.run.spaces import task_space  # noqa: E402
from admm_automl.run.task import prepare_task  # noqa: E402
from admm_automl.space.portfolio import kept_configs, portfolio_points, resolve_portfolio  # noqa: E402

TASKS = ("adult-dp-sex", "compas-eo-race", "german-dp-age")


def timed_trial(ctx, z, theta, peers: bool) -> tuple[float, dict]:
    """One trial of ``(z, θ)``; ``peers``: the threshold optimizer with ``cv="folds"`` (the
    other folds' scores, the default), else 3 inner folds."""
    defaults = ThresholdOptimizerClassifier.__init__.__kwdefaults__
    real = defaults["cv"]
    defaults["cv"] = "folds" if peers else 3
    try:
        start = time.perf_counter()
        result = trials.run_trial(ctx, z, theta, 1.0)
        return time.perf_counter() - start, result
    finally:
        defaults["cv"] = real


def run(task: str, seed: int, n_configs: int, data_dir: str, rows: int) -> list[dict]:
    thresholds = constrained.load_thresholds(constrained.THRESHOLDS_FILE, rows)[task]
    X, X_test, y, y_test = constrained.load_split(
        task, seed, data_dir, rows if constrained.TASKS[task].subsample else None)
    specs = constrained.constraint_specs(task, thresholds, confidence=True)
    space = task_space("default", "classification", len(y), specs, "auto")
    prepared = prepare_task(X, y, space=space, task="classification", target_type="binary",
                            scoring="roc_auc", cv=5, split_seed=seed, model_seed=seed,
                            constraints=specs, cache_size=0)
    ctx, (constraint,) = prepared.context, prepared.constraints
    configs = kept_configs(resolve_portfolio("auto", space, "classification"), space)
    out = []
    for config in configs[:n_configs]:
        (plain, mitigated) = portfolio_points(
            [config, *mitigated_starts([config], space)[:1]], space)
        row = {"task": task, "seed": seed, "learner": config["estimator"]}
        row["plain_s"], result = timed_trial(ctx, *plain, peers=True)
        for how in ("peers", "inner"):
            row[f"{how}_s"], result = timed_trial(ctx, *mitigated, peers=how == "peers")
            values = result["constraints"]
            row[f"{how}_ok"] = result["status"] == "ok"
            row[f"{how}_value"] = values.get(constraint.key + POINT, values.get(constraint.key))
            row[f"{how}_feasible"] = bool(values.get(constraint.key, np.inf)
                                          <= constraint.threshold)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = ctx.pipeline(*mitigated).fit(X, y)
        row["test_value"] = constrained.measure_on_test(task, thresholds, model, X_test,
                                                        y_test)[0][constraint.key]
        row["threshold"] = constraint.threshold
        print(json.dumps(row), flush=True)
        out.append(row)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default=str(constrained.DEFAULT_DATA_DIR))
    parser.add_argument("--tasks", nargs="+", default=list(TASKS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--configs", type=int, default=4)
    parser.add_argument("--rows", type=int, default=constrained.ROWS)
    parser.add_argument("--smoke", action="store_true",
                        help="german-dp-age, seed 0, the first configuration (seconds)")
    args = parser.parse_args()
    if args.smoke:
        args.tasks, args.seeds, args.configs = ["german-dp-age"], [0], 1
    rows = [r for task in args.tasks for seed in args.seeds
            for r in run(task, seed, args.configs, args.data_dir, args.rows)]
    done = [r for r in rows if r["peers_ok"] and r["inner_ok"]]
    print(f"\n{len(done)} of {len(rows)} (task, seed, configuration) with both trials ok\n")
    print("| task | learner | plain s | peers / plain | inner / plain | peers value | inner value "
          "| test value (refit) | threshold |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in done:
        print(f"| {r['task']} s{r['seed']} | {r['learner']} | {r['plain_s']:.2f} | "
              f"{r['peers_s'] / r['plain_s']:.2f} | {r['inner_s'] / r['plain_s']:.2f} | "
              f"{r['peers_value']:.3f}{'*' if r['peers_feasible'] else ''} | "
              f"{r['inner_value']:.3f}{'*' if r['inner_feasible'] else ''} | "
              f"{r['test_value']:.3f} | {r['threshold']:.3f} |")
    ratio = {h: float(np.median([r[f"{h}_s"] / r["plain_s"] for r in done]))
             for h in ("peers", "inner")}
    error = {h: float(np.mean([abs(r[f"{h}_value"] - r["test_value"]) for r in done]))
             for h in ("peers", "inner")}
    wrong = {h: sum(r[f"{h}_feasible"] and r["test_value"] > r["threshold"] for r in done)
             for h in ("peers", "inner")}
    print(f"\n(* = the bound meets the threshold)\nmedian time / plain: peers {ratio['peers']:.2f}, "
          f"inner {ratio['inner']:.2f} -> cost rule {'met' if ratio['peers'] <= 1.5 else 'NOT met'}")
    print(f"mean |validation - test|: peers {error['peers']:.4f}, inner {error['inner']:.4f}; "
          f"called feasible, over on test: peers {wrong['peers']}, inner {wrong['inner']} -> "
          f"honesty rule {'met' if error['peers'] <= error['inner'] + 0.01 and wrong['peers'] <= wrong['inner'] else 'NOT met'}")


if __name__ == "__main__":
    main()
