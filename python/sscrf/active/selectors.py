"""Sentence selectors: rank a pool by how useful its labels would be, best first.

``random``; ``least_confidence`` ``1 − p(ŷ | x)`` with ŷ the Viterbi path
(FuSAL's utility, Sokolovska 2011 eq. 19); ``sequence_entropy``, the exact
``H(Y | x)``; ``token_entropy``, the sum or mean of the marginal entropies
``H(Y_t | x)``; ``most_uncertain_span``, the span of a given width whose
posterior label entropy is largest (Mann & McCallum 2007 §5, Tsuboi et al.
2008 §5.1); ``quota_sampling`` (Sokolovska 2011 §5), which needs no model.
"""

from __future__ import annotations

import reprlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Callable, Optional, TypeVar

import numpy as np

from ..corpus_file import CompiledCorpus
from ..errors import SscrfError, SscrfTypeError
from ..inputs import check_integer, check_real, random_generator

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

    Floats = NDArray[np.float64]
    Ints = NDArray[np.int64]

_F = TypeVar("_F", bound=Callable[..., Any])

_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 60
_SHORT.maxlist = _SHORT.maxtuple = _SHORT.maxdict = _SHORT.maxset = 4
_SHORT.maxlevel = 2


def short_repr(value: object) -> str:
    """``repr(value)`` cut to about 80 characters: messages name a value, never print a pool."""
    return _SHORT.repr(value)


def check_count(m: Any, name: str = "m") -> int:
    """``m`` as a positive count; a sentence list given in its place (``query(X_pool)``,
    modAL's habit) is named by its length, not printed."""
    if isinstance(m, (list, tuple)) or (hasattr(m, "__len__") and not isinstance(m, str)):
        raise SscrfTypeError(f"{name} must be the number of sentences to choose (an integer), "
                             f"not a sequence of {len(m)} items; the pool is given once, when "
                             "the learner is made")
    if isinstance(m, str) or not hasattr(m, "__index__"):
        raise SscrfTypeError(f"{name} must be an integer ≥ 1, not {short_repr(m)}")
    return check_integer(m, name, minimum=1)

__all__ = ["SELECTORS", "check_log_q", "register_selector", "select"]

#: name → selector function; each has attributes ``needs_model`` and ``spans``.
SELECTORS: dict[str, Any] = {}


def register_selector(name: str, needs_model: bool = True,
                      spans: bool = False) -> Callable[[_F], _F]:
    """Decorator adding a selector to :data:`SELECTORS` under ``name``.

    A selector is called ``fn(model, pool, m, log_q, rng, **options)`` and
    returns ``(indices, scores)``, at most ``m`` entries, best first;
    ``indices`` is an int array ``(k,)``, or ``(k, 3)`` rows ``(index, begin,
    stop)`` when ``spans`` is true.
    """

    def decorate(fn: _F) -> _F:
        if name in SELECTORS:
            raise SscrfError(f"selector {short_repr(name)} is already registered")
        fn.needs_model = needs_model  # type: ignore[attr-defined]
        fn.spans = spans  # type: ignore[attr-defined]
        SELECTORS[name] = fn
        return fn

    return decorate


def _top(scores: ArrayLike, m: int) -> tuple[Ints, Floats]:
    """Indices of the ``m`` largest scores, best first; ties go to the lower index."""
    scores = np.asarray(scores, dtype=np.float64)
    order = np.lexsort((np.arange(len(scores)), -scores))[:m]
    return order.astype(np.int64), scores[order]


@register_selector("random", needs_model=False)
def _random(model: Any, pool: Sequence[Any], m: int, log_q: Optional[Floats],
            rng: np.random.Generator) -> tuple[Ints, Floats]:
    """m sentences drawn uniformly without replacement; the scores are the uniform keys."""
    return _top(rng.random(len(pool)), m)


@register_selector("least_confidence")
def _least_confidence(model: Any, pool: Sequence[Any], m: int, log_q: Optional[Floats],
                      rng: np.random.Generator) -> tuple[Ints, Floats]:
    """``1 − p(ŷ | x)`` with ŷ the Viterbi labeling (FuSAL, Sokolovska 2011 eq. 19)."""
    return _top(-np.expm1(model.sequence_log_probability(pool)), m)


@register_selector("sequence_entropy")
def _sequence_entropy(model: Any, pool: Sequence[Any], m: int, log_q: Optional[Floats],
                      rng: np.random.Generator, normalize: bool = False) -> tuple[Ints, Floats]:
    """Exact ``H(Y | x)``; divided by the sentence length when ``normalize``."""
    h = np.asarray(model.sequence_entropy(pool), dtype=np.float64)
    if normalize:
        h = h / np.maximum(_lengths(pool), 1)
    return _top(h, m)


@register_selector("token_entropy")
def _token_entropy(model: Any, pool: Sequence[Any], m: int, log_q: Optional[Floats],
                   rng: np.random.Generator, aggregate: str = "sum") -> tuple[Ints, Floats]:
    """``Σ_t H(Y_t | x)`` (``aggregate="sum"``) or its mean over tokens (``"mean"``)."""
    if aggregate not in ("sum", "mean"):
        raise SscrfError(f"token_entropy: aggregate must be 'sum' or 'mean', not {short_repr(aggregate)}")
    per_token = model.token_entropy(pool)
    reduce = np.sum if aggregate == "sum" else np.mean
    return _top([float(reduce(h)) if len(h) else 0.0 for h in per_token], m)


@register_selector("most_uncertain_span", spans=True)
def _most_uncertain_span(model: Any, pool: Sequence[Any], m: int, log_q: Optional[Floats],
                         rng: np.random.Generator, width: int = 3,
                         exclude: Optional[Sequence[Any]] = None) -> tuple[Ints, Floats]:
    """The span of ``width`` tokens with the largest posterior label entropy, per sentence.

    Sentences are ranked by the entropy of their best span. A sentence
    shorter than ``width`` offers itself whole. ``exclude``, a list with one
    bool array (tokens already labeled) or None per sentence, removes every
    span that touches an excluded token; an unlabeled stretch shorter than
    ``width`` is then offered as a (shorter) span. A sentence with no span
    left is not offered. The first span wins ties within a sentence.
    """
    width = check_integer(width, "width", minimum=1)
    if exclude is not None and len(exclude) != len(pool):
        raise SscrfError(f"exclude has {len(exclude)} entries for a pool of {len(pool)}")
    token, transition = _token_and_transition_entropies(model, pool)
    spans, scores = [], []
    for s in range(len(pool)):
        labeled = None if exclude is None else exclude[s]
        best = _best_span(token[s], transition[s], width, labeled)
        if best is not None:
            spans.append((s, best[0], best[1]))
            scores.append(best[2])
    if not spans:
        return np.zeros((0, 3), dtype=np.int64), np.zeros(0)
    order, top_scores = _top(scores, m)
    return np.asarray(spans, dtype=np.int64)[order].reshape(-1, 3), top_scores


def _lengths(pool: Sequence[Any]) -> Ints:
    """Tokens per sentence of a pool."""
    if isinstance(pool, CompiledCorpus):
        return np.diff(np.asarray(pool.features().offsets))
    return np.array([len(x) for x in pool], dtype=np.int64)


def _token_and_transition_entropies(model: Any,
                                    pool: Sequence[Any]) -> tuple[list[Floats], list[Floats]]:
    """Per sentence: ``H(Y_t | x)`` (n,) and ``H(Y_t | Y_{t−1}, x)`` (n,), entry 0 unused.

    The model's public API reports the best span only (``most_uncertain_span``);
    choosing among the spans that avoid labeled tokens needs the two lattices,
    which the model's decoder computes in one pass.
    """
    _, token, transition, offsets = model.decoder().entropies(pool)
    return ([token[offsets[s]:offsets[s + 1]] for s in range(len(offsets) - 1)],
            [transition[offsets[s]:offsets[s + 1]] for s in range(len(offsets) - 1)])


def _best_span(token: Floats, transition: Floats, width: int,
               labeled: Optional[ArrayLike] = None) -> Optional[tuple[int, int, float]]:
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
def _quota_sampling(model: Any, pool: Sequence[Any], m: int, log_q: Optional[Floats],
                    rng: np.random.Generator) -> tuple[Ints, Floats]:
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


def check_log_q(log_q: Optional[ArrayLike], n: int) -> Optional[Floats]:
    """``log_q`` as float64 of shape (n,), or None; NaN and +inf refused."""
    if log_q is None:
        return None
    log_q = np.asarray(check_real(log_q, "log_q"), dtype=np.float64)
    if log_q.shape != (n,):
        raise SscrfError(f"log_q must have one value per pool sentence ({n}), got shape "
                         f"{log_q.shape}")
    if np.any(np.isnan(log_q)) or np.any(log_q == np.inf):
        raise SscrfError("log_q must not contain NaN or +inf")
    return log_q


def _check_fitted(model: Any, strategy: str) -> None:
    if model is None or not hasattr(model, "coef_"):
        raise SscrfError(f"strategy {short_repr(strategy)} scores sentences with a trained model; fit the "
                         "model on some labeled sentences first (or use 'random' or "
                         "'quota_sampling', which need none)")


def select(model: Any, pool: Sequence[Any], strategy: str, m: int,
           log_q: Optional[ArrayLike] = None, random_state: Any = None,
           **options: Any) -> tuple[Ints, Floats]:
    """Choose ``m`` sentences of ``pool`` to label, best first.

    Parameters
    ----------
    model : sscrf.CRF or None
        A fitted model; None (or unfitted) is allowed for ``random`` and
        ``quota_sampling``.
    pool : list of sentences, or sscrf.CompiledCorpus
        Candidates, in the model's input format, or compiled under the
        model's vocabulary (``sscrf compile POOL --vocabulary MODEL``):
        a pool larger than memory is then read memory-mapped.
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
        raise SscrfError(f"unknown strategy {short_repr(strategy)}; known: "
                         f"{', '.join(sorted(SELECTORS))}")
    m = check_count(m)
    if isinstance(pool, (str, bytes, dict)) or not hasattr(pool, "__len__"):
        raise SscrfTypeError(f"pool must be a list of sentences, not {type(pool).__name__}")
    if not isinstance(pool, CompiledCorpus):  # read by the model whole, memory-mapped
        pool = list(pool)
    selector = SELECTORS[strategy]
    log_q = check_log_q(log_q, len(pool))
    if not pool:
        empty = np.zeros((0, 3) if selector.spans else 0, dtype=np.int64)
        return empty, np.zeros(0)
    if selector.needs_model:
        _check_fitted(model, strategy)
    rng = random_generator(random_state)
    try:
        return selector(model, pool, min(m, len(pool)), log_q, rng, **options)
    except TypeError as e:
        if "unexpected keyword" in str(e):
            raise SscrfError(f"strategy {short_repr(strategy)}: {e}") from None
        raise
