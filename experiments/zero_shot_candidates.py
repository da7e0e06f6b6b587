"""Published zero-shot portfolios translated into candidate configurations of the ``default``
space, for the greedy portfolio of ``experiments/portfolio.py`` (``--external``).

Our own candidates are the best configurations of short searches on the shared datasets, so a
portfolio learned from them alone can only recombine what those datasets rewarded. Two peers ship
configurations learned on far more data, and a candidate from them is kept only where it wins
leave-one-dataset-out like any other:

* **FLAML's zero-shot defaults** (Kayali and Wang, "Mining Robust Default Configurations for
  Resource-constrained AutoML", 2022; ``flaml.default``): per learner a portfolio of
  configurations mined on the AutoML benchmark, one of which FLAML picks from meta-features. Read
  from the installed FLAML's ``flaml/default/<learner>/<task>.json`` for the learners our space
  holds in FLAML's own parametrisation (``lgbm``, ``xgb_limitdepth``, ``rf``, ``extra_tree``);
  FLAML's leaf-wise ``xgboost`` (``max_leaves``, no depth) has no counterpart in our depth-limited
  XGBoost and is left out.
* **AutoGluon-Tabular's zero-shot portfolios** (learned by TabRepo, Salinas and Erickson 2024, on
  about 200 datasets): ``zeroshot_portfolio_2023.py`` (the portfolio of ``best_quality``) and
  ``zeroshot_portfolio_cpu_2025_12_18.py`` (``best_quality_v150``'s), their LightGBM, CatBoost,
  XGBoost, random forest and extra trees entries. The files are read with
  :func:`ast.literal_eval` from AutoGluon's installation (``--autogluon-site``: the
  ``site-packages`` of ``make autogluon``'s environment), so AutoGluon need not be importable here.
  The 2025 portfolio's ``GBM_PREP`` entries are left out: their hyperparameters were tuned together
  with generated features (arithmetic combinations, target encoding) this space does not make.
  An entry sets only what differs from AutoGluon's own defaults, which differ from the
  libraries' (:data:`AUTOGLUON_BASELINES`): its boosted models train up to 10 000 rounds with
  early stopping — the cap here too (``stopping`` makes the searched rounds a cap; CatBoost's
  range ends at 8 192) — at its learning rates, its forests 300 trees of at most 15 000 leaves.

A hyperparameter our space does not hold (AutoGluon's ``extra_trees`` for LightGBM, CatBoost's
``grow_policy``, a forest's ``min_samples_leaf``, ...) is dropped and named in the entry's
``dropped``; a value outside our range is clipped to it and named in ``clipped``. So a
translated candidate is the published one only as far as this space can say it — which is what
the leave-one-dataset-out measurement then judges. Configurations that translate to the same
one are kept once (the first source named). Caveat for that measurement: AutoGluon's portfolios
were learned on OpenML datasets, several of which (adult, electricity, kr-vs-kp, ...) are among
the shared ones, so for those a translated candidate is not strictly held out.

Usage::

    python experiments/zero_shot_candidates.py \\
        --autogluon-site .venv-autogluon/lib/python3.11/site-packages   # rewrites the YAML
"""

from __future__ import annotations

import argparse
import ast
import datetime
import json
import math
import sys
from pathlib import Path
from typing import Any

from admm_automl.space.configuration import choice_index
from admm_automl.space.hyperparameters import Int

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "experiments" / "portfolio_external.yaml"
SPACE = "default"
TASKS = ("classification", "regression")
#: AutoGluon's portfolio files and the preset that uses each
AUTOGLUON_FILES = {"zeroshot_portfolio_2023.py": "best_quality",
                   "zeroshot_portfolio_cpu_2025_12_18.py": "best_quality_v150"}
#: AutoGluon 1.6's own defaults under each entry (``get_param_baseline`` of its LightGBM, CatBoost
#: and XGBoost models: 10 000 rounds with early stopping and its learning rate; its forests'
#: ``_set_default_params``: 300 trees of at most 15 000 leaves); the rest are the libraries' own
AUTOGLUON_BASELINES = {"GBM": {"n_estimators": 10_000, "learning_rate": 0.05},
                       "CAT": {"iterations": 10_000, "learning_rate": 0.05},
                       "XGB": {"n_estimators": 10_000, "learning_rate": 0.1},
                       "RF": {"n_estimators": 300, "max_leaf_nodes": 15_000},
                       "XT": {"n_estimators": 300, "max_leaf_nodes": 15_000}}
#: FLAML's learner names -> ours (the learners whose parametrisation our space shares)
FLAML_LEARNERS = {"lgbm": "lightgbm", "xgb_limitdepth": "xgboost", "rf": "random_forest",
                  "extra_tree": "extra_trees"}
#: AutoGluon's model keys -> ours
AUTOGLUON_LEARNERS = {"GBM": "lightgbm", "CAT": "catboost", "XGB": "xgboost",
                      "RF": "random_forest", "XT": "extra_trees"}

#: per learner, the published name of a hyperparameter -> ours; a name not listed, or one the
#: task's variant of the learner does not hold, is dropped
RENAMES: dict[str, dict[str, str]] = {
    "lightgbm": {"n_estimators": "n_estimators", "num_leaves": "num_leaves",
                 "min_child_samples": "min_child_samples", "min_data_in_leaf": "min_child_samples",
                 "learning_rate": "learning_rate", "colsample_bytree": "colsample_bytree",
                 "feature_fraction": "colsample_bytree", "reg_alpha": "reg_alpha",
                 "lambda_l1": "reg_alpha", "reg_lambda": "reg_lambda", "lambda_l2": "reg_lambda",
                 "max_bin": "max_bin"},
    "xgboost": {name: name for name in ("n_estimators", "max_depth", "min_child_weight",
                                        "learning_rate", "subsample", "colsample_bylevel",
                                        "colsample_bytree", "reg_alpha", "reg_lambda")},
    "catboost": {name: name for name in ("iterations", "learning_rate", "depth", "l2_leaf_reg")},
    "random_forest": {"n_estimators": "n_estimators", "max_features": "max_features",
                      "max_leaves": "max_leaf_nodes", "max_leaf_nodes": "max_leaf_nodes",
                      "criterion": "criterion"},
}
RENAMES["extra_trees"] = RENAMES["random_forest"]
#: keys that carry no hyperparameter (bookkeeping of the source)
IGNORED = {"ag_args", "ag_args_ensemble", "ag_args_fit", "FLAML_sample_size"}


def translate(learner: str, params: dict[str, Any], task: str, space) -> dict[str, Any] | None:
    """One published configuration of ``learner`` (our name) as an entry ``{config, dropped,
    clipped}`` of ``space`` (the task's sub-space), or None when the learner is not in it."""
    module = next(m for m in space.modules if m.name == "estimator")
    choice = next((c for c in module.choices if c.name == learner), None)
    if choice is None:
        if any((m, n) == ("estimator", learner) for m, n, _ in space.skipped):
            choice_index(space, module, learner)  # raises, naming the package to install
        return None  # the task's space does not hold this learner
    ranges = {hp.name: hp for hp in choice.tunable}
    values: dict[str, Any] = {}
    dropped, clipped = [], []
    for name, value in params.items():
        if name in IGNORED:
            continue
        if name == "log_max_bin":  # FLAML tunes log2(max_bin + 1)
            name, value = "max_bin", 2 ** int(value) - 1
        if name == "max_features" and value is None:  # scikit-learn's None: every feature
            value = 1.0
        ours = RENAMES[learner].get(name, "")
        value, was_clipped = _in_range(ranges[ours], value) if ours in ranges else (None, False)
        if value is None:
            dropped.append(name)
            continue
        if was_clipped:
            clipped.append(name)
        values[ours] = value
    config = {"scaler": "none", "estimator": learner,
              **{f"estimator__{k}": v for k, v in values.items()}}
    z, theta = space.encode(config)
    return {"config": space.decode(z, space.encoding.project(theta)),
            "dropped": sorted(set(dropped)), "clipped": sorted(set(clipped))}


def _in_range(hp, value: Any) -> tuple[Any, bool]:
    """``value`` within the hyperparameter ``hp``'s range (clipped; whether it was), or None
    for a categorical value it does not offer or a name (``"sqrt"``) where it takes a number."""
    choices = getattr(hp, "choices", None)
    if choices is not None:
        return (value, False) if value in choices else (None, False)
    if isinstance(value, str):
        return None, False
    inside = min(max(value, hp.low), hp.high)
    if isinstance(hp, Int):
        inside = int(round(inside))
    return inside, not math.isclose(inside, value)


def flaml_entries(task: str) -> list[tuple[str, str, dict]]:
    """``(source, learner, params)`` of FLAML's zero-shot portfolios for ``task``."""
    import flaml

    root = Path(flaml.__file__).parent / "default"
    kind = "binary" if task == "classification" else "regression"
    out = []
    for theirs, ours in FLAML_LEARNERS.items():
        data = json.loads((root / theirs / f"{kind}.json").read_text())
        for i, entry in enumerate(data["portfolio"]):
            out.append((f"FLAML {flaml.__version__} default/{theirs}/{kind}.json #{i}", ours,
                        entry["hyperparameters"]))
    return out


def autogluon_entries(site: Path, task: str) -> list[tuple[str, str, dict]]:
    """``(source, learner, params)`` of AutoGluon's zero-shot portfolios for ``task``, in each
    file's order (its greedy order), on AutoGluon's own defaults (:data:`AUTOGLUON_BASELINES`)."""
    folder = site / "autogluon" / "tabular" / "configs" / "zeroshot"
    version = next(site.glob("autogluon[._]tabular-*.dist-info")).name[:-len(".dist-info")]
    version = version.split("-")[1]
    problems = {"binary", "multiclass"} if task == "classification" else {"regression"}
    out = []
    for file, preset in AUTOGLUON_FILES.items():
        tree = ast.parse((folder / file).read_text())
        (portfolio,) = [ast.literal_eval(node.value) for node in tree.body
                        if isinstance(node, ast.Assign)]
        for key, learner in AUTOGLUON_LEARNERS.items():
            for entry in portfolio.get(key, []):
                types = set(entry.get("ag_args", {}).get("problem_types", problems))
                if not types & problems:
                    continue
                suffix = entry.get("ag_args", {}).get("name_suffix", "")
                out.append((f"AutoGluon {version} {file} ({preset}) {key}{suffix}", learner,
                             {**AUTOGLUON_BASELINES[key], **entry}))
    return out


def candidates(task: str, autogluon_site: Path | None) -> list[dict]:
    """The translated entries for ``task`` (FLAML's, then AutoGluon's when its site is given),
    each ``{source, config, dropped, clipped}``, the same configuration kept once."""
    from admm_automl.space import load_space

    space = load_space(SPACE).for_task(task)
    sources = flaml_entries(task) + (autogluon_entries(autogluon_site, task)
                                     if autogluon_site is not None else [])
    out, seen = [], set()
    for source, learner, params in sources:
        entry = translate(learner, params, task, space)
        key = None if entry is None else json.dumps(entry["config"], sort_keys=True)
        if entry is not None and key not in seen:
            seen.add(key)
            out.append({"source": source, **entry})
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--autogluon-site", type=Path, default=None,
                        help="site-packages holding autogluon.tabular (without it: FLAML's only)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).parent))
    from portfolio import write_yaml  # experiments/portfolio.py, beside this script

    node = {"space": SPACE, "description": __doc__.split("\n\n")[0].replace("\n", " ")}
    counts = []
    for task in TASKS:
        node[task] = candidates(task, args.autogluon_site)
        counts.append(f"{len(node[task])} {task}")
    command = " ".join(["python experiments/zero_shot_candidates.py", *(argv or [])])
    write_yaml(args.out, node, f"generated by experiments/zero_shot_candidates.py on "
               f"{datetime.date.today()}: {command}\nDo not edit by hand; re-run the script.")
    print(f"wrote {', '.join(counts)} candidates to {args.out}")


if __name__ == "__main__":
    main(sys.argv[1:])
