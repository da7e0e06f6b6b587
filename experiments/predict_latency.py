"""What the encoding of the category columns costs a fitted pipeline's ``predict``.

For each boosted learner of the default space (HistGradientBoosting, LightGBM, XGBoost,
CatBoost) the default space's initial pipeline of that learner is built twice through the
search's own trial set-up (:class:`~admm_automl.evaluation.trial.TrialContext`): with the
category columns as a numeric array of codes (``categories: ordinal``) and as pandas category
columns of codes that the learner splits itself (``categories: native``). Both are fitted on
the same ``--rows`` rows and read by the package's latency constraint
(:class:`~admm_automl.constraints.latency.PredictionLatency`: the median CPU seconds per row of
``--repeats`` single-threaded ``predict`` calls on a ``--batch``-row batch), with their
validation AUROC beside it. The ratio native / ordinal says what native categories cost.

Usage (from the project root; one core, nothing else running)::

    nice .venv/bin/python experiments/predict_latency.py --data-dir ../shared/data \
        --dataset bank_marketing
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from admm_automl.constraints.latency import PredictionLatency
from admm_automl.evaluation.data import make_preprocessor
from admm_automl.evaluation.metrics import get_metric
from admm_automl.evaluation.trial import TrialContext
from admm_automl.space import space_from_dict

LEARNERS = ("hist_gradient_boosting", "lightgbm", "xgboost", "catboost")
DEFAULT_SPACE = Path(__file__).resolve().parents[1] / "admm_automl/space/builtin/default.yaml"


def space_with(learner: str, categories: str):
    """The default space for classification, ``learner`` its only estimator, with its category
    columns encoded as ``categories`` says (CatBoost told their positions when native, XGBoost
    told to read the category dtype)."""
    spec = yaml.safe_load(DEFAULT_SPACE.read_text())
    for module in spec["modules"]:
        if module["name"] != "estimator":
            continue
        chosen = [copy.deepcopy(c) for c in module["choices"]
                  if c["name"] == learner and c.get("task", "classification") == "classification"]
        for choice in chosen:
            choice["categories"] = categories
            choice.pop("category_parameter", None)
            if categories == "native" and learner == "catboost":
                choice["category_parameter"] = "cat_features"
            if categories == "native" and learner == "xgboost":
                choice["hyperparameters"]["enable_categorical"] = {"type": "fixed", "value": True}
        module["choices"] = chosen
    spec.pop("initial", None)
    return space_from_dict(spec)


def measure(X, y, learner, categories, rows, batch, repeats):
    space = space_with(learner, categories)
    fit_rows, val_rows = np.arange(rows), np.arange(rows, rows + batch)
    ctx = TrialContext(space, X, y, [], get_metric(None, "classification", "binary"),
                       make_preprocessor(X))
    pipeline = ctx.pipeline(space.encoding.initial_z, space.encoding.initial_theta)
    pipeline.fit(X.iloc[fit_rows], y[fit_rows])
    Xv, yv = X.iloc[val_rows], y[val_rows]
    latency = PredictionLatency(batch_size=batch, repeats=repeats, warmup=2)
    seconds = latency.measure(pipeline, Xv, yv, np.arange(len(yv)))
    from sklearn.metrics import roc_auc_score

    return seconds, roc_auc_score(yv, pipeline.predict_proba(Xv)[:, 1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--dataset", default="bank_marketing")
    parser.add_argument("--rows", type=int, default=4500)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    frame = pd.read_csv(Path(args.data_dir) / f"{args.dataset}.csv.gz")
    frame = frame.sample(frac=1.0, random_state=args.seed).reset_index(drop=True)
    y = frame.pop("target").to_numpy()
    n_categories = frame.shape[1] - frame.select_dtypes("number").shape[1]
    print(f"{args.dataset}: {len(frame.columns)} columns ({n_categories} of text), fitted on "
          f"{args.rows} rows, predict on a {args.batch}-row batch, CPU seconds per row "
          f"(median of {args.repeats})\n")
    print("| learner | ordinal s/row | native s/row | native / ordinal | AUROC ordinal | "
          "AUROC native |")
    print("|---|---|---|---|---|---|")
    for learner in LEARNERS:
        if learner != "hist_gradient_boosting" and importlib.util.find_spec(learner) is None:
            print(f"| {learner} | not installed | | | | |")
            continue
        (o, auc_o), (n, auc_n) = (measure(frame, y, learner, c, args.rows, args.batch,
                                          args.repeats) for c in ("ordinal", "native"))
        print(f"| {learner} | {o:.2e} | {n:.2e} | {n / o:.1f} | {auc_o:.4f} | {auc_n:.4f} |")


if __name__ == "__main__":
    main()
