"""L-BFGS and OWL-QN (sscrf.optim) against independent solvers and the KKT conditions.

References are computed here, never by the code under test: np.linalg.solve for
quadratics, Newton's method for logistic regression, coordinate descent with
soft-thresholding for the lasso and the elastic net, scipy's L-BFGS-B.
"""

import math
import tracemalloc

import numpy as np
import pytest
import scipy.optimize

import sscrf.optim
from sscrf.errors import SscrfError
from sscrf.optim import NonFiniteObjective, OptimizeResult, lbfgs

TIGHT = dict(epsilon=1e-11, delta=0.0, max_iterations=2000)


class Recorder:
    """Wraps ``fun``; keeps a copy of every point evaluated and ``F = f + c1·‖x‖₁`` there.

    Called as ``rec(x, out)`` (``lbfgs(..., gradient_out=True)``), it writes
    the gradient into ``out`` and returns it."""

    def __init__(self, fun, c1=0.0, fail_at=None, fail_with=None):
        self.fun, self.c1 = fun, c1
        self.fail_at, self.fail_with = fail_at, fail_with
        self.points, self.values = [], []

    def __call__(self, x, out=None):
        if self.fail_at is not None and len(self.points) + 1 == self.fail_at:
            self.points.append(x.copy())
            self.values.append(math.nan)
            f, g = self.fail_with(x)
        else:
            f, g = self.fun(x)
            self.points.append(x.copy())
            self.values.append(f + self.c1 * np.abs(x).sum())
        if out is None:
            return f, g
        out[...] = g
        return f, out

    def assert_best(self, result):
        """``result`` is the lowest point evaluated, bit for bit."""
        values = np.array(self.values, dtype=float)
        finite = np.where(np.isfinite(values), values, np.inf)
        assert result.fun == finite.min()
        lowest = [p for p, v in zip(self.points, finite) if v == finite.min()]
        assert any(np.array_equal(result.x, p) for p in lowest)


# -- problems ----------------------------------------------------------------------------

def quadratic(seed, n=30):
    rng = np.random.default_rng(seed)
    m = rng.standard_normal((n, n))
    a = m @ m.T + 0.5 * np.eye(n)
    b = rng.standard_normal(n) * 3

    def fun(x):
        ax = a @ x
        return 0.5 * x @ ax - b @ x, ax - b

    return fun, a, b


def regression_data(seed, n=50, p=20):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, p))
    w = rng.standard_normal(p) * 2
    w[rng.permutation(p)[:8]] = 0.0              # some true zeros
    y = x @ w + 0.5 * rng.standard_normal(n)
    return x, y


def least_squares(x, y, c2=0.0):
    """``0.5/n·‖Xw − y‖² + c2·‖w‖²`` and its gradient."""
    n = len(y)

    def fun(w):
        r = x @ w - y
        return 0.5 * (r @ r) / n + c2 * (w @ w), x.T @ r / n + 2 * c2 * w

    return fun


def rosenbrock(v):
    return scipy.optimize.rosen(v), scipy.optimize.rosen_der(v)


def logistic_data(seed, n=200, p=15):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, p))
    w = rng.standard_normal(p)
    labels = (rng.random(n) < 1 / (1 + np.exp(-x @ w))).astype(float)
    return x, labels


def logistic(x, labels, c2):
    """Mean logistic loss ``log(1 + e^z) − t·z`` plus ``c2·‖w‖²``."""
    n = len(labels)

    def fun(w):
        z = x @ w
        loss = np.logaddexp(0.0, z) - labels * z
        p = np.exp(-np.logaddexp(0.0, -z))
        return loss.sum() / n + c2 * (w @ w), x.T @ (p - labels) / n + 2 * c2 * w

    return fun


def newton_logistic(x, labels, c2):
    n, p = x.shape
    w = np.zeros(p)
    for _ in range(100):
        z = x @ w
        prob = np.exp(-np.logaddexp(0.0, -z))
        g = x.T @ (prob - labels) / n + 2 * c2 * w
        h = (x.T * (prob * (1 - prob))) @ x / n + 2 * c2 * np.eye(p)
        w = w - np.linalg.solve(h, g)
        if np.abs(g).max() < 1e-14:
            break
    return w


def coordinate_descent(x, y, c1, c2=0.0, tol=1e-12):
    """Minimise ``0.5/n·‖Xw − y‖² + c2·‖w‖² + c1·‖w‖₁`` by cyclic coordinate
    descent: ``w_j ← S(ρ_j, c1) / (‖x_j‖²/n + 2·c2)``, ``ρ_j = x_jᵀ(y − Xw + x_j w_j)/n``,
    ``S`` the soft-threshold, until no coordinate moves by 1e-12."""
    n, p = x.shape
    w = np.zeros(p)
    r = y.copy()                                  # r = y − Xw
    squares = (x * x).sum(axis=0) / n
    for _ in range(200000):
        largest = 0.0
        for j in range(p):
            rho = x[:, j] @ r / n + squares[j] * w[j]
            new = np.sign(rho) * max(abs(rho) - c1, 0.0) / (squares[j] + 2 * c2)
            change = new - w[j]
            if change != 0.0:
                r -= x[:, j] * change
                w[j] = new
                largest = max(largest, abs(change))
        if largest < tol:
            return w
    raise AssertionError("coordinate descent did not converge")


def kkt_violation(grad, w, c1):
    """Largest violation of 0 ∈ ∇f + c1·∂‖w‖₁."""
    nonzero = w != 0.0
    on = np.abs(grad[nonzero] + c1 * np.sign(w[nonzero]))
    off = np.maximum(np.abs(grad[~nonzero]) - c1, 0.0)
    return max(on.max(initial=0.0), off.max(initial=0.0))


# -- smooth problems (c1 = 0) ------------------------------------------------------------

@pytest.mark.parametrize("memory", [1, 3, 6, 20])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_quadratic_reaches_the_solution(seed, memory):
    fun, a, b = quadratic(seed)
    rec = Recorder(fun)
    result = lbfgs(rec, np.zeros(len(b)), memory=memory, **TIGHT)
    np.testing.assert_allclose(result.x, np.linalg.solve(a, b), rtol=0, atol=1e-6)
    # With epsilon = 1e-11 the line search usually runs into f's rounding first.
    assert (result.stop_reason == "gradient norm below epsilon"
            or result.stop_reason.startswith("line search failed: "))
    assert result.n_evaluations == len(rec.points)
    rec.assert_best(result)
    assert all(later <= earlier for earlier, later in zip(result.history, result.history[1:]))
    assert result.stalled is None               # a failure at f's rounding is not a stall


def test_logistic_regression_matches_newton():
    x, labels = logistic_data(3)
    fun = logistic(x, labels, c2=1e-3)
    rec = Recorder(fun)
    result = lbfgs(rec, np.zeros(x.shape[1]), **TIGHT)
    np.testing.assert_allclose(result.x, newton_logistic(x, labels, 1e-3), rtol=0, atol=1e-6)
    rec.assert_best(result)


def test_same_minimiser_as_scipy_lbfgsb():
    x, labels = logistic_data(4)
    fun = logistic(x, labels, c2=1e-2)
    reference = scipy.optimize.minimize(fun, np.zeros(x.shape[1]), jac=True, method="L-BFGS-B",
                                        options=dict(gtol=1e-12, ftol=0.0, maxiter=1000))
    result = lbfgs(fun, np.zeros(x.shape[1]), **TIGHT)
    np.testing.assert_allclose(result.x, reference.x, rtol=0, atol=1e-6)


def test_rosenbrock_from_the_standard_start():
    rec = Recorder(rosenbrock)
    result = lbfgs(rec, np.array([-1.2, 1.0]), **TIGHT)
    np.testing.assert_allclose(result.x, [1.0, 1.0], rtol=0, atol=1e-6)
    rec.assert_best(result)
    assert all(later <= earlier for earlier, later in zip(result.history, result.history[1:]))


# -- L1: lasso and elastic net by OWL-QN --------------------------------------------------

@pytest.mark.parametrize("c2", [0.0, 0.05], ids=["lasso", "elastic-net"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_owlqn_matches_coordinate_descent_and_kkt(seed, c2):
    x, y = regression_data(seed)
    n = len(y)
    c1 = 0.15 * np.abs(x.T @ y).max() / n
    fun = least_squares(x, y, c2)
    reference = coordinate_descent(x, y, c1, c2)
    rec = Recorder(fun, c1)
    result = lbfgs(rec, np.zeros(x.shape[1]), c1=c1, **TIGHT)
    w = result.x

    assert kkt_violation(fun(w)[1], w, c1) < 1e-6
    np.testing.assert_allclose(w, reference, rtol=0, atol=1e-6)
    # Coordinates strictly inside the KKT interval must be exactly zero.
    grad_reference = fun(reference)[1]
    interior = (reference == 0.0) & (np.abs(grad_reference) < 0.999 * c1)
    assert interior.sum() >= 3
    assert np.all(w[interior] == 0.0)
    assert np.all(w[reference != 0.0] != 0.0)
    # Monotone decrease of the full objective, starting from F(x0).
    values = [rec.values[0]] + result.history
    assert all(later <= earlier for earlier, later in zip(values, values[1:]))
    assert result.fun == pytest.approx(fun(w)[0] + c1 * np.abs(w).sum(), rel=1e-15)
    rec.assert_best(result)
    assert result.stalled is None


def test_owlqn_with_large_c1_gives_all_zeros():
    x, y = regression_data(5)
    c1 = 1.01 * np.abs(x.T @ y).max() / len(y)   # above the largest |∂f/∂w_j| at 0
    result = lbfgs(least_squares(x, y), np.zeros(x.shape[1]), c1=c1, **TIGHT)
    assert np.all(result.x == 0.0)
    assert result.n_iterations == 0 and result.stop_reason == "gradient norm below epsilon"


def test_owlqn_keeps_a_rejected_trial_that_is_lowest():
    # F(x) = h(x) for x >= 0, h(x) = −x + a·x² + b·x³ with h(1) = −0.8e-4 and
    # h(0.5) = −0.6e-4. From 0 the pseudo-gradient is −1 and the first step is 1:
    # x = 1 fails sufficient decrease (needs F <= −1e-4), x = 0.5 passes
    # (needs <= −0.5e-4), yet x = 1 is the lower point.
    a, b, c1 = 3 - 4e-4, -2 + 3.2e-4, 0.01

    def fun(v):
        t = v[0]
        return -t + a * t * t + b * t ** 3 - c1 * t, np.array([-1 + 2 * a * t + 3 * b * t * t - c1])

    rec = Recorder(fun, c1)
    result = lbfgs(rec, np.zeros(1), c1=c1, callback=lambda k, loss, v: True)
    assert [p[0] for p in rec.points] == [0.0, 1.0, 0.5]
    assert result.history == [rec.values[2]]
    assert result.x[0] == 1.0 and result.fun == rec.values[1]
    assert result.stop_reason == "stopped by callback"


# -- stopping rules -------------------------------------------------------------------

def test_max_iterations_and_evaluation_count():
    fun, a, b = quadratic(0)
    rec = Recorder(fun)
    result = lbfgs(rec, np.zeros(len(b)), max_iterations=3, epsilon=0.0, delta=0.0)
    assert result.n_iterations == 3 and len(result.history) == 3
    assert result.stop_reason == "reached max_iterations"
    assert result.n_evaluations == len(rec.points)

    rec = Recorder(fun)
    x0 = np.ones(len(b))
    result = lbfgs(rec, x0, max_iterations=0)
    assert result.n_iterations == 0 and result.n_evaluations == 1
    assert np.array_equal(result.x, x0) and result.x is not x0


def test_callback_stops_and_sees_the_iterate():
    fun, a, b = quadratic(1)
    seen = []

    def callback(k, loss, x):
        seen.append((k, loss, fun(x)[0]))
        return k == 4

    result = lbfgs(fun, np.zeros(len(b)), callback=callback, epsilon=0.0, delta=0.0)
    assert result.stop_reason == "stopped by callback" and result.n_iterations == 4
    assert [k for k, _, _ in seen] == [1, 2, 3, 4]
    assert all(loss == value for _, loss, value in seen)


def test_relative_improvement_rule():
    fun, a, b = quadratic(2, n=60)
    period, delta = 3, 1e-2
    result = lbfgs(lambda x: (fun(x)[0] + 100.0, fun(x)[1]), np.zeros(len(b)),
                   period=period, delta=delta, epsilon=0.0)
    h = result.history
    assert result.stop_reason == f"improvement over {period} iterations below delta"

    def rule(k):  # 1-based iteration k, as CRFsuite
        return k > period and (h[k - 1 - period] - h[k - 1]) / abs(h[k - 1]) < delta

    assert rule(len(h)) and not any(rule(k) for k in range(1, len(h)))


def test_gradient_rule_at_the_start():
    fun, a, b = quadratic(0)
    result = lbfgs(fun, np.linalg.solve(a, b), epsilon=1e-6)
    assert result.n_iterations == 0 and result.stop_reason == "gradient norm below epsilon"


def test_x0_is_not_modified():
    fun, a, b = quadratic(0)
    x0 = np.zeros(len(b))
    lbfgs(fun, x0, c1=0.1)
    assert np.all(x0 == 0.0)


# -- failures and interruption --------------------------------------------------------

def nan_value(x):
    return math.nan, np.zeros_like(x)


def inf_gradient(x):
    g = np.zeros_like(x)
    g[-1] = math.inf
    return 1.0, g


@pytest.mark.parametrize("gradient_out", [False, True])
@pytest.mark.parametrize("c1", [0.0, 0.3])
@pytest.mark.parametrize("bad", [nan_value, inf_gradient])
@pytest.mark.parametrize("fail_at", [1, 2, 3, 5, 9, 14])
def test_non_finite_raises_with_the_best_point(fail_at, bad, c1, gradient_out):
    x, y = regression_data(0)
    rec = Recorder(least_squares(x, y), c1, fail_at=fail_at, fail_with=bad)
    x0 = np.full(x.shape[1], 0.5)
    with pytest.raises(NonFiniteObjective, match="non-finite") as info:
        lbfgs(rec, x0, c1=c1, epsilon=0.0, delta=0.0, gradient_out=gradient_out)
    assert isinstance(info.value, SscrfError)
    result = info.value.result
    assert isinstance(result, OptimizeResult) and result.stop_reason == "non-finite objective"
    assert result.n_evaluations == fail_at
    if fail_at == 1:
        assert np.array_equal(result.x, x0) and result.fun == math.inf
    else:
        rec.assert_best(result)


@pytest.mark.parametrize("gradient_out", [False, True])
@pytest.mark.parametrize("c1", [0.0, 0.3])
@pytest.mark.parametrize("problem", ["regression", "rosenbrock", "far"])
def test_keyboard_interrupt_carries_the_best_point(problem, c1, gradient_out):
    # Rosenbrock's line searches, and the first one on "far" (a unit first
    # step towards a minimum 60 away), take several evaluations, so the
    # interrupt also lands mid-search, when the lowest point may be a trial.
    def interrupt(x):
        raise KeyboardInterrupt

    if problem == "regression":
        x, y = regression_data(1)
        fun, x0 = least_squares(x, y), np.full(x.shape[1], 0.5)
    elif problem == "rosenbrock":
        fun, x0 = rosenbrock, np.array([-1.2, 1.0, -1.2, 1.0])
    else:
        fun, x0 = (lambda v: (0.025 * ((v - 30) ** 2).sum(), 0.05 * (v - 30))), np.zeros(4)
    for fail_at in range(1, 30):
        rec = Recorder(fun, c1, fail_at=fail_at, fail_with=interrupt)
        try:
            finished = lbfgs(rec, x0, c1=c1, epsilon=0.0, delta=0.0, max_iterations=1000,
                             gradient_out=gradient_out)
        except KeyboardInterrupt as exc:
            result = exc.result
        else:  # converged before evaluation fail_at
            assert finished.n_evaluations < fail_at and fail_at > 5
            break
        assert result.stop_reason == "interrupted"
        assert result.n_evaluations == fail_at - 1
        if fail_at > 1:
            rec.assert_best(result)


@pytest.mark.parametrize("c1", [0.0, 0.02])
def test_gradient_out_takes_the_same_steps(c1):
    # fun(x, out) writing into the optimiser's two alternating buffers gives
    # the bits of fun(x) returning fresh arrays (so no buffer fun writes is
    # one the optimiser still reads); a returned array other than out is
    # copied there.
    x, y = regression_data(2)
    fun, x0 = least_squares(x, y, c2=0.01), np.full(x.shape[1], 0.5)
    want = lbfgs(Recorder(fun, c1), x0, c1=c1, epsilon=0.0, delta=0.0, max_iterations=30)
    buffers = set()

    def into_out(v, out):
        buffers.add(id(out))
        f, g = fun(v)
        out[...] = g
        return f, out

    for f in (into_out, lambda v, out: fun(v)):
        got = lbfgs(f, x0, c1=c1, epsilon=0.0, delta=0.0, max_iterations=30, gradient_out=True)
        assert got.x.tobytes() == want.x.tobytes() and got.fun == want.fun
        assert got.history == want.history and got.n_evaluations == want.n_evaluations
    assert len(buffers) == 2


def test_bad_arguments():
    fun, a, b = quadratic(0)
    for kwargs in (dict(c1=-1.0), dict(c1=math.nan), dict(memory=0), dict(max_iterations=-1),
                   dict(period=0), dict(max_linesearch=0), dict(epsilon=math.inf)):
        with pytest.raises(SscrfError):
            lbfgs(fun, np.zeros(len(b)), **kwargs)
    with pytest.raises(SscrfError, match="1-D"):
        lbfgs(fun, np.zeros((2, 2)))
    with pytest.raises(SscrfError, match="shape"):
        lbfgs(lambda v: (0.0, np.zeros(3)), np.zeros(2))


# -- scaling -----------------------------------------------------------------------------

@pytest.mark.parametrize("gradient_out", [False, True])
@pytest.mark.parametrize("l1", [0.0, 0.15], ids=["l2", "elastic-net"])
def test_x_scale_solves_a_column_of_1e6(l1, gradient_out):
    """A column 1e6 times the others defeats L-BFGS's scalar H0 (the run stalls and says
    so); with x_scale the run reaches coordinate descent's solution, which does not
    care about a column's scale, and reports x, not the scaled variables."""
    x, y = regression_data(4)
    x[:, 0] *= 1e6
    n, p = x.shape
    c1 = l1 * np.abs(x[:, 1:].T @ y).max() / n
    fun = least_squares(x, y, c2=0.01)
    reference = coordinate_descent(x, y, c1, 0.01)
    x_scale = np.ones(p)
    x_scale[0] = 2.0 ** -20
    plain = lbfgs(fun, np.zeros(p), c1=c1, **TIGHT)
    assert plain.stalled is not None and "gradient promised a decrease" in plain.stalled
    rec = Recorder(fun, c1)
    seen = []
    result = lbfgs(rec, np.zeros(p), c1=c1, x_scale=x_scale, gradient_out=gradient_out,
                   callback=lambda k, F, w: seen.append((F, w.copy())) and False, **TIGHT)
    assert result.stalled is None
    np.testing.assert_allclose(result.x / x_scale, reference / x_scale, rtol=0, atol=1e-6)
    rec.assert_best(result)
    assert seen[-1][0] == result.history[-1]
    assert any(np.array_equal(seen[-1][1], point) for point in rec.points)


def test_x_scale_of_ones_changes_nothing():
    fun, a, b = quadratic(1)
    want = lbfgs(fun, np.zeros(len(b)), max_iterations=30, delta=0.0, epsilon=0.0)
    got = lbfgs(fun, np.zeros(len(b)), max_iterations=30, delta=0.0, epsilon=0.0,
                x_scale=np.ones(len(b)))
    assert got.x.tobytes() == want.x.tobytes() and got.history == want.history


def test_a_wrong_gradient_stalls_loudly():
    fun, a, b = quadratic(2)
    result = lbfgs(lambda v: (fun(v)[0], -fun(v)[1]), np.zeros(len(b)))
    assert result.stop_reason.startswith("line search failed")
    assert "a wrong gradient" in result.stalled


def test_bad_x_scale():
    fun, a, b = quadratic(0)
    for x_scale in (np.ones(len(b) + 1), np.zeros(len(b)), -np.ones(len(b)),
                    np.full(len(b), math.nan), np.full(len(b), math.inf)):
        with pytest.raises(SscrfError, match="x_scale"):
            lbfgs(fun, np.zeros(len(b)), x_scale=x_scale)


# -- memory ---------------------------------------------------------------------------

@pytest.mark.parametrize("gradient_out", [False, True])
@pytest.mark.parametrize("history", [np.float32, np.float64])
@pytest.mark.parametrize("c1", [0.0, 1e-3])
def test_memory_is_the_history_and_5_vectors(c1, history, gradient_out, monkeypatch):
    # The optimiser holds the (m, P) s and y histories and 4 float64 vectors,
    # fun's gradient is one more (with gradient_out, the optimiser's fifth);
    # small blocks keep the block temporaries far below one vector.
    monkeypatch.setattr(sscrf.optim, "_BLOCK", 4096)
    n, memory = 100_000, 6
    rng = np.random.default_rng(0)
    diagonal = rng.uniform(1.0, 100.0, n)
    b = rng.standard_normal(n)
    x0 = np.zeros(n)

    def fun(x, out=None):  # returns one new (n,) array, or out, and keeps nothing
        g = np.multiply(diagonal, x, out=out)
        value = 0.5 * np.einsum("i,i->", x, g) - np.einsum("i,i->", b, x)  # no BLAS threads
        g -= b
        return value, g

    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        result = lbfgs(fun, x0, c1=c1, memory=memory, max_iterations=8, epsilon=0.0, delta=0.0,
                       history_dtype=history, gradient_out=gradient_out)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert result.n_iterations == 8
    vectors = peak / (8 * n)
    expected = 2 * memory * np.dtype(history).itemsize / 8 + 5
    assert expected <= vectors < expected + 0.5, vectors
