"""The likelihood objective and the Objective sum, against brute force and finite differences.

References never come from the code under test: the loss is recomputed by
enumerating every labeling (``reference.brute_force``) of ``E = X·W`` built
densely in numpy from the flat parameter vector
``theta = [W entries | T (S×S, [prev, next]) | start (S) | end (S)]``, and
the gradient is checked both against the brute-force expectation
``Σ_x w_x (E_p[F] − F(y_x))`` and against central finite differences of the
loss.
"""

import math
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import sscrf
from reference import (brute_force, corpus_scores, labeling_score, pack_gradient,
                       random_corpus, unpack, zipf_rows)
from sscrf import _core
from sscrf.layout import ParameterLayout
from sscrf.objectives import OBJECTIVES, Objective, Term


def dense_layout(A, S):
    """row_ptr, label_ids with every (attribute, label) pair."""
    layout = ParameterLayout.every_pair(A, S)
    return layout.row_ptr, layout.label_ids


def observed_like_layout(rng, data, drop=0.3):
    """The (attribute, label) pairs seen in the labeled tokens, some dropped.

    Computed here with plain Python sets; dropping pairs leaves firing
    attributes with empty rows, and attribute 0 always gets an empty row.
    """
    S, A = data["S"], data["A"]
    pairs = set()
    for t in range(len(data["labels"])):
        for k in range(data["indptr"][t], data["indptr"][t + 1]):
            pairs.add((int(data["indices"][k]), int(data["labels"][t])))
    kept = sorted(p for p in pairs if p[0] != 0 and rng.random() >= drop)
    rows = [[label for a2, label in kept if a2 == a] for a in range(A)]
    assert any(len(r) == 0 for r in rows) and any(len(r) > 0 for r in rows)
    row_ptr = np.zeros(A + 1, dtype=np.int64)
    row_ptr[1:] = np.cumsum([len(r) for r in rows])
    label_ids = np.array([label for r in rows for label in r], dtype=np.int32)
    return row_ptr, label_ids


def make_layout(kind, rng, data):
    if kind == "dense":
        return dense_layout(data["A"], data["S"])
    return observed_like_layout(rng, data)


def corpus_of(data, weights=None):
    return _core.Corpus(data["indptr"], data["indices"], data["values"], data["offsets"],
                        data["A"], data["labels"], weights, None)



def brute_force_loss_and_grad(data, row_ptr, label_ids, theta, weights=None):
    """Σ_x w_x (log Z − score(y_x)) and its gradient, by enumeration."""
    S = data["S"]
    E_all, T, start, end = corpus_scores(data, theta, row_ptr, label_ids, S)
    X, y_all, offsets = data["X"], data["labels"], data["offsets"]
    dE_all = np.zeros_like(E_all)
    dT = np.zeros((S, S))
    dstart = np.zeros(S)
    dend = np.zeros(S)
    terms = []
    for s in range(len(offsets) - 1):
        a, b = offsets[s], offsets[s + 1]
        w = 1.0 if weights is None else float(weights[s])
        if b == a:
            continue  # an empty sentence: log Z = score = 0
        E, y = E_all[a:b], y_all[a:b]
        bf = brute_force(E, T, start, end)
        terms.append(w * (bf.log_z - labeling_score(E, T, start, end, y)))
        onehot = np.eye(S)[y]
        dE = w * (bf.node - onehot)
        dE_all[a:b] = dE
        dstart += dE[0]
        dend += dE[-1]
        dT += w * bf.edge.sum(axis=0)
        for t in range(1, b - a):
            dT[y[t - 1], y[t]] -= w
    grad = pack_gradient(X, dE_all, dT, dstart, dend, row_ptr, label_ids)
    return math.fsum(terms), grad


def setup(seed, kind, weighted, n_sentences=6, max_len=5, A=6, S=3, scale=1.0):
    rng = np.random.default_rng(seed)
    data = random_corpus(rng, n_sentences, max_len, A, S)
    row_ptr, label_ids = make_layout(kind, rng, data)
    weights = rng.uniform(0.0, 3.0, size=n_sentences) if weighted else None
    layout = _core.Layout(row_ptr, label_ids, S)
    theta = rng.normal(0.0, scale, size=layout.n_parameters)
    return data, row_ptr, label_ids, weights, layout, theta


KINDS = ["dense", "observed"]


# ---------------------------------------------------------------------------
# Value and gradient against brute force
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("weighted", [False, True])
def test_likelihood_matches_brute_force(seed, kind, weighted):
    S = 1 + seed % 3
    data, row_ptr, label_ids, weights, layout, theta = setup(seed, kind, weighted, S=S)
    assert layout.n_parameters == len(label_ids) + S * S + 2 * S
    corpus = corpus_of(data, weights)
    loss, grad = _core.likelihood(corpus, layout, theta, 1)
    ref_loss, ref_grad = brute_force_loss_and_grad(data, row_ptr, label_ids, theta, weights)
    assert loss == pytest.approx(ref_loss, rel=1e-11, abs=1e-11)
    assert grad.shape == (layout.n_parameters,)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("S", [4, 5, 9, 12, 14, 19, 23, 27])
@pytest.mark.parametrize("kind", KINDS)
def test_likelihood_matches_brute_force_at_every_padded_width(S, kind):
    # Label rows are padded to a multiple of 4 lanes and the kernels work in
    # tiles of 1 to 6 four-lane vectors: these S give padded widths 4 to 28,
    # so every tile width (and 28 = 24 + 4) runs, with and without padding
    # lanes. S = 4 takes the one-vector lattice passes and back-projection;
    # up to 12 labels an observed layout is scored from a copy of every row,
    # up to 24 a dense one from theta in place. Chains of up to 3 tokens
    # keep the enumeration at most 27**3 labelings.
    data, row_ptr, label_ids, _, layout, theta = setup(S, kind, False, n_sentences=5,
                                                       max_len=3, A=8, S=S)
    loss, grad = _core.likelihood(corpus_of(data), layout, theta, 1)
    ref_loss, ref_grad = brute_force_loss_and_grad(data, row_ptr, label_ids, theta)
    assert loss == pytest.approx(ref_loss, rel=1e-11, abs=1e-11)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("scale", [20.0, 300.0])
@pytest.mark.parametrize("weighted", [False, True])
def test_likelihood_large_scores_match_brute_force(kind, scale, weighted):
    # Scores of hundreds underflow scaled forward products: the value must
    # still be exact (DESIGN: correct for scores of ±1e3).
    data, row_ptr, label_ids, weights, layout, theta = setup(11, kind, weighted, S=3,
                                                             scale=scale)
    loss, grad = _core.likelihood(corpus_of(data, weights), layout, theta, 1)
    ref_loss, ref_grad = brute_force_loss_and_grad(data, row_ptr, label_ids, theta, weights)
    assert loss == pytest.approx(ref_loss, rel=1e-10)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-7, atol=1e-9)


def test_likelihood_term_through_registry_and_weight():
    data, row_ptr, label_ids, weights, layout, theta = setup(3, "observed", True)
    corpus = corpus_of(data, weights)
    ref_loss, ref_grad = brute_force_loss_and_grad(data, row_ptr, label_ids, theta, weights)
    term = OBJECTIVES["likelihood"](corpus, layout, 1)
    value, grad = term.value_and_gradient(theta)
    assert value == pytest.approx(ref_loss, rel=1e-11)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-9, atol=1e-11)
    heavy = OBJECTIVES["likelihood"](corpus, layout, 1, weight=2.5)
    value2, grad2 = heavy.value_and_gradient(theta)
    assert value2 == pytest.approx(2.5 * ref_loss, rel=1e-11)
    np.testing.assert_allclose(grad2, 2.5 * ref_grad, rtol=1e-9, atol=1e-11)


def test_per_sequence_weights_scale_each_sentence():
    # Weight 0 removes a sentence, weight 2 counts it twice.
    data, row_ptr, label_ids, _, layout, theta = setup(5, "dense", False, n_sentences=4)
    corpus = corpus_of(data)
    full, full_grad = _core.likelihood(corpus, layout, theta, 1)
    parts = []
    for s in range(4):
        w = np.zeros(4)
        w[s] = 1.0
        parts.append(_core.likelihood(corpus_of(data, w), layout, theta, 1))
    assert full == pytest.approx(sum(p[0] for p in parts), rel=1e-12)
    np.testing.assert_allclose(full_grad, sum(p[1] for p in parts), rtol=1e-10, atol=1e-12)
    w = np.array([2.0, 0.0, 1.0, 0.5])
    loss, grad = _core.likelihood(corpus_of(data, w), layout, theta, 1)
    assert loss == pytest.approx(sum(wi * p[0] for wi, p in zip(w, parts)), rel=1e-12)
    np.testing.assert_allclose(grad, sum(wi * p[1] for wi, p in zip(w, parts)),
                               rtol=1e-10, atol=1e-12)


def test_weighted_transition_gradient_minimal():
    # One 2-token sentence, no attributes, S = 2, θ = 0: every labeling has
    # probability 1/4, so ∂/∂T = w·(1/4 − [y_0=a, y_1=b]), ∂start = w·(1/2 − [y_0=b]),
    # ∂end = w·(1/2 − [y_1=b]); the loss is w·log 4.
    layout = _core.Layout(np.array([0]), np.zeros(0, np.int32), 2)
    theta = np.zeros(layout.n_parameters)
    for w in (None, 1.0, 2.0, 0.5):
        corpus = _core.Corpus(np.array([0, 0, 0]), np.zeros(0, np.int32), np.zeros(0),
                              np.array([0, 2]), 0, np.array([0, 1], np.int32),
                              None if w is None else np.array([w]))
        loss, grad = _core.likelihood(corpus, layout, theta, 1)
        k = 1.0 if w is None else w
        assert loss == pytest.approx(k * math.log(4.0), rel=1e-14)
        expected = k * np.array([0.25, -0.75, 0.25, 0.25, -0.5, 0.5, 0.5, -0.5])
        np.testing.assert_allclose(grad, expected, rtol=1e-14, atol=1e-15, err_msg=f"w={w}")


def test_empty_sequences_contribute_nothing():
    # A corpus may hold empty sentences (the decoders need them): they add 0.
    rng = np.random.default_rng(7)
    data = random_corpus(rng, 3, 4, 4, 2)
    off = data["offsets"]
    with_empty = dict(data, offsets=np.array([0, 0, off[1], off[1], off[2], off[3], off[3]],
                                             dtype=np.int64))
    row_ptr, label_ids = dense_layout(4, 2)
    layout = _core.Layout(row_ptr, label_ids, 2)
    theta = rng.normal(size=layout.n_parameters)
    loss, grad = _core.likelihood(corpus_of(with_empty), layout, theta, 2)
    ref_loss, ref_grad = brute_force_loss_and_grad(data, row_ptr, label_ids, theta)
    assert loss == pytest.approx(ref_loss, rel=1e-11)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-9, atol=1e-11)


# ---------------------------------------------------------------------------
# Finite differences
# ---------------------------------------------------------------------------


def central_differences(f, theta, h=1e-5):
    out = np.empty_like(theta)
    for i in range(len(theta)):
        up, down = theta.copy(), theta.copy()
        up[i] += h
        down[i] -= h
        out[i] = (f(up) - f(down)) / (2 * h)
    return out


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("weighted", [False, True])
def test_likelihood_gradient_finite_differences(seed, kind, weighted):
    data, row_ptr, label_ids, weights, layout, theta = setup(100 + seed, kind, weighted)
    corpus = corpus_of(data, weights)
    _, grad = _core.likelihood(corpus, layout, theta, 1)
    fd = central_differences(lambda th: _core.likelihood(corpus, layout, th, 1)[0], theta)
    blocks = ParameterLayout(row_ptr, label_ids, data["S"]).blocks()
    for name, sl in blocks.items():
        assert sl.stop is None or sl.stop > sl.start
        np.testing.assert_allclose(grad[sl], fd[sl], rtol=1e-6, atol=1e-7, err_msg=name)


def test_objective_gradient_finite_differences():
    data, row_ptr, label_ids, weights, layout, theta = setup(9, "observed", True)
    objective = Objective([OBJECTIVES["likelihood"](corpus_of(data, weights), layout, 1)], 0.7)
    _, grad = objective(theta)
    fd = central_differences(lambda th: objective(th)[0], theta)
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-7)


# ---------------------------------------------------------------------------
# The L2 prior
# ---------------------------------------------------------------------------


class _ConstantTerm:
    def __init__(self, value, grad):
        self.value, self.grad = value, np.asarray(grad, dtype=np.float64)

    def value_and_gradient(self, theta):
        return self.value, self.grad.copy()


class _MeetingTerm(Term):
    """Gradient θ, written into ``out``; waits for a second caller before returning."""

    def __init__(self, meet):
        self.meet = meet

    def value_and_gradient(self, theta, out=None):
        out = np.empty_like(theta) if out is None else out
        np.copyto(out, theta)
        self.meet.wait()
        return 0.0, out


@pytest.mark.parametrize("reuse_gradient", [False, True])
def test_objective_called_from_two_threads_at_once(reuse_gradient):
    # The second term writes into the objective's kept scratch array; two calls
    # held there at once (at a barrier) would add each other's gradients.
    meet = threading.Barrier(2, timeout=60)
    objective = Objective([_ConstantTerm(1.0, [0.0, 0.0, 0.0]), _MeetingTerm(meet)], c2=0.0,
                          reuse_gradient=reuse_gradient)
    thetas = [np.array([1.0, 2.0, 3.0]), np.array([-5.0, 7.0, 0.5])]
    with ThreadPoolExecutor(2) as pool:  # copies: a kept gradient is overwritten by the next call
        got = list(pool.map(lambda theta: tuple(np.copy(r) for r in objective(theta)), thetas))
    for i in (0, 1):
        assert got[i][0] == 1.0
        np.testing.assert_array_equal(got[i][1], thetas[i])


def test_objective_adds_l2_by_hand():
    theta = np.array([1.0, 2.0, -3.0])
    objective = Objective([_ConstantTerm(1.5, [0.25, 0.0, -1.0])], c2=0.5)
    loss, grad = objective(theta)
    # 1.5 + 0.5·(1 + 4 + 9) = 8.5 ; [0.25, 0, -1] + 2·0.5·[1, 2, -3]
    assert loss == 8.5
    np.testing.assert_array_equal(grad, [1.25, 2.0, -4.0])
    np.testing.assert_array_equal(theta, [1.0, 2.0, -3.0])  # not modified
    assert Objective([], 0.0)(theta)[0] == 0.0
    two = Objective([_ConstantTerm(1.0, [1, 1, 1]), _ConstantTerm(2.0, [0, 1, 2])], c2=0.0)
    loss, grad = two(theta)
    assert loss == 3.0
    np.testing.assert_array_equal(grad, [1.0, 2.0, 3.0])


@pytest.mark.parametrize("c2", [0.0, 0.1, 3.0])
def test_objective_with_likelihood_matches_brute_force(c2):
    data, row_ptr, label_ids, weights, layout, theta = setup(21, "dense", True)
    ref_loss, ref_grad = brute_force_loss_and_grad(data, row_ptr, label_ids, theta, weights)
    objective = Objective([OBJECTIVES["likelihood"](corpus_of(data, weights), layout, 2)], c2)
    loss, grad = objective(theta)
    assert loss == pytest.approx(ref_loss + c2 * math.fsum(theta * theta), rel=1e-11)
    np.testing.assert_allclose(grad, ref_grad + 2 * c2 * theta, rtol=1e-9, atol=1e-11)


# ---------------------------------------------------------------------------
# Determinism across thread counts
# ---------------------------------------------------------------------------


def big_corpus(seed=0, n_tokens=120_000, A=3000, S=5):
    """Random short sentences (1..12 tokens), 1..5 attributes per token (Zipf-like ids)."""
    rng = np.random.default_rng(seed)
    lengths = []
    total = 0
    while total < n_tokens:
        n = int(rng.integers(1, 13))
        lengths.append(n)
        total += n
    N = total
    indptr, indices, offsets = zipf_rows(rng, lengths, A, max_count=5, scale=50)
    values = rng.normal(size=len(indices))
    labels = rng.integers(0, S, size=N).astype(np.int32)
    weights = rng.uniform(0.1, 2.0, size=len(lengths))
    return dict(indptr=indptr, indices=indices, values=values, offsets=offsets,
                labels=labels, weights=weights, A=A, S=S, N=N)


def test_build_has_openmp():
    info = sscrf.build_info()
    assert info["openmp"] is True, info


@pytest.mark.parametrize("kind", ["dense", "sparse"])
def test_likelihood_bit_identical_across_thread_counts(kind):
    big = big_corpus(seed=1 if kind == "dense" else 2)
    assert sscrf.build_info()["openmp"] is True
    A, S = big["A"], big["S"]
    rng = np.random.default_rng(3)
    if kind == "dense":
        row_ptr, label_ids = dense_layout(A, S)
        weights = None
    else:
        keep = rng.random((A, S)) < 0.4
        keep[::5] = False  # empty rows
        row_ptr = np.zeros(A + 1, dtype=np.int64)
        row_ptr[1:] = np.cumsum(keep.sum(axis=1))
        label_ids = np.nonzero(keep)[1].astype(np.int32)
        weights = big["weights"]
    corpus = _core.Corpus(big["indptr"], big["indices"], big["values"], big["offsets"], A,
                          big["labels"], weights, None)
    assert corpus.n_tokens == big["N"] >= 120_000
    assert corpus.n_chunks > 1
    assert corpus.n_chunks >= big["N"] // 32768
    layout = _core.Layout(row_ptr, label_ids, S)
    theta = rng.normal(0.0, 0.5, size=layout.n_parameters)
    base_loss, base_grad = _core.likelihood(corpus, layout, theta, 1)
    assert np.isfinite(base_loss) and base_loss > 0
    assert np.count_nonzero(base_grad) > 0.5 * len(base_grad)
    for n_threads in (2, 3, 4, 1):
        loss, grad = _core.likelihood(corpus, layout, theta, n_threads)
        assert loss == base_loss, n_threads
        assert np.array_equal(grad, base_grad), n_threads


def test_chunk_index_built_once_by_whichever_call_comes_first():
    # The chunks and their attribute index are built on a corpus's first
    # evaluation (decoders never need them): Python threads that evaluate a
    # fresh corpus at once must all get the result of a corpus built ahead.
    import threading

    big = big_corpus(seed=5)
    A, S = big["A"], big["S"]
    layout = _core.Layout(*dense_layout(A, S), S)
    theta = np.random.default_rng(6).normal(0.0, 0.5, size=layout.n_parameters)

    def fresh():
        return _core.Corpus(big["indptr"], big["indices"], big["values"], big["offsets"], A,
                            big["labels"], None, None)

    ahead = fresh()
    assert ahead.n_chunks > 1  # built here, by the property
    expected = _core.likelihood(ahead, layout, theta, 1)
    for _ in range(3):
        corpus = fresh()
        results = [None] * 4

        def work(i, corpus=corpus):
            results[i] = _core.likelihood(corpus, layout, theta, 1 + i % 2)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for loss, grad in results:
            assert loss == expected[0] and np.array_equal(grad, expected[1])
        assert corpus.n_chunks == ahead.n_chunks
    # decoding a fresh corpus gives the same paths, index or not
    plain = lambda: _core.Corpus(big["indptr"], big["indices"], big["values"],  # noqa: E731
                                 big["offsets"], A, None, None, None)
    indexed = plain()
    assert indexed.n_chunks == ahead.n_chunks
    for a, b in zip(_core.viterbi_corpus(plain(), layout, theta, 2),
                    _core.viterbi_corpus(indexed, layout, theta, 2)):
        np.testing.assert_array_equal(a, b)


def test_group_sums_reduced_in_waves_match_one_wave():
    # With 128 labels a group's sums (loss, S x S transitions, start, end)
    # take 130 KB, so the 256 groups of a 32k-token chunk run in waves of
    # at most 16 MiB of sums (cpp/objectives/chunked.hpp): 3 waves at 1 thread, 2 at
    # 16. Chunks of 8k tokens hold 64 groups, one wave, for the reference.
    A, S = 50, 128
    big = big_corpus(seed=11, n_tokens=33_000, A=A, S=S)
    arrays = (big["indptr"], big["indices"], big["values"], big["offsets"], A, big["labels"],
              big["weights"], None)
    waves = _core.Corpus(*arrays)
    one_wave = _core.Corpus(*arrays, chunk_tokens=8192)
    assert waves.n_chunks == 2 and one_wave.n_chunks == 5
    layout = _core.Layout(*dense_layout(A, S), S)
    theta = np.random.default_rng(12).normal(0.0, 0.5, size=layout.n_parameters)
    ref_loss, ref_grad = _core.likelihood(one_wave, layout, theta, 2)
    loss, grad = _core.likelihood(waves, layout, theta, 1)
    assert loss == pytest.approx(ref_loss, rel=1e-12)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-9, atol=1e-9 * np.abs(ref_grad).max())
    for n_threads in (2, 16):
        other_loss, other_grad = _core.likelihood(waves, layout, theta, n_threads)
        assert other_loss == loss and np.array_equal(other_grad, grad), n_threads


# ---------------------------------------------------------------------------
# Bad input at the C++ boundary
# ---------------------------------------------------------------------------


@pytest.fixture
def tiny():
    data, row_ptr, label_ids, _, layout, theta = setup(0, "dense", False, S=3)
    return data, layout, theta


def test_theta_wrong_length(tiny):
    data, layout, theta = tiny
    corpus = corpus_of(data)
    for bad in (theta[:-1], np.append(theta, 0.0), theta.reshape(1, -1), np.zeros(0)):
        with pytest.raises(ValueError, match="theta"):
            _core.likelihood(corpus, layout, bad, 1)


@pytest.mark.parametrize("value", [np.nan, -np.nan, np.inf, -np.inf])  # -nan: sign bit set
@pytest.mark.parametrize("where", [0, -1])  # a W entry, an end weight
def test_theta_non_finite(tiny, value, where):
    data, layout, theta = tiny
    theta = theta.copy()
    theta[where] = value
    with pytest.raises(ValueError, match="theta.*(NaN|infinite)"):
        _core.likelihood(corpus_of(data), layout, theta, 1)


@pytest.mark.parametrize("where", [0, -1])
def test_theta_magnitude_bound_is_exactly_1e250(tiny, where):
    # The check compares magnitudes' bit patterns; the neighbours of the
    # bound on both sides and both signs show it is the float order.
    data, layout, theta = tiny
    corpus = corpus_of(data)
    for value in (1e250, -1e250, np.nextafter(1e250, 0.0)):
        ok = theta.copy()
        ok[where] = value
        try:
            _core.likelihood(corpus, layout, ok, 1)
        except ValueError as exc:  # the lattice may still refuse the scores it makes
            assert "theta" not in str(exc)
    for value in (np.nextafter(1e250, np.inf), -np.nextafter(1e250, np.inf), 1e300, -1e308):
        bad = theta.copy()
        bad[where] = value
        with pytest.raises(ValueError, match="theta.*too large"):
            _core.likelihood(corpus, layout, bad, 1)


@pytest.mark.parametrize("n_threads", [1, 3])
def test_theta_faults_found_in_any_block(n_threads):
    # theta is checked in blocks of 65,536 entries, in parallel: a fault in
    # a middle block or in the short last one is found at any thread count.
    S, A = 4, 70_000
    row_ptr, label_ids = dense_layout(A, S)
    layout = _core.Layout(row_ptr, label_ids, S)
    corpus = _core.Corpus(np.array([0, 1]), np.array([3], dtype=np.int32), np.ones(1),
                          np.array([0, 1]), A, np.array([0], dtype=np.int32), None, None)
    n = layout.n_parameters
    assert n > 4 * 65536
    theta = np.zeros(n)
    assert np.isfinite(_core.likelihood(corpus, layout, theta, n_threads)[0])
    for where in (2 * 65536 + 17, n - 1, 65535):
        for value, message in ((np.nan, "NaN"), (1e251, "too large")):
            bad = theta.copy()
            bad[where] = value
            with pytest.raises(ValueError, match=f"theta.*{message}"):
                _core.likelihood(corpus, layout, bad, n_threads)


@pytest.mark.parametrize("n_threads", [0, -1, -8])
def test_non_positive_threads(tiny, n_threads):
    data, layout, theta = tiny
    with pytest.raises(ValueError, match="n_threads"):
        _core.likelihood(corpus_of(data), layout, theta, n_threads)
    with pytest.raises(ValueError, match="n_threads"):  # refused when the term is built
        OBJECTIVES["likelihood"](corpus_of(data), layout, n_threads)


def _corpus_args(**changes):
    args = dict(indptr=np.array([0, 2, 3, 3], dtype=np.int64),
                indices=np.array([0, 2, 1], dtype=np.int32),
                values=np.array([1.0, -0.5, 2.0]),
                offsets=np.array([0, 2, 3], dtype=np.int64),
                n_attributes=3,
                labels=np.array([0, 1, 2], dtype=np.int32),
                weights=None, mask=None)
    args.update(changes)
    return args


def test_valid_small_corpus_is_accepted():
    corpus = _core.Corpus(**_corpus_args())
    assert (corpus.n_tokens, corpus.n_sequences, corpus.n_attributes) == (3, 2, 3)
    assert corpus.has_labels


@pytest.mark.parametrize("changes, message", [
    (dict(indices=np.array([0, 3, 1], dtype=np.int32)), r"attribute id 3 out of range"),
    (dict(indices=np.array([0, -1, 1], dtype=np.int32)), r"attribute id -1 out of range"),
    (dict(indices=np.array([0, 7, 1], dtype=np.int64)), r"attribute id 7 out of range"),
    (dict(indptr=np.array([0, 3, 2, 3], dtype=np.int64)), r"indptr must be non-decreasing"),
    (dict(indptr=np.array([0, 2, 3, 4], dtype=np.int64)), r"indptr"),
    (dict(indptr=np.array([1, 2, 3, 3], dtype=np.int64)), r"indptr"),
    (dict(offsets=np.array([0, 2, 4], dtype=np.int64)), r"offsets"),
    (dict(offsets=np.array([0, 3, 2, 3], dtype=np.int64)), r"offsets must be non-decreasing"),
    (dict(values=np.array([1.0, np.nan, 2.0])), r"feature values.*NaN"),
    (dict(values=np.array([1.0, np.inf, 2.0])), r"feature values.*infinite"),
    (dict(values=np.array([1.0, 2.0])), r"values and indices"),
    (dict(labels=np.array([0, -1, 2], dtype=np.int32)), r"labels must be non-negative"),
    (dict(labels=np.array([0, 1], dtype=np.int32)), r"labels must have shape"),
    (dict(weights=np.array([1.0, -1.0])), r"weights must be non-negative"),
    (dict(weights=np.array([1.0, np.nan])), r"weights.*NaN"),
    (dict(weights=np.array([1.0])), r"weights must have shape"),
    (dict(n_attributes=-1), r"n_attributes"),
])
def test_bad_corpus(changes, message):
    with pytest.raises(ValueError, match=message):
        _core.Corpus(**_corpus_args(**changes))


@pytest.mark.parametrize("field, value", [
    ("indices", 2**32 + 1),  # would wrap to attribute 1 as int32
    ("indices", 2**31),
    ("labels", 2**32 + 1),  # would wrap to label 1
])
def test_ids_beyond_int32_are_refused_not_wrapped(field, value):
    # An id too large for int32 is out of range; it must not be silently
    # cast to a small valid id (DESIGN: "ids out of range at the C++
    # boundary ... never a silent wrong answer").
    args = _corpus_args()
    bad = args[field].astype(np.int64)
    bad[1] = value
    args[field] = bad
    with pytest.raises(ValueError, match="out of range|int32|too large"):
        _core.Corpus(**args)


def test_label_not_below_n_labels(tiny):
    data, layout, theta = tiny
    S = layout.n_labels
    bad = dict(data, labels=data["labels"].copy())
    bad["labels"][2] = S
    corpus = corpus_of(bad)  # the corpus does not know S; the objective does
    with pytest.raises(ValueError, match=f"label id {S} out of range"):
        _core.likelihood(corpus, layout, theta, 1)


def test_unlabeled_corpus_refused_by_likelihood(tiny):
    data, layout, theta = tiny
    corpus = _core.Corpus(data["indptr"], data["indices"], data["values"], data["offsets"],
                          data["A"])
    assert not corpus.has_labels
    with pytest.raises(ValueError, match="no labels"):
        _core.likelihood(corpus, layout, theta, 1)


def test_corpus_with_more_attributes_than_layout(tiny):
    data, layout, theta = tiny
    corpus = _core.Corpus(data["indptr"], data["indices"], data["values"], data["offsets"],
                          data["A"] + 1, data["labels"])
    with pytest.raises(ValueError, match="more attributes than the model layout"):
        _core.likelihood(corpus, layout, theta, 1)


@pytest.mark.parametrize("row_ptr, label_ids, S, message", [
    ([0, 2, 3], [0, 3, 1], 3, r"label id 3 out of range"),
    ([0, 2, 3], [0, -1, 1], 3, r"label id -1 out of range"),
    ([0, 2, 3], [1, 0, 1], 3, r"strictly increasing"),
    ([0, 2, 3], [1, 1, 1], 3, r"strictly increasing"),
    ([0, 3, 2], [0, 1, 2], 3, r"row_ptr"),
    ([0, 2, 4], [0, 1, 2], 3, r"row_ptr"),
    # a row's end past len(label_ids), then a decrease: refused before any row is read
    ([0, 100, 3], [0, 1, 2], 3, r"row_ptr must be non-decreasing"),
    ([0, 2, 3], [0, 1, 2], 0, r"n_labels"),
])
def test_bad_layout(row_ptr, label_ids, S, message):
    with pytest.raises(ValueError, match=message):
        _core.Layout(np.array(row_ptr, dtype=np.int64), np.array(label_ids, dtype=np.int32), S)


def test_chunk_size_changes_only_the_summation_order():
    # Any token budget gives the same loss and gradient up to rounding (one
    # chunk per sentence at the extreme); a budget below 1 is refused.
    big = big_corpus(n_tokens=4000)
    A, S = big["A"], big["S"]
    row_ptr, label_ids = dense_layout(A, S)
    layout = _core.Layout(row_ptr, label_ids, S)
    theta = np.random.default_rng(5).normal(0.0, 0.5, size=layout.n_parameters)
    n = 3000  # the first sentences only: chunk_tokens=1 makes a chunk per sentence
    first = int(np.searchsorted(big["offsets"], n))
    offsets = big["offsets"][:first + 1]
    tokens = int(offsets[-1])
    indptr = big["indptr"][:tokens + 1]
    args = (indptr, big["indices"][:indptr[-1]], big["values"][:indptr[-1]], offsets, A,
            big["labels"][:tokens])
    results = []
    for budget in (1, 100, 32768):
        corpus = _core.Corpus(*args, chunk_tokens=budget)
        results.append(_core.likelihood(corpus, layout, theta, 2))
        if budget == 1:
            assert corpus.n_chunks == corpus.n_sequences
    for loss, grad in results[1:]:
        assert loss == pytest.approx(results[0][0], rel=1e-12)
        np.testing.assert_allclose(grad, results[0][1], rtol=1e-9, atol=1e-9)
    with pytest.raises(ValueError, match="chunk_tokens"):
        _core.Corpus(*args, chunk_tokens=0)


def test_many_chunks_blocks_and_reduction_slices_match_brute_force():
    # S = 8: a work group's sums (loss, S×S transitions, start, end) have
    # 81 entries, reduced in more than one slice; 512-token chunks split
    # their back-projection into several blocks of attributes.
    rng = np.random.default_rng(11)
    S, A, n_sentences = 8, 30, 700
    data = random_corpus(rng, n_sentences, 3, A, S)
    row_ptr, label_ids = dense_layout(A, S)
    layout = _core.Layout(row_ptr, label_ids, S)
    theta = rng.normal(0.0, 0.5, size=layout.n_parameters)
    weights = rng.uniform(0.5, 2.0, size=n_sentences)
    corpus = _core.Corpus(data["indptr"], data["indices"], data["values"], data["offsets"], A,
                          data["labels"], weights, None, chunk_tokens=512)
    assert corpus.n_chunks >= 2
    assert corpus.n_back_projection_blocks >= 2 * corpus.n_chunks
    ref_loss, ref_grad = brute_force_loss_and_grad(data, row_ptr, label_ids, theta, weights)
    results = [_core.likelihood(corpus, layout, theta, n) for n in (1, 3)]
    for loss, grad in results:
        assert loss == pytest.approx(ref_loss, rel=1e-10)
        np.testing.assert_allclose(grad, ref_grad, rtol=1e-8, atol=1e-9)
    assert results[1][0] == results[0][0]
    assert results[1][1].tobytes() == results[0][1].tobytes()


def test_every_gradient_entry_is_written_into_a_dirty_out_buffer():
    # The gradient is not zero-filled as a whole first: each row is zeroed
    # by the first chunk where its attribute occurs, and the rest (attributes
    # absent from the corpus, those past its n_attributes, T, start, end) up
    # front. An out buffer full of NaN must come back as brute force says.
    rng = np.random.default_rng(12)
    S, used = 4, 30
    data = random_corpus(rng, 300, 4, used, S)
    remap = np.where(np.arange(used) < 10, np.arange(used), np.arange(used) + 5)
    n_corpus, n_layout = used + 5 + 3, used + 5 + 3 + 4  # 10..14 and 35..37 absent
    X = np.zeros((len(data["X"]), n_layout))
    X[:, remap] = data["X"]
    wide = dict(data, indices=remap[data["indices"]].astype(np.int32), X=X, A=n_layout)
    row_ptr, label_ids = dense_layout(n_layout, S)
    layout = _core.Layout(row_ptr, label_ids, S)
    theta = rng.normal(0.0, 0.5, size=layout.n_parameters)
    corpus = _core.Corpus(wide["indptr"], wide["indices"], wide["values"], wide["offsets"],
                          n_corpus, wide["labels"], None, None, chunk_tokens=128)
    assert corpus.n_chunks >= 4
    ref_loss, ref_grad = brute_force_loss_and_grad(wide, row_ptr, label_ids, theta)
    absent = np.r_[10:15, 35:n_layout]
    assert not np.any(X[:, absent]) and np.all(ref_grad[:n_layout * S].reshape(-1, S)[absent] == 0)
    for n_threads in (1, 3):
        out = np.full(layout.n_parameters, np.nan)
        loss, grad = _core.likelihood(corpus, layout, theta, n_threads, out=out)
        assert grad is out
        assert loss == pytest.approx(ref_loss, rel=1e-10)
        np.testing.assert_allclose(grad, ref_grad, rtol=1e-8, atol=1e-9)


def test_partial_likelihood_bit_identical_across_thread_counts():
    # Node masks (some tokens fully open, some with 1-3 allowed labels) on a
    # corpus of several chunks: the same value and gradient bits for 1/2/4 threads.
    big = big_corpus(seed=4, n_tokens=20_000)
    A, S, N = big["A"], big["S"], big["N"]
    rng = np.random.default_rng(6)
    mask = rng.random((N, S)) < 0.5
    mask[np.arange(N), big["labels"]] = True  # the gold label is always allowed
    mask[rng.random(N) < 0.3] = True
    corpus = _core.Corpus(big["indptr"], big["indices"], big["values"], big["offsets"], A,
                          None, big["weights"], mask, chunk_tokens=2048)
    assert corpus.n_chunks >= 8
    row_ptr, label_ids = dense_layout(A, S)
    layout = _core.Layout(row_ptr, label_ids, S)
    theta = rng.normal(0.0, 0.5, size=layout.n_parameters)
    results = [_core.partial_likelihood(corpus, layout, theta, n) for n in (1, 2, 4)]
    for loss, grad in results[1:]:
        assert loss == results[0][0]
        assert grad.tobytes() == results[0][1].tobytes()
    assert results[0][0] > 0 and np.any(results[0][1] != 0)


def test_reused_gradient_buffer_gives_the_same_results_and_out_is_checked():
    data, row_ptr, label_ids, weights, layout, theta = setup(4, "observed", True)
    corpus = corpus_of(data, weights)
    fresh = Objective([OBJECTIVES["likelihood"](corpus, layout, 1)], 0.3)
    reused = Objective([OBJECTIVES["likelihood"](corpus, layout, 1),
                        OBJECTIVES["likelihood"](corpus, layout, 2, weight=0.5)], 0.3,
                       n_threads=2, reuse_gradient=True)
    loss, grad = fresh(theta)
    other = theta + 0.1
    first = reused(other)[1]
    loss2, grad2 = reused(theta)
    assert grad2 is first                       # one buffer, overwritten
    assert fresh(other)[1] is not fresh(theta)[1]
    half = OBJECTIVES["likelihood"](corpus, layout, 1).value_and_gradient(theta)
    assert loss2 == pytest.approx(loss + 0.5 * half[0], rel=1e-13)
    np.testing.assert_allclose(grad2, grad + 0.5 * half[1], rtol=1e-12, atol=1e-12)
    # objective(theta, out): the gradient written into out, the same bits
    given = np.full(layout.n_parameters, np.nan)
    loss3, grad3 = reused(theta, given)
    assert grad3 is given and loss3 == loss2 and given.tobytes() == grad2.tobytes()
    for bad in (np.empty(layout.n_parameters, dtype=np.float32),
                np.empty(layout.n_parameters + 1), np.empty((2, layout.n_parameters))[:, 0],
                [0.0] * layout.n_parameters):
        with pytest.raises(ValueError, match="out must be"):
            reused(theta, bad)
    with pytest.raises(ValueError, match="overlap"):
        reused(given, given)
    # out written in place and returned; bad buffers refused before any work
    out = np.full(layout.n_parameters, np.nan)
    value, g = _core.likelihood(corpus, layout, theta, 1, out=out)
    assert g is out and value == half[0]
    np.testing.assert_array_equal(out, half[1])
    shared = np.concatenate([theta, np.zeros(layout.n_parameters)])
    with pytest.raises(ValueError, match="overlap"):
        _core.likelihood(corpus, layout, shared[:layout.n_parameters],
                         1, out=shared[:layout.n_parameters])
    with pytest.raises(ValueError, match="entries"):
        _core.likelihood(corpus, layout, theta, 1, out=np.empty(layout.n_parameters + 1))
    with pytest.raises(ValueError, match="float64"):
        _core.likelihood(corpus, layout, theta, 1,
                         out=np.empty(layout.n_parameters, dtype=np.float32))


def test_corpus_refuses_bad_sequence_weights():
    data, row_ptr, label_ids, weights, layout, theta = setup(5, "observed", True)
    n = len(data["offsets"]) - 1
    for bad, message in ((-np.ones(n), "non-negative"), (np.ones(n + 1), "shape"),
                         (np.full(n, np.nan), "NaN")):
        with pytest.raises(ValueError, match=message):
            corpus_of(data, bad)


def every_width_layout(rng, A, S):
    """An observed layout in which attribute a scores a % (S + 1) labels (drawn
    from rng), so every row width from 0 to S occurs: (row_ptr, label_ids)."""
    rows = [np.sort(rng.choice(S, size=a % (S + 1), replace=False)) for a in range(A)]
    row_ptr = np.zeros(A + 1, dtype=np.int64)
    row_ptr[1:] = np.cumsum([len(r) for r in rows])
    return row_ptr, np.concatenate(rows).astype(np.int32)


@pytest.mark.parametrize("S", [1, 2, 3, 4, 5, 11, 12, 14, 19, 22, 30, 40, 49])
def test_observed_rows_of_every_width_match_the_dense_layout(S):
    # Attribute a scores a % (S + 1) labels, so every row width from 0 to S
    # occurs. Up to S = 12 (LayerWeights::attribute_rows) C++ scores every
    # row from a zero-padded copy; above, it reads rows of m..S-1 labels
    # through a copy padded to a multiple of 4 lanes (m = 2 up to S = 32,
    # 3 at S = 40, 4 at S = 49: padded_row_min_labels), full rows in place
    # and whole, the others entry by entry. Up to S = 4 the back-projection
    # sums one vector per occurrence; above, it has a path per kind of row.
    # Whole rows are summed in one register window at S = 14, 19 and 22
    # (4, 5 and 6 vec4), in batches added window by window above.
    # Values are not 1, tokens carry up to 120 attributes (more whole rows
    # than one batch of 64), and chunks of 64 tokens make several.
    # Reference: the same weights in the dense layout (zeros for the missing
    # pairs), which the brute-force tests above check; its rows are all
    # full, read from theta in place up to S = 24.
    rng = np.random.default_rng(S)
    A = 400
    data = random_corpus(rng, 80, 12, A, S, max_attrs=120)
    row_ptr, label_ids = every_width_layout(rng, A, S)
    layout = _core.Layout(row_ptr, label_ids, S)
    theta = rng.normal(0.0, 0.3, size=layout.n_parameters)
    dense_row_ptr, dense_label_ids = dense_layout(A, S)
    dense = _core.Layout(dense_row_ptr, dense_label_ids, S)
    W, T, start, end = unpack(theta, row_ptr, label_ids, A, S)
    dense_theta = np.concatenate([W.ravel(), T.ravel(), start, end])
    args = (data["indptr"], data["indices"], data["values"], data["offsets"], A, data["labels"])
    corpus = _core.Corpus(*args, chunk_tokens=64)
    assert corpus.n_chunks >= 5

    loss, grad = _core.likelihood(corpus, layout, theta, 1)
    ref_loss, ref_grad = _core.likelihood(corpus, dense, dense_theta, 1)
    assert loss == pytest.approx(ref_loss, rel=1e-12)
    attrs = np.repeat(np.arange(A), np.diff(row_ptr))
    nw = len(label_ids)
    expected = np.concatenate([ref_grad[attrs * S + label_ids], ref_grad[A * S:]])
    np.testing.assert_allclose(grad, expected, rtol=1e-10, atol=1e-10 * np.abs(expected).max())
    if S > 1:  # with one label every W gradient is 0: p = [y = 0] = 1
        assert np.count_nonzero(grad[:nw]) > 0.9 * nw

    node, log_z = _core.marginals_corpus(corpus, layout, theta, 1)
    ref_node, ref_log_z = _core.marginals_corpus(corpus, dense, dense_theta, 1)
    np.testing.assert_allclose(node, ref_node, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(log_z, ref_log_z, rtol=1e-12)

    for n_threads in (2, 4):
        other_loss, other_grad = _core.likelihood(corpus, layout, theta, n_threads)
        assert other_loss == loss
        assert other_grad.tobytes() == grad.tobytes()


@pytest.mark.parametrize("S", [2, 3, 5, 12])
def test_a_sentence_scores_the_same_bits_alone_and_in_a_corpus(S):
    # Up to 12 labels an observed layout is scored from a copy of every
    # attribute's row, but only for a corpus with at least as many attribute
    # occurrences as attributes (a sentence tagged alone would pay for the
    # whole copy); smaller ones are scored entry by entry, in the same
    # order. So a sentence's marginals must not depend on its company.
    rng = np.random.default_rng(100 + S)
    A = 400
    data = random_corpus(rng, 80, 12, A, S, max_attrs=40)
    layout = _core.Layout(*every_width_layout(rng, A, S), S)
    theta = rng.normal(0.0, 0.5, size=layout.n_parameters)
    indptr, indices, values, offsets = (data[k] for k in ("indptr", "indices", "values",
                                                          "offsets"))
    assert len(indices) >= A  # the whole corpus takes the row copy
    node, log_z = _core.marginals_corpus(
        _core.Corpus(indptr, indices, values, offsets, A, data["labels"]), layout, theta, 1)
    for s in range(0, 80, 7):
        tb, te = offsets[s], offsets[s + 1]
        kb, ke = indptr[tb], indptr[te]
        assert ke - kb < A  # alone, it is scored entry by entry
        alone = _core.Corpus(indptr[tb:te + 1] - kb, indices[kb:ke], values[kb:ke],
                             np.array([0, te - tb]), A, data["labels"][tb:te])
        node_alone, log_z_alone = _core.marginals_corpus(alone, layout, theta, 1)
        assert node_alone.tobytes() == node[tb:te].tobytes()
        assert log_z_alone[0] == log_z[s]


@pytest.mark.parametrize("S", [3, 11, 14])
@pytest.mark.parametrize("constant", [1.0, 0.7])
def test_constant_values_give_the_bits_of_the_materialised_array(constant, S):
    # A stride-0 values array (binary features) is stored as one number and
    # read as such by the scoring and the back-projection; every layer path
    # (rows of 0..S labels; S = 3 and 11 are scored from the copy of every
    # row, 14 by kind of row; S = 3 back-projects one vector per
    # occurrence), several chunks and threads must give the bits of the
    # same values stored entry by entry.
    rng = np.random.default_rng(7)
    A = 300
    data = random_corpus(rng, 60, 12, A, S, max_attrs=40)
    layout = _core.Layout(*every_width_layout(rng, A, S), S)
    theta = rng.normal(0.0, 0.3, size=layout.n_parameters)
    nnz = len(data["indices"])
    corpora = [
        _core.Corpus(data["indptr"], data["indices"], values, data["offsets"], A,
                     data["labels"], chunk_tokens=64)
        for values in (np.full(nnz, constant), np.broadcast_to(np.float64(constant), (nnz,)))]
    assert corpora[0].n_chunks >= 5
    for n_threads in (1, 3):
        got = [(_core.likelihood(c, layout, theta, n_threads),
                _core.entropy_objective(c, layout, theta, n_threads),
                _core.marginals_corpus(c, layout, theta, n_threads),
                _core.viterbi_corpus(c, layout, theta, n_threads)) for c in corpora]
        for want, have in zip(got[0], got[1]):
            for a, b in zip(want, have):
                assert np.asarray(a).tobytes() == np.asarray(b).tobytes()
    # and the value is used: scaling every value changes the loss
    ones = _core.Corpus(data["indptr"], data["indices"], np.broadcast_to(np.float64(1.0), (nnz,)),
                        data["offsets"], A, data["labels"], chunk_tokens=64)
    loss_ones = _core.likelihood(ones, layout, theta, 1)[0]
    assert (loss_ones != _core.likelihood(corpora[1], layout, theta, 1)[0]) == (constant != 1.0)
