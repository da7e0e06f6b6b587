"""Learn the warm-start portfolio of the ``default`` space offline, and measure it
leave-one-dataset-out.

Greedy portfolio construction as in auto-sklearn 2.0 (Feurer, Eggensperger, Falkner, Lindauer and
Hutter, JMLR 2022, §3.2 / Algorithm 1):

1. **Candidates** (bounded): on each dataset (a stratified subsample of at most ``--max-rows``
   rows), a short search of the ``default`` space (``--search-evals`` evaluations of ADMM with
   4 + 4t evaluations per sub-problem, so that the z-step comes early; ``--timeout`` seconds per
   trial; no portfolio; an evaluation budget, not a time budget, so that a busy machine makes the
   search slower but not shorter) and its best configuration of each of the ``--per-dataset`` best algorithms (auto-sklearn 2.0 takes
   the incumbent of each dataset's search; one per algorithm keeps the candidates diverse), plus
   every algorithm's default configuration (data-free).
2. **Performance matrix**: every candidate evaluated on every dataset's subsample by the engine of
   a run (``cv="auto"`` folds, seed 0, one single-threaded worker, ``--timeout`` seconds per trial:
   a candidate too slow for that gets the worst loss, so the portfolio stays cheap).
3. **Greedy construction**: losses normalised per dataset to [0, 1] (best to worst candidate);
   start empty and add, ``--size`` times, the candidate that most lowers the mean over datasets of
   the portfolio's best normalised loss (stopping early when none lowers it).

Leave-one-dataset-out: for each dataset t the portfolio is rebuilt without t's column and without
the candidates that t's own search found, and scored on t (the normalised loss of its best
configuration there, against the default configuration's). Those held-out portfolios are written
to ``experiments/portfolio_lodo.yaml``, so that ``experiments/vs_automl.py`` never runs a portfolio
that saw its test dataset; the portfolio built on all datasets goes into the package
(``admm_automl/space/portfolios/default.yaml``).

``--task`` says which list it learns: ``classification`` (the default; the shared datasets are
binary) or ``regression`` (``experiments/regression_data.py`` writes a data directory of Torgo's
regression datasets for it: the shared ones have no regression target). Each task's run rewrites
only its own list of the package's portfolio and its own datasets' entries of the held-out file,
so the two are learned by separate runs, in either order. Classification subsamples are
stratified and scored by 1 − AUROC (log-loss for a multiclass target), regression ones by RMSE —
each task's default metric; the normalisation per dataset makes the scales comparable.

**Resumable, in parts.** Each dataset's search and each (dataset, candidate) loss are written to
the work folder as they finish (``--work``, default ``experiments/results/portfolio/<scale>``:
``search/<dataset>.json``, ``matrix/<dataset>.jsonl`` with one line per candidate, keyed by its
configuration); a run that is stopped starts again where it was, and a candidate added later is
evaluated alone. ``--parallel N`` runs N datasets at once, one single-core process each (phase 1,
then phase 2, whose candidates are phase 1's). The time reported is the sum over the parts.

Usage (one core per process; run it niced on a shared machine)::

    nice -n 10 python experiments/portfolio.py --data-dir ../shared/data --parallel 2  # full scale
    nice -n 10 python experiments/portfolio.py --task regression --data-dir ../regression-data \\
        --parallel 2                                                    # the regression list
    nice -n 10 python experiments/portfolio.py --data-dir ../shared/data --max-rows 500 \\
        --search-evals 16 --per-dataset 1 --timeout 10                            # modest scale
    python experiments/portfolio.py --smoke --data-dir ../shared/data              # CI: seconds
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "experiments" / "results" / "portfolio"
PACKAGE_PORTFOLIO = REPO / "admm_automl" / "space" / "portfolios" / "default.yaml"
LODO_FILE = REPO / "experiments" / "portfolio_lodo.yaml"
SPACE = "default"
#: the candidate the portfolio is measured against: the initial pipeline's estimator
#: (HistGradientBoosting), listed first among the default configurations
DEFAULT_INDEX = 0


def subsample(X, y, max_rows: int, seed: int = 0, stratify: bool = True):
    """A subsample of at most ``max_rows`` rows (all rows when there are fewer), stratified by
    the label for classification."""
    from sklearn.model_selection import train_test_split

    if len(y) <= max_rows:
        return X, y
    X, _, y, _ = train_test_split(X, y, train_size=max_rows, stratify=y if stratify else None,
                                  random_state=seed)
    return X, y


def load(name: str, data_dir: str, max_rows: int, task: str = "classification"):
    from admm_automl.datasets import load_dataset

    X, y = load_dataset(name, data_dir)
    X, y = subsample(X, y, max_rows, stratify=task == "classification")
    if task == "classification":
        _, y = np.unique(y, return_inverse=True)
    else:
        y = np.asarray(y, dtype=float)
    return X, y


def default_configs(space) -> list[dict]:
    """Every estimator at its default hyperparameters, without a scaler."""
    enc = space.encoding
    module = enc.module_names.index("estimator")
    configs = []
    for j in range(enc.n_choices[module]):
        z = tuple(j if m == module else 0 for m in range(len(enc.n_choices)))
        configs.append(space.decode(z, enc.initial_theta))
    return configs


def search_candidates(X, y, evals: int, per_dataset: int, timeout: float,
                      task: str = "classification") -> list[dict]:
    """The best configuration of each of the ``per_dataset`` best algorithms of a short search."""
    from admm_automl import ADMMClassifier, ADMMRegressor

    estimator = ADMMClassifier if task == "classification" else ADMMRegressor
    try:
        model = estimator(search_space=SPACE, portfolio=None, max_evals=evals, inner_iter=4,
                          inner_iter_step=4, trial_timeout=timeout, random_state=0,
                          n_jobs=1).fit(X, y)
    except RuntimeError as err:  # nothing finished within the budget
        print(f"  no candidate: {err}", flush=True)
        return []
    res = model.cv_results_
    best: dict[str, tuple[float, dict]] = {}
    for params, score, status, fidelity in zip(res["params"], res["mean_test_score"],
                                               res["status"], res["fidelity"]):
        if status != "ok" or fidelity < 1.0:
            continue
        name = params["estimator"]
        if name not in best or score > best[name][0]:
            best[name] = (float(score), params)
    ranked = sorted(best.values(), key=lambda item: -item[0])
    return [params for _, params in ranked[:per_dataset]]


def loss_column(X, y, configs: list[dict], timeout: float, kind: str = "classification"):
    """The validation loss of each configuration on (X, y) for the task ``kind``, yielded as
    ``(index, loss, seconds)`` as each finishes, by the engine of a run, set up by
    :mod:`admm_automl.run` (split and models' seed 0, one single-threaded worker process)."""
    from admm_automl.evaluation.splits import resolve_cv
    from admm_automl.records import Request
    from admm_automl.run.executor import single_threaded_executor
    from admm_automl.run.header import run_header
    from admm_automl.run.seeds import benchmark_seeds
    from admm_automl.run.setup import open_objective
    from admm_automl.run.task import prepare_task
    from admm_automl.space import load_space

    space = load_space(SPACE).for_task(kind).for_data(len(y))
    target = ("continuous" if kind == "regression"
              else "binary" if len(np.unique(y)) == 2 else "multiclass")
    seeds, cv, holdout = benchmark_seeds(0), resolve_cv("auto", len(y)), 0.2
    task = prepare_task(X, y, space=space, task=kind, target_type=target, cv=cv,
                        validation_size=holdout, split_seed=seeds.splits, model_seed=seeds.models)
    objective = open_objective(task.context, executor=single_threaded_executor("process"),
                               worst_loss=task.worst_loss, trial_timeout=timeout,
                               header=run_header(task, cv=cv, validation_size=holdout))
    try:
        for i, config in enumerate(configs):
            t0 = time.monotonic()
            try:
                z, theta = space.encode(config)
            except Exception:  # an algorithm this data size leaves out
                yield i, float(task.worst_loss), 0.0
                continue
            (obs,) = objective([Request(z, space.encoding.project(theta), 1.0)])
            yield i, float(obs.loss), time.monotonic() - t0
    finally:
        objective.close()


def normalise(losses: np.ndarray) -> np.ndarray:
    """Per dataset (column), 0 for the best candidate and 1 for the worst."""
    low, high = losses.min(axis=0), losses.max(axis=0)
    return (losses - low) / np.where(high > low, high - low, 1.0)


def greedy_portfolio(norm: np.ndarray, size: int, allowed: np.ndarray | None = None) -> list[int]:
    """Feurer et al. (2022), Algorithm 1: add the candidate that most lowers the mean over
    datasets of the portfolio's best normalised loss, ``size`` times or until none lowers it."""
    allowed = np.ones(len(norm), dtype=bool) if allowed is None else allowed
    chosen: list[int] = []
    current = np.full(norm.shape[1], np.inf)
    for _ in range(size):
        scores = np.where(allowed, np.minimum(norm, current).mean(axis=1), np.inf)
        best = int(np.argmin(scores))
        if not np.isfinite(scores[best]) or (chosen and scores[best] >= current.mean()):
            break
        chosen.append(best)
        allowed = allowed.copy()
        allowed[best] = False
        current = np.minimum(current, norm[best])
    return chosen


def leave_one_out(losses: np.ndarray, origin: list[str | None], names: list[str],
                  size: int, default_index: int, without: str | None = None) -> dict[str, dict]:
    """For each dataset, the portfolio built without it and how it does there; ``without``
    also leaves out the candidates of that origin (:data:`EXTERNAL`: the portfolios the same
    matrix gives without the published candidates, regrets normalised over all of it)."""
    out = {}
    for t, name in enumerate(names):
        others = [d for d in range(len(names)) if d != t]
        allowed = np.array([o != name and (without is None or o != without) for o in origin])
        chosen = greedy_portfolio(normalise(losses[:, others]), size, allowed)
        norm_t = normalise(losses)[:, t]
        out[name] = {
            "portfolio": chosen,
            "portfolio_loss": float(losses[chosen, t].min()),
            "default_loss": float(losses[default_index, t]),
            "portfolio_regret": float(norm_t[chosen].min()),
            "default_regret": float(norm_t[default_index]),
        }
    return out


def write_yaml(path: Path, node: dict, header: str) -> None:
    import yaml

    from admm_automl._yaml import plain as _plain  # YAML-safe values (numpy scalars become Python ones)

    path.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(_plain(node), sort_keys=False, width=100, default_flow_style=None)
    path.write_text("".join(f"# {line}\n" if line else "#\n" for line in header.splitlines())
                    + text, encoding="utf-8")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The options; ``--smoke`` shrinks them (two datasets, 200 rows, 3-evaluation searches) and
    sends the outputs to a temporary folder. ``datasets`` is always filled in."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", nargs="?", default="run", choices=("run", "search", "matrix"),
                        help="run: both phases and the portfolios (default); search / matrix: "
                             "one phase on the --datasets given, in this process")
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--task", choices=("classification", "regression"),
                        default="classification",
                        help="the portfolio list to learn (default classification)")
    parser.add_argument("--datasets", nargs="*", help="default: every dataset in --data-dir")
    parser.add_argument("--max-rows", type=int, default=2000,
                        help="rows of each dataset's stratified subsample (default 2000)")
    parser.add_argument("--search-evals", type=int, default=64,
                        help="evaluations of the candidate search per dataset (default 64)")
    parser.add_argument("--per-dataset", type=int, default=3,
                        help="candidates per dataset: its best algorithms' best configurations")
    parser.add_argument("--timeout", type=float, default=30.0,
                        help="seconds per evaluation of the searches and the matrix (default 30)")
    parser.add_argument("--size", type=int, default=8, help="portfolio size (default 8)")
    parser.add_argument("--work", default=None,
                        help="folder of the finished parts (default: experiments/results/"
                             "portfolio/<scale>); a run resumes from it")
    parser.add_argument("--parallel", type=int, default=1,
                        help="datasets at a time, one single-core process each")
    parser.add_argument("--external", default=None,
                        help="a file of published zero-shot configurations translated to the "
                             "space (experiments/portfolio_external.yaml, written by "
                             "zero_shot_candidates.py): candidates of every portfolio, the "
                             "leave-one-dataset-out ones included")
    parser.add_argument("--out", default=str(PACKAGE_PORTFOLIO))
    parser.add_argument("--lodo-out", default=str(LODO_FILE))
    parser.add_argument("--smoke", action="store_true",
                        help="2 datasets, 200 rows, 3-evaluation searches, outputs to a temporary folder")
    args = parser.parse_args(argv)
    from admm_automl.datasets import list_data_dir

    args.datasets = args.datasets or list_data_dir(args.data_dir)
    if args.smoke:  # the first three algorithms' defaults and one search candidate per dataset
        args.datasets, args.max_rows = args.datasets[:2], 200
        args.search_evals, args.per_dataset = 3, 1
        args.timeout, args.size = 10.0, 3
        tmp = Path(tempfile.mkdtemp())
        args.out, args.lodo_out = str(tmp / "portfolio.yaml"), str(tmp / "lodo.yaml")
        args.work = args.work or str(tmp / "work")
    scale = (("regression_" if args.task == "regression" else "")
             + f"rows{args.max_rows}_evals{args.search_evals}_per{args.per_dataset}"
             f"_timeout{args.timeout:g}")
    args.work = Path(args.work) if args.work else RESULTS / scale
    return args


def config_key(config: dict) -> str:
    """A configuration's key in the work folder (its canonical JSON)."""
    return json.dumps(config, sort_keys=True, default=repr)


def search_file(work: Path, name: str) -> Path:
    return work / "search" / f"{name}.json"


def matrix_file(work: Path, name: str) -> Path:
    return work / "matrix" / f"{name}.jsonl"


def run_search(name: str, args: argparse.Namespace) -> None:
    """Phase 1 on one dataset, unless its file is there: its search candidates and the seconds."""
    path = search_file(args.work, name)
    if path.is_file():
        return
    X, y = load(name, args.data_dir, args.max_rows, args.task)
    t0 = time.monotonic()
    found = search_candidates(X, y, args.search_evals, args.per_dataset, args.timeout, args.task)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"candidates": found, "seconds": time.monotonic() - t0}))
    print(f"search {name}: {len(found)} candidate(s) in {time.monotonic() - t0:.0f} s",
          flush=True)


def read_matrix(work: Path, name: str) -> dict[str, tuple[float, float]]:
    """The losses recorded for one dataset: configuration key -> (loss, seconds); a line cut
    short by a stopped run is skipped (it is evaluated again)."""
    done = {}
    path = matrix_file(work, name)
    if path.is_file():
        for line in path.read_text().splitlines():
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue
            done[entry["key"]] = (float(entry["loss"]), float(entry["seconds"]))
    return done


def run_matrix(name: str, args: argparse.Namespace, candidates: list[dict]) -> None:
    """Phase 2 on one dataset: every candidate not yet recorded, each line written as it ends."""
    done = read_matrix(args.work, name)
    todo = [c for c in candidates if config_key(c) not in done]
    if not todo:
        return
    X, y = load(name, args.data_dir, args.max_rows, args.task)
    path = matrix_file(args.work, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    with path.open("a", encoding="utf-8") as out:
        for i, loss, seconds in loss_column(X, y, todo, args.timeout, args.task):
            out.write(json.dumps({"key": config_key(todo[i]), "loss": loss,
                                  "seconds": seconds}) + "\n")
            out.flush()
    print(f"matrix {name}: {len(todo)} evaluations in {time.monotonic() - t0:.0f} s", flush=True)


#: the origin of a candidate from ``--external``: no shared dataset's search found it, so it is
#: a candidate of every leave-one-dataset-out portfolio
EXTERNAL = "external"


def gather_candidates(args: argparse.Namespace) -> tuple[list[dict], list[str | None]]:
    """Every algorithm's default configuration (the first three with ``--smoke``), then each
    dataset's search candidates not among them, then ``--external``'s; and where each came
    from (None: a default; a dataset's name; :data:`EXTERNAL`)."""
    from admm_automl.space import load_space

    space = load_space(SPACE).for_task(args.task)
    candidates = default_configs(space)[:3 if args.smoke else None]
    origin: list[str | None] = [None] * len(candidates)
    found = {name: json.loads(search_file(args.work, name).read_text())["candidates"]
             for name in args.datasets}
    if args.external:
        found[EXTERNAL] = external_configs(Path(args.external), args.task, space)
    for name, configs in found.items():
        new = [c for c in configs if c not in candidates]
        candidates += new
        origin += [name] * len(new)
    return candidates, origin


def external_configs(path: Path, task: str, space) -> list[dict]:
    """The ``task`` configurations of a file of translated zero-shot candidates, each checked
    against ``space`` (the error names the source of one that is not valid in it)."""
    from admm_automl._yaml import read_yaml
    from admm_automl.exceptions import InvalidParameterError

    node = read_yaml(path.read_text(encoding="utf-8"))
    if node.get("space") != SPACE:
        raise SystemExit(f"{path}: its candidates are of space {node.get('space')!r}, "
                         f"not {SPACE!r}")
    configs = []
    for entry in node.get(task) or []:
        try:
            space.encode(entry["config"])
        except InvalidParameterError as err:
            raise SystemExit(f"{path}: {entry.get('source')}: {err}") from None
        configs.append(dict(entry["config"]))
    return configs


def run_phase(phase: str, args: argparse.Namespace, argv: list[str] | None,
              candidates: list[dict] | None = None) -> None:
    """One phase on every dataset that still needs it: in this process, or ``--parallel``
    processes at a time (each running this script on one dataset)."""
    if phase == "search":
        names = [d for d in args.datasets if not search_file(args.work, d).is_file()]
    else:
        keys = {config_key(c) for c in candidates}
        names = [d for d in args.datasets if not keys <= read_matrix(args.work, d).keys()]
    if args.parallel <= 1:
        for name in names:
            if phase == "search":
                run_search(name, args)
            else:
                run_matrix(name, args, candidates)
        return
    from admm_automl.benchmarks.runner import run_processes

    base = [a for a in (argv if argv is not None else sys.argv[1:])
            if a not in ("run", "search", "matrix")]
    rest, skip = [], False
    for a in base:  # this run's options but --datasets and --parallel
        if skip and not a.startswith("--"):
            continue
        skip = a in ("--datasets", "--parallel")
        if not skip:
            rest.append(a)
    run_processes([[sys.executable, __file__, phase, *rest, "--work", str(args.work),
                    "--datasets", name] for name in names], args.parallel)


def print_results(names: list[str], candidates: list[dict], chosen: list[int],
                  lodo: dict[str, dict], elapsed: float, task: str = "classification",
                  origin: list[str | None] | None = None) -> None:
    """The portfolio on all datasets, and the leave-one-dataset-out table against the default;
    with ``--external`` candidates, which of the chosen ones are theirs (marked ``*``) and in
    how many held-out portfolios one is."""
    external = {i for i, o in enumerate(origin or []) if o == EXTERNAL}
    print(f"\nportfolio on all {len(names)} datasets ({len(candidates)} candidates"
          + (f", {len(external)} external, marked *" if external else "") + "): "
          + ", ".join(candidates[i]["estimator"] + "*" * (i in external) for i in chosen))
    if external:
        held = sum(bool(external & set(r["portfolio"])) for r in lodo.values())
        print(f"an external candidate in {held} of the {len(lodo)} held-out portfolios")
    loss = "RMSE" if task == "regression" else "1 - AUROC"
    print(f"\nleave-one-dataset-out (validation {loss} on the subsample; regret: 0 = best "
          "candidate, 1 = worst)")
    print(f"{'dataset':<20}{'default':>10}{'portfolio':>11}{'regret def':>12}{'regret pf':>11}")
    for name, r in lodo.items():
        print(f"{name:<20}{r['default_loss']:>10.4f}{r['portfolio_loss']:>11.4f}"
              f"{r['default_regret']:>12.3f}{r['portfolio_regret']:>11.3f}")
    wins = sum(r["portfolio_loss"] < r["default_loss"] for r in lodo.values())
    ties = sum(r["portfolio_loss"] == r["default_loss"] for r in lodo.values())
    mean = lambda key: float(np.mean([r[key] for r in lodo.values()]))  # noqa: E731
    print(f"portfolio vs default: {wins} better, {ties} equal, {len(lodo) - wins - ties} worse; "
          f"mean regret {mean('portfolio_regret'):.3f} vs {mean('default_regret'):.3f}"
          + ("" if task == "regression"  # RMSEs of different targets: no mean
             else f"; mean loss {mean('portfolio_loss'):.4f} vs {mean('default_loss'):.4f}"))
    print(f"took {elapsed / 60:.1f} min of single-core work (the parts' sum) on "
          f"{platform.node()} ({os.cpu_count()} cores, load "
          f"{os.getloadavg()[0]:.1f})")


def print_external(lodo: dict[str, dict], without: dict[str, dict]) -> None:
    """Leave-one-dataset-out, the held-out portfolios with the ``--external`` candidates
    against those the same matrix gives without them: per dataset, and the tally."""
    print("\nwith the external candidates against without them (held out; same matrix)")
    print(f"{'dataset':<20}{'without':>10}{'with':>10}{'regret w/o':>12}{'regret w':>10}")
    for name, r in lodo.items():
        print(f"{name:<20}{without[name]['portfolio_loss']:>10.4f}{r['portfolio_loss']:>10.4f}"
              f"{without[name]['portfolio_regret']:>12.3f}{r['portfolio_regret']:>10.3f}")
    better = sum(r["portfolio_loss"] < without[n]["portfolio_loss"] for n, r in lodo.items())
    worse = sum(r["portfolio_loss"] > without[n]["portfolio_loss"] for n, r in lodo.items())
    regret = lambda d: float(np.mean([r["portfolio_regret"] for r in d.values()]))  # noqa: E731
    print(f"with external: {better} better, {len(lodo) - better - worse} equal, {worse} worse; "
          f"mean regret {regret(lodo):.3f} vs {regret(without):.3f}")


TASKS = ("classification", "regression")


def read_previous(path: Path) -> tuple[dict, dict[str, tuple[str, str]]]:
    """A file this script wrote before (empty if there is none): its YAML mapping, and per task
    the line of its header and the line of its description that said how that task's part was
    learned."""
    import yaml

    if not path.is_file():
        return {}, {}
    text = path.read_text(encoding="utf-8")
    node = yaml.safe_load(text) or {}

    def said(lines: list[str], task: str) -> str:
        return next((line for line in lines if line.startswith(f"{task}: ")), "")

    header = [line[2:] for line in text.splitlines() if line.startswith("# ")]
    description = str(node.get("description", "")).splitlines()
    return node, {t: (said(header, t), said(description, t)) for t in TASKS if said(header, t)}


def write_portfolios(args: argparse.Namespace, argv: list[str] | None, candidates: list[dict],
                     origin: list[str | None], chosen: list[int], lodo: dict[str, dict],
                     elapsed: float) -> None:
    """This task's part of the package's portfolio (``--out``) and of the leave-one-dataset-out
    file (``--lodo-out``), each with the command and scale that made it; the other task's part
    of each file is kept as it was."""
    command = " ".join(["python experiments/portfolio.py", *(argv or sys.argv[1:])])
    scale = (f"{len(args.datasets)} datasets, subsamples of <= {args.max_rows} rows, "
             f"{args.search_evals}-evaluation searches, {args.per_dataset} candidate(s) per dataset + "
             f"{sum(o is None for o in origin)} defaults"
             + (f" + {origin.count(EXTERNAL)} from published zero-shot portfolios"
                if EXTERNAL in origin else "")
             + f" = {len(candidates)} candidates, "
             f"{args.timeout:g} s per evaluation; {elapsed / 60:.0f} min of single-core work")
    made = (f"{args.task}: generated by experiments/portfolio.py on {datetime.date.today()}: "
            f"{command}", f"{args.task}: greedy portfolio (Feurer et al. 2022) learned on {scale}")

    def header_and_description(path: Path) -> tuple[dict, str, str]:
        node, before = read_previous(path)
        parts = {**{t: before[t] for t in TASKS if t in before and t != args.task},
                 args.task: made}
        ordered = [parts[t] for t in TASKS if t in parts]
        return node, "\n".join(h for h, _ in ordered), "\n".join(d for _, d in ordered if d)

    node, header, description = header_and_description(Path(args.out))
    write_yaml(Path(args.out), {
        "space": SPACE, "description": description,
        **{t: node.get(t) or [] for t in TASKS}, args.task: [candidates[i] for i in chosen],
    }, f"{header}\nDo not edit by hand; re-run the script (per task) to learn it again.")
    node, header, description = header_and_description(Path(args.lodo_out))
    kept = {name: entry for name, entry in (node.get("datasets") or {}).items()
            if args.task not in entry and name not in lodo}
    write_yaml(Path(args.lodo_out), {
        "description": description,
        "datasets": {**kept, **{name: {**{k: v for k, v in r.items() if k != "portfolio"},
                                       args.task: [candidates[i] for i in r["portfolio"]]}
                                for name, r in lodo.items()}},
    }, f"{header}\nPer dataset, the portfolio learned without it (read by "
       "experiments/vs_automl.py).")
    print(f"wrote the {args.task} part of {args.out} and of {args.lodo_out}")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    warnings.simplefilter("ignore")
    if args.command == "search":
        for name in args.datasets:
            run_search(name, args)
        return
    if args.command == "matrix":
        candidates = json.loads((args.work / "candidates.json").read_text())["candidates"]
        for name in args.datasets:
            run_matrix(name, args, candidates)
        return
    print(f"{len(args.datasets)} datasets, {args.parallel} at a time, on {platform.node()} "
          f"(load {os.getloadavg()[0]:.1f}); finished parts in {args.work}", flush=True)
    run_phase("search", args, argv)
    candidates, origin = gather_candidates(args)
    (args.work / "candidates.json").write_text(json.dumps({"candidates": candidates}))
    run_phase("matrix", args, argv, candidates)
    recorded = {name: read_matrix(args.work, name) for name in args.datasets}
    losses = np.array([[recorded[name][config_key(c)][0] for name in args.datasets]
                       for c in candidates])
    elapsed = (sum(json.loads(search_file(args.work, n).read_text())["seconds"]
                   for n in args.datasets)
               + sum(seconds for r in recorded.values() for _, seconds in r.values()))
    chosen = greedy_portfolio(normalise(losses), args.size)
    lodo = leave_one_out(losses, origin, args.datasets, args.size, DEFAULT_INDEX)
    print_results(args.datasets, candidates, chosen, lodo, elapsed, args.task, origin)
    if EXTERNAL in origin:
        print_external(lodo, leave_one_out(losses, origin, args.datasets, args.size,
                                           DEFAULT_INDEX, without=EXTERNAL))
    write_portfolios(args, argv, candidates, origin, chosen, lodo, elapsed)
    print(json.dumps({"minutes": round(elapsed / 60, 1)}))


if __name__ == "__main__":
    main()
