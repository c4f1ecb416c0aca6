"""Partial, ambiguous and alternative annotations: the types and their masks.

An annotation of a sentence is either

- a sequence with one entry per token: a label (``str``), a set of
  acceptable labels (``set``, ``frozenset`` or ``tuple`` of ``str``: an
  ambiguous annotation such as ``{"VBG", "JJ"}``), or ``None`` (not
  annotated: any label); or
- an :class:`Alternatives`: a list of whole acceptable labelings, for when
  the acceptable labelings are not a product of per-token sets (two
  acceptable boundaries of one mention: ``B I`` or ``O B``, where the
  per-token sets ``{B,O} {I,B}`` would also admit ``B B`` and ``O I``).

Per-token sets become a node mask of allowed labels; alternatives become a
node mask plus an edge mask of allowed transitions. Node and edge masks
represent a set of alternatives exactly only when the set is closed under
exchanging suffixes at a shared label (``B I I O`` and ``O B I I`` share
``I`` at token 2, so masks would also admit ``B I I I`` and ``O B I O``);
:func:`sentence_masks` detects this by counting the labelings the masks
allow.

A leaf module: it imports only numpy and :mod:`sscrf.errors`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional, Union

import numpy as np

from .errors import SscrfError, SscrfTypeError

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    Mask = NDArray[np.bool_]

__all__ = [
    "Alternatives",
    "SentenceMasks",
    "check_annotation",
    "count_labelings",
    "corpus_masks",
    "is_complete",
    "label_id",
    "label_members",
    "label_view",
    "sentence_masks",
]

_SET_TYPES = (set, frozenset, tuple)


# -- the annotation types -----------------------------------------------------------


class Alternatives(Sequence[Union[str, frozenset[str]]]):
    """The acceptable labelings of one sentence, as a list of whole label sequences.

    Used as one sentence's entry of ``y`` in :meth:`sscrf.CRF.fit` (and of
    ``allowed=`` in prediction): training maximises ``log Σ_k p(y_k | x)``
    over exactly these labelings.

    As a sequence it has one item per *token*, so code that reads ``y``
    token by token sees the per-token label sets (an over-approximation):
    ``alt[t]`` is the label at token ``t`` when every alternative agrees,
    else the ``frozenset`` of the labels the alternatives give it.

    Parameters
    ----------
    labelings : iterable of sequences of str
        At least one, all of the same length. Duplicates are dropped, order
        is kept.

    Attributes
    ----------
    labelings : tuple of tuple of str
    """

    __slots__ = ("labelings",)

    def __init__(self, labelings: Iterable[Sequence[str]]) -> None:
        if isinstance(labelings, (str, bytes)) or not hasattr(labelings, "__iter__"):
            raise SscrfTypeError("Alternatives takes a list of label sequences")
        out: list[tuple[str, ...]] = []
        seen: set[tuple[str, ...]] = set()
        for k, seq in enumerate(labelings):
            if isinstance(seq, (str, bytes)) or not hasattr(seq, "__iter__"):
                raise SscrfTypeError(f"alternative {k} must be a sequence of labels, "
                                     f"not {type(seq).__name__}")
            seq = tuple(seq)
            for t, label in enumerate(seq):
                if not isinstance(label, str):
                    raise SscrfTypeError(f"alternative {k}, token {t}: a label must be a "
                                         f"string, not {type(label).__name__}")
            if out and len(seq) != len(out[0]):
                raise SscrfError(f"alternative {k} has {len(seq)} labels, alternative 0 has "
                                 f"{len(out[0])}")
            if seq not in seen:
                seen.add(seq)
                out.append(seq)
        if not out:
            raise SscrfError("Alternatives needs at least one labeling")
        self.labelings = tuple(out)

    def __len__(self) -> int:
        return len(self.labelings[0])

    def __getitem__(self, t: Any) -> Any:
        if isinstance(t, slice):
            return [self[i] for i in range(*t.indices(len(self)))]
        labels = {seq[t] for seq in self.labelings}
        if len(labels) == 1:
            return next(iter(labels))
        return frozenset(labels)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Alternatives) and set(self.labelings) == set(other.labelings)

    def __hash__(self) -> int:
        return hash(frozenset(self.labelings))

    def __repr__(self) -> str:
        return f"Alternatives({[list(seq) for seq in self.labelings]!r})"


def label_members(label: Any, where: str) -> Optional[tuple[str, ...]]:
    """A token's annotation as a tuple of label strings, or None for 'any label'.

    ``where`` prefixes the error message (e.g. ``"sentence 3, token 1"``).
    """
    if label is None:
        return None
    if isinstance(label, str):
        return (label,)
    if isinstance(label, _SET_TYPES):
        members = tuple(label)
        if not members:
            raise SscrfError(f"{where}: empty label set (use None for 'any label')")
        for m in members:
            if not isinstance(m, str):
                raise SscrfTypeError(f"{where}: label set members must be strings, found {m!r}")
        return members
    raise SscrfTypeError(f"{where}: a label must be a string, a set of strings or None, "
                         f"not {type(label).__name__}")


def check_annotation(seq: Any, n_tokens: int, s: int, name: str = "y") -> None:
    """Validate sentence ``s``'s annotation (see the module docstring); raises SscrfError."""
    if isinstance(seq, Alternatives):
        if len(seq) != n_tokens:
            raise SscrfError(f"sentence {s}: {n_tokens} tokens but alternatives of {len(seq)} "
                             "labels")
        return
    if isinstance(seq, (str, bytes)) or not hasattr(seq, "__len__"):
        raise SscrfTypeError(f"{name}[{s}] must be a list of labels, not {type(seq).__name__}")
    if len(seq) != n_tokens:
        raise SscrfError(f"sentence {s}: {n_tokens} tokens but {len(seq)} labels")
    for t, label in enumerate(seq):
        label_members(label, f"sentence {s}, token {t}")


def is_complete(seq: Any) -> bool:
    """Whether an annotation gives exactly one label per token (plain strings)."""
    if isinstance(seq, Alternatives):
        return False
    # the label types, collected in C: a Python generator over every token
    # of a large corpus would cost a visible part of fit()
    types = set(map(type, seq))
    return types <= {str} or all(issubclass(t, str) for t in types)


def label_view(y: Sequence[Any], labels: Optional[Iterable[str]] = None) -> Sequence[Any]:
    """``y`` with every sentence flattened to the label strings it names.

    Complete corpora are returned unchanged. With ``labels``, a label
    outside it (alone, in a set or in an alternative) raises naming the
    sentence and token. Used to build the label inventory: every label seen
    alone or inside a set.
    """
    if all(is_complete(seq) for seq in y):
        return y
    known = None if labels is None else set(labels)
    out = []
    for s, seq in enumerate(y):
        if isinstance(seq, Alternatives):
            flat = []
            for k, alt in enumerate(seq.labelings):
                for t, label in enumerate(alt):
                    if known is not None and label not in known:
                        raise SscrfError(f"sentence {s}, alternative {k}, token {t}: label "
                                         f"{label!r} is not in labels=")
                    flat.append(label)
            out.append(flat)
            continue
        flat = []
        for t, label in enumerate(seq):
            members = label_members(label, f"sentence {s}, token {t}")
            if members is None:
                continue
            for m in members:
                if known is not None and m not in known:
                    what = "label" if isinstance(label, str) else f"label set {sorted(members)}:"
                    raise SscrfError(f"sentence {s}, token {t}: {what} {m!r} is not in labels=")
            flat.extend(members)
        out.append(flat)
    return out


# -- masks ---------------------------------------------------------------------------


def label_id(label: str, label_index: Mapping[str, int], where: str) -> int:
    """The id of ``label`` in ``label_index``; SscrfError naming ``where`` if it has none."""
    i = label_index.get(label)
    if i is None:
        raise SscrfError(f"{where}: label {label!r} is not one of the model's labels")
    return i


def count_labelings(node: ArrayLike, edge: Optional[Mask] = None, cap: Optional[int] = None) -> int:
    """Number of labelings allowed by a node mask (n, S) and an edge mask (n, S, S).

    ``edge[t, a, b]`` allows ``y[t-1] = a → y[t] = b``; row 0 is unused.
    With ``cap``, counts are clipped at ``cap`` along the way (the result is
    then ``min(count, cap)``), which keeps them in int64.
    """
    node = np.asarray(node, dtype=bool)
    n = node.shape[0]
    if n == 0:
        return 1
    counts = node[0].astype(np.int64)
    for t in range(1, n):
        step = np.broadcast_to(node[t], (node.shape[1], node.shape[1]))
        if edge is not None:
            step = step & edge[t]
        counts = counts @ step.astype(np.int64)
        if cap is not None:
            np.minimum(counts, cap, out=counts)
    total = int(counts.sum())
    return total if cap is None else min(total, cap)


class SentenceMasks:
    """What :func:`sentence_masks` finds for one sentence.

    Attributes
    ----------
    node : ndarray (n, S) bool
        Allowed labels per token.
    edge : ndarray (n, S, S) bool or None
        Allowed transitions into each token (row 0 unused, all True), for
        alternatives only.
    alternatives : ndarray (K, n) int32 or None
        Label ids of the alternatives, for alternatives only.
    exact : bool
        Whether the masks allow exactly the annotation's labelings (always
        True for per-token annotations).
    """

    __slots__ = ("node", "edge", "alternatives", "exact")

    def __init__(self, node: Mask, edge: Optional[Mask], alternatives: Optional[NDArray[np.int32]],
                 exact: bool) -> None:
        self.node, self.edge, self.alternatives, self.exact = node, edge, alternatives, exact

    @property
    def complete(self) -> bool:
        """One label per token: the masks are one-hot."""
        return bool(np.all(self.node.sum(axis=1) == 1))

    @property
    def unconstrained(self) -> bool:
        """Every label allowed everywhere (the annotation says nothing)."""
        return self.edge is None and bool(self.node.all())

    def singleton_ids(self) -> NDArray[np.int32]:
        """Per token, the label id where exactly one label is allowed, else −1."""
        ids = np.argmax(self.node, axis=1).astype(np.int32)
        ids[self.node.sum(axis=1) != 1] = -1
        return ids


def sentence_masks(seq: Any, label_index: Mapping[str, int],
                   where: str = "sentence") -> SentenceMasks:
    """Node (and for :class:`Alternatives`, edge) masks of one sentence's annotation.

    Parameters
    ----------
    seq : sequence of (str, set of str, None), or Alternatives
    label_index : dict label → id
    where : str
        Prefix of error messages (e.g. ``"sentence 3"``).

    Returns
    -------
    SentenceMasks
    """
    S = len(label_index)
    n = len(seq)
    if isinstance(seq, Alternatives):
        ids = np.array([[label_id(label, label_index, f"{where}, alternative {k}, token {t}")
                         for t, label in enumerate(alt)] for k, alt in enumerate(seq.labelings)],
                       dtype=np.int32).reshape(len(seq.labelings), n)
        node = np.zeros((n, S), dtype=bool)
        edge = np.zeros((n, S, S), dtype=bool)
        if n:
            edge[0] = True
        for t in range(n):
            node[t, ids[:, t]] = True
            if t:
                edge[t, ids[:, t - 1], ids[:, t]] = True
        K = len(ids)
        exact = count_labelings(node, edge, cap=K + 1) == K
        return SentenceMasks(node, edge, ids, exact)
    node = np.zeros((n, S), dtype=bool)
    for t, label in enumerate(seq):
        members = label_members(label, f"{where}, token {t}")
        if members is None:
            node[t] = True
        else:
            for m in members:
                node[t, label_id(m, label_index, f"{where}, token {t}")] = True
    return SentenceMasks(node, None, None, True)


def corpus_masks(annotations: Sequence[Any], lengths: Sequence[int], label_index: Mapping[str, int],
                 name: str = "allowed") -> tuple[Mask, Optional[Mask], dict[int, SentenceMasks]]:
    """Corpus node mask (N, S), edge mask (N, S, S) or None, and the inexact sentences.

    ``annotations[s]`` may be None (no constraint on sentence ``s``). The
    edge mask is built only when some sentence is an :class:`Alternatives`.

    Returns
    -------
    node, edge, inexact : ndarray, ndarray or None, dict s → SentenceMasks
        ``inexact`` holds the sentences whose alternatives the masks
        over-approximate.
    """
    S = len(label_index)
    N = int(sum(lengths))
    node = np.ones((N, S), dtype=bool)
    any_alt = any(isinstance(a, Alternatives) for a in annotations)
    edge = np.ones((N, S, S), dtype=bool) if any_alt else None
    inexact: dict[int, SentenceMasks] = {}
    k = 0
    for s, (ann, n) in enumerate(zip(annotations, lengths)):
        if ann is not None:
            check_annotation(ann, n, s, name)
            m = sentence_masks(ann, label_index, f"{name}[{s}]")
            node[k:k + n] = m.node
            if m.edge is not None:
                edge[k:k + n] = m.edge  # type: ignore[index]  # any_alt: edge is an array
            if not m.exact:
                inexact[s] = m
        k += n
    return node, edge, inexact
