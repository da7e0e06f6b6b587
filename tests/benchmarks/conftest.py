"""The experiment scripts under ``experiments/`` are not a package; their tests load one by path."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from unittest.mock import patch

import pytest

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"


@pytest.fixture
def load_script():
    """``load_script("portfolio")`` imports ``experiments/portfolio.py`` as a module. The scripts
    pin BLAS threads in ``os.environ`` at import; that is undone, so later tests' child processes
    are unaffected."""

    def load(name: str):
        spec = importlib.util.spec_from_file_location(f"{name}_script", EXPERIMENTS / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        with patch.dict(os.environ):
            spec.loader.exec_module(module)
        return module

    return load
