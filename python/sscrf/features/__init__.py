"""Token attributes for linear-chain CRFs: templates or feature dicts, interned to CSR.

Each token gets a set of (attribute string, value) pairs. Attribute strings are
interned to integer ids in a vocabulary, and a corpus becomes the sparse design
matrix ``X`` (tokens × attributes, CSR) that the C++ core multiplies with the
weight matrix ``W``, plus the token offsets of its sentences.

Two input styles:

* **Templates** (CRF++/Wapiti style) over token columns. A token is a list of
  column strings, e.g. ``["Confidence", "NN"]``; a template line such as
  ``U05:%x[-1,0]/%x[0,0]`` gives the attribute ``U05:<col 0 at t-1>/<col 0 at t>``
  with value 1.0. Positions outside the sentence read as CRF++'s pads ``_B-1``,
  ``_B-2``, ... before the start and ``_B+1``, ``_B+2``, ... after the end.
* **Feature dicts** (sklearn-crfsuite style). A token is a dict such as
  ``{"w[0]": "the", "bias": 1.0, "upper": False}``; see
  :class:`FeatureExtractor` for how each kind of value becomes attributes.

Modules: :mod:`~sscrf.features.templates` (parsing and applying templates),
:mod:`~sscrf.features.dicts` (flattening feature dicts),
:mod:`~sscrf.features.vocabulary` (count, merge, cut and freeze the
vocabulary, shard by shard if need be), :mod:`~sscrf.features.csr` (the
``Features`` matrix), :mod:`~sscrf.features.extractor` (``FeatureExtractor``,
which puts them together), :mod:`~sscrf.features.words` (the usual
named-entity token features, as dicts or as derived columns and templates).

Example
-------
>>> fx = FeatureExtractor(default_templates(2))
>>> train, = fx.fit_transform([[["He", "PRP"], ["reckons", "VBZ"]]])
>>> train.n_tokens, train.n_attributes
(2, 38)
"""

from __future__ import annotations

from .csr import Features
from .extractor import FeatureExtractor
from .templates import (
    DEFAULT_TEMPLATES,
    Templates,
    default_templates,
    parse_templates,
    read_templates,
)
from .vocabulary import AttributeCounts, Vocabulary, merge_counts
from .words import word_features

__all__ = [
    "DEFAULT_TEMPLATES",
    "AttributeCounts",
    "FeatureExtractor",
    "Features",
    "Templates",
    "Vocabulary",
    "default_templates",
    "merge_counts",
    "parse_templates",
    "read_templates",
    "word_features",
]
