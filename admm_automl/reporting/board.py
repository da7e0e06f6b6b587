"""The leaderboard as a DataFrame that prints as a person reads it.

pandas prints a frame wider than the terminal by dropping its middle columns (``eval_id ...
hyperparameters``, ``[5 rows x 10 columns]``), and the leaderboard's columns are many, with a
``hyperparameters`` dict as wide as a learner has hyperparameters: printed, it showed neither the
pipelines nor their scores. :class:`Leaderboard` is the same DataFrame (every column, the same
values) whose printed form picks the columns that say which pipeline won and at what cost,
fitted to the width of the terminal (100 columns where there is none): ``eval_id``,
``pipeline``, ``score``, ``feasible`` (with constraints), ``fit_time``, ``ensemble_weight`` (when
there is an ensemble, as a percentage) and as much of the hyperparameters, written ``name=value``, as the width leaves (cut with "…").
It names the columns it leaves out, and says why the board has fewer rows than were asked for
(:attr:`Leaderboard.note`). A slice or any frame computed from it is a plain DataFrame.
"""

from __future__ import annotations

import html
import shutil
import textwrap
from typing import Any

import pandas as pd

from .describe import hyperparameters_text

__all__ = ["Leaderboard"]

#: the printed width where the output is not a terminal (a file, a notebook's text, a test)
WIDTH = 100


class Leaderboard(pd.DataFrame):
    """The DataFrame of :func:`~admm_automl.reporting.report.leaderboard`, printed to fit the
    width (module docstring).

    Attributes
    ----------
    note : str
        Why the board has fewer rows than asked for (``""`` when it has them all): how many
        evaluations failed, ran on part of the rows only or were cut by the time budget. It is
        printed under the table.
    """

    _metadata = ["note"]
    note = ""

    @property
    def _constructor(self) -> type:
        return pd.DataFrame  # a slice or a computed frame has no note to keep

    def __repr__(self) -> str:
        return self.to_text()

    def to_text(self, width: int | None = None) -> str:
        """The printed form, at most ``width`` columns wide (default: the terminal's, else
        :data:`WIDTH`); :meth:`~pandas.DataFrame.to_string` gives every column in full."""
        width = width or shutil.get_terminal_size((WIDTH, 24)).columns
        view, hidden = self._view()
        lines = [view.to_string()] if len(view) else ["(no pipelines)"]
        if len(view) and "hyperparameters" in self:
            room = width - max(map(len, lines[0].splitlines())) - 2
            if room >= 16:  # else the column is left out, and said so below
                texts = [hyperparameters_text(p) for p in self["hyperparameters"]]
                cut = [t if len(t) <= room else t[:room - 1].rstrip(", ") + "…" for t in texts]
                size = max(len("hyperparameters"), *map(len, cut))
                view["hyperparameters"] = [t.ljust(size) for t in cut]
                lines = [view.to_string()]
                hidden = [c for c in hidden if c != "hyperparameters"]
                if any(c != t for c, t in zip(cut, texts)):
                    hidden.append("the hyperparameters in full (dicts)")
        if len(view) and hidden:
            lines.append(textwrap.fill(f"Also in this DataFrame, not printed: "
                                       f"{', '.join(hidden)}.", width=width))
        if self.note:
            lines.append(textwrap.fill(self.note, width=width))
        return "\n".join(lines)

    def _repr_html_(self) -> str | None:
        table = super()._repr_html_()
        if table is None or not self.note:
            return table
        return f"{table}<p>{html.escape(self.note)}</p>"

    def _view(self) -> tuple[pd.DataFrame, list[str]]:
        """The printed columns, as text, and the names of those left out."""
        view = pd.DataFrame(index=self.index)
        for name in ("eval_id", "pipeline"):
            if name in self:
                view[name] = self[name]
        if "score" in self:
            view["score"] = [_number(v, ".4f") for v in self["score"]]
        if "feasible" in self:
            view["feasible"] = ["yes" if v else "no" for v in self["feasible"]]
        if "fit_time" in self:
            view["fit_time"] = [_number(v, ".3g") for v in self["fit_time"]]
        if "ensemble_weight" in self and self["ensemble_weight"].astype(float).any():
            view["ensemble_weight"] = [f"{v:.0%}" if v else "–" for v in self["ensemble_weight"]]
        shown = set(view.columns)
        return view, [str(c) for c in self.columns if c not in shown]


def _number(value: Any, spec: str) -> str:
    try:
        return format(float(value), spec)
    except (TypeError, ValueError):
        return str(value)
