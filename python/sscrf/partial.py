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

from collections.abc import Sequence

import numpy as np

from . import _core
from .errors import SscrfError
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

_SET_TYPES = (set, frozenset, tuple)


# -- the annotation types -----------------------------------------------------------


class Alternatives(Sequence):
    """The acceptable labelings of one sentence, as a list of whole label sequences.

    Used as one sentence's entry of ``y`` in :meth:`sscrf.CRF.fit` (and of
    ``allowed=`` in prediction): training maximises ``log Σ_k p(y_k | x)``
    over exactly these labelings.

    As a sequence it has one item per *token*, so code that reads ``y``
    token by token sees the per-token label sets (an over-approximation):
    ``alt[t]`` is the label at token ``t`` when every alternative agrees,
    else the ``frozenset`` of the labels the alternatives give it.

    Parameters
    ----------
    labelings : iterable of sequences of str
        At least one, all of the same length. Duplicates are dropped, order
        is kept.

    Attributes
    ----------
    labelings : tuple of tuple of str
    """

    __slots__ = ("labelings",)

    def __init__(self, labelings):
        if isinstance(labelings, (str, bytes)) or not hasattr(labelings, "__iter__"):
            raise SscrfError("Alternatives takes a list of label sequences")
        out, seen = [], set()
        for k, seq in enumerate(labelings):
            if isinstance(seq, (str, bytes)) or not hasattr(seq, "__iter__"):
                raise SscrfError(f"alternative {k} must be a sequence of labels, "
                                 f"not {type(seq).__name__}")
            seq = tuple(seq)
            for t, label in enumerate(seq):
                if not isinstance(label, str):
                    raise SscrfError(f"alternative {k}, token {t}: a label must be a string, "
                                     f"not {type(label).__name__}")
            if out and len(seq) != len(out[0]):
                raise SscrfError(f"alternative {k} has {len(seq)} labels, alternative 0 has "
                                 f"{len(out[0])}")
            if seq not in seen:
                seen.add(seq)
                out.append(seq)
        if not out:
            raise SscrfError("Alternatives needs at least one labeling")
        self.labelings = tuple(out)

    def __len__(self):
        return len(self.labelings[0])

    def __getitem__(self, t):
        if isinstance(t, slice):
            return [self[i] for i in range(*t.indices(len(self)))]
        labels = {seq[t] for seq in self.labelings}
        if len(labels) == 1:
            return next(iter(labels))
        return frozenset(labels)

    def __eq__(self, other):
        return isinstance(other, Alternatives) and set(self.labelings) == set(other.labelings)

    def __hash__(self):
        return hash(frozenset(self.labelings))

    def __repr__(self):
        return f"Alternatives({[list(seq) for seq in self.labelings]!r})"


def _members(label, where):
    """A token's annotation as a tuple of label strings, or None for 'any label'."""
    if label is None:
        return None
    if isinstance(label, str):
        return (label,)
    if isinstance(label, _SET_TYPES):
        members = tuple(label)
        if not members:
            raise SscrfError(f"{where}: empty label set (use None for 'any label')")
        for m in members:
            if not isinstance(m, str):
                raise SscrfError(f"{where}: label set members must be strings, found {m!r}")
        return members
    raise SscrfError(f"{where}: a label must be a string, a set of strings or None, "
                     f"not {type(label).__name__}")


def check_annotation(seq, n_tokens, s, name="y"):
    """Validate sentence ``s``'s annotation (see the module docstring); raises SscrfError."""
    if isinstance(seq, Alternatives):
        if len(seq) != n_tokens:
            raise SscrfError(f"sentence {s}: {n_tokens} tokens but alternatives of {len(seq)} "
                             "labels")
        return
    if isinstance(seq, (str, bytes)) or not hasattr(seq, "__len__"):
        raise SscrfError(f"{name}[{s}] must be a list of labels, not {type(seq).__name__}")
    if len(seq) != n_tokens:
        raise SscrfError(f"sentence {s}: {n_tokens} tokens but {len(seq)} labels")
    for t, label in enumerate(seq):
        _members(label, f"sentence {s}, token {t}")


def is_complete(seq):
    """Whether an annotation gives exactly one label per token (plain strings)."""
    if isinstance(seq, Alternatives):
        return False
    # the label types, collected in C: a generator over a large corpus's
    # tokens took a visible part of fit()
    types = set(map(type, seq))
    return types <= {str} or all(issubclass(t, str) for t in types)


def label_view(y, labels=None):
    """``y`` with every sentence flattened to the label strings it names.

    Complete corpora are returned unchanged. With ``labels``, a label
    outside it (alone, in a set or in an alternative) raises naming the
    sentence and token. Used to build the label inventory: every label seen
    alone or inside a set.
    """
    if all(is_complete(seq) for seq in y):
        return y
    known = None if labels is None else set(labels)
    out = []
    for s, seq in enumerate(y):
        if isinstance(seq, Alternatives):
            flat = []
            for k, alt in enumerate(seq.labelings):
                for t, label in enumerate(alt):
                    if known is not None and label not in known:
                        raise SscrfError(f"sentence {s}, alternative {k}, token {t}: label "
                                         f"{label!r} is not in labels=")
                    flat.append(label)
            out.append(flat)
            continue
        flat = []
        for t, label in enumerate(seq):
            members = _members(label, f"sentence {s}, token {t}")
            if members is None:
                continue
            for m in members:
                if known is not None and m not in known:
                    what = "label" if isinstance(label, str) else f"label set {sorted(members)}:"
                    raise SscrfError(f"sentence {s}, token {t}: {what} {m!r} is not in labels=")
            flat.extend(members)
        out.append(flat)
    return out


# -- masks ---------------------------------------------------------------------------


def _label_id(label, label_index, where):
    i = label_index.get(label)
    if i is None:
        raise SscrfError(f"{where}: label {label!r} is not one of the model's labels")
    return i


def count_labelings(node, edge=None, cap=None):
    """Number of labelings allowed by a node mask (n, S) and an edge mask (n, S, S).

    ``edge[t, a, b]`` allows ``y[t-1] = a → y[t] = b``; row 0 is unused.
    With ``cap``, counts are clipped at ``cap`` along the way (the result is
    then ``min(count, cap)``), which keeps them in int64.
    """
    node = np.asarray(node, dtype=bool)
    n = node.shape[0]
    if n == 0:
        return 1
    counts = node[0].astype(np.int64)
    for t in range(1, n):
        step = np.broadcast_to(node[t], (node.shape[1], node.shape[1]))
        if edge is not None:
            step = step & edge[t]
        counts = counts @ step.astype(np.int64)
        if cap is not None:
            np.minimum(counts, cap, out=counts)
    total = int(counts.sum())
    return total if cap is None else min(total, cap)


class SentenceMasks:
    """What :func:`sentence_masks` finds for one sentence.

    Attributes
    ----------
    node : ndarray (n, S) bool
        Allowed labels per token.
    edge : ndarray (n, S, S) bool or None
        Allowed transitions into each token (row 0 unused, all True), for
        alternatives only.
    alternatives : ndarray (K, n) int32 or None
        Label ids of the alternatives, for alternatives only.
    exact : bool
        Whether the masks allow exactly the annotation's labelings (always
        True for per-token annotations).
    """

    __slots__ = ("node", "edge", "alternatives", "exact")

    def __init__(self, node, edge, alternatives, exact):
        self.node, self.edge, self.alternatives, self.exact = node, edge, alternatives, exact

    @property
    def complete(self):
        """One label per token: the masks are one-hot."""
        return bool(np.all(self.node.sum(axis=1) == 1))

    @property
    def unconstrained(self):
        """Every label allowed everywhere (the annotation says nothing)."""
        return self.edge is None and bool(self.node.all())

    def singleton_ids(self):
        """Per token, the label id where exactly one label is allowed, else −1."""
        ids = np.argmax(self.node, axis=1).astype(np.int32)
        ids[self.node.sum(axis=1) != 1] = -1
        return ids


def sentence_masks(seq, label_index, where="sentence"):
    """Node (and for :class:`Alternatives`, edge) masks of one sentence's annotation.

    Parameters
    ----------
    seq : sequence of (str, set of str, None), or Alternatives
    label_index : dict label → id
    where : str
        Prefix of error messages (e.g. ``"sentence 3"``).

    Returns
    -------
    SentenceMasks
    """
    S = len(label_index)
    n = len(seq)
    if isinstance(seq, Alternatives):
        ids = np.array([[_label_id(label, label_index, f"{where}, alternative {k}, token {t}")
                         for t, label in enumerate(alt)] for k, alt in enumerate(seq.labelings)],
                       dtype=np.int32).reshape(len(seq.labelings), n)
        node = np.zeros((n, S), dtype=bool)
        edge = np.zeros((n, S, S), dtype=bool)
        if n:
            edge[0] = True
        for t in range(n):
            node[t, ids[:, t]] = True
            if t:
                edge[t, ids[:, t - 1], ids[:, t]] = True
        K = len(ids)
        exact = count_labelings(node, edge, cap=K + 1) == K
        return SentenceMasks(node, edge, ids, exact)
    node = np.zeros((n, S), dtype=bool)
    for t, label in enumerate(seq):
        members = _members(label, f"{where}, token {t}")
        if members is None:
            node[t] = True
        else:
            for m in members:
                node[t, _label_id(m, label_index, f"{where}, token {t}")] = True
    return SentenceMasks(node, None, None, True)


def corpus_masks(annotations, lengths, label_index, name="allowed"):
    """Corpus node mask (N, S), edge mask (N, S, S) or None, and the inexact sentences.

    ``annotations[s]`` may be None (no constraint on sentence ``s``). The
    edge mask is built only when some sentence is an :class:`Alternatives`.

    Returns
    -------
    node, edge, inexact : ndarray, ndarray or None, dict s → SentenceMasks
        ``inexact`` holds the sentences whose alternatives the masks
        over-approximate.
    """
    S = len(label_index)
    N = int(sum(lengths))
    node = np.ones((N, S), dtype=bool)
    any_alt = any(isinstance(a, Alternatives) for a in annotations)
    edge = np.ones((N, S, S), dtype=bool) if any_alt else None
    inexact = {}
    k = 0
    for s, (ann, n) in enumerate(zip(annotations, lengths)):
        if ann is not None:
            check_annotation(ann, n, s, name)
            m = sentence_masks(ann, label_index, f"{name}[{s}]")
            node[k:k + n] = m.node
            if m.edge is not None:
                edge[k:k + n] = m.edge
            if not m.exact:
                inexact[s] = m
        k += n
    return node, edge, inexact


# -- corpora and terms ---------------------------------------------------------------------


def _ranges(starts, stops):
    """Concatenation of ``arange(a, b)`` for each pair (vectorised)."""
    starts = np.asarray(starts, dtype=np.int64)
    lengths = np.asarray(stops, dtype=np.int64) - starts
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    keep = lengths > 0
    starts, lengths = starts[keep], lengths[keep]
    ends = np.cumsum(lengths)
    step = np.ones(total, dtype=np.int64)
    step[0] = starts[0]
    step[ends[:-1]] = starts[1:] - (starts[:-1] + lengths[:-1] - 1)
    return np.cumsum(step)


def subset_features(features, sentences):
    """The rows of ``features`` (a :class:`sscrf.features.Features`) of the given sentences.

    ``sentences`` may repeat a sentence. Returns ``(Features, token_index)``
    where ``token_index`` maps the new tokens to the old ones.
    """
    from .features import Features

    sentences = np.asarray(sentences, dtype=np.int64)
    offsets = np.asarray(features.offsets)
    tokens = _ranges(offsets[sentences], offsets[sentences + 1])
    indptr = np.asarray(features.indptr)
    entries = _ranges(indptr[tokens], indptr[tokens + 1])
    new_indptr = np.zeros(len(tokens) + 1, dtype=np.int64)
    np.cumsum(indptr[tokens + 1] - indptr[tokens], out=new_indptr[1:])
    new_offsets = np.zeros(len(sentences) + 1, dtype=np.int64)
    np.cumsum(offsets[sentences + 1] - offsets[sentences], out=new_offsets[1:])
    sub = Features(new_indptr, np.ascontiguousarray(features.indices[entries]),
                   np.ascontiguousarray(features.values[entries]), new_offsets,
                   features.n_attributes)
    return sub, tokens


def compile_corpus(features, labels=None, weights=None, mask=None, edge_mask=None,
                   n_labels=None):
    """A :class:`sscrf._core.Corpus` of ``features`` with optional labels, weights and masks;
    with ``n_labels``, chunked for training a model of that many labels."""
    chunk = {} if n_labels is None else {"chunk_tokens": _core.chunk_tokens_for(n_labels)}
    return _core.Corpus(features.indptr, features.indices, features.values, features.offsets,
                        features.n_attributes, labels, weights, mask, edge_mask, **chunk)


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
        from .model import _encode_labels

        labels = _encode_labels(y, label_index) if token_labels is None else token_labels
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
    from .model import _check_sentences

    X = _check_sentences(X, "X")
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
    from .model import _check_labeled

    return _check_labeled(X, y, allow_empty_corpus=True, partial=True)


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
            members = _members(label, f"sentence {s}, token {t}")
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
            members = _members(label, f"sentence {s}, token {t}")
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
            if len(set(_members(label, f"sentence {s}, token {t}"))) > 1:
                out.add(word)
    return out
