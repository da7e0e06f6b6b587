"""Replay FLASH's pruning (Zhang et al. 2016, Algorithm 1, end of Phase 2) from the journals of a
FLASH campaign: which learners the pruned space G′ would keep under other modelling rules.

For each FLASH run without a cache in the campaign's results (its ``journal.jsonl``), the INIT
and PRUNE evaluations are refitted into FLASH's two ridge models and G′ is rebuilt with the
paper's r = 10 and ξ = 0, under four rules:

* ``paper`` — the authors' rules, which the runs before the package's defaults changed used: a
  time-out is the worst loss, costs in seconds;
* ``censored`` — time-outs teach the cost model only;
* ``budget unit`` — censored, and costs in the paper's seconds scaled to the budget
  (× 36 000 / T), the package's defaults since;
* ``EI only`` — censored, ranked by EI alone (no cost term).

It prints, per dataset, in how many runs G′ kept each learner, and checks that the ``paper``
replay gives each run's actual TUNE learners (those are a subset of G′'s). The PRUNE evaluations
were chosen under the campaign's rules, so the other rules' replays are indicative only.

    .venv/bin/python experiments/reproduce/flash_replay.py
"""

from __future__ import annotations

import argparse
import collections
import json
from pathlib import Path

import numpy as np

from admm_automl._numerics import flash as F
from admm_automl.space.loader import load_space

ROOT = Path(__file__).resolve().parents[1] / "results" / "reproduce" / "flash"
#: rule -> (censor time-outs, costs in budget units, rank by EIPS (else EI))
RULES = {"paper": (False, False, True), "censored": (True, False, True),
         "budget unit": (True, True, True), "EI only": (True, False, False)}
PAPER_BUDGET = 36_000.0


def kept(rows: list[dict], space, budget: float, censor: bool, unit: bool,
         cost: bool) -> set[str]:
    """The learners of G′ refitted from ``rows`` (of a run of ``budget`` seconds) under one
    rule."""
    scale = PAPER_BUDGET / budget if unit else 1.0
    modules = space.modules
    zs = np.array([[m.index(r["config"][m.name]) for m in modules] for r in rows])
    values = np.array([r["loss"] for r in rows], dtype=float)
    seconds = scale * np.array([(r["fit_time"] + r["predict_time"]) or r["duration"]
                                for r in rows])
    timed_out = np.array([r["status"] == "timeout" for r in rows])
    sizes = [len(m.choices) for m in modules]
    models = F.fit_path_models(zs, values, seconds, sizes,
                               censored=timed_out if censor else None)
    paths = F.candidate_paths(sizes, np.random.default_rng(0))
    sub = F.build_subgraph(models.perf, models.cost if cost else None, paths, sizes,
                           models.best, 10, np.random.default_rng(0))
    learners = modules[-1]
    return {learners.choices[i].name for i in np.flatnonzero(sub.masks[-1])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=str(ROOT), help="the FLASH campaign's results")
    parser.add_argument("--space", default="paper_large")
    args = parser.parse_args()
    space = load_space(args.space).for_task("classification")
    for dataset in sorted(p.name for p in Path(args.root).iterdir() if p.is_dir()):
        counts = {rule: collections.Counter() for rule in RULES}
        runs = mismatched = 0
        for journal in sorted(Path(args.root, dataset).glob("FLASH_*_cache=0/T*/seed*/"
                                                             "journal.jsonl")):
            records = [json.loads(line) for line in journal.open()]
            records = [r for r in records if "config" in r]
            design = [r for r in records if r.get("phase") in ("init", "prune")
                      and r["status"] != "cancelled"]
            if not design:
                continue
            runs += 1
            budget = float(json.loads((journal.parent / "run.json").read_text())["time_budget"])
            for rule, settings in RULES.items():
                counts[rule].update(kept(design, space, budget, *settings))
            tuned = {r["config"]["estimator"] for r in records if r.get("phase") == "tune"}
            mismatched += not tuned <= kept(design, space, budget, *RULES["paper"])
        if not runs:
            continue
        print(f"{dataset}: {runs} runs; the paper-rule replay misses a TUNE learner in "
              f"{mismatched}")
        for rule, count in counts.items():
            print(f"  {rule:12s} " + ", ".join(f"{k} {v}" for k, v in count.most_common()))


if __name__ == "__main__":
    main()
