"""Decoding with a fitted model: Viterbi, marginals, N-best, probabilities and entropies.

A :class:`Decoder` holds a fitted model's parts (vocabulary, labels,
parameter layout, θ and a thread count) and runs the compiled corpus kernels
on sentences, optionally restricted by annotations (``allowed``: per-token
label sets or :class:`sscrf.annotations.Alternatives`). Alternatives that
node and edge masks over-approximate are decoded exactly afterwards, by
scoring each listed labeling.
"""

from __future__ import annotations

from typing import Any, Iterator, Optional, Sequence

import numpy as np
from numpy.typing import NDArray

from . import _core, lattice
from .annotations import corpus_masks, sentence_masks
from .corpus import compile_corpus, subset_features
from .corpus_file import CompiledCorpus
from .errors import SscrfError, SscrfTypeError
from .inputs import check_integer, check_labeled, check_sentences, encode_labels
from .layout import ParameterLayout

__all__ = ["Decoder", "labelings_with_log_p"]

#: Unconstrained tagging, marginals, probabilities and entropies of sentences
#: run this many tokens at a time (whole sentences):
#: the memory of a chunk's features is reused by the next instead of every
#: page of one corpus-sized matrix being faulted in fresh (a fifth of
#: tagging with 100-dimension word vectors, 130 entries a token), and it
#: bounds the memory of tagging a large corpus.
TAG_CHUNK_TOKENS = 1 << 14


def _sentence_chunks(X: Sequence[Any], size: int) -> Iterator[tuple[int, int]]:
    """``(begin, end)`` of consecutive runs of whole sentences of at most ``size`` tokens (a
    longer sentence alone); one empty run for no sentences."""
    begin = tokens = 0
    for i, sentence in enumerate(X):
        n = len(sentence) if hasattr(sentence, "__len__") else 0
        if i > begin and tokens + n > size:
            yield begin, i
            begin, tokens = i, 0
        tokens += n
    yield begin, len(X)


def labelings_with_log_p(paths: NDArray[Any], scores: NDArray[Any], log_z: float,
                         classes: Sequence[str]) -> list[tuple[list[str], float]]:
    """``(labels, log p)`` of lattice.nbest's paths and scores under log Z."""
    # log p <= 0: rounding can put a near-certain labeling's score above log Z
    return [([classes[i] for i in path], min(0.0, float(score - log_z)))
            for path, score in zip(paths.tolist(), scores.tolist())]


def _check_allowed(allowed: Any, X: Sequence[Any]) -> list[Any]:
    if isinstance(allowed, (str, bytes, dict)) or not hasattr(allowed, "__len__"):
        raise SscrfTypeError(f"allowed must be a list with one entry per sentence, "
                             f"not {type(allowed).__name__}")
    allowed = list(allowed)
    if len(allowed) != len(X):
        raise SscrfError(f"X has {len(X)} sentences but allowed has {len(allowed)}")
    return allowed


class Decoder:
    """The decoding side of a fitted CRF.

    Parameters
    ----------
    extractor : sscrf.features.FeatureExtractor
        The frozen vocabulary.
    classes : list of str
        The labels, S of them.
    layout : sscrf.layout.ParameterLayout
    coef : ndarray (layout.size,)
        θ.
    n_threads : int
    """

    def __init__(self, extractor: Any, classes: Sequence[str], layout: ParameterLayout,
                 coef: NDArray[np.float64], n_threads: int) -> None:
        self.extractor, self.classes, self.layout = extractor, list(classes), layout
        self.coef, self.n_threads = coef, n_threads
        self.label_index = {label: i for i, label in enumerate(self.classes)}

    # -- compiling ------------------------------------------------------------------

    def features(self, X: Any) -> Any:
        """The Features of sentences ``X``, or of a
        :class:`~sscrf.corpus_file.CompiledCorpus` under this model's vocabulary."""
        if isinstance(X, CompiledCorpus):
            return X.features_for(self.extractor)
        return self.extractor.transform(check_sentences(X, "X"))

    def compile(self, X: Any) -> tuple[Any, NDArray[np.int64]]:
        """The corpus of :meth:`features` ``X`` and its sentence offsets."""
        features = self.features(X)
        return compile_corpus(features), np.asarray(features.offsets)

    def _constrained(self, X: Sequence[Any], allowed: Optional[Sequence[Any]]
                     ) -> tuple[Any, NDArray[np.int64], Any, dict[int, Any]]:
        """Corpus, offsets, features and the inexact alternatives (dict s → SentenceMasks)
        of ``X`` under ``allowed`` (None: unconstrained)."""
        if allowed is None:
            corpus, offsets = self.compile(X)
            return corpus, offsets, None, {}
        X = check_sentences(X, "X")
        allowed = _check_allowed(allowed, X)
        features = self.extractor.transform(X)
        node, edge, inexact = corpus_masks(allowed, np.diff(features.offsets), self.label_index)
        return compile_corpus(features, mask=node, edge_mask=edge), features.offsets, features, \
            inexact

    def _exact_alternatives(self, features: Any, inexact: dict[int, Any]
                            ) -> dict[int, tuple[NDArray[np.int32], NDArray[np.float64]]]:
        """Per inexact sentence, the alternatives' label ids (K, n) and log p(y_k | x)."""
        out: dict[int, tuple[NDArray[np.int32], NDArray[np.float64]]] = {}
        if not inexact:
            return out
        sentences = sorted(inexact)
        repeats = [s for s in sentences for _ in range(len(inexact[s].alternatives))]
        sub, _ = subset_features(features, repeats)
        labels = np.concatenate([row for s in sentences for row in inexact[s].alternatives])
        corpus = compile_corpus(sub, labels=labels.astype(np.int32))
        lp = _core.log_probability_corpus(corpus, self.layout.core, self.coef, self.n_threads)
        k = 0
        for s in sentences:
            K = len(inexact[s].alternatives)
            out[s] = (inexact[s].alternatives, lp[k:k + K])
            k += K
        return out

    # -- decoding ---------------------------------------------------------------------

    def viterbi(self, X: Sequence[Any], allowed: Optional[Sequence[Any]] = None
                ) -> list[list[str]]:
        """Per sentence, the best labeling (among those ``allowed``), as label strings."""
        if allowed is None and not isinstance(X, CompiledCorpus):
            return self._viterbi_chunked(check_sentences(X, "X"))
        corpus, offsets, features, inexact = self._constrained(X, allowed)
        labels, _ = _core.viterbi_corpus(corpus, self.layout.core, self.coef, self.n_threads)
        for s, (ids, lp) in self._exact_alternatives(features, inexact).items():
            labels[offsets[s]:offsets[s + 1]] = ids[int(np.argmax(lp))]
        names = np.asarray(self.classes, dtype=object)[labels]
        return [list(names[offsets[s]:offsets[s + 1]]) for s in range(len(offsets) - 1)]

    def _chunks(self, X: list[Any]) -> Iterator[Any]:
        """The features of ``X``, ``TAG_CHUNK_TOKENS`` tokens at a time (whole sentences)."""
        for begin, end in _sentence_chunks(X, TAG_CHUNK_TOKENS):
            try:
                features = self.extractor.transform(X[begin:end])
            except SscrfError:
                if begin:  # raised again by the whole of X, to name the sentence by its index
                    self.extractor.transform(X)
                raise
            yield features

    def _viterbi_chunked(self, X: list[Any]) -> list[list[str]]:
        """:meth:`viterbi` without ``allowed``, a chunk at a time."""
        names = np.asarray(self.classes, dtype=object)
        out: list[list[str]] = []
        for features in self._chunks(X):
            labels, _ = _core.viterbi_corpus(compile_corpus(features), self.layout.core,
                                             self.coef, self.n_threads)
            offsets, tags = features.offsets, names[labels]
            out.extend(list(tags[offsets[s]:offsets[s + 1]]) for s in range(len(offsets) - 1))
        return out

    def _per_chunk(self, X: list[Any], kernel: Any
                   ) -> tuple[list[NDArray[Any]], NDArray[np.int64]]:
        """``kernel(corpus)``'s arrays over ``X`` a chunk at a time, each joined over the
        chunks, and the sentence offsets."""
        parts: list[list[NDArray[Any]]] = []
        offsets = [np.zeros(1, dtype=np.int64)]
        for features in self._chunks(X):
            parts.append(list(kernel(compile_corpus(features))))
            offsets.append(np.asarray(features.offsets[1:], dtype=np.int64) + offsets[-1][-1])
        return [np.concatenate(column) for column in zip(*parts)], np.concatenate(offsets)

    def marginals(self, X: Sequence[Any], allowed: Optional[Sequence[Any]] = None
                  ) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
        """Node marginals (n_tokens, S) of ``p(y | x, y allowed)`` and the sentence offsets."""
        if allowed is None and not isinstance(X, CompiledCorpus):
            (node,), offsets = self._per_chunk(check_sentences(X, "X"), lambda c: (
                _core.marginals_corpus(c, self.layout.core, self.coef, self.n_threads)[0],))
            return node, offsets
        corpus, offsets, features, inexact = self._constrained(X, allowed)
        node, _ = _core.marginals_corpus(corpus, self.layout.core, self.coef, self.n_threads)
        for s, (ids, lp) in self._exact_alternatives(features, inexact).items():
            q = np.exp(lp - lp.max())
            rows = np.zeros((ids.shape[1], len(self.classes)))
            for k in range(len(ids)):
                rows[np.arange(ids.shape[1]), ids[k]] += q[k] / q.sum()
            node[offsets[s]:offsets[s + 1]] = rows
        return node, offsets

    def log_probability(self, X: Sequence[Any], y: Optional[Sequence[Sequence[str]]] = None
                        ) -> NDArray[np.float64]:
        """log p(y | x) per sentence (n_sentences,), of the Viterbi labelings when y is None."""
        core = self.layout.core
        if isinstance(X, CompiledCorpus):
            features = self.features(X)
            if y is None:
                labels, _ = _core.viterbi_corpus(compile_corpus(features), core, self.coef,
                                                 self.n_threads)
            else:
                lengths = np.diff(np.asarray(features.offsets)).tolist()
                _, y = check_labeled([range(n) for n in lengths], y, allow_empty_sentences=True)
                labels = encode_labels(y, self.label_index)
            return _core.log_probability_corpus(compile_corpus(features, labels=labels), core,
                                                self.coef, self.n_threads)
        if y is None:
            out = []
            for features in self._chunks(check_sentences(X, "X")):
                # the Viterbi labels as ids, on the features extracted once
                labels, _ = _core.viterbi_corpus(compile_corpus(features), core, self.coef,
                                                 self.n_threads)
                corpus = compile_corpus(features, labels=labels)
                out.append(_core.log_probability_corpus(corpus, core, self.coef,
                                                        self.n_threads))
            return np.concatenate(out)
        X, y = check_labeled(X, y, allow_empty_sentences=True)
        features = self.extractor.transform(X)
        corpus = compile_corpus(features, labels=encode_labels(y, self.label_index))
        return _core.log_probability_corpus(corpus, core, self.coef, self.n_threads)

    def entropies(self, X: Sequence[Any]) -> tuple[NDArray[np.float64], NDArray[np.float64],
                                                  NDArray[np.float64], NDArray[np.int64]]:
        """Sequence entropies (n_sentences,), token entropies and transition entropies
        (n_tokens,) (``_core.entropy_corpus``), and the sentence offsets."""
        if not isinstance(X, CompiledCorpus):
            (seq, token, transition), offsets = self._per_chunk(
                check_sentences(X, "X"),
                lambda c: _core.entropy_corpus(c, self.layout.core, self.coef, self.n_threads))
            return seq, token, transition, offsets
        corpus, offsets = self.compile(X)
        seq, token, transition = _core.entropy_corpus(corpus, self.layout.core, self.coef,
                                                      self.n_threads)
        return seq, token, transition, offsets

    def most_uncertain_span(self, X: Sequence[Any], width: int
                            ) -> list[tuple[int, int, float]]:
        """Per sentence, ``(begin, stop, entropy)`` of the ``width`` tokens whose labels are
        most uncertain (see :meth:`sscrf.CRF.most_uncertain_span`)."""
        width = check_integer(width, "width", minimum=1)
        _, token, transition, offsets = self.entropies(X)
        out = []
        for s in range(len(offsets) - 1):
            a, b = offsets[s], offsets[s + 1]
            n = b - a
            if n == 0:
                out.append((0, 0, 0.0))
                continue
            w = min(width, n)
            spans = lattice.spans_from_lattices(token[a:b], transition[a:b], w)
            i = int(np.argmax(spans))
            out.append((i, i + w, float(spans[i])))
        return out

    # -- N-best ---------------------------------------------------------------------

    def emissions(self, features: Any) -> NDArray[np.float64]:
        """``E = X · W`` (n_tokens, S) of compiled-feature rows, scored by the core."""
        return _core.emissions_corpus(compile_corpus(features), self.layout.core, self.coef,
                                      self.n_threads)

    def nbest(self, X: Sequence[Any], k: int, allowed: Optional[Sequence[Any]] = None
              ) -> list[list[tuple[list[str], float]]]:
        """Per sentence, up to k ``(labels, log p(labels | x))``, best first (see
        :meth:`sscrf.CRF.predict_nbest`); ``allowed`` restricts the labelings."""
        k = check_integer(k, "k", minimum=1)
        if allowed is not None:
            _, offsets, features, inexact = self._constrained(X, allowed)
            allowed = list(allowed)
        else:
            features, inexact = self.features(X), {}
            offsets = features.offsets
        E = self.emissions(features)
        _, T, start, end = self.layout.split(np.asarray(self.coef, dtype=np.float64))
        exact = self._exact_alternatives(features, inexact)
        out = []
        for s in range(len(offsets) - 1):
            Es = E[offsets[s]:offsets[s + 1]]
            log_z = lattice.log_partition(Es, T, start, end)
            if s in exact:
                ids, lp = exact[s]
                order = sorted(range(len(lp)), key=lambda i: (-lp[i], tuple(ids[i])))[:k]
                out.append([([self.classes[i] for i in ids[j]], float(lp[j])) for j in order])
                continue
            if allowed is None or allowed[s] is None:
                mask = edge = None
            else:
                m = sentence_masks(allowed[s], self.label_index, f"allowed[{s}]")
                mask, edge = m.node, (None if m.edge is None else m.edge[1:])
            paths, scores = lattice.nbest(Es, T, k, start, end, mask, edge)
            out.append(labelings_with_log_p(paths, scores, log_z, self.classes))
        return out
