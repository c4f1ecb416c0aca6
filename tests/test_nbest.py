"""sscrf.lattice.nbest (exact k-best Viterbi) against brute-force enumeration.

Tiny chains are drawn by Hypothesis (n 1..5, S 1..4, masks, start/end);
integer-valued scores make exact ties frequent, so the lexicographic
tie-breaking is checked exactly, and float scores up to +-1e3 check the
scores with a tolerance.
"""

import math
from functools import partial

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sscrf.lattice as lattice
from sscrf import _core
import strategies as shared
from lattice_common import call_unchanged, reference_or_refused
from reference import all_labelings, brute_force, labeling_allowed, labeling_score, random_chain

TINY = settings(max_examples=200, deadline=None)


@st.composite
def chains(draw, integer, max_n=5, max_S=4):
    """(lattice arguments, k, scale); masks may allow no labeling."""
    args, scale = draw(shared.chains(max_n, max_S, scales=[2.0] if integer else [1.0, 10.0, 1000.0],
                                     integer=integer, integer_bound=2))
    n, S = args["emissions"].shape
    # up to every labeling, and beyond
    k = draw(st.integers(1, S**n + 3))
    return args, k, scale


def expected_order(bf):
    """Allowed labelings and scores sorted by (score desc, labeling lexicographic)."""
    keys = [(-s, tuple(int(v) for v in y)) for y, s in zip(bf.labelings, bf.scores)]
    idx = sorted(range(len(keys)), key=keys.__getitem__)
    return bf.labelings[idx], bf.scores[idx]


def own_score(args, y):
    return labeling_score(args["emissions"], args["transitions"], args["start"], args["end"], y)


def check_common(args, k, paths, scores, bf, tol):
    """Shapes, distinct allowed paths, self-consistent non-increasing scores."""
    n, S = args["emissions"].shape
    m = min(k, bf.n_allowed)
    assert paths.dtype == np.int64 and paths.shape == (m, n)
    assert scores.dtype == np.float64 and scores.shape == (m,)
    assert np.all((0 <= paths) & (paths < S))
    assert len({tuple(p) for p in paths.tolist()}) == m, "paths are not distinct"
    for p, s in zip(paths, scores):
        assert labeling_allowed(p, args["mask"], args["edge_mask"])
        assert abs(own_score(args, p) - s) <= tol, (p, s)
    assert np.all(np.diff(scores) <= 0)
    # Exactly equal scores: lexicographically smaller labeling first.
    for j in range(m - 1):
        if scores[j] == scores[j + 1]:
            assert tuple(paths[j]) < tuple(paths[j + 1]), (paths[j], paths[j + 1])


@TINY
@given(chains(integer=True))
def test_integer_scores_match_brute_force_order_exactly(drawn):
    # Integer sums are exact in any order: the whole list, ties included,
    # must be the brute-force list sorted by (score desc, labeling).
    args, k, _ = drawn
    bf = reference_or_refused(args, [partial(lattice.nbest, k=k)])
    if bf is None:
        return
    paths, scores = lattice.nbest(k=k, **args)
    check_common(args, k, paths, scores, bf, tol=0.0)
    want_paths, want_scores = expected_order(bf)
    m = min(k, bf.n_allowed)
    np.testing.assert_array_equal(scores, want_scores[:m])
    np.testing.assert_array_equal(paths, want_paths[:m])


@TINY
@given(chains(integer=False))
def test_float_scores_match_brute_force_top_k(drawn):
    args, k, scale = drawn
    bf = reference_or_refused(args, [partial(lattice.nbest, k=k)])
    if bf is None:
        return
    paths, scores = call_unchanged(lattice.nbest, args, k=k)
    tol = 1e-9 * scale
    check_common(args, k, paths, scores, bf, tol)
    m = min(k, bf.n_allowed)
    np.testing.assert_allclose(scores, np.sort(bf.scores)[::-1][:m], rtol=0, atol=tol)
    # The best one has exactly viterbi's score (same summation order).
    assert scores[0] == lattice.viterbi(**args)[1]


@pytest.mark.parametrize("n,S", [(1, 1), (1, 4), (3, 1), (3, 2), (4, 3)])
def test_all_zero_potentials_give_lexicographic_order(n, S):
    labelings = all_labelings(n, S)
    for k in [1, 2, len(labelings), len(labelings) + 5, 10**30]:
        paths, scores = lattice.nbest(np.zeros((n, S)), np.zeros((S, S)), k)
        m = min(k, len(labelings))
        np.testing.assert_array_equal(paths, labelings[:m])
        np.testing.assert_array_equal(scores, np.zeros(m))


def test_empty_sequence_has_one_empty_labeling():
    for kw in [dict(), dict(start=np.ones(3), end=np.ones(3))]:
        for k in [1, 5]:
            paths, scores = lattice.nbest(np.zeros((0, 3)), np.zeros((3, 3)), k, **kw)
            assert paths.shape == (1, 0) and paths.dtype == np.int64
            assert scores.shape == (1,) and scores[0] == 0.0


def test_length_one_and_one_label():
    E = np.array([[0.5, -1.0, 2.0]])
    T = np.array([[9.0, -9.0, 0.0], [1.0, 2.0, 3.0], [-4.0, 5.0, 6.0]])  # unused
    start = np.array([0.0, 3.0, -1.0])
    end = np.array([1.0, 0.0, 0.0])
    paths, scores = lattice.nbest(E, T, 10, start, end)
    np.testing.assert_array_equal(paths, [[1], [0], [2]])
    np.testing.assert_array_equal(scores, [2.0, 1.5, 1.0])
    mask = np.array([[True, False, True]])
    paths, scores = lattice.nbest(E, T, 10, start, end, mask=mask,
                                  edge_mask=np.ones((0, 3, 3), dtype=bool))
    np.testing.assert_array_equal(paths, [[0], [2]])
    paths, scores = lattice.nbest(np.array([[1.0], [2.0], [3.0]]), np.array([[0.5]]), 4)
    np.testing.assert_array_equal(paths, [[0, 0, 0]])
    np.testing.assert_array_equal(scores, [7.0])


def test_extreme_scores():
    # The design's underflow example: three paths tie at 1000.
    E = np.array([[1e3, -1e3], [1e3, -1e3]])
    T = np.array([[-1e3, 1e3], [1e3, -1e3]])
    paths, scores = lattice.nbest(E, T, 10)
    np.testing.assert_array_equal(paths, [[0, 0], [0, 1], [1, 0], [1, 1]])
    np.testing.assert_array_equal(scores, [1e3, 1e3, 1e3, -3e3])
    rng = np.random.default_rng(11)
    for trial in range(100):
        n, S = int(rng.integers(1, 6)), int(rng.integers(1, 5))
        E, T, start, end = random_chain(rng, n, S, 1e3, start_end=trial % 2 == 0)
        if trial % 3 == 0:  # rounded: exact ties at large magnitudes
            E, T = np.round(E / 500) * 500, np.round(T / 500) * 500
        bf = brute_force(E, T, start, end)
        paths, scores = lattice.nbest(E, T, 7, start, end)
        np.testing.assert_allclose(scores, np.sort(bf.scores)[::-1][:7], rtol=0, atol=1e-9)
        for p, s in zip(paths, scores):
            assert abs(labeling_score(E, T, start, end, p) - s) <= 1e-9


def test_masks_leave_fewer_labelings_than_k():
    n, S = 4, 3
    E, T, _, _ = random_chain(np.random.default_rng(2), n, S, 1.0, start_end=False)
    mask = np.ones((n, S), dtype=bool)
    mask[1] = [False, True, False]
    mask[3] = [True, False, True]
    edge_mask = np.ones((n - 1, S, S), dtype=bool)
    edge_mask[0, 2, 1] = False
    bf = brute_force(E, T, mask=mask, edge_mask=edge_mask)
    assert bf.n_allowed == 2 * 3 * 2  # labels 0/1 at token 0, any at 2
    paths, scores = lattice.nbest(E, T, 100, mask=mask, edge_mask=edge_mask)
    assert paths.shape == (bf.n_allowed, n)
    assert {tuple(p) for p in paths.tolist()} == {tuple(p) for p in bf.labelings.tolist()}


def test_medium_chain_against_brute_force():
    # 4^8 = 65536 labelings, k = 300, float scores.
    rng = np.random.default_rng(3)
    E, T, start, end = random_chain(rng, 8, 4, 3.0)
    bf = brute_force(E, T, start, end)
    paths, scores = lattice.nbest(E, T, 300, start, end)
    check_common(dict(emissions=E, transitions=T, start=start, end=end, mask=None,
                      edge_mask=None), 300, paths, scores, bf, 1e-12)
    np.testing.assert_allclose(scores, np.sort(bf.scores)[::-1][:300], rtol=0, atol=1e-12)


def test_long_chain_is_consistent_with_viterbi():
    rng = np.random.default_rng(4)
    E, T, start, end = random_chain(rng, 2000, 5, 2.0)
    paths, scores = lattice.nbest(E, T, 50, start, end)
    assert paths.shape == (50, 2000)
    vpath, vscore = lattice.viterbi(E, T, start, end)
    assert scores[0] == vscore
    np.testing.assert_array_equal(paths[0], vpath)  # float scores: no exact ties
    assert np.all(np.diff(scores) <= 0)
    assert len({p.tobytes() for p in paths}) == 50
    for p, s in zip(paths[:5], scores[:5]):
        assert labeling_score(E, T, start, end, p) == pytest.approx(s, rel=1e-12)


# ---------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------


def _good(n=4, S=3):
    E, T, start, end = random_chain(np.random.default_rng(5), n, S, 1.0)
    return dict(emissions=E, transitions=T, start=start, end=end,
                mask=np.ones((n, S), dtype=bool), edge_mask=np.ones((n - 1, S, S), dtype=bool))


@pytest.mark.parametrize("k", [0, -1, -(10**30)])
def test_k_below_one_raises_naming_k(k):
    with pytest.raises(ValueError, match="k"):
        lattice.nbest(k=k, **_good())
    with pytest.raises(ValueError, match="k"):
        lattice.nbest(np.zeros((0, 2)), np.zeros((2, 2)), k)


@pytest.mark.parametrize("k", [0, -3])
def test_core_validates_k(k):
    g = _good()
    with pytest.raises(ValueError, match="k must be a positive integer"):
        _core.nbest(g["emissions"], g["transitions"], k)


@pytest.mark.parametrize("k", [1.5, 2.0, "3", None, True])
def test_non_integer_k_raises(k):
    with pytest.raises(TypeError, match="k"):
        lattice.nbest(k=k, **_good())


def test_numpy_integer_k_is_accepted():
    paths, _ = lattice.nbest(k=np.int32(3), **_good())
    assert paths.shape == (3, 4)


BAD = {
    "emissions-1d": (dict(emissions=np.zeros(3)), "emissions"),
    "transitions-not-square": (dict(transitions=np.zeros((3, 4))), "transitions"),
    "transitions-wrong-S": (dict(transitions=np.zeros((4, 4))), "transitions"),
    "start-wrong-length": (dict(start=np.zeros(4)), "start"),
    "end-wrong-length": (dict(end=np.zeros(2)), "end"),
    "mask-wrong-shape": (dict(mask=np.ones((4, 4), dtype=bool)), "mask"),
    "edge_mask-wrong-length": (dict(edge_mask=np.ones((4, 3, 3), dtype=bool)), "edge_mask"),
    "emissions-nan": (dict(emissions=np.full((4, 3), np.nan)), "emissions"),
    "transitions-inf": (dict(transitions=np.full((3, 3), np.inf)), "transitions"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_arrays_raise_naming_the_argument(case):
    changes, name = BAD[case]
    args = {**_good(), **changes}
    with pytest.raises(ValueError, match=name):
        lattice.nbest(k=3, **args)


def test_masks_allowing_nothing_raise():
    g = _good()
    g["mask"][2] = False
    with pytest.raises(ValueError, match="mask"):
        lattice.nbest(k=3, **g)
    g = _good()
    g["edge_mask"][0] = False
    g["edge_mask"][0, 0, 0] = True
    g["edge_mask"][1] = False
    g["edge_mask"][1, 1, 1] = True
    with pytest.raises(ValueError, match="mask"):
        lattice.nbest(k=3, **g)


def test_is_exported():
    assert "nbest" in lattice.__all__
    assert math.isfinite(lattice.nbest(np.zeros((2, 2)), np.zeros((2, 2)), 1)[1][0])


# ---------------------------------------------------------------------------
# nbest_from_model: labelings and log probabilities under a fitted CRF
# ---------------------------------------------------------------------------

WORDS = {"DET": ["the", "a"], "NOUN": ["dog", "cat", "park"], "VERB": ["runs", "sees"]}
SHAPES = [["DET", "NOUN", "VERB"], ["NOUN", "VERB"], ["DET", "NOUN", "VERB", "DET", "NOUN"]]


def _features(words):
    return [{"w": w, "suf": w[-2:], "len": len(w) / 3.0, "prev": words[i - 1] if i else "<s>"}
            for i, w in enumerate(words)]


@pytest.fixture(scope="module")
def crf():
    from sscrf import CRF

    rng = np.random.default_rng(0)
    X, y = [], []
    for _ in range(20):
        shape = SHAPES[int(rng.integers(len(SHAPES)))]
        labels = list(shape)
        if rng.random() < 0.2:  # label noise: probabilities away from 0 and 1
            labels[int(rng.integers(len(labels)))] = str(rng.choice(sorted(WORDS)))
        X.append(_features([str(rng.choice(WORDS[label])) for label in shape]))
        y.append(labels)
    return CRF(c2=0.1, max_iterations=50, n_threads=1).fit(X, y)


HELD_OUT = [["the", "dog", "runs"], ["a", "zebra", "sleeps"], ["cat"], [],
            ["the", "cat", "sees", "a", "dog", "in", "the", "park"]]


@pytest.mark.parametrize("k", [1, 3, 30])
def test_nbest_from_model_log_probabilities(crf, k):
    from sscrf.nbest import nbest_from_model

    X = [_features(ws) for ws in HELD_OUT]
    result = nbest_from_model(crf, X, k)
    S = len(crf.classes_)
    assert len(result) == len(X)
    predicted = crf.predict(X)
    for x, pairs, best in zip(X, result, predicted):
        assert len(pairs) == min(k, S ** len(x))
        labelings = [labels for labels, _ in pairs]
        log_p = np.array([lp for _, lp in pairs])
        assert len({tuple(ls) for ls in labelings}) == len(labelings)
        assert all(len(ls) == len(x) and set(ls) <= set(crf.classes_) for ls in labelings)
        assert np.all(np.diff(log_p) <= 1e-12) and np.all(log_p <= 1e-12)
        assert labelings[0] == best  # float weights: no exact ties
        np.testing.assert_allclose(
            log_p, crf.sequence_log_probability([x] * len(pairs), labelings), rtol=0, atol=1e-9
        )
    assert result[HELD_OUT.index([])] == [([], 0.0)]


def test_nbest_from_model_covers_all_labelings(crf):
    from sscrf.nbest import nbest_from_model

    x = _features(["the", "dog", "runs"])
    S = len(crf.classes_)
    (pairs,) = nbest_from_model(crf, [x], 10**6)
    assert len(pairs) == S**3
    assert math.fsum(math.exp(lp) for _, lp in pairs) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("k,error", [(0, ValueError), (-2, ValueError), (1.0, TypeError),
                                     (True, TypeError)])
def test_nbest_from_model_bad_k(crf, k, error):
    from sscrf.nbest import nbest_from_model

    with pytest.raises(error, match="k"):
        nbest_from_model(crf, [_features(["the", "dog"])], k)


def test_nbest_from_model_needs_a_fitted_model():
    from sscrf import CRF, SscrfError
    from sscrf.nbest import nbest_from_model

    with pytest.raises(SscrfError, match="fit"):
        nbest_from_model(CRF(), [_features(["the"])], 2)
