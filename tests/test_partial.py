"""Partial, ambiguous and alternative annotations (Tsuboi et al. 2008), against brute force.

References never come from the code under test: every quantity is
recomputed by enumerating all S**n labelings of tiny chains and keeping the
ones an annotation allows, decided directly from the annotation (a label, a
set, None, or a list of whole alternatives), never from the masks that
``sscrf.partial`` builds. Gradients are also checked by central finite
differences.
"""

import math

import numpy as np
import pytest

from reference import (all_labelings, brute_force, corpus_scores, pack_gradient,
                       random_rows)
from sscrf import CRF, _core, lattice
from sscrf.cli import main
from sscrf.errors import SscrfError
from sscrf.io import read_conll, write_conll
from sscrf.layout import ParameterLayout
from sscrf.metrics import apa
from sscrf.objectives import OBJECTIVES, Objective
from sscrf.partial import (Alternatives, BASELINES, ambiguous_words, annotation_cost,
                           apply_baseline, corpus_masks, count_labelings, discard, fill_argmax,
                           fill_first, fill_random, labeled_terms, sentence_masks)

# ---------------------------------------------------------------------------
# Brute-force references
# ---------------------------------------------------------------------------


def allows(annotation, y, classes):
    """Whether labeling ``y`` (label ids) is consistent with ``annotation``, read directly."""
    names = [classes[i] for i in y]
    if isinstance(annotation, Alternatives):
        return tuple(names) in set(annotation.labelings)
    for name, a in zip(names, annotation):
        if a is None:
            continue
        if isinstance(a, str):
            if name != a:
                return False
        elif name not in a:
            return False
    return True


def logsumexp(v):
    v = np.asarray(v, dtype=np.float64)
    m = v.max()
    return m + math.log(math.fsum(np.exp(v - m)))


def chain_scores(E, T, start, end, ys):
    """Scores of the labelings ``ys`` (K, n)."""
    n = E.shape[0]
    s = start[ys[:, 0]] + end[ys[:, -1]]
    for t in range(n):
        s = s + E[t, ys[:, t]]
    for t in range(1, n):
        s = s + T[ys[:, t - 1], ys[:, t]]
    return s


def expectations(ys, p, S):
    """Node (n, S), transition (S, S) expectations of labelings ``ys`` under weights ``p``."""
    n = ys.shape[1]
    node = np.zeros((n, S))
    for t in range(n):
        node[t] = np.bincount(ys[:, t], weights=p, minlength=S)
    trans = np.zeros((S, S))
    for t in range(1, n):
        trans += np.bincount(ys[:, t - 1] * S + ys[:, t], weights=p, minlength=S * S).reshape(S, S)
    return node, trans


def brute_partial(data, row_ptr, label_ids, theta, annotations, classes, weights=None):
    """Σ_x w_x (log Z − log Z_L) and its gradient, by enumeration."""
    S = len(classes)
    E_all, T, start, end = corpus_scores(data, theta, row_ptr, label_ids, S)
    dE_all = np.zeros_like(E_all)
    dT, dstart, dend = np.zeros((S, S)), np.zeros(S), np.zeros(S)
    total = []
    offsets = data["offsets"]
    for s, ann in enumerate(annotations):
        a, b = offsets[s], offsets[s + 1]
        w = 1.0 if weights is None else float(weights[s])
        E = E_all[a:b]
        ys = all_labelings(b - a, S)
        scores = chain_scores(E, T, start, end, ys)
        keep = np.array([allows(ann, y, classes) for y in ys])
        assert keep.any()
        log_z, log_zl = logsumexp(scores), logsumexp(scores[keep])
        total.append(w * (log_z - log_zl))
        p = np.exp(scores - log_z)
        pl = np.exp(np.where(keep, scores - log_zl, -np.inf))
        node_p, trans_p = expectations(ys, p, S)
        node_l, trans_l = expectations(ys, pl, S)
        dE = w * (node_p - node_l)
        dE_all[a:b] = dE
        dT += w * (trans_p - trans_l)
        dstart += dE[0]
        dend += dE[-1]
    grad = pack_gradient(data["X"], dE_all, dT, dstart, dend, row_ptr, label_ids)
    return math.fsum(total), grad



def central_differences(f, theta, h=1e-5):
    g = np.zeros_like(theta)
    for i in range(len(theta)):
        e = np.zeros_like(theta)
        e[i] = h
        g[i] = (f(theta + e) - f(theta - e)) / (2 * h)
    return g


# ---------------------------------------------------------------------------
# Tiny random corpora
# ---------------------------------------------------------------------------

CLASSES = ["A", "B", "C"]
INDEX = {c: i for i, c in enumerate(CLASSES)}


def random_data(rng, lengths, A=5, max_attrs=3):
    from sscrf.features import Features

    rows = random_rows(rng, lengths, A, max_attrs)
    features = Features(rows["indptr"], rows["indices"], rows["values"], rows["offsets"], A)
    return dict(features=features, X=rows["X"], offsets=rows["offsets"], A=A)


def random_annotation(rng, gold):
    """A per-token annotation of a gold labeling: keep, set containing gold, or None."""
    out = []
    for g in gold:
        r = rng.random()
        if r < 0.35:
            out.append(g)
        elif r < 0.7:
            others = [c for c in CLASSES if c != g]
            out.append(frozenset([g] + list(rng.choice(others, size=int(rng.integers(1, 3)),
                                                       replace=False))))
        else:
            out.append(None)
    return out


def compile_(features, **kw):
    return _core.Corpus(features.indptr, features.indices, features.values, features.offsets,
                        features.n_attributes, kw.get("labels"), kw.get("weights"),
                        kw.get("mask"), kw.get("edge_mask"))


def setup_partial(seed, lengths=(3, 1, 4, 2, 5, 3)):
    rng = np.random.default_rng(seed)
    data = random_data(rng, list(lengths))
    dense = ParameterLayout.every_pair(data["A"], 3)
    row_ptr, label_ids, layout = dense.row_ptr, dense.label_ids, dense.core
    theta = rng.normal(0, 1, size=layout.n_parameters)
    gold = [[CLASSES[i] for i in rng.integers(0, 3, size=n)] for n in lengths]
    return rng, data, row_ptr, label_ids, layout, theta, gold


# ---------------------------------------------------------------------------
# Alternatives and masks
# ---------------------------------------------------------------------------


def test_is_complete_means_one_string_label_per_token():
    from sscrf.partial import is_complete

    class Tag(str):
        pass

    assert is_complete([]) and is_complete(["B", "I"]) and is_complete(("O",))
    assert is_complete([Tag("B"), "O"]) and is_complete(np.array(["B", "O"]))
    for partial in (["B", None], [{"B", "I"}, "O"], [frozenset({"B"})], ["B", 1]):
        assert not is_complete(partial)
    assert not is_complete(Alternatives([["B", "O"]]))


def test_alternatives_is_a_sequence_of_token_sets():
    alt = Alternatives([["B", "I", "O"], ["O", "B", "O"], ["B", "I", "O"]])
    assert len(alt) == 3
    assert alt.labelings == (("B", "I", "O"), ("O", "B", "O"))  # duplicate dropped
    assert alt[0] == frozenset({"B", "O"}) and alt[2] == "O"
    assert list(alt) == [frozenset({"B", "O"}), frozenset({"I", "B"}), "O"]
    assert alt == Alternatives([["O", "B", "O"], ["B", "I", "O"]])
    assert "Alternatives(" in repr(alt)
    for bad, msg in [([], "at least one"), ("BIO", "list of label"), ([["A"], ["A", "B"]], "has 2"),
                     ([["A", 1]], "must be a string"), (["AB"], "sequence of labels")]:
        with pytest.raises(SscrfError, match=msg):
            Alternatives(bad)


def test_sentence_masks_of_sets_and_none():
    m = sentence_masks(["A", frozenset({"B", "C"}), None, ("C",)], INDEX)
    np.testing.assert_array_equal(m.node, [[1, 0, 0], [0, 1, 1], [1, 1, 1], [0, 0, 1]])
    assert m.edge is None and m.exact and not m.complete
    np.testing.assert_array_equal(m.singleton_ids(), [0, -1, -1, 2])
    assert sentence_masks(["A", ("B",)], INDEX).complete
    assert sentence_masks([None, None], INDEX).unconstrained
    with pytest.raises(SscrfError, match="token 1: label 'Z'"):
        sentence_masks(["A", {"B", "Z"}], INDEX)
    with pytest.raises(SscrfError, match="empty label set"):
        sentence_masks(["A", frozenset()], INDEX)


def test_alternatives_masks_detect_exactness():
    # Two boundaries of one mention sharing no interior label: exact.
    ok = sentence_masks(Alternatives([["A", "B", "C"], ["C", "A", "C"]]), INDEX)
    assert ok.exact and ok.edge is not None
    # B I I O vs O B I I share I at token 2: the masks also allow B I I I and O B I O.
    bad = sentence_masks(Alternatives([["A", "B", "B", "C"], ["C", "A", "B", "B"]]), INDEX)
    assert not bad.exact
    ys = all_labelings(4, 3)
    allowed = [tuple(y) for y in ys
               if all(bad.node[t, y[t]] for t in range(4))
               and all(bad.edge[t, y[t - 1], y[t]] for t in range(1, 4))]
    assert len(allowed) == 4 and (0, 1, 1, 1) in allowed and (2, 0, 1, 2) in allowed


@pytest.mark.parametrize("seed", range(6))
def test_count_labelings_matches_enumeration(seed):
    rng = np.random.default_rng(seed)
    n, S = int(rng.integers(1, 6)), 3
    node = rng.random((n, S)) < 0.7
    edge = rng.random((n, S, S)) < 0.6
    ys = all_labelings(n, S)
    count = sum(1 for y in ys if all(node[t, y[t]] for t in range(n))
                and all(edge[t, y[t - 1], y[t]] for t in range(1, n)))
    assert count_labelings(node, edge) == count
    assert count_labelings(node, edge, cap=2) == min(count, 2)
    assert count_labelings(node) == int(np.prod(node.sum(axis=1)))


# ---------------------------------------------------------------------------
# The objective against brute force
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_constrained_log_z_is_log_sum_over_allowed_labelings(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 6))
    E, T = rng.normal(0, 2, (n, 3)), rng.normal(0, 2, (3, 3))
    start, end = rng.normal(0, 1, 3), rng.normal(0, 1, 3)
    gold = [CLASSES[i] for i in rng.integers(0, 3, n)]
    alts = [gold] + [[CLASSES[i] for i in rng.integers(0, 3, n)] for _ in range(2)]
    for ann in (random_annotation(rng, gold), Alternatives(alts)):
        m = sentence_masks(ann, INDEX)
        ys = all_labelings(n, 3)
        keep = np.array([allows(ann, y, CLASSES) for y in ys])
        want = logsumexp(chain_scores(E, T, start, end, ys)[keep])
        edge = None if m.edge is None else m.edge[1:]
        got = lattice.log_partition(E, T, start, end, m.node, edge)
        if m.exact:
            assert got == pytest.approx(want, abs=1e-10)
        else:  # the masks over-approximate: more mass, never less
            assert got > want


@pytest.mark.parametrize("seed", range(4))
def test_all_allowed_mask_gives_zero(seed):
    _, data, _, _, layout, theta, gold = setup_partial(seed)
    f = data["features"]
    mask = np.ones((f.n_tokens, 3), dtype=bool)
    value, grad = OBJECTIVES["partial_likelihood"](compile_(f, mask=mask), layout, 1) \
        .value_and_gradient(theta)
    assert value == pytest.approx(0.0, abs=1e-10)
    np.testing.assert_allclose(grad, 0.0, atol=1e-10)
    # and fit-level assembly leaves such sentences out entirely
    sup, others = labeled_terms(f, [[None] * len(g) for g in gold], INDEX, None, layout, 1)
    assert sup == [] and others == []


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("weighted", [False, True])
def test_one_hot_mask_equals_ordinary_likelihood(seed, weighted):
    rng, data, row_ptr, label_ids, layout, theta, gold = setup_partial(seed)
    f = data["features"]
    weights = rng.uniform(0, 3, size=len(gold)) if weighted else None
    labels = np.array([INDEX[c] for g in gold for c in g], dtype=np.int32)
    mask = np.eye(3, dtype=bool)[labels]
    partial = OBJECTIVES["partial_likelihood"](compile_(f, mask=mask, weights=weights), layout, 1)
    full = OBJECTIVES["likelihood"](compile_(f, labels=labels, weights=weights), layout, 1)
    v1, g1 = partial.value_and_gradient(theta)
    v2, g2 = full.value_and_gradient(theta)
    v3, g3 = brute_partial(data, row_ptr, label_ids, theta, gold, CLASSES, weights)
    assert v1 == pytest.approx(v2, rel=1e-10) and v1 == pytest.approx(v3, rel=1e-10)
    np.testing.assert_allclose(g1, g2, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(g1, g3, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("seed", range(6))
def test_sets_and_none_match_brute_force(seed):
    rng, data, row_ptr, label_ids, layout, theta, gold = setup_partial(seed)
    f = data["features"]
    anns = [random_annotation(rng, g) for g in gold]
    weights = rng.uniform(0.2, 2.0, size=len(gold))
    node, edge, inexact = corpus_masks(anns, [len(g) for g in gold], INDEX)
    assert edge is None and not inexact
    term = OBJECTIVES["partial_likelihood"](compile_(f, mask=node, weights=weights), layout, 1)
    v, g = term.value_and_gradient(theta)
    bv, bg = brute_partial(data, row_ptr, label_ids, theta, anns, CLASSES, weights)
    assert v == pytest.approx(bv, rel=1e-10, abs=1e-12)
    np.testing.assert_allclose(g, bg, rtol=1e-9, atol=1e-10)


PINNING_PATTERNS = [
    # per token: a label index (pinned), a tuple (a set of labels), or None
    [0, None, None, 2],            # runs between pinned tokens at both ends
    [None, 1, 1, None, None],      # a run at each end, two pinned tokens together
    [None, 3, None, 4, None],      # runs of one token between pinned ones
    [5, 0, 1, 2, None],            # one run of one token at the end
    [None, (0, 2), 3, (1, 4, 5)],  # sets are runs too
    [2, 2, 2, 2, 2],               # every token pinned: no run at all
    [None, None, None, None],      # no token pinned: the whole chain
    [4],
]


@pytest.mark.parametrize("scale", [1.0, 60.0])
def test_pinned_tokens_split_the_constrained_lattice_exactly(scale):
    # forward_backward splits a node-masked lattice at the tokens it pins
    # to one label; with 6 labels the runs take the general (not the
    # 4-lane) scaled path, and at scale 60 most runs fall back to log space.
    classes = list("ABCDEF")
    S = len(classes)
    rng = np.random.default_rng(11)
    lengths = [len(p) for p in PINNING_PATTERNS]
    data = random_data(rng, lengths)
    dense = ParameterLayout.every_pair(data["A"], S)
    row_ptr, label_ids, layout = dense.row_ptr, dense.label_ids, dense.core
    theta = scale * rng.normal(0, 1, size=layout.n_parameters)

    def annotation(token):
        if token is None:
            return None
        if isinstance(token, tuple):
            return frozenset(classes[i] for i in token)
        return classes[token]

    anns = [[annotation(t) for t in p] for p in PINNING_PATTERNS]
    index = {c: i for i, c in enumerate(classes)}
    node, edge, inexact = corpus_masks(anns, lengths, index)
    assert edge is None and not inexact
    weights = rng.uniform(0.5, 2.0, size=len(anns))
    f = data["features"]
    term = OBJECTIVES["partial_likelihood"](compile_(f, mask=node, weights=weights), layout, 1)
    v, g = term.value_and_gradient(theta)
    bv, bg = brute_partial(data, row_ptr, label_ids, theta, anns, classes, weights)
    assert v == pytest.approx(bv, rel=1e-10, abs=1e-9)
    np.testing.assert_allclose(g, bg, rtol=1e-9, atol=1e-9)


def test_alternatives_term_sums_listed_labelings_by_enumeration():
    """The term on its own: weights, a labeling listed twice, one alternative,
    an empty sentence, against −Σ_x w_x log Σ_k p(y_k | x) enumerated, its
    gradient against finite differences of that reference, and the same bits
    at 1 and 3 threads."""
    rng = np.random.default_rng(11)
    lengths = [3, 0, 4, 2, 1]
    data = random_data(rng, lengths)
    dense = ParameterLayout.every_pair(data["A"], 3)
    row_ptr, label_ids, layout = dense.row_ptr, dense.label_ids, dense.core
    theta = rng.normal(0, 1, size=layout.n_parameters)
    alternatives = [[[0, 1, 2], [2, 0, 1], [0, 1, 2]],   # listed twice: counts twice
                    [[], []],                             # empty: log 2 of probability 1 each
                    [[1, 1, 0, 2]],                       # one alternative: the likelihood
                    [[0, 0], [1, 2], [2, 1], [0, 2]],
                    [[2], [0]]]
    weights = np.array([0.7, 1.3, 1.0, 2.5, 0.0])
    groups = [s for s, alts in enumerate(alternatives) for _ in alts]
    labels = np.array([l for alts in alternatives for y in alts for l in y], dtype=np.int32)

    def reference(th):
        E_all, T, start, end = corpus_scores(data, th, row_ptr, label_ids, 3)
        total = []
        for s, alts in enumerate(alternatives):
            a, b = data["offsets"][s], data["offsets"][s + 1]
            if b == a:
                total.append(-weights[s] * math.log(len(alts)))
                continue
            E = E_all[a:b]
            log_z = logsumexp(chain_scores(E, T, start, end, all_labelings(b - a, 3)))
            listed = logsumexp(chain_scores(E, T, start, end, np.array(alts)))
            total.append(weights[s] * (log_z - listed))
        return math.fsum(total)

    values = {}
    for k in (1, 3):
        term = OBJECTIVES["alternatives"](data["features"], labels, groups, layout, k,
                                          sentence_weights=weights)
        values[k] = term.value_and_gradient(theta)
    v, g = values[1]
    assert v == pytest.approx(reference(theta), rel=1e-12)
    np.testing.assert_allclose(g, central_differences(reference, theta), rtol=1e-6, atol=1e-7)
    assert values[3][0] == v and np.array_equal(values[3][1], g)


def test_alternatives_term_rejects_labelings_that_do_not_fit_the_corpus():
    rng = np.random.default_rng(12)
    data = random_data(rng, [2, 3])
    layout = ParameterLayout.every_pair(data["A"], 3).core
    theta = np.zeros(layout.n_parameters)
    make = OBJECTIVES["alternatives"]
    ok = np.array([0, 1, 2, 2, 0], dtype=np.int32)
    for labels, groups, message in [
            (ok, [0, 2], "without gaps"),
            (ok, [1, 1], "without gaps"),
            (ok, [0], "every one of the corpus's 2 sequences"),
            (ok, [0, 1, 2], "names sequence 2"),
            (ok[:4], [0, 1], "must hold 5 label ids"),
            (np.array([0, -1, 2, 2, 0]), [0, 1], "out of range")]:
        with pytest.raises(ValueError, match=message):
            make(data["features"], labels, groups, layout, 1)
    term = make(data["features"], np.array([0, 1, 3, 2, 0]), [0, 1], layout, 1)
    with pytest.raises(ValueError, match="label id 3 out of range for 3 labels"):
        term.value_and_gradient(theta)
    with pytest.raises(ValueError, match="weights"):
        make(data["features"], ok, [0, 1], layout, 1, sentence_weights=[1.0, -1.0])


def test_alternatives_equal_minus_log_summed_probability_and_sets_differ():
    rng, data, row_ptr, label_ids, layout, theta, _ = setup_partial(3, lengths=(3, 4))
    f = data["features"]
    # Sentence 0: B-I / O-B style (representable); sentence 1: shares an interior label (not).
    anns = [Alternatives([["A", "B", "C"], ["C", "A", "B"]]),
            Alternatives([["A", "B", "B", "C"], ["C", "A", "B", "B"], ["C", "C", "C", "C"]])]
    # Reference: −log Σ_{y in alternatives} p(y|x), computed from the scores directly.
    E_all, T, start, end = corpus_scores(data, theta, row_ptr, label_ids, 3)
    want = 0.0
    for s, ann in enumerate(anns):
        E = E_all[data["offsets"][s]:data["offsets"][s + 1]]
        log_z = brute_force(E, T, start, end).log_z
        ids = np.array([[INDEX[c] for c in alt] for alt in ann.labelings])
        want += log_z - logsumexp(chain_scores(E, T, start, end, ids))
    sup, others = labeled_terms(f, anns, INDEX, None, layout, 1)
    assert sup == [] and [t.name for t in others] == ["partial_likelihood", "alternatives"]
    value, grad = Objective(others, 0.0)(theta)
    assert value == pytest.approx(want, rel=1e-10)
    bv, bg = brute_partial(data, row_ptr, label_ids, theta, anns, CLASSES)
    assert bv == pytest.approx(want, rel=1e-10)
    np.testing.assert_allclose(grad, bg, rtol=1e-8, atol=1e-10)
    # Per-token sets over-approximate: a strictly smaller loss.
    token_sets = [list(a) for a in anns]
    _, set_terms = labeled_terms(f, token_sets, INDEX, None, layout, 1)
    set_value, _ = Objective(set_terms, 0.0)(theta)
    sv, _ = brute_partial(data, row_ptr, label_ids, theta, token_sets, CLASSES)
    assert set_value == pytest.approx(sv, rel=1e-10)
    assert set_value < want - 1e-3


@pytest.mark.parametrize("seed", range(3))
def test_mixed_terms_gradient_finite_differences(seed):
    rng, data, row_ptr, label_ids, layout, theta, gold = setup_partial(
        seed, lengths=(3, 2, 4, 3, 1, 4))
    f = data["features"]
    anns = [gold[0], random_annotation(rng, gold[1]), random_annotation(rng, gold[2]),
            Alternatives([gold[3], ["A", "A", "A"], ["B", "C", "C"]]), [None],
            Alternatives([gold[5], ["A", "B", "B", "C"], ["C", "A", "B", "B"]])]
    weights = rng.uniform(0.5, 2, size=len(anns))
    sup, others = labeled_terms(f, anns, INDEX, weights, layout, 1)
    obj = Objective(sup + others, 0.3)
    value, grad = obj(theta)
    bv, bg = brute_partial(data, row_ptr, label_ids, theta, anns, CLASSES, weights)
    assert value == pytest.approx(bv + 0.3 * theta @ theta, rel=1e-10)
    np.testing.assert_allclose(grad, bg + 0.6 * theta, rtol=1e-8, atol=1e-9)
    fd = central_differences(lambda th: obj(th)[0], theta)
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------
# The estimator
# ---------------------------------------------------------------------------

WORDS = ["the", "cat", "sat", "on", "mat", "dog", "ran"]


def toy_corpus(rng, n_sentences, max_len=4):
    X, y = [], []
    for _ in range(n_sentences):
        n = int(rng.integers(1, max_len + 1))
        words = rng.choice(WORDS, size=n)
        X.append([{"w": str(w), "suf": str(w)[-1]} for w in words])
        y.append([CLASSES[(WORDS.index(w) + (t > 0)) % 3] for t, w in enumerate(words)])
    return X, y


def model_brute_loss(model, X, anns, weights=None):
    """Σ_x w_x (−log Σ_{y allowed} p(y|x)) + c2‖θ‖², with log p from sequence_log_probability."""
    total = []
    for s, (x, ann) in enumerate(zip(X, anns)):
        ys = all_labelings(len(x), len(model.classes_))
        lps = model.sequence_log_probability([x] * len(ys),
                                             [[model.classes_[i] for i in y] for y in ys])
        keep = np.array([allows(ann, y, model.classes_) for y in ys])
        w = 1.0 if weights is None else weights[s]
        total.append(-w * logsumexp(lps[keep]))
    return math.fsum(total) + model.c2 * float(model.coef_ @ model.coef_)


@pytest.fixture(scope="module")
def mixed():
    rng = np.random.default_rng(7)
    X, gold = toy_corpus(rng, 24)
    anns = []
    for s, g in enumerate(gold):
        kind = s % 4
        if kind == 0:
            anns.append(list(g))
        elif kind == 1:
            anns.append([None if rng.random() < 0.5 else c for c in g])
        elif kind == 2:
            anns.append([frozenset({c, "B"}) if t == 0 else c for t, c in enumerate(g)])
        else:
            alt = list(g)
            alt[-1] = "C" if g[-1] != "C" else "A"
            alt2 = ["A"] * len(g)
            anns.append(Alternatives([g, alt, alt2]))
    # one sentence whose alternatives node and edge masks cannot represent exactly
    s = next(s for s, g in enumerate(gold) if s % 4 == 3 and len(g) == 4)
    anns[s] = Alternatives([gold[s], ["A", "B", "B", "C"], ["C", "A", "B", "B"]])
    assert not sentence_masks(anns[s], INDEX).exact
    assert sum(isinstance(a, Alternatives) and sentence_masks(a, INDEX).exact for a in anns) > 2
    weights = rng.uniform(0.5, 2.0, size=len(X))
    model = CRF(c2=0.1, max_iterations=200, verbose=False, n_threads=2,
                feature_set="dense").fit(X, anns, sample_weight=weights)
    return X, gold, anns, weights, model


def test_fit_on_mixed_annotations_minimises_the_brute_force_objective(mixed):
    X, _, anns, weights, model = mixed
    assert model.classes_ == CLASSES
    assert "supervised" in model.training_["stages"]  # warm start from the complete sentences
    want = model_brute_loss(model, X, anns, weights)
    assert model.training_["loss"] == pytest.approx(want, rel=1e-9)
    # a (local) optimum: nudging the weights does not lower the brute-force loss
    base = want
    rng = np.random.default_rng(0)
    coef = model.coef_.copy()
    for _ in range(3):
        model.coef_ = coef + rng.normal(0, 1e-3, size=coef.shape)
        assert model_brute_loss(model, X, anns, weights) >= base - 1e-9
    model.coef_ = coef


def test_fit_with_only_complete_labels_via_singleton_sets_is_unchanged():
    rng = np.random.default_rng(1)
    X, y = toy_corpus(rng, 12)
    y_sets = [[(c,) if t == 0 else c for t, c in enumerate(seq)] for seq in y]
    a = CRF(max_iterations=30, verbose=False, n_threads=1).fit(X, y)
    b = CRF(max_iterations=30, verbose=False, n_threads=1).fit(X, y_sets)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.label_ids_, b.label_ids_)


def test_observed_pairs_come_from_singleton_labels_only():
    X = [[{"w": "x"}, {"w": "y"}], [{"w": "z"}, {"w": "x"}], [{"w": "q"}]]
    y = [["A", frozenset({"B", "C"})], [None, "B"], Alternatives([["A"], ["C"]])]
    model = CRF(max_iterations=5, verbose=False, feature_set="observed").fit(X, y)
    attrs = model.extractor_.attributes_
    pairs = {(attrs[a], model.classes_[model.label_ids_[k]])
             for a in range(len(attrs)) for k in range(model.row_ptr_[a], model.row_ptr_[a + 1])}
    # w:x: A (alone) and B (alone); the set {B, C}, None and the alternatives add nothing
    assert pairs == {("w:x", "A"), ("w:x", "B")}
    assert model.classes_ == ["A", "B", "C"]  # C seen only inside sets and alternatives


def test_label_outside_labels_raises_naming_the_sentence():
    X = [[{"w": "a"}], [{"w": "b"}, {"w": "c"}]]
    with pytest.raises(SscrfError, match=r"sentence 1, token 1: label set \['A', 'Z'\]: 'Z'"):
        CRF(labels=["A", "B"], verbose=False).fit(X, [["A"], [None, {"A", "Z"}]])
    with pytest.raises(SscrfError, match="sentence 1, alternative 1, token 0: label 'Z'"):
        CRF(labels=["A", "B"], verbose=False).fit(
            X, [["A"], Alternatives([["A", "B"], ["Z", "B"]])])


@pytest.mark.parametrize("y, message", [
    ([["A"], ["A", frozenset()]], "sentence 1, token 1: empty label set"),
    ([["A"], ["A", 3]], "sentence 1, token 1: a label must be"),
    ([["A"], ["A", {"A", 3}]], "members must be strings"),
    ([["A"], Alternatives([["A"]])], "sentence 1: 2 tokens but 1 labels"),
    ([["A"], [None]], "sentence 1: 2 tokens but 1 labels"),
])
def test_bad_annotations(y, message):
    X = [[{"w": "a"}], [{"w": "b"}, {"w": "c"}]]
    with pytest.raises(SscrfError, match=message):
        CRF(verbose=False).fit(X, y)


@pytest.mark.parametrize("seed", range(3))
def test_constrained_decoding_stays_in_allowed_and_is_best(mixed, seed):
    X, gold, _, _, model = mixed
    rng = np.random.default_rng(seed)
    allowed = [random_annotation(rng, g) if s % 3 else None for s, g in enumerate(gold)]
    allowed[1] = Alternatives([["A"] * len(X[1]), ["C"] * len(X[1])])
    pred = model.predict(X, allowed=allowed)
    marg = model.predict_marginals(X, allowed=allowed)
    nbest = model.predict_nbest(X, 3, allowed=allowed)
    for s, (x, ann) in enumerate(zip(X, allowed)):
        ann = [None] * len(x) if ann is None else ann
        ys = all_labelings(len(x), 3)
        names = [[CLASSES[i] for i in y] for y in ys]
        lps = model.sequence_log_probability([x] * len(ys), names)
        keep = np.array([allows(ann, y, CLASSES) for y in ys])
        assert allows(ann, [INDEX[c] for c in pred[s]], CLASSES)
        best = lps[keep].max()
        got = model.sequence_log_probability([x], [pred[s]])[0]
        assert got == pytest.approx(best, abs=1e-9)
        p = np.where(keep, np.exp(lps - logsumexp(lps[keep])), 0.0)
        for t in range(len(x)):
            want = np.bincount(ys[:, t], weights=p, minlength=3)
            np.testing.assert_allclose([marg[s][t][c] for c in CLASSES], want, atol=1e-9)
        order = np.argsort(-lps[keep], kind="stable")[:3]
        want_lp = lps[keep][order]
        np.testing.assert_allclose([lp for _, lp in nbest[s]], want_lp, atol=1e-9)
        assert all(allows(ann, [INDEX[c] for c in lab], CLASSES) for lab, _ in nbest[s])


def test_constrained_decoding_with_inexact_alternatives(mixed):
    X, _, _, _, model = mixed
    x = next(x for x in X if len(x) == 4)
    alts = Alternatives([["A", "B", "B", "C"], ["C", "A", "B", "B"]])
    assert not sentence_masks(alts, INDEX).exact
    lps = model.sequence_log_probability([x, x], [list(a) for a in alts.labelings])
    pred = model.predict([x], allowed=[alts])[0]
    assert tuple(pred) == alts.labelings[int(np.argmax(lps))]
    marg = model.predict_marginals([x], allowed=[alts])[0]
    q = np.exp(lps - logsumexp(lps))
    assert marg[3]["C"] == pytest.approx(q[0]) and marg[3]["B"] == pytest.approx(q[1])
    nb = model.predict_nbest([x], 5, allowed=[alts])[0]
    assert len(nb) == 2 and {tuple(l) for l, _ in nb} == set(alts.labelings)


def test_allowed_errors(mixed):
    X, _, _, _, model = mixed
    with pytest.raises(SscrfError, match="allowed has 1"):
        model.predict(X[:2], allowed=[None])
    with pytest.raises(SscrfError, match=r"allowed\[0\], token 0: label 'Z'"):
        model.predict(X[:1], allowed=[["Z"] + [None] * (len(X[0]) - 1)])
    with pytest.raises(SscrfError, match="sentence 0"):
        model.predict(X[:1], allowed=[[None] * (len(X[0]) + 1)])


# ---------------------------------------------------------------------------
# Files and the command line
# ---------------------------------------------------------------------------


def test_read_conll_label_sets_fit_predict_round_trip(tmp_path):
    rng = np.random.default_rng(3)
    X, gold = toy_corpus(rng, 40)
    anns = [g if s % 2 else [random_annotation(rng, [c])[0] for c in g]
            for s, g in enumerate(gold)]
    tokens = [[[tok["w"]] for tok in x] for x in X]
    path = tmp_path / "partial.txt"
    write_conll(path, tokens, anns)
    corpus = read_conll(path, label_sets=True)
    assert corpus.labels == [[a if a is None or isinstance(a, str) else frozenset(a)
                              for a in ann] for ann in anns]
    model = CRF(templates="U00:%x[0,0]\nU01:%x[-1,0]\nB", max_iterations=30,
                verbose=False).fit(corpus.tokens, corpus.labels)
    pred = model.predict(corpus.tokens, allowed=corpus.labels)
    for p, ann in zip(pred, corpus.labels):
        assert allows(ann, [INDEX[c] for c in p], CLASSES)


def test_cli_train_partial_and_tag_constraints(tmp_path, capsys):
    rng = np.random.default_rng(4)
    X, gold = toy_corpus(rng, 40)
    tokens = [[[tok["w"]] for tok in x] for x in X]
    anns = [[None if rng.random() < 0.3 else c for c in g] for g in gold]
    anns[0][0] = frozenset({"A", "B"})
    train, model_path = tmp_path / "train.txt", tmp_path / "m.model"
    write_conll(train, tokens, anns)
    # without --partial, '|' and '*' are ordinary characters of labels
    assert main(["train", str(train), "-m", str(model_path), "--max-iterations", "10",
                 "--quiet"]) == 0
    assert set(CRF.load(model_path).classes_) > set(CLASSES)
    assert main(["train", str(train), "-m", str(model_path), "--max-iterations", "10",
                 "--quiet", "--partial"]) == 0
    assert CRF.load(model_path).classes_ == CLASSES
    capsys.readouterr()
    test, cons = tmp_path / "test.txt", tmp_path / "cons.txt"
    write_conll(test, tokens)
    forced = [["C" if t == 0 else None for t in range(len(x))] for x in X]
    forced[1] = [frozenset({"A", "B"})] * len(X[1])
    write_conll(cons, tokens, forced)
    assert main(["tag", "-m", str(model_path), str(test), "--constraints", str(cons)]) == 0
    out = capsys.readouterr().out
    sentences = [s.splitlines() for s in out.strip().split("\n\n")]
    assert all(lines[0].split()[-1] == "C" for s, lines in enumerate(sentences) if s != 1)
    assert all(line.split()[-1] in ("A", "B") for line in sentences[1])
    assert main(["tag", "-m", str(model_path), str(test), "--constraints", str(cons),
                 "-n", "2"]) == 0
    capsys.readouterr()
    # a constraints file of other sentences, or naming unknown labels
    short = tmp_path / "short.txt"
    write_conll(short, tokens[:3], forced[:3])
    assert main(["tag", "-m", str(model_path), str(test), "--constraints", str(short)]) == 2
    assert "3 sentences" in capsys.readouterr().err
    bad = tmp_path / "bad.txt"
    write_conll(bad, tokens, [["Z|A"] + [None] * (len(x) - 1) for x in X])
    assert main(["tag", "-m", str(model_path), str(test), "--constraints", str(bad)]) == 2
    assert "bad.txt:1: unknown label 'Z'" in capsys.readouterr().err


# ---------------------------------------------------------------------------
# Baselines and metrics
# ---------------------------------------------------------------------------


def test_baselines(mixed):
    X, gold, anns, _, model = mixed
    filled = fill_argmax(model, X, anns)
    assert all(isinstance(c, str) for seq in filled for c in seq)
    for s, (ann, f) in enumerate(zip(anns, filled)):
        assert allows(ann, [INDEX[c] for c in f], CLASSES)
        if all(isinstance(c, str) for c in ann) and not isinstance(ann, Alternatives):
            assert f == list(ann)
        else:
            assert f == model.predict([X[s]], allowed=[ann])[0]
    y = [["A", ("C", "B"), None], ["A", frozenset({"C", "B"})],
         Alternatives([["B"], ["A"]]), ["A", "B"]]
    assert fill_first(y) == [["A", "C", None], ["A", "B"], ["B"], ["A", "B"]]
    r1, r2 = fill_random(y, 5), fill_random(y, 5)
    assert r1 == r2
    draws = {tuple(fill_random(y, seed)[1]) for seed in range(30)}
    assert draws == {("A", "B"), ("A", "C")}
    assert {fill_random(y, seed)[2][0] for seed in range(30)} == {"A", "B"}
    Xs = [["x"] * 3, ["x"] * 2, ["x"], ["x"] * 2]
    Xk, yk, kept = discard(Xs, y)
    assert kept == [3] and yk == [["A", "B"]] and Xk == [Xs[3]]
    assert apply_baseline("first", Xs, y)[1] == [["A", "B"], ["B"], ["A", "B"]]
    assert apply_baseline("discard", Xs, y)[1] == [["A", "B"]]
    assert len(apply_baseline("random", Xs, y, random_state=0)[1]) == 3
    with pytest.raises(SscrfError, match="needs a model"):
        apply_baseline("argmax", Xs, y)
    with pytest.raises(SscrfError, match="unknown baseline"):
        apply_baseline("oracle", Xs, y)
    assert set(BASELINES) == {"argmax", "first", "random", "discard"}


def test_annotation_cost_and_ambiguous_words():
    y = [["A", None, {"A", "B"}], Alternatives([["A", "B"], ["A", "C"]]), [None]]
    assert annotation_cost(y) == 4
    words = [["a", "b", "c"], ["a", "d"], ["e"]]
    assert ambiguous_words(words, y) == {"c", "d"}


def test_apa_hand_worked_example():
    # Ambiguous words: "pending" (3 occurrences, 2 right), "data" (1, 0 right),
    # "more" (absent from the test data: ignored). "suit" is not ambiguous.
    words = [["That", "suit", "is", "pending"], ["data", "pending", "pending"]]
    gold = [["DT", "NN", "VBZ", "VBG"], ["NNS", "JJ", "VBG"]]
    pred = [["DT", "VB", "VBZ", "VBG"], ["NN", "VBG", "VBG"]]
    assert apa(gold, pred, words, {"pending", "data", "more"}) == pytest.approx((2 / 3 + 0) / 2)
    assert apa(gold, gold, words, {"pending"}) == 1.0
    with pytest.raises(SscrfError, match="undefined"):
        apa(gold, pred, words, {"more"})
    with pytest.raises(SscrfError, match="sentence 1"):
        apa(gold, pred, [words[0], words[1][:2]], {"pending"})


def test_progress_names_what_the_second_stage_adds(capsys):
    # The second stage of a fit with partial annotations has no unlabeled data;
    # its progress line names the terms it adds.
    X = [[{"w": str(i % 7)} for i in range(j % 5 + 3)] for j in range(30)]
    y = [["A" if int(t["w"]) % 2 else "B" for t in s] for s in X]
    y = [s if j % 3 else [None] + s[1:] for j, s in enumerate(y)]
    CRF(max_iterations=3, verbose=True).fit(X, y)
    err = capsys.readouterr().err
    assert "stage 2/2: adding the partial_likelihood term\n" in err
    assert "unlabeled" not in err
