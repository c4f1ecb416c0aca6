"""The one door from the benchmarks to sscrf's internals.

Benchmarks time the compiled core on corpora and layouts they build
themselves, which needs a few of the package's building blocks. Each
function here is named after its public equivalent, so that switching this
module to the public names changes no benchmark:

=====================================  =============================================
here                                   public equivalent
=====================================  =============================================
``compile_corpus``                     ``sscrf.corpus.compile_corpus``
``encode_labels``                      ``sscrf.inputs.encode_labels``
``layout_for_feature_set``             ``sscrf.layout.ParameterLayout.for_feature_set(...).core``
``every_pair_layout``                  ``sscrf.layout.ParameterLayout.every_pair(...).core``
``model_layout``                       ``crf.layout_.core``
``ge_firings``                         the GE term's constraint firings (none yet)
=====================================  =============================================

Imports numpy and sscrf: not for a parent process that must stay light.
"""

import numpy as np

from sscrf import _core
from sscrf.model import _compile, _encode_labels, _layout_arrays

__all__ = ["compile_corpus", "encode_labels", "layout_for_feature_set", "every_pair_layout",
           "model_layout", "ge_firings"]


def compile_corpus(features, labels=None, weights=None, mask=None, n_labels=None):
    """The ``_core.Corpus`` of ``features`` as ``fit`` compiles it.

    Parameters
    ----------
    features : sscrf.features.Features
    labels : (n_tokens,) int32 or None
        Gold label id per token (-1: not one label).
    weights : (n_sentences,) float or None
    mask : (n_tokens, n_labels) bool or None
        Allowed labels per token.
    n_labels : int or None
        With it, chunked for a model of that many labels.
    """
    return _compile(features, labels=labels, weights=weights, mask=mask, n_labels=n_labels)


def encode_labels(y, label_index):
    """(n_tokens,) int32 label ids of the label sequences ``y``; -1 where a
    partial annotation allows more than one label; an unknown label raises."""
    return _encode_labels(y, label_index)


def layout_for_feature_set(features, token_labels, n_labels, feature_set):
    """The ``_core.Layout`` of ``feature_set`` (``"observed"``: the attribute-label
    pairs of labeled tokens, ``token_labels[t] >= 0``; ``"dense"``: every pair)."""
    row_ptr, label_ids = _layout_arrays(features, token_labels, n_labels, feature_set)
    return _core.Layout(row_ptr, label_ids, n_labels)


def every_pair_layout(n_attributes, n_labels):
    """The ``_core.Layout`` with a weight for every (attribute, label) pair, in label order."""
    row_ptr = np.arange(n_attributes + 1, dtype=np.int64) * n_labels
    label_ids = np.tile(np.arange(n_labels, dtype=np.int32), n_attributes)
    return _core.Layout(row_ptr, label_ids, n_labels)


def model_layout(model):
    """The ``_core.Layout`` of a fitted ``sscrf.CRF`` (its weights are ``model.coef_``)."""
    return model._layout()


def ge_firings(term):
    """The ``_core.ConstraintFirings`` of a ``ge`` objective term (for timing its two
    passes apart)."""
    return term._firings
