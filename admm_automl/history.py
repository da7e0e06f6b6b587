"""The append-only trial journal: one JSON object per evaluation, written before it is used."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Iterable

import numpy as np


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)  # JSON has no NaN/inf
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return repr(value)


class Journal:
    """Records of every evaluation, kept in memory and appended (flushed) to a JSONL file if given.

    Parameters
    ----------
    path : str or Path, optional
        The JSONL file; appended to, so a resumed run keeps what was recorded before.
    """

    def __init__(self, path: "str | Path | None" = None) -> None:
        self.path = Path(path) if path is not None else None
        self.records: list[dict[str, Any]] = []
        self._fh = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.path, "a", encoding="utf-8")

    def append(self, record: dict[str, Any]) -> None:
        record = _jsonable(record)
        if self._fh is not None:
            self._fh.write(json.dumps(record, sort_keys=True) + "\n")
            self._fh.flush()
        self.records.append(record)

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def __len__(self) -> int:
        return len(self.records)

    @staticmethod
    def read(path: "str | Path") -> list[dict[str, Any]]:
        """The records of a journal file; a truncated last line (a crash mid-write) is ignored."""
        records = []
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError:
                    continue
        return records


def records_to_frame(records: Iterable[dict[str, Any]]):
    """A pandas DataFrame, one row per evaluation; ``config`` and ``constraints`` become columns."""
    import pandas as pd

    rows = []
    for rec in records:
        row = {k: v for k, v in rec.items() if k not in ("config", "constraints")}
        row.update({f"param:{k}": _cell(v) for k, v in rec.get("config", {}).items()})
        row.update({f"constraint:{k}": v for k, v in rec.get("constraints", {}).items()})
        rows.append(row)
    return pd.DataFrame(rows)


def _cell(value: Any) -> Any:
    return repr(value) if isinstance(value, (list, dict)) else value
