"""What a fitted CRF holds, under sklearn-crfsuite's names.

:class:`FittedModelView` is the read-only face of a fitted
:class:`sscrf.CRF`: its vocabulary, its weights by (attribute, label) and
by transition, sizes and the training log, computed from ``coef_`` and
``layout_`` on each access (nothing is cached, so a refit is seen at once).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["FittedModelView", "TrainingLog"]


class FittedModelView:
    """Introspection of a fitted model; mixed into :class:`sscrf.CRF`, which
    provides ``extractor_``, ``classes_``, ``coef_``, ``label_ids_``,
    ``row_ptr_``, ``training_``, ``layout_`` and ``_check_fitted``."""

    if TYPE_CHECKING:
        extractor_: Any
        classes_: Any
        coef_: NDArray[Any]
        label_ids_: Any
        row_ptr_: Any
        training_: dict[str, Any]
        layout_: Any

        def _check_fitted(self) -> None: ...

    @property
    def attributes_(self) -> list[str]:
        """The attribute names of the model's vocabulary, in id order.

        A feature dict's string value ``{"word": "the"}`` is the attribute
        ``word:the``, as python-crfsuite names it (models saved before that
        naming keep ``word=the``); a number or True is the attribute named
        by its key.
        """
        self._check_fitted()
        return list(self.extractor_.attributes_)

    @property
    def state_features_(self) -> dict[tuple[str, Any], float]:
        """dict (attribute, label) → weight, non-zero weights only."""
        self._check_fitted()
        attrs = self.layout_.attribute_of_pairs()
        w = self.layout_.split(self.coef_)[0]
        names, classes = self.extractor_.attributes_, self.classes_
        return {(names[a], classes[l]): float(v)
                for a, l, v in zip(attrs.tolist(), self.label_ids_.tolist(), w.tolist()) if v != 0.0}

    @property
    def transition_features_(self) -> dict[tuple[Any, Any], float]:
        """dict (previous label, next label) → weight."""
        self._check_fitted()
        S = len(self.classes_)
        T = self.transitions_
        return {(self.classes_[a], self.classes_[b]): float(T[a, b])
                for a in range(S) for b in range(S)}

    @property
    def transitions_(self) -> NDArray[Any]:
        """(S, S) transition weights, [previous, next]."""
        self._check_fitted()
        return self.layout_.split(self.coef_)[1]

    @property
    def start_weights_(self) -> NDArray[Any]:
        """(S,) weights of each label at the first token."""
        self._check_fitted()
        return self.layout_.split(self.coef_)[2]

    @property
    def end_weights_(self) -> NDArray[Any]:
        """(S,) weights of each label at the last token."""
        self._check_fitted()
        return self.layout_.split(self.coef_)[3]

    @property
    def n_active_features_(self) -> int:
        """Number of non-zero state weights (what L1 prunes)."""
        self._check_fitted()
        return int(np.count_nonzero(self.layout_.split(self.coef_)[0]))

    @property
    def num_attributes_(self) -> int:
        """Number of attributes in the vocabulary (sklearn-crfsuite's name)."""
        self._check_fitted()
        return len(self.extractor_.attributes_)

    @property
    def size_(self) -> int:
        """Bytes of the trained parameters and of the arrays saying which
        labels each attribute scores (sklearn-crfsuite's name; its value is
        CRFsuite's file size, which counts other things)."""
        self._check_fitted()
        return int(self.coef_.nbytes + np.asarray(self.row_ptr_).nbytes
                   + np.asarray(self.label_ids_).nbytes)

    @property
    def training_log_(self) -> Optional[TrainingLog]:
        """sklearn-crfsuite's training log: ``iterations``, one dict
        ``{"num": k, "loss": f}`` per iteration (from ``training_``'s loss
        history), and ``last_iteration``; None for a loaded model, whose
        file keeps no history."""
        self._check_fitted()
        history = self.training_.get("history")
        if history is None:
            return None
        return TrainingLog([{"num": k + 1, "loss": float(loss)} for k, loss in enumerate(history)])

    @property
    def n_parameters_(self) -> int:
        """Length of ``coef_``."""
        self._check_fitted()
        return len(self.coef_)


class TrainingLog:
    """What ``CRF.training_log_`` returns: ``iterations`` (a list of dicts) and
    ``last_iteration`` (the last of them, or an empty dict)."""

    def __init__(self, iterations: list[dict[str, Any]]) -> None:
        self.iterations = iterations

    @property
    def last_iteration(self) -> dict[str, Any]:
        return self.iterations[-1] if self.iterations else {}

    def __repr__(self) -> str:
        return f"TrainingLog({len(self.iterations)} iterations)"
