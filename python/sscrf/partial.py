"""Partial, ambiguous and alternative annotations (Tsuboi et al. 2008).

An annotation of a sentence is either

- a sequence with one entry per token: a label (``str``), a set of
  acceptable labels (``set``, ``frozenset`` or ``tuple`` of ``str``: an
  ambiguous annotation such as ``{"VBG", "JJ"}``), or ``None`` (not
  annotated: any label); or
- an :class:`Alternatives`: a list of whole acceptable labelings, for when
  the acceptable labelings are not a product of per-token sets (two
  acceptable boundaries of one mention: ``B I`` or ``O B``, where the
  per-token sets ``{B,O} {I,B}`` would also admit ``B B`` and ``O I``).

Training maximises the marginalised likelihood ``log P(Y_L | x) = log Z_L −
log Z`` (Tsuboi et al. eq. 3), where ``Z_L`` sums over the labelings the
annotation allows. Per-token sets become a node mask of allowed labels;
alternatives become a node mask plus an edge mask of allowed transitions.
Node and edge masks represent a set of alternatives exactly only when the set
is closed under exchanging suffixes at a shared label (``B I I O`` and ``O B
I I`` share ``I`` at token 2, so masks would also admit ``B I I I`` and ``O B
I O``); :func:`sentence_masks` detects this by counting the labelings the
masks allow, and such sentences are trained through the ``alternatives``
term, which sums over the listed labelings explicitly. Either way the
objective is exactly ``−log Σ_{y ∈ alternatives} p(y | x)``.

The module also holds the baselines of Tsuboi et al. §5 (``argmax``,
``first``, ``random``, ``discard``), the annotation cost (labeled tokens)
and :func:`ambiguous_words` for the APA metric (:func:`sscrf.metrics.apa`).
"""

import numpy as np

from . import _core
from .annotations import (Alternatives, SentenceMasks, check_annotation, corpus_masks,
                          count_labelings, is_complete, label_members, label_view,
                          sentence_masks)
from .corpus import compile_corpus, subset_features
from .errors import SscrfError
from .inputs import check_labeled, check_sentences, encode_labels
from .objectives import OBJECTIVES, Term, register

__all__ = [
    "Alternatives",
    "is_complete",
    "label_view",
    "sentence_masks",
    "count_labelings",
    "corpus_masks",
    "labeled_terms",
    "AlternativesLikelihood",
    "fill_argmax",
    "fill_first",
    "fill_random",
    "discard",
    "apply_baseline",
    "BASELINES",
    "annotation_cost",
    "ambiguous_words",
]

# -- corpora and terms ---------------------------------------------------------------------


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

    def __init__(self, features, labels, groups, layout, n_threads, weight=1.0,
                 sentence_weights=None):
        super().__init__(compile_corpus(features, weights=sentence_weights,
                                        n_labels=layout.n_labels), layout, n_threads, weight)
        self.alternatives = _core.AlternativeLabelings(self.corpus, labels, groups)

    def _evaluate(self, theta, out):
        return _core.alternatives_likelihood(self.corpus, self.layout, theta, self.n_threads,
                                             self.alternatives, out=out)


def labeled_terms(features, y, label_index, weights, layout, n_threads, token_labels=None):
    """The training terms of annotated sentences.

    Complete sentences go to the ``likelihood`` term; sentences with sets,
    ``None`` or alternatives to ``partial_likelihood`` (through node masks,
    and node plus edge masks for alternatives the masks represent exactly)
    or to ``alternatives`` (the rest). Sentences whose annotation allows
    every labeling add nothing and are left out.

    ``token_labels``: the label ids of the tokens when already encoded
    (only used when every sentence is complete).

    Returns
    -------
    (list, list)
        The ``likelihood`` term (if any), then the others.
    """
    if all(is_complete(seq) for seq in y):
        labels = encode_labels(y, label_index) if token_labels is None else token_labels
        return [OBJECTIVES["likelihood"](compile_corpus(features, labels=labels, weights=weights,
                                                        n_labels=layout.n_labels),
                                         layout, n_threads)], []
    masks = [sentence_masks(seq, label_index, f"sentence {s}") for s, seq in enumerate(y)]
    complete, node_only, with_edges, inexact = [], [], [], []
    for s, m in enumerate(masks):
        if m.complete:
            complete.append(s)
        elif m.unconstrained:
            continue
        elif m.edge is None:
            node_only.append(s)
        elif m.exact:
            with_edges.append(s)
        else:
            inexact.append(s)
    w = None if weights is None else np.asarray(weights, dtype=np.float64)

    def sub_weights(ids):
        return None if w is None else np.ascontiguousarray(w[ids])

    supervised, others = [], []
    if complete:
        sub, _ = subset_features(features, complete)
        labels = np.concatenate([masks[s].singleton_ids() for s in complete])
        supervised.append(OBJECTIVES["likelihood"](
            compile_corpus(sub, labels=labels, weights=sub_weights(complete),
                           n_labels=layout.n_labels), layout, n_threads))
    for ids, edges in ((node_only, False), (with_edges, True)):
        if not ids:
            continue
        sub, _ = subset_features(features, ids)
        node = np.concatenate([masks[s].node for s in ids])
        edge = np.concatenate([masks[s].edge for s in ids]) if edges else None
        corpus = compile_corpus(sub, weights=sub_weights(ids), mask=node, edge_mask=edge,
                                n_labels=layout.n_labels)
        others.append(OBJECTIVES["partial_likelihood"](corpus, layout, n_threads))
    if inexact:
        groups = [g for g, s in enumerate(inexact) for _ in range(len(masks[s].alternatives))]
        sub, _ = subset_features(features, inexact)
        labels = np.concatenate([row for s in inexact for row in masks[s].alternatives])
        sw = None if w is None else w[inexact]
        others.append(OBJECTIVES["alternatives"](sub, labels.astype(np.int32), groups, layout,
                                                 n_threads, sentence_weights=sw))
    return supervised, others


# -- constrained inference ----------------------------------------------------------


def _check_allowed(allowed, X):
    if isinstance(allowed, (str, bytes, dict)) or not hasattr(allowed, "__len__"):
        raise SscrfError(f"allowed must be a list with one entry per sentence, "
                         f"not {type(allowed).__name__}")
    allowed = list(allowed)
    if len(allowed) != len(X):
        raise SscrfError(f"X has {len(X)} sentences but allowed has {len(allowed)}")
    return allowed


def constrained_inputs(model, X, allowed):
    """Compile ``X`` with the masks of ``allowed`` for constrained decoding.

    Returns
    -------
    corpus, features, allowed_list, inexact
        ``inexact``: dict sentence → SentenceMasks of alternatives the masks
        over-approximate (decoded exactly afterwards by :func:`exact_alternatives`).
    """
    X = check_sentences(X, "X")
    allowed = _check_allowed(allowed, X)
    features = model.extractor_.transform(X)
    lengths = np.diff(features.offsets)
    label_index = {label: i for i, label in enumerate(model.classes_)}
    node, edge, inexact = corpus_masks(allowed, lengths, label_index)
    corpus = compile_corpus(features, mask=node, edge_mask=edge)
    return corpus, features, allowed, inexact


def exact_alternatives(model, features, inexact):
    """Per inexact sentence, the alternatives' label ids (K, n) and log p(y_k | x)."""
    out = {}
    if not inexact:
        return out
    sentences = sorted(inexact)
    repeats = [s for s in sentences for _ in range(len(inexact[s].alternatives))]
    sub, _ = subset_features(features, repeats)
    labels = np.concatenate([row for s in sentences for row in inexact[s].alternatives])
    corpus = compile_corpus(sub, labels=labels.astype(np.int32))
    lp = _core.log_probability_corpus(corpus, model._layout(), model.coef_, model._threads())
    k = 0
    for s in sentences:
        K = len(inexact[s].alternatives)
        out[s] = (inexact[s].alternatives, lp[k:k + K])
        k += K
    return out


def constrained_nbest(model, X, k, allowed):
    """:meth:`sscrf.CRF.predict_nbest` restricted to ``allowed`` (see there)."""
    from . import lattice
    from .nbest import _potentials, labelings_with_log_p

    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"k must be an integer, got {type(k).__name__}")
    if k < 1:
        raise ValueError(f"k must be a positive integer, got {k}")
    corpus, features, allowed, inexact = constrained_inputs(model, X, allowed)
    del corpus
    E, offsets, T, start, end = _potentials(model, X)
    label_index = {label: i for i, label in enumerate(model.classes_)}
    exact = exact_alternatives(model, features, inexact)
    classes = list(model.classes_)
    out = []
    for s in range(len(offsets) - 1):
        Es = E[offsets[s]:offsets[s + 1]]
        log_z = lattice.log_partition(Es, T, start, end)
        if s in exact:
            ids, lp = exact[s]
            order = sorted(range(len(lp)), key=lambda i: (-lp[i], tuple(ids[i])))[:k]
            out.append([([classes[i] for i in ids[j]], float(lp[j])) for j in order])
            continue
        if allowed[s] is None:
            mask = edge = None
        else:
            m = sentence_masks(allowed[s], label_index, f"allowed[{s}]")
            mask, edge = m.node, (None if m.edge is None else m.edge[1:])
        paths, scores = lattice.nbest(Es, T, k, start, end, mask, edge)
        out.append(labelings_with_log_p(paths, scores, log_z, classes))
    return out


# -- baselines (Tsuboi et al. §5) -------------------------------------------------------


def _check_corpus(X, y):
    return check_labeled(X, y, allow_empty_corpus=True, partial=True)


def fill_argmax(model, X, y):
    """``argmax``: replace each incomplete annotation by ``model``'s best consistent labeling.

    The constrained Viterbi path (``model.predict(X, allowed=y)``, exact
    for alternatives too); complete sentences are kept as they are.

    Returns
    -------
    list of list of str
    """
    X, y = _check_corpus(X, y)
    todo = [s for s, seq in enumerate(y) if not is_complete(seq)]
    out = [list(seq) if is_complete(seq) else None for seq in y]
    if todo:
        filled = model.predict([X[s] for s in todo], allowed=[y[s] for s in todo])
        for s, labels in zip(todo, filled):
            out[s] = labels
    return out


def _first_member(label):
    if isinstance(label, tuple):
        return label[0]
    return sorted(label)[0]


def fill_first(y):
    """``first``: the first label of each ambiguous set, the first of alternatives.

    "First" is the order of a ``tuple``; a ``set``/``frozenset`` (what
    :func:`sscrf.io.read_conll` gives) has none, so its alphabetically first
    member is taken. ``None`` (not annotated) stays ``None``.
    """
    out = []
    for s, seq in enumerate(y):
        if isinstance(seq, Alternatives):
            out.append(list(seq.labelings[0]))
            continue
        row = []
        for t, label in enumerate(seq):
            members = label_members(label, f"sentence {s}, token {t}")
            row.append(None if members is None else
                       (label if isinstance(label, str) else _first_member(label)))
        out.append(row)
    return out


def fill_random(y, random_state=None):
    """``random``: a uniformly random label of each ambiguous set (random alternative).

    Members are drawn from the sorted set, so the result depends only on
    ``random_state``. ``None`` (not annotated) stays ``None``.
    """
    rng = np.random.default_rng(random_state)
    out = []
    for s, seq in enumerate(y):
        if isinstance(seq, Alternatives):
            out.append(list(seq.labelings[int(rng.integers(len(seq.labelings)))]))
            continue
        row = []
        for t, label in enumerate(seq):
            members = label_members(label, f"sentence {s}, token {t}")
            if members is None or isinstance(label, str):
                row.append(label)
            else:
                members = sorted(set(members))
                row.append(members[int(rng.integers(len(members)))])
        out.append(row)
    return out


def discard(X, y):
    """``discard``: keep only the completely annotated sentences.

    Returns
    -------
    X_kept, y_kept, kept : list, list, list of int
    """
    kept = [s for s, seq in enumerate(y) if is_complete(seq)]
    return [X[s] for s in kept], [list(y[s]) for s in kept], kept


def apply_baseline(method, X, y, model=None, random_state=None):
    """Turn incomplete annotations into training data by one of the baselines.

    Parameters
    ----------
    method : {"argmax", "first", "random", "discard"}
        ``argmax`` needs ``model``. ``first`` and ``random`` resolve sets and
        alternatives and then drop the sentences that still hold ``None``.
    X, y : training sentences and their annotations
    model : CRF or None
    random_state : int, Generator or None

    Returns
    -------
    X_out, y_out : lists of complete training data
    """
    if method not in BASELINES:
        raise SscrfError(f"unknown baseline {method!r}; use one of {', '.join(BASELINES)}")
    X = list(X)
    y = list(y)
    if method == "argmax":
        if model is None:
            raise SscrfError("the argmax baseline needs a model")
        return X, fill_argmax(model, X, y)
    if method == "first":
        y = fill_first(y)
    elif method == "random":
        y = fill_random(y, random_state)
    X_out, y_out, _ = discard(X, y)
    return X_out, y_out


BASELINES = ("argmax", "first", "random", "discard")


# -- cost and evaluation helpers ---------------------------------------------------------


def annotation_cost(y):
    """Number of annotated tokens: tokens whose annotation is not ``None``.

    A set counts as one annotated token; an :class:`Alternatives` sentence
    counts all its tokens.
    """
    total = 0
    for seq in y:
        if isinstance(seq, Alternatives):
            total += len(seq)
        else:
            total += sum(1 for label in seq if label is not None)
    return total


def ambiguous_words(words, y):
    """The words with an ambiguous annotation somewhere: the set A of APA.

    Parameters
    ----------
    words : list of list of str
        One word per token (e.g. the first token column).
    y : annotations
        A token is ambiguous when its annotation is a set of two or more
        labels (or alternatives disagree on it).

    Returns
    -------
    set of str
    """
    out = set()
    for s, (ws, seq) in enumerate(zip(words, y)):
        for t, (word, label) in enumerate(zip(ws, seq)):
            if label is None or isinstance(label, str):
                continue
            if len(set(label_members(label, f"sentence {s}, token {t}"))) > 1:
                out.add(word)
    return out
