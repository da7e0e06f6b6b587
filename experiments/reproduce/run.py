"""Reproduce a paper's headline claims: run the campaign (resumable), then print one section per
claim with its rule, medians, ranks, paired tests and verdict.

Usage (from the project root; BLAS/OpenMP are set to one thread below, before numpy loads)::

    nice .venv/bin/python experiments/reproduce/run.py --paper liu2020 --data-dir ../shared/data
    .venv/bin/python experiments/reproduce/run.py --paper blds --data-dir ../shared/data \\
        --claims early vs_hyperband
    .venv/bin/python experiments/reproduce/run.py --paper liu2020 --analyze-only
    .venv/bin/python experiments/reproduce/run.py --paper liu2020 --smoke --data-dir ../shared/data

Results: ``experiments/results/reproduce/<paper>/<problem>/<method>/<budget>/seed<k>/``
(``journal.jsonl``, ``run.json``), never committed; the printed tables are what goes into
``experiments/README.md``. ``--smoke`` runs every claim at a few seconds and two seeds in a
temporary folder (what ``make smoke`` runs; its verdicts mean nothing).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
             "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import warnings  # noqa: E402
from datetime import date  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import harness  # noqa: E402

PAPERS = ("liu2020", "blds", "flash", "blendsearch", "bapi")
RESULTS = HERE.parents[1] / "experiments" / "results" / "reproduce"


def claims_of(args: argparse.Namespace) -> list[harness.Claim]:
    module = importlib.import_module(args.paper)
    claims = module.CLAIMS
    if args.claims:
        unknown = set(args.claims) - {c.name for c in claims}
        if unknown:
            raise SystemExit(f"unknown claims {sorted(unknown)} for {args.paper}: "
                             f"{', '.join(c.name for c in claims)}")
        claims = [c for c in claims if c.name in args.claims]
    if args.smoke:
        claims = module.smoke(claims)
    if args.seeds:
        from dataclasses import replace

        claims = [replace(c, seeds=tuple(args.seeds)) for c in claims]
    return claims


def analyze(claims: list[harness.Claim], root: Path) -> str:
    import platform

    head = (f"Printed by `experiments/reproduce/run.py` on {date.today()} ({platform.node()}, "
            f"{os.cpu_count()} cores, Python {platform.python_version()}).\n")
    return head + "\n" + "\n".join(harness.report(harness.Runs.load(c, root)) for c in claims)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--paper", choices=PAPERS, required=True)
    parser.add_argument("--claims", nargs="+", help="only these claims (default: all)")
    parser.add_argument("--seeds", type=int, nargs="+", help="override the claims' seeds")
    parser.add_argument("--data-dir", help="folder of the datasets (gzipped CSV)")
    parser.add_argument("--root", help="results folder (default: experiments/results/reproduce/"
                        "<paper>)")
    parser.add_argument("--parallel", type=int, default=2, help="runs at a time, one core each")
    parser.add_argument("--force", action="store_true", help="redo finished runs")
    parser.add_argument("--analyze-only", action="store_true", help="print the tables only")
    parser.add_argument("--smoke", action="store_true", help="a tiny campaign in a temporary "
                        "folder (CI)")
    parser.add_argument("--run-one", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--problem", help=argparse.SUPPRESS)
    parser.add_argument("--method", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    claims = claims_of(args)
    root = Path(args.root) if args.root else RESULTS / args.paper
    if args.run_one:
        warnings.simplefilter("ignore")
        (claim,) = claims
        summary = harness.run_job(harness.Job(claim, args.problem, args.method, args.seed),
                                  root, args.data_dir)
        print(json.dumps({k: summary.get(k) for k in ("problem", "method", "seed", "n_evals",
                                                      "best_loss")}), flush=True)
        return
    if args.smoke and not args.run_one:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            harness.run_campaign(claims, root, script=__file__, paper=args.paper,
                                 parallel=args.parallel, data_dir=args.data_dir,
                                 extra=["--smoke"])
            print(analyze(claims, root))
        return
    if not args.analyze_only:
        harness.run_campaign(claims, root, script=__file__, paper=args.paper,
                             parallel=args.parallel, data_dir=args.data_dir, force=args.force)
    print(analyze(claims, root))


if __name__ == "__main__":
    main()
