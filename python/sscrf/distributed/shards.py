"""The work of a distributed fit on one shard, and the fixed-shape sum; no engine here.

A fit over shards is a few maps and one reduction, so that any engine that
can run a function where a shard lives, send one object to every worker and
add results pairwise can run it (:mod:`sscrf.distributed.fitting` wires them
to Dask):

1. :func:`shard_counts` per shard → :func:`sscrf.features.vocabulary.merge_counts`
   in shard order on the client → ``freeze(min_freq, max_features)``: the
   vocabulary ``CRF.fit`` builds from the same sentences in the same order
   (labeled shards first, then unlabeled ones, as ``fit`` reads ``X`` then
   ``X_unlabeled``);
2. :func:`shard_labels` and, for ``observed``, :func:`shard_pairs` per
   shard → :func:`layout_from_pairs` on the client;
3. :func:`shard_terms` per shard, kept where the shard lives;
4. per evaluation, :func:`shard_value_and_gradient` per shard, then
   :func:`tree_sum`'s fixed pairing over shard indices: the bits depend on
   the partition only, not on which worker holds which shard.
"""

from __future__ import annotations

import glob
import os
from typing import (TYPE_CHECKING, Any, Callable, NamedTuple, Optional, Sequence, TypeVar,
                    Union)

import numpy as np

from ..errors import SscrfError
from ..features import FeatureExtractor
from ..features.csr import large_values
from ..inputs import check_labeled, check_unlabeled, encode_labels
from ..layout import ParameterLayout
from ..objectives import Entropy, Objective, Term
from ..corpus import compile_corpus
from ..training import RESCALE_ABOVE, labeled_terms

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from ..features.vocabulary import AttributeCounts

__all__ = ["PathOrPaths", "Shard", "ShardTerms", "add_results", "compiled_terms", "expand_paths",
           "forget_fit",
           "layout_from_pairs", "make_shard", "shard_counts", "shard_labels", "shard_pairs",
           "shard_terms", "shard_value_and_gradient", "tree_sum"]

_T = TypeVar("_T")

#: A file, a glob pattern, or a list of files.
PathOrPaths = Union[str, "os.PathLike[str]", Sequence[Union[str, "os.PathLike[str]"]]]


def expand_paths(paths: PathOrPaths) -> list[str]:
    """The files ``paths`` names: a list as given, a glob pattern expanded here (sorted),
    one path as itself; none is an error."""
    if isinstance(paths, (str, os.PathLike)):
        pattern = os.fspath(paths)
        names = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
    else:
        names = [os.fspath(p) for p in paths]
    if not names:
        raise SscrfError(f"no file matches {paths!r}")
    return names


class Shard(NamedTuple):
    """Sentences of one shard: ``y`` None for unlabeled text."""

    X: list[Any]
    y: Optional[list[Any]] = None


def make_shard(X: Sequence[Any], y: Optional[Sequence[Any]] = None, what: str = "shard"
               ) -> Shard:
    """A checked :class:`Shard` (labels one per token, unlabeled sentences non-empty)."""
    if y is None:
        return Shard(check_unlabeled(list(X), what), None)
    X_checked, y_checked = check_labeled(list(X), list(y), allow_empty_corpus=True,
                                         partial=True)
    return Shard(X_checked, y_checked)


def shard_counts(shard: Shard, extractor: FeatureExtractor) -> AttributeCounts:
    """The attribute counts of a shard's sentences (``extractor`` unfitted, its templates)."""
    return extractor.count(shard.X)


def shard_labels(shard: Shard) -> set[str]:
    """The labels a labeled shard uses (a set or None cell of a partial annotation adds
    its members)."""
    labels: set[str] = set()
    for seq in shard.y or []:
        for label in seq:
            if isinstance(label, str):
                labels.add(label)
            elif label is not None and not isinstance(label, tuple):
                labels.update(label)
    return labels


def _features(shard: Shard, extractor: FeatureExtractor) -> Any:
    features = extractor.transform(shard.X)
    ids, values = large_values(features, RESCALE_ABOVE)
    if len(ids):  # one machine rescales such weights (training.variable_scale)
        name = (extractor.attributes_ or [])[int(ids[0])]
        raise SscrfError(f"attribute {name!r} has values up to {float(values[0]):.3g}: the "
                         f"distributed fit takes feature values of at most {RESCALE_ABOVE:g} "
                         "in magnitude; divide them by a constant")
    return features


def shard_pairs(shard: Shard, extractor: FeatureExtractor, classes: Sequence[str]
                ) -> NDArray[np.int64]:
    """The ``attribute·S + label`` keys of the (attribute, label) pairs of a labeled shard's
    singleton-labeled tokens, sorted (the ``observed`` feature set's pairs)."""
    features = _features(shard, extractor)
    index = {label: i for i, label in enumerate(classes)}
    layout = ParameterLayout.for_feature_set(features, encode_labels(shard.y or [], index),
                                             len(classes), "observed")
    return layout.pair_keys()


def layout_from_pairs(keys: Sequence[NDArray[np.int64]], n_attributes: int, n_labels: int
                      ) -> ParameterLayout:
    """The layout of the union of every shard's pair keys (:func:`shard_pairs`)."""
    S = int(n_labels)
    merged = np.unique(np.concatenate(list(keys))) if keys else np.zeros(0, np.int64)
    row_ptr = np.zeros(n_attributes + 1, dtype=np.int64)
    np.cumsum(np.bincount(merged // S, minlength=n_attributes), out=row_ptr[1:])
    return ParameterLayout(row_ptr, (merged % S).astype(np.int32), S)


class ShardTerms(NamedTuple):
    """The compiled terms of one shard: the stage-1 ones (complete sentences' likelihood)
    and every term."""

    supervised: list[Term]
    every: list[Term]


def shard_terms(shard: Shard, extractor: FeatureExtractor, classes: Sequence[str],
                layout: ParameterLayout, params: dict[str, Any], n_threads: int) -> ShardTerms:
    """Compile a shard's terms as ``CRF.fit`` would compile its sentences: labeled
    sentences by :func:`sscrf.training.labeled_terms`; unlabeled ones as the entropy term."""
    features = _features(shard, extractor)
    if shard.y is not None:
        index = {label: i for i, label in enumerate(classes)}
        supervised, partial = labeled_terms(features, shard.y, index, None, layout.core,
                                            n_threads)
        return ShardTerms(list(supervised), list(supervised) + list(partial))
    if params["entropy_weight"] <= 0 or not len(shard.X):
        return ShardTerms([], [])
    corpus = compile_corpus(features, n_labels=len(classes))
    term = Entropy(corpus, layout.core, n_threads, weight=params["entropy_weight"],
                   method=params["entropy_method"])
    return ShardTerms([], [term])


#: Compiled terms of the shards this process evaluated, by (fit, shard index).
#: The compiled corpora cannot travel between workers (they hold the core's
#: objects), so each worker compiles the shards it is given once per fit and
#: keeps them here; a shard moved or rebuilt elsewhere (a worker lost) is
#: compiled again there, with the same result.
_COMPILED: dict[tuple[str, int], ShardTerms] = {}


def compiled_terms(key: tuple[str, int], shard: Shard, extractor: FeatureExtractor,
                   classes: Sequence[str], layout: ParameterLayout, params: dict[str, Any],
                   n_threads: int) -> ShardTerms:
    """:func:`shard_terms`, compiled on first use in this process and kept under ``key``."""
    terms = _COMPILED.get(key)
    if terms is None:
        terms = _COMPILED[key] = shard_terms(shard, extractor, classes, layout, params,
                                             n_threads)
    return terms


def forget_fit(fit: str) -> int:
    """Drop this process's compiled terms of fit ``fit``; returns how many there were."""
    keys = [key for key in _COMPILED if key[0] == fit]
    for key in keys:
        del _COMPILED[key]
    return len(keys)


def shard_value_and_gradient(terms: ShardTerms, theta: NDArray[np.float64], stage: str
                             ) -> tuple[float, NDArray[np.float64]]:
    """The sum of a shard's terms (``stage``: ``"supervised"`` or ``"every"``) at θ, in
    their fixed order; (0, zeros) for a shard with none."""
    chosen = terms.supervised if stage == "supervised" else terms.every
    if not chosen:
        return 0.0, np.zeros_like(theta)
    loss, grad = Objective(chosen, c2=0.0)(theta)
    return float(loss), np.array(grad, dtype=np.float64)


def add_results(a: tuple[float, NDArray[np.float64]], b: tuple[float, NDArray[np.float64]]
                ) -> tuple[float, NDArray[np.float64]]:
    """``a + b`` of two (loss, gradient) pairs (new arrays: an engine may keep its inputs)."""
    return a[0] + b[0], a[1] + b[1]


def tree_sum(items: Sequence[_T], add: Callable[[_T, _T], _T]) -> _T:
    """Sum ``items`` in a fixed binary tree over their positions: ``add`` pairs
    (0, 1), (2, 3), ... then pairs of those, an odd one out carried up as it is.

    The shape depends only on ``len(items)``, so the result has the same bits
    wherever each addition runs. ``add`` may return a future (the additions
    then run where an engine puts them).
    """
    level = list(items)
    if not level:
        raise SscrfError("nothing to sum: no shard")
    while len(level) > 1:
        level = [add(level[i], level[i + 1]) if i + 1 < len(level) else level[i]
                 for i in range(0, len(level), 2)]
    return level[0]
