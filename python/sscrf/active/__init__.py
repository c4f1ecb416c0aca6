"""Active learning: sentence selectors, quota sampling, an n-gram q(x) and the pool loop.

Modules: :mod:`~sscrf.active.selectors`, :mod:`~sscrf.active.ngram`,
:mod:`~sscrf.active.learner`.

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
one. Only :func:`~sscrf.active.learner.partial_examples` differs between the two.
"""

from .learner import ActiveLearner, gold_oracle, simulate
from .ngram import BOS, EOS, UNK, NgramModel, sokolovska_weights
from .selectors import SELECTORS, register_selector, select

__all__ = [
    "BOS",
    "EOS",
    "UNK",
    "SELECTORS",
    "register_selector",
    "select",
    "NgramModel",
    "sokolovska_weights",
    "ActiveLearner",
    "gold_oracle",
    "simulate",
]
