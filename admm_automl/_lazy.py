"""Names a package loads on first use (PEP 562), so that importing the package stays cheap."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def attach(package: str, lazy: Mapping[str, str],
           names: Sequence[str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``: a name of ``lazy`` is read from the
    package's submodule ``lazy[name]`` on first use and kept in the package, so the submodule is
    imported once; ``names`` is what ``dir(package)`` lists. The same idea as scientific
    Python's ``lazy_loader.attach``, in the few lines two packages here need."""

    def __getattr__(name: str) -> Any:
        if name in lazy:
            value = getattr(importlib.import_module(f".{lazy[name]}", package), name)
            setattr(sys.modules[package], name, value)
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return list(names)

    return __getattr__, __dir__
