"""The optimiser's compiled vector passes (sscrf._core) against numpy, and the
vector-free two-loop recursion against the textbook one.

Vectors span several reduction blocks (8192 entries) and end in a partial
block, so that block sums, their order and the tails are exercised; every
result must have the same bits for any thread count.
"""

import math

import numpy as np
import pytest

from sscrf import _core
from sscrf.optim import _Run

N = 3 * 8192 + 1237
THREADS = (1, 2, 3, 8)


@pytest.fixture
def vectors():
    rng = np.random.default_rng(7)
    return [rng.standard_normal(N) * 10.0 ** rng.integers(-3, 4) for _ in range(5)]


def test_dot_products_match_numpy_and_do_not_depend_on_threads(vectors):
    pairs = np.array([[0, 1], [2, 2], [4, 3], [1, 0], [3, 3]])
    results = [_core.dot_products(vectors, pairs, t) for t in THREADS]
    want = [math.fsum(vectors[i] * vectors[j]) for i, j in pairs]
    np.testing.assert_allclose(results[0], want, rtol=1e-12)
    for r in results[1:]:
        assert r.tobytes() == results[0].tobytes()
    assert results[0][0] == results[0][3]          # the same sum in the same order
    assert _core.dot_products([], np.zeros((0, 2), dtype=np.int64), 1).shape == (0,)
    short = [v[:5] for v in vectors[:2]]            # under one stripe: the tail only
    assert _core.dot_products(short, [[0, 1]], 2)[0] == pytest.approx(short[0] @ short[1],
                                                                      rel=1e-14)


def test_float32_history_vectors_are_read_in_double(vectors):
    single = [v.astype(np.float32) for v in vectors[:2]]
    mixed = [single[0], vectors[2], single[1]]
    got = _core.dot_products(mixed, [[0, 1], [0, 2], [2, 2], [1, 1]], 2)
    wide = [m.astype(np.float64) for m in mixed]
    want = [math.fsum(wide[i] * wide[j]) for i, j in [[0, 1], [0, 2], [2, 2], [1, 1]]]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    out = np.empty(N)
    c = np.array([2.0, -0.5, 0.25])
    _core.linear_combination(out, c, mixed, vectors[3], False, 3)
    np.testing.assert_allclose(out, c[0] * wide[0] + c[1] * wide[1] + c[2] * wide[2],
                               rtol=1e-13, atol=1e-13 * np.abs(out).max())


def dots_checked_at_every_thread_count(vectors, pairs):
    """dot_products at every thread count in THREADS: against math.fsum of the
    vectors read in double, and the same bits for every count. Returns them."""
    wide = [v.astype(np.float64) for v in vectors]
    want = [math.fsum(wide[i] * wide[j]) for i, j in pairs]
    results = [_core.dot_products(vectors, pairs, t) for t in THREADS]
    np.testing.assert_allclose(results[0], want, rtol=1e-12)
    for r in results[1:]:
        assert r.tobytes() == results[0].tobytes()
    return results


def test_dot_products_of_many_pairs_mixing_float_and_double(vectors):
    # Vectors that are the first of a pair stay resident while the others
    # stream past them, four residents at a time: six firsts against one
    # second, float residents and float streamed vectors, pairs of two
    # residents, and each pair also reversed (the same bits either way).
    mixed = [vectors[0], vectors[1].astype(np.float32), vectors[2], vectors[3].astype(np.float32),
             vectors[4], (vectors[0] - vectors[4]).astype(np.float32), vectors[1] * 0.5]
    forward = [(i, 6) for i in range(6)] + [(1, 3), (0, 2), (1, 1), (5, 3), (2, 4), (3, 5)]
    pairs = np.array(forward + [(j, i) for i, j in forward])
    results = dots_checked_at_every_thread_count(mixed, pairs)
    half = len(forward)
    assert results[0][:half].tobytes() == results[0][half:].tobytes()


@pytest.mark.parametrize("seed", range(4))
def test_a_pair_has_the_same_bits_in_any_company(vectors, seed):
    # Up to four streamed vectors are read side by side against the union of
    # their residents: a pair's sum must not depend on the vectors it is
    # read with, on padding (products not asked for), or on a pair asked
    # for twice. The optimiser's own pattern (the new pair, the gradient and
    # the iterate against a float history) comes first.
    rng = np.random.default_rng(seed)
    k = 5
    history = [(vectors[i % 5] * rng.standard_normal()).astype(np.float32)
               for i in range(2 * k + 2)]
    mixed = history + [vectors[1], vectors[2]] + [rng.standard_normal(N) for _ in range(3)]
    i_s, i_y, i_v = 2 * k, 2 * k + 1, 2 * k + 2
    pairs = [(i_s, j) for j in range(k, 2 * k)] + [(i_y, j) for j in range(2 * k)]
    pairs += [(i_s, i_y), (i_y, i_y)] + [(i_v, j) for j in range(i_v + 1)] + [(i_v + 1, i_v + 1)]
    m = len(mixed)
    pairs += [tuple(rng.integers(0, m, 2)) for _ in range(25)]
    pairs += [pairs[3], pairs[-1]]                  # asked for twice
    pairs = np.array(pairs)
    wide = [v.astype(np.float64) for v in mixed]
    want = [math.fsum(wide[i] * wide[j]) for i, j in pairs]
    results = [_core.dot_products(mixed, pairs, t) for t in (1, 3)]
    np.testing.assert_allclose(results[0], want, rtol=1e-11)
    assert results[1].tobytes() == results[0].tobytes()
    alone = np.array([_core.dot_products(mixed, [pair], 1)[0] for pair in pairs])
    assert alone.tobytes() == results[0].tobytes()
    reversed_pairs = _core.dot_products(mixed, pairs[:, ::-1].copy(), 2)
    assert reversed_pairs.tobytes() == results[0].tobytes()


def test_linear_combination_of_a_float_history(vectors):
    # The direction's shape: twelve float vectors and a double one, read
    # side by side; terms added in the order given.
    rng = np.random.default_rng(3)
    history = [(vectors[i % 5] * rng.standard_normal()).astype(np.float32) for i in range(12)]
    parts = history + [vectors[4]]
    c = rng.standard_normal(len(parts))
    want = np.zeros(N)
    for cj, v in zip(c, parts):
        want += cj * v.astype(np.float64)
    outs = []
    for t in (1, 2):
        out = np.full(N, np.nan)
        dot = _core.linear_combination(out, c, parts, vectors[3], False, t)
        outs.append(out.tobytes())
    np.testing.assert_allclose(out, want, rtol=1e-10, atol=1e-12 * np.abs(want).max())
    assert dot == pytest.approx(math.fsum(out * vectors[3]), rel=1e-12)
    assert outs[0] == outs[1]


@pytest.mark.parametrize("confine", [False, True])
def test_linear_combination_matches_numpy(vectors, confine):
    c = np.array([0.5, -1.25, 2.0])
    reference = vectors[3]
    want = c[0] * vectors[0] + c[1] * vectors[1] + c[2] * vectors[2]
    if confine:
        want[want * reference >= 0.0] = 0.0
        assert np.count_nonzero(want) not in (0, N)
    outs, dots = [], []
    for t in THREADS:
        out = np.full(N, np.nan)
        dots.append(_core.linear_combination(out, c, vectors[:3], reference, confine, t))
        outs.append(out)
    np.testing.assert_allclose(outs[0], want, rtol=1e-13, atol=1e-12 * np.abs(want).max())
    assert dots[0] == pytest.approx(math.fsum(outs[0] * reference), rel=1e-12)
    for out, d in zip(outs[1:], dots[1:]):
        assert out.tobytes() == outs[0].tobytes() and d == dots[0]


def test_linear_combination_may_write_over_an_input_and_the_reference(vectors):
    # OWL-QN keeps the pseudo-gradient in d and builds d from it in place.
    c = np.array([-0.5, 3.0])
    want = c[0] * vectors[0] + c[1] * vectors[1]
    want[want * vectors[0] >= 0.0] = 0.0
    want_dot = math.fsum(want * vectors[0])
    d = vectors[0].copy()
    got = _core.linear_combination(d, c, [d, vectors[1]], d, True, 2)
    np.testing.assert_allclose(d, want, rtol=1e-13, atol=1e-13 * np.abs(want).max())
    assert got == pytest.approx(want_dot, rel=1e-12)


def test_step_secant_pair_and_l2_prior(vectors):
    x, d, g, g_old = (v.copy() for v in vectors[:4])
    out = np.empty(N)
    _core.step_along(out, x, 0.75, d, 3)
    # one or two roundings (with or without a fused multiply-add)
    assert np.all(np.abs(out - (x + 0.75 * d)) <= 4.5e-16 * (np.abs(x) + np.abs(0.75 * d)))

    for dtype in (np.float64, np.float32):
        x_old, trial = x.copy(), out.copy()
        x_in, step, y = x.copy(), np.empty(N, dtype), np.empty(N, dtype)
        _core.secant_pair(x_in, trial, g, g_old, step, y, 2)
        assert np.array_equal(x_in, x_old) and np.array_equal(trial, out)  # inputs intact
        assert np.array_equal(step, (trial - x_old).astype(dtype))
        assert np.array_equal(y, (g - g_old).astype(dtype))
    with pytest.raises(ValueError, match="same dtype"):
        _core.secant_pair(x, out, g, g_old, step, np.empty(N), 1)

    grads = []
    for t in THREADS:
        grad = vectors[4].copy()
        norm2 = _core.add_l2_prior(vectors[0], grad, 0.35, t)
        grads.append((grad.tobytes(), norm2))
    assert norm2 == pytest.approx(math.fsum(vectors[0] ** 2), rel=1e-12)
    np.testing.assert_allclose(grad, vectors[4] + 0.7 * vectors[0], rtol=1e-14,
                               atol=1e-14 * np.abs(grad).max())
    assert all(item == grads[0] for item in grads)


def test_work_units_of_several_blocks_keep_each_blocks_sums():
    # 131 blocks: a thread's work unit then spans 8, 4, 2 and 1 blocks at 1,
    # 2, 3 and 8 threads (and the last unit is short, its last block
    # partial). Each block's sums must not depend on its unit: every thread
    # count gives the same bits. The fused secant pass (units of one block)
    # must agree with the products alone, at every thread count.
    n = 130 * 8192 + 1237
    rng = np.random.default_rng(11)
    wide = [rng.standard_normal(n) for _ in range(4)]
    mixed = [wide[0], wide[1].astype(np.float32), wide[2], (wide[0] - wide[2]).astype(np.float32)]
    pairs = np.array([(0, 1), (0, 3), (2, 1), (2, 3), (0, 0), (1, 1), (3, 2), (2, 2)])
    dots_checked_at_every_thread_count(mixed, pairs)
    fused = []
    for t in THREADS:
        s, y = np.full(n, np.nan, np.float32), np.full(n, np.nan, np.float32)
        fused.append(_core.secant_pair(wide[0], wide[1], wide[2], wide[3], s, y, t,
                                       vectors=[s, y, wide[2], mixed[3]], pairs=pairs))
        assert s.tobytes() == (wide[1] - wide[0]).astype(np.float32).tobytes()
    steps = [(wide[1] - wide[0]).astype(np.float32), (wide[2] - wide[3]).astype(np.float32),
             wide[2], mixed[3]]
    np.testing.assert_allclose(fused[0], _core.dot_products(steps, pairs, 1), rtol=0, atol=0)
    for r in fused[1:]:
        assert r.tobytes() == fused[0].tobytes()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_secant_pair_with_dot_products_gives_the_bits_of_two_passes(vectors, dtype):
    # The fused pass reads step and y as written (each block right after it
    # is written): the same dots, to the bit, as secant_pair then dot_products.
    rng = np.random.default_rng(3)
    x0, trial, g, g_old, other = vectors
    history = [rng.standard_normal(N).astype(dtype) for _ in range(3)]
    pairs = np.array([[0, 3], [1, 3], [2, 4], [3, 4], [4, 4], [5, 5], [3, 3], [6, 0],
                      [2, 6]])
    for t in THREADS:
        s1, y1 = np.empty(N, dtype), np.empty(N, dtype)
        _core.secant_pair(x0, trial, g, g_old, s1, y1, t)
        want = _core.dot_products(history + [s1, y1, trial, g], pairs, t)
        s2, y2 = np.full(N, np.nan, dtype), np.full(N, np.nan, dtype)
        dots = _core.secant_pair(x0, trial, g, g_old, s2, y2, t,
                                 vectors=history + [s2, y2, trial, g], pairs=pairs)
        assert dots.tobytes() == want.tobytes(), t
        assert s2.tobytes() == s1.tobytes()
        assert y2.tobytes() == y1.tobytes()
    assert _core.secant_pair(x0.copy(), trial, g, g_old, s1, y1, 1) is None
    with pytest.raises(ValueError, match="go together"):
        _core.secant_pair(x0.copy(), trial, g, g_old, s1, y1, 1, vectors=[g])
    with pytest.raises(ValueError, match="out of range"):
        _core.secant_pair(x0.copy(), trial, g, g_old, s1, y1, 1, vectors=[g],
                          pairs=np.array([[0, 1]]))
    with pytest.raises(ValueError, match="entries"):
        _core.secant_pair(x0.copy(), trial, g, g_old, s1, y1, 1, vectors=[g[:-1]],
                          pairs=np.array([[0, 0]]))


def test_no_pairs(vectors):
    # No dot products asked for: an empty answer, and secant_pair's pass still
    # runs (its per-block sums have no entries to point into; the CI's
    # UBSan build refuses a reference into an empty vector)
    x0, trial, g, g_old, _ = vectors
    none = np.zeros((0, 2), np.int64)
    for t in THREADS:
        assert _core.dot_products(vectors, none, t).shape == (0,)
        step, y = np.full(N, np.nan), np.full(N, np.nan)
        dots = _core.secant_pair(x0, trial, g, g_old, step, y, t, vectors=[g], pairs=none)
        assert dots.shape == (0,)
        np.testing.assert_array_equal(step, trial - x0)
        np.testing.assert_array_equal(y, g - g_old)


def test_bad_vectors_are_refused(vectors):
    x = vectors[0]
    with pytest.raises(ValueError, match="C-contiguous float64"):
        _core.step_along(np.empty(N), x[::2], 1.0, x, 1)
    with pytest.raises(ValueError, match="C-contiguous float64"):
        _core.dot_products([x, x.astype(np.float16)], [[0, 1]], 1)
    with pytest.raises(ValueError, match="C-contiguous float64"):
        _core.step_along(np.empty(N), x.astype(np.float32), 1.0, x, 1)
    with pytest.raises(ValueError, match="entries"):
        _core.dot_products([x, x[:-1]], [[0, 1]], 1)
    with pytest.raises(ValueError, match="out of range"):
        _core.dot_products([x, x], [[0, 2]], 1)
    with pytest.raises(ValueError, match="one entry per vector"):
        _core.linear_combination(np.empty(N), [1.0], [x, x], x, False, 1)
    with pytest.raises(ValueError, match="NaN"):
        _core.linear_combination(np.empty(N), [math.nan], [x], x, False, 1)
    frozen = np.empty(N)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="writable"):
        _core.add_l2_prior(x, frozen, 1.0, 1)
    with pytest.raises(ValueError, match="n_threads"):
        _core.add_l2_prior(x, np.empty(N), 1.0, 0)
    with pytest.raises(ValueError, match="numpy array"):
        _core.step_along(list(x), x, 1.0, x, 1)


# -- the vector-free two-loop recursion ---------------------------------------------

def textbook_direction(S, Y, v, gamma):
    """Nocedal & Wright, Alg. 7.4, pairs oldest first: returns −H·v."""
    q = v.copy()
    rho = [1.0 / (s @ y) for s, y in zip(S, Y)]
    alphas = []
    for s, y, r in reversed(list(zip(S, Y, rho))):
        a = r * (s @ q)
        q -= a * y
        alphas.append(a)
    q *= gamma
    for (s, y, r), a in zip(zip(S, Y, rho), reversed(alphas)):
        q += s * (a - r * (y @ q))
    return -q


@pytest.mark.parametrize("history", [np.float32, np.float64])
@pytest.mark.parametrize("k", [0, 1, 3, 5])
@pytest.mark.parametrize("l1", [False, True])
def test_gram_two_loop_is_the_textbook_two_loop(k, l1, history):
    rng = np.random.default_rng(k)
    n, memory = 20_000, 5
    run = _Run(lambda x: (0.0, x), rng.standard_normal(n), 0.1 if l1 else 0.0, memory,
               100, 20, 2, history)
    # Pairs with positive curvature in rows filled in a shuffled order, as
    # the ring buffer leaves them.
    rows = list(rng.permutation(memory)[:k])
    for r in rows:
        s = rng.standard_normal(n)
        run.S[r] = s
        run.Y[r] = s * rng.uniform(0.5, 4.0, n) + 0.1 * rng.standard_normal(n)
    g = rng.standard_normal(n)
    # measure() fills the Gram matrix one new pair at a time, as accept() does.
    run.measure(g, None)
    for r in rows:
        run.measure(g, r)
        run.rho[r] = 1.0 / (run.S[r].astype(np.float64) @ run.Y[r].astype(np.float64))
        run.order.append(r)
    if k:
        s_new, y_new = run.S[rows[-1]].astype(np.float64), run.Y[rows[-1]].astype(np.float64)
        run.gamma = (s_new @ y_new) / (y_new @ y_new)
    basis = [run.S[r].astype(np.float64) for r in rows] + \
        [run.Y[r].astype(np.float64) for r in rows] + [run.v]
    index = rows + [memory + r for r in rows] + [2 * memory]
    want_gram = np.array([[a @ b for b in basis] for a in basis])
    want_gram[:k, :k] = 0.0                           # s_i·s_j: never needed, never computed
    np.testing.assert_allclose(run.gram[np.ix_(index, index)], want_gram, rtol=1e-11,
                               atol=1e-12 * np.abs(want_gram).max())
    assert run.x_norm2 == pytest.approx(run.x @ run.x, rel=1e-12)

    v = run.v.copy()                                  # for OWL-QN the pseudo-gradient
    if l1:
        assert run.v is run.d and not np.array_equal(v, g)
    gd = run.direction()
    want = textbook_direction(basis[:k], basis[k:2 * k], v, run.gamma)
    if l1:
        want[want * v >= 0.0] = 0.0
    np.testing.assert_allclose(run.d, want, rtol=1e-9, atol=1e-10 * np.abs(want).max())
    assert gd == pytest.approx(v @ want, rel=1e-9)
