"""Label proportions on unlabeled data: expectation regularisation (Mann & McCallum 2007).

The term is generalized expectation on a feature that fires at every token:
``λ·KL(p̃ ‖ p̂)`` where ``p̂(l)`` is the model's marginal probability of label
``l`` averaged over every token of the unlabeled sentences and ``p̃`` the
target proportions (by default the label frequencies of the labeled tokens).
With the entropy term, it keeps entropy minimisation from making every
uncertain token the majority label: the confident labeling must still have
the right share of each label.

It reuses the ``ge`` term (:class:`sscrf.objectives.GE`) unchanged: the
unlabeled corpus is compiled once more with attribute 0 present at every
token (with value 0 where the token does not have it, so that scores and
gradients are those of the real features), and attribute 0 is the one
constraint.
"""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from .annotations import is_complete
from .corpus import compile_corpus
from .errors import SscrfError, SscrfTypeError
from .features import Features
from .inputs import SUM_TOLERANCE
from .objectives import GE, register

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["LabelProportions", "always_on_corpus", "always_on_features",
           "check_label_proportions", "proportion_term", "target_proportions"]


def check_label_proportions(value: Any) -> Any:
    """Check ``label_proportions``: ``"labeled"`` or a dict ``{label: share}``."""
    if isinstance(value, str):
        if value != "labeled":
            raise SscrfError(f"label_proportions={value!r}: give 'labeled' (the label "
                             "frequencies of the labeled tokens) or a dict {label: share}")
        return value
    if not isinstance(value, dict) or not value:
        raise SscrfTypeError("label_proportions must be 'labeled' or a non-empty dict "
                             f"{{label: share}}, not {value!r}")
    for label, share in value.items():
        if not isinstance(label, str):
            raise SscrfTypeError(f"label_proportions: label {label!r} is not a string")
        if (isinstance(share, bool) or not isinstance(share, numbers.Real)
                or not np.isfinite(float(share)) or share < 0):
            raise SscrfError(f"label_proportions[{label!r}] = {share!r}: shares must be "
                             "finite and non-negative")
    total = float(sum(value.values()))
    if abs(total - 1.0) > SUM_TOLERANCE:
        raise SscrfError(f"label_proportions sums to {total:g}; the shares must sum to 1")
    return value


def target_proportions(label_proportions: Any, y: Sequence[Any],
                       classes: Sequence[str]) -> NDArray[np.float64]:
    """``p̃`` as an array (1, S) over ``classes``.

    ``"labeled"``: the frequencies of the labels of the completely labeled
    sentences of ``y`` (a partially labeled sentence's known tokens would
    bias the shares toward what annotators mark).
    """
    label_proportions = check_label_proportions(label_proportions)  # "labeled" or a dict
    index = {label: i for i, label in enumerate(classes)}
    target = np.zeros((1, len(classes)))
    if label_proportions == "labeled":
        for seq in y:
            if is_complete(seq):
                for label in seq:
                    target[0, index[label]] += 1
        if target.sum() == 0:
            raise SscrfError("label_proportions='labeled' needs completely labeled "
                             "sentences; give the shares as a dict {label: share}")
    else:
        for label, share in label_proportions.items():
            if label not in index:
                raise SscrfError(f"label_proportions names {label!r}, which is not one of "
                                 f"the model's labels {list(classes)}")
            target[0, index[label]] = share
    return target / target.sum()


def always_on_features(features: Features) -> Features:
    """``features`` with attribute 0 present at every token (value 0 where it was absent).

    Attribute ids stay ascending within a token, as :class:`Features` requires.
    """
    indptr = np.asarray(features.indptr)
    indices = np.asarray(features.indices)
    n = len(indptr) - 1
    starts = indptr[:-1]
    has_zero = np.zeros(n, dtype=bool)
    nonempty = indptr[1:] > starts
    has_zero[nonempty] = indices[starts[nonempty]] == 0
    add = ~has_zero
    new_indptr = indptr + np.concatenate([[0], np.cumsum(add)])
    total = int(new_indptr[-1])
    new_indices = np.zeros(total, dtype=indices.dtype)
    new_values = np.zeros(total)
    # the old entries move right by the number of insertions up to their token
    shift = np.repeat(np.cumsum(add), np.diff(indptr))
    old_positions = np.arange(len(indices)) + shift
    new_indices[old_positions] = indices
    new_values[old_positions] = np.broadcast_to(features.values, indices.shape)
    # inserted entries: attribute 0, value 0, first in their token
    return Features(new_indptr, new_indices, new_values, np.asarray(features.offsets),
                    features.n_attributes)


def always_on_corpus(features: Features, n_labels: int) -> Any:
    """The compiled corpus of :func:`always_on_features` (``features``) for ``n_labels``
    labels: what the label-proportion term reads."""
    return compile_corpus(always_on_features(features), n_labels=n_labels)


@register("label_proportions")
class LabelProportions(GE):
    """The ``ge`` term with one constraint that fires at every token (see the module)."""


def proportion_term(unlabeled_features: Features, layout: Any, n_threads: int, weight: float,
                    targets: NDArray[np.float64], penalty: str = "kl",
                    corpus: Any = None) -> LabelProportions:
    """The label-proportion term over the unlabeled sentences' feature rows.

    Parameters
    ----------
    unlabeled_features : sscrf.features.Features
    layout : sscrf._core.Layout
        A layout in which attribute 0 scores every label (``dense``).
    n_threads : int
    weight : float
        λ.
    targets : array (1, S)
        :func:`target_proportions`.
    penalty : {"kl", "l2"}
    corpus : sscrf._core.Corpus or None
        :func:`always_on_corpus` of ``unlabeled_features``, when the caller has it.
    """
    if unlabeled_features.n_attributes == 0 or unlabeled_features.n_tokens == 0:
        raise SscrfError("label proportions need unlabeled tokens with features")
    if corpus is None:
        corpus = always_on_corpus(unlabeled_features, layout.n_labels)
    constraint_of_attribute = np.full(unlabeled_features.n_attributes, -1, dtype=np.int64)
    constraint_of_attribute[0] = 0
    return LabelProportions(corpus, layout, n_threads, weight,
                            constraint_of_attribute=constraint_of_attribute, targets=targets,
                            penalty=penalty)
