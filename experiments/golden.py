"""Golden histories: record what a set of seeded, serial, evaluation-budgeted searches do, and
compare a later tree against the record.

A behaviour-preserving change (a refactor, a move of modules) must leave every search's history,
its chosen pipeline and its predictions exactly as they were: same seed + evaluation budget +
serial executor = same history and model. Record before the change, compare after each step::

    python experiments/golden.py record /tmp/golden-before
    ... change the code ...
    python experiments/golden.py compare /tmp/golden-before

The record is a JSON file per case (losses, statuses, pipelines, parameters, the ADMM trace
without times, the best parameters and a digest of the predictions). Times are left out: they
are the only thing that may differ between two runs. The record depends on the versions of
scikit-learn and the other libraries, so it is kept outside the repository and made afresh on the
machine that compares.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

#: name -> the estimator's parameters (every case serial, seeded and evaluation-budgeted)
CASES: dict[str, dict[str, Any]] = {
    "admm_bo_cmab": dict(theta_solver="bo", z_solver="cmab", max_evals=30),
    "admm_bo_blds": dict(theta_solver="bo", z_solver="blds", max_evals=30),
    "admm_random_hyperband": dict(theta_solver="random", z_solver="hyperband", max_evals=30),
    "admm_skopt_daub": dict(theta_solver="skopt", z_solver="daub", max_evals=24),
    "admm_rbfopt_random": dict(theta_solver="rbfopt", z_solver="random", max_evals=20),
    "admm_cfo_flash": dict(theta_solver="cfo", z_solver="flash", max_evals=24),
    "jopt_bo": dict(method="jopt", theta_solver="bo", max_evals=20),
    "jopt_blendsearch": dict(method="jopt", theta_solver="blendsearch", max_evals=20),
    "select_cmab": dict(method="select", z_solver="cmab", max_evals=12),
    # FLASH's EIPS divides by measured seconds (Zhang et al. 2016), so what it prunes depends on
    # the machine's load: the case runs the design and tunes every path (108 in paper_small), so
    # that no ranking by EIPS decides what it does
    "flash": dict(method={"name": "flash", "params": {"n_prune": 0, "top_r": 108}},
                  theta_solver="bo", max_evals=24),
    "admm_constrained": dict(max_evals=24, constraints=[
        {"name": "disparate_impact", "threshold": 0.05}]),
    "admm_default_space": dict(search_space="default", max_evals=16, cv="auto"),
    "admm_ensemble_cv": dict(max_evals=20, cv=3, ensemble_size=16, portfolio="auto"),
    # BAPI charges iterations, not measured seconds, so that its run is deterministic
    "admm_bapi": dict(search_space="iterative", max_evals=12,
                      theta_solver={"name": "bapi", "params": {"cost": "iterations"}}),
}


#: where this tree and its environment live, written as these names in a record: a failed
#: trial's traceback names its files, and a record made in one clone is compared in another
_PLACES = {sys.prefix: "<prefix>", str(Path(__file__).resolve().parents[1]): "<tree>"}


def _plain(value: Any) -> Any:
    """JSON-able, with floats rounded to 12 significant digits, NaN as a string and the tree's
    and environment's paths as names (:data:`_PLACES`)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_plain(v) for v in value]
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return repr(value) if not math.isfinite(value) else float(f"{value:.12g}")
    if isinstance(value, str):
        for place, name in _PLACES.items():
            value = value.replace(place, name)
        return value
    if isinstance(value, (int, bool)) or value is None:
        return value
    return repr(value)


def run_case(name: str) -> dict[str, Any]:
    from sklearn.datasets import load_breast_cancer

    from admm_automl import ADMM

    X, y = load_breast_cancer(return_X_y=True)
    X, y = X[:300], y[:300]
    params = dict(search_space="paper_small", executor="serial", random_state=0, cv=None,
                  portfolio=None, ensemble_size=0)
    params.update(CASES[name])
    extra = {}
    if "constraints" in params:
        extra["sensitive_features"] = (X[:, 0] > np.median(X[:, 0])).astype(int)
    model = ADMM(**params).fit(X, y, **extra)
    history = model.history_
    keep = [c for c in history.columns
            if not any(word in c for word in ("time", "duration", "seconds"))]
    trace = model.admm_trace_
    trace_keep = [c for c in getattr(trace, "columns", []) if "time" not in c]
    predictions = np.asarray(model.predict_proba(X) if hasattr(model, "predict_proba")
                             else model.predict(X))
    return {
        "history": _plain(history[keep].to_dict(orient="list")),
        "trace": _plain(trace[trace_keep].to_dict(orient="list")) if trace_keep else None,
        "best_params": _plain(model.best_params_),
        "best_score": _plain(model.best_score_),
        "predictions": hashlib.sha256(np.round(predictions, 10).tobytes()).hexdigest(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["record", "compare"])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--cases", default=",".join(CASES),
                        help="comma-separated case names (default: all)")
    args = parser.parse_args(argv)
    args.directory.mkdir(parents=True, exist_ok=True)
    differ = []
    for name in args.cases.split(","):
        got = run_case(name)
        path = args.directory / f"{name}.json"
        if args.action == "record":
            path.write_text(json.dumps(got, indent=1, sort_keys=True))
            print(f"{name}: recorded {len(got['history'].get('loss', []))} evaluations")
            continue
        want = json.loads(path.read_text())
        got = json.loads(json.dumps(got, sort_keys=True))
        same = got == want
        if not same:
            differ.append(name)
            for key in want:
                if want[key] != got.get(key):
                    print(f"{name}: {key} differs")
        print(f"{name}: {'same' if same else 'DIFFERENT'}")
    if differ:
        print(f"{len(differ)} case(s) differ: {', '.join(differ)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
