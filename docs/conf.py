"""Sphinx configuration of the admm-automl documentation (``make docs``)."""

import os
import re
import sys

sys.path.insert(0, os.path.abspath(".."))  # the package of this tree, installed or not

import admm_automl  # noqa: E402

project = "admm-automl"
author = "the admm-automl authors"
release = version = admm_automl.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "myst_parser",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build"]
# _templates/autosummary: one page per class (all its own members) and per module (its members)
templates_path = ["_templates"]

# The API reference: autosummary writes a stub per listed object into api/generated/ (not
# committed; `make docs` starts from none), autodoc fills it from the numpy-style docstrings.
autosummary_generate = True
# module data documented without its value (the module template reads this): a value whose
# repr is a page of nested objects
autosummary_context = {"data_without_value": {"admm_automl.methods.registry": ["METHODS"]}}
autodoc_member_order = "bysource"
napoleon_google_docstring = False
napoleon_numpy_docstring = True
# Unresolved cross-references are not reported: the docstrings' numpy-style type fields
# ("int, default=16", "callable", "numpy.ndarray") become class references that no inventory here
# holds (no intersphinx: the docs build offline), ~400 of them; the references the pages
# themselves make all resolve (checked with `sphinx-build -n`).
nitpicky = False
# signatures longer than this are shown one parameter a line (the estimators have 31)
python_maximum_signature_line_length = 100

# The Markdown pages (search_space.md, probes.md): headings get anchors for links into them.
myst_heading_anchors = 3

html_theme = "alabaster"
html_title = f"admm-automl {release}"


# ``.. registry-table:: admm_automl.solvers.THETA_SOLVERS``: the names of a registry and the
# classes behind them, read at build time so that the table cannot fall behind the code.
def _public_path(cls):
    """The documented path of ``cls``: its shortest parent package that exports it in ``__all__``."""
    import importlib

    parts = cls.__module__.split(".")
    for i in range(2, len(parts) + 1):
        module = importlib.import_module(".".join(parts[:i]))
        if cls.__name__ in getattr(module, "__all__", ()):
            return f"{module.__name__}.{cls.__name__}"
    return f"{cls.__module__}.{cls.__qualname__}"


def _registry_table(app):
    import importlib

    from docutils import nodes
    from docutils.parsers.rst import Directive
    from docutils.statemachine import StringList
    from sphinx.util.nodes import nested_parse_with_titles

    class RegistryTable(Directive):
        required_arguments = 1

        def run(self):
            module, _, attr = self.arguments[0].rpartition(".")
            registry = getattr(importlib.import_module(module), attr)
            lines = [".. list-table::", "   :header-rows: 1", "", "   * - name", "     - class"]
            for name in registry.names():
                path = _public_path(registry.get(name))
                lines += [f"   * - ``{name}``", f"     - :class:`~{path}`"]
            node = nodes.container()
            nested_parse_with_titles(self.state, StringList(lines, source="registry-table"), node)
            return node.children

    app.add_directive("registry-table", RegistryTable)


# scikit-learn's metadata routing adds ``set_fit_request`` / ``set_score_request`` / ... to every
# estimator class as class attributes, so autodoc takes them for our methods; their docstrings are
# scikit-learn's and refer to its own glossary and labels (unresolvable here: 14 warnings).
def _skip_sklearn_request_setters(app, what, name, obj, skip, options):
    if re.fullmatch(r"set_\w+_request", name):
        return True
    return None


def setup(app):
    _registry_table(app)
    app.connect("autodoc-skip-member", _skip_sklearn_request_setters)
