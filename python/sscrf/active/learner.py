"""The pool loop of Sokolovska 2011, Algorithm 1: query, get labels, retrain, until a budget.

Span answers (partial labels) train, by default (``partial="native"``), as
the sentence itself with ``None`` labels outside the span (``CRF.fit``
marginalises them); ``partial="fragments"`` trains on each maximal run of
labeled tokens as a short sentence of its own. Only :func:`partial_examples`
differs between the two.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Callable, Optional

import numpy as np

from ..errors import SscrfError, SscrfTypeError
from ..inputs import check_integer, random_generator
from .selectors import SELECTORS, check_count, check_log_q, select, short_repr

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

#: Labels of one sentence as the learner holds them: None where not yet labeled.
PartialLabels = list[Optional[str]]
#: ``oracle(indices) -> labels``: answers for what ``query`` returned.
Oracle = Callable[[Any], Sequence[Sequence[Optional[str]]]]

__all__ = ["ActiveLearner", "gold_oracle", "partial_examples", "simulate"]


def partial_examples(sentence: Sequence[Any], labels: Sequence[Optional[str]],
                     partial: str) -> list[tuple[Any, PartialLabels]]:
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

    def __init__(self, model: Any, pool: Sequence[Any], strategy: str = "least_confidence",
                 X_labeled: Optional[Sequence[Any]] = None,
                 y_labeled: Optional[Sequence[Sequence[str]]] = None,
                 log_q: Optional[ArrayLike] = None, random_state: Any = None,
                 partial: str = "native", max_candidates: Optional[int] = None,
                 **strategy_options: Any) -> None:
        if strategy not in SELECTORS:
            raise SscrfError(f"unknown strategy {short_repr(strategy)}; known: "
                             f"{', '.join(sorted(SELECTORS))}")
        if partial not in ("native", "fragments"):
            raise SscrfError(f"partial must be 'native' or 'fragments', not {short_repr(partial)}")
        if isinstance(pool, (str, bytes, dict)) or not hasattr(pool, "__len__"):
            raise SscrfTypeError(f"pool must be a list of sentences, not {type(pool).__name__}")
        if (X_labeled is None) != (y_labeled is None):
            raise SscrfError("give both X_labeled and y_labeled, or neither")
        self.pool = list(pool)
        self.strategy = strategy
        self.strategy_options = strategy_options
        self.log_q = check_log_q(log_q, len(self.pool))
        self.partial = partial
        self.max_candidates = (None if max_candidates is None
                               else check_integer(max_candidates, "max_candidates", minimum=1))
        self._rng = random_generator(random_state)
        self._template = model
        self._X_seed = list(X_labeled or [])
        self._y_seed: list[list[Any]] = [list(ys) for ys in (y_labeled or [])]
        if len(self._X_seed) != len(self._y_seed):
            raise SscrfError(f"X_labeled has {len(self._X_seed)} sentences but y_labeled has "
                             f"{len(self._y_seed)}")
        # per pool sentence: list (None = unknown)
        self._labels: list[Optional[PartialLabels]] = [None] * len(self.pool)
        self._whole = np.zeros(len(self.pool), dtype=bool)
        self.model = model if hasattr(model, "coef_") else None
        if self._X_seed:
            self._retrain()

    # -- counts ----------------------------------------------------------------

    @property
    def n_sentences_(self) -> int:
        return len(self._X_seed) + int(self._whole.sum())

    @property
    def n_partial_(self) -> int:
        return sum(1 for i, ys in enumerate(self._labels) if ys is not None and not self._whole[i])

    @property
    def n_tokens_(self) -> int:
        seed = sum(len(ys) for ys in self._y_seed)
        return seed + sum(sum(l is not None for l in ys) for ys in self._labels if ys is not None)

    @property
    def labeled_indices_(self) -> NDArray[np.intp]:
        """Pool indices with every token labeled, in increasing order."""
        return np.flatnonzero(self._whole)

    def candidates(self) -> NDArray[np.intp]:
        """Pool indices that may still be offered (not every token labeled)."""
        return np.flatnonzero(~self._whole)

    # -- the loop --------------------------------------------------------------

    def query(self, m: int) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """The next ``m`` sentences (or spans) to label, best first.

        Returns
        -------
        indices : ndarray (k,), or (k, 3) rows ``(index, begin, stop)`` for span strategies
            Positions in the pool given at construction.
        scores : ndarray (k,)
        """
        m = check_count(m)
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

    def teach(self, indices: Any, labels: Sequence[Sequence[Optional[str]]]) -> ActiveLearner:
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

        A bad answer, or a retraining that raises, leaves the learner (its
        answers and its model) as it was.
        """
        indices = list(indices)
        labels = list(labels)
        if len(indices) != len(labels):
            raise SscrfError(f"{len(indices)} indices but {len(labels)} answers")
        # A bad answer or a failed retraining (Ctrl-C included) leaves the
        # learner as it was: answers and model go together.
        saved = list(self._labels), self._whole.copy()
        try:
            for item, answer in zip(indices, labels):
                self._record(item, answer)
            if indices:
                self._retrain()
        except BaseException:
            self._labels, self._whole = saved
            raise
        return self

    def _record(self, item: Any, answer: Any) -> None:
        span = np.ndim(item) == 1
        if span and len(item) != 3:
            raise SscrfError(f"a span must be (index, begin, stop), not {short_repr(item)}")
        begin: Any
        stop: Any
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

    def training_data(self) -> tuple[list[Any], list[Any]]:
        """(X, y) the next fit sees: the seed, whole answers, then partial answers."""
        X: list[Any] = list(self._X_seed)
        y: list[Any] = list(self._y_seed)
        for i in np.flatnonzero(self._whole):
            X.append(self.pool[i])
            y.append(self._labels[i])
        for j, ys in enumerate(self._labels):
            if ys is not None and not self._whole[j]:
                for xs, ls in partial_examples(self.pool[j], ys, self.partial):
                    X.append(xs)
                    y.append(ls)
        return X, y

    def _retrain(self) -> None:
        X, y = self.training_data()
        model = type(self._template)(**self._template.get_params())
        model.fit(X, y, init=self.model)
        self.model = model

    def run(self, oracle: Oracle, batch: int, max_sentences: Optional[int] = None,
            max_tokens: Optional[int] = None,
            stop: Optional[Callable[[ActiveLearner], bool]] = None,
            callback: Optional[Callable[[ActiveLearner, Any], Any]] = None) -> ActiveLearner:
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
        batch = check_integer(batch, "batch", minimum=1)
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

    def _within_tokens(self, indices: Any, room: int) -> Any:
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


def gold_oracle(y_pool: Sequence[Sequence[str]]) -> Oracle:
    """An oracle answering from gold labels: whole sentences, or a span's labels."""

    def oracle(indices: Any) -> list[list[str]]:
        out = []
        for item in indices:
            if np.ndim(item) == 1:
                i, b, e = (int(v) for v in item)
                out.append(list(y_pool[i][b:e]))
            else:
                out.append(list(y_pool[int(item)]))
        return out

    return oracle


def simulate(learner: ActiveLearner, y_pool: Sequence[Sequence[str]], X_test: Sequence[Any],
             y_test: Sequence[Sequence[str]], batch: int, max_sentences: Optional[int] = None,
             max_tokens: Optional[int] = None,
             stop: Optional[Callable[[ActiveLearner], bool]] = None,
             scorer: Optional[Callable[[Any, Any, Any], float]] = None) -> list[dict[str, Any]]:
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

    def record(lrn: ActiveLearner, indices: Any = None) -> None:
        curve.append({"sentences": lrn.n_sentences_, "partial": lrn.n_partial_,
                      "tokens": lrn.n_tokens_, "score": float(scorer(lrn.model, X_test, y_test))})

    if learner.model is not None:
        record(learner)
    learner.run(gold_oracle(y_pool), batch, max_sentences=max_sentences, max_tokens=max_tokens,
                stop=stop, callback=record)
    return curve
