"""The objective registry: training minimises a weighted sum of terms.

Each term owns its data (a compiled corpus) and exposes
``value_and_gradient(theta, out=None) -> (float, ndarray)`` on the flat parameter
vector ``theta = [W entries | T (S×S) | start (S) | end (S)]``, returning its
contribution to the loss (already multiplied by its weight). The L2 prior is
not a term: it belongs to the optimised objective (:class:`Objective`), as in
CRFsuite, where the trainer adds it.

New terms register with ``@register("name")`` and are looked up in
``OBJECTIVES``.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Optional, Sequence, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _core
from .corpus import compile_corpus
from .errors import SscrfError, SscrfTypeError
from .inputs import (ENTROPY_METHODS, SUM_TOLERANCE, check_choice, check_positive_number,
                     check_threads)

OBJECTIVES: dict[str, type[Term]] = {}

_T = TypeVar("_T", bound="type[Term]")
_Result = tuple[float, NDArray[np.float64]]


def register(name: str) -> Callable[[_T], _T]:
    """Class decorator adding a term class to ``OBJECTIVES`` under ``name``."""

    def decorate(cls: _T) -> _T:
        if name in OBJECTIVES:
            raise SscrfError(f"objective term {name!r} is already registered")
        cls.name = name
        OBJECTIVES[name] = cls
        return cls

    return decorate


class Term:
    """Base class: a weighted loss term over one corpus.

    Parameters
    ----------
    corpus : sscrf._core.Corpus
        The term's data, compiled against the model's attribute vocabulary.
    layout : sscrf._core.Layout
        Which labels each attribute scores.
    n_threads : int
    weight : float
        Multiplies the term's value and gradient.
    """

    name: Optional[str] = None

    def __init__(self, corpus: Any, layout: Any, n_threads: int, weight: float = 1.0) -> None:
        self.corpus = corpus
        self.layout = layout
        self.n_threads = check_threads(n_threads, allow_none=False)
        self.weight = float(weight)

    def value_and_gradient(self, theta: ArrayLike, out: Optional[NDArray[np.float64]] = None
                           ) -> _Result:
        """Loss contribution and its gradient, shape ``(layout.n_parameters,)``.

        With ``out`` (a float64 array of that shape, not overlapping ``theta``)
        the gradient is written there and ``out`` is returned; otherwise it
        is a new array.
        """
        value, grad = self._evaluate(np.ascontiguousarray(theta, dtype=np.float64), out)
        if self.weight != 1.0:
            value = self.weight * value
            grad *= self.weight                  # grad is new, or the caller's out
        return value, grad

    def _evaluate(self, theta: NDArray[np.float64], out: Optional[NDArray[np.float64]]
                  ) -> _Result:
        """``(value, gradient)`` before the weight, the gradient written into
        ``out`` when it is not None."""
        raise NotImplementedError


@register("likelihood")
class Likelihood(Term):
    """Negative conditional log-likelihood of fully labeled sentences.

    ``Σ_x w_x (log Z(x) − score(y_x))`` with per-sentence weights ``w_x`` from
    the corpus (1 by default).
    """

    def _evaluate(self, theta: NDArray[np.float64], out: Optional[NDArray[np.float64]]
                  ) -> _Result:
        return _core.likelihood(self.corpus, self.layout, theta, self.n_threads, out=out)


class Objective:
    """Sum of terms plus the L2 prior ``c2·‖θ‖²`` (CRFsuite's convention).

    Callable as ``objective(theta) -> (loss, gradient)``, the form
    ``scipy.optimize.minimize(..., jac=True)`` takes, or as
    ``objective(theta, out)`` to write the gradient into ``out`` (a float64
    array of theta's shape, not overlapping it), which is then returned.
    ``n_threads`` threads add the prior (the sum has the same bits for any
    count).

    With ``reuse_gradient=True`` and no ``out``, the gradient is one buffer
    that the next call overwrites: a fresh array of millions of entries per
    evaluation costs page faults. The terms after the first write into one
    scratch array kept between calls, for the same reason. Calls from
    several threads at once are safe: a call that finds the kept buffers in
    use allocates its own (with ``reuse_gradient=True`` the gradient a call
    returns is still overwritten by the next call from any thread).
    """

    def __init__(self, terms: Sequence[Term], c2: float, n_threads: int = 1,
                 reuse_gradient: bool = False) -> None:
        self.terms = list(terms)
        self.c2 = float(c2)
        self.n_threads = int(n_threads)
        self.reuse_gradient = bool(reuse_gradient)
        self._gradient: Optional[NDArray[np.float64]] = None
        self._scratch: Optional[NDArray[np.float64]] = None
        self._buffers = threading.Lock()  # held by the call using the kept buffers
        # (name, value) of each term and the prior at the last evaluation,
        # for the progress display: which term moves the loss
        self.last_terms: list[tuple[str, float]] = []

    def __call__(self, theta: ArrayLike, out: Optional[NDArray[np.float64]] = None) -> _Result:
        if not self._buffers.acquire(blocking=False):
            return self._evaluate(theta, out, keep=False)
        try:
            return self._evaluate(theta, out, keep=True)
        finally:
            self._buffers.release()

    def _evaluate(self, theta: ArrayLike, out: Optional[NDArray[np.float64]], keep: bool
                  ) -> _Result:
        """Loss and gradient; ``keep``: use (and keep) the buffers kept between calls."""
        theta = np.ascontiguousarray(theta, dtype=np.float64)
        grad = out if out is not None else (self._gradient if keep else None)
        if out is not None:
            rule = f"out must be a writeable C-contiguous float64 array of shape {theta.shape}"
            if not isinstance(out, np.ndarray):
                raise SscrfTypeError(rule)
            if (out.dtype != np.float64 or out.shape != theta.shape
                    or not out.flags.c_contiguous or not out.flags.writeable):
                raise SscrfError(rule)
            if np.may_share_memory(out, theta):
                raise SscrfError("out must not overlap theta")
        if grad is None or grad.shape != theta.shape:
            grad = np.empty_like(theta)
            if self.reuse_gradient and keep:
                self._gradient = grad
        values = []
        for i, term in enumerate(self.terms):
            if i == 0 and isinstance(term, Term):
                value, g = term.value_and_gradient(theta, out=grad)
            elif isinstance(term, Term):
                if not keep:
                    scratch = np.empty_like(theta)
                else:
                    if self._scratch is None or self._scratch.shape != theta.shape:
                        self._scratch = np.empty_like(theta)
                    scratch = self._scratch
                value, g = term.value_and_gradient(theta, out=scratch)
            else:
                value, g = term.value_and_gradient(theta)
            if i == 0:
                if g is not grad:
                    np.copyto(grad, g)
            else:
                grad += g
            values.append(value)
        if not self.terms:
            grad.fill(0.0)
        loss = 0.0
        if self.c2 != 0.0:
            loss = self.c2 * _core.add_l2_prior(theta, grad, self.c2, self.n_threads)
        self.last_terms = [(getattr(term, "name", None) or type(term).__name__, value)
                           for term, value in zip(self.terms, values)] + [("l2", loss)]
        for value in values:
            loss += value
        return loss, grad


@register("entropy")
class Entropy(Term):
    """Entropy regularisation: ``Σ_x w_x H(Y | x)`` over unlabeled sentences.

    Minimising it (with a positive weight γ) rewards confident labelings of
    the unlabeled data (Jiao et al. 2006, eq. 2).

    Parameters
    ----------
    method : {"fast", "jiao"}
        ``fast`` (default): the gradient ``-Cov[F, s]`` by the O(n S²)
        covariance kernel; ``jiao``: the same gradient by Jiao et al.'s
        O(n² S³) nested dynamic programme, a reference for checks and
        benchmarks.
    """

    def __init__(self, corpus: Any, layout: Any, n_threads: int, weight: float = 1.0,
                 method: str = "fast") -> None:
        super().__init__(corpus, layout, n_threads, weight)
        self.method = check_choice(method, "entropy method", ENTROPY_METHODS)

    def _evaluate(self, theta: NDArray[np.float64], out: Optional[NDArray[np.float64]]
                  ) -> _Result:
        return _core.entropy_objective(self.corpus, self.layout, theta, self.n_threads,
                                       self.method, out=out)


@register("partial_likelihood")
class PartialLikelihood(Term):
    """Marginalised likelihood of partial and ambiguous annotations (Tsuboi et al. 2008, eq. 3-4).

    ``Σ_x w_x (log Z(x) − log Z_L(x))``, where ``Z_L`` sums over the labelings
    the corpus masks allow (a node mask of allowed labels per token and,
    for whole alternative labelings, an edge mask of allowed transitions).
    A one-hot mask gives the ordinary likelihood; an all-allowed one gives 0.
    The gradient ``p − p_L`` takes two forward-backward passes; the
    constrained one splits at every token the mask pins to one label, so
    that only the other tokens cost O(S²) each.
    """

    def _evaluate(self, theta: NDArray[np.float64], out: Optional[NDArray[np.float64]]
                  ) -> _Result:
        return _core.partial_likelihood(self.corpus, self.layout, theta, self.n_threads, out=out)


def check_targets(targets: ArrayLike, n_labels: int) -> NDArray[np.float64]:
    """GE targets as an (M ≥ 1, S) float array of rows that are distributions, or raise."""
    checked = np.array(targets, dtype=np.float64, ndmin=2)
    if checked.ndim != 2 or checked.shape[1] != n_labels or checked.shape[0] == 0:
        raise SscrfError(f"ge targets must be an array (M ≥ 1, {n_labels}), got shape "
                         f"{checked.shape}")
    if (not np.all(np.isfinite(checked)) or np.any(checked < 0)
            or np.any(np.abs(checked.sum(axis=1) - 1.0) > SUM_TOLERANCE)):
        raise SscrfError("ge targets must be non-negative and each row must sum to 1 "
                         f"(tolerance {SUM_TOLERANCE:g})")
    return checked


class GEPenalty:
    """The GE criterion as a function of the expectation sums ``q`` (M, S): its value and
    the score weights of the gradient pass (:class:`GE` documents both).

    Needs no corpus, only each constraint's firing count ``C_m``: the
    distributed fit adds the shards' ``q`` and evaluates it on the client.
    """

    DEFAULT_SMOOTHING = 1e-6

    def __init__(self, targets: ArrayLike, counts: ArrayLike, penalty: str = "kl",
                 smoothing: float = DEFAULT_SMOOTHING) -> None:
        self.penalty = check_choice(penalty, "ge penalty", ("kl", "l2"))
        self.smoothing = check_positive_number(smoothing, "ge smoothing")
        self.targets = np.asarray(targets, dtype=np.float64)
        self.counts = np.asarray(counts)
        empty = np.flatnonzero(self.counts == 0)
        if len(empty):
            raise SscrfError(f"ge constraint(s) {empty.tolist()} fire nowhere in the corpus")
        # KL terms only where the target is positive (0·log 0 = 0).
        self._positive = self.targets > 0
        self._target_log = np.where(self._positive,
                                    np.log(np.where(self._positive, self.targets, 1.0)), 0.0)

    def _smoothed(self, sums: NDArray[np.float64]) -> NDArray[np.float64]:
        raw = sums / self.counts[:, None]
        if self.penalty == "l2":
            return raw
        S = self.targets.shape[1]
        return (raw + self.smoothing) / (1.0 + S * self.smoothing)

    def _per_constraint(self, p_hat: NDArray[np.float64]) -> NDArray[np.float64]:
        if self.penalty == "l2":
            return ((p_hat - self.targets) ** 2).sum(axis=1)
        log_p_hat = np.log(np.where(self._positive, p_hat, 1.0))
        return np.where(self._positive, self.targets * (self._target_log - log_p_hat),
                        0.0).sum(axis=1)

    def score_weights(self, sums: NDArray[np.float64]) -> _Result:
        """The penalty's value and pass 2's weights ``∂loss/∂p̂_m / C_m`` (M, S)."""
        S = self.targets.shape[1]
        p_hat = self._smoothed(sums)
        value = float(self._per_constraint(p_hat).sum())
        if self.penalty == "l2":
            d_p_hat = 2.0 * (p_hat - self.targets)
            d_sums = 1.0 / self.counts
        else:
            d_p_hat = np.where(self._positive,
                               -self.targets / np.where(self._positive, p_hat, 1.0), 0.0)
            d_sums = 1.0 / (self.counts * (1.0 + S * self.smoothing))
        return value, np.ascontiguousarray(d_p_hat * d_sums[:, None])


@register("ge")
class GE(Term, GEPenalty):
    """Generalized expectation criteria on labeled features (Mann & McCallum 2008, §4).

    A constraint ``m`` is an input attribute with a target label distribution
    ``p̃_m``; it fires at the tokens of the unlabeled corpus where the
    attribute is present (its value is ignored). The model's distribution is
    the average node marginal over those ``C_m`` tokens,
    ``p̂_m = q_m / C_m`` with ``q_m = Σ_x Σ_{j: m fires} p(y_j | x)``. The
    term is

    - ``kl``: ``Σ_m KL(p̃_m ‖ p̂_m) = Σ_m Σ_{l: p̃_m(l) > 0} p̃_m(l) log(p̃_m(l) / p̂_m(l))``;
    - ``l2``: ``Σ_m ‖p̃_m − p̂_m‖²`` (MALLET's L2 GE criterion),

    times the term's weight λ.

    Smoothing (``kl`` only). Labels with a zero target contribute 0 to the
    value and the gradient (``0·log 0 = 0``). A model expectation at or near
    zero for a label with a positive target would make the KL infinite, so
    the KL uses ``p̂_m = (q_m / C_m + δ) / (1 + S·δ)`` — the expectation
    mixed with the uniform distribution at weight ``S·δ/(1 + S·δ)`` — with
    ``δ = smoothing`` (default 1e-6). Then ``p̂_m(l) ≥ δ/(1 + S·δ)``, the value
    is at most ``log((1 + S·δ)/δ)`` per constraint (≈ 13.8 + log(1+Sδ)), the
    score weights are at most ``1/(C_m·δ)``, and the gradient is the exact
    gradient of the smoothed value. The ``l2`` penalty has no singularity and
    uses the raw ``p̂_m = q_m / C_m``.

    Gradient: for a loss ``L(p̂)``, ``∂L/∂θ = Σ_x Cov_x[F, r_x(y)]`` with
    ``r_x(y) = Σ_j Σ_{m fires at j} w_m(y_j)`` and
    ``w_m = (∂L/∂p̂_m)·(∂p̂_m/∂q_m)``, e.g. ``w_m(l) = −p̃_m(l) / (p̂_m(l)·C_m·(1 + S·δ))``
    for the KL; the covariance kernel (docs/architecture.md, kernel 3) handles every
    constraint at once in O(n S²) per sentence. Each evaluation takes two
    chunked passes over the corpus (expectations, then gradient); both are
    deterministic, so value and gradient have the same bits for any thread
    count. The second pass reuses the emission scores ``E = X·W`` of the
    first when they take at most ``EMISSION_CACHE_BYTES`` (256 MiB, an
    array of n_tokens × S doubles kept with the term); larger corpora are
    scored twice instead.

    Parameters
    ----------
    corpus, layout, n_threads, weight : as :class:`Term` (weight = λ)
    constraint_of_attribute : int array (n_attributes,)
        Attribute id → constraint index ``m``, or −1 for attributes that are
        not constraints.
    targets : array (M, S)
        Row ``m`` is ``p̃_m``: non-negative, summing to 1.
    penalty : {"kl", "l2"}
    smoothing : float > 0
        δ above (``kl``).

    Attributes
    ----------
    firings : _core.ConstraintFirings
        Where each constraint fires in the corpus, and ``C_m`` (``counts``):
        what ``_core.ge_expectations`` and ``_core.ge_gradient`` read.

    Raises
    ------
    ValueError
        Bad targets or penalty, or a constraint that fires nowhere in the
        corpus (``C_m = 0``: no model expectation; drop it first).
    """

    EMISSION_CACHE_BYTES = 256 * 2**20

    def __init__(self, corpus: Any, layout: Any, n_threads: int, weight: float = 1.0, *,
                 constraint_of_attribute: ArrayLike, targets: ArrayLike, penalty: str = "kl",
                 smoothing: float = GEPenalty.DEFAULT_SMOOTHING) -> None:
        super().__init__(corpus, layout, n_threads, weight)
        targets = check_targets(targets, layout.n_labels)
        self.constraint_of_attribute = np.ascontiguousarray(constraint_of_attribute,
                                                            dtype=np.int64)
        self.firings = _core.ConstraintFirings(corpus, self.constraint_of_attribute,
                                               targets.shape[0])
        GEPenalty.__init__(self, targets, self.firings.counts, penalty, smoothing)
        # pass 1's scores for pass 2, allocated when first needed
        self._emissions: Optional[NDArray[np.float64]] = None
        self._emissions_in_use = threading.Lock()

    def expectations(self, theta: ArrayLike) -> NDArray[np.float64]:
        """The model's label distributions ``p̂`` (M, S), smoothed as the penalty uses them."""
        sums = _core.ge_expectations(self.corpus, self.layout,
                                     np.ascontiguousarray(theta, dtype=np.float64),
                                     self.n_threads, self.firings)
        return self._smoothed(sums)

    def divergences(self, theta: ArrayLike) -> NDArray[np.float64]:
        """Per-constraint penalty (M,) before the weight: KL or squared distance."""
        p_hat = self.expectations(theta)
        return self._per_constraint(p_hat)

    def _evaluate(self, theta: NDArray[np.float64], out: Optional[NDArray[np.float64]]
                  ) -> _Result:
        return self.passes(theta, out)

    def passes(self, theta: NDArray[np.float64], out: Optional[NDArray[np.float64]],
               scale: float = 1.0, entropy_weight: float = 0.0) -> _Result:
        """The two passes: ``scale`` times the penalty and its gradient, plus, with
        ``entropy_weight`` γ > 0, ``γ·Σ_x w_x H(Y | x)`` over the same corpus and its
        gradient, joined to pass 2 (:class:`EntropyAndGE`)."""
        S = self.targets.shape[1]
        # One evaluation at a time keeps its scores in the cache; another
        # thread's evaluation meanwhile scores the corpus twice (same bits).
        # Both passes get the same theta: pass 2 reads the rows pass 1 scored.
        cached = self._emissions_in_use.acquire(blocking=False)
        try:
            if (cached and self._emissions is None
                    and self.corpus.n_tokens * S * 8 <= self.EMISSION_CACHE_BYTES):
                self._emissions = np.empty((self.corpus.n_tokens, S))
            emissions = self._emissions if cached else None
            sums = _core.ge_expectations(self.corpus, self.layout, theta, self.n_threads,
                                         self.firings, emissions=emissions)
            value, score_weights = self.score_weights(sums)
            if entropy_weight == 0.0:
                grad = _core.ge_gradient(self.corpus, self.layout, theta, self.n_threads,
                                         self.firings, scale * score_weights, out=out,
                                         emissions=emissions)
                return scale * value, grad
            entropy, grad = _core.entropy_ge_gradient(
                self.corpus, self.layout, theta, self.n_threads, self.firings,
                scale * score_weights, entropy_weight, out=out, emissions=emissions)
            return scale * value + entropy, grad
        finally:
            if cached:
                self._emissions_in_use.release()


class EntropyAndGE(Term):
    """``γ·Σ_x w_x H(Y | x) + λ·GE`` over one unlabeled corpus, in GE's two passes.

    The same value and gradient as an :class:`Entropy` term of weight γ and
    the ``ge`` (or ``label_proportions``) term ``ge`` of weight λ, within
    rounding: the entropy's gradient joins GE's second pass, so the corpus is
    scored and its gradient back-projected once for both. Training builds it
    when both terms read the same unlabeled sentences with the ``fast``
    entropy: on 0.35M tokens of BC2GM with label proportions, 24 ms for the
    joined pass against 31 ms for the two terms'.

    Parameters
    ----------
    ge : GE
        The GE term; its corpus (for label proportions, the unlabeled corpus
        with the always-on attribute, whose entries of value 0 change no
        score) is the entropy's too, and its weight is λ.
    entropy_weight : float
        γ > 0.
    """

    def __init__(self, ge: GE, entropy_weight: float) -> None:
        super().__init__(ge.corpus, ge.layout, ge.n_threads, 1.0)
        self.ge = ge
        self.entropy_weight = float(entropy_weight)
        self.name = f"entropy+{ge.name or 'ge'}"

    def _evaluate(self, theta: NDArray[np.float64], out: Optional[NDArray[np.float64]]
                  ) -> _Result:
        return self.ge.passes(theta, out, scale=self.ge.weight,
                              entropy_weight=self.entropy_weight)


@register("alternatives")
class AlternativesLikelihood(Term):
    """``−Σ_x w_x log Σ_{y ∈ A_x} p(y | x)`` over explicit lists of alternative labelings.

    For alternatives that node and edge masks cannot represent exactly
    (see the module docstring). The corpus holds each sentence once;
    ``groups[k]`` is the sentence of alternative ``k`` (0, 1, 2, ... in
    order, each sentence at least once) and ``labels`` the alternatives'
    label ids one after another, each as long as its sentence. A labeling
    listed twice counts twice. ``sentence_weights`` are the sentences'
    weights ``w_x``.

    Since ``p(y_k | x) = exp(score(y_k)) / Z(x)``, the value per sentence is
    ``w_x (log Z(x) − log Σ_k exp score(y_k))`` and the gradient
    ``w_x (E_p[F] − Σ_k q_k F(y_k))`` with ``q_k = softmax_k score(y_k)``:
    one forward-backward per sentence, however many alternatives it has.

    Parameters
    ----------
    features : sscrf.features.Features
        The sentences' rows, one sequence per sentence.
    labels : ndarray (Σ_k n_{groups[k]},) int
    groups : ndarray (n_alternatives,) int
    sentence_weights : ndarray (n_sentences,) or None
    """

    def __init__(self, features: Any, labels: NDArray[Any], groups: NDArray[Any], layout: Any,
                 n_threads: int, weight: float = 1.0,
                 sentence_weights: Optional[ArrayLike] = None) -> None:
        super().__init__(compile_corpus(features, weights=sentence_weights,
                                        n_labels=layout.n_labels), layout, n_threads, weight)
        self.alternatives = _core.AlternativeLabelings(self.corpus, labels, groups)

    def _evaluate(self, theta: NDArray[np.float64], out: Optional[NDArray[np.float64]]
                  ) -> _Result:
        return _core.alternatives_likelihood(self.corpus, self.layout, theta, self.n_threads,
                                             self.alternatives, out=out)
