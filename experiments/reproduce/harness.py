"""The reproduction harness: a paper's headline claims as named suites, run on several seeds
through one engine, and decided by a rule written next to each claim before the runs.

A :class:`Claim` names its problems, its methods (the table's names mapped to the benchmark
runner's labels, :func:`admm_automl.benchmarks.runner.parse_method`), its budget, seeds, and
the rule (:mod:`admm_automl.benchmarks.stats`) that turns the runs into **reproduced**, **not
reproduced** or **contradicted**. What every run of every claim shares, so that a difference is
the method's:

* the engine: :func:`admm_automl.benchmarks.runner.run`, one single-threaded worker process
  for data problems (serial for the artificial objective), the same journal and cache;
* the help: none. The overhead-aware loop's cheap proposals are off for every method
  (``overhead_aware=False``): the papers' algorithms had none and the peers get none;
* the budget: wall clock from the start of the run, the method's own overhead and the worker's
  start-up inside it; the same per-trial timeout (none unless the claim sets one);
* the data: one stratified train/validation split per (problem, seed), whose seed is the run's
  seed — a claim holds over splits, not for one lucky split;
* the seed: the run seed seeds the solvers and the models (``benchmark_seeds``).

Runs are kept one folder per (problem, method, budget, seed) under the results root, with the
journal and ``run.json``; a run whose ``run.json`` exists is not run again, so a campaign stopped
half-way resumes, and runs with the same settings are shared between claims.
"""

from __future__ import annotations

import json
import math
import re
import sys
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from admm_automl.benchmarks import stats

#: the fractions of the budget at which a claim reports its medians unless it names others
CHECKPOINTS = (0.1, 0.3, 1.0)

#: shared datasets whose labels carry no signal (every method scores at chance on pollen, test
#: AUROC 0.49–0.51), so the ranks on them are noise: a claim over several problems that holds
#: one prints its ranks and verdict without it too, beside the rule's own
NO_SIGNAL = ("pollen",)


#: what a pair's value can be (:class:`Claim`'s ``kind``)
KINDS = ("incumbent", "time_to", "time_to_reference", "constrained", "infeasible")


@dataclass(frozen=True)
class Claim:
    """One headline claim of a paper and how it is decided.

    ``methods`` maps the table's names to runner labels; ``method`` is the claimed method and
    ``against`` the ones it is compared with (names of ``methods``). ``kind`` says what a pair's
    value is: ``"incumbent"`` (the best loss found by each checkpoint), ``"time_to"`` (seconds to
    reach ``target``, ∞ if never), ``"time_to_reference"`` (seconds to reach the final value
    ``speedup_reference`` found on the same pair, ∞ if never: Liu et al. 2020's speedup read pair
    by pair), ``"constrained"`` (the best feasible validation loss of a constrained search,
    :func:`run_constrained`) or ``"infeasible"`` (one minus the fraction of a constrained search's
    evaluations that met every constraint, from the same runs). ``rule`` is a rule of
    :mod:`admm_automl.benchmarks.stats`, stated in the printed table as written here.
    ``max_evals`` instead of a time budget makes the checkpoints fractions of the evaluations.
    ``checkpoints`` are the fractions of the budget at which the medians are printed and a
    multi-checkpoint rule (``Best``, ``Matches``) decides; ``scoring`` is the metric a data
    problem's loss is one minus (scikit-learn's name).
    A pairwise rule (``Lower``) decides against the first of ``against``; the others are shown
    with their own wins and p.
    """

    name: str
    paper: str
    problems: tuple[str, ...]
    methods: Mapping[str, str]
    method: str
    against: tuple[str, ...]
    rule: Any
    budget: float | None = None
    max_evals: int | None = None
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    kind: str = "incumbent"
    space: str = "paper_large"
    validation_size: float = 0.2
    trial_timeout: float | None = None
    target: float | None = None
    speedup_reference: str | None = None
    paper_numbers: Mapping[str, Any] = field(default_factory=dict)
    #: our methods' run options (make_optimizer's); a callable value is called with the run's
    #: problem (an option that depends on the data, such as the first training size)
    options: Mapping[str, Any] = field(default_factory=dict)
    constraints: tuple[Any, ...] = ()  # the constraint specifications of a constrained claim
    checkpoints: tuple[float, ...] = CHECKPOINTS
    scoring: str = "roc_auc"
    #: a held-out share of each dataset's rows (stratified, split by the run's seed) on which the
    #: incumbent at each checkpoint is refitted on the search rows and scored after the run
    test_size: float | None = None
    #: print each method's training cost: the summed durations of its evaluations up to its
    #: final incumbent and in all, and the ranks at equal training cost (a paper whose budget is
    #: the learners' training time, not the method's own planning: BAPI)
    training_cost: bool = False

    def __post_init__(self) -> None:
        names = {self.method, *self.against}
        if not names <= set(self.methods):
            raise ValueError(f"claim {self.name!r}: {sorted(names - set(self.methods))} not in "
                             "its methods")
        if (self.budget is None) == (self.max_evals is None):
            raise ValueError(f"claim {self.name!r}: give a time budget or max_evals")
        if self.speedup_reference is not None and self.speedup_reference not in self.methods:
            raise ValueError(f"claim {self.name!r}: the speedup reference "
                             f"{self.speedup_reference!r} is not one of its methods")
        if self.kind not in KINDS:
            raise ValueError(f"claim {self.name!r}: kind {self.kind!r} is not one of {KINDS}")
        if self.kind == "time_to_reference" and self.speedup_reference is None:
            raise ValueError(f"claim {self.name!r}: time_to_reference needs a speedup_reference")

    @property
    def constrained(self) -> bool:
        """Whether its runs are constrained searches by the estimator (:func:`run_constrained`)."""
        return self.kind in ("constrained", "infeasible")

    @property
    def limit(self) -> str:
        """The budget's name in folder names: ``T60`` (seconds) or ``E200`` (evaluations)."""
        return f"T{self.budget:g}" if self.budget is not None else f"E{self.max_evals}"

    def rule_text(self) -> str:
        if isinstance(self.rule, stats.Lower) and len(self.against) > 1:
            text = (self.rule.text(self.method, self.against[0])
                    + f" ({', '.join(self.against[1:])} shown, not in the rule)")
        else:
            text = self.rule.text(self.method, ", ".join(self.against))
        if self.kind == "infeasible":
            text += (" — on the infeasible fraction: below means a larger fraction of "
                     "evaluations that met every constraint")
        return text


@dataclass(frozen=True)
class Job:
    """One run of a claim."""

    claim: Claim
    problem: str
    method: str  # a name of claim.methods
    seed: int

    def folder(self, root: Path) -> Path:
        label = re.sub(r"[^A-Za-z0-9_.=-]+", "_", self.claim.methods[self.method]).strip("_")
        return root / self.problem / label / self.claim.limit / f"seed{self.seed}"


def jobs(claims: Sequence[Claim]) -> list[Job]:
    """Every run of ``claims``, seeds outermost so that a campaign stopped early has every
    method on its first seeds; runs shared by two claims appear once."""
    out, seen = [], {}
    for seed in sorted({s for c in claims for s in c.seeds}):
        for claim in claims:
            if seed not in claim.seeds:
                continue
            for problem in claim.problems:
                for method in claim.methods:
                    job = Job(claim, problem, method, seed)
                    key = job.folder(Path("."))
                    if key in seen:
                        _check_shared(seen[key], claim, key)
                        continue
                    seen[key] = claim
                    out.append(job)
    return out


def _check_shared(first: Claim, second: Claim, folder: Path) -> None:
    """Two claims share a run folder only if they would make the same run."""
    keys = ("space", "validation_size", "trial_timeout", "options", "constraints", "scoring",
            "test_size")
    differ = [k for k in keys if getattr(first, k) != getattr(second, k)]
    if first.constrained != second.constrained:
        differ.append("kind")  # a constrained run is made by the estimator
    if differ:
        raise ValueError(f"claims {first.name!r} and {second.name!r} would share the runs in "
                         f"{folder} but differ in {', '.join(differ)}")


# ------------------------------------------------------------------------------------ running
def load_problem(claim: Claim, name: str, seed: int, data_dir: str | None) -> Any:
    """The runner's problem ``name`` of ``claim`` for run ``seed``: the artificial objective
    (one fixed function for every run), or the dataset on the claim's space with the split of
    this seed."""
    from admm_automl.benchmarks.runner import artificial_problem, data_problem
    from admm_automl.datasets import load_dataset

    if name == "artificial":
        return artificial_problem(claim.space, seed=0)
    X, y = search_rows(claim, *load_dataset(name, data_dir), seed)[:2]
    return data_problem(name, X, y, space=claim.space, validation_size=claim.validation_size,
                        split_seed=seed, scoring=claim.scoring)


def search_rows(claim: Claim, X: Any, y: Any, seed: int) -> tuple[Any, Any, Any, Any]:
    """``(X_search, y_search, X_test, y_test)``: the claim's test rows held out (stratified, by
    the run's seed), or all rows for the search and none for a test."""
    if not claim.test_size:
        return X, y, None, None
    from sklearn.model_selection import train_test_split

    X_search, X_test, y_search, y_test = train_test_split(
        X, y, test_size=claim.test_size, stratify=y, random_state=seed)
    return X_search, y_search, X_test, y_test


def held_out_losses(job: Job, records: Sequence[Mapping[str, Any]], summary: Mapping[str, Any],
                space: Any, data_dir: str | None) -> dict[str, float]:
    """The test loss of the incumbent at each checkpoint: its configuration from the journal,
    refitted on all search rows (the always-applied preprocessing first, the run's seed as the
    models' seed, the rounds early stopping kept) and scored on the held-out rows, as a user's final model would be."""
    from admm_automl.datasets import load_dataset
    from admm_automl.evaluation.data import make_preprocessor
    from admm_automl.evaluation.metrics import get_metric
    from admm_automl.journal import observation_of

    claim = job.claim
    X, y, X_test, y_test = search_rows(claim, *load_dataset(job.problem, data_dir), job.seed)
    target = "binary" if len(set(y)) == 2 else "multiclass"
    metric = get_metric(claim.scoring, "classification", target)
    scorer = metric.make_scorer()
    out: dict[str, float] = {}
    losses: dict[int, float] = {}  # eval_id -> test loss (an incumbent may last checkpoints)
    for f in claim.checkpoints:
        done = [r for r in _scores(records)
                if float(r["time"]) <= f * claim.budget and r.get("status") == "ok"]
        if not done:  # nothing succeeded yet: no model, the worst loss (as on validation)
            out[f"{f:g}"] = float(summary.get("worst_loss") or math.nan)
            continue
        best = min(done, key=lambda r: float(r["loss"]))
        if best["eval_id"] not in losses:
            z, theta = space.encode(best["config"])
            pipeline = space.to_pipeline(z, theta, preprocessor=make_preprocessor(X),
                                         random_state=job.seed,
                                         rounds=observation_of(best).refit_rounds)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                pipeline.fit(X, y)
                losses[best["eval_id"]] = metric.loss(scorer, pipeline, X_test, y_test)
        out[f"{f:g}"] = losses[best["eval_id"]]
    return out


def run_job(job: Job, root: Path, data_dir: str | None) -> dict[str, Any]:
    """Make one run (in this process) and write its journal and ``run.json``."""
    from admm_automl.benchmarks.runner import run

    claim, out = job.claim, job.folder(root)
    if claim.constrained:
        return run_constrained(job, out, data_dir)
    problem = load_problem(claim, job.problem, job.seed, data_dir)
    options = {k: v(problem) if callable(v) else v for k, v in claim.options.items()}
    summary = run(problem, claim.methods[job.method], seed=job.seed, time_budget=claim.budget,
                  max_evals=claim.max_evals, out_dir=out, trial_timeout=claim.trial_timeout,
                  overhead_aware=False, method_options=options)
    if claim.test_size and claim.budget is not None:  # after the run, outside its budget
        from admm_automl.journal import Journal

        summary["test"] = held_out_losses(job, Journal.read(out / "journal.jsonl"), summary,
                                      problem.space, data_dir)
        (out / "run.json").write_text(json.dumps(summary, indent=1, default=str))
    return summary


def run_constrained(job: Job, out: Path, data_dir: str | None) -> dict[str, Any]:
    """A constrained search by the estimator (``constraint_mode`` is the method's label: CST =
    ``"admm"``, penalty, UCST = ``"filter"``) on a train/test split of this seed; ``run.json``
    holds the best feasible validation loss, the feasible fraction of the evaluations, and the
    final model's test AUROC and constraint values on the test rows."""
    import time

    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import train_test_split

    from admm_automl import ADMM
    from admm_automl.benchmarks.runner import code_commit
    from admm_automl.constraints import make_constraints
    from admm_automl.datasets import load_dataset
    from admm_automl.evaluation.splits import Split

    claim = job.claim
    specs = list(claim.constraints)
    X, y = load_dataset(job.problem, data_dir)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.25, stratify=y, random_state=job.seed)
    out.mkdir(parents=True, exist_ok=True)
    model = ADMM(search_space=claim.space, constraints=specs,
                 constraint_mode=claim.methods[job.method], time_budget=claim.budget,
                 random_state=job.seed, ensemble_size=0, n_jobs=1,
                 validation_size=claim.validation_size, output_dir=str(out / "run"))
    start = time.monotonic()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X_train, y_train)
    wall = time.monotonic() - start
    h = model.history_
    constraints = make_constraints(specs)
    feasible = (h["status"] == "ok").to_numpy(dtype=bool, copy=True)
    for c in constraints:
        values = h[f"constraint:{c.key}"].to_numpy(dtype=float)
        feasible &= np.array([c.feasible(v) for v in values])
    test_rows = np.arange(len(y_test))
    y_test = np.asarray(y_test)
    test = {"roc_auc": float(roc_auc_score(y_test, model.predict_proba(X_test)[:, 1]))}
    for c in constraints:
        c.bind(X_test, y_test, groups=None, splits=[Split(test_rows, test_rows, test_rows)],
               task="classification")
        test[c.key] = float(c.measure(model.best_pipeline_, X_test, y_test, test_rows))
    summary = {
        "problem": job.problem, "method": claim.methods[job.method], "seed": job.seed,
        "time_budget": claim.budget, "wall_time": wall, "n_evals": int(len(h)),
        "best_loss": float(h["loss"][feasible].min()) if feasible.any() else None,
        "feasible_fraction": float(feasible.mean()) if len(h) else 0.0,
        "test": test, "test_feasible": all(c.feasible(test[c.key]) for c in constraints),
        "worst_loss": 1.0, "commit": code_commit(),
    }
    (out / "run.json").write_text(json.dumps(summary, indent=1))
    return summary


def run_campaign(claims: Sequence[Claim], root: Path, *, script: str, paper: str,
                 parallel: int, data_dir: str | None, force: bool = False,
                 extra: Sequence[str] = ()) -> None:
    """Run every job of ``claims`` not done yet, each in its own process (``script --run-one``
    plus ``extra`` arguments), ``parallel`` at a time."""
    import os
    import platform

    from admm_automl.benchmarks.runner import run_processes

    todo = [j for j in jobs(claims) if force or not (j.folder(root) / "run.json").is_file()]
    print(f"{len(todo)} runs to make, {parallel} at a time, on {platform.node()} "
          f"({os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}); results in {root}",
          flush=True)
    commands = [[sys.executable, script, "--paper", paper, "--run-one", "--claims", j.claim.name,
                 "--problem", j.problem, "--method", j.method, "--seed", str(j.seed),
                 "--root", str(root), *extra] + (["--data-dir", data_dir] if data_dir else [])
                for j in todo]
    run_processes(commands, parallel)


# ----------------------------------------------------------------------------------- analysis
@dataclass
class Runs:
    """The finished runs of one claim: per (problem, method) the seeds' summaries and journals."""

    claim: Claim
    summaries: dict[tuple[str, str], dict[int, dict[str, Any]]]
    records: dict[tuple[str, str], dict[int, list[dict[str, Any]]]]

    @classmethod
    def load(cls, claim: Claim, root: Path) -> "Runs":
        from admm_automl.journal import Journal

        summaries: dict = {}
        records: dict = {}
        for problem in claim.problems:
            for method in claim.methods:
                for seed in claim.seeds:
                    folder = Job(claim, problem, method, seed).folder(root)
                    path = folder / "run.json"
                    if not path.is_file():
                        continue
                    summaries.setdefault((problem, method), {})[seed] = json.loads(path.read_text())
                    journal = folder / "journal.jsonl"
                    records.setdefault((problem, method), {})[seed] = (
                        Journal.read(journal) if journal.is_file() else [])
        return cls(claim, summaries, records)

    def without(self, problems: Sequence[str]) -> "Runs":
        """The same runs, the claim read on its other problems only."""
        kept = tuple(p for p in self.claim.problems if p not in problems)
        return Runs(replace(self.claim, problems=kept), self.summaries, self.records)

    def pairs(self) -> list[tuple[str, int]]:
        """The (problem, seed) pairs every method of the claim has finished."""
        return [(p, s) for p in self.claim.problems for s in self.claim.seeds
                if all(s in self.summaries.get((p, m), {}) for m in self.claim.methods)]

    def value(self, problem: str, method: str, seed: int, fraction: float = 1.0,
              full_only: bool = True) -> float:
        """The pair's value for ``method`` at ``fraction`` of the budget (see :class:`Claim`);
        ``full_only=False`` lets an incumbent be trained on part of the rows."""
        claim, summary = self.claim, self.summaries[problem, method][seed]
        if claim.kind == "constrained":
            best = summary["best_loss"]
            return math.inf if best is None else float(best)
        if claim.kind == "infeasible":
            return 1.0 - float(summary["feasible_fraction"])
        records = self.records[problem, method][seed]
        if claim.kind == "time_to":
            return time_to(records, claim.target)
        if claim.kind == "time_to_reference":
            ref = claim.speedup_reference
            target = incumbent(self.records[problem, ref][seed], 1.0, claim,
                               self.summaries[problem, ref][seed])
            return time_to(records, target)
        return incumbent(records, fraction, claim, summary, full_only)

    def matrix(self, fraction: float = 1.0, full_only: bool = True
               ) -> tuple[list[str], np.ndarray]:
        """Values of every method (columns, in ``claim.methods`` order) over the pairs (rows)."""
        names = list(self.claim.methods)
        return names, np.array([[self.value(p, m, s, fraction, full_only) for m in names]
                                for p, s in self.pairs()], dtype=float).reshape(-1, len(names))

    def machine_load(self) -> str:
        """The machine's 1-minute load at the end of the runs (two single-core runs at a time
        is 2): a timed comparison is fair only on a machine that was otherwise quiet."""
        loads = [s["machine"]["load"] for runs in self.summaries.values()
                 for s in runs.values() if s.get("machine", {}).get("load") is not None]
        if not loads:
            return "load not recorded"
        return f"load at the runs' ends median {np.median(loads):.1f}, max {max(loads):.1f}"

    def commits(self) -> set[str]:
        return {str(s.get("commit")) for runs in self.summaries.values() for s in runs.values()}


def _scores(records: Sequence[Mapping[str, Any]], full_only: bool = True
            ) -> list[Mapping[str, Any]]:
    """The finished evaluations that can be an incumbent: on all training rows (``full_only``),
    or on any number of them."""
    from admm_automl.benchmarks.analysis import is_score

    if full_only:
        return [r for r in records if is_score(r)]
    return [r for r in records if not r.get("budget_stop")]


def incumbent(records: Sequence[Mapping[str, Any]], fraction: float, claim: Claim,
              summary: Mapping[str, Any], full_only: bool = True) -> float:
    """The best full-fidelity loss (any fidelity's without ``full_only``) finished by
    ``fraction`` of the budget (of the time, or of the evaluations for an evaluation budget); the
    problem's worst loss (NaN for the artificial objective) before the first."""
    worst = summary.get("worst_loss")
    worst = math.nan if worst is None else float(worst)
    scores = _scores(records, full_only)
    if claim.budget is not None:
        done = [r["loss"] for r in scores if float(r["time"]) <= fraction * claim.budget]
    else:
        done = [r["loss"] for r in scores[: max(1, int(round(fraction * claim.max_evals)))]]
    finite = [float(v) for v in done if v is not None and math.isfinite(float(v))]
    return min(finite) if finite else worst


def time_to(records: Sequence[Mapping[str, Any]], target: float) -> float:
    """Seconds until a full-fidelity loss at or below ``target`` is finished (∞ if never)."""
    hits = [float(r["time"]) for r in _scores(records) if float(r["loss"]) <= target + 1e-12]
    return min(hits) if hits else math.inf


def decide(runs: Runs) -> stats.Verdict:
    """The claim's verdict by its rule, on the pairs every method has finished."""
    claim = runs.claim
    names, _ = runs.matrix()
    index = {n: i for i, n in enumerate(names)}
    if not runs.pairs():
        return stats.Verdict("not reproduced", "no pair has a run of every method")
    if isinstance(claim.rule, stats.Lower):
        _, values = runs.matrix(1.0)
        other = claim.against[0]  # the rule's comparison; the others are shown
        return claim.rule.decide(values[:, index[claim.method]], values[:, index[other]])
    checkpoints = {}
    for f in claim.checkpoints:
        _, values = runs.matrix(f)
        checkpoints[f"{f:g}T"] = (values[:, index[claim.method]],
                                  {o: values[:, index[o]] for o in claim.against})
    return claim.rule.decide(checkpoints)


def _quantile(values: np.ndarray, q: float) -> float:
    """The ``q`` % quantile ignoring NaN; with infinite values (a target never reached) the
    nearest order statistic, since interpolating towards ∞ gives NaN."""
    v = np.asarray(values, dtype=float)
    if not (np.isfinite(v) | np.isinf(v)).any():
        return math.nan
    method = "nearest" if np.isinf(v).any() else "linear"
    return float(np.nanpercentile(v, q, method=method))


def _commits(commits: set[str]) -> str:
    """The code the runs were made with: the commits, or their number and three of them when
    there are many (each run's ``run.json`` names its own; ``+dirty``: with changes not yet
    committed)."""
    names = sorted(commits)
    if len(names) <= 4:
        return "code " + ", ".join(names)
    return f"code of {len(names)} commits ({', '.join(names[:3])}, …; each run.json names its own)"


def _fmt(x: float, digits: int = 4) -> str:
    if x is None or not np.isfinite(x):
        return "∞" if x is not None and np.isinf(x) else "—"
    return f"{x:.{digits}g}"


def report(runs: Runs) -> str:
    """The printed section of one claim: what the paper says, the rule, the medians (IQR) at
    the checkpoints, the mean rank with its bootstrap interval, each comparison's wins and
    paired p, the paper's speedup where it defines one, and the verdict."""
    claim = runs.claim
    pairs = runs.pairs()
    verdict = decide(runs)
    unit = "evaluations" if claim.budget is None else "s"
    limit = claim.max_evals if claim.budget is None else claim.budget
    lines = [f"#### {claim.name}: {claim.paper}", "",
             f"Problems: {', '.join(claim.problems)}; seeds {min(claim.seeds)}–{max(claim.seeds)}; "
             f"budget T = {limit:g} {unit}; {len(pairs)} complete (problem, seed) pairs; "
             f"{_commits(runs.commits())}; {runs.machine_load()}.", "",
             f"Rule (written before the runs): {claim.rule_text()}.", ""]
    if not pairs:
        return "\n".join(lines + ["No complete pair yet.", ""])
    what = {"incumbent": "best loss so far", "time_to": f"seconds to reach {claim.target}",
            "time_to_reference": f"seconds to reach {claim.speedup_reference}'s final value on "
                                 "the same pair",
            "constrained": "best feasible validation loss",
            "infeasible": "infeasible fraction of the evaluations (1 − the fraction that met "
                          "every constraint; lower is better)"}[claim.kind]
    fractions = (1.0,) if claim.kind != "incumbent" else claim.checkpoints
    head = " | ".join(f"{f:g}T" for f in fractions)
    timed = claim.budget is not None
    lines += [f"Median (25–75 %) of the {what} over the pairs; mean rank at T with a 95 % "
              "bootstrap interval; n = median evaluations per run, full-data n = median of those "
              "on all training rows (the only candidates for the incumbent)"
              + ("; in trials = median share of T spent inside evaluations (the rest is the "
                 "method's own planning, the set-up and the engine)" if timed else "") + ".", "",
              f"| method | {head} | rank at T | n | full-data n |" + (" in trials |" if timed else ""),
              "|---|" + "---|" * (len(fractions) + 3 + timed)]
    names, final = runs.matrix(1.0)
    mean, low, high = stats.rank_intervals(final)
    columns = {f: runs.matrix(f)[1] for f in fractions}
    for i, name in enumerate(names):
        cells = []
        for f in fractions:
            v = columns[f][:, i]
            q1, med, q3 = (_quantile(v, q) for q in (25, 50, 75))
            cells.append(f"{_fmt(med)} ({_fmt(q1, 3)}–{_fmt(q3, 3)})")
        n = np.median([runs.summaries[p, name][s].get("n_evals", 0) for p, s in pairs])
        full = np.median([len(_scores(runs.records.get((p, name), {}).get(s, [])))
                          for p, s in pairs])
        busy = ""
        if timed:
            share = np.median([_busy(runs.records.get((p, name), {}).get(s, []))
                               for p, s in pairs]) / limit
            busy = f" {share:.0%} |"
        lines.append(f"| {name} | " + " | ".join(cells)
                     + f" | {mean[i]:.2f} [{low[i]:.2f}, {high[i]:.2f}] | {n:.0f} | {full:.0f} |"
                     + busy)
    lines += ["", "| comparison at T | wins | losses | one-sided p (lower) |", "|---|---|---|---|"]
    me = final[:, names.index(claim.method)]
    for other in claim.against:
        them = final[:, names.index(other)]
        lines.append(f"| {claim.method} vs {other} | {stats.win_fraction(me, them):.0%} | "
                     f"{stats.win_fraction(them, me):.0%} | {stats.paired_p(me, them):.2g} |")
    if claim.test_size and claim.budget is not None:
        lines += ["", held_out_table(runs)]
    if claim.constrained:
        lines += ["", constrained_table(runs)]
    if claim.kind == "incumbent" and _has_partial_training(runs):
        lines += ["", any_size_table(runs)]
    if claim.speedup_reference:
        lines += ["", speedup_table(runs)]
    if claim.training_cost:
        lines += ["", training_cost_table(runs)]
    noise = [p for p in NO_SIGNAL if p in claim.problems]
    if noise and len(noise) < len(claim.problems):
        lines += ["", without_noise(runs, noise)]
    lines += ["", f"**Verdict: {verdict.word}** — {verdict.reason}.", ""]
    return "\n".join(lines)


def without_noise(runs: Runs, problems: Sequence[str]) -> str:
    """The claim's ranks and verdict by the same rule on its problems but ``problems`` (whose
    labels carry no signal, :data:`NO_SIGNAL`): shown beside the rule's verdict, not instead."""
    rest = runs.without(problems)
    if not rest.pairs():
        return f"Without {', '.join(problems)}: no complete pair."
    names, final = rest.matrix(1.0)
    mean = stats.rank_intervals(final)[0]
    verdict = decide(rest)
    ranks = ", ".join(f"{name} {m:.2f}" for name, m in zip(names, mean))
    return (f"Without {', '.join(problems)} (labels that carry no signal: its ranks are noise), "
            f"{len(rest.pairs())} pairs: mean rank at T {ranks}; by the same rule "
            f"{verdict.word} — {verdict.reason}.")


def held_out_table(runs: Runs) -> str:
    """Median (25–75 %) test loss of each method's incumbent at the checkpoints
    (:func:`held_out_losses`), over the pairs whose runs recorded one; not the rule's reading."""
    checkpoints = runs.claim.checkpoints
    rows = [f"Not the rule: the test loss of the incumbent at each checkpoint, refitted on the "
            f"search rows and scored on the {runs.claim.test_size:.0%} held out", "",
            "| method | " + " | ".join(f"{f:g}T" for f in checkpoints) + " |",
            "|---|" + "---|" * len(checkpoints)]
    pairs = runs.pairs()
    for name in runs.claim.methods:
        tests = [runs.summaries[p, name][s].get("test") or {} for p, s in pairs]
        cells = []
        for f in checkpoints:
            v = np.array([t.get(f"{f:g}", math.nan) for t in tests], dtype=float)
            cells.append(f"{_fmt(_quantile(v, 50))} ({_fmt(_quantile(v, 25), 3)}–"
                         f"{_fmt(_quantile(v, 75), 3)})")
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def _busy(records: Sequence[Mapping[str, Any]]) -> float:
    """The seconds a run spent inside its evaluations (their summed durations)."""
    return float(sum(float(r.get("duration") or 0.0) for r in records))


def _has_partial_training(runs: Runs) -> bool:
    return any((r.get("fidelity") or 1.0) < 1.0 for by_seed in runs.records.values()
               for records in by_seed.values() for r in records)


def any_size_table(runs: Runs) -> str:
    """The medians again with an incumbent trained on any number of rows: not the rule's
    reading (a loss on part of the rows is not a model a user gets), shown because a paper's
    curves of a multi-fidelity method may plot it."""
    checkpoints = runs.claim.checkpoints
    rows = ["Not the rule: the median best loss at any training size (a multi-fidelity method's "
            "incumbent before it reaches all rows)", "",
            "| method | " + " | ".join(f"{f:g}T" for f in checkpoints) + " |",
            "|---|" + "---|" * len(checkpoints)]
    columns = {f: runs.matrix(f, full_only=False) for f in checkpoints}
    for i, name in enumerate(runs.claim.methods):
        rows.append(f"| {name} | " + " | ".join(_fmt(float(np.nanmedian(columns[f][1][:, i])))
                                                for f in checkpoints) + " |")
    return "\n".join(rows)


def cost_curve(records: Sequence[Mapping[str, Any]]) -> list[tuple[float, float]]:
    """``(training seconds so far, best full-data loss so far)`` after each evaluation, in the
    order they finished: the training seconds are the summed durations of the evaluations."""
    from admm_automl.benchmarks.analysis import is_score

    spent, best, curve = 0.0, math.inf, []
    for r in sorted(records, key=lambda r: float(r.get("time") or 0.0)):
        spent += float(r.get("duration") or 0.0)
        loss = float(r["loss"]) if r.get("loss") is not None else math.nan
        if is_score(r) and math.isfinite(loss):
            best = min(best, loss)
        curve.append((spent, best))
    return curve


def training_cost_table(runs: Runs) -> str:
    """Each method's training cost (the summed durations of its evaluations: the budget of a
    paper whose cost is training time) to reach its final incumbent and in all, and the mean
    rank when every method of a pair is read at the training seconds its least-trained method
    spent — the comparison with each method's own planning time left out."""
    names, pairs = list(runs.claim.methods), runs.pairs()
    curves = {(p, s, m): cost_curve(runs.records.get((p, m), {}).get(s, []))
              for p, s in pairs for m in names}

    def best_by(curve: list[tuple[float, float]], seconds: float) -> float:
        done = [b for t, b in curve if t <= seconds + 1e-9]
        return done[-1] if done else math.inf

    equal = np.array([[best_by(curves[p, s, m], min(curves[p, s, k][-1][0] if curves[p, s, k]
                                                     else 0.0 for k in names))
                       for m in names] for p, s in pairs], dtype=float).reshape(-1, len(names))
    ranks = stats.mean_ranks(equal) if len(pairs) else np.full(len(names), math.nan)
    rows = ["Training cost (summed evaluation durations, s; median over the pairs): to reach the "
            "final incumbent, and in all; mean rank when each pair's methods are read at the "
            "training seconds its least-trained method spent (each method's own planning left "
            "out)", "", "| method | to its final value | in all | rank at equal training cost |",
            "|---|---|---|---|"]
    for i, name in enumerate(names):
        to_final, total = [], []
        for p, s in pairs:
            curve = curves[p, s, name]
            final = curve[-1][1] if curve else math.inf
            to_final.append(next((t for t, b in curve if b <= final + 1e-12), math.nan))
            total.append(curve[-1][0] if curve else 0.0)
        rows.append(f"| {name} | {np.nanmedian(to_final):.1f} | {np.median(total):.1f} "
                    f"| {ranks[i]:.2f} |")
    return "\n".join(rows)


def speedup_table(runs: Runs) -> str:
    """Liu et al. 2020's speedup (Tables 1, A4, A5): the time the reference's median incumbent
    curve takes to reach its own final value over the time the method's median curve takes to
    reach that value, per problem, with the paper's number beside it."""
    from admm_automl.benchmarks.analysis import speedup

    claim = runs.claim
    ref = claim.speedup_reference
    grid_rows = ["| problem | method | speedup | improvement | paper speedup | paper improvement |",
                 "|---|---|---|---|---|---|"]
    for problem in claim.problems:
        curves = {m: _median_curve(runs, problem, m) for m in claim.methods}
        if any(c is None for c in curves.values()):
            continue
        grid, ref_curve = curves[ref]
        for m in (claim.method, *[a for a in claim.against if a != ref]):
            s = speedup(grid, ref_curve, curves[m][1])
            paper = claim.paper_numbers.get(m, {}).get(problem, (None, None))
            grid_rows.append(f"| {problem} | {m} | {_fmt(s['speedup'], 3)}× | "
                             f"{_fmt(s['improvement'], 3)} % | {_fmt(paper[0], 3)}× | "
                             f"{_fmt(paper[1], 3)} % |")
    return (f"Speedup over {ref} (Liu et al. 2020's definition, on median curves over seeds)\n\n"
            + "\n".join(grid_rows))


def _median_curve(runs: Runs, problem: str, method: str) -> tuple[np.ndarray, np.ndarray] | None:
    from admm_automl.benchmarks.analysis import incumbent_curve, time_grid

    by_seed = runs.records.get((problem, method))
    if not by_seed or runs.claim.budget is None:
        return None
    grid = time_grid(runs.claim.budget)
    worst = [runs.summaries[problem, method][s].get("worst_loss") for s in by_seed]
    curves = np.array([incumbent_curve(r, grid, math.nan if w is None else float(w))
                       for r, w in zip(by_seed.values(), worst)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns stay NaN
        return grid, np.nanmedian(curves, axis=0)


def constrained_table(runs: Runs) -> str:
    """Per method: median feasible fraction of the evaluations, test AUROC of the final model,
    and how many final models met every constraint on the test rows."""
    rows = ["| method | feasible fraction | test AUROC | test-feasible final models |",
            "|---|---|---|---|"]
    for m in runs.claim.methods:
        done = [s for (p, mm), by_seed in runs.summaries.items() if mm == m
                for s in by_seed.values()]
        if not done:
            continue
        rows.append(f"| {m} | {np.median([s['feasible_fraction'] for s in done]):.2f} | "
                    f"{np.median([s['test']['roc_auc'] for s in done]):.4f} | "
                    f"{sum(s['test_feasible'] for s in done)}/{len(done)} |")
    return "\n".join(rows)
