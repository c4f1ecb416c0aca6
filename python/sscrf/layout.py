"""The parameter vector ``θ = [W entries | T (S×S) | start (S) | end (S)]`` and its views.

``W`` is row-sparse: attribute ``a`` scores the labels
``label_ids[row_ptr[a]:row_ptr[a+1]]`` (CSR over attributes, labels in
increasing order within a row). The ``observed`` feature set keeps the
(attribute, label) pairs seen in labeled data (CRFsuite's default), the
``dense`` one every pair in label order. :class:`ParameterLayout` is the one
object that knows how θ splits; the C++ kernels read the same layout
through :attr:`ParameterLayout.core`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

import numpy as np

from . import _core

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

__all__ = ["FEATURE_SETS", "SLICE_TOKENS", "ParameterLayout"]

#: The feature sets a layout can be built for (``auto`` is resolved by the estimator).
FEATURE_SETS = ("observed", "dense")

#: Tokens per slice when collecting observed pairs: bounds the temporaries.
SLICE_TOKENS = 1 << 16


class ParameterLayout:
    """Which labels each attribute scores, and how θ splits into W, T, start and end.

    Parameters
    ----------
    row_ptr : ndarray (A + 1,) int64
        Row offsets of the attributes' entries in ``label_ids`` (and in θ).
    label_ids : ndarray (n_pairs,) int32
        The label each entry of ``W`` scores.
    n_labels : int
        S.

    Attributes
    ----------
    row_ptr, label_ids, n_labels
    n_attributes : int
        A.
    n_pairs : int
        Entries of ``W``.
    size : int
        Length of θ: ``n_pairs + S² + 2S``.
    """

    __slots__ = ("row_ptr", "label_ids", "n_labels", "_core_layout")

    def __init__(self, row_ptr: NDArray[np.int64], label_ids: NDArray[np.int32],
                 n_labels: int) -> None:
        self.row_ptr = row_ptr
        self.label_ids = label_ids
        self.n_labels = int(n_labels)
        self._core_layout: Optional[_core.Layout] = None

    @classmethod
    def every_pair(cls, n_attributes: int, n_labels: int) -> ParameterLayout:
        """Every (attribute, label) pair, in label order (the ``dense`` feature set)."""
        A, S = int(n_attributes), int(n_labels)
        return cls(np.arange(A + 1, dtype=np.int64) * S, np.tile(np.arange(S, dtype=np.int32), A),
                   S)

    @classmethod
    def for_feature_set(cls, features: Any, token_labels: NDArray[np.integer[Any]], n_labels: int,
                        feature_set: str, slice_tokens: int = SLICE_TOKENS) -> ParameterLayout:
        """The layout of ``feature_set`` over ``features`` (a :class:`sscrf.features.Features`).

        ``observed``: the (attribute, label) pairs that co-occur in labeled
        tokens (``token_labels[t] ≥ 0``); ``dense``: every pair.

        The pairs are collected over slices of tokens, as a presence table of
        the A·S pairs when that is small next to the corpus, else as sorted
        keys merged at the end, so that temporaries stay bounded by a slice
        of ``slice_tokens`` tokens.
        """
        A, S = features.n_attributes, int(n_labels)
        if feature_set == "dense":
            return cls.every_pair(A, S)
        indptr, indices = features.indptr, features.indices
        n = features.n_tokens
        present = np.zeros(A * S, dtype=bool) if A * S <= max(4 * len(indices), 1 << 24) else None
        parts = []
        for t0 in range(0, n, slice_tokens):
            t1 = min(t0 + slice_tokens, n)
            labels = np.repeat(token_labels[t0:t1], np.diff(indptr[t0:t1 + 1]))
            keep = labels >= 0
            keys = indices[indptr[t0]:indptr[t1]][keep].astype(np.int64)
            keys *= S
            keys += labels[keep]
            if present is not None:
                present[keys] = True
            else:
                parts.append(np.unique(keys))
            del labels, keep, keys
        if present is not None:
            keys = np.flatnonzero(present)
            del present
        else:
            keys = np.unique(np.concatenate(parts)) if parts else np.zeros(0, np.int64)
            del parts
        counts = np.bincount(keys // S, minlength=A)
        row_ptr = np.zeros(A + 1, dtype=np.int64)
        np.cumsum(counts, out=row_ptr[1:])
        return cls(row_ptr, (keys % S).astype(np.int32), S)

    # -- sizes -----------------------------------------------------------------------

    @property
    def n_attributes(self) -> int:
        return len(self.row_ptr) - 1

    @property
    def n_pairs(self) -> int:
        return len(self.label_ids)

    @property
    def size(self) -> int:
        S = self.n_labels
        return self.n_pairs + S * S + 2 * S

    @property
    def is_every_pair(self) -> bool:
        """Whether the layout holds every (attribute, label) pair in label order (``dense``)."""
        A, S = self.n_attributes, self.n_labels
        return (self.n_pairs == A * S and np.array_equal(self.row_ptr, np.arange(A + 1) * S)
                and bool((np.asarray(self.label_ids).reshape(A, S) == np.arange(S)).all()))

    @property
    def core(self) -> _core.Layout:
        """The compiled ``_core.Layout`` the kernels read (built once; it validates the arrays)."""
        if self._core_layout is None:
            self._core_layout = _core.Layout(self.row_ptr, self.label_ids, self.n_labels)
        return self._core_layout

    # -- views of θ ------------------------------------------------------------------

    def blocks(self) -> dict[str, slice]:
        """The slices of θ: ``{"W": ..., "T": ..., "start": ..., "end": ...}``, in that order."""
        nw, S = self.n_pairs, self.n_labels
        return {"W": slice(0, nw), "T": slice(nw, nw + S * S),
                "start": slice(nw + S * S, nw + S * S + S), "end": slice(nw + S * S + S, self.size)}

    def split(self,
              theta: NDArray[Any]) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any], NDArray[Any]]:
        """Views ``(state_weights (n_pairs,), transitions (S, S) [previous, next], start (S,),
        end (S,))`` of θ; writing to them writes θ."""
        w, T, start, end = (theta[b] for b in self.blocks().values())
        S = self.n_labels
        return w, T.reshape(S, S), start, end

    def attribute_of_pairs(self) -> NDArray[np.int64]:
        """The attribute of each entry of ``W`` (n_pairs,) int64."""
        return np.repeat(np.arange(self.n_attributes, dtype=np.int64), np.diff(self.row_ptr))

    def pair_keys(self) -> NDArray[np.int64]:
        """``attribute · S + label`` of each entry of ``W``, increasing (n_pairs,) int64."""
        return self.attribute_of_pairs() * self.n_labels + self.label_ids

    def weight_matrix(self, theta: NDArray[Any]) -> NDArray[np.float64]:
        """``W`` as a dense (A, S) array, zero where the layout has no pair."""
        W = np.zeros((self.n_attributes, self.n_labels))
        W[self.attribute_of_pairs(), self.label_ids] = theta[:self.n_pairs]
        return W

    # -- warm start ------------------------------------------------------------------

    def warm_start(self, theta: NDArray[Any], old: ParameterLayout, old_theta: NDArray[Any],
                   old_to_new_attribute: NDArray[Any], old_to_new_label: NDArray[Any]) -> None:
        """Copy into θ (this layout's) the weights of ``old_theta`` (``old``'s layout) whose
        attribute and labels this layout has; the others keep their values.

        ``old_to_new_attribute`` (old A,) and ``old_to_new_label`` (old S,) map
        old ids to new ones, −1 where there is none.
        """
        S, S_old = self.n_labels, old.n_labels
        old_w, old_T, old_start, old_end = old.split(old_theta)
        w, T, start, end = self.split(theta)
        new_attr = old_to_new_attribute[old.attribute_of_pairs()]
        new_label = old_to_new_label[old.label_ids]
        ok = (new_attr >= 0) & (new_label >= 0)
        keys = self.pair_keys()
        wanted = new_attr[ok] * S + new_label[ok]
        pos = np.searchsorted(keys, wanted)
        pos = np.minimum(pos, max(len(keys) - 1, 0))
        hit = (len(keys) > 0) & (keys[pos] == wanted) if len(keys) else np.zeros(0, bool)
        w[pos[hit]] = old_w[ok][hit]
        # transitions, start and end of the shared labels
        both = np.flatnonzero(old_to_new_label >= 0)
        mapped = old_to_new_label[both]
        T[np.ix_(mapped, mapped)] = old_T.reshape(S_old, S_old)[np.ix_(both, both)]
        start[mapped] = old_start[both]
        end[mapped] = old_end[both]

    def __getstate__(self) -> tuple[Any, Any, int]:
        return (self.row_ptr, self.label_ids, self.n_labels)

    def __setstate__(self, state: tuple[Any, Any, int]) -> None:
        self.row_ptr, self.label_ids, self.n_labels = state
        self._core_layout = None

    def __repr__(self) -> str:
        return (f"ParameterLayout(n_attributes={self.n_attributes}, n_labels={self.n_labels}, "
                f"n_pairs={self.n_pairs})")
