"""Active learning: sentence selectors, quota sampling, an n-gram q(x) and the pool loop.

What is here, and where it comes from:

- :data:`SELECTORS` and :func:`select`: rank the sentences of a pool by how
  useful their labels would be, best first. ``random``; ``least_confidence``
  ``1 − p(ŷ | x)`` with ŷ the Viterbi path (FuSAL's utility, Sokolovska 2011
  eq. 19); ``sequence_entropy``, the exact ``H(Y | x)``; ``token_entropy``,
  the sum or mean of the marginal entropies ``H(Y_t | x)``;
  ``most_uncertain_span``, the span of a given width whose posterior label
  entropy is largest (Mann & McCallum 2007 §5, Tsuboi et al. 2008 §5.1), for
  annotators who label spans rather than sentences; ``quota_sampling``
  (Sokolovska 2011 §5): sort the candidates by q(x), cut them into m groups
  of (nearly) equal size and draw one sentence uniformly from each, so rare
  and frequent inputs are both represented; it needs no model.
- :class:`NgramModel`: q(x) as an n-gram model of the input tokens (eq. 20),
  interpolated Witten-Bell smoothing, several input columns multiplied.
- :func:`sokolovska_weights`: the weights ``q(x)/N_x`` of the weighted
  likelihood (eq. 2 and 17), normalised to mean 1, for
  ``CRF.fit(..., sample_weight=)``.
- :class:`ActiveLearner`: the pool loop of Sokolovska's Algorithm 1 (query m
  sentences, get their labels, retrain with a warm start, until a budget in
  sentences or tokens or a stopping rule is met), and :func:`simulate`, which
  runs it against gold labels and records a learning curve.

Span answers (partial labels). A sentence whose labels are known only on a
span trains, by default (``partial="native"``), as itself with ``None``
labels outside the span: ``CRF.fit`` marginalises the unknown tokens (the
``partial_likelihood`` objective, Tsuboi et al. 2008). ``partial="fragments"``
instead trains on each maximal run of labeled tokens as a short sentence of
its own, an approximation kept for comparison (``bench/active_conll2000.py``):
the run's tokens keep their feature dicts (so window features computed from
the full sentence survive), but the transitions into and out of the run, the
start and end weights at its edges and, with templates, the context
attributes near its edges are those of a short sentence, not of the real
one. Only :func:`_partial_examples` differs between the two.
"""

import math
from collections import Counter
from collections.abc import Mapping
from numbers import Integral

import numpy as np

from .errors import SscrfError

__all__ = [
    "SELECTORS",
    "register_selector",
    "select",
    "NgramModel",
    "sokolovska_weights",
    "ActiveLearner",
    "gold_oracle",
    "simulate",
]

# -- selectors -------------------------------------------------------------------

#: name → selector function; each has attributes ``needs_model`` and ``spans``.
SELECTORS = {}


def register_selector(name, needs_model=True, spans=False):
    """Decorator adding a selector to :data:`SELECTORS` under ``name``.

    A selector is called ``fn(model, pool, m, log_q, rng, **options)`` and
    returns ``(indices, scores)``, at most ``m`` entries, best first;
    ``indices`` is an int array ``(k,)``, or ``(k, 3)`` rows ``(index, begin,
    stop)`` when ``spans`` is true.
    """

    def decorate(fn):
        if name in SELECTORS:
            raise ValueError(f"selector {name!r} is already registered")
        fn.needs_model = needs_model
        fn.spans = spans
        SELECTORS[name] = fn
        return fn

    return decorate


def _top(scores, m):
    """Indices of the ``m`` largest scores, best first; ties go to the lower index."""
    scores = np.asarray(scores, dtype=np.float64)
    order = np.lexsort((np.arange(len(scores)), -scores))[:m]
    return order.astype(np.int64), scores[order]


@register_selector("random", needs_model=False)
def _random(model, pool, m, log_q, rng):
    """m sentences drawn uniformly without replacement; the scores are the uniform keys."""
    return _top(rng.random(len(pool)), m)


@register_selector("least_confidence")
def _least_confidence(model, pool, m, log_q, rng):
    """``1 − p(ŷ | x)`` with ŷ the Viterbi labeling (FuSAL, Sokolovska 2011 eq. 19)."""
    return _top(-np.expm1(model.sequence_log_probability(pool)), m)


@register_selector("sequence_entropy")
def _sequence_entropy(model, pool, m, log_q, rng, normalize=False):
    """Exact ``H(Y | x)``; divided by the sentence length when ``normalize``."""
    h = np.asarray(model.sequence_entropy(pool), dtype=np.float64)
    if normalize:
        h = h / np.maximum([len(x) for x in pool], 1)
    return _top(h, m)


@register_selector("token_entropy")
def _token_entropy(model, pool, m, log_q, rng, aggregate="sum"):
    """``Σ_t H(Y_t | x)`` (``aggregate="sum"``) or its mean over tokens (``"mean"``)."""
    if aggregate not in ("sum", "mean"):
        raise SscrfError(f"token_entropy: aggregate must be 'sum' or 'mean', not {aggregate!r}")
    per_token = model.token_entropy(pool)
    reduce = np.sum if aggregate == "sum" else np.mean
    return _top([float(reduce(h)) if len(h) else 0.0 for h in per_token], m)


@register_selector("most_uncertain_span", spans=True)
def _most_uncertain_span(model, pool, m, log_q, rng, width=3, exclude=None):
    """The span of ``width`` tokens with the largest posterior label entropy, per sentence.

    Sentences are ranked by the entropy of their best span. A sentence
    shorter than ``width`` offers itself whole. ``exclude``, a list with one
    bool array (tokens already labeled) or None per sentence, removes every
    span that touches an excluded token; an unlabeled stretch shorter than
    ``width`` is then offered as a (shorter) span. A sentence with no span
    left is not offered. The first span wins ties within a sentence.
    """
    if isinstance(width, bool) or not isinstance(width, Integral) or width < 1:
        raise SscrfError(f"width must be a positive integer, not {width!r}")
    if exclude is not None and len(exclude) != len(pool):
        raise SscrfError(f"exclude has {len(exclude)} entries for a pool of {len(pool)}")
    token, transition = _token_and_transition_entropies(model, pool)
    spans, scores = [], []
    for s in range(len(pool)):
        labeled = None if exclude is None else exclude[s]
        best = _best_span(token[s], transition[s], int(width), labeled)
        if best is not None:
            spans.append((s, best[0], best[1]))
            scores.append(best[2])
    if not spans:
        return np.zeros((0, 3), dtype=np.int64), np.zeros(0)
    order, top_scores = _top(scores, m)
    return np.asarray(spans, dtype=np.int64)[order].reshape(-1, 3), top_scores


def _token_and_transition_entropies(model, pool):
    """Per sentence: ``H(Y_t | x)`` (n,) and ``H(Y_t | Y_{t−1}, x)`` (n,), entry 0 unused.

    The model's public API reports the best span only (``most_uncertain_span``);
    choosing among the spans that avoid labeled tokens needs the two lattices,
    which ``CRF._entropies`` computes in one pass.
    """
    _, token, transition, offsets = model._entropies(pool)
    return ([token[offsets[s]:offsets[s + 1]] for s in range(len(offsets) - 1)],
            [transition[offsets[s]:offsets[s + 1]] for s in range(len(offsets) - 1)])


def _best_span(token, transition, width, labeled=None):
    """(begin, stop, entropy) of the most uncertain allowed span, or None.

    The entropy of ``y[a:b]`` is ``H(Y_a) + Σ_{t=a+1}^{b−1} H(Y_t | Y_{t−1})``.
    """
    n = len(token)
    if n == 0:
        return None
    prefix = np.concatenate([[0.0], np.cumsum(transition)])
    if labeled is None or not np.any(labeled):
        runs = [(0, n)]
    else:
        labeled = np.asarray(labeled, dtype=bool)
        if labeled.shape != (n,):
            raise SscrfError(f"exclude mask of shape {labeled.shape} for a sentence of {n} tokens")
        free = np.concatenate([[False], ~labeled, [False]]).astype(np.int8)
        edges = np.flatnonzero(np.diff(free))
        runs = list(zip(edges[0::2].tolist(), edges[1::2].tolist()))
    best = None
    for a, b in runs:
        w = min(width, b - a)
        begins = np.arange(a, b - w + 1)
        h = np.maximum(token[begins] + prefix[begins + w] - prefix[begins + 1], 0.0)
        i = int(np.argmax(h))
        if best is None or h[i] > best[2]:
            best = (int(begins[i]), int(begins[i]) + w, float(h[i]))
    return best


@register_selector("quota_sampling", needs_model=False)
def _quota_sampling(model, pool, m, log_q, rng):
    """Sokolovska's quota sampling: one uniform draw from each of m q(x)-groups.

    The candidates are sorted by ``log_q`` (most probable first, ties by
    index) and cut into ``m`` consecutive groups whose sizes differ by at most
    one (``numpy.array_split``). The result lists one sentence per group, the
    most probable group first; its scores are the chosen sentences' ``log_q``.
    """
    if log_q is None:
        raise SscrfError("quota_sampling needs log_q, the pool's log q(x) (see NgramModel)")
    order = np.lexsort((np.arange(len(pool)), -log_q))
    picks = np.array([g[rng.integers(len(g))] for g in np.array_split(order, m)],
                     dtype=np.int64)
    return picks, log_q[picks]


def _check_log_q(log_q, n):
    if log_q is None:
        return None
    log_q = np.asarray(log_q, dtype=np.float64)
    if log_q.shape != (n,):
        raise SscrfError(f"log_q must have one value per pool sentence ({n}), got shape "
                         f"{log_q.shape}")
    if np.any(np.isnan(log_q)) or np.any(log_q == np.inf):
        raise SscrfError("log_q must not contain NaN or +inf")
    return log_q


def _check_fitted(model, strategy):
    if model is None or not hasattr(model, "coef_"):
        raise SscrfError(f"strategy {strategy!r} scores sentences with a trained model; fit the "
                         "model on some labeled sentences first (or use 'random' or "
                         "'quota_sampling', which need none)")


def select(model, pool, strategy, m, log_q=None, random_state=None, **options):
    """Choose ``m`` sentences of ``pool`` to label, best first.

    Parameters
    ----------
    model : sscrf.CRF or None
        A fitted model; None (or unfitted) is allowed for ``random`` and
        ``quota_sampling``.
    pool : list of sentences
        Candidates, in the model's input format.
    strategy : str
        A name in :data:`SELECTORS`.
    m : int
        How many to choose (fewer when the pool is smaller).
    log_q : array-like (len(pool),) or None
        log q(x) of each sentence, for ``quota_sampling``.
    random_state : None, int or numpy.random.Generator
        For ``random`` and ``quota_sampling``.
    **options
        Selector options: ``normalize`` (``sequence_entropy``), ``aggregate``
        (``token_entropy``), ``width`` and ``exclude``
        (``most_uncertain_span``).

    Returns
    -------
    indices : ndarray (k,) int, or (k, 3) rows ``(index, begin, stop)`` for spans
    scores : ndarray (k,)
        The selector's utility (log q(x) for quota sampling).
    """
    if strategy not in SELECTORS:
        raise SscrfError(f"unknown strategy {strategy!r}; known: {', '.join(sorted(SELECTORS))}")
    if isinstance(m, bool) or not isinstance(m, Integral) or m < 1:
        raise SscrfError(f"m must be a positive integer, not {m!r}")
    if isinstance(pool, (str, bytes, dict)) or not hasattr(pool, "__len__"):
        raise SscrfError(f"pool must be a list of sentences, not {type(pool).__name__}")
    pool = list(pool)
    selector = SELECTORS[strategy]
    log_q = _check_log_q(log_q, len(pool))
    if not pool:
        empty = np.zeros((0, 3) if selector.spans else 0, dtype=np.int64)
        return empty, np.zeros(0)
    if selector.needs_model:
        _check_fitted(model, strategy)
    rng = np.random.default_rng(random_state)
    try:
        return selector(model, pool, min(int(m), len(pool)), log_q, rng, **options)
    except TypeError as e:
        if "unexpected keyword" in str(e):
            raise SscrfError(f"strategy {strategy!r}: {e}") from None
        raise


# -- q(x): an n-gram model of the inputs ---------------------------------------------

class _Symbol:
    """A reserved symbol (sentence start, end, unknown) no user token can equal."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name

    def __reduce__(self):
        return (_symbol, (self.name,))


def _symbol(name):
    return {"<s>": BOS, "</s>": EOS, "<unk>": UNK}[name]


BOS, EOS, UNK = _Symbol("<s>"), _Symbol("</s>"), _Symbol("<unk>")


class _WittenBell:
    """Interpolated Witten-Bell n-gram model of one stream of symbols."""

    def __init__(self, n, boundaries):
        self.n = n
        self.boundaries = boundaries

    def fit(self, sequences):
        n = self.n
        counts = {}  # history tuple (length 0..n-1) → Counter of next symbols
        vocabulary = set()
        for seq in sequences:
            padded = [BOS] * (n - 1) + list(seq) + ([EOS] if self.boundaries else [])
            for t in range(n - 1, len(padded)):
                w = padded[t]
                vocabulary.add(w)
                for k in range(n):
                    counts.setdefault(tuple(padded[t - k:t]), Counter())[w] += 1
        self.vocabulary_ = vocabulary
        # history → (c(h), N1+(h·), Counter)
        self.tables_ = {h: (sum(c.values()), len(c), c) for h, c in counts.items()}
        self.p0_ = 1.0 / (len(vocabulary) + 1)  # uniform over the seen symbols and <unk>
        return self

    def prob(self, history, symbol):
        """p(symbol | the last n−1 symbols of history), history already padded and mapped."""
        p = self.p0_
        for k in range(self.n):
            table = self.tables_.get(tuple(history[len(history) - k:]) if k else ())
            if table is None:
                break  # a longer history containing this one is unseen too
            total, types, c = table
            p = (c.get(symbol, 0) + types * p) / (total + types)
        return p

    def log_prob(self, seq):
        n = self.n
        known = self.vocabulary_
        mapped = [w if w in known else UNK for w in seq]
        padded = [BOS] * (n - 1) + mapped + ([EOS] if self.boundaries else [])
        return math.fsum(math.log(self.prob(padded[t - n + 1:t], padded[t]))
                         for t in range(n - 1, len(padded)))


class NgramModel:
    """q(x) as an n-gram model of input token sequences (Sokolovska 2011 eq. 20).

    ``log q(x) = Σ_t log p(x_t | x_{t−n+1}, …, x_{t−1})``, with the history
    padded by ``n − 1`` start symbols and, when ``boundaries`` is true, an
    end-of-sequence symbol predicted after the last token (so q is a
    distribution over sequences of every length).

    Smoothing is interpolated Witten-Bell: for a history h seen in training,
    ``p(w | h) = (c(h, w) + N1+(h·)·p(w | h')) / (c(h) + N1+(h·))`` with h'
    the history without its oldest symbol, ``c(h) = Σ_w c(h, w)`` and
    ``N1+(h·)`` the number of distinct symbols seen after h; an unseen
    history defers to h'. The recursion ends in the uniform distribution over
    the seen symbols plus one ``<unk>`` class, which every unseen symbol maps
    to, so unseen symbols get a floor and the probabilities of the seen
    symbols and ``<unk>`` sum to 1 for every history. (Eq. 20 is the
    unsmoothed ratio of counts, zero for any unseen n-gram.)

    Several input columns: when tokens are tuples or lists (e.g. ``[word,
    POS]``), one model per column is fitted and the log-probabilities are
    summed, ``q(x) = Π_c q_c(x_c)`` (the paper's CoNLL-2003 set-up).
    A string is a sequence of one-character symbols.

    Parameters
    ----------
    n : int
        Order: ``n = 4`` conditions on the three previous tokens.
    boundaries : bool
        Predict an end symbol after each sequence.
    columns : list of int or None
        Which token columns to model when tokens are tuples or lists; None
        takes them all.

    Attributes
    ----------
    n_columns_ : int or None
        Columns modelled, None when tokens are plain symbols.
    """

    def __init__(self, n=4, boundaries=True, columns=None):
        if isinstance(n, bool) or not isinstance(n, Integral) or n < 1:
            raise SscrfError(f"n must be a positive integer, not {n!r}")
        self.n = int(n)
        self.boundaries = bool(boundaries)
        self.columns = None if columns is None else [int(c) for c in columns]

    def fit(self, sequences):
        """Count the n-grams of ``sequences`` (a list of token sequences); returns self."""
        sequences = _token_sequences(sequences)
        first = next((tok for seq in sequences for tok in seq), None)
        if first is None:
            raise SscrfError("NgramModel.fit needs at least one token")
        if isinstance(first, (tuple, list)):
            columns = self.columns if self.columns is not None else list(range(len(first)))
            self._columns_used = columns
            self.n_columns_ = len(columns)
            self.models_ = [_WittenBell(self.n, self.boundaries).fit(
                self._column(sequences, c)) for c in columns]
        else:
            self._columns_used = None
            self.n_columns_ = None
            self.models_ = [_WittenBell(self.n, self.boundaries).fit(sequences)]
        return self

    @staticmethod
    def _column(sequences, c):
        try:
            return [[tok[c] for tok in seq] for seq in sequences]
        except (IndexError, TypeError):
            raise SscrfError(f"a token has no column {c}") from None

    def _streams(self, sequence):
        if self._columns_used is None:
            return [list(sequence)]
        return [self._column([sequence], c)[0] for c in self._columns_used]

    def log_prob(self, sequence):
        """log q(x) of one token sequence (natural log)."""
        if not hasattr(self, "models_"):
            raise SscrfError("this NgramModel is not fitted yet; call fit")
        first = next(iter(sequence), None)
        if isinstance(first, (list, tuple)) and (
                self._columns_used is None or (first and isinstance(first[0], (list, tuple)))):
            raise SscrfError("log_prob takes one sentence (a list of tokens); for a list of "
                             "sentences use log_probs")
        return math.fsum(model.log_prob(stream)
                         for model, stream in zip(self.models_, self._streams(sequence)))

    def log_probs(self, sequences):
        """log q(x) of each sequence, as an ndarray (len(sequences),)."""
        return np.array([self.log_prob(seq) for seq in _token_sequences(sequences)],
                        dtype=np.float64)

    def prob(self, symbol, history=(), column=0):
        """p(symbol | history) of one column's model (history: the previous symbols, oldest first).

        A history shorter than ``n − 1`` is taken to start the sequence (padded
        with start symbols); symbols never seen in training map to ``<unk>``.
        """
        model = self.models_[column]
        known = model.vocabulary_
        history = [BOS] * (self.n - 1) + [w if w in known else UNK for w in history]
        symbol = symbol if symbol in known else UNK
        return model.prob(history[len(history) - (self.n - 1):] if self.n > 1 else [], symbol)


def _token_sequences(sequences):
    if isinstance(sequences, (str, bytes)) or not hasattr(sequences, "__len__"):
        raise SscrfError("expected a list of token sequences")
    sequences = list(sequences)
    for s, seq in enumerate(sequences):
        for t, token in enumerate(seq if isinstance(seq, (list, tuple)) else ()):
            if isinstance(token, Mapping):
                raise SscrfError(
                    f"sentence {s}, token {t}: NgramModel models input symbols (words, or "
                    "columns such as [word, POS]), not feature dicts; give it the words, "
                    "e.g. [[token['word'] for token in sentence] for sentence in X]")
            break  # a sentence's first token says what its tokens are
    return sequences


# -- weighted likelihood (Sokolovska eq. 2 / 17) ---------------------------------------

def _freeze(token):
    """A hashable stand-in for a token (string, column list, feature dict)."""
    if isinstance(token, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in token.items()))
    if isinstance(token, (list, tuple)):
        return tuple(_freeze(v) for v in token)
    return token


def sokolovska_weights(X, log_q):
    """Per-sentence weights ``q(x)/N_x`` normalised to mean 1.

    ``N_x`` is the number of sentences of ``X`` with the same token sequence
    as ``x``. Normalising to mean 1 keeps the total weight equal to the number
    of sentences, so ``c2`` means what it means for unweighted training. Give
    the result to ``CRF.fit(X, y, sample_weight=...)``.

    Parameters
    ----------
    X : list of sentences
        Tokens may be strings, column lists or feature dicts.
    log_q : array-like (len(X),)
        log q(x) of each sentence (e.g. from :meth:`NgramModel.log_probs`).

    Returns
    -------
    ndarray (len(X),)
    """
    X = list(X)
    log_q = np.asarray(log_q, dtype=np.float64)
    if log_q.shape != (len(X),):
        raise SscrfError(f"log_q must have one value per sentence ({len(X)}), got shape "
                         f"{log_q.shape}")
    if not X:
        return np.zeros(0)
    if not np.all(np.isfinite(log_q)):
        raise SscrfError("log_q must be finite")
    keys = [_freeze(x) for x in X]
    counts = Counter(keys)
    log_w = log_q - np.log([counts[k] for k in keys])
    w = np.exp(log_w - log_w.max())
    return w / w.mean()


# -- the pool loop ---------------------------------------------------------------------

def _partial_examples(sentence, labels, partial):
    """Training examples from a partially labeled sentence (labels: None where unknown).

    ``"native"``: the sentence itself with its None labels (``fit``
    marginalises them). ``"fragments"``: each maximal run of labeled tokens
    becomes a short labeled sentence.
    """
    if partial == "native":
        return [(sentence, list(labels))]
    out, t, n = [], 0, len(labels)
    while t < n:
        if labels[t] is None:
            t += 1
            continue
        b = t
        while t < n and labels[t] is not None:
            t += 1
        out.append((list(sentence[b:t]), list(labels[b:t])))
    return out


class ActiveLearner:
    """Pool-based active learning (Sokolovska 2011, Algorithm 1).

    Parameters
    ----------
    model : sscrf.CRF
        Gives the hyperparameters of every retraining; used as it is when
        already fitted and no labeled seed is given.
    pool : list of sentences
        The unlabeled candidates. Every index (in :meth:`query`,
        :meth:`teach`) is a position in this list.
    strategy : str
        A name in :data:`SELECTORS`.
    X_labeled, y_labeled : lists or None
        Labeled seed data, trained on at construction and kept.
    log_q : array-like (len(pool),) or None
        log q(x) of the pool, for ``quota_sampling``.
    random_state : None, int or numpy.random.Generator
    partial : {"native", "fragments"}
        How span (partial) answers train: see the module docstring.
    max_candidates : int or None
        Score at most this many candidates per query, a fresh uniform random
        subset of the remaining pool each time (for large pools); None
        scores them all.
    **strategy_options
        Passed to the selector (``width=`` for ``most_uncertain_span``, ...).

    Notes
    -----
    Each :meth:`query` ranks the sentences not yet labeled whole, so with
    ``quota_sampling`` the q(x) groups are cut afresh over the remaining
    pool at every query (the paper cuts them once, for the whole budget:
    call :func:`select` with ``m = n`` for that). Span strategies never offer
    a token that is already labeled.

    Attributes
    ----------
    model : the current model (None before any training)
    n_sentences_ : int
        Labeled sentences: the seed plus pool sentences with every token labeled.
    n_partial_ : int
        Pool sentences with some, not all, tokens labeled.
    n_tokens_ : int
        Labeled tokens, seed included.
    """

    def __init__(self, model, pool, strategy="least_confidence", X_labeled=None,
                 y_labeled=None, log_q=None, random_state=None, partial="native",
                 max_candidates=None, **strategy_options):
        if strategy not in SELECTORS:
            raise SscrfError(f"unknown strategy {strategy!r}; known: "
                             f"{', '.join(sorted(SELECTORS))}")
        if partial not in ("native", "fragments"):
            raise SscrfError(f"partial must be 'native' or 'fragments', not {partial!r}")
        if isinstance(pool, (str, bytes, dict)) or not hasattr(pool, "__len__"):
            raise SscrfError(f"pool must be a list of sentences, not {type(pool).__name__}")
        if (X_labeled is None) != (y_labeled is None):
            raise SscrfError("give both X_labeled and y_labeled, or neither")
        self.pool = list(pool)
        self.strategy = strategy
        self.strategy_options = strategy_options
        self.log_q = _check_log_q(log_q, len(self.pool))
        self.partial = partial
        if max_candidates is not None and (isinstance(max_candidates, bool)
                                           or not isinstance(max_candidates, Integral)
                                           or max_candidates < 1):
            raise SscrfError(f"max_candidates must be a positive integer or None, not "
                             f"{max_candidates!r}")
        self.max_candidates = max_candidates
        self._rng = np.random.default_rng(random_state)
        self._template = model
        self._X_seed = list(X_labeled or [])
        self._y_seed = [list(ys) for ys in (y_labeled or [])]
        if len(self._X_seed) != len(self._y_seed):
            raise SscrfError(f"X_labeled has {len(self._X_seed)} sentences but y_labeled has "
                             f"{len(self._y_seed)}")
        self._labels = [None] * len(self.pool)  # per pool sentence: list (None = unknown)
        self._whole = np.zeros(len(self.pool), dtype=bool)
        self.model = model if hasattr(model, "coef_") else None
        if self._X_seed:
            self._retrain()

    # -- counts ----------------------------------------------------------------

    @property
    def n_sentences_(self):
        return len(self._X_seed) + int(self._whole.sum())

    @property
    def n_partial_(self):
        return sum(1 for i, ys in enumerate(self._labels) if ys is not None and not self._whole[i])

    @property
    def n_tokens_(self):
        seed = sum(len(ys) for ys in self._y_seed)
        return seed + sum(sum(l is not None for l in ys) for ys in self._labels if ys is not None)

    @property
    def labeled_indices_(self):
        """Pool indices with every token labeled, in increasing order."""
        return np.flatnonzero(self._whole)

    def candidates(self):
        """Pool indices that may still be offered (not every token labeled)."""
        return np.flatnonzero(~self._whole)

    # -- the loop --------------------------------------------------------------

    def query(self, m):
        """The next ``m`` sentences (or spans) to label, best first.

        Returns
        -------
        indices : ndarray (k,), or (k, 3) rows ``(index, begin, stop)`` for span strategies
            Positions in the pool given at construction.
        scores : ndarray (k,)
        """
        candidates = self.candidates()
        if self.max_candidates is not None and len(candidates) > self.max_candidates:
            candidates = np.sort(self._rng.choice(candidates, self.max_candidates, replace=False))
        sub_pool = [self.pool[i] for i in candidates]
        options = dict(self.strategy_options)
        if SELECTORS[self.strategy].spans:
            options["exclude"] = [None if self._labels[i] is None
                                  else np.array([l is not None for l in self._labels[i]])
                                  for i in candidates]
        log_q = None if self.log_q is None else self.log_q[candidates]
        indices, scores = select(self.model, sub_pool, self.strategy, m, log_q=log_q,
                                 random_state=self._rng, **options)
        indices = np.array(indices, dtype=np.int64, copy=True)
        if indices.ndim == 2:
            indices[:, 0] = candidates[indices[:, 0]]
        else:
            indices = candidates[indices]
        return indices, scores

    def teach(self, indices, labels):
        """Add the oracle's answers and retrain (warm start from the current model).

        Parameters
        ----------
        indices : sequence of int, or of ``(index, begin, stop)``
            What :meth:`query` returned (or any pool positions).
        labels : sequence
            One answer per index: the sentence's labels (a list as long as the
            sentence, ``None`` where a token is not labeled), or, for a span
            ``(index, begin, stop)``, the span's ``stop − begin`` labels.
            A later answer for a token replaces an earlier one.

        Returns
        -------
        self
        """
        indices = list(indices)
        labels = list(labels)
        if len(indices) != len(labels):
            raise SscrfError(f"{len(indices)} indices but {len(labels)} answers")
        for item, answer in zip(indices, labels):
            self._record(item, answer)
        if indices:
            self._retrain()
        return self

    def _record(self, item, answer):
        span = np.ndim(item) == 1
        if span and len(item) != 3:
            raise SscrfError(f"a span must be (index, begin, stop), not {item!r}")
        i, begin, stop = (int(v) for v in item) if span else (int(item), None, None)
        if not 0 <= i < len(self.pool):
            raise SscrfError(f"index {i} is not in the pool (0..{len(self.pool) - 1})")
        n = len(self.pool[i])
        if isinstance(answer, (str, bytes)) or not hasattr(answer, "__len__"):
            raise SscrfError(f"the answer for sentence {i} must be a list of labels")
        answer = list(answer)
        if span and len(answer) == stop - begin and len(answer) != n:
            if not 0 <= begin <= stop <= n:
                raise SscrfError(f"span [{begin}, {stop}) is not inside sentence {i} "
                                 f"({n} tokens)")
            answer = [None] * begin + answer + [None] * (n - stop)
        if len(answer) != n:
            raise SscrfError(f"sentence {i} has {n} tokens but the answer has {len(answer)} labels")
        for t, label in enumerate(answer):
            if label is not None and not isinstance(label, str):
                raise SscrfError(f"sentence {i}, token {t}: a label must be a string or None")
        current = self._labels[i] or [None] * n
        merged = [new if new is not None else old for old, new in zip(current, answer)]
        if all(label is None for label in merged):
            return
        self._labels[i] = merged
        self._whole[i] = all(label is not None for label in merged)

    def training_data(self):
        """(X, y) the next fit sees: the seed, whole answers, then partial answers."""
        X, y = list(self._X_seed), list(self._y_seed)
        for i in np.flatnonzero(self._whole):
            X.append(self.pool[i])
            y.append(self._labels[i])
        for i, ys in enumerate(self._labels):
            if ys is not None and not self._whole[i]:
                for xs, ls in _partial_examples(self.pool[i], ys, self.partial):
                    X.append(xs)
                    y.append(ls)
        return X, y

    def _retrain(self):
        X, y = self.training_data()
        model = type(self._template)(**self._template.get_params())
        model.fit(X, y, init=self.model)
        self.model = model

    def run(self, oracle, batch, max_sentences=None, max_tokens=None, stop=None,
            callback=None):
        """Query, ask ``oracle``, teach, until a budget or ``stop`` says enough.

        Parameters
        ----------
        oracle : callable
            ``oracle(indices) -> labels``: answers for what :meth:`query`
            returned (see :meth:`teach`).
        batch : int
            m, sentences (or spans) per round.
        max_sentences, max_tokens : int or None
            Budgets on :attr:`n_sentences_` + :attr:`n_partial_` (sentences
            touched) and on :attr:`n_tokens_`. A batch is cut so that neither
            is exceeded; the loop also stops when the pool is exhausted.
        stop : callable or None
            ``stop(learner) -> bool``, checked before every round.
        callback : callable or None
            ``callback(learner, indices)`` after every round.

        Returns
        -------
        self
        """
        if isinstance(batch, bool) or not isinstance(batch, Integral) or batch < 1:
            raise SscrfError(f"batch must be a positive integer, not {batch!r}")
        if max_sentences is None and max_tokens is None and stop is None:
            raise SscrfError("give a budget (max_sentences or max_tokens) or a stop rule")
        while not (stop is not None and stop(self)):
            m = batch
            if max_sentences is not None:
                m = min(m, max_sentences - self.n_sentences_ - self.n_partial_)
            if m < 1:
                break
            indices, _ = self.query(m)
            if max_tokens is not None:
                indices = self._within_tokens(indices, max_tokens - self.n_tokens_)
            if len(indices) == 0:
                break
            self.teach(indices, oracle(indices))
            if callback is not None:
                callback(self, indices)
        return self

    def _within_tokens(self, indices, room):
        """The longest prefix of ``indices`` whose new tokens fit in ``room``."""
        used, keep = 0, 0
        for item in indices:
            if np.ndim(item) == 1:
                cost = int(item[2]) - int(item[1])
            else:
                known = self._labels[int(item)]
                cost = len(self.pool[int(item)]) - (0 if known is None
                                                    else sum(l is not None for l in known))
            if used + cost > room:
                break
            used += cost
            keep += 1
        return indices[:keep]


def gold_oracle(y_pool):
    """An oracle answering from gold labels: whole sentences, or a span's labels."""

    def oracle(indices):
        out = []
        for item in indices:
            if np.ndim(item) == 1:
                i, b, e = (int(v) for v in item)
                out.append(list(y_pool[i][b:e]))
            else:
                out.append(list(y_pool[int(item)]))
        return out

    return oracle


def simulate(learner, y_pool, X_test, y_test, batch, max_sentences=None, max_tokens=None,
             stop=None, scorer=None):
    """Run ``learner`` against the gold labels ``y_pool`` and record a learning curve.

    Parameters
    ----------
    learner : ActiveLearner
    y_pool : list of label lists
        Gold labels of ``learner.pool``.
    X_test, y_test : test sentences and labels
    batch, max_sentences, max_tokens, stop
        As in :meth:`ActiveLearner.run`.
    scorer : callable or None
        ``scorer(model, X_test, y_test) -> float``; default token accuracy
        (``model.score``).

    Returns
    -------
    list of dict
        One point per round (and one for the starting model, if any):
        ``sentences`` (labeled whole, seed included), ``partial`` (sentences
        labeled in part), ``tokens`` (labeled tokens) and ``score``.
    """
    if len(y_pool) != len(learner.pool):
        raise SscrfError(f"y_pool has {len(y_pool)} entries for a pool of {len(learner.pool)}")
    scorer = scorer or (lambda model, X, y: model.score(X, y))
    curve = []

    def record(lrn, indices=None):
        curve.append({"sentences": lrn.n_sentences_, "partial": lrn.n_partial_,
                      "tokens": lrn.n_tokens_, "score": float(scorer(lrn.model, X_test, y_test))})

    if learner.model is not None:
        record(learner)
    learner.run(gold_oracle(y_pool), batch, max_sentences=max_sentences, max_tokens=max_tokens,
                stop=stop, callback=record)
    return curve
