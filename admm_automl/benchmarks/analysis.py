"""Analysis of benchmark runs (Liu et al. 2020, Section 5 and Appendix 10): incumbent curves on a
fixed time grid, median and inter-quartile ranges over seeds, average rank over time, wins at the
end, and the speedup / further-improvement table (Tables 1, A4, A5).

Definitions (ours where the paper is silent):

* The grid has 256 log-spaced times from budget/1000 to the budget of the problem. The incumbent at
  time t is the lowest loss of a full-fidelity evaluation *finished* by t; before the first one a
  run has the problem's worst loss (1.0 for 1 − AUROC, as in the paper; NaN, i.e. missing, for the
  artificial objective, which has no worst value).
* Curves of a method are aggregated per grid time over its seeds: median and 25 / 75 % quantiles.
* Rank: at each grid time the methods are ranked on each problem by their median (1 = best, ties
  share the mean rank, a missing value ranks last), then averaged over problems.
* Speedup of a method over a reference: the reference reaches its final median value at time
  t_ref (first grid time at which its median curve is that low); the method first reaches that
  value at t_m; speedup = t_ref / t_m ("—" if it never does). Improvement = (ref_final − final) /
  ref_final in % (positive: the method ends lower).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

N_GRID = 256


def load_runs(root: "str | Path") -> list[dict[str, Any]]:
    """The ``run.json`` summaries under ``root``, each with ``dir`` (its folder)."""
    runs = []
    for path in sorted(Path(root).rglob("run.json")):
        summary = json.loads(path.read_text())
        summary["dir"] = str(path.parent)
        runs.append(summary)
    return runs


def time_grid(budget: float, n: int = N_GRID) -> np.ndarray:
    return np.geomspace(budget / 1000.0, budget, n)


def is_score(record: Mapping[str, Any]) -> bool:
    """Whether a journal record is a finished full-fidelity evaluation (a candidate incumbent)."""
    return (record.get("fidelity") or 1.0) >= 1.0 and not record.get("budget_stop")


def incumbent_curve(records: Sequence[Mapping[str, Any]], grid: np.ndarray, worst: float) -> np.ndarray:
    """Best full-fidelity loss finished by each grid time (``worst`` before the first)."""
    done = [(float(r["time"]), float(r["loss"])) for r in records if is_score(r)]
    curve = np.full(len(grid), worst, dtype=float)
    if not done:
        return curve
    done.sort()
    times = np.array([t for t, _ in done])
    best = np.minimum.accumulate(np.array([loss for _, loss in done]))
    k = np.searchsorted(times, grid, side="right")  # evaluations finished by each grid time
    curve[k > 0] = best[k[k > 0] - 1]
    return curve


def _nanquantile(a: np.ndarray, q: float) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns stay NaN
        return np.nanquantile(a, q, axis=0)


def _ranks(values: np.ndarray) -> np.ndarray:
    """Ranks (1 = lowest) of ``values``; NaN ranks last, ties share the mean rank."""
    from scipy.stats import rankdata

    return rankdata(np.where(np.isnan(values), np.inf, values))


def _at(grid: np.ndarray, fractions: Sequence[float]) -> list[int]:
    """Grid indices nearest to the given fractions of the budget (the grid's last time)."""
    return [int(np.argmin(np.abs(grid - f * grid[-1]))) for f in fractions]


def _fmt(x: float | None, digits: int = 4) -> str:
    if x is None or not np.isfinite(x):
        return "—"
    return f"{x:.{digits}g}"


def speedup(grid: np.ndarray, reference: np.ndarray, curve: np.ndarray) -> dict[str, float | None]:
    """Liu et al. 2020's speedup (Tables 1, A4, A5) of ``curve`` over ``reference``, two median
    incumbent curves on ``grid``: the time the reference takes to reach its own final value over
    the time ``curve`` takes to reach it, and the further improvement at the end in %."""
    ref_final, final = float(reference[-1]), float(curve[-1])
    t_ref = float(grid[np.argmax(reference <= ref_final)]) if np.isfinite(ref_final) else None
    reached = np.flatnonzero(curve <= ref_final)
    t_m = float(grid[reached[0]]) if reached.size else None
    return {
        "reference_final": ref_final, "final": final, "t_reference": t_ref, "t_method": t_m,
        "speedup": t_ref / t_m if t_ref is not None and t_m is not None else None,
        "improvement": 100.0 * (ref_final - final) / ref_final if ref_final > 0 else None,
    }


class Report:
    """Curves, tables and figures of a set of runs.

    Parameters
    ----------
    runs : list of dict
        Run summaries from :func:`load_runs` (``problem``, ``method``, ``seed``, ``time_budget``,
        ``worst_loss``, ``dir``).
    methods, problems : list of str
        Which to report, in this order (problems or methods with no run are left out).
    """

    def __init__(self, runs: Sequence[Mapping[str, Any]], methods: Sequence[str],
                 problems: Sequence[str], n_grid: int = N_GRID) -> None:
        from ..journal import Journal

        self.methods = [m for m in methods if any(r["method"] == m for r in runs)]
        self.problems = [p for p in problems if any(r["problem"] == p for r in runs)]
        self.grid: dict[str, np.ndarray] = {}
        self.curves: dict[tuple[str, str], np.ndarray] = {}
        self.n_evals: dict[tuple[str, str], list[int]] = {}
        self.seeds: dict[tuple[str, str], list[int]] = {}
        self.runs: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
        for problem in self.problems:
            mine = [r for r in runs if r["problem"] == problem]
            self.grid[problem] = grid = time_grid(max(float(r["time_budget"]) for r in mine), n_grid)
            for method in self.methods:
                chosen = sorted((r for r in mine if r["method"] == method), key=lambda r: r["seed"])
                if not chosen:
                    continue
                worst = [float("nan") if r["worst_loss"] is None else float(r["worst_loss"]) for r in chosen]
                self.curves[problem, method] = np.array([
                    incumbent_curve(Journal.read(Path(r["dir"]) / "journal.jsonl"), grid, w)
                    for r, w in zip(chosen, worst)
                ])
                self.n_evals[problem, method] = [int(r["n_evals"]) for r in chosen]
                self.runs[problem, method] = chosen
                self.seeds[problem, method] = [int(r["seed"]) for r in chosen]

    # ---------------------------------------------------------------------------- statistics
    def median(self, problem: str, method: str) -> np.ndarray:
        return _nanquantile(self.curves[problem, method], 0.5)

    def iqr(self, problem: str, method: str) -> tuple[np.ndarray, np.ndarray]:
        c = self.curves[problem, method]
        return _nanquantile(c, 0.25), _nanquantile(c, 0.75)

    def average_ranks(self) -> dict[str, np.ndarray]:
        """Mean rank of each method over problems at every grid index (problems with a run of
        every method only)."""
        problems = [p for p in self.problems if all((p, m) in self.curves for m in self.methods)]
        if not problems:
            return {}
        ranks = np.zeros((len(self.methods), len(next(iter(self.grid.values())))))
        for p in problems:
            med = np.array([self.median(p, m) for m in self.methods])
            ranks += np.apply_along_axis(_ranks, 0, med)
        ranks /= len(problems)
        return {m: ranks[i] for i, m in enumerate(self.methods)}

    def time_to_final(self, problem: str, method: str) -> float | None:
        """The first grid time at which the method's median curve reaches its own final value
        (None if it has no finite final value)."""
        med = self.median(problem, method)
        if not np.isfinite(med[-1]):
            return None
        return float(self.grid[problem][np.argmax(med <= med[-1])])

    def speedup(self, reference: str, method: str, problem: str) -> dict[str, float | None]:
        return speedup(self.grid[problem], self.median(problem, reference),
                       self.median(problem, method))

    # -------------------------------------------------------------------------------- tables
    def header(self) -> str:
        counts = sorted({len(v) for v in self.seeds.values()})
        return (f"{len(self.problems)} problems × {len(self.methods)} methods, "
                f"{'/'.join(map(str, counts))} seeds each; budget (s): "
                + ", ".join(f"{p} {self.grid[p][-1]:g}" for p in self.problems))

    def final_table(self) -> str:
        """Median (IQR) of the final incumbent and the median number of evaluations."""
        head = "| problem | " + " | ".join(self.methods) + " |"
        rows = [head, "|" + "---|" * (len(self.methods) + 1)]
        for p in self.problems:
            cells = []
            for m in self.methods:
                if (p, m) not in self.curves:
                    cells.append("—")
                    continue
                lo, hi = self.iqr(p, m)
                cells.append(f"{_fmt(self.median(p, m)[-1])} ({_fmt(lo[-1], 3)}–{_fmt(hi[-1], 3)}) "
                             f"n={int(np.median(self.n_evals[p, m]))}")
            rows.append(f"| {p} | " + " | ".join(cells) + " |")
        return "Final incumbent: median (25–75 %) over seeds, n = median evaluations\n\n" + "\n".join(rows)

    def speedup_table(self, reference: str, method: str,
                      paper: Mapping[str, tuple[float, float]] | None = None) -> str:
        """Liu et al. 2020, Table A4/A5: speedup to reach the reference's final median, and the
        further improvement at the end; ``paper`` adds the paper's (speedup, improvement %) per
        problem."""
        rows = [f"Speedup of {method} over {reference} (Table A4/A5 definition)\n",
                f"| problem | {reference} final | {method} final | t_ref (s) | t ({method}) (s) | "
                "speedup | improvement | paper speedup | paper improvement |",
                "|---|---|---|---|---|---|---|---|---|"]
        for p in self.problems:
            if (p, reference) not in self.curves or (p, method) not in self.curves:
                continue
            s = self.speedup(reference, method, p)
            ps, pi = (paper or {}).get(p, (None, None))
            rows.append(
                f"| {p} | {_fmt(s['reference_final'])} | {_fmt(s['final'])} | "
                f"{_fmt(s['t_reference'], 3)} | {_fmt(s['t_method'], 3)} | "
                f"{_fmt(s['speedup'], 3)}{'×' if s['speedup'] is not None else ''} | "
                f"{_fmt(s['improvement'], 3)}{' %' if s['improvement'] is not None else ''} | "
                f"{_fmt(ps, 3)}{'×' if ps is not None else ''} | "
                f"{_fmt(pi, 3)}{' %' if pi is not None else ''} |"
            )
        return "\n".join(rows)

    def anytime_table(self, fractions: Sequence[float] = (0.01, 0.1, 0.25, 0.5, 1.0)) -> str:
        """Median incumbent of each method at fractions of the budget, per problem (Liu et al.
        2020, Figure 4 / A8 in numbers)."""
        out = []
        for p in self.problems:
            grid = self.grid[p]
            idx = _at(grid, fractions)
            rows = [f"Median incumbent on {p} at a fraction of the budget T = {grid[-1]:g} s\n",
                    "| method | " + " | ".join(f"{f:g}·T" for f in fractions) + " |",
                    "|" + "---|" * (len(fractions) + 1)]
            for m in self.methods:
                if (p, m) in self.curves:
                    med = self.median(p, m)
                    rows.append(f"| {m} | " + " | ".join(_fmt(med[i]) for i in idx) + " |")
            out.append("\n".join(rows))
        return "\n\n".join(out)

    def rank_table(self, fractions: Sequence[float] = (0.01, 0.1, 0.25, 0.5, 1.0)) -> str:
        """Average rank over problems at fractions of the budget."""
        ranks = self.average_ranks()
        if not ranks:
            return "Average rank: no problem has a run of every method"
        idx = _at(next(iter(self.grid.values())), fractions)
        rows = ["Average rank over problems (1 = best) at a fraction of the budget\n",
                "| method | " + " | ".join(f"{f:g}·T" for f in fractions) + " |",
                "|" + "---|" * (len(fractions) + 1)]
        for m in self.methods:
            rows.append(f"| {m} | " + " | ".join(f"{ranks[m][i]:.2f}" for i in idx) + " |")
        return "\n".join(rows)

    def time_to_final_table(self) -> str:
        """Per problem, the time each method's median curve takes to reach its own final value
        (how early a method settles; compare together with the final values)."""
        head = "| problem | " + " | ".join(self.methods) + " |"
        rows = ["Time (s) for the median incumbent to reach its final value\n", head,
                "|" + "---|" * (len(self.methods) + 1)]
        for p in self.problems:
            cells = [_fmt(self.time_to_final(p, m), 3) if (p, m) in self.curves else "—"
                     for m in self.methods]
            rows.append(f"| {p} | " + " | ".join(cells) + " |")
        return "\n".join(rows)

    def throughput_table(self) -> str:
        """Per problem and method, medians over seeds of evaluations per minute of wall clock and,
        from the workers' prefix-cache counters in ``run.json``, fits avoided and seconds saved."""
        rows = ["Throughput and prefix cache: medians over seeds\n",
                "| problem | method | evaluations / min | fits avoided | seconds saved |",
                "|---|---|---|---|---|"]
        for p in self.problems:
            for m in self.methods:
                runs = self.runs.get((p, m))
                if not runs:
                    continue
                rate = [60.0 * r["n_evals"] / r["wall_time"] for r in runs if r.get("wall_time")]
                cache = [r.get("prefix_cache") or {} for r in runs]
                rows.append(
                    f"| {p} | {m} | {_fmt(np.median(rate) if rate else None, 3)} | "
                    f"{_fmt(np.median([c.get('fits_saved', 0) for c in cache]), 4)} | "
                    f"{_fmt(np.median([c.get('seconds_saved', 0.0) for c in cache]), 3)} |")
        return "\n".join(rows)

    def wins_table(self) -> str:
        """Problems on which each method has the lowest final median (ties count for each)."""
        wins = {m: 0 for m in self.methods}
        for p in self.problems:
            finals = {m: self.median(p, m)[-1] for m in self.methods if (p, m) in self.curves}
            best = np.nanmin(list(finals.values()))
            for m, v in finals.items():
                wins[m] += bool(v <= best)
        return ("Wins at the end (lowest final median; ties count for each)\n\n| method | wins |\n|---|---|\n"
                + "\n".join(f"| {m} | {w}/{len(self.problems)} |" for m, w in wins.items()))

    # ------------------------------------------------------------------------------- figures
    def plot_curves(self, path: "str | Path") -> list[Path]:
        """Median and inter-quartile incumbent curves per problem (log-log), one panel each."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        n = len(self.problems)
        cols = min(3, n)
        rows = -(-n // cols)
        fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.6 * rows), squeeze=False)
        for ax, p in zip(axes.flat, self.problems):
            for m in self.methods:
                if (p, m) not in self.curves:
                    continue
                lo, hi = self.iqr(p, m)
                line, = ax.plot(self.grid[p], self.median(p, m), label=m)
                ax.fill_between(self.grid[p], lo, hi, color=line.get_color(), alpha=0.2)
            ax.set_xscale("log")
            # y range: the best lower quartile to the worst median at 5 % of the budget, so the
            # worst-loss plateau of the start-up does not flatten the rest
            shown = [m for m in self.methods if (p, m) in self.curves]
            k = int(np.searchsorted(self.grid[p], 0.05 * self.grid[p][-1]))
            bottom = np.nanmin([self.iqr(p, m)[0][-1] for m in shown])
            top = np.nanmax([self.median(p, m)[k] for m in shown])
            if 0 < bottom < top:
                ax.set_yscale("log")
                ax.set_ylim(bottom / (top / bottom) ** 0.05, top * (top / bottom) ** 0.05)
            ax.set_title(p)
            ax.set_xlabel("time (s)")
            ax.set_ylabel("incumbent loss")
        for ax in list(axes.flat)[n:]:
            ax.axis("off")
        axes.flat[0].legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(path, dpi=90)
        plt.close(fig)
        return [Path(path)]

    def plot_ranks(self, path: "str | Path") -> list[Path]:
        """Average rank over time (Liu et al. 2020, Figure 1)."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        ranks = self.average_ranks()
        if not ranks:
            return []
        grid = next(iter(self.grid.values()))
        fig, ax = plt.subplots(figsize=(6, 3.6))
        for m, r in ranks.items():
            ax.plot(grid, r, label=m)
        ax.set_xscale("log")
        ax.set_xlabel("time (s)")
        ax.set_ylabel("average rank (lower is better)")
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(path, dpi=90)
        plt.close(fig)
        return [Path(path)]
