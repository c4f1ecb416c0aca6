"""sscrf.lattice (log Z, marginals, Viterbi) against brute-force enumeration.

Every quantity is compared with ``reference.brute_force`` on tiny chains drawn
by Hypothesis (n <= 6, S <= 4, masks, start/end, scores up to +-1e3), and with
log-space tree reductions (``reference.log_forward``) on 10^5-token chains.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import sscrf.lattice as lattice
from reference import (
    all_labelings,
    brute_force,
    corpus_of_emissions,
    labeling_allowed,
    labeling_score,
    log_forward,
    log_viterbi_score,
    node_marginal_at,
    random_chain,
)
from lattice_common import call_unchanged, reference_of, reference_or_refused
from strategies import chains

FUNCTIONS = [lattice.log_partition, lattice.marginals, lattice.viterbi]
MARGINAL_ATOL = 1e-10
TINY = settings(max_examples=150, deadline=None)


def check_marginals(node, edge, bf, n, S):
    """Node and edge marginals against brute force, plus their invariants."""
    assert node.shape == (n, S)
    assert edge.shape == (n - 1, S, S)
    assert np.all(np.isfinite(node)) and np.all(np.isfinite(edge))
    np.testing.assert_allclose(node, bf.node, rtol=1e-9, atol=MARGINAL_ATOL)
    np.testing.assert_allclose(edge, bf.edge, rtol=1e-9, atol=MARGINAL_ATOL)
    assert node.min() >= 0.0 and node.max() <= 1.0 + MARGINAL_ATOL
    if n > 1:
        assert edge.min() >= 0.0 and edge.max() <= 1.0 + MARGINAL_ATOL
    np.testing.assert_allclose(node.sum(axis=1), 1.0, rtol=0, atol=MARGINAL_ATOL)
    # Summing an edge marginal over one end gives the node marginal of the other.
    np.testing.assert_allclose(edge.sum(axis=1), node[1:], rtol=0, atol=MARGINAL_ATOL)
    np.testing.assert_allclose(edge.sum(axis=2), node[:-1], rtol=0, atol=MARGINAL_ATOL)
    # Labels and transitions no allowed labeling uses have marginal (exactly) 0.
    assert np.all(node[~bf.node_support] <= 1e-300)
    assert np.all(edge[~bf.edge_support] <= 1e-300)


# ---------------------------------------------------------------------------
# Brute force on tiny chains
# ---------------------------------------------------------------------------


@TINY
@given(chains())
def test_log_partition_and_marginals_match_brute_force(drawn):
    args, scale = drawn
    bf = reference_or_refused(args, FUNCTIONS)
    if bf is None:
        return
    n, S = args["emissions"].shape
    log_z = call_unchanged(lattice.log_partition, args)
    assert isinstance(log_z, float)
    np.testing.assert_allclose(log_z, bf.log_z, rtol=1e-9, atol=1e-10 * scale)
    node, edge = call_unchanged(lattice.marginals, args)
    check_marginals(node, edge, bf, n, S)


@TINY
@given(chains())
def test_viterbi_matches_brute_force(drawn):
    args, scale = drawn
    bf = reference_or_refused(args, FUNCTIONS)
    if bf is None:
        return
    n, S = args["emissions"].shape
    path, score = call_unchanged(lattice.viterbi, args)
    assert isinstance(score, float)
    assert path.dtype == np.int64 and path.shape == (n,)
    assert np.all((0 <= path) & (path < S))
    assert labeling_allowed(path, args["mask"], args["edge_mask"])
    tol = 1e-9 * scale
    own = labeling_score(args["emissions"], args["transitions"], args["start"], args["end"], path)
    assert abs(score - own) <= tol, (score, own)
    assert abs(score - bf.best_score) <= tol, (score, bf.best_score)
    # Viterbi <= log Z <= Viterbi + log(number of labelings).
    assert bf.best_score <= bf.log_z + tol
    assert bf.log_z <= bf.best_score + n * math.log(S) + tol


@TINY
@given(chains(integer=True, scales=[3.0]))
def test_viterbi_with_exact_ties_returns_a_best_labeling(drawn):
    # Integer scores make many exact ties; the path must be one of the best.
    args, _ = drawn
    bf = reference_or_refused(args, FUNCTIONS)
    if bf is None:
        return
    path, score = lattice.viterbi(**args)
    assert tuple(int(v) for v in path) in bf.best
    assert score == bf.best_score


@pytest.mark.parametrize("n,S", [(1, 1), (1, 4), (3, 2), (6, 4), (50, 5)])
def test_viterbi_all_zero_ties_go_to_label_zero(n, S):
    path, score = lattice.viterbi(np.zeros((n, S)), np.zeros((S, S)))
    np.testing.assert_array_equal(path, np.zeros(n, dtype=np.int64))
    assert path.dtype == np.int64
    assert score == 0.0


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_viterbi_ties_go_to_lowest_allowed_label(data):
    # Zero potentials and node masks only: every allowed labeling ties, and
    # the lowest-index rule picks the lowest allowed label at every token.
    n = data.draw(st.integers(1, 6))
    S = data.draw(st.integers(1, 4))
    mask = data.draw(hnp.arrays(np.bool_, (n, S), elements=st.booleans()))
    mask[np.arange(n), data.draw(hnp.arrays(np.int64, (n,), elements=st.integers(0, S - 1)))] = True
    path, score = lattice.viterbi(np.zeros((n, S)), np.zeros((S, S)), mask=mask)
    np.testing.assert_array_equal(path, mask.argmax(axis=1))
    assert score == 0.0


def _reverse_first(labeling):
    return labeling[::-1]


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_viterbi_over_wide_label_sets_matches_brute_force(data):
    # The kernel keeps each label's best score in vector lanes, 4 to a vector
    # and 24 to a tile: label counts around those widths, on chains short
    # enough to enumerate. Integer scores make exact ties; the path is then
    # the best labeling that is smallest from the last token back (the last
    # token's lowest best label, then each token's lowest best predecessor).
    S = data.draw(st.sampled_from([5, 7, 8, 23, 24, 25, 30]))
    n = data.draw(st.integers(1, 3))
    elements = st.integers(-2, 2).map(float)
    E = data.draw(hnp.arrays(np.float64, (n, S), elements=elements))
    T = data.draw(hnp.arrays(np.float64, (S, S), elements=elements))
    args = dict(emissions=E, transitions=T, start=None, end=None, mask=None, edge_mask=None)
    if data.draw(st.booleans()):
        args["start"] = data.draw(hnp.arrays(np.float64, (S,), elements=elements))
        args["end"] = data.draw(hnp.arrays(np.float64, (S,), elements=elements))
    if data.draw(st.booleans()):
        mask = data.draw(hnp.arrays(np.bool_, (n, S), elements=st.booleans()))
        somewhere = data.draw(hnp.arrays(np.int64, (n,), elements=st.integers(0, S - 1)))
        mask[np.arange(n), somewhere] = True  # every token allows a label
        args["mask"] = mask
    bf = reference_of(args)
    path, score = lattice.viterbi(**args)
    assert score == bf.best_score
    assert tuple(int(v) for v in path) == min(bf.best, key=_reverse_first)


@pytest.mark.parametrize("S", [6, 25, 31])
def test_corpus_viterbi_matches_one_chain_viterbi(S):
    # The corpus decoder reads the transitions once per call, the one-chain
    # decoder per chain: the same paths and scores, over random weights and
    # over all-zero weights (every labeling ties).
    from sscrf import _core

    rng = np.random.default_rng(S)
    lengths = [1, 2, 5, 17, 40]
    for scale in (2.0, 0.0):
        chains = [rng.normal(0.0, 1.0, (n, S)) * scale for n in lengths]
        T = rng.normal(0.0, 1.0, (S, S)) * scale
        start, end = rng.normal(0.0, 1.0, S) * scale, rng.normal(0.0, 1.0, S) * scale
        corpus, layout, theta, offsets = corpus_of_emissions(chains, T, start, end)
        E = np.concatenate(chains)
        paths, scores = _core.viterbi_corpus(corpus, layout, theta, 1)
        for s, (b, e) in enumerate(zip(offsets[:-1], offsets[1:])):
            path, score = lattice.viterbi(E[b:e], T, start, end)
            np.testing.assert_array_equal(paths[b:e], path)
            assert scores[s] == score


def test_viterbi_empty_sequence():
    for start_end in [dict(), dict(start=np.ones(3), end=np.ones(3))]:
        path, score = lattice.viterbi(np.zeros((0, 3)), np.zeros((3, 3)), **start_end)
        assert path.shape == (0,) and path.dtype == np.int64
        assert score == 0.0


# ---------------------------------------------------------------------------
# Length 1, defaults, extreme scores, counting
# ---------------------------------------------------------------------------


def test_length_one():
    E = np.array([[0.5, -1.0, 2.0]])
    T = np.array([[9.0, -9.0, 0.0], [1.0, 2.0, 3.0], [-4.0, 5.0, 6.0]])  # unused
    start = np.array([0.0, 3.0, -1.0])
    end = np.array([1.0, 0.0, 0.0])
    x = E[0] + start + end
    expected = x.max() + math.log(np.exp(x - x.max()).sum())
    assert lattice.log_partition(E, T, start, end) == pytest.approx(expected, rel=1e-12)
    node, edge = lattice.marginals(E, T, start, end)
    assert edge.shape == (0, 3, 3)
    np.testing.assert_allclose(node[0], np.exp(x - expected), rtol=1e-12)
    path, score = lattice.viterbi(E, T, start, end)
    np.testing.assert_array_equal(path, [1])
    assert score == 2.0  # start[1] + E[0, 1] + end[1] = 3 - 1 + 0
    # An edge mask of shape (0, S, S) is the right shape for n = 1.
    empty_edges = np.ones((0, 3, 3), dtype=bool)
    assert lattice.log_partition(E, T, start, end, edge_mask=empty_edges) == pytest.approx(expected)
    node, edge = lattice.marginals(E, T, start, end, edge_mask=empty_edges)
    assert edge.shape == (0, 3, 3)


def test_none_equals_zeros_and_all_true_masks():
    rng = np.random.default_rng(1)
    E, T, _, _ = random_chain(rng, 5, 3, 2.0, start_end=False)
    zeros = np.zeros(3)
    full = dict(mask=np.ones((5, 3), dtype=bool), edge_mask=np.ones((4, 3, 3), dtype=bool))
    base = lattice.log_partition(E, T)
    assert lattice.log_partition(E, T, zeros, zeros) == pytest.approx(base, rel=1e-14)
    assert lattice.log_partition(E, T, **full) == pytest.approx(base, rel=1e-14)
    node, edge = lattice.marginals(E, T)
    node2, edge2 = lattice.marginals(E, T, zeros, zeros, **full)
    np.testing.assert_allclose(node2, node, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(edge2, edge, rtol=1e-13, atol=1e-15)
    np.testing.assert_array_equal(lattice.viterbi(E, T, **full)[0], lattice.viterbi(E, T)[0])


def test_design_example_underflows_in_scaled_space():
    E = np.array([[1e3, -1e3], [1e3, -1e3]])
    T = np.array([[-1e3, 1e3], [1e3, -1e3]])
    bf = brute_force(E, T)
    log_z = lattice.log_partition(E, T)
    assert math.isfinite(log_z)
    np.testing.assert_allclose(log_z, bf.log_z, rtol=1e-12)
    node, edge = lattice.marginals(E, T)
    check_marginals(node, edge, bf, 2, 2)
    path, score = lattice.viterbi(E, T)
    assert score == bf.best_score
    # Three exactly tied paths (0,0), (0,1), (1,0): the lowest index wins, read either way.
    assert tuple(int(v) for v in path) == (0, 0)


# Chains on which a scaled pass loses (underflows, or keeps as a subnormal) a
# partial path whose probability is negligible at that token but that later
# tokens make dominant; the scale sum stays large, so only a per-entry check
# can notice.
LOST_PATH_CHAINS = {
    # The all-1 path (score 50) is e^-800 behind at token 1; all-0 scores 0.
    "underflow-then-dominant": (
        [[0.0, 0.0], [0.0, -800.0], [0.0, 400.0], [0.0, 450.0]],
        [[0.0, -1000.0], [-1000.0, 0.0]],
    ),
    # Found by random search: log Z 10 (all-1 path), marginals all on label 1.
    "underflow-marginals": (
        [[0.0, 0.0], [0.0, 320.0], [0.0, -770.0], [0.0, 340.0], [-720.0, 0.0]],
        [[30.0, -600.0], [-730.0, 30.0]],
    ),
    # Found by Hypothesis: the best path (0, 1, 0, 1) passes through an
    # alpha entry e^-733 that is stored as a subnormal (~1e-5 relative error).
    "subnormal": ([[0.0, 0.0]] * 4, [[273.0, 733.0], [0.0, 0.0]]),
}


@pytest.mark.parametrize("case", list(LOST_PATH_CHAINS))
def test_a_path_dropped_by_scaling_is_not_lost(case):
    E, T = (np.array(a) for a in LOST_PATH_CHAINS[case])
    bf = brute_force(E, T)
    np.testing.assert_allclose(lattice.log_partition(E, T), bf.log_z, rtol=1e-12, atol=1e-9)
    check_marginals(*lattice.marginals(E, T), bf, *E.shape)
    path, score = lattice.viterbi(E, T)
    assert score == bf.best_score and tuple(int(v) for v in path) in bf.best


def test_a_subnormal_transition_factor_gives_the_exact_log_partition():
    # The masks leave one path, 0 -> 1, whose transition factor exp(-720) is
    # subnormal: the scaled pass must refuse the chain (its only allowed
    # value at token 1 is below kMinAlpha) rather than carry a subnormal
    # scale, and log Z is the path's score.
    E = np.zeros((2, 2))
    T = np.array([[0.0, -720.0], [-720.0, 0.0]])
    mask = np.array([[True, False], [False, True]])
    assert 0.0 < math.exp(-720.0) < np.finfo(float).tiny
    assert lattice.log_partition(E, T, mask=mask) == pytest.approx(-720.0, rel=1e-9)
    node, _ = lattice.marginals(E, T, mask=mask)
    np.testing.assert_allclose(node, mask.astype(float), atol=1e-12)


@pytest.mark.parametrize("scale", [1e3, 3e3])
def test_random_extreme_chains_match_brute_force(scale):
    rng = np.random.default_rng(int(scale))
    for trial in range(400):
        n = int(rng.integers(1, 7))
        S = int(rng.integers(1, 5))
        E, T, start, end = random_chain(rng, n, S, scale, start_end=trial % 2 == 0)
        if trial % 2:
            # Sparse, rounded scores: many exact zeros and large gaps, the
            # shapes that make scaled passes drop paths.
            E = np.round(E / 10) * 10 * (rng.random((n, S)) < 0.5)
            T = np.round(T / 10) * 10
        mask = rng.random((n, S)) < 0.8 if trial % 3 == 0 else None
        bf = brute_force(E, T, start, end, mask)
        if bf.n_allowed == 0:
            continue
        np.testing.assert_allclose(
            lattice.log_partition(E, T, start, end, mask), bf.log_z, rtol=1e-12, atol=1e-10 * scale
        )
        check_marginals(*lattice.marginals(E, T, start, end, mask), bf, n, S)
        path, score = lattice.viterbi(E, T, start, end, mask)
        assert abs(score - bf.best_score) <= 1e-9 * scale


@pytest.mark.parametrize("n,S", [(1, 1), (1, 3), (4, 2), (6, 4), (1000, 5)])
def test_counting_with_zero_potentials(n, S):
    E, T = np.zeros((n, S)), np.zeros((S, S))
    np.testing.assert_allclose(lattice.log_partition(E, T), n * math.log(S), rtol=1e-12, atol=1e-12)
    node, edge = lattice.marginals(E, T)
    np.testing.assert_allclose(node, 1.0 / S, rtol=0, atol=MARGINAL_ATOL)
    np.testing.assert_allclose(edge, 1.0 / S**2, rtol=0, atol=MARGINAL_ATOL)


# ---------------------------------------------------------------------------
# Long sequences (scaled fast path and log-space fallback)
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module", params=[5.0, 1e3], ids=["scale5", "scale1e3"])
def long_chain(request):
    rng = np.random.default_rng(7)
    E, T, start, end = random_chain(rng, 100_000, 3, request.param)
    return E, T, start, end


def test_long_sequence_log_partition(long_chain):
    E, T, start, end = long_chain
    log_z = lattice.log_partition(E, T, start, end)
    assert math.isfinite(log_z)
    np.testing.assert_allclose(log_z, log_forward(E, T, start, end), rtol=1e-10)


def test_long_sequence_marginals(long_chain):
    E, T, start, end = long_chain
    n = E.shape[0]
    node, edge = lattice.marginals(E, T, start, end)
    assert node.shape == (n, 3) and edge.shape == (n - 1, 3, 3)
    assert np.all(np.isfinite(node)) and np.all(np.isfinite(edge))
    np.testing.assert_allclose(node.sum(axis=1), 1.0, rtol=0, atol=1e-9)
    np.testing.assert_allclose(edge.sum(axis=1), node[1:], rtol=0, atol=1e-9)
    np.testing.assert_allclose(edge.sum(axis=2), node[:-1], rtol=0, atol=1e-9)
    for t in [0, n // 2, n - 1]:
        np.testing.assert_allclose(
            node[t], node_marginal_at(E, T, t, start, end), rtol=0, atol=1e-8, err_msg=f"t={t}"
        )


def test_long_sequence_viterbi(long_chain):
    E, T, start, end = long_chain
    path, score = lattice.viterbi(E, T, start, end)
    assert path.shape == (E.shape[0],)
    np.testing.assert_allclose(score, log_viterbi_score(E, T, start, end), rtol=1e-10)
    np.testing.assert_allclose(score, labeling_score(E, T, start, end, path), rtol=1e-10)


# ---------------------------------------------------------------------------
# Input conversion and bad input
# ---------------------------------------------------------------------------


def test_integer_float32_and_non_contiguous_inputs_are_accepted():
    rng = np.random.default_rng(3)
    E = rng.integers(-3, 4, size=(5, 3))
    T = rng.integers(-3, 4, size=(3, 3))
    start = rng.integers(-3, 4, size=3)
    end = rng.integers(-3, 4, size=3)
    f64 = [a.astype(np.float64) for a in (E, T, start, end)]
    expected_z = lattice.log_partition(*f64)
    expected_path, expected_score = lattice.viterbi(*f64)
    expected_node, _ = lattice.marginals(*f64)
    bf = brute_force(*f64)
    np.testing.assert_allclose(expected_z, bf.log_z, rtol=1e-12)
    variants = {
        "int64": (E, T, start, end),
        "int32": tuple(a.astype(np.int32) for a in (E, T, start, end)),
        "float32": tuple(a.astype(np.float32) for a in (E, T, start, end)),
        # Same values, non-C-contiguous layouts.
        "fortran": (np.asfortranarray(f64[0]), np.asfortranarray(f64[1]), f64[2], f64[3]),
        "strided": (
            np.repeat(f64[0], 2, axis=1)[:, ::2],
            f64[1].T.copy().T,
            np.repeat(f64[2], 2)[::2],
            np.repeat(f64[3], 2)[::2],
        ),
        "transposed-view": (f64[0].T.copy().T, np.ascontiguousarray(f64[1].T).T, f64[2], f64[3]),
    }
    for name, args in variants.items():
        assert lattice.log_partition(*args) == pytest.approx(expected_z, rel=1e-12), name
        node, _ = lattice.marginals(*args)
        np.testing.assert_allclose(node, expected_node, rtol=1e-12, atol=1e-15, err_msg=name)
        path, score = lattice.viterbi(*args)
        np.testing.assert_array_equal(path, expected_path, err_msg=name)
        assert score == pytest.approx(expected_score, rel=1e-12), name


def test_non_contiguous_masks_are_read_correctly():
    rng = np.random.default_rng(4)
    n, S = 5, 3
    E, T, start, end = random_chain(rng, n, S, 2.0)
    mask = rng.random((n, S)) < 0.7
    mask[:, 1] = True
    edge_mask = rng.random((n - 1, S, S)) < 0.8
    edge_mask[:, 1, 1] = True
    bf = brute_force(E, T, start, end, mask, edge_mask)
    strided_mask = np.repeat(mask, 2, axis=0)[::2]
    fortran_edge = np.asfortranarray(edge_mask)
    assert not strided_mask.flags.c_contiguous and not fortran_edge.flags.c_contiguous
    args = dict(start=start, end=end, mask=strided_mask, edge_mask=fortran_edge)
    np.testing.assert_allclose(lattice.log_partition(E, T, **args), bf.log_z, rtol=1e-12)
    check_marginals(*lattice.marginals(E, T, **args), bf, n, S)
    assert lattice.viterbi(E, T, **args)[1] == pytest.approx(bf.best_score, rel=1e-12)


def _good(n=4, S=3):
    rng = np.random.default_rng(5)
    E, T, start, end = random_chain(rng, n, S, 1.0)
    return dict(emissions=E, transitions=T, start=start, end=end,
                mask=np.ones((n, S), dtype=bool), edge_mask=np.ones((n - 1, S, S), dtype=bool))


def _with(**changes):
    args = _good()
    args.update(changes)
    return args


BAD_SHAPES = {
    "emissions-1d": (_with(emissions=np.zeros(3)), "emissions"),
    "emissions-3d": (_with(emissions=np.zeros((4, 3, 1))), "emissions"),
    "transitions-not-square": (_with(transitions=np.zeros((3, 4))), "transitions"),
    "transitions-1d": (_with(transitions=np.zeros(9)), "transitions"),
    "transitions-wrong-S": (_with(transitions=np.zeros((4, 4))), "transitions|emissions"),
    "start-wrong-length": (_with(start=np.zeros(4)), "start"),
    "start-2d": (_with(start=np.zeros((1, 3))), "start"),
    "end-wrong-length": (_with(end=np.zeros(2)), "end"),
    "mask-wrong-shape": (_with(mask=np.ones((4, 4), dtype=bool)), "mask"),
    "mask-wrong-length": (_with(mask=np.ones((3, 3), dtype=bool)), "mask"),
    "edge_mask-wrong-length": (_with(edge_mask=np.ones((4, 3, 3), dtype=bool)), "edge_mask"),
    "edge_mask-2d": (_with(edge_mask=np.ones((3, 3), dtype=bool)), "edge_mask"),
}


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("case", list(BAD_SHAPES), ids=str)
def test_wrong_shapes_raise_naming_the_argument(fn, case):
    args, name = BAD_SHAPES[case]
    with pytest.raises(ValueError, match=name):
        fn(**args)


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("argument", ["emissions", "transitions", "start", "end"])
@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf], ids=["nan", "inf", "-inf"])
def test_non_finite_values_raise_naming_the_argument(fn, argument, value):
    args = _good()
    bad = args[argument].copy()
    bad.flat[bad.size // 2] = value
    args[argument] = bad
    with pytest.raises(ValueError, match=argument):
        fn(**args)


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
def test_mask_row_with_no_allowed_label_raises(fn):
    mask = np.ones((4, 3), dtype=bool)
    mask[2] = False
    with pytest.raises(ValueError, match="mask"):
        fn(**_with(mask=mask))


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
def test_edge_mask_blocking_every_path_raises(fn):
    # A whole position blocked.
    edge_mask = np.ones((3, 3, 3), dtype=bool)
    edge_mask[1] = False
    with pytest.raises(ValueError, match="mask"):
        fn(**_with(edge_mask=edge_mask))
    # Every position and every label has something allowed, yet no path
    # survives: 0->0 only at the first edge, 1->1 only at the second.
    edge_mask = np.ones((3, 3, 3), dtype=bool)
    edge_mask[0] = False
    edge_mask[0, 0, 0] = True
    edge_mask[1] = False
    edge_mask[1, 1, 1] = True
    assert brute_force(np.zeros((4, 3)), np.zeros((3, 3)), edge_mask=edge_mask).n_allowed == 0
    with pytest.raises(ValueError, match="mask"):
        fn(**_with(edge_mask=edge_mask))
    # Node and edge masks fine on their own, impossible together.
    mask = np.ones((4, 3), dtype=bool)
    mask[1] = [False, True, True]
    edge_mask = np.ones((3, 3, 3), dtype=bool)
    edge_mask[0, :, 1:] = False
    with pytest.raises(ValueError, match="mask"):
        fn(**_with(mask=mask, edge_mask=edge_mask))


def test_reference_self_consistency():
    # The oracle itself: brute force, tree reduction and node_marginal_at agree.
    rng = np.random.default_rng(11)
    assert all_labelings(3, 2).shape == (8, 3)
    for trial in range(30):
        n = int(rng.integers(1, 6))
        S = int(rng.integers(1, 4))
        E, T, start, end = random_chain(rng, n, S, [1.0, 100.0, 1e3][trial % 3])
        mask = rng.random((n, S)) < 0.8
        edge_mask = rng.random((n - 1, S, S)) < 0.8
        bf = brute_force(E, T, start, end, mask, edge_mask)
        if bf.n_allowed:
            np.testing.assert_allclose(log_forward(E, T, start, end, mask, edge_mask), bf.log_z, rtol=1e-13)
            np.testing.assert_allclose(
                log_viterbi_score(E, T, start, end, mask, edge_mask), bf.best_score, rtol=1e-13
            )
            np.testing.assert_allclose(bf.node.sum(axis=1), 1.0, rtol=1e-13)
        bf = brute_force(E, T, start, end)
        for t in range(n):
            np.testing.assert_allclose(node_marginal_at(E, T, t, start, end), bf.node[t], atol=1e-13)
