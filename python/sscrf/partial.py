"""Partial, ambiguous and alternative annotations (Tsuboi et al. 2008).

An annotation of a sentence gives, per token, a label, a set of acceptable
labels or ``None``, or, as an :class:`Alternatives`, a list of whole
acceptable labelings (the forms and their masks: :mod:`sscrf.annotations`).
Training maximises the marginalised likelihood ``log P(Y_L | x) = log Z_L −
log Z`` (Tsuboi et al. eq. 3), where ``Z_L`` sums over the labelings the
annotation allows. Sentences whose alternatives the node and edge masks
cannot represent exactly are trained through the ``alternatives`` term,
which sums over the listed labelings explicitly. Either way the objective is
exactly ``−log Σ_{y ∈ alternatives} p(y | x)``.

This module holds the baselines of Tsuboi et al. §5 (``argmax``, ``first``,
``random``, ``discard``), the annotation cost (labeled tokens) and
:func:`ambiguous_words` for the APA metric (:func:`sscrf.metrics.apa`). It
re-exports, under their old names here, the annotation types and masks
(:mod:`sscrf.annotations`), the ``alternatives`` term
(:mod:`sscrf.objectives`), the training terms of annotated sentences
(:func:`sscrf.training.labeled_terms`) and corpus compiling
(:mod:`sscrf.corpus`).
"""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from typing import Any, Optional, Union

import numpy as np

from .annotations import (Alternatives, SentenceMasks, check_annotation,  # noqa: F401
                          corpus_masks, count_labelings, is_complete, label_members,
                          label_view, sentence_masks)
from .corpus import compile_corpus, subset_features  # noqa: F401
from .errors import SscrfError
from .inputs import check_labeled
from .objectives import AlternativesLikelihood  # noqa: F401
from .training import labeled_terms  # noqa: F401

__all__ = [
    "Alternatives",
    "is_complete",
    "label_view",
    "sentence_masks",
    "count_labelings",
    "corpus_masks",
    "labeled_terms",
    "AlternativesLikelihood",
    "fill_argmax",
    "fill_first",
    "fill_random",
    "discard",
    "apply_baseline",
    "BASELINES",
    "annotation_cost",
    "ambiguous_words",
]

#: One token's annotation: a label, None (unknown) or a set of labels.
TokenLabel = Optional[Union[str, AbstractSet[str], "tuple[str, ...]"]]
#: One sentence's annotation: a label per token, or alternative labelings.
Annotation = Union[Sequence[TokenLabel], Alternatives]

# -- baselines (Tsuboi et al. §5) -------------------------------------------------------


def _check_corpus(X: Sequence[Any], y: Sequence[Annotation]) -> Any:
    return check_labeled(X, y, allow_empty_corpus=True, partial=True)


def fill_argmax(model: Any, X: Sequence[Any], y: Sequence[Annotation]) -> list[list[str]]:
    """``argmax``: replace each incomplete annotation by ``model``'s best consistent labeling.

    The constrained Viterbi path (``model.predict(X, allowed=y)``, exact
    for alternatives too); complete sentences are kept as they are.

    Returns
    -------
    list of list of str
    """
    X, y = _check_corpus(X, y)
    todo = [s for s, seq in enumerate(y) if not is_complete(seq)]
    out: list[Any] = [list(seq) if is_complete(seq) else None for seq in y]
    if todo:
        filled = model.predict([X[s] for s in todo], allowed=[y[s] for s in todo])
        for s, labels in zip(todo, filled):
            out[s] = labels
    return out


def _first_member(label: Union[AbstractSet[str], tuple[str, ...]]) -> str:
    if isinstance(label, tuple):
        return label[0]
    return sorted(label)[0]


def fill_first(y: Sequence[Annotation]) -> list[list[Optional[str]]]:
    """``first``: the first label of each ambiguous set, the first of alternatives.

    "First" is the order of a ``tuple``; a ``set``/``frozenset`` (what
    :func:`sscrf.io.read_conll` gives) has none, so its alphabetically first
    member is taken. ``None`` (not annotated) stays ``None``.
    """
    out: list[list[Optional[str]]] = []
    for s, seq in enumerate(y):
        if isinstance(seq, Alternatives):
            out.append(list(seq.labelings[0]))
            continue
        row: list[Optional[str]] = []
        label: Any
        for t, label in enumerate(seq):
            members = label_members(label, f"sentence {s}, token {t}")
            row.append(None if members is None else
                       (label if isinstance(label, str) else _first_member(label)))
        out.append(row)
    return out


def fill_random(y: Sequence[Annotation], random_state: Any = None) -> list[list[Optional[str]]]:
    """``random``: a uniformly random label of each ambiguous set (random alternative).

    Members are drawn from the sorted set, so the result depends only on
    ``random_state``. ``None`` (not annotated) stays ``None``.
    """
    rng = np.random.default_rng(random_state)
    out: list[list[Optional[str]]] = []
    for s, seq in enumerate(y):
        if isinstance(seq, Alternatives):
            out.append(list(seq.labelings[int(rng.integers(len(seq.labelings)))]))
            continue
        row: list[Optional[str]] = []
        label: Any
        for t, label in enumerate(seq):
            members: Any = label_members(label, f"sentence {s}, token {t}")
            if members is None or isinstance(label, str):
                row.append(label)
            else:
                members = sorted(set(members))
                row.append(members[int(rng.integers(len(members)))])
        out.append(row)
    return out


def discard(X: Sequence[Any],
            y: Sequence[Annotation]) -> tuple[list[Any], list[list[Any]], list[int]]:
    """``discard``: keep only the completely annotated sentences.

    Returns
    -------
    X_kept, y_kept, kept : list, list, list of int
    """
    kept = [s for s, seq in enumerate(y) if is_complete(seq)]
    return [X[s] for s in kept], [list(y[s]) for s in kept], kept


def apply_baseline(method: str, X: Sequence[Any], y: Sequence[Annotation], model: Any = None,
                   random_state: Any = None) -> tuple[list[Any], list[Any]]:
    """Turn incomplete annotations into training data by one of the baselines.

    Parameters
    ----------
    method : {"argmax", "first", "random", "discard"}
        ``argmax`` needs ``model``. ``first`` and ``random`` resolve sets and
        alternatives and then drop the sentences that still hold ``None``.
    X, y : training sentences and their annotations
    model : CRF or None
    random_state : int, Generator or None

    Returns
    -------
    X_out, y_out : lists of complete training data
    """
    if method not in BASELINES:
        raise SscrfError(f"unknown baseline {method!r}; use one of {', '.join(BASELINES)}")
    X = list(X)
    y = list(y)
    if method == "argmax":
        if model is None:
            raise SscrfError("the argmax baseline needs a model")
        return X, fill_argmax(model, X, y)
    if method == "first":
        y = fill_first(y)
    elif method == "random":
        y = fill_random(y, random_state)
    X_out, y_out, _ = discard(X, y)
    return X_out, y_out


BASELINES = ("argmax", "first", "random", "discard")


# -- cost and evaluation helpers ---------------------------------------------------------


def annotation_cost(y: Sequence[Annotation]) -> int:
    """Number of annotated tokens: tokens whose annotation is not ``None``.

    A set counts as one annotated token; an :class:`Alternatives` sentence
    counts all its tokens.
    """
    total = 0
    for seq in y:
        if isinstance(seq, Alternatives):
            total += len(seq)
        else:
            total += sum(1 for label in seq if label is not None)
    return total


def ambiguous_words(words: Sequence[Sequence[str]], y: Sequence[Annotation]) -> set[str]:
    """The words with an ambiguous annotation somewhere: the set A of APA.

    Parameters
    ----------
    words : list of list of str
        One word per token (e.g. the first token column).
    y : annotations
        A token is ambiguous when its annotation is a set of two or more
        labels (or alternatives disagree on it).

    Returns
    -------
    set of str
    """
    out = set()
    for s, (ws, seq) in enumerate(zip(words, y)):
        for t, (word, label) in enumerate(zip(ws, seq)):
            if label is None or isinstance(label, str):
                continue
            members = label_members(label, f"sentence {s}, token {t}") or ()  # never None here
            if len(set(members)) > 1:
                out.add(word)
    return out
