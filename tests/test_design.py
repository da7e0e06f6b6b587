"""docs/design.md lists every module of the package in its layer, the layers being the
import-linter contract of pyproject.toml: a module added, moved or removed shows on that page."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def listed() -> dict[str, str]:
    """Module -> the layer heading it is listed under."""
    layer, out = "", {}
    for line in (ROOT / "docs" / "design.md").read_text().splitlines():
        if line.startswith("### "):
            layer = line
        elif match := re.match(r"- \*\*`([\w.]+)`\*\*", line):
            out[match.group(1)] = layer
    return out


def test_the_design_page_lists_every_module_in_its_layer():
    package = ROOT / "admm_automl"
    modules = set()
    for path in package.rglob("*.py"):
        parts = path.relative_to(package).with_suffix("").parts
        modules.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    modules.discard("")
    pages = listed()
    assert set(pages) == modules
    contract = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = contract["contracts"][0]["layers"]
    for layer in layers:
        for top in re.split(r"\s*[|:]\s*", layer.strip()):
            assert all(f"`{top}`" in pages[m] for m in modules
                       if m == top or m.startswith(top + ".")), top
