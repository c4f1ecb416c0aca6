"""Word representations learned from unlabeled text, used as features.

:class:`WordRepresentations` learns, in one pass over raw sentences,

1. word x context co-occurrence counts within ``window`` tokens (compiled,
   OpenMP; a context is a word and its side, left or right);
2. positive pointwise mutual information (PPMI) with the context counts
   raised to 0.75 (Levy, Goldberg & Dagan 2015, eq. 3), which keeps rare
   contexts from dominating;
3. a truncated SVD by a randomized range finder (Halko, Martinsson & Tropp
   2011, algorithms 4.4 and 5.1) with two power iterations; word vectors
   are the leading ``dim`` columns of ``U Σ``, normalised to unit length;
4. clusters of the leading ``cluster_dim`` columns (``dim`` by default),
   normalised likewise, at
   several granularities that nest as Brown-cluster bit-string
   prefixes do: spherical k-means at the coarsest granularity, then each
   cluster is split by k-means among its own words into a number of
   children proportional to its size, and so on to the finest. A coarse
   cluster is therefore exactly a union of finer ones;
5. ``hmms`` hidden Markov models of ``hmm_states`` states trained by
   stepwise EM on the same sentences (:mod:`sscrf.hidden_states`), each
   word emitted only by the ``hmm_support`` states nearest its vector,
   whose state of each token on its sentence's most probable state
   sequence (the Viterbi path) is a feature (Huang & Yates 2009).

The features of a word (Miller et al. 2004; Koo et al. 2008; Turian et al.
2010; Haghighi & Klein 2006) are its cluster ids at every granularity and
those of its neighbours, its unit vector scaled by ``scale``, the HMM
states of it and its neighbours, and, given prototype words per label, a
feature for each label whose prototypes are close in cosine.

Determinism: the counts are integers; every product (sparse x dense, Gram
matrices, tall x small, nearest centroids) and the small eigendecompositions
(Jacobi rotations in a fixed order) run in the compiled core, each output
entry one sum in a fixed order, so that the thread count does not change a
bit of the result; so do the HMMs' E-steps (``_core.SparseHmm``). No step
calls BLAS or LAPACK (numpy does only
element-wise work and ``einsum`` without BLAS), so their thread settings do
not matter. Random numbers come from ``random_state``.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import warnings
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Optional, Union

import numpy as np

from . import _core, hidden_states, serialization
from .errors import SscrfError, SscrfTypeError
from .features.words import word_columns
from .inputs import check_integer, check_number, check_threads, random_generator
from .progress import Progress

if TYPE_CHECKING:
    from numpy.typing import NDArray

#: A file path.
_Path = Union[str, "os.PathLike[str]"]

__all__ = ["DEFAULT_VECTOR_SCALE", "REPRESENTATIONS_KIND", "VECTOR_KEY", "WordRepresentations",
           "WordVectors", "file_digest"]

REPRESENTATIONS_KIND = "sscrf.WordRepresentations"

#: The feature key of the current word's vector (attributes "rep.v0", "rep.v1", ...).
VECTOR_KEY = "rep.v"
#: Length of the vector features: 6 beat 3 on the BC2GM dev split by 2.3 F1
#: at 50 labeled sentences and tied at 200 and 1,000.
DEFAULT_VECTOR_SCALE = 6.0
#: How a sentence's HMM states are read: its Viterbi path, or each word's
#: state of largest posterior (files written before hmm_decoding existed).
HMM_DECODINGS = ("viterbi", "posterior")

#: Tokens counted per call into the core while streaming: the batch's words
#: and pairs (about 2 x window pairs a token, 16 bytes each) stay near 100 MB.
_BATCH_TOKENS = 1 << 20
#: Distinct (word, context) pairs kept while streaming before pairs seen
#: once are dropped (word2vec's reduce step): 16 bytes each, 0.5 GB at most
#: with the merge's copy.
_PAIR_BUDGET = 16_000_000
#: Levy et al. 2015's context-distribution smoothing exponent.
_CONTEXT_SMOOTHING = 0.75
#: Power of the singular values in the vectors (Levy et al. 2015, §3.3,
#: "eigenvalue weighting"): U Σ beat U Σ^½ by 0.2 and 1.2 dev F1 on two BC2GM
#: slices of 200 sentences (U alone lost 0.4 and 1.3).
_EIGENVALUE_WEIGHT = 1.0
_OVERSAMPLING = 10
_POWER_ITERATIONS = 2
_KMEANS_ITERATIONS = 10
#: Temperature of the softmax over a word's nearest HMM states' cosines that
#: shares its initial emission among them.
_HMM_SUPPORT_TEMPERATURE = 0.1
#: Added to every initial emission weight, so that none is 0.
_HMM_INITIAL_FLOOR = 1e-4


def file_digest(path: _Path) -> str:
    """SHA-256 hex digest of a file (what a model trained with it records)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def word_shape_class(word: str) -> str:
    """The fallback of a word unseen at fit time, lower-cased form unseen too:
    ``"~"`` and its short word shape (``"~Xxd"`` for ``"Il2"``), one class per
    shape."""
    return "~" + word_columns(word)[2]


class WordRepresentations:
    """Word vectors and nested clusters learned from unlabeled sentences.

    Parameters
    ----------
    dim : int, default 100
        Dimensions of the word vectors (at most the vocabulary size).
    clusters : sequence of int, default (32, 128, 512, 2048)
        Cluster counts, increasing; each granularity refines the previous
        (a coarse cluster is a union of fine ones). Counts above the
        vocabulary size are capped at it.
    cluster_dim : int or None, default None
        Dimensions of the space the clusters are found in (None: ``dim``).
        One truncated SVD of ``max(dim, cluster_dim)`` dimensions serves
        both: the vectors are its leading ``dim`` dimensions and the
        clusters are found in its leading ``cluster_dim``, each made unit
        length, so that finer clusters need not cost longer vectors (tagging
        time grows with the vectors' length). On BC2GM, 200 against 100 moved
        the mean dev F1 by −0.3 to +0.5 depending on the slices: within
        their noise, so the default keeps one space for both.
    window : int, default 2
        Context words on each side.
    min_count : int, default 2
        Words seen fewer times get no representation of their own (the
        fallback below).
    max_vocabulary : int, default 100000
        The most frequent words kept (ties: the first seen).
    random_state : int, default 0
    n_threads : int or None
        Threads of the compiled steps (None: every core). Results do not
        depend on it.
    verbose : bool, default False
        Report progress (:class:`sscrf.progress.Progress`).
    hmm_states : int, default 80
        States of each hidden Markov model trained on the sentences by EM
        (0: none). Each token's state on its sentence's most probable state
        sequence becomes a feature (Huang & Yates 2009). EM passes over the text
        ``hmm_passes`` times, so :meth:`fit` keeps it in memory as symbol
        ids (about 5 bytes a token while EM runs), and costs about
        ``hmms × hmm_passes × hmm_support²`` operations a token.
    hmms : int, default 3
        HMMs trained, each from its own start (its own k-means of the
        vectors, below).
    hmm_passes : int, default 3
        Passes of stepwise EM (:func:`sscrf.hidden_states.fit_hmm`) over the
        sentences for each HMM.
    hmm_support : int, default 24
        States that may emit a word: the HMM's states are first the
        centroids of a spherical k-means of the vectors, and each word is
        emitted only by the ``hmm_support`` states nearest its vector (EM
        keeps it so); a shape class, by every state. ``hmm_support >=
        hmm_states`` is the full HMM.
    hmm_decoding : {"viterbi", "posterior"}, default "viterbi"
        A token's state: the one on its sentence's Viterbi path, or the one of
        largest posterior probability given the sentence (forward-backward:
        about twice the decoding time; the two agreed on 94% of the tokens of
        2,000 BC2GM test sentences). Files written before this parameter
        existed decoded posteriors, and load so.

    Attributes
    ----------
    vocabulary_ : list of str
        Words with a representation, most frequent first.
    counts_ : ndarray of int64
        Their counts.
    vectors_ : ndarray (n_words, dim)
        Unit-length word vectors (a row of zeros for a word without a
        positive PMI context).
    clusters_ : ndarray (n_words, len(clusters)) of int32
        Cluster id at each granularity.
    n_tokens_ : int
        Tokens read by :meth:`fit`.
    hmms_ : list of :class:`sscrf.hidden_states.HiddenMarkovModel`
        The HMMs (empty without ``hmm_states``). Their symbols are the
        vocabulary's rows, then the shape classes of :attr:`hmm_shapes_`,
        then one symbol for any other shape.
    hmm_shapes_ : list of str
        Shape classes of the words without a row, in the fit's sentences.
    hmm_log_likelihood_ : list of float
        Each HMM's log-likelihood per token over its last pass of EM (each
        batch's under the model of its time).

    Notes
    -----
    Feature keys (stable): ``"rep.c{k}[{d:+d}]"`` (``"rep.c128[-1]"``, ``"rep.c128[0]"``,
    ``"rep.c128[+1]"``) hold the cluster id, as a string, of the word at
    offset ``d`` at granularity ``k`` (``"<s>"`` / ``"</s>"`` beyond the
    sentence); ``"rep.v"`` the current word's vector times ``scale``, a
    read-only float64 array that :class:`sscrf.features.FeatureExtractor`
    makes into one attribute per dimension, ``"rep.v0"``, ``"rep.v1"``, ...;
    ``"rep.proto[{label}]"`` is 1.0 when a prototype
    of ``label`` has cosine at least ``threshold`` with the current word;
    ``"rep.h{m}[{d:+d}]"`` (``"rep.h0[-1]"``, ``"rep.h0[0]"``, ``"rep.h0[+1]"``)
    holds the state (``hmm_decoding``), as a string, of the word at offset ``d``
    under HMM ``m`` (``"<s>"`` / ``"</s>"`` beyond the sentence).

    Memory: :meth:`fit` holds a batch of about a million tokens, the words
    seen and the distinct (word, context) pairs; past 16 million pairs, the
    pairs seen once so far are dropped (word2vec's vocabulary reduction),
    which bounds memory on long streams (10M tokens: under 0.7 GB).

    A word unseen at fit time is looked up lower-cased; failing that, its
    cluster ids at every granularity are its word-shape class
    (:func:`word_shape_class`, e.g. ``"~Xxd"``), and it has no vector or
    prototype features. The HMMs read such a word as its shape class.
    """

    def __init__(self, dim: int = 100, clusters: Sequence[int] = (32, 128, 512, 2048),
                 window: int = 2, min_count: int = 2, max_vocabulary: int = 100_000,
                 random_state: Optional[int] = 0, n_threads: Optional[int] = None,
                 verbose: bool = False, cluster_dim: Optional[int] = None,
                 hmm_states: int = 80, hmms: int = 3, hmm_passes: int = 3,
                 hmm_support: int = 24, hmm_decoding: str = "viterbi") -> None:
        self.dim = dim
        self.clusters = clusters
        self.cluster_dim = cluster_dim
        self.window = window
        self.min_count = min_count
        self.max_vocabulary = max_vocabulary
        self.random_state = random_state
        self.n_threads = n_threads
        self.verbose = verbose
        self.hmm_states = hmm_states
        self.hmms = hmms
        self.hmm_passes = hmm_passes
        self.hmm_support = hmm_support
        self.hmm_decoding = hmm_decoding

    def __repr__(self) -> str:
        parameters = inspect.signature(WordRepresentations.__init__).parameters.values()
        changed = [f"{p.name}={getattr(self, p.name)!r}" for p in parameters
                   if p.name != "self" and _differs(getattr(self, p.name), p.default)]
        fitted = getattr(self, "vocabulary_", None)
        words = "" if fitted is None else f": {len(fitted):,} words from {self.n_tokens_:,} tokens"
        return f"<WordRepresentations({', '.join(changed)}){words}>"

    # -- fitting -----------------------------------------------------------------------

    def _check_params(self) -> int:
        check_integer(self.dim, "dim", 1, 4000)
        if self.cluster_dim is not None:
            check_integer(self.cluster_dim, "cluster_dim", 1, 4000)
        check_integer(self.window, "window", 1, 1000)
        check_integer(self.min_count, "min_count", 1)
        check_integer(self.max_vocabulary, "max_vocabulary", 1, 1 << 30)
        check_integer(self.hmm_states, "hmm_states", 0, 1000)
        if self.hmm_states == 1:
            raise SscrfError("hmm_states must be 0 (no HMM) or at least 2, not 1")
        check_integer(self.hmms, "hmms", 1, 64)
        check_integer(self.hmm_passes, "hmm_passes", 1, 100_000)
        check_integer(self.hmm_support, "hmm_support", 1, 1000)
        _check_decoding(self.hmm_decoding)
        if isinstance(self.clusters, (str, bytes)) or not hasattr(self.clusters, "__iter__"):
            raise SscrfTypeError(f"clusters must be a sequence of integers, not "
                                 f"{self.clusters!r}")
        ks = list(self.clusters)
        for k in ks:
            check_integer(k, "clusters entries", 1)
        if any(b <= a for a, b in zip(ks, ks[1:])):
            raise SscrfError(f"clusters must increase strictly, got {ks}")
        random_generator(self.random_state)
        return check_threads(self.n_threads)

    def fit(self, sentences: Iterable[Sequence[str]]) -> WordRepresentations:
        """Learn the representations from ``sentences``, read once.

        Parameters
        ----------
        sentences : iterable of list of str
            Tokenized sentences; a generator or a file reader is read once,
            batch by batch, so the corpus never needs to be in memory as
            strings (with ``hmm_states``, as word ids only).

        Returns
        -------
        self
        """
        n_threads = self._check_params()
        progress = Progress(self.verbose)
        text: Optional[list[Any]] = [] if self.hmm_states else None
        words, counts, keys, pair_counts, n_tokens = self._count(sentences, n_threads, progress,
                                                                 text)
        progress.note(f"representations: {n_tokens:,} tokens, {len(words):,} word types, "
                      f"{len(keys):,} co-occurring pairs")
        keep = self._kept_words(counts)
        cluster_dim = self.dim if self.cluster_dim is None else self.cluster_dim
        if len(keep) == 0:
            raise SscrfError(f"sentences: no word occurs min_count={self.min_count} times "
                             f"(read {n_tokens} tokens)")
        ppmi = self._ppmi(keep, len(counts), keys, pair_counts)
        if ppmi.nnz == 0:  # no context to factorise: the SVD would have nothing to find
            raise SscrfError(f"sentences: no word has a context (another word within "
                             f"window={self.window} of it in a sentence, of positive PMI) "
                             f"in {n_tokens} tokens: are the sentences one word each?")
        progress.note(f"representations: PPMI matrix {ppmi.shape[0]:,} x {ppmi.shape[1]:,}, "
                      f"{ppmi.nnz:,} entries; SVD to "
                      f"{min(max(self.dim, cluster_dim), len(keep))} dimensions")
        rng = random_generator(self.random_state)
        leading = _randomized_svd_vectors(ppmi, max(self.dim, cluster_dim), rng, n_threads)
        vectors = _unit_rows(leading[:, :self.dim])
        space = vectors if cluster_dim == self.dim else _unit_rows(leading[:, :cluster_dim])
        del leading
        progress.note(f"representations: clustering {len(keep):,} words at "
                      f"{', '.join(map(str, self.clusters))}")
        self.clusters_ = _nested_kmeans(space, list(self.clusters), rng, n_threads)
        self.vocabulary_ = [words[i] for i in keep.tolist()]
        self.counts_ = counts[keep].astype(np.int64)
        self.vectors_ = vectors
        self.n_tokens_ = int(n_tokens)
        self.hmms_: list[hidden_states.HiddenMarkovModel] = []
        self.hmm_shapes_: list[str] = []
        self.hmm_log_likelihood_: list[float] = []
        self._index()
        if text is not None:
            self._fit_hmms(words, text, rng, n_threads, progress)
        return self

    def _fit_hmms(self, words: list[str], text: list[Any], rng: np.random.Generator,
                  n_threads: int, progress: Progress) -> None:
        """Train the HMMs on ``text``: per batch of :meth:`_count`, the ids of
        ``words`` and the sentence offsets."""
        # each word seen, as the HMMs read it: its row, or a shape class
        shapes: dict[str, int] = {}
        V = len(self.vocabulary_)
        symbol_of_word = np.array(
            [r if r >= 0 else V + shapes.setdefault(word_shape_class(word), len(shapes))
             for word, r in zip(words, self._rows(words))], dtype=np.int32)
        self.hmm_shapes_ = list(shapes)
        n_symbols = V + len(shapes) + 1
        symbols = np.concatenate([symbol_of_word[ids] for ids, _ in text]) if text else \
            np.zeros(0, dtype=np.int32)
        offsets, base = [np.zeros(1, dtype=np.int64)], 0
        for ids, batch_offsets in text:
            lengths = np.diff(batch_offsets)
            offsets.append(base + np.cumsum(lengths[lengths > 0]))  # empty sentences dropped
            base += len(ids)
        del text[:]
        sentence_offsets = np.concatenate(offsets)
        symbol_counts = np.bincount(symbols, minlength=n_symbols).astype(np.float64)
        K = self.hmm_states
        progress.note(f"representations: {self.hmms} HMMs of {K} states over "
                      f"{n_symbols:,} symbols ({min(self.hmm_support, K)} states a word), "
                      f"{self.hmm_passes} passes of EM each")
        for m in range(self.hmms):
            hmm_rng = np.random.default_rng(rng.integers(1 << 63))
            support_ptr, support, weights = self._hmm_supports(symbol_counts, hmm_rng, n_threads)
            hmm, per_token = hidden_states.fit_hmm(
                symbols, sentence_offsets, support_ptr, support, weights, K,
                self.hmm_passes, hmm_rng, n_threads, progress,
                name=f"representations: HMM {m + 1}/{self.hmms}")
            self.hmms_.append(hmm)
            self.hmm_log_likelihood_.append(float(per_token))
        self._index()

    def _hmm_supports(self, symbol_counts: NDArray[Any], rng: np.random.Generator,
                      n_threads: int) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any]]:
        """An HMM's supports and initial emission weights: each word is emitted by
        the ``hmm_support`` states whose centroids (spherical k-means of the
        vectors, started from ``rng``) lie nearest its vector, in proportion
        to its count and a softmax of the cosines; a shape class (and the
        symbol of other shapes) by every state, in proportion to its count."""
        K, V = self.hmm_states, len(self.vocabulary_)
        k = min(self.hmm_support, K)
        X = self.vectors_
        assign = _nested_kmeans(X, [K], rng, n_threads)[:, 0]
        C = np.zeros((K, X.shape[1]))
        np.add.at(C, assign, X)
        cosines = _core.times_small(X, np.ascontiguousarray(_unit_rows(C).T), n_threads)
        nearest = np.sort(np.argpartition(-cosines, k - 1, axis=1)[:, :k], axis=1)
        near = np.take_along_axis(cosines, nearest, axis=1) / _HMM_SUPPORT_TEMPERATURE
        share = np.exp(near - near.max(axis=1, keepdims=True))
        share /= share.sum(axis=1, keepdims=True)
        n_other = len(symbol_counts) - V
        support_ptr = np.concatenate([np.arange(0, V * k, k),
                                      V * k + np.arange(0, n_other * K + 1, K)])
        support = np.concatenate([nearest.ravel(), np.tile(np.arange(K), n_other)])
        weights = np.concatenate([(symbol_counts[:V, None] * share).ravel(),
                                  np.repeat(symbol_counts[V:] / K, K)]) + _HMM_INITIAL_FLOOR
        return support_ptr.astype(np.int64), support.astype(np.int32), weights

    def _count(self, sentences: Iterable[Sequence[str]], n_threads: int, progress: Progress,
               text: Optional[list[Any]] = None
               ) -> tuple[list[str], NDArray[Any], NDArray[Any], NDArray[Any], int]:
        """One pass: the word list (first-seen order), their counts, and the
        sorted (key, count) pairs of :func:`sscrf._core.cooccurrence_counts`;
        with ``text``, each batch's (word ids, sentence offsets) appended to it."""
        if isinstance(sentences, (str, bytes)) or not hasattr(sentences, "__iter__"):
            raise SscrfTypeError("sentences must be an iterable of lists of words, not "
                                 f"{type(sentences).__name__}")
        index = _core.AttributeIndex()
        words: list[str] = []
        counts = np.zeros(0, dtype=np.int64)
        keys = np.zeros(0, dtype=np.int64)
        pair_counts = np.zeros(0, dtype=np.int64)
        batch: list[str] = []
        offsets = [0]
        n_tokens = n_sentences = 0

        def flush() -> None:
            nonlocal counts, keys, pair_counts
            ids = index.intern(batch, True, words)
            if text is not None:
                text.append((ids.astype(np.int32), np.asarray(offsets, dtype=np.int64)))
            counts = np.concatenate([counts, np.zeros(len(words) - len(counts), np.int64)])
            counts += np.bincount(ids, minlength=len(words))
            k, c = _core.cooccurrence_counts(ids.astype(np.int32), np.asarray(offsets, np.int64),
                                             self.window, max(len(words), 1), n_threads)
            keys, pair_counts = _core.merge_counts(keys, pair_counts, k, c)
            if len(keys) > _PAIR_BUDGET:  # word2vec's reduce: pairs seen once go
                kept = pair_counts > 1
                keys, pair_counts = keys[kept], pair_counts[kept]
            batch.clear()
            del offsets[1:]

        for sentence in sentences:
            if isinstance(sentence, str) or not isinstance(sentence, (list, tuple)):
                raise SscrfTypeError(f"sentences: sentence {n_sentences} must be a list of "
                                     f"words, not {type(sentence).__name__}")
            for t, word in enumerate(sentence):
                if not isinstance(word, str):
                    raise SscrfTypeError(f"sentences: sentence {n_sentences}, token {t} must "
                                         f"be a str, not {type(word).__name__}")
            batch.extend(sentence)
            offsets.append(len(batch))
            n_sentences += 1
            n_tokens += len(sentence)
            if len(batch) >= _BATCH_TOKENS:
                flush()
                progress.step(n_tokens // _BATCH_TOKENS,
                              f"representations: {n_tokens:,} tokens counted")
        if batch:
            flush()
        return words, counts, keys, pair_counts, n_tokens

    def _kept_words(self, counts: NDArray[Any]) -> NDArray[Any]:
        """Ids of the words kept: count >= min_count, the max_vocabulary most
        frequent, most frequent first (ties: first seen)."""
        order = np.argsort(-counts, kind="stable")
        order = order[counts[order] >= self.min_count]
        return order[:self.max_vocabulary]

    def _ppmi(self, keep: NDArray[Any], n_seen: int, keys: NDArray[Any],
              pair_counts: NDArray[Any]) -> Any:
        """The PPMI matrix (kept words x 2 kept words, CSR) of the pair counts."""
        # here, not at the top: the command line reads this module for every
        # model, and scipy.sparse is 0.1 s of `sscrf train` and `sscrf tag`
        import scipy.sparse as sp

        V = len(keep)
        new_id = np.full(n_seen, -1, dtype=np.int64)
        new_id[keep] = np.arange(V)
        w = new_id[keys >> 32]
        c = new_id[keys & 0x7FFFFFFF]
        side = (keys >> 31) & 1
        ok = (w >= 0) & (c >= 0)
        w, col, n = w[ok], (c + side * V)[ok], pair_counts[ok].astype(np.float64)
        counts = sp.csr_matrix((n, (w, col)), shape=(V, 2 * V))
        counts.sum_duplicates()
        counts.sort_indices()
        total = counts.data.sum()
        row_sum = np.asarray(counts.sum(axis=1)).ravel()
        col_sum = np.asarray(counts.sum(axis=0)).ravel() ** _CONTEXT_SMOOTHING
        col_p = col_sum / max(col_sum.sum(), 1e-300)
        rows = np.repeat(np.arange(V), np.diff(counts.indptr))
        pmi = np.log(counts.data / total) - np.log(row_sum[rows] / total) \
            - np.log(col_p[counts.indices])
        counts.data = np.maximum(pmi, 0.0)
        counts.eliminate_zeros()
        return counts

    # -- lookup ------------------------------------------------------------------------

    def _index(self) -> None:
        self._row = {w: i for i, w in enumerate(self.vocabulary_)}
        # one str object per cluster id, shared by every word of the cluster:
        # the extractor caches ids by the objects of a (key, value) pair
        names = [str(c) for c in range(int(self.clusters_.max(initial=-1)) + 1)]
        self._cluster_strings = [tuple(names[c] for c in row) for row in self.clusters_.tolist()]
        self._prototype_cache: dict[Any, tuple[list[str], NDArray[Any]]] = {}
        self._vector_caches: dict[float, dict[int, NDArray[Any]]] = {}
        self._key_cache: dict[tuple[int, bool], tuple[str, ...]] = {}
        V = len(self.vocabulary_)
        self._hmm_shape = {c: V + i for i, c in enumerate(getattr(self, "hmm_shapes_", []))}
        self._hmm_kernels = [hmm.kernel() for hmm in getattr(self, "hmms_", [])]
        self._state_strings = [str(k) for k in range(self.hmm_states)]

    def _check_fitted(self) -> None:
        if not hasattr(self, "vectors_"):
            raise SscrfError("this WordRepresentations is not fitted: call fit(sentences) or "
                             "WordRepresentations.load(path) first")

    def row(self, word: str) -> int:
        """The row of ``word`` in :attr:`vectors_` (its lower-cased form's if it has
        none of its own), or -1."""
        self._check_fitted()
        r = self._row.get(word)
        if r is None:
            r = self._row.get(word.lower(), -1)
        return r

    def _rows(self, words: Sequence[str]) -> list[int]:
        if isinstance(words, str) or not isinstance(words, (list, tuple)):
            raise SscrfTypeError(f"words must be a list of str, not {type(words).__name__}")
        self._check_fitted()
        out = []
        for t, w in enumerate(words):
            if not isinstance(w, str):
                raise SscrfTypeError(f"words: token {t} must be a str, not {type(w).__name__}")
            r = self._row.get(w)
            out.append(self._row.get(w.lower(), -1) if r is None else r)
        return out

    @staticmethod
    def _shapes(words: Sequence[str], rows: Sequence[int]) -> list[str]:
        """The shape class of each word without a row ("" for the others), made once
        for its cluster ids and its HMM symbol."""
        return ["" if r >= 0 else word_shape_class(w) for w, r in zip(words, rows)]

    def _cluster_values(self, shape: str, r: int) -> tuple[str, ...]:
        if r >= 0:
            return self._cluster_strings[r]
        return (shape,) * len(self.clusters)

    def _state_ids(self, rows: Sequence[int], shapes: Sequence[str]) -> list[list[int]]:
        """Per HMM, each word's state (``hmm_decoding``)."""
        if not self.hmms_:
            return []
        other = len(self.vocabulary_) + len(self._hmm_shape)
        symbols = np.array([r if r >= 0 else self._hmm_shape.get(c, other)
                            for r, c in zip(rows, shapes)], dtype=np.int32)
        if _check_decoding(self.hmm_decoding) == "viterbi":
            return hidden_states.viterbi_states(self._hmm_kernels, symbols).tolist()
        return [hidden_states.most_probable_states(kernel, symbols).tolist()
                for kernel in self._hmm_kernels]

    def _states(self, rows: Sequence[int], shapes: Sequence[str]) -> list[list[str]]:
        """Per HMM, each word's state, as a string."""
        names = self._state_strings
        return [[names[k] for k in ids] for ids in self._state_ids(rows, shapes)]

    def hidden_states(self, words: Sequence[str]) -> NDArray[Any]:
        """Each word's state in the sentence ``words`` under each HMM (``hmm_decoding``).

        Parameters
        ----------
        words : list of str

        Returns
        -------
        ndarray of int64, shape ``(len(hmms_), len(words))``
            Empty (0 rows) without ``hmm_states``.
        """
        rows = self._rows(words)
        states = self._state_ids(rows, self._shapes(words, rows))
        return np.array(states, dtype=np.int64).reshape(len(states), len(words))

    def columns(self, words: Sequence[str]) -> list[list[str]]:
        """The cluster ids of each word at every granularity, as extra CoNLL columns.

        Parameters
        ----------
        words : list of str

        Returns
        -------
        list of list of str
            One row per word, one column per entry of ``clusters`` (coarse to
            fine), then one per HMM: the word's state; unseen
            words get their shape class as cluster id (see the class notes).
        """
        rows = self._rows(words)
        shapes = self._shapes(words, rows)
        states = self._states(rows, shapes)
        return [list(self._cluster_values(c, r)) + [column[i] for column in states]
                for i, (c, r) in enumerate(zip(shapes, rows))]

    def word_vectors(self, column: int = 0, scale: float = DEFAULT_VECTOR_SCALE) -> WordVectors:
        """The vectors as template features: see :class:`WordVectors`.

        Parameters
        ----------
        column : int, default 0
            The token column holding the word.
        scale : float, default 6.0
            As :meth:`features`' ``scale``.

        Returns
        -------
        WordVectors
        """
        return WordVectors(self, column, scale)

    def features(self, words: Sequence[str], context: int = 1, vectors: bool = True,
                 scale: float = DEFAULT_VECTOR_SCALE,
                 prototypes: Optional[dict[str, Sequence[str]]] = None,
                 threshold: float = 0.35, into: Optional[list[dict[str, Any]]] = None,
                 states: bool = True) -> list[dict[str, Any]]:
        """Feature dicts of one sentence, to merge into the user's own.

        Parameters
        ----------
        words : list of str
        context : int, default 1
            Cluster ids (and HMM states) of the neighbours up to this offset too.
        vectors : bool, default True
            The current word's vector dimensions, times ``scale``.
        scale : float, default 6.0
            Length of the vector features (:data:`DEFAULT_VECTOR_SCALE`).
        prototypes : dict of label -> list of str, optional
            Prototype words per label (Haghighi & Klein 2006).
        threshold : float, default 0.35
            Cosine at or above which a prototype fires.
        into : list of dict, optional
            The sentence's own feature dicts: updated in place and returned
            (cheaper than merging two dicts per token).
        states : bool, default True
            The HMM states of the word and its neighbours (with
            ``hmm_states``).

        Returns
        -------
        list of dict
            Keys as the class notes give them.
        """
        check_integer(context, "context", 0, 100)
        check_number(scale, "scale", 0)
        rows = self._rows(words)
        n = len(words)
        if into is not None and (not isinstance(into, list) or len(into) != n
                                 or not all(isinstance(f, dict) for f in into)):
            raise SscrfTypeError(f"into must be a list of {n} dicts, one per word")
        shapes = self._shapes(words, rows)
        values = [self._cluster_values(c, r) for c, r in zip(shapes, rows)]
        proto = None if prototypes is None else self._prototypes(prototypes)
        if proto is not None and len(proto[0]) and any(r >= 0 for r in rows):
            known = [r for r in rows if r >= 0]
            sims = iter(np.einsum("id,pd->ip", self.vectors_[known], proto[1]).tolist())
        else:
            proto = None
        decoded = self._states(rows, shapes) if states else []
        # each position's cluster ids then states (one per HMM), padded with
        # "<s>" / "</s>" beyond the sentence; a token's values are those of
        # its window, offsets -context to +context, in the order of the keys
        width = len(self.clusters) + len(decoded)
        padded = ([("<s>",) * width] * context
                  + ([v + s for v, s in zip(values, zip(*decoded))] if decoded else values)
                  + [("</s>",) * width] * context)
        if context == 0:
            windows = padded
        elif context == 1:  # one dict update a token, not one per offset
            windows = [a + b + c for a, b, c in zip(padded, padded[1:], padded[2:])]
        else:
            windows = [sum(padded[i:i + 2 * context + 1], ()) for i in range(n)]
        keys = self._context_keys(context, bool(decoded))
        vector_of = self._vector_cache(float(scale)) if vectors else None
        out = []
        for i, r in enumerate(rows):
            if into is None:
                f: dict[str, Any] = {}
            else:
                f = into[i]
            f.update(zip(keys, windows[i]))
            if vector_of is not None and r >= 0:
                vector = vector_of.get(r)
                if vector is None:
                    vector = self._vector(r, float(scale), vector_of)
                f[VECTOR_KEY] = vector
            if proto is not None and r >= 0:
                for label_name, cosine in zip(proto[0], next(sims)):
                    if cosine >= threshold:
                        f[f"rep.proto[{label_name}]"] = 1.0
            out.append(f)
        return out if into is None else into

    #: Words whose vector feature is cached, for one ``scale`` at a time.
    _VECTOR_CACHE_WORDS = 1 << 15

    def _vector_cache(self, scale: float) -> dict[int, NDArray[Any]]:
        caches = self._vector_caches
        cache = caches.get(scale)
        if cache is None:
            caches.clear()  # one setting at a time
            cache = caches[scale] = {}
        return cache

    def _vector(self, r: int, scale: float, cache: dict[int, NDArray[Any]]) -> NDArray[Any]:
        """The vector feature of the word of row r: one array, not a key per
        dimension; the extractor reads it in C++ (tagging with 100 dimensions
        took 3x the time without them)."""
        vector = np.asarray(self.vectors_[r] * scale, dtype=np.float64)
        vector.flags.writeable = False  # shared by every token of the word
        if len(cache) >= self._VECTOR_CACHE_WORDS:
            cache.clear()
        cache[r] = vector
        return vector

    def _context_keys(self, context: int, states: bool) -> tuple[str, ...]:
        """The keys of a token's window: per offset -context to +context, the
        cluster ids and (with ``states``) the HMM states there. Made once: the
        extractor caches ids by the str objects of a (key, value) pair."""
        keys = self._key_cache.get((context, states))
        if keys is None:
            M = len(self._hmm_kernels) if states else 0
            keys = self._key_cache[(context, states)] = tuple(
                [key for d in range(-context, context + 1)
                 for key in [f"rep.c{k}[{d:+d}]" if d else f"rep.c{k}[0]" for k in self.clusters]
                 + [f"rep.h{m}[{d:+d}]" if d else f"rep.h{m}[0]" for m in range(M)]])
        return keys

    def _prototypes(self, prototypes: dict[str, Sequence[str]]
                    ) -> tuple[list[str], NDArray[Any]]:
        """(labels, the best-matching prototype vectors) of a prototype dict:
        per label, a row per known prototype word; a label's feature fires on
        the largest cosine, so the rows of one label are kept apart."""
        if not isinstance(prototypes, dict):
            raise SscrfTypeError("prototypes must be a dict of label -> list of words")
        key = tuple((str(k), tuple(v)) for k, v in prototypes.items())
        cached = self._prototype_cache.get(key)
        if cached is not None:
            return cached
        labels, rows, unknown, empty = [], [], [], []
        for label, words in prototypes.items():
            if isinstance(words, str):
                raise SscrfTypeError(f"prototypes[{label!r}] must be a list of words, not a str")
            words = list(words)
            known = 0
            for word, r in zip(words, self._rows(words)):
                if r >= 0:
                    labels.append(str(label))
                    rows.append(r)
                    known += 1
                else:
                    unknown.append(repr(word))
            if known == 0:
                empty.append(repr(label))
        if unknown or empty:  # said once: the result is cached
            said = []
            if unknown:
                shown = ", ".join(unknown[:5]) + (", ..." if len(unknown) > 5 else "")
                said.append(f"{len(unknown)} word(s) without a vector are left out ({shown})")
            if empty:
                said.append(f"no prototype of {', '.join(empty)} is left, so its feature "
                            "never fires")
            warnings.warn("prototypes: " + "; ".join(said), UserWarning, stacklevel=3)
        matrix = self.vectors_[rows] if rows else np.zeros((0, self.vectors_.shape[1]))
        # one feature per label: rows of a label share its name, and a dict
        # keeps one entry per name
        result = (labels, matrix)
        self._prototype_cache[key] = result
        return result

    # -- files -------------------------------------------------------------------------

    def save(self, path: _Path) -> None:
        """Write the fitted representations to ``path`` (atomically; the model
        container of :mod:`sscrf.serialization`: magic, version, JSON header,
        raw arrays, SHA-256; no pickle)."""
        self._check_fitted()
        meta = {"kind": REPRESENTATIONS_KIND,
                "params": {"dim": int(self.dim), "clusters": [int(k) for k in self.clusters],
                           "cluster_dim": None if self.cluster_dim is None
                           else int(self.cluster_dim),
                           "window": int(self.window), "min_count": int(self.min_count),
                           "max_vocabulary": int(self.max_vocabulary),
                           "random_state": self.random_state if self.random_state is None
                           else int(self.random_state),
                           "hmm_states": int(self.hmm_states), "hmms": int(self.hmms),
                           "hmm_passes": int(self.hmm_passes),
                           "hmm_support": int(self.hmm_support),
                           "hmm_decoding": self.hmm_decoding},
                "vocabulary": list(self.vocabulary_), "n_tokens": self.n_tokens_}
        arrays = {"counts": self.counts_.astype(np.int64),
                  "vectors": self.vectors_.astype(np.float64),
                  "clusters": self.clusters_.astype(np.int32)}
        if self.hmms_:
            meta["hmm_shapes"] = list(self.hmm_shapes_)
            meta["hmm_log_likelihood"] = [float(x) for x in self.hmm_log_likelihood_]
            for part in hidden_states.HiddenMarkovModel._fields:
                arrays[f"hmm_{part}"] = np.stack([getattr(h, part) for h in self.hmms_])
        serialization.save(path, meta, arrays)

    @classmethod
    def load(cls, path: _Path) -> WordRepresentations:
        """Read representations written by :meth:`save`; every problem is an
        SscrfError naming the file."""
        meta, arrays = serialization.load(path, kind="word-representations")
        name = os.fspath(path)
        try:
            if meta.get("kind") != REPRESENTATIONS_KIND:
                raise SscrfError("not a word-representations file (a model? give the file "
                                 "'sscrf represent' wrote)")
            params = meta["params"]
            rep = cls(dim=params["dim"], clusters=tuple(params["clusters"]),
                      window=params["window"], min_count=params["min_count"],
                      max_vocabulary=params["max_vocabulary"],
                      random_state=params["random_state"],
                      cluster_dim=params.get("cluster_dim"),
                      hmm_states=params.get("hmm_states", 0), hmms=params.get("hmms", 3),
                      hmm_passes=params.get("hmm_passes", 3),
                      hmm_support=params.get("hmm_support", params.get("hmm_states", 0) or 24),
                      # files from before Viterbi decoding decoded posteriors
                      hmm_decoding=params.get("hmm_decoding", "posterior"))
            rep._check_params()
            vocabulary = meta["vocabulary"]
            if not isinstance(vocabulary, list) or not all(isinstance(w, str)
                                                           for w in vocabulary):
                raise SscrfError("the vocabulary must be a list of str")
            if len(set(vocabulary)) != len(vocabulary):
                raise SscrfError("the vocabulary repeats a word")
            V = len(vocabulary)
            vectors, clusters, counts = arrays["vectors"], arrays["clusters"], arrays["counts"]
            if (vectors.dtype != np.float64 or vectors.ndim != 2 or vectors.shape[0] != V
                    or not 1 <= vectors.shape[1] <= rep.dim):
                raise SscrfError(f"vectors must be float64 of shape ({V}, <= {rep.dim})")
            if not np.isfinite(vectors).all():
                raise SscrfError("non-finite vectors")
            if clusters.dtype != np.int32 or clusters.shape != (V, len(rep.clusters)):
                raise SscrfError(f"clusters must be int32 of shape ({V}, {len(rep.clusters)})")
            if counts.dtype != np.int64 or counts.shape != (V,):
                raise SscrfError(f"counts must be int64 of shape ({V},)")
            for j, k in enumerate(rep.clusters):
                if V and (clusters[:, j].min() < 0 or clusters[:, j].max() >= k):
                    raise SscrfError(f"cluster ids at granularity {k} must lie in [0, {k})")
            if not isinstance(meta["n_tokens"], int):
                raise SscrfError("n_tokens must be an integer")
            hmms, shapes, log_likelihood = _loaded_hmms(rep, meta, arrays, vocabulary)
        except SscrfError as e:
            raise SscrfError(f"{name}: invalid word-representations file: {e}") from None
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise SscrfError(f"{name}: invalid word-representations file: {e!r}") from None
        rep.vocabulary_ = vocabulary
        rep.vectors_, rep.clusters_, rep.counts_ = vectors, clusters, counts
        rep.n_tokens_ = meta["n_tokens"]
        rep.hmms_, rep.hmm_shapes_, rep.hmm_log_likelihood_ = hmms, shapes, log_likelihood
        rep._index()
        return rep


def _loaded_hmms(rep: WordRepresentations, meta: dict[str, Any], arrays: dict[str, Any],
                 vocabulary: list[str]) -> tuple[list[Any], list[str], list[float]]:
    """The HMMs of a representations file, checked (SscrfError saying what is wrong).
    Files whose HMMs are dense log-probabilities (``hmm_log_*``) load as HMMs in which
    every state emits every symbol."""
    names = [f"hmm_{part}" for part in hidden_states.HiddenMarkovModel._fields]
    dense = [f"hmm_log_{part}" for part in ("start", "transitions", "emissions")]
    if not rep.hmm_states:
        if any(name in arrays for name in names + dense):
            raise SscrfError("HMM arrays without hmm_states")
        return [], [], []
    shapes, log_likelihood = meta["hmm_shapes"], meta["hmm_log_likelihood"]
    if not isinstance(shapes, list) or not all(isinstance(c, str) for c in shapes):
        raise SscrfError("hmm_shapes must be a list of str")
    if len(set(shapes)) != len(shapes):
        raise SscrfError("hmm_shapes repeats a shape class")
    if (not isinstance(log_likelihood, list) or len(log_likelihood) != rep.hmms
            or not all(isinstance(x, float) for x in log_likelihood)):
        raise SscrfError(f"hmm_log_likelihood must be a list of {rep.hmms} floats")
    K, M = rep.hmm_states, rep.hmms
    n_symbols = len(vocabulary) + len(shapes) + 1
    if dense[0] in arrays:
        dense_shapes = {dense[0]: (M, K), dense[1]: (M, K, K), dense[2]: (M, n_symbols, K)}
        for name, shape in dense_shapes.items():
            a = arrays[name]
            if a.dtype != np.float64 or a.shape != shape:
                raise SscrfError(f"{name} must be float64 of shape {shape}")
        full_ptr = np.arange(0, n_symbols * K + 1, K, dtype=np.int64)
        full = np.tile(np.arange(K, dtype=np.int32), n_symbols)
        parts = [(np.exp(arrays[dense[0]][m]), np.exp(arrays[dense[1]][m]), full_ptr, full,
                  np.exp(arrays[dense[2]][m]).ravel()) for m in range(M)]
    else:
        n_entries = arrays["hmm_support"].shape[-1]
        expected: dict[str, tuple[Any, tuple[int, ...]]] = {
                    "hmm_start": (np.float64, (M, K)),
                    "hmm_transitions": (np.float64, (M, K, K)),
                    "hmm_support_ptr": (np.int64, (M, n_symbols + 1)),
                    "hmm_support": (np.int32, (M, n_entries)),
                    "hmm_emission": (np.float64, (M, n_entries))}
        for name, (dtype, shape) in expected.items():
            a = arrays[name]
            if a.dtype != dtype or a.shape != shape:
                raise SscrfError(f"{name} must be {np.dtype(dtype)} of shape {shape}")
        parts = [tuple(arrays[name][m] for name in names) for m in range(M)]
    hmms = []
    for m, part in enumerate(parts):
        hmm = hidden_states.HiddenMarkovModel(*part)
        try:
            hmm.kernel()
        except SscrfError as e:
            raise SscrfError(f"HMM {m}: {e}") from None
        hmms.append(hmm)
    return hmms, shapes, log_likelihood


class WordVectors:
    """Word vectors for template features (``CRF(templates=..., word_vectors=...)``).

    Each token whose word (token column ``column``) has a vector gets the
    attributes ``rep.v0`` ... ``rep.v{dim-1}`` with the vector's entries
    times ``scale``: the same attributes and values as
    :meth:`WordRepresentations.features` gives under ``"rep.v"``, so that
    template users and the command line get the vectors too. The cluster ids
    come as extra columns (:meth:`WordRepresentations.columns`) read by
    templates.

    A model saved with them records the setting and a SHA-256 of the
    vocabulary and vectors, not the vectors: after loading, give them back
    with :meth:`sscrf.CRF.bind_word_vectors` (``sscrf tag`` does it from the
    file training read).

    Parameters
    ----------
    representations : WordRepresentations
        Fitted.
    column : int, default 0
    scale : float, default 6.0

    Attributes
    ----------
    spec : dict
        ``name``, ``column``, ``scale``, ``dim`` and ``sha256``, as model
        files store it.
    table : ndarray of float64, shape (n_words, dim)
        The scaled vectors.
    """

    def __init__(self, representations: WordRepresentations, column: int = 0,
                 scale: float = DEFAULT_VECTOR_SCALE) -> None:
        if not isinstance(representations, WordRepresentations):
            raise SscrfTypeError(f"representations must be a WordRepresentations, not "
                                 f"{type(representations).__name__}")
        representations._check_fitted()
        check_integer(column, "column", 0, 1000)
        check_number(scale, "scale", 0)
        if not scale > 0:
            raise SscrfError("scale must be above 0 (no vectors: no word_vectors)")
        self.representations = representations
        self.column = int(column)
        self.scale = float(scale)
        # the product features() makes per word, so that the values are the same
        self.table = np.asarray(representations.vectors_ * self.scale, dtype=np.float64)
        self.table.flags.writeable = False
        digest = hashlib.sha256()
        digest.update("\n".join(representations.vocabulary_).encode("utf-8", "surrogatepass"))
        digest.update(np.ascontiguousarray(representations.vectors_, dtype=np.float64).tobytes())
        self.spec = {"name": VECTOR_KEY, "column": self.column, "scale": self.scale,
                     "dim": int(self.table.shape[1]), "sha256": digest.hexdigest()}

    def rows(self, words: Sequence[str]) -> NDArray[np.int64]:
        """Each word's row of :attr:`table` (its lower-cased form's if it has none
        of its own; -1: no vector)."""
        return np.array(self.representations._rows(words), dtype=np.int64)

    def __deepcopy__(self, memo: dict[int, Any]) -> WordVectors:
        # read-only: scikit-learn's clone (a deep copy of each parameter) shares
        # it rather than copying the vectors for every fit of a search
        return self

    def __repr__(self) -> str:
        return (f"<WordVectors: {self.spec['dim']} dimensions of {len(self.table)} words, "
                f"column {self.column}, scale {self.scale:g}>")


def _check_decoding(decoding: Any) -> str:
    """``hmm_decoding``, refused unless one of :data:`HMM_DECODINGS`."""
    if decoding not in HMM_DECODINGS:
        raise SscrfError(f"hmm_decoding must be one of {', '.join(HMM_DECODINGS)}, not "
                         f"{decoding!r}")
    return str(decoding)


def _differs(value: Any, default: Any) -> bool:
    """Whether a setting is not its default (an array, compared elementwise, always is)."""
    try:
        return bool(value != default)
    except (TypeError, ValueError):
        return True


# -- the numerical steps ----------------------------------------------------------------


def _unit_rows(X: NDArray[Any]) -> NDArray[Any]:
    norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    return X / np.where(norms > 0, norms, 1.0)[:, None]


def _orthonormal(Y: NDArray[Any], n_threads: int, passes: int = 2) -> NDArray[Any]:
    """An orthonormal basis of Y's columns: Y's Gram matrix is diagonalised
    (l x l, Jacobi in the core), Y times V Λ^-½; twice for accuracy (a
    Cholesky-QR2 by eigenvectors, which also drops null directions), once
    between power iterations, where only the spanned subspace matters."""
    for _ in range(passes):
        G = _core.gram_matrix(Y, n_threads)
        lam, V = _core.symmetric_eigen(G)
        ok = lam > lam.max() * 1e-12 if lam.size and lam.max() > 0 else np.zeros(len(lam), bool)
        Y = _core.times_small(Y, np.ascontiguousarray(V[:, ok] / np.sqrt(lam[ok])), n_threads)
    return Y


def _csr_times(A: Any, B: NDArray[Any], n_threads: int) -> NDArray[Any]:
    return _core.csr_times_dense(A.indptr.astype(np.int64), A.indices.astype(np.int32),
                                 A.data, np.ascontiguousarray(B), n_threads)


def _randomized_svd_vectors(A: Any, dim: int, rng: np.random.Generator, n_threads: int
                            ) -> NDArray[Any]:
    """The leading left singular vectors of A times Σ^p, p = _EIGENVALUE_WEIGHT
    (Halko et al. 2011, algorithm 4.4 with q = 2 power iterations, then 5.1
    through A^T Q)."""
    At = A.T.tocsr()
    At.sort_indices()
    l = min(dim + _OVERSAMPLING, A.shape[0])
    Omega = rng.standard_normal((A.shape[1], l))
    Q = _orthonormal(_csr_times(A, Omega, n_threads), n_threads)
    for i in range(_POWER_ITERATIONS):
        Z = _orthonormal(_csr_times(At, Q, n_threads), n_threads, passes=1)
        Q = _orthonormal(_csr_times(A, Z, n_threads), n_threads,
                         passes=2 if i == _POWER_ITERATIONS - 1 else 1)
    Z = _csr_times(At, Q, n_threads)  # (A^T Q): B = Q^T A = Z^T
    lam, U = _core.symmetric_eigen(_core.gram_matrix(Z, n_threads))  # B B^T = U Σ² U^T
    k = min(dim, len(lam))
    lam, U = np.maximum(lam[:k], 0.0), U[:, :k]
    # an eigenvector's sign is arbitrary: its largest entry is made positive
    U *= np.where(U[np.abs(U).argmax(axis=0), np.arange(U.shape[1])] < 0, -1.0, 1.0)
    weights = lam ** (_EIGENVALUE_WEIGHT / 2)  # Σ^p with Σ = λ^½
    return _core.times_small(Q, np.ascontiguousarray(U * weights), n_threads)


def _allocate(sizes: Any, total: int) -> NDArray[np.int64]:
    """Children per parent cluster: about proportional to its size, at least
    one, at most its size, summing to ``total`` (largest remainders first)."""
    sizes = np.asarray(sizes, dtype=np.int64)
    total = int(min(total, sizes.sum()))
    share = sizes * (total / max(sizes.sum(), 1))
    m = np.clip(np.floor(share).astype(np.int64), 1, sizes)
    order = np.argsort(-(share - np.floor(share)), kind="stable")
    while m.sum() < total:
        grew = False
        for p in order:
            if m.sum() >= total:
                break
            if m[p] < sizes[p]:
                m[p] += 1
                grew = True
        if not grew:
            break
    while m.sum() > total:
        p = int(np.argmax(m))
        m[p] -= 1
    return m


def _nested_kmeans(X: NDArray[Any], ks: Sequence[int], rng: np.random.Generator,
                   n_threads: int) -> NDArray[np.int32]:
    """Cluster ids (n, len(ks)) at each granularity, each refining the last:
    spherical k-means over all words at ks[0], then within each cluster."""
    n = X.shape[0]
    out = np.zeros((n, len(ks)), dtype=np.int32)
    parent = np.zeros(n, dtype=np.int64)
    for level, k in enumerate(ks):
        # a cluster left empty by k-means has no children: parents renumbered
        parent = np.unique(parent, return_inverse=True)[1].astype(np.int64).ravel()
        n_parents = int(parent.max()) + 1 if n else 1
        sizes = np.bincount(parent, minlength=n_parents)
        children = _allocate(sizes, k)
        group_ptr = np.concatenate([[0], np.cumsum(children)]).astype(np.int64)
        # initial centroids: distinct words of each parent, drawn at random
        members = np.argsort(parent, kind="stable")
        starts = np.concatenate([[0], np.cumsum(sizes)])
        picks = [members[starts[p] + rng.choice(sizes[p], children[p], replace=False)]
                 for p in range(n_parents)]
        C = np.ascontiguousarray(X[np.concatenate(picks)])
        assign: Any = None  # the last assignment: set by the first iteration
        for _ in range(_KMEANS_ITERATIONS):
            new = _core.nearest_centroids(X, C, parent, group_ptr, n_threads)
            if assign is not None and np.array_equal(new, assign):
                break
            assign = new
            order = np.argsort(assign, kind="stable")
            counts = np.bincount(assign, minlength=len(C))
            filled = counts > 0  # an empty cluster keeps its centroid
            starts = np.concatenate([[0], np.cumsum(counts)[:-1]])[filled]
            C = C.copy()
            C[filled] = _unit_rows(np.add.reduceat(X[order], starts, axis=0))
        out[:, level] = assign
        parent = assign.astype(np.int64)
    return out
