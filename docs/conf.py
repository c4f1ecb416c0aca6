"""Sphinx configuration of the sscrf documentation.

Build with ``sphinx-build -W --keep-going -b html docs docs/_build`` after
``pip install '.[docs]'`` (or with ``PYTHONPATH=python`` in a checkout that
holds the compiled core). No extension reaches the network: there is no
intersphinx, so links to numpy or Python objects stay plain text.
"""

import importlib
import os
import sys

from docutils.parsers.rst import Directive, directives

_HERE = os.path.dirname(os.path.abspath(__file__))
_SOURCE = os.path.join(_HERE, "..", "python")
# A checkout's package (with its compiled core in place) wins over an
# installed one only where no sscrf is importable otherwise.
try:
    import sscrf  # noqa: F401
except ImportError:
    sys.path.insert(0, _SOURCE)
    import sscrf  # noqa: F401

project = "sscrf"
author = "the sscrf developers"
copyright = "2026, the sscrf developers"
release = version = sscrf.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]

# Markdown pages (the guide, architecture.md) through MyST.
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 3
# architecture.md links to the README and bench/HISTORY.md outside docs/,
# which Sphinx cannot resolve; tests/test_docs_examples.py checks instead
# that every relative link of the Markdown pages names an existing file.
suppress_warnings = ["myst.xref_missing"]

autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "none"  # numpydoc's Parameters sections already give the types
autodoc_mock_imports = ["matplotlib", "sklearn"]
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks = set()

html_theme = "alabaster"
html_static_path = []
html_theme_options = {"description": "Linear-chain CRFs from cheap supervision"}


class OptionalAutodoc(Directive):
    """``.. optional-autodoc:: sscrf.Name`` documents ``sscrf.Name`` when this
    build of sscrf has it, and says it is not in this version otherwise, so
    the pages of features that land in other branches build either way."""

    required_arguments = 1
    option_spec = {"kind": directives.unchanged}

    def run(self):
        dotted = self.arguments[0]
        module_name, _, name = dotted.rpartition(".")
        try:
            present = hasattr(importlib.import_module(module_name), name)
        except ImportError:
            present = False
        kind = self.options.get("kind", "autoclass")
        source, line = self.state_machine.get_source_and_line(self.lineno)
        if present:
            text = [f".. {kind}:: {dotted}", ""]
        else:
            text = [f"``{dotted}`` is not part of this version of sscrf.", ""]
        self.state_machine.insert_input(text, source)
        return []


def setup(app):
    app.add_directive("optional-autodoc", OptionalAutodoc)
    return {"parallel_read_safe": True}
