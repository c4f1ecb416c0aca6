"""N-best labelings of sentences under a fitted CRF, with their log probabilities.

The model's emissions ``E = X · W`` are formed densely per corpus (the
tokens' attributes from ``model.extractor_``, ``W`` from the row-sparse
layout ``row_ptr_`` / ``label_ids_`` and ``coef_``), then every sentence is
decoded by the exact k-best Viterbi of :func:`sscrf.lattice.nbest`.
"""

import numpy as np
import scipy.sparse as sp

from . import lattice
from .inputs import check_sentences

__all__ = ["nbest_from_model"]


def _potentials(model, X):
    """Emissions of every token (n_tokens, S), offsets, and T, start, end."""
    model._check_fitted()
    X = check_sentences(X, "X")
    S = len(model.classes_)
    n_weights = len(model.label_ids_)
    n_attributes = len(model.row_ptr_) - 1
    coef = np.asarray(model.coef_, dtype=np.float64)
    # coef_ = [W entries | T (S×S) | start (S) | end (S)]
    T = coef[n_weights:n_weights + S * S].reshape(S, S)
    start = coef[n_weights + S * S:n_weights + S * S + S]
    end = coef[n_weights + S * S + S:]
    features = model.extractor_.transform(X)
    W = sp.csr_matrix((coef[:n_weights], np.asarray(model.label_ids_), np.asarray(model.row_ptr_)),
                      shape=(n_attributes, S))
    design = sp.csr_matrix((features.values, features.indices, features.indptr),
                           shape=(features.n_tokens, n_attributes))
    E = np.asarray((design @ W).todense(), dtype=np.float64).reshape(features.n_tokens, S)
    return E, features.offsets, T, start, end


def nbest_from_model(model, X, k):
    """The k most probable labelings of each sentence under a fitted CRF.

    Parameters
    ----------
    model : sscrf.CRF
        A fitted (or loaded) model.
    X : list of sentences
        Tokens in the form the model was trained on; a sentence may be empty.
    k : int
        Labelings per sentence, at least 1.

    Returns
    -------
    list of list of (list of str, float)
        Per sentence, ``min(k, S**n)`` pairs ``(labels, log p(labels | x))``,
        most probable first; among exactly equal scores the labeling whose
        label ids are lexicographically smaller comes first. An empty sentence
        gets ``[([], 0.0)]``.

    Raises
    ------
    ValueError
        ``k < 1``.
    TypeError
        ``k`` is not an integer.
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"k must be an integer, got {type(k).__name__}")
    if k < 1:
        raise ValueError(f"k must be a positive integer, got {k}")
    E, offsets, T, start, end = _potentials(model, X)
    classes = list(model.classes_)
    out = []
    for s in range(len(offsets) - 1):
        Es = E[offsets[s]:offsets[s + 1]]
        paths, scores = lattice.nbest(Es, T, k, start, end)
        log_z = lattice.log_partition(Es, T, start, end)
        out.append(labelings_with_log_p(paths, scores, log_z, classes))
    return out


def labelings_with_log_p(paths, scores, log_z, classes):
    """``(labels, log p)`` of lattice.nbest's paths and scores under log Z."""
    # log p <= 0: rounding can put a near-certain labeling's score above log Z
    return [([classes[i] for i in path], min(0.0, float(score - log_z)))
            for path, score in zip(paths.tolist(), scores.tolist())]
