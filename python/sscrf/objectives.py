"""The objective registry: training minimises a weighted sum of terms.

Each term owns its data (a compiled corpus) and exposes
``value_and_gradient(theta) -> (float, ndarray)`` on the flat parameter
vector ``theta = [W entries | T (S×S) | start (S) | end (S)]``, returning its
contribution to the loss (already multiplied by its weight). The L2 prior is
not a term: it belongs to the trainer, as in CRFsuite.

New terms register with ``@register("name")`` and are looked up in
``OBJECTIVES``.
"""

import numpy as np

from . import _core

OBJECTIVES = {}


def register(name):
    """Class decorator adding a term class to ``OBJECTIVES`` under ``name``."""

    def decorate(cls):
        if name in OBJECTIVES:
            raise ValueError(f"objective term {name!r} is already registered")
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

    name = None

    def __init__(self, corpus, layout, n_threads, weight=1.0):
        self.corpus = corpus
        self.layout = layout
        self.n_threads = n_threads
        self.weight = float(weight)

    def value_and_gradient(self, theta):
        """Loss contribution and its gradient, shape ``(layout.n_parameters,)``."""
        value, grad = self._evaluate(np.ascontiguousarray(theta, dtype=np.float64))
        if self.weight != 1.0:
            value, grad = self.weight * value, self.weight * grad
        return value, grad

    def _evaluate(self, theta):
        raise NotImplementedError


@register("likelihood")
class Likelihood(Term):
    """Negative conditional log-likelihood of fully labeled sentences.

    ``Σ_x w_x (log Z(x) − score(y_x))`` with per-sentence weights ``w_x`` from
    the corpus (1 by default).
    """

    def _evaluate(self, theta):
        return _core.likelihood(self.corpus, self.layout, theta, self.n_threads)


class Objective:
    """Sum of terms plus the L2 prior ``c2·‖θ‖²`` (CRFsuite's convention).

    Callable as ``objective(theta) -> (loss, gradient)``, the form
    ``scipy.optimize.minimize(..., jac=True)`` takes.
    """

    def __init__(self, terms, c2):
        self.terms = list(terms)
        self.c2 = float(c2)

    def __call__(self, theta):
        loss = self.c2 * float(theta @ theta)
        grad = (2.0 * self.c2) * theta
        for term in self.terms:
            value, g = term.value_and_gradient(theta)
            loss += value
            grad += g
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

    def __init__(self, corpus, layout, n_threads, weight=1.0, method="fast"):
        if method not in ("fast", "jiao"):
            raise ValueError(f"entropy method must be 'fast' or 'jiao', not {method!r}")
        super().__init__(corpus, layout, n_threads, weight)
        self.method = method

    def _evaluate(self, theta):
        return _core.entropy_objective(self.corpus, self.layout, theta, self.n_threads,
                                       self.method)


@register("partial_likelihood")
class PartialLikelihood(Term):
    """Marginalised likelihood of partial and ambiguous annotations (Tsuboi et al. 2008, eq. 3-4).

    ``Σ_x w_x (log Z(x) − log Z_L(x))``, where ``Z_L`` sums over the labelings
    the corpus masks allow (a node mask of allowed labels per token and,
    for whole alternative labelings, an edge mask of allowed transitions).
    A one-hot mask gives the ordinary likelihood; an all-allowed one gives 0.
    The gradient ``p − p_L`` takes two forward-backward passes.
    """

    def _evaluate(self, theta):
        return _core.partial_likelihood(self.corpus, self.layout, theta, self.n_threads)
