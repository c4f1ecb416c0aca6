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
3. with GE constraints, :func:`shard_attribute_tokens` per unlabeled shard
   → the constraints kept (:func:`sscrf.training.kept_constraints`) → their
   firing counts ``C_m`` from the compiled shards (:attr:`ShardGE.counts`);
4. :func:`shard_terms` per shard, kept where the shard lives;
5. per evaluation, :func:`shard_partial` per shard, then :func:`tree_sum`'s
   fixed pairing over shard indices: the bits depend on the partition only,
   not on which worker holds which shard. With GE, the summed expectations
   ``q`` give the score weights on the client
   (:class:`sscrf.objectives.GEPenalty`), and a second pass,
   :func:`with_ge_gradient`, adds each shard's GE gradient before the same
   tree.
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
from .. import _core
from ..annotations import label_view
from ..features.vocabulary import token_counts
from ..inputs import check_labeled, check_unlabeled, encode_labels
from ..layout import ParameterLayout
from ..objectives import Entropy, Objective, Term
from ..corpus import compile_corpus
from ..corpus_file import CompiledCorpus, labeled_input, unlabeled_input
from ..training import RESCALE_ABOVE, labeled_terms

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from ..features.vocabulary import AttributeCounts

__all__ = ["FitContext", "Partial", "PathOrPaths", "Shard", "ShardGE", "ShardTerms",
           "add_into", "add_results", "compiled_extractor", "compiled_shard", "compiled_terms",
           "compiled_vocabulary", "expand_paths", "forget_fit", "layout_from_pairs",
           "make_shard", "shard_attribute_tokens", "shard_counts", "shard_labels", "shard_pairs",
           "shard_groups", "shard_partial", "shard_terms", "tree_sum", "with_ge_gradient"]

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
    """Sentences of one shard: ``y`` None for unlabeled text. A compiled shard is a
    corpus file (``path``, memory-mapped where it is read) with no sentences in
    ``X``, and in ``y`` the labels it stores."""

    X: list[Any]
    y: Optional[list[Any]] = None
    path: Optional[str] = None


def make_shard(X: Sequence[Any], y: Optional[Sequence[Any]] = None, what: str = "shard"
               ) -> Shard:
    """A checked :class:`Shard` (labels one per token, unlabeled sentences non-empty)."""
    if y is None:
        return Shard(check_unlabeled(list(X), what), None)
    X_checked, y_checked = check_labeled(list(X), list(y), allow_empty_corpus=True,
                                         partial=True)
    return Shard(X_checked, y_checked)


def compiled_shard(path: str, labeled: bool) -> Shard:
    """A shard of a compiled corpus file (:func:`sscrf.compile_corpus_file`), checked as
    ``CRF.fit`` checks one: a labeled one must store labels; no empty sentences."""
    corpus = CompiledCorpus.open(path)
    if corpus.hash_features is not None:
        raise SscrfError(f"{path}: compiled with feature hashing, which the cluster's fit "
                         "does not take yet")
    if labeled:
        return Shard([], labeled_input(corpus, None), path)
    unlabeled_input(corpus)
    return Shard([], None, path)


def compiled_vocabulary(shard: Shard) -> tuple[str, tuple[bytes, Optional[list[str]], int]]:
    """A compiled shard's path, and its vocabulary checksum, templates and attribute
    count: shards fitted together must agree."""
    corpus = CompiledCorpus.open(str(shard.path), validate=False)
    return str(shard.path), (corpus.checksum, corpus.templates, corpus.n_attributes)


def compiled_extractor(shard: Shard) -> FeatureExtractor:
    """The extractor frozen to a compiled shard's vocabulary (the fitted model's)."""
    return CompiledCorpus.open(str(shard.path), validate=False).extractor()


def shard_counts(shard: Shard, extractor: FeatureExtractor) -> AttributeCounts:
    """The attribute counts of a shard's sentences (``extractor`` unfitted, its templates)."""
    return extractor.count(shard.X)


def shard_labels(shard: Shard) -> set[str]:
    """The labels a labeled shard names: alone, in a set or in an alternative labeling."""
    return {label for seq in label_view(shard.y or []) for label in seq}


def _features(shard: Shard, extractor: FeatureExtractor) -> Any:
    if shard.path is not None:
        features = CompiledCorpus.open(shard.path, validate=False).features_for(extractor)
    else:
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


def shard_attribute_tokens(shard: Shard, extractor: FeatureExtractor,
                           attributes: NDArray[np.int64]) -> NDArray[np.int64]:
    """How many tokens of the shard each of ``attributes`` (ids) is present at."""
    features = _features(shard, extractor)
    return token_counts([features], features.n_attributes)[attributes]


class FitContext(NamedTuple):
    """What every shard's terms are compiled with, sent to the workers once per fit.
    ``constraint_of_attribute``: attribute id → GE constraint (−1: none), or None
    without GE."""

    extractor: FeatureExtractor
    classes: list[str]
    layout: ParameterLayout
    params: dict[str, Any]
    n_threads: int
    constraint_of_attribute: Optional[NDArray[np.int64]] = None
    n_constraints: int = 0


class ShardGE:
    """The GE passes over one unlabeled shard: expectation sums ``q`` (M, S), and the
    gradient for the score weights computed from every shard's ``q``
    (:class:`sscrf.objectives.GE` does both over one corpus)."""

    def __init__(self, corpus: Any, layout: Any, n_threads: int,
                 constraint_of_attribute: NDArray[np.int64], n_constraints: int) -> None:
        self.corpus, self.layout, self.n_threads = corpus, layout, n_threads
        self.firings = _core.ConstraintFirings(corpus, constraint_of_attribute, n_constraints)

    @property
    def counts(self) -> NDArray[np.int64]:
        """``C_m`` in this shard: the tokens where constraint ``m`` fires."""
        return np.asarray(self.firings.counts, dtype=np.int64)

    def sums(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray(_core.ge_expectations(self.corpus, self.layout, theta, self.n_threads,
                                                self.firings))

    def gradient(self, theta: NDArray[np.float64], score_weights: NDArray[np.float64]
                 ) -> NDArray[np.float64]:
        return np.asarray(_core.ge_gradient(self.corpus, self.layout, theta, self.n_threads,
                                            self.firings, score_weights))


class ShardTerms(NamedTuple):
    """The compiled terms of one shard: the stage-1 ones (complete sentences' likelihood),
    every term but GE, and the shard's GE passes (None: no GE, or a labeled shard)."""

    supervised: list[Term]
    every: list[Term]
    ge: Optional[ShardGE] = None


def shard_terms(shard: Shard, context: FitContext) -> ShardTerms:
    """Compile a shard's terms as ``CRF.fit`` would compile its sentences: labeled
    sentences by :func:`sscrf.training.labeled_terms`; unlabeled ones as the entropy
    term and the GE passes."""
    extractor, classes, layout, params, n_threads = context[:5]
    use_ge = context.constraint_of_attribute is not None
    if shard.y is None and params["entropy_weight"] <= 0 and not use_ge:
        return ShardTerms([], [])  # unlabeled text no term reads
    features = _features(shard, extractor)
    if shard.y is not None:
        index = {label: i for i, label in enumerate(classes)}
        supervised, partial = labeled_terms(features, shard.y, index, None, layout.core,
                                            n_threads)
        return ShardTerms(list(supervised), list(supervised) + list(partial))
    if len(features.offsets) < 2:  # no sentence
        return ShardTerms([], [])
    corpus = compile_corpus(features, n_labels=len(classes))
    terms: list[Term] = []
    if params["entropy_weight"] > 0:
        terms.append(Entropy(corpus, layout.core, n_threads, weight=params["entropy_weight"],
                             method=params["entropy_method"]))
    ge = None
    if context.constraint_of_attribute is not None:
        ge = ShardGE(corpus, layout.core, n_threads, context.constraint_of_attribute,
                     context.n_constraints)
    return ShardTerms([], terms, ge)


#: Compiled terms of the shards this process evaluated, by (fit, shard index).
#: The compiled corpora cannot travel between workers (they hold the core's
#: objects), so each worker compiles the shards it is given once per fit and
#: keeps them here; a shard moved or rebuilt elsewhere (a worker lost) is
#: compiled again there, with the same result.
_COMPILED: dict[tuple[str, int], ShardTerms] = {}


def compiled_terms(key: tuple[str, int], shard: Shard, context: FitContext) -> ShardTerms:
    """:func:`shard_terms`, compiled on first use in this process and kept under ``key``."""
    terms = _COMPILED.get(key)
    if terms is None:
        terms = _COMPILED[key] = shard_terms(shard, context)
    return terms


def forget_fit(fit: str) -> int:
    """Drop this process's compiled terms of fit ``fit``; returns how many there were."""
    keys = [key for key in _COMPILED if key[0] == fit]
    for key in keys:
        del _COMPILED[key]
    return len(keys)


class Partial(NamedTuple):
    """A shard's (or a sum of shards') loss and gradient, and with GE its expectation
    sums ``q`` (M, S) before the second pass (None otherwise)."""

    loss: float
    grad: NDArray[np.float64]
    ge_sums: Optional[NDArray[np.float64]] = None


def shard_partial(terms: ShardTerms, theta: NDArray[np.float64], stage: str) -> Partial:
    """The sum of a shard's terms (``stage``: ``"supervised"`` or ``"every"``) at θ, in
    their fixed order, (0, zeros) for a shard with none; at ``"every"`` the GE sums too."""
    chosen = terms.supervised if stage == "supervised" else terms.every
    ge_sums = terms.ge.sums(theta) if stage == "every" and terms.ge is not None else None
    if not chosen:
        return Partial(0.0, np.zeros_like(theta), ge_sums)
    loss, grad = Objective(chosen, c2=0.0)(theta)  # a new array, this shard's own
    return Partial(float(loss), grad, ge_sums)


def with_ge_gradient(terms: ShardTerms, partial: Partial, theta: NDArray[np.float64],
                     score_weights: NDArray[np.float64]) -> Partial:
    """``partial`` (this shard's first pass) with the shard's GE gradient for
    ``score_weights`` added; λ is in the weights."""
    if terms.ge is None:  # a copy: the first pass's result is kept as it is
        return Partial(partial.loss, partial.grad.copy())
    return Partial(partial.loss, partial.grad + terms.ge.gradient(theta, score_weights))


def add_results(a: Partial, b: Partial) -> Partial:
    """``a + b``, in new arrays (an engine may keep its inputs); GE sums absent on one
    side count as zeros."""
    if a.ge_sums is None or b.ge_sums is None:
        sums = a.ge_sums if b.ge_sums is None else b.ge_sums
    else:
        sums = a.ge_sums + b.ge_sums
    return Partial(a.loss + b.loss, a.grad + b.grad, sums)


def shard_groups(n_shards: int, n_groups: int) -> list[range]:
    """Consecutive shard indices in at most ``n_groups`` groups (at least one), each an
    aligned block of ``2^k`` indices (the last one may be shorter).

    Such a block is one node of :func:`tree_sum`'s tree over the shard
    indices: at level ``k`` the node ``i`` is the sum of the items
    ``[i·2^k, (i+1)·2^k)``, an odd one out carried up unchanged. So summing
    each group with :func:`tree_sum`, then the groups' sums with it again,
    gives the bits of one :func:`tree_sum` over all the shards, for any
    ``n_groups``: the workers can each add their group's shards without the
    result depending on how many workers there are.
    """
    if n_shards < 1:
        raise SscrfError("nothing to group: no shard")
    size = 1
    while -(-n_shards // size) > max(1, n_groups):
        size *= 2
    return [range(a, min(a + size, n_shards)) for a in range(0, n_shards, size)]


def add_into(a: Partial, b: Partial) -> Partial:
    """:func:`add_results` written into ``a``'s arrays, with the same bits: for results
    nothing else holds, such as a worker's own shards' before they leave it."""
    np.add(a.grad, b.grad, out=a.grad)
    if a.ge_sums is None:
        return Partial(a.loss + b.loss, a.grad, b.ge_sums)
    if b.ge_sums is not None:
        np.add(a.ge_sums, b.ge_sums, out=a.ge_sums)
    return Partial(a.loss + b.loss, a.grad, a.ge_sums)


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
