"""The documentation site's getting-started page as a reader meets it: built by Sphinx with the
site's own configuration, opened in headless Chromium, its steps in order, every command on it one
the command line accepts, every Python block valid, every link to the user guide landing on a
heading that exists. (That the commands also *run* as written was checked by hand when the page
was written; running them here would cost minutes of search.)

Only the user-guide pages are built (the API reference and the papers are left out: autosummary
would import every module), about ten seconds.
"""

from __future__ import annotations

import ast
import html
import importlib.util
import re
import shlex
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
#: the steps of docs/getting_started.md, in the order a reader takes them
STEPS = ["1. Install", "2. A table of data", "3. Search under a constraint", "4. The report",
         "5. The saved model", "6. Predict new rows",
         "7. The same from Python, with a fairness limit"]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("sphinx") is None
                       or importlib.util.find_spec("myst_parser") is None,
                       reason="Sphinx and myst-parser are not installed (the [docs] extra): the "
                       "test of the documentation site is skipped"),
]


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class _Page(HTMLParser):
    """The headings (h1–h3, in order), the code blocks and the links of a Sphinx HTML page, and
    the ids its elements carry."""

    def __init__(self) -> None:
        super().__init__()
        self.headings: list[tuple[str, str]] = []
        self.code: list[str] = []
        self.links: list[str] = []
        self.ids: set[str] = set()
        self._open: list[list] = []  # [tag, text] of the headings and pre blocks being read

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("href"):
            self.links.append(attrs["href"])
        if tag in ("h1", "h2", "h3", "pre"):
            self._open.append([tag, ""])

    def handle_endtag(self, tag):
        if self._open and self._open[-1][0] == tag:
            tag, text = self._open.pop()
            if tag == "pre":
                self.code.append(text)
            else:
                self.headings.append((tag, text.replace("¶", "").strip()))

    def handle_data(self, data):
        if self._open:
            self._open[-1][1] += data


def _read(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The user-guide pages, built with docs/conf.py; a warning about them fails the test."""
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-d", str(out / "doctrees"),
         "-D", "exclude_patterns=_build,api,papers", "-D", "autosummary_generate=0",
         str(DOCS), str(out / "html")],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    ours = [line for line in done.stderr.splitlines()
            if re.search(r"(getting_started|user_guide)\.md|README\.md", line)]
    assert not ours, "\n".join(ours)
    return out / "html"


def _commands(code_blocks: list[str]) -> list[list[str]]:
    """The ``admm-automl ...`` command lines of the shell blocks, continuation lines joined."""
    commands = []
    for block in code_blocks:
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if words and words[0] == "admm-automl":
                commands.append(words[1:])
    return commands


def test_the_steps_are_there_in_order(site):
    page = _read(site / "getting_started.html")
    assert page.headings[0] == ("h1", "Getting started")
    assert [text for tag, text in page.headings if tag == "h2"] == STEPS


def test_every_command_on_the_page_is_one_the_command_line_accepts(site):
    """Each ``admm-automl`` line parses with the real parser: its verb is a subcommand and its
    options exist (argparse exits on anything else). Between them they take a reader from fit to
    predictions."""
    from admm_automl.cli import _parser

    commands = _commands(_read(site / "getting_started.html").code)
    verbs = [words[0] for words in commands if words[0] != "--help"]
    assert verbs == ["fit", "report", "predict"]
    parser = _parser()
    for words in commands:
        if words == ["--help"]:
            continue
        args = parser.parse_args(words)  # SystemExit(2) for an unknown verb or option
        assert args.command == words[0]
    fit = parser.parse_args(commands[1])
    assert fit.constraints == ["latency <= 1e-4"] and fit.output_dir == "runs/cancer"
    predict = parser.parse_args(commands[-1])
    assert predict.run_dir == fit.output_dir  # predicts with the run the page fitted


def test_every_python_block_is_valid_and_imports_what_exists(site):
    blocks = [b for b in _read(site / "getting_started.html").code if "import " in b]
    assert len(blocks) == 3  # the data, the saved model, the estimator with a fairness limit
    for block in blocks:
        tree = ast.parse(block)  # a SyntaxError fails the test
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                module = importlib.import_module(node.module)
                for alias in node.names:
                    assert hasattr(module, alias.name), f"{node.module}.{alias.name}"
    fairness = blocks[-1]
    assert "sensitive_features=" in fairness and "demographic_parity_difference" in fairness


def test_links_to_the_user_guide_land_on_its_headings(site):
    """Every link of the page to another page of the site opens a file that exists, and its
    ``#anchor`` is the id of an element there (a renamed README heading breaks it)."""
    links = [html.unescape(href) for href in _read(site / "getting_started.html").links
             if not href.startswith(("http:", "https:", "mailto:", "#"))]
    guide = [href for href in links if href.startswith("user_guide.html")]
    assert len(guide) >= 5
    for href in links:
        name, _, anchor = href.partition("#")
        target = site / name
        assert target.is_file(), href
        if anchor:
            assert anchor in _read(target).ids, href
    # the user guide is the README's text: its sections and the README's first example are there
    text = (site / "user_guide.html").read_text(encoding="utf-8")
    for heading in ("Use it from Python", "Saving and loading a fitted model", "Command line",
                    "Constraints: latency, fairness, metric bounds, model size", "Install"):
        assert heading in text, heading
    assert "user-guide: start" not in text and "Layout" not in _read(site / "user_guide.html") \
        .headings[-1][1]


@pytest.mark.skipif(_chromium() is None, reason="Chromium is not installed (make chromium "
                    "installs Debian's package): the browser check of the docs page is skipped")
def test_the_page_renders_in_headless_chromium(site, tmp_path):
    """What Chromium shows: the DOM it built holds the title, the steps in order and the commands
    as a reader copies them; the screenshot is a page of text, not a blank one."""
    page = site / "getting_started.html"
    flags = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-background-networking", "--no-first-run",
             f"--user-data-dir={tmp_path / 'profile'}", "--hide-scrollbars"]
    dom = subprocess.run(flags + ["--dump-dom", page.as_uri()], check=True, capture_output=True,
                         text=True, timeout=120).stdout
    shown = _Page()
    shown.feed(dom)
    assert shown.headings[0] == ("h1", "Getting started")
    assert [text for tag, text in shown.headings if tag == "h2"] == STEPS
    assert any("admm-automl predict runs/cancer new_rows.csv" in block for block in shown.code)
    assert "<title>Getting started" in dom
    shot = tmp_path / "shot.png"
    subprocess.run(flags + ["--window-size=1280,1600", f"--screenshot={shot}", page.as_uri()],
                   check=True, capture_output=True, timeout=120)
    plt_image = pytest.importorskip("matplotlib.image")
    image = plt_image.imread(shot)[..., :3]
    assert image.shape[:2] == (1600, 1280)
    assert image.std() > 0.05  # not a blank page
    dark = (image.mean(axis=2) < 0.3).mean()
    assert 0.001 < dark < 0.5  # text on a light page
