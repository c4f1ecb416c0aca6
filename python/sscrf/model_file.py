"""The model-file format of a CRF: what its header and arrays hold, and their checks.

The container (magic, version, JSON header, raw arrays, checksum, atomic
writes) is :mod:`sscrf.serialization`. A model file's header ``meta`` holds
``kind`` (``"sscrf.CRF"``), ``labels``, ``features`` (the vocabulary's
state: :meth:`sscrf.features.FeatureExtractor.to_state`, whose
``value_separator`` is the naming of string-valued dict features, ``":"``;
a file written before that field has none and loads with ``"="``),
``params`` (the hyperparameters), ``feature_set`` and ``training``;
its arrays the layout (``row_ptr``, ``label_ids``, or ``meta["layout"] =
"every pair"`` for a dense layout, rebuilt on load) and the weights
(``coef``, or ``coef_index`` / ``coef_values`` with ``meta["n_weights"]`` when
at most a third of them are non-zero).

This module knows the estimator only by its public attributes (``classes_``,
``extractor_``, ...), so the estimator's module may use it.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional, Sequence

import numpy as np

from . import _core, serialization
from .errors import SscrfError
from .features import FeatureExtractor
from .inputs import check_label_list, is_integer
from .layout import ParameterLayout
from .representations import REPRESENTATIONS_KIND
from .resources import NotEnoughMemory, check_memory

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

__all__ = ["LOAD_BYTES_PER_WEIGHT", "MODEL_KIND", "check_representations_record", "read_model",
           "write_model"]

MODEL_KIND = "sscrf.CRF"

#: Bytes a loaded model holds per weight, at most: the weight (8), its
#: label id (4) and the core layout's copy of it (4), and the one-byte
#: temporaries of the checks (48 more per attribute: its row in the layout
#: and in the core's).
LOAD_BYTES_PER_WEIGHT = 17


def write_model(path: Any, *, params: Mapping[str, Any], classes: Sequence[str],
                extractor: FeatureExtractor, feature_set: str, training: Mapping[str, Any],
                layout: ParameterLayout, coef: ArrayLike,
                representations: Optional[Mapping[str, Any]] = None) -> None:
    """Write a fitted model's parts to ``path`` (atomically).

    ``params``: the hyperparameters (``get_params()``); ``layout``: a
    :class:`sscrf.layout.ParameterLayout`; ``coef``: θ (layout.size,);
    ``representations``: the record of the word representations whose
    columns the model reads (:func:`check_representations_record`), or None. Parts
    that do not fit together raise SscrfError naming what does not match,
    before anything is written: the file would not load.
    """
    _check_parts(path, classes, extractor, layout, coef)
    # templates are restored from the extractor, word vectors bound again after
    # loading; numpy scalars as Python ones
    meta: dict[str, Any] = {
        "kind": MODEL_KIND,
        "labels": list(classes),
        "features": extractor.to_state(),
        "params": {k: _plain(v) for k, v in params.items()
                   if k not in ("templates", "word_vectors")},
        "feature_set": feature_set,
        "training": _saved_training_record(training),
    }
    if representations is not None:
        meta["representations"] = check_representations_record(representations)
    arrays: dict[str, Any] = {}
    if layout.is_every_pair:
        meta["layout"] = "every pair"  # rebuilt on load: 4 bytes per weight saved
    else:
        arrays["row_ptr"] = np.asarray(layout.row_ptr).astype(np.int64)
        arrays["label_ids"] = np.asarray(layout.label_ids).astype(np.int32)
    coef = np.asarray(coef).astype(np.float64)
    # Weights that are not +0.0 bit for bit (an L1 model's few), by index
    # and value when they are under a third: 16 bytes each against 8 for
    # every weight.
    nonzero = np.flatnonzero(coef.view(np.int64))
    if 3 * len(nonzero) < len(coef):
        meta["n_weights"] = len(coef)
        arrays["coef_index"] = nonzero.astype(np.int64)
        arrays["coef_values"] = coef[nonzero]
    else:
        arrays["coef"] = coef
    serialization.save(path, meta, arrays)


def _check_parts(path: Any, classes: Sequence[str], extractor: FeatureExtractor,
                 layout: ParameterLayout, coef: ArrayLike) -> None:
    """SscrfError unless the labels, the vocabulary, the layout and θ fit together."""
    n_attributes = len(extractor.attributes_ or [])
    coef = np.asarray(coef)
    problems = []
    try:
        classes = check_label_list(classes, "classes_")
    except SscrfError as e:
        problems.append(str(e))
    if len(classes) != layout.n_labels:
        problems.append(f"classes_ has {len(classes)} labels, the layout {layout.n_labels}")
    if layout.n_attributes != n_attributes:
        problems.append(f"the vocabulary (extractor_) has {n_attributes} attributes, the "
                        f"layout {layout.n_attributes}")
    if coef.ndim != 1 or len(coef) != layout.size:
        problems.append(f"coef_ has shape {coef.shape}, the layout and labels give "
                        f"({layout.size},)")
    elif not np.all(np.isfinite(coef)):
        problems.append("coef_ has non-finite weights")
    if not problems:
        try:
            layout.core  # row_ptr and label ids in range
        except ValueError as e:
            problems.append(f"bad layout: {e}")
    if problems:
        raise SscrfError(f"{os.fsdecode(os.fspath(path))}: not saved, the model is not "
                         f"consistent: {'; '.join(problems)}")


def read_model(path: Any, new_model: Callable[[dict[str, Any], list[str]], Any]) -> Any:
    """Read and validate a model file; returns the fitted model.

    ``new_model(params, labels)`` makes the unfitted estimator from the
    saved hyperparameters (validating them, raising SscrfError); its fitted
    attributes are then set from the file. Every problem is an SscrfError
    naming the file.
    """
    meta, arrays = serialization.load(path)
    try:
        if meta.get("kind") == REPRESENTATIONS_KIND:
            raise SscrfError("not a CRF model but word representations (as 'sscrf "
                             "represent' writes them; 'sscrf train --representations' and "
                             "WordRepresentations.load read them)")
        if meta.get("kind") != MODEL_KIND:
            raise SscrfError("not a CRF model")
        labels = meta["labels"]
        if not isinstance(labels, list) or not labels:
            raise SscrfError("bad label list: labels must be a non-empty list")
        labels = check_label_list(labels)
        model = new_model(meta["params"], labels)
        model.extractor_ = FeatureExtractor.from_state(meta["features"])
        model.templates = (None if model.extractor_.templates is None
                           else list(model.extractor_.templates.lines))
        model.classes_ = labels
        model.feature_set_ = meta["feature_set"]
        model.training_ = dict(meta.get("training", {}))
        if "representations" in meta:
            model.representations_ = check_representations_record(meta["representations"])
        n_attr = len(model.extractor_.attributes_ or [])
        S = len(labels)
        model.row_ptr_, model.label_ids_, model.coef_ = _stored_weights(meta, arrays, n_attr, S)
        if model.row_ptr_.ndim != 1 or len(model.row_ptr_) != n_attr + 1:
            raise SscrfError("array sizes do not match the vocabulary and labels")
        if not np.isfinite(model.coef_).all():
            raise SscrfError("non-finite weights")
        # min and max, not |coef|: no temporary as large as the weights
        if len(model.coef_) and max(-model.coef_.min(), model.coef_.max()) > _core.MAX_SCORE:
            raise SscrfError(f"weights above {_core.MAX_SCORE:g}, which the core refuses")
        model.layout_.core  # validates row_ptr and label ids
    except NotEnoughMemory as e:
        raise NotEnoughMemory(f"{os.fspath(path)}: {e}") from None
    except SscrfError as e:
        raise SscrfError(f"{os.fspath(path)}: invalid model file: {e}") from None
    except MemoryError:
        raise SscrfError(f"{os.fspath(path)}: not enough memory to load this model "
                         f"({_n_weights(meta, arrays):,} weights)") from None
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise SscrfError(f"{os.fspath(path)}: invalid model file: {e!r}") from None
    return model


def _plain(value: Any) -> Any:
    """A hyperparameter as JSON can hold it: numpy scalars and arrays as Python values."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_plain(v) for v in value]
    return value


def _saved_training_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """``training_`` as saved: without the loss history and wall-clock seconds,
    so that the same data, settings and thread count give the same file bytes."""
    saved = {k: v for k, v in record.items() if k not in ("history", "seconds")}
    if "stages" in saved:
        saved["stages"] = {name: _saved_training_record(stage)
                           for name, stage in saved["stages"].items()}
    return saved


def _n_weights(meta: Mapping[str, Any], arrays: Mapping[str, NDArray[Any]]) -> int:
    """The weight count a model file gives, for messages."""
    if "coef" in arrays:
        return arrays["coef"].size
    n: Any = meta.get("n_weights")
    return int(n) if is_integer(n) else 0


def _stored_weights(meta: Mapping[str, Any], arrays: Mapping[str, NDArray[Any]], n_attr: int,
                    S: int) -> tuple[NDArray[Any], NDArray[Any], NDArray[np.float64]]:
    """``row_ptr``, ``label_ids`` and the weights of a model file: every array
    (as before compact files), or a layout of every pair (``dense``) rebuilt
    and / or the non-zero weights by index. The sizes are checked before
    anything is allocated; a file holds one form of each, not two."""
    every_pair = meta.get("layout") == "every pair"
    if "layout" in meta and not every_pair:
        raise SscrfError(f"unknown layout {meta['layout']!r}")
    if every_pair == ("row_ptr" in arrays or "label_ids" in arrays):
        raise SscrfError("the layout must be stored as arrays or named 'every pair', "
                         "one of the two")
    listed = "coef_index" in arrays or "coef_values" in arrays or "n_weights" in meta
    if listed == ("coef" in arrays):
        raise SscrfError("the weights must be stored as 'coef' or as 'coef_index' and "
                         "'coef_values' with 'n_weights', one of the two")
    n_pairs = n_attr * S if every_pair else len(arrays["label_ids"])
    expected = n_pairs + S * S + 2 * S
    # A few KB of labels and vocabulary can declare billions of weights (an
    # every-pair layout with the non-zero weights listed), so the memory
    # they take is checked before any of it is allocated.
    check_memory(expected * LOAD_BYTES_PER_WEIGHT + n_attr * 48, "loading this model")
    if listed:
        n = meta.get("n_weights")
        if not is_integer(n) or n != expected:
            raise SscrfError(f"weight count {n!r}, but the layout and labels give {expected}")
    elif arrays["coef"].ndim != 1 or len(arrays["coef"]) != expected:
        raise SscrfError("array sizes do not match the vocabulary and labels")
    if every_pair:
        every = ParameterLayout.every_pair(n_attr, S)
        row_ptr, label_ids = every.row_ptr, every.label_ids
    else:
        row_ptr, label_ids = arrays["row_ptr"], arrays["label_ids"]
    if not listed:
        return row_ptr, label_ids, arrays["coef"]
    return row_ptr, label_ids, _weights_from_nonzero(expected, arrays["coef_index"],
                                                     arrays["coef_values"])


def _weights_from_nonzero(n: int, index: NDArray[Any], values: NDArray[Any]
                          ) -> NDArray[np.float64]:
    """The ``n`` weights of a model file that lists its non-zero ones."""
    if (index.ndim != 1 or values.ndim != 1 or len(index) != len(values)
            or index.dtype != np.int64 or values.dtype != np.float64):
        raise SscrfError("coef_index and coef_values must be 1-D int64 and float64 arrays "
                         "of one length")
    if len(index) and not (index[0] >= 0 and index[-1] < n and (np.diff(index) > 0).all()):
        raise SscrfError("coef_index must increase strictly within the weight count")
    coef = np.zeros(n)
    coef[index] = values
    return coef


# -- word representations ----------------------------------------------------------------


def check_representations_record(record: Any) -> dict[str, Any]:
    """The record of the word representations a model reads, checked: a dict
    with ``path`` (str, where training read them), ``sha256`` (their file's
    digest, 64 hex digits), ``column`` (int >= 0, the first of their columns
    among the model's token columns) and ``columns`` (int >= 1, how many)."""
    if not isinstance(record, dict) or set(record) != {"path", "sha256", "column", "columns"}:
        raise SscrfError("representations must be a dict of path, sha256, column and columns")
    digest = record["sha256"]
    if not (isinstance(digest, str) and len(digest) == 64
            and all(c in "0123456789abcdef" for c in digest)):
        raise SscrfError("representations: sha256 must be 64 lower-case hex digits")
    if not isinstance(record["path"], str):
        raise SscrfError("representations: path must be a str")
    if not (is_integer(record["column"]) and record["column"] >= 0
            and is_integer(record["columns"]) and record["columns"] >= 1):
        raise SscrfError("representations: column must be an integer >= 0, columns >= 1")
    return {"path": record["path"], "sha256": digest, "column": int(record["column"]),
            "columns": int(record["columns"])}
