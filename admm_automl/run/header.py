"""The run header: what the recorded losses of a run depend on, the first line of its journal,
which refuses to resume under another (:func:`run_header`; :func:`function_header` for a test
function such as the artificial objective), and the digests it holds: of the data
(:func:`fingerprint`), of the space and of the constraints' measures."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from ..final.outcome import Task


def run_header(task: Task, *, cv: int | None, validation_size: float, repeats: int = 1
               ) -> dict[str, Any]:
    """What the losses recorded for ``task`` depend on; a journal refuses to resume under another
    (``repeats`` is written only above 1 and ``shrink_to_fit`` and ``boost_to_fit`` only when
    on, so that the journals of earlier versions resume)."""
    from .. import __version__

    ctx = task.context
    measures = {
        key: {k: v for k, v in c.get_params().items() if k not in ("threshold", "sense")}
        for key, c in ctx.measures.items()
    }
    data = {"rows": int(len(ctx.y)), "fingerprint": fingerprint(ctx.X, ctx.y)}
    if ctx.sensitive_features is not None:  # other groups, other constraint values
        data["sensitive_features"] = fingerprint(ctx.sensitive_features)
    return {
        "package_version": __version__,
        "data": data,
        "metric": task.metric.name if isinstance(task.metric.scorer, str)
        else f"{task.metric.name} ({getattr(task.metric.scorer, '__module__', '?')})",
        "splits": {"cv": cv, "validation_size": None if cv else validation_size,
                   "seed": task.split_seed, **({"repeats": repeats} if repeats > 1 else {})},
        "model_seed": ctx.random_state,
        "space": {"name": ctx.space.name, "fingerprint": _digest(ctx.space.modules)},
        "constraint_measures": _digest(measures) if measures else None,
        **({"shrink_to_fit": True} if ctx.shrink_to_fit else {}),  # shrunk trials, other losses
        **({"boost_to_fit": True} if ctx.boost_to_fit else {}),  # boxed rounds, other losses
    }


def function_header(name: str, space: Any, **settings: Any) -> dict[str, Any]:
    """The run header (see :func:`run_header`) of a search whose losses are a function of the
    configuration alone rather than of pipelines fitted on data, such as the artificial objective
    of Liu et al. 2020: the package version, the function's ``name`` and ``settings``, the space."""
    from .. import __version__

    return {"package_version": __version__, "function": {"name": name, **settings},
            "space": {"name": space.name, "fingerprint": _digest(space.modules)}}


def fingerprint(*arrays: Any) -> str:
    """A SHA-256 of the values (and, for frames, column names and types) of arrays, frames, series
    and sparse matrices: equal data gives equal fingerprints in any process."""
    import pandas as pd

    digest = hashlib.sha256()
    for a in arrays:
        if hasattr(a, "tocsr"):  # scipy sparse
            a = a.tocsr()
            for part in (a.data, a.indices, a.indptr, np.asarray(a.shape)):
                digest.update(np.ascontiguousarray(part).tobytes())
            continue
        if not hasattr(a, "iloc"):
            a = np.asarray(a)
            if a.dtype.kind != "O":
                digest.update(f"{a.dtype.str}{a.shape}".encode())
                digest.update(np.ascontiguousarray(a).tobytes())
                continue
            a = pd.DataFrame(a.reshape(len(a), -1))
        if isinstance(a, pd.DataFrame):
            digest.update(repr([(str(c), str(t)) for c, t in a.dtypes.items()]).encode())
        digest.update(pd.util.hash_pandas_object(a, index=False).to_numpy().tobytes())
    return digest.hexdigest()


def _stable(value: Any) -> Any:
    """A form of ``value`` whose repr is the same in every process (functions and classes by
    their import path, not their address)."""
    if isinstance(value, dict):
        return {str(k): _stable(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_stable(v) for v in value]
    if callable(value) and hasattr(value, "__qualname__"):
        return f"{getattr(value, '__module__', '?')}.{value.__qualname__}"
    return value


def _digest(value: Any) -> str:
    """16 hex digits of the SHA-256 of ``value``'s stable repr: equal in every process."""
    return hashlib.sha256(repr(_stable(value)).encode()).hexdigest()[:16]
