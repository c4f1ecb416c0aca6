"""Sphinx configuration of the sscrf documentation.

Build with ``sphinx-build -W --keep-going -b html docs docs/_build`` after
``pip install '.[docs]'`` (or with ``PYTHONPATH=python`` in a checkout that
holds the compiled core). No extension reaches the network: there is no
intersphinx, so links to numpy or Python objects stay plain text.
"""

import os
import sys

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
