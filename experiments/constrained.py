"""Constrained AutoML against the peers that take constraints: does the returned model meet the
constraint on data it has not seen, and how good is it then?

Each *task* is a binary classification dataset with one or two constraints, searched by 1 − AUROC
(Liu et al. 2020 constrain AutoML the same way, by ADMM with slack variables and multipliers):

====================  ===============  =========================================================
task                  dataset          constraint(s)
====================  ===============  =========================================================
adult-dp-sex          adult            demographic_parity_difference over ``sex``
compas-eo-race        compas           equalized_odds_difference over ``race``, on the
                                       African-American and Caucasian rows only (the other
                                       four groups hold 11-509 rows: a handful per fold)
german-dp-age         german_credit    demographic_parity_difference over ``age`` ≤ 25 / > 25
                                       (190 / 810 rows; ``personal_status``'s smallest group
                                       has 50 rows, about 7 per validation fold)
bank-latency          bank_marketing   ``latency`` (CPU seconds per row of predict)
heart-size            heart_statlog    ``model_size`` (bytes of the pickled model)
bank-latency-dp       bank_marketing   ``latency`` and demographic_parity_difference over
                                       ``marital``, together
====================  ===============  =========================================================

adult and bank_marketing (48 842 and 45 211 rows) are stratified-subsampled to ``--rows`` rows
(6000 by default) with the run's seed, so that a run of ``--budget`` seconds makes a meaningful
number of evaluations; the others are used whole. Per seed k: a stratified 75/25 train/test
split with seed k; every method gets the same train rows, the same budget (wall clock, refit
included) and one core (``n_jobs=1``, BLAS/OpenMP at one thread, each run its own process).

Methods:

* ``ADMM`` — ``ADMMClassifier(time_budget=B, random_state=k, constraints=...)`` with its
  defaults (ADMM with slacks and multipliers, the portfolio, the ensemble); the fairness
  constraints with ``"confidence": 0.9``, so that the search bounds the 90 % bootstrap upper
  bound of the difference rather than its value on the validation rows, and the latency with
  ``"confidence": 0.9``, so that it bounds the 90 % upper prediction bound of the model's next
  reading rather than the mean of its readings (a reading moves by up to 2× on this machine).
* ``ADMM-filter`` — the same estimator and constraints with ``constraint_mode="filter"``: an
  unconstrained search, then the best feasible pipeline (the package's filter mode returns it).
* ``FLAML`` — ``flaml.AutoML().fit(..., task="classification", time_budget=B, n_jobs=1,
  seed=k, metric=<1 − AUROC, reporting the constraint values>, metric_constraints=[...])`` and
  ``pred_time_limit`` for a latency. The custom metric computes the fairness values with
  fairlearn's functions on FLAML's validation rows (point values: FLAML has no confidence bound),
  and the size (``len(pickle.dumps(...))``) and the latency (``pred_time``, which FLAML takes from
  a custom metric's dictionary) of the trial's estimator behind AutoML's data transformer, as it
  is deployed and as the test rows measure it, by the package's measures (latency: CPU clock,
  median of 5, one thread, on 1000 raw training rows, since FLAML hands the metric its
  validation rows already transformed). Measured with FLAML 2.7: its AutoML passes a trial's
  result to its searcher with the custom metric's values nested under ``metric_for_logging``,
  so the searcher (CFO) never sees them and only ``pred_time`` constrains its search; and its
  final model is the one of lowest validation loss whether or not it met a constraint. ``FLAML``
  is run as a user would run it all the same. ``FLAML-penalty`` (not in the default methods) is
  the work-around a user could write: the custom metric returns 1 + the total relative violation
  for an infeasible configuration, worse than any feasible one.
* ``Optuna-TPE`` — Optuna's ``TPESampler(constraints_func=..., seed=k)`` (Optuna's own
  constrained TPE) over the package's default space (with the fairness-mitigation module where
  ADMM gets it), define-by-run as the benchmark runner's Optuna peer samples it, evaluated by the
  package's own evaluation engine: the splits of ``random_state=k``, the same cross-validation,
  trial timeouts and constraint measures as ``ADMM``; ``constraints_func`` returns the
  constraints' relative violations. The best feasible evaluation (else the least violating) is
  refitted on all train rows; the budget keeps back its estimated refit time, as the estimator's
  does. No ensemble, no portfolio.
* ``Random-filter`` — ``ADMMClassifier(method="jopt", theta_solver="random",
  constraint_mode="filter", ...)``: uniform random pipelines, then the best feasible (with the
  estimator's default ensemble).

Measured per run, on the 25 % test rows (a subsampled task's also on the rows its subsample left
out, up to 40 000: ``load_split``), the same way for every method's final model (the
ensemble when ``ADMM`` returns one; FLAML's data transformer and trained estimator, without the
search state): test AUROC and every constraint's value by the package's constraint objects bound
to the test rows (fairness: the value itself, no confidence bound; latency: CPU seconds per row of
``predict`` on the first 1000 test rows, median of 5, one thread; size: bytes of the pickle), and
whether they all meet their thresholds. Also the validation values the method reports, the time
to its first feasible evaluation (``history_`` of the package's methods; FLAML's search log), the
number of evaluations and the wall time.

Thresholds, fixed by a rule stated before the runs: ``calibrate`` runs the package's random
search on the default space (``method="jopt"``, ``theta_solver="random"``,
``constraint_mode="filter"``, the cross-validation a ``--budget`` run uses) for
``--calibrate-evals`` evaluations on the train split of seed 0, records each constraint's
validation value per evaluation (fairness: the value, no confidence bound), and sets each
threshold at the 25 % quantile of the values of the successful evaluations, rounded to two
significant digits: about a quarter of the space's pipelines meet each constraint (fewer meet
both of the two-constraint task; the file records the fraction). It writes
``experiments/constrained_thresholds.json``, which is committed before the runs; ``run`` refuses
to start without it. ``--smoke`` uses loose thresholds of its own instead.

Usage (from the project root)::

    nice .venv/bin/python experiments/constrained.py calibrate --data-dir ../shared/data
    nice .venv/bin/python experiments/constrained.py run --data-dir ../shared/data
    .venv/bin/python experiments/constrained.py run --tasks heart-size --methods ADMM FLAML \\
        --seeds 0 1 --budget 60 --data-dir ../shared/data
    .venv/bin/python experiments/constrained.py analyze
    .venv/bin/python experiments/constrained.py --smoke --data-dir ../shared/data --out /tmp/c

Time: ``run`` takes about tasks × methods × seeds × budget / parallel plus start-up, by default
6 × 5 × 5 × 120 s / 2 = 150 min; ``calibrate`` at most 6 × ``--calibrate-budget`` (600 s) / 2 =
30 min, usually less (200 evaluations). ``--smoke`` (2 tasks, ADMM and FLAML, one seed, 10 s,
600 rows, in ``--out`` or a temporary folder) takes under a minute on a quiet machine.

Results: ``experiments/results/constrained/<task>/<method>/seed<k>.json``, one per run (never
committed), and for the package's methods the run's ``history_`` beside it
(``seed<k>.history.csv.gz``, to read which pipelines the search tried and what each measured);
a run whose file exists is not repeated unless ``--force``. ``analyze`` (also at the
end of ``run``) prints per task: the fraction of runs feasible on the test rows, its ceiling
(the expected number of runs in which an ideal model, with the run's selection rate in every
group, meets the demographic parity limits on the test rows: ``ideal_chance``), the median test
AUROC of those runs, the median time to the first feasible evaluation, and ADMM's wins / ties /
losses against each peer, seed by seed (feasible on test first, then test AUROC; a tie within
0.001), and an overall line.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from datetime import date  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "experiments" / "results" / "constrained"
THRESHOLDS_FILE = REPO / "experiments" / "constrained_thresholds.json"
DEFAULT_DATA_DIR = REPO.parent / "shared" / "data"

METHODS = ("ADMM", "ADMM-filter", "FLAML", "Optuna-TPE", "Random-filter")
#: methods that run only when asked for (--methods)
EXTRA_METHODS = ("FLAML-penalty",)
SEEDS = (0, 1, 2, 3, 4)
BUDGET = 120.0
ROWS = 6000  # of the subsampled datasets
#: the most rows a subsampled task's test set takes from the rows its subsample left out
TEST_ROWS = 40_000
#: the confidence of the fairness constraints' bootstrap bound and of the latency's bound of a
#: new reading in the package's methods
CONFIDENCE = 0.9
#: the calibration's rule: each threshold at this quantile of the random search's values
QUANTILE = 0.25
CALIBRATE_EVALS, CALIBRATE_BUDGET = 200, 600.0
#: test AUROCs closer than this are a tie
TIE = 1e-3
#: --smoke: tasks, methods, budget, rows (of every dataset) and loose thresholds
SMOKE_TASKS = ("german-dp-age", "bank-latency-dp")
SMOKE_METHODS = ("ADMM", "FLAML")
SMOKE_BUDGET, SMOKE_ROWS = 10.0, 600
LOOSE = {"latency": 1.0, "model_size": 1e10}  # and 1.0 for a fairness difference


@dataclass(frozen=True)
class Task:
    """A dataset and its constraints (specifications without thresholds); ``subsample``: cut to
    ``--rows`` rows; ``keep``: only the rows whose column ``keep[0]`` is one of ``keep[1]``."""

    dataset: str
    constraints: tuple[dict, ...]
    subsample: bool = False
    keep: tuple[str, tuple[str, ...]] | None = None


def _fair(name: str, column: str, bins: list[float] | None = None) -> dict:
    return {"name": name, "group_by": column, **({"bins": bins} if bins else {})}


TASKS = {
    "adult-dp-sex": Task("adult", (_fair("demographic_parity_difference", "sex"),),
                         subsample=True),
    "compas-eo-race": Task("compas", (_fair("equalized_odds_difference", "race"),),
                           keep=("race", ("African-American", "Caucasian"))),
    # [0, 26) and [26, 120): age <= 25 and > 25 (whole years)
    "german-dp-age": Task("german_credit",
                          (_fair("demographic_parity_difference", "age", [0, 26, 120]),)),
    "bank-latency": Task("bank_marketing", ({"name": "latency"},), subsample=True),
    "heart-size": Task("heart_statlog", ({"name": "model_size"},)),
    "bank-latency-dp": Task("bank_marketing", ({"name": "latency"},
                                               _fair("demographic_parity_difference", "marital")),
                            subsample=True),
    # held out: groups the fairness machinery (mitigations, warm start, the threshold
    # optimizer's folds) was never measured on while it was built; run only when named, with
    # the fixed limits of constrained_thresholds_heldout.json
    "adult-dp-race": Task("adult", (_fair("demographic_parity_difference", "race"),),
                          subsample=True, keep=("race", ("White", "Black"))),
    "compas-dp-sex": Task("compas", (_fair("demographic_parity_difference", "sex"),)),
    "cardio-dp-gender": Task("cardiovascular", (_fair("demographic_parity_difference", "gender"),),
                             subsample=True),
}
#: the tasks a run without --tasks runs (the held-out ones are named)
DEFAULT_TASKS = ("adult-dp-sex", "compas-eo-race", "german-dp-age", "bank-latency",
                 "heart-size", "bank-latency-dp")


# ---------------------------------------------------------------------------------- the data
def load_split(task: str, seed: int, data_dir: str, rows: int | None) -> tuple:
    """``(X_train, X_test, y_train, y_test)`` of run ``seed``: the task's rows (subsampled to
    ``rows``, stratified, with the seed, when the task is subsampled or ``rows`` caps every
    dataset), then a stratified 75/25 split with the seed. A subsampled task's test rows are
    the 25 % and then the rows the subsample left out (a stratified :data:`TEST_ROWS` of them at
    most): a fairness limit is a difference of group rates, and on 1 500 test rows those rates'
    own sampling error is as large as the limits (on adult by sex an ideal model, with the same
    selection rate in both groups, meets 0.031 on 1 500 test rows with probability 0.83; on the
    cardiovascular data by gender it meets 0.02 with probability 0.54), so a test split that
    small cannot tell a model that meets the limit from one that does not. The training rows,
    and the first test rows (the latency's batch), are those of the 25 % split."""
    import pandas as pd
    from sklearn.model_selection import train_test_split

    from admm_automl.datasets import load_dataset

    spec = TASKS[task]
    X, y = load_dataset(spec.dataset, data_dir)
    y = np.asarray(y)
    if spec.keep is not None:
        column, values = spec.keep
        mask = X[column].isin(values).to_numpy()
        X, y = X[mask], y[mask]
    X_rest = y_rest = None
    if rows is not None and rows < len(y):
        X, X_rest, y, y_rest = train_test_split(X, y, train_size=rows, stratify=y,
                                                random_state=seed)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, stratify=y,
                                                        random_state=seed)
    if spec.subsample and X_rest is not None:
        if len(y_rest) > TEST_ROWS:
            X_rest, _, y_rest, _ = train_test_split(X_rest, y_rest, train_size=TEST_ROWS,
                                                    stratify=y_rest, random_state=seed)
        X_test, y_test = pd.concat([X_test, X_rest]), np.concatenate([y_test, y_rest])
    return (X_train.reset_index(drop=True), X_test.reset_index(drop=True), y_train, y_test)


def task_rows(task: str, args: argparse.Namespace) -> int | None:
    """The rows a run of ``task`` subsamples to (None: all)."""
    if args.smoke:
        return SMOKE_ROWS
    return args.rows if TASKS[task].subsample else None


# --------------------------------------------------------------------------- the constraints
def constraint_specs(task: str, thresholds: dict[str, float], confidence: bool) -> list[dict]:
    """The task's constraints with their thresholds (by key, which is the name here), the
    fairness ones and the latency with ``confidence`` when asked."""
    out = []
    for spec in TASKS[task].constraints:
        spec = {**spec, "threshold": thresholds[spec["name"]]}
        if confidence and spec["name"] != "model_size":
            spec["confidence"] = CONFIDENCE
        out.append(spec)
    return out


def loose_thresholds(task: str) -> dict[str, float]:
    return {s["name"]: LOOSE.get(s["name"], 1.0) for s in TASKS[task].constraints}


def load_thresholds(path: Path, rows: int) -> dict[str, dict[str, float]]:
    """The calibrated thresholds by task; a clear error when there are none yet, or when they
    were calibrated on subsamples of another size."""
    if not path.is_file():
        raise SystemExit(
            f"no thresholds file {path}: run `{Path(__file__).name} calibrate --data-dir ...` "
            "first (and commit the file it writes, so that the thresholds are fixed before the "
            "runs), or give --thresholds; --smoke runs with loose thresholds of its own")
    data = json.loads(path.read_text())
    if data.get("rows") != rows:
        raise SystemExit(f"{path} was calibrated on subsamples of {data.get('rows')} rows, not "
                         f"--rows {rows}: pass --rows {data.get('rows')} or calibrate again")
    return {task: entry["thresholds"] for task, entry in data["tasks"].items()}


def measure_on_test(task: str, thresholds: dict[str, float], model: Any, X_test: Any,
                    y_test: np.ndarray) -> tuple[dict[str, float], bool]:
    """Test AUROC, the share of test rows predicted positive (``selection_rate``: a model that
    meets a parity by selecting almost nobody shows here) and every constraint's value of a
    fitted ``model`` (predict, predict_proba) by the package's constraint objects bound to the
    test rows (no confidence bound), and whether every constraint is met."""
    from sklearn.metrics import roc_auc_score

    from admm_automl.constraints import make_constraints
    from admm_automl.evaluation.splits import Split

    rows = np.arange(len(y_test))
    values = {"roc_auc": float(roc_auc_score(y_test, model.predict_proba(X_test)[:, 1])),
              "selection_rate": float(np.mean(model.predict(X_test) == np.unique(y_test)[1]))}
    feasible, ideal = True, 1.0
    for c in make_constraints(constraint_specs(task, thresholds, confidence=False)):
        c.bind(X_test, y_test, groups=None, splits=[Split(rows, rows, rows)],
               task="classification")
        values[c.key] = float(c.measure(model, X_test, y_test, rows))
        feasible &= c.feasible(values[c.key])
        if c.key.startswith("demographic_parity"):
            ideal *= ideal_chance(c, values["selection_rate"])
    values["ideal_chance"] = ideal
    return values, bool(feasible)


def ideal_chance(constraint: Any, rate: float, draws: int = 4000) -> float:
    """The probability that an ideal model — one that selects every row of every group with the
    same probability ``rate`` (the run's test selection rate) — meets the demographic parity
    ``constraint`` (bound to the test rows) on those rows: the ceiling the test rows' own
    sampling error puts on "feasible on test" (``load_split``). By simulation, fixed seed."""
    from admm_automl.constraints.fairness import combine_rates, group_rates

    groups = constraint.groups_
    names, index = np.unique(groups[groups != None].astype(str), return_inverse=True)  # noqa: E711
    rng = np.random.default_rng(0)
    picks = (rng.random((draws, len(index))) < rate).astype(int)
    rates = group_rates(np.zeros_like(picks), picks, np.broadcast_to(index, picks.shape),
                        len(names))
    value = combine_rates(rates, ("sr",), constraint.name.endswith("_ratio"))
    return float(np.mean([constraint.feasible(v) for v in value]))


def first_feasible(times: Any, feasible: Any) -> tuple[float | None, bool]:
    """``(seconds to the first feasible evaluation or None, whether there was one)``."""
    times = np.asarray(times, dtype=float)[np.asarray(feasible, dtype=bool)]
    return (float(times.min()), True) if len(times) else (None, False)


# --------------------------------------------------------------------------------- the methods
def run_estimator(method: str, task: str, thresholds: dict, X: Any, y: np.ndarray,
                  budget: float, seed: int) -> dict[str, Any]:
    """``ADMM``, ``ADMM-filter`` or ``Random-filter``: the package's estimator."""
    from admm_automl import ADMMClassifier

    options = {"ADMM": {}, "ADMM-filter": {"constraint_mode": "filter"},
               "Random-filter": {"method": "jopt", "theta_solver": "random",
                                 "constraint_mode": "filter"}}[method]
    model = ADMMClassifier(time_budget=budget, random_state=seed, n_jobs=1,
                           constraints=constraint_specs(task, thresholds, confidence=True),
                           **options)
    model.fit(X, y)
    h = model.history_
    full = ((h["status"] == "ok") & (h["fidelity"] >= 1.0)).to_numpy()
    t, found = first_feasible(h["time"], full & h["feasible"].to_numpy(dtype=bool))
    keys = [c.key for c in model.constraints_]
    if model.ensemble_ is not None:
        validation = {"roc_auc": 1.0 - float(model.ensemble_loss_),
                      **{k: float(v) for k, v in model.ensemble_constraints_.items()}}
    else:
        best = h[h["eval_id"] == model.best_eval_id_].iloc[0]
        validation = {"roc_auc": float(model.best_score_),
                      **{k: float(best[f"constraint:{k}"]) for k in keys}}
    final = model.best_pipeline_ if model.ensemble_ is None else model.ensemble_
    return {"model": final, "validation": validation, "validation_feasible": bool(model.feasible_),
            "first_feasible_time": t, "found_feasible": found, "n_evals": int(model.n_evals_),
            "stopped_seconds": float(h.loc[h["status"].isin(["timeout", "cancelled"]),
                                           "duration"].sum()),
            "description": str(model.best_params_)
            + ("" if model.ensemble_ is None else f" in an ensemble of "
               f"{len(model.ensemble_weights_)}"),
            "history": h}


def run_tpe(task: str, thresholds: dict, X: Any, y: np.ndarray, budget: float,
            seed: int) -> dict[str, Any]:
    """``Optuna-TPE``: Optuna's constrained TPE (the package's Optuna peer given the constraints)
    through the package's evaluation engine, set up as the estimator sets up a run (the module
    docstring)."""
    from admm_automl.benchmarks.peers import run_optuna
    from admm_automl.evaluation.kept import kept_budget_mb
    from admm_automl.evaluation.prefix_cache import DEFAULT_CACHE_MB
    from admm_automl.evaluation.splits import resolve_cv
    from admm_automl.methods.driver import Budget
    from admm_automl.constraints.ranking import Constraints
    from admm_automl.clock import Deadline
    from admm_automl.run.deadline import refit_reserve, trial_policy
    from admm_automl.final.library import PredictionLibrary
    from admm_automl.final.outcome import evaluations_of
    from admm_automl.final.refit import deployable_refit
    from admm_automl.run.executor import single_threaded_executor
    from admm_automl.run.seeds import derive_seeds
    from admm_automl.run.setup import open_objective
    from admm_automl.run.spaces import task_space
    from admm_automl.run.task import prepare_task

    deadline = Deadline(budget)  # as the estimator's: the set-up and the refit count
    specs = constraint_specs(task, thresholds, confidence=True)
    space = task_space("default", "classification", len(y), specs, "auto")
    seeds = derive_seeds(seed)  # the splits and model seeds ADMMClassifier(random_state=seed) uses
    prepared = prepare_task(
        X, y, space=space, task="classification", target_type="binary",
        cv=resolve_cv("auto", len(y), X.shape[1], budget), split_seed=seeds.splits,
        model_seed=seeds.models, constraints=specs,
        cache_size=kept_budget_mb(DEFAULT_CACHE_MB, None))
    ctx = prepared.context
    constraints = Constraints(prepared.constraints, mode="filter")
    library = PredictionLibrary(len(y), len(ctx.splits), 0, rank=constraints.rank)
    objective = open_objective(ctx, executor=single_threaded_executor("process"),
                               worst_loss=prepared.worst_loss, deadline=deadline,
                               policy=trial_policy(deadline, None), observers=[library])
    try:
        n_evals, _ = run_optuna(
            space, objective, Budget(None, deadline,
                                     reserve=lambda: refit_reserve(library, budget, False)),
            seed=seed, option="tpe", constraints=prepared.constraints)
    finally:
        objective.close()
    records = [r for r in objective.journal.records
               if float(r["fidelity"]) >= 1.0 and not r.get("budget_stop")]
    if not any(r["status"] == "ok" for r in records):
        raise RuntimeError("Optuna-TPE: no pipeline finished within the budget")
    evaluations = evaluations_of(records, space, len(ctx.y), len(ctx.splits))
    observations = [e.observation for e in evaluations]
    best = min(evaluations, key=lambda e: constraints.rank(e.observation))
    obs = best.observation
    feasible = constraints.feasible(obs)
    # the estimator's refit check (size and latency measured again on the refitted model; the
    # next feasible pipelines tried if it misses): the same help as the package's methods get
    pipeline, _, _, other = deployable_refit(
        ctx, constraints, evaluations, (best.z, best.theta, obs), X, y, deadline, feasible)
    if other is not None:
        obs, feasible = other[2], other[3]
        best = next(e for e in evaluations if e.eval_id == obs.eval_id)
    t, found = first_feasible([r["time"] for r in records],
                              [constraints.feasible(o) for o in observations])
    return {"model": pipeline, "validation": {"roc_auc": 1.0 - obs.loss, **obs.constraints},
            "validation_feasible": feasible, "first_feasible_time": t,
            "found_feasible": found, "n_evals": int(n_evals),
            "description": str(best.config)}


class FlamlModel:
    """A FLAML model as it is deployed: AutoML's data transformer and a trained estimator (what
    ``AutoML.predict`` runs), without the search state that pickling ``AutoML`` would carry."""

    def __init__(self, automl: Any, estimator: Any = None) -> None:
        self.task = automl._state.task
        self.transformer = automl._transformer
        self.label_transformer = automl._label_transformer
        self.estimator = automl.model if estimator is None else estimator

    def predict(self, X: Any) -> np.ndarray:
        pred = np.asarray(self.estimator.predict(self.task.preprocess(X, self.transformer)))
        if self.label_transformer:
            import pandas as pd

            return np.asarray(self.label_transformer.inverse_transform(
                pd.Series(pred.astype(int))))
        return pred

    def predict_proba(self, X: Any) -> np.ndarray:
        return self.estimator.predict_proba(self.task.preprocess(X, self.transformer))


#: the name of a constraint's value in FLAML's metrics (FLAML's own for the latency)
FLAML_NAMES = {"latency": "pred_time"}


def flaml_metric(task: str, thresholds: dict, penalty: bool, automl: Any, X_raw: Any):
    """FLAML's custom metric: ``(1 − AUROC, {constraint values})`` on its validation rows (see
    the module docstring); with ``penalty``, 1 + the relative violation for an infeasible one.

    The latency and the size are those of the trial's estimator as it would be deployed
    (:class:`FlamlModel`: with AutoML's data transformer, as the test rows measure it, and as a
    trial of the package measures its whole pipeline), by the package's measures; the latency
    on the first 1000 raw training rows ``X_raw``, since FLAML gives the metric its validation
    rows already transformed."""
    import fairlearn.metrics
    from sklearn.metrics import roc_auc_score

    from admm_automl.constraints import ModelSize, PredictionLatency, make_groups

    specs = TASKS[task].constraints
    batch = np.arange(min(len(X_raw), 1000))

    def metric(X_val, y_val, estimator, labels, X_train, y_train, *args):
        y_val = np.asarray(y_val)
        loss = 1.0 - float(roc_auc_score(y_val, estimator.predict_proba(X_val)[:, 1]))
        values, y_pred = {}, None
        for spec in specs:
            name = spec["name"]
            if name == "latency":
                values["pred_time"] = PredictionLatency().measure(
                    FlamlModel(automl, estimator), X_raw.iloc[batch], None, batch)
            elif name == "model_size":
                values[name] = ModelSize().measure(FlamlModel(automl, estimator), None, None, None)
            else:
                y_pred = np.asarray(estimator.predict(X_val)) if y_pred is None else y_pred
                groups = make_groups(X_val, spec["group_by"], spec.get("bins"), None, name)
                keep = groups != None  # noqa: E711 (object array)
                values[name] = float(getattr(fairlearn.metrics, name)(
                    y_val[keep], y_pred[keep], sensitive_features=groups[keep].astype(str)))
        if penalty:
            excess = sum(max(values[FLAML_NAMES.get(k, k)] - t, 0.0) / t
                         for k, t in thresholds.items())
            if excess > 0:
                loss = 1.0 + excess
        return loss, values

    return metric


def run_flaml(task: str, thresholds: dict, X: Any, y: np.ndarray, budget: float, seed: int,
              penalty: bool = False) -> dict[str, Any]:
    """``FLAML`` (``FLAML-penalty`` with ``penalty``): FLAML's AutoML with a custom metric and
    its metric constraints; the time to the first feasible trial from its search log."""
    from flaml import AutoML

    constraints = [(k, "<=", float(t)) for k, t in thresholds.items() if k != "latency"]
    extra = {"pred_time_limit": float(thresholds["latency"])} if "latency" in thresholds else {}
    automl = AutoML()
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "search.log"
        automl.fit(X, y, task="classification", time_budget=budget, n_jobs=1, seed=seed,
                   metric=flaml_metric(task, thresholds, penalty, automl, X),
                   metric_constraints=constraints,
                   log_file_name=str(log), log_type="all", verbose=0, **extra)
        lines = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    trials = [t for t in lines if "record_id" in t]  # not the checkpoints
    feasible = [all((t.get("logged_metric") or {}).get(FLAML_NAMES.get(k, k), math.inf) <= v
                    for k, v in thresholds.items()) for t in trials]
    first, found = first_feasible([t["wall_clock_time"] for t in trials], feasible)
    loss, logged = automl.metrics_for_best_config
    validation = {"roc_auc": 1.0 - float(loss) if float(loss) <= 1.0 else None,
                  **{k: float(logged[FLAML_NAMES.get(k, k)]) for k in thresholds}}
    return {"model": FlamlModel(automl), "validation": validation,
            "validation_feasible": all(validation[k] <= t for k, t in thresholds.items()),
            "first_feasible_time": first, "found_feasible": found, "n_evals": len(trials),
            "description": f"{automl.best_estimator} {automl.best_config}"}


# ------------------------------------------------------------------------------------ one run
def result_path(root: Path, task: str, method: str, seed: int) -> Path:
    return root / task / method / f"seed{seed}.json"


def run_one(task: str, method: str, seed: int, budget: float, thresholds: dict, data_dir: str,
            rows: int | None, out: Path) -> dict[str, Any]:
    """One run in this process; writes and returns its result."""
    from admm_automl.benchmarks.runner import code_commit

    warnings.simplefilter("ignore")
    X_train, X_test, y_train, y_test = load_split(task, seed, data_dir, rows)
    start = time.monotonic()
    if method == "Optuna-TPE":
        got = run_tpe(task, thresholds, X_train, y_train, budget, seed)
    elif method.startswith("FLAML"):
        got = run_flaml(task, thresholds, X_train, y_train, budget, seed,
                        penalty=method == "FLAML-penalty")
    else:
        got = run_estimator(method, task, thresholds, X_train, y_train, budget, seed)
    wall = time.monotonic() - start
    test, feasible = measure_on_test(task, thresholds, got.pop("model"), X_test, y_test)
    history = got.pop("history", None)
    result = {"task": task, "dataset": TASKS[task].dataset, "method": method, "seed": seed,
              "budget": budget, "train_rows": len(y_train), "test_rows": len(y_test),
              "thresholds": thresholds, "test": test, "test_feasible": feasible,
              "wall_time": wall, **got, "date": str(date.today()), "machine": platform.node(),
              "load": os.getloadavg()[0], "commit": code_commit()}
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_suffix(".partial")
    partial.write_text(json.dumps(result, indent=1, default=float))
    if history is not None:  # before the result, whose file marks the run done
        history.to_csv(out.with_name(f"seed{seed}.history.csv.gz"), index=False)
    partial.replace(out)
    return result


# ---------------------------------------------------------------------------------- calibrate
def calibrate_one(task: str, data_dir: str, rows: int | None, budget: float, evals: int,
                  time_cap: float, out: Path) -> dict[str, Any]:
    """The random search's constraint values on the train split of seed 0 (module docstring)."""
    from admm_automl import ADMMClassifier
    from admm_automl.evaluation.splits import resolve_cv

    warnings.simplefilter("ignore")
    X, _, y, _ = load_split(task, 0, data_dir, rows)
    loose = loose_thresholds(task)
    model = ADMMClassifier(method="jopt", theta_solver="random", constraint_mode="filter",
                           constraints=constraint_specs(task, loose, confidence=False),
                           max_evals=evals, time_budget=time_cap, ensemble_size=0,
                           cv=resolve_cv("auto", len(y), X.shape[1], budget), random_state=0,
                           n_jobs=1)
    model.fit(X, y)
    h = model.history_
    h = h[(h["status"] == "ok") & (h["fidelity"] >= 1.0)]
    values = {k: h[f"constraint:{k}"].to_numpy(dtype=float) for k in loose}
    values = {k: v[np.isfinite(v)] for k, v in values.items()}
    for k, v in values.items():
        if not len(v):
            raise SystemExit(f"calibrating {task}: no successful evaluation measured {k} within "
                             f"{time_cap:g} s; give a larger --calibrate-budget")
    thresholds = {k: float(f"{np.quantile(v, QUANTILE):.2g}") for k, v in values.items()}
    joint = np.ones(len(h), dtype=bool)
    for k, t in thresholds.items():
        joint &= h[f"constraint:{k}"].to_numpy(dtype=float) <= t
    result = {"thresholds": thresholds, "n_evals": int(model.n_evals_), "n_ok": int(len(h)),
              "quantiles": {k: {f"{q:g}": float(np.quantile(v, q)) for q in (0.1, 0.25, 0.5, 0.75)}
                            for k, v in values.items()},
              "feasible_fraction": float(joint.mean()) if len(h) else None,
              "train_rows": int(len(y))}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    return result


def calibrate(args: argparse.Namespace, tasks: list[str]) -> None:
    """``calibrate-one`` per task (``--parallel`` at a time), then the thresholds file."""
    from admm_automl.benchmarks.runner import code_commit, run_processes

    folder = Path(args.root) / "calibration"
    commands = [[sys.executable, __file__, "calibrate-one", "--task", task, "--root", args.root,
                 "--data-dir", args.data_dir, "--rows", str(args.rows), "--budget",
                 str(args.budget), "--calibrate-evals", str(args.calibrate_evals),
                 "--calibrate-budget", str(args.calibrate_budget)]
                for task in tasks if args.force or not (folder / f"{task}.json").is_file()]
    print(f"calibrating {len(commands)} task(s), {args.parallel} at a time, on {platform.node()} "
          f"(load {os.getloadavg()[0]:.1f})", flush=True)
    run_processes(commands, args.parallel)
    missing = [t for t in tasks if not (folder / f"{t}.json").is_file()]
    if missing:
        raise SystemExit(f"calibration failed for {missing}: see the errors above")
    data = {"rule": f"each threshold at the {QUANTILE:.0%} quantile of the constraint's "
                    "validation values of the successful evaluations of the package's random "
                    "search (method='jopt', theta_solver='random', constraint_mode='filter') on "
                    "the train split of seed 0, rounded to two significant digits",
            "quantile": QUANTILE, "evaluations": args.calibrate_evals, "rows": args.rows,
            "budget": args.budget, "date": str(date.today()), "machine": platform.node(),
            "commit": code_commit(),
            "tasks": {t: json.loads((folder / f"{t}.json").read_text()) for t in tasks}}
    path = Path(args.thresholds)
    path.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {path}")
    for task, entry in data["tasks"].items():
        print(f"  {task:<18} {entry['thresholds']}  ({entry['n_ok']} evaluations, "
              f"{entry['feasible_fraction']:.0%} meet all)")


# ------------------------------------------------------------------------------------- run all
def run_all(args: argparse.Namespace, tasks: list[str], methods: list[str], root: Path) -> int:
    """Every run not done yet, each in its own process; returns how many left no result."""
    from admm_automl.benchmarks.runner import run_processes

    todo = [(task, method, seed) for seed in args.seeds for task in tasks for method in methods
            if args.force or not result_path(root, task, method, seed).is_file()]
    commands = []  # seeds outermost: a campaign stopped early has every method on its first seeds
    for task, method, seed in todo:
        commands.append([
            sys.executable, __file__, "run-one", "--task", task, "--method", method,
            "--seed", str(seed), "--budget", str(args.budget), "--root", str(root),
            "--data-dir", args.data_dir, "--rows", str(args.rows),
            "--thresholds", args.thresholds] + (["--smoke"] if args.smoke else []))
    print(f"{len(commands)} runs, {args.parallel} at a time, on {platform.node()} "
          f"({os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}); results in {root}",
          flush=True)
    run_processes(commands, args.parallel)
    missing = [run for run in todo if not result_path(root, *run).is_file()]
    if missing:
        print(f"{len(missing)} run(s) left no result (see their errors above); `run` again "
              "retries them", flush=True)
    return len(missing)


# ------------------------------------------------------------------------------------- analyze
def _median(values: list[float]) -> float:
    return float(np.median(values)) if values else math.nan


def _fmt(x: float, spec: str = ".4f") -> str:
    if x is None or math.isnan(x):
        return "—"
    return "∞" if math.isinf(x) else format(x, spec)


def compare(a: dict, b: dict) -> int:
    """+1 if run ``a`` beats run ``b`` (feasible on test first, then test AUROC), 0 a tie."""
    if a["test_feasible"] != b["test_feasible"]:
        return 1 if a["test_feasible"] else -1
    diff = a["test"]["roc_auc"] - b["test"]["roc_auc"]
    return 0 if abs(diff) < TIE else (1 if diff > 0 else -1)


def analyze(root: Path) -> str:
    """The markdown tables of every task with results under ``root`` (module docstring)."""
    runs: dict[str, dict[str, dict[int, dict]]] = {}
    for path in sorted(root.glob("*/*/seed*.json")):
        r = json.loads(path.read_text())
        runs.setdefault(r["task"], {}).setdefault(r["method"], {})[r["seed"]] = r
    lines = [f"Printed by `experiments/constrained.py` on {date.today()} ({platform.node()}, "
             f"{os.cpu_count()} cores, Python {platform.python_version()}); results in {root}.",
             ""]
    order = [*METHODS, *EXTRA_METHODS]
    overall: dict[str, list[int]] = {}
    for task in [t for t in TASKS if t in runs]:
        by_method = runs[task]
        any_run = next(iter(next(iter(by_method.values())).values()))
        limits = ", ".join(f"{k} ≤ {v:g}" for k, v in any_run["thresholds"].items())
        lines += [f"### {task} ({any_run['dataset']}: {limits}; budget {any_run['budget']:g} s, "
                  f"{any_run['train_rows']} train / {any_run['test_rows']} test rows)", "",
                  "| method | feasible on test | ceiling | median test AUROC (feasible) | "
                  "median test selection rate (feasible) | median s to 1st feasible | median "
                  "evaluations | median wall s |", "|---|---|---|---|---|---|---|---|"]
        for method in [m for m in order if m in by_method]:
            done = list(by_method[method].values())
            ok = [r["test"]["roc_auc"] for r in done if r["test_feasible"]]
            rates = [r["test"].get("selection_rate", math.nan) for r in done
                     if r["test_feasible"]]
            known = [r for r in done if r["found_feasible"] is not None]
            firsts = [r["first_feasible_time"] if r["found_feasible"] else math.inf
                      for r in known]
            first = (float(np.percentile(firsts, 50, method="nearest")) if firsts else math.nan)
            ceiling = sum(r["test"].get("ideal_chance", math.nan) for r in done)
            lines.append(f"| {method} | {len(ok)}/{len(done)} | {_fmt(ceiling, '.1f')} | "
                         f"{_fmt(_median(ok))} | "
                         f"{_fmt(_median(rates), '.3f')} | {_fmt(first, '.1f')} | {_median([r['n_evals'] for r in done]):.0f} | "
                         f"{_median([r['wall_time'] for r in done]):.1f} |")
        if "ADMM" in by_method:
            lines.append("")
            for peer in [m for m in order if m in by_method and m != "ADMM"]:
                seeds = sorted(set(by_method["ADMM"]) & set(by_method[peer]))
                outcomes = [compare(by_method["ADMM"][s], by_method[peer][s]) for s in seeds]
                overall.setdefault(peer, []).extend(outcomes)
                lines.append(f"ADMM vs {peer}: {outcomes.count(1)} wins / {outcomes.count(0)} "
                             f"ties / {outcomes.count(-1)} losses over {len(seeds)} seeds")
        lines.append("")
    if overall:
        lines.append("Overall, ADMM against each peer over every (task, seed) both ran: "
                     + "; ".join(f"{peer} {o.count(1)}/{o.count(0)}/{o.count(-1)} "
                                 "(wins/ties/losses)" for peer, o in overall.items()))
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------- main
def _choose(given: list[str] | None, known: tuple[str, ...], default: tuple[str, ...],
            what: str) -> list[str]:
    if not given:
        return list(default)
    unknown = [g for g in given if g not in known]
    if unknown:
        raise SystemExit(f"unknown {what} {unknown}; known: {', '.join(known)}")
    return list(dict.fromkeys(given))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", nargs="?", default="run",
                        choices=("calibrate", "run", "analyze", "run-one", "calibrate-one"))
    parser.add_argument("--data-dir", default=str(DEFAULT_DATA_DIR),
                        help="folder of the shared datasets (gzipped CSV)")
    parser.add_argument("--tasks", nargs="+",
                        help=f"default: {', '.join(DEFAULT_TASKS)}; also (held out, with "
                        f"--thresholds experiments/constrained_thresholds_heldout.json): "
                        f"{', '.join(t for t in TASKS if t not in DEFAULT_TASKS)}")
    parser.add_argument("--methods", nargs="+",
                        help=f"default: {', '.join(METHODS)} (also: {', '.join(EXTRA_METHODS)})")
    parser.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    parser.add_argument("--budget", type=float, default=BUDGET, help="seconds per run")
    parser.add_argument("--rows", type=int, default=ROWS,
                        help="rows the large datasets are subsampled to")
    parser.add_argument("--parallel", type=int, default=2, help="runs at a time, one core each")
    parser.add_argument("--force", action="store_true", help="redo finished runs")
    parser.add_argument("--root", "--out", dest="root", default=None,
                        help=f"results folder (default {RESULTS.relative_to(REPO)}; --smoke: a "
                        "temporary one)")
    parser.add_argument("--thresholds", default=str(THRESHOLDS_FILE))
    parser.add_argument("--calibrate-evals", type=int, default=CALIBRATE_EVALS)
    parser.add_argument("--calibrate-budget", type=float, default=CALIBRATE_BUDGET,
                        help="calibrate: at most these seconds per task")
    parser.add_argument("--smoke", action="store_true",
                        help="a tiny run with loose thresholds (CI): under a minute")
    parser.add_argument("--task", help=argparse.SUPPRESS)
    parser.add_argument("--method", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for name in ("budget", "rows", "parallel", "calibrate_evals", "calibrate_budget"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name.replace('_', '-')} must be positive")
    if args.command in ("run-one", "calibrate-one"):
        if args.task not in TASKS:
            parser.error(f"{args.command} needs --task, one of {', '.join(TASKS)}")
        if args.command == "calibrate-one":
            calibrate_one(args.task, args.data_dir, task_rows(args.task, args), args.budget,
                          args.calibrate_evals, args.calibrate_budget,
                          Path(args.root) / "calibration" / f"{args.task}.json")
            return
        if args.method not in METHODS + EXTRA_METHODS or args.seed is None:
            parser.error(f"run-one needs --seed and --method, one of "
                         f"{', '.join(METHODS + EXTRA_METHODS)}")
        thresholds = (loose_thresholds(args.task) if args.smoke else
                      load_thresholds(Path(args.thresholds), args.rows)[args.task])
        r = run_one(args.task, args.method, args.seed, args.budget, thresholds, args.data_dir,
                    task_rows(args.task, args),
                    result_path(Path(args.root), args.task, args.method, args.seed))
        print(json.dumps({k: r[k] for k in ("task", "method", "seed", "test", "test_feasible",
                                            "n_evals")}, default=float), flush=True)
        return
    if args.command != "analyze" and not Path(args.data_dir).is_dir():
        parser.error(f"--data-dir {args.data_dir} is not a folder")
    tasks = _choose(args.tasks, tuple(TASKS), SMOKE_TASKS if args.smoke else DEFAULT_TASKS,
                    "tasks")
    methods = _choose(args.methods, METHODS + EXTRA_METHODS,
                      SMOKE_METHODS if args.smoke else METHODS, "methods")
    if args.smoke:
        args.seeds, args.budget = args.seeds[:1], SMOKE_BUDGET
    if args.command == "calibrate":
        args.root = args.root or str(RESULTS)
        calibrate(args, tasks)
        return
    temporary = None
    if args.root is None:
        if args.smoke:
            temporary = tempfile.TemporaryDirectory()
        args.root = temporary.name if temporary else str(RESULTS)
    root = Path(args.root)
    try:
        if args.command == "run":
            if not args.smoke:
                thresholds = load_thresholds(Path(args.thresholds), args.rows)
                absent = [t for t in tasks if t not in thresholds]
                if absent:
                    raise SystemExit(f"{args.thresholds} has no thresholds for {absent}: "
                                     "calibrate them")
            failed = run_all(args, tasks, methods, root)
        if not root.is_dir():
            raise SystemExit(f"no results folder {root}")
        print(analyze(root))
        if args.command == "run" and failed:
            raise SystemExit(1)  # so that a broken smoke run fails CI
    finally:
        if temporary is not None:
            temporary.cleanup()


if __name__ == "__main__":
    main()
