"""The run report: one self-contained HTML file (figures embedded) and its Markdown twin.

:func:`write_report` renders a run — a fitted estimator, a run directory or a
:class:`~admm_automl.reporting.rundir.RunData` — as: the result; the figures of :mod:`admm_automl.reporting.plots`
(best loss against time and evaluations, losses per algorithm of each module, each constraint's
values with its threshold and the multipliers μ, ‖λ‖ and ‖θ̃d − δ‖ over the ADMM iterations); a
leaderboard of the best pipelines (:func:`leaderboard`); the failures with their error text; the
configuration, what the losses depend on (the journal's run header) and the machine.

The report is built once as a list of blocks (heading, paragraph, table, figure, preformatted text)
and written twice, so the HTML and the Markdown always say the same. The Markdown's figures are PNG
files in ``<name>_files/`` beside it (Markdown viewers do not all show embedded images). Written by
hand: the two formats need only headings, tables, images and code blocks, which no templating
library would make shorter.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import numbers
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from . import plots
from .._files import make_folder, write_file
from ..records import POINT
from ..evaluation.metrics import shown
from ..exceptions import InvalidParameterError
from .rundir import RunData, as_run, evaluations_note, steps_note

__all__ = ["failures", "leaderboard", "write_report"]


# ----------------------------------------------------------------------------- tables
def _ranked(run: RunData):
    """The full-fidelity successful evaluations, best first: feasible ones by loss, then the
    others by violation (as the search ranks them)."""
    h = plots.full_fidelity(run.history)
    h = h[plots.succeeded(h)].copy()
    if "feasible" in h:
        h["_order"] = (~h["feasible"].astype(bool)).astype(int)
        h["_violation"] = h["violation"].where(~h["feasible"].astype(bool), 0.0)
        keys = ["_order", "_violation", "loss", "eval_id"]
    else:
        keys = ["loss", "eval_id"]
    return h.sort_values(keys, kind="stable")


def leaderboard(run: Any, n: int = 10):
    """The ``n`` best pipelines of a run (a fitted estimator or a run directory) as a DataFrame,
    as AutoGluon's ``leaderboard()``: ``eval_id``, ``pipeline``, ``loss``, ``score``
    (``offset − loss``), each constraint's value (and, for a confidence bound, its point value
    on the validation rows, ``<key>:point``) and ``feasible``, ``fit_time``,
    ``predict_time``, ``ensemble_weight`` (its share of the ensemble ``predict`` uses, 0 if not a
    member) and ``hyperparameters`` (a dict of the chosen algorithms' values).

    Only the evaluations that succeeded on all the rows are ranked: a loss measured on part of
    the rows (a probe on a tenth of a large data set, a low rung of a fidelity ladder) or cut
    short by the end of the time budget does not compare with them. So the board can have fewer
    than ``n`` rows; then its ``note`` attribute says why (how many evaluations failed, ran on
    part of the rows or were cut), and printing the board prints the note under the table — a
    warning would also sound when a short board is what was expected (a report of a short run),
    and would be gone from a notebook's output by the time the table is read again.

    The board is a :class:`~admm_automl.reporting.board.Leaderboard`, a DataFrame whose printed
    form fits the terminal (100 columns where there is none): the pipeline, its score, its
    feasibility, its fit time, its share of the ensemble and its hyperparameters as
    ``name=value`` text cut to the width, then the names of the columns not printed."""
    from .board import Leaderboard

    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise InvalidParameterError(f"leaderboard(n=...) takes the number of pipelines to show, "
                                    f"a positive integer; got {n!r}")
    run = as_run(run)
    ranked = _ranked(run)
    h = ranked.head(n)
    offset = run.metric[1]
    columns = ["eval_id", "pipeline", "loss"]
    columns += [f"constraint:{c['key']}{suffix}" for c in run.constraints for suffix in ("", POINT)
                if f"constraint:{c['key']}{suffix}" in h]
    columns += [c for c in ("feasible", "fit_time", "predict_time") if c in h]
    board = h[columns].reset_index(drop=True)
    board.insert(3, "score", offset - board["loss"].astype(float))
    params = [c for c in h.columns if c.startswith("param:") and "__" in c]
    members = (run.summary.get("ensemble") or {}).get("members", [])
    weights = {int(m["eval_id"]): float(m["weight"]) for m in members}
    board["ensemble_weight"] = [weights.get(int(i), 0.0) for i in board["eval_id"]]
    board["hyperparameters"] = [
        {c[len("param:"):]: v for c, v in zip(params, row) if not _missing(v)}
        for row in h[params].itertuples(index=False)
    ]
    board.index += 1
    board = Leaderboard(board)
    board.note = _shortfall(run.history, n, len(ranked))
    return board


def _shortfall(history: Any, n: int, ranked: int) -> str:
    """Why a leaderboard of ``n`` rows has only ``ranked`` (``""`` when it has them all)."""
    if ranked >= n:
        return ""
    status = history["status"].astype(str) if "status" in history else None
    if status is None or len(history) == ranked:
        made = f"{len(history)} evaluation{'s' if len(history) != 1 else ''}"
        return (f"{ranked} of the {n} rows asked for: the run made {made}"
                + (", every one ranked." if ranked else "."))
    ok = status == "ok"
    cut = history["budget_stop"].eq(True) if "budget_stop" in history else ok & False
    partial = ok & ~cut & (history["fidelity"].astype(float) < 1.0)
    failed = status[~status.isin(["ok", "cancelled"])].value_counts()
    parts = []
    if partial.any():
        parts.append(f"{int(partial.sum())} ran on part of the rows only (a probe on a tenth of "
                     "large data whose full fit would not fit its time, or a low rung of a "
                     "fidelity ladder), whose losses do not rank with those on all rows")
    if failed.sum():
        kinds = ", ".join(f"{count} {kind}" for kind, count in failed.items())
        parts.append(f"{int(failed.sum())} failed ({kinds}; failures() says why)")
    stopped = int((ok & cut).sum() + (status == "cancelled").sum())
    if stopped:
        parts.append(f"{stopped} were stopped or cancelled by the end of the time budget")
    others = len(history) - ranked
    return (f"{ranked} of the {n} rows asked for: only {ranked} of the run's {len(history)} "
            f"evaluations succeeded on all the rows; of the other {others}, "
            + "; ".join(parts) + ".")


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def failures(run: Any):
    """The failed evaluations grouped by error text: ``status``, ``error``, ``count``,
    ``eval_ids`` and ``pipelines``, most frequent first (trials cancelled by the end of the time
    budget are not failures)."""
    import pandas as pd

    h = as_run(run).history
    bad = h[~h["status"].isin(["ok", "cancelled"])].copy()
    if bad.empty:
        return pd.DataFrame(columns=["status", "error", "count", "eval_ids", "pipelines"])
    bad["error"] = bad["error"].fillna("(no error text)").astype(str)
    groups = bad.groupby(["status", "error"], sort=False)
    table = groups.agg(count=("eval_id", "size"), eval_ids=("eval_id", list),
                       pipelines=("pipeline", lambda p: sorted(set(p)))).reset_index()
    return table.sort_values("count", ascending=False, kind="stable").reset_index(drop=True)


# ----------------------------------------------------------------------------- blocks
@dataclass
class _Block:
    kind: str  # "h1", "h2", "p", "table", "figure", "pre"
    text: str = ""
    rows: list[list[str]] | None = None  # a table's rows, the first is its header
    png: bytes = b""
    name: str = ""
    sortable: bool = False  # a table whose columns sort on a click (HTML)


def _fmt(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k.split('__', 1)[-1]}={_fmt(v)}" for k, v in value.items())
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return "–" if math.isnan(value) else f"{value:.4g}"
    if value is None:
        return "–"
    return str(value)


def _figure(name: str, caption: str, draw: Callable[[Any], Any], n: int = 1,
            width: float = 6.4, height: float = 4.0) -> _Block:
    """Draw on a new figure of ``n`` panels (no pyplot: nothing global), as a PNG block."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width * n, height), layout="constrained")
    axes = fig.subplots(1, n, squeeze=False)[0]
    draw(axes if n > 1 else axes[0])
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=96)
    return _Block("figure", caption, png=buf.getvalue(), name=name)


def _summary_rows(run: RunData) -> list[list[str]]:
    s, est = run.summary, run.config.get("estimator") or {}
    name, offset = run.metric
    rows = [["method", _fmt(s.get("method") or est.get("method"))]]
    if (s.get("method") or est.get("method")) != "jopt":
        rows.append(["z-solver", _fmt(est.get("z_solver"))])
    if (s.get("method") or est.get("method")) != "select":
        rows.append(["θ-solver", _fmt(est.get("theta_solver"))])
    if s:
        label, value = shown(name, offset, float(s["best_loss"]))
        rows += [["best pipeline", f"{s['best_pipeline']} (evaluation {s['best_eval_id']})"],
                 [f"validation {label}", _fmt(value)]]
        ensemble = s.get("ensemble")
        if ensemble:  # what predict uses, and what the test score is of
            members = ", ".join(f"{m['weight']:.0%} {m['pipeline']} ({m['eval_id']})"
                                for m in ensemble["members"])
            rows += [["model used by predict (and scored on the test data)",
                      f"an ensemble of {len(ensemble['members'])}: {members}"],
                     [f"ensemble validation {label}",
                      _fmt(shown(name, offset, float(ensemble["validation_loss"]))[1])]]
        if "test_score" in s:
            rows.append([f"test {label}", _fmt(shown(name, offset, offset - s["test_score"])[1])])
        if s.get("constraints"):  # as the CLI says it (older runs: the bounds alone)
            rows.append(["constraints, on the validation data",
                         "; ".join(c.get("validation", c["text"]) for c in s["constraints"])
                         + ("" if s["feasible"] else " — no evaluation met them all")])
        note = evaluations_note(s["n_failed"], s.get("n_timeouts", 0), s.get("timeout_seconds"))
        rows += [["evaluations", f"{s['n_evals']} ({note}), stopped by {s['stop_reason']}"],
                 *([["steps", steps_note(s["steps"])]] if s.get("steps") else []),
                 ["search time", f"{_fmt(s.get('search_time'))} s (refit "
                                 f"{_fmt(s.get('refit_time'))} s)"],
                 ["finished", _fmt(s.get("finished"))]]
    elif run.history.empty:  # killed before its first evaluation was recorded
        rows.append(["evaluations", "none yet: the run stopped before its first evaluation "
                                    "was recorded (no summary.json)"])
    else:
        h = run.history
        failed = int((~h["status"].isin(["ok", "cancelled"])).sum())
        rows.append(["evaluations", f"{int((h['status'] != 'cancelled').sum())} recorded "
                                    f"({failed} failed); the run did not finish (no summary.json)"])
    return rows


def _table(frame: Any, formats: dict[str, Callable[[Any], str]] | None = None) -> list[list[str]]:
    formats = formats or {}
    header = [str(c).removeprefix("param:").removeprefix("constraint:") for c in frame.columns]
    rows = [[formats.get(c, _fmt)(v) for c, v in zip(frame.columns, rec)]
            for rec in frame.itertuples(index=False)]
    return [header, *rows]


def _blocks(run: RunData, n_best: int) -> list[_Block]:
    name, offset = run.metric
    blocks = [_Block("h1", "admm-automl run report"),
              _Block("p", f"Run: {run.source}."),
              _Block("table", rows=[["", ""], *_summary_rows(run)])]
    if run.history.empty:  # nothing to plot or rank: what the run is, for when it resumes
        return blocks + _setting_blocks(run)
    blocks.append(_Block("h2", "Convergence"))
    blocks.append(_figure("convergence", "Every evaluation's loss and the best loss so far, "
                          "against time and against evaluations.",
                          lambda axes: [plots.plot_convergence(run, x=x, ax=a)
                                        for x, a in zip(("time", "evaluations"), axes)], n=2))
    names = plots.modules(run)
    if names:
        tall = max(2.5, 0.45 * plots.most_choices(run, names))
        blocks += [_Block("h2", "Algorithms"),
                   _figure("algorithms", "Losses of each algorithm of each module (full-fidelity "
                           "evaluations; evaluations and failures in brackets).",
                           lambda axes: plots.plot_algorithms(run, ax=axes), n=len(names),
                           width=4.6, height=tall)]
    keys = [c["key"] for c in run.constraints if f"constraint:{c['key']}" in run.history]
    if keys:
        blocks += [_Block("h2", "Constraints"),
                   _figure("constraints", "Each constraint's value at every evaluation, with its "
                           "threshold.", lambda axes: plots.plot_constraints(run, ax=axes),
                           n=len(keys), width=5.0)]
        if all(f"mu:{k}" in run.trace for k in keys) and len(run.trace) > 1:
            blocks.append(_figure("multipliers", "The multipliers μ after each ADMM iteration.",
                                  lambda ax: plots.plot_multipliers(run, ax=ax)))
    if {"lambda_norm", "primal_residual"} <= set(run.trace.columns):
        blocks.append(_Block("h2", "ADMM"))
        if len(run.trace) > 1:
            blocks.append(_figure("residuals", "‖λ‖ and ‖θ̃d − δ‖ after each ADMM iteration.",
                                  lambda ax: plots.plot_residuals(run, ax=ax)))
        else:  # one point is no curve: say the values instead of drawing dots
            last = run.trace.iloc[-1]
            mus = "".join(f", μ {k} = {last[f'mu:{k}']:.3g}" for k in keys
                          if f"mu:{k}" in run.trace)
            blocks.append(_Block("p", f"One ADMM iteration: ‖λ‖ = {last['lambda_norm']:.3g}, "
                                      f"‖θ̃d − δ‖ = {last['primal_residual']:.3g}{mus}."))
    label = shown(name, offset, 0.0)[0]
    # a score beside the loss; a metric without one (RMSE) is read as the loss
    legend = f"{label} = {offset:g} − loss" if offset else f"loss = {label}"

    def ranked(n: int):
        """The ``n`` best pipelines as the report shows them: ranked, the score by its name."""
        board = leaderboard(run, n)
        board.insert(0, "rank", board.index)
        return board.rename(columns={"score": label}) if offset else board.drop(columns="score")

    board = ranked(n_best)
    blocks += [_Block("h2", f"Leaderboard: the {len(board)} best pipelines"),
               _Block("p", ("Feasible pipelines first, by validation loss, then the others by "
                            "how far they miss the constraints" if keys else
                            "By validation loss") + f"; {legend}; times in seconds."),
               _Block("table", rows=_table(board))]
    n_all = len(_ranked(run))
    if n_all > len(board):  # every successful evaluation (the failures follow, by reason)
        every = ranked(n_all)
        blocks += [_Block("h2", f"Every successful evaluation ({len(every)})"),
                   _Block("p", "Ranked as the leaderboard; in the web page a click on a column's "
                               "header sorts by it (a second click the other way)."),
                   _Block("table", rows=_table(every), sortable=True)]
    bad = failures(run)
    blocks.append(_Block("h2", f"Failures ({int(bad['count'].sum()) if len(bad) else 0})"))
    if bad.empty:
        blocks.append(_Block("p", "No evaluation failed."))
    for rec in bad.itertuples(index=False):
        ids = ", ".join(map(str, rec.eval_ids[:20])) + (" ..." if len(rec.eval_ids) > 20 else "")
        blocks += [_Block("p", f"{rec.count} × {rec.status} — {', '.join(rec.pipelines[:5])} "
                               f"(evaluations {ids}):"),
                   _Block("pre", rec.error.strip()[-4000:])]
    return blocks + _setting_blocks(run)


def _setting_blocks(run: RunData) -> list[_Block]:
    """The report's closing sections: the configuration, the run header and the machine."""
    import yaml

    blocks = [_Block("h2", "Configuration"),
               _Block("pre", yaml.safe_dump(run.config, sort_keys=False).strip()
                      if run.config else "(no config.resolved.yaml)")]
    if run.header:
        blocks += [_Block("h2", "What the losses depend on (journal run header)"),
                   _Block("pre", json.dumps(run.header, indent=2))]
    machine = run.summary.get("machine")
    if machine:
        packages = ", ".join(f"{k} {v}" for k, v in machine.get("packages", {}).items())
        rows = [["", ""], *[[k, _fmt(v)] for k, v in machine.items() if k != "packages"],
                ["packages", packages]]
        blocks += [_Block("h2", "Machine"), _Block("table", rows=rows)]
    return blocks


# ----------------------------------------------------------------------------- rendering
_CSS = """
body { font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; margin: 2em auto;
       max-width: 1280px; padding: 0 1em; color: #222; line-height: 1.4; }
h1 { border-bottom: 2px solid #4c72b0; padding-bottom: .2em; }
h2 { margin-top: 1.6em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; font-size: 13px; margin: .5em 0; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f3f5f9; }
tr:nth-child(even) td { background: #fafafa; }
pre { background: #f6f8fa; border: 1px solid #e1e4e8; padding: .6em; overflow-x: auto;
      font-size: 12px; white-space: pre-wrap; }
figure { margin: .5em 0; } figcaption { color: #555; font-size: 13px; }
img { max-width: 100%; }
"""


#: sorts a ``table.sortable`` by the clicked column: numbers as numbers, the rest as text
_SORT_JS = """
document.querySelectorAll('table.sortable th').forEach(th => {
  th.style.cursor = 'pointer';
  th.addEventListener('click', () => {
    const body = th.closest('table').tBodies[0], i = th.cellIndex;
    const dir = th.dataset.dir === 'asc' ? -1 : 1;
    const key = row => { const t = row.cells[i].textContent, x = Number(t);
                         return t !== '' && !isNaN(x) ? [0, x] : [1, t]; };
    const rows = Array.from(body.rows).sort((a, b) => {
      const [p, x] = key(a), [q, y] = key(b);
      return (p - q || (x < y ? -1 : x > y ? 1 : 0)) * dir; });
    th.dataset.dir = dir === 1 ? 'asc' : 'desc';
    rows.forEach(row => body.appendChild(row));
  });
});
"""


def _html(blocks: list[_Block]) -> str:
    e = html.escape
    out = ["<!DOCTYPE html>", "<html lang='en'><head><meta charset='utf-8'>",
           "<title>admm-automl run report</title>", f"<style>{_CSS}</style></head><body>"]
    for b in blocks:
        if b.kind in ("h1", "h2"):
            out.append(f"<{b.kind}>{e(b.text)}</{b.kind}>")
        elif b.kind == "p":
            out.append(f"<p>{e(b.text)}</p>")
        elif b.kind == "pre":
            out.append(f"<pre>{e(b.text)}</pre>")
        elif b.kind == "table":
            head, *rows = b.rows or [[]]
            cells = "".join(f"<th>{e(c)}</th>" for c in head)
            thead = f"<thead><tr>{cells}</tr></thead>" if any(head) else ""
            body = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in rows)
            kind = " class='sortable'" if b.sortable else ""
            out.append(f"<table{kind}>{thead}<tbody>{body}</tbody></table>")
        elif b.kind == "figure":
            data = base64.b64encode(b.png).decode("ascii")
            out.append(f"<figure><img alt='{e(b.name)}' src='data:image/png;base64,{data}'>"
                       f"<figcaption>{e(b.text)}</figcaption></figure>")
    if any(b.sortable for b in blocks):
        out.append(f"<script>{_SORT_JS}</script>")
    out.append("</body></html>")
    return "\n".join(out)


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _fence(text: str) -> str:
    """A Markdown code block of ``text`` whose fence is longer than any run of backticks in it
    (CommonMark closes a block at a line of as many), so an error message that holds a line of
    three backticks stays inside its block."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text}\n{fence}"


def _markdown(blocks: list[_Block], folder: Path) -> str:
    out = []
    for b in blocks:
        if b.kind == "h1":
            out.append(f"# {b.text}")
        elif b.kind == "h2":
            out.append(f"## {b.text}")
        elif b.kind == "p":
            out.append(b.text)
        elif b.kind == "pre":
            out.append(_fence(b.text))
        elif b.kind == "table":
            head, *rows = b.rows or [[]]
            lines = ["| " + " | ".join(_md_cell(c) for c in head) + " |",
                     "|" + "---|" * len(head)]
            lines += ["| " + " | ".join(_md_cell(c) for c in r) + " |" for r in rows]
            out.append("\n".join(lines))
        elif b.kind == "figure":
            write_file(make_folder(folder) / f"{b.name}.png", b.png)
            out.append(f"![{b.name}]({folder.name}/{b.name}.png)\n\n*{b.text}*")
    return "\n\n".join(out) + "\n"


def write_report(run: Any, path: "str | Path | None" = None, *, n_best: int = 10) -> Path:
    """Write the report of ``run`` (a fitted estimator, a run directory or a RunData) to
    ``path`` (an ``.html`` file, or a directory for ``report.html`` in it; default: the run
    directory, or ``report.html`` here for an estimator without ``output_dir``), and its Markdown
    twin beside it (same name, ``.md``, figures in ``<name>_files/``). Returns the HTML path.

    Raises :class:`~admm_automl.exceptions.MissingDependencyError` without matplotlib.
    """
    if path is None:
        if isinstance(run, (str, Path)):
            path = Path(run)
        else:
            path = Path(getattr(run, "output_dir", None) or ".")
    path = Path(path)
    if path.is_dir() or not path.suffix:
        path = path / "report.html"
    if path.suffix.lower() not in (".html", ".htm"):
        raise InvalidParameterError(f"the report is an .html file; got {str(path)!r}")
    run = as_run(run)  # a directory that is not a run is named before a missing matplotlib
    plots.require_matplotlib()
    path.parent.mkdir(parents=True, exist_ok=True)
    blocks = _blocks(run, n_best)
    # written whole and renamed onto the names: a symbolic link there is replaced, not followed
    write_file(path, _html(blocks))
    write_file(path.with_suffix(".md"), _markdown(blocks, path.with_name(f"{path.stem}_files")))
    return path
