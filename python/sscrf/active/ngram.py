"""q(x): an n-gram model of the input tokens (Sokolovska 2011 eq. 20), and the
weights ``q(x)/N_x`` of the weighted likelihood (eq. 2 and 17)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional

import numpy as np

from ..errors import SscrfError, SscrfTypeError
from ..inputs import check_integer, check_real, is_integer

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

__all__ = ["BOS", "EOS", "MAX_ORDER", "UNK", "NgramModel", "check_order", "sokolovska_weights"]

#: The highest order: each token stores a history of every length below n,
#: so time and memory grow as tokens·n² (word models rarely pass 5).
MAX_ORDER = 16


class _Symbol:
    """A reserved symbol (sentence start, end, unknown) no user token can equal."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (_symbol, (self.name,))


def _symbol(name: str) -> _Symbol:
    return {"<s>": BOS, "</s>": EOS, "<unk>": UNK}[name]


BOS, EOS, UNK = _Symbol("<s>"), _Symbol("</s>"), _Symbol("<unk>")


class _WittenBell:
    """Interpolated Witten-Bell n-gram model of one stream of symbols."""

    def __init__(self, n: int, boundaries: bool) -> None:
        self.n = n
        self.boundaries = boundaries

    def fit(self, sequences: Iterable[Sequence[Hashable]]) -> _WittenBell:
        n = self.n
        # history tuple (length 0..n-1) → Counter of next symbols
        counts: dict[tuple[Hashable, ...], Counter[Hashable]] = {}
        vocabulary: set[Hashable] = set()
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

    def prob(self, history: Sequence[Hashable], symbol: Hashable) -> float:
        """p(symbol | the last n−1 symbols of history), history already padded and mapped."""
        p = self.p0_
        for k in range(self.n):
            table = self.tables_.get(tuple(history[len(history) - k:]) if k else ())
            if table is None:
                break  # a longer history containing this one is unseen too
            total, types, c = table
            p = (c.get(symbol, 0) + types * p) / (total + types)
        return p

    def log_prob(self, seq: Sequence[Hashable]) -> float:
        n = self.n
        known = self.vocabulary_
        mapped = [w if w in known else UNK for w in seq]
        padded = [BOS] * (n - 1) + mapped + ([EOS] if self.boundaries else [])
        return math.fsum(math.log(self.prob(padded[t - n + 1:t], padded[t]))
                         for t in range(n - 1, len(padded)))


def check_order(n: Any, name: str) -> int:
    """An n-gram order as an ``int`` in [1, MAX_ORDER]; ``name`` names it in the message."""
    if is_integer(n) and n > MAX_ORDER:
        raise SscrfError(f"{name} must be at most {MAX_ORDER}, not {n!r}: an n-gram model's "
                         "time and memory grow as tokens·n²")
    return check_integer(n, name, minimum=1, maximum=MAX_ORDER)


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

    def __init__(self, n: int = 4, boundaries: bool = True,
                 columns: Optional[Sequence[int]] = None) -> None:
        self.n = check_order(n, "n")
        self.boundaries = bool(boundaries)
        self.columns = None if columns is None else [int(c) for c in columns]

    def fit(self, sequences: Sequence[Sequence[Any]]) -> NgramModel:
        """Count the n-grams of ``sequences`` (a list of token sequences); returns self."""
        check_order(self.n, "n")  # also when set after construction
        sequences = _token_sequences(sequences)
        first = next((tok for seq in sequences for tok in seq), None)
        if first is None:
            raise SscrfError("NgramModel.fit needs at least one token")
        if isinstance(first, (tuple, list)):
            columns = self.columns if self.columns is not None else list(range(len(first)))
            self._columns_used: Optional[list[int]] = columns
            self.n_columns_: Optional[int] = len(columns)
            self.models_ = [_WittenBell(self.n, self.boundaries).fit(
                self._column(sequences, c)) for c in columns]
        else:
            self._columns_used = None
            self.n_columns_ = None
            self.models_ = [_WittenBell(self.n, self.boundaries).fit(sequences)]
        return self

    @staticmethod
    def _column(sequences: Sequence[Sequence[Any]], c: int) -> list[list[Any]]:
        try:
            return [[tok[c] for tok in seq] for seq in sequences]
        except (IndexError, TypeError):
            raise SscrfError(f"a token has no column {c}") from None

    def _streams(self, sequence: Sequence[Any]) -> list[list[Any]]:
        if self._columns_used is None:
            return [list(sequence)]
        return [self._column([sequence], c)[0] for c in self._columns_used]

    def log_prob(self, sequence: Sequence[Any]) -> float:
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

    def log_probs(self, sequences: Sequence[Sequence[Any]]) -> NDArray[np.float64]:
        """log q(x) of each sequence, as an ndarray (len(sequences),)."""
        return np.array([self.log_prob(seq) for seq in _token_sequences(sequences)],
                        dtype=np.float64)

    def prob(self, symbol: Hashable, history: Sequence[Hashable] = (), column: int = 0) -> float:
        """p(symbol | history) of one column's model (history: the previous symbols, oldest first).

        A history shorter than ``n − 1`` is taken to start the sequence (padded
        with start symbols); symbols never seen in training map to ``<unk>``.
        """
        model = self.models_[column]
        known = model.vocabulary_
        history = [BOS] * (self.n - 1) + [w if w in known else UNK for w in history]
        symbol = symbol if symbol in known else UNK
        return model.prob(history[len(history) - (self.n - 1):] if self.n > 1 else [], symbol)


def _token_sequences(sequences: Any) -> Any:
    if isinstance(sequences, (str, bytes)) or not hasattr(sequences, "__len__"):
        raise SscrfTypeError("expected a list of token sequences")
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

def _freeze(token: Any) -> Hashable:
    """A hashable stand-in for a token (string, column list, feature dict, a dict's
    vector value)."""
    if isinstance(token, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in token.items()))
    if isinstance(token, (list, tuple)):
        return tuple(_freeze(v) for v in token)
    if isinstance(token, np.ndarray):  # equal arrays give equal keys
        return ("ndarray", token.dtype.str, token.shape, token.tobytes())
    return token


def sokolovska_weights(X: Sequence[Sequence[Any]], log_q: ArrayLike) -> NDArray[np.float64]:
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
    log_q = np.asarray(check_real(log_q, "log_q"), dtype=np.float64)
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
