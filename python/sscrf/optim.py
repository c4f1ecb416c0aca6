"""L-BFGS and OWL-QN (L1-regularised L-BFGS) with CRFsuite's stopping rules.

``lbfgs(fun, x0, c1=...)`` minimises ``F(x) = f(x) + c1·‖x‖₁`` where
``fun(x) -> (f, ∇f)`` is the smooth part (data terms and the L2 prior).

- ``c1 = 0``: L-BFGS (Nocedal & Wright, *Numerical Optimization*, Alg. 7.4/7.5)
  with a line search meeting the strong Wolfe conditions (Alg. 3.5 bracketing,
  Alg. 3.6 zoom by safeguarded cubic interpolation), so that ``s·y > 0`` and the
  two-loop inverse Hessian stays positive definite.
- ``c1 > 0``: OWL-QN (Andrew & Gao, "Scalable training of L1-regularized
  log-linear models", ICML 2007), which scipy does not have: the two-loop
  recursion runs on the pseudo-gradient, the direction is confined to the
  orthant the pseudo-gradient points into, and a backtracking line search
  projects each trial point onto the orthant of the current point (coordinates
  that would cross zero are set to exactly 0), testing sufficient decrease of
  the full objective ``F``. CRFsuite's ``train_lbfgs.c`` uses the same
  algorithm through libLBFGS.

Memory
------
With ``m = min(memory, max_iterations)`` the optimiser holds the ``s`` and ``y``
histories, two ``(m, P)`` ring buffers of ``history_dtype`` (float32 by
default), and four float64 vectors of the parameter count ``P``: the iterate
``x``, the search direction ``d``, the line search's trial point and the
previous gradient. Add the gradient array ``fun`` returns: the optimiser drops
its reference to the previous one before it calls ``fun`` again, so one is
alive when ``fun`` keeps none (or reuses one buffer). With ``gradient_out``
that array is the optimiser's fifth vector instead, and the previous gradient
is the fifth from the evaluation before, not a copy. Total ``8m + 40`` bytes
per parameter with a float32 history — 88 B for the default ``m = 6``, 0.9 GB
for 10 million parameters — and ``16m + 40`` with float64 (scipy's L-BFGS-B:
about 27 doubles). OWL-QN's element-wise work (the pseudo-gradient, the
orthant projection) runs in numpy blocks of 32768 entries, so its temporaries
come to about 1 MiB whatever ``P``; no other array has ``P`` entries, except
one more ``(P,)`` array allocated only if a line search rejects a trial point
that is lower than the point it accepts (see "Best point").

History precision: ``s`` and ``y`` are rounded to float32 when they are
stored; every dot product and combination runs in double on the stored
values, so the inverse-Hessian approximation is an exact L-BFGS matrix of
slightly perturbed pairs (relative error 6e-8 per entry). It stays positive
definite (pairs are kept only when ``s·y > 0`` as stored), directions are
checked for descent, and iterates, gradients and line searches stay in
double: only the quasi-Newton model changes, by far less than its own
approximation error. It halves the optimiser's memory traffic and memory.

Vector work
-----------
With millions of parameters the optimiser's passes over ``P``-vectors are
memory-bound and, done as separate numpy operations (the two-loop recursion
alone is ``4m`` of them), cost more than a dense CRF's loss and gradient. The
direction is therefore computed *vector-free* (Chen, Wang & Zhou, "Large-scale
L-BFGS using MapReduce", NIPS 2014): ``H·v`` is a linear combination of the
basis ``s_1..s_m, y_1..y_m, v``, and the two-loop recursion runs on its
``(2m+1)²`` Gram matrix. Each iteration makes two compiled passes over the
history — one of dot products (the new pair and the new ``v`` against the
basis, and ``‖x‖²``), one linear combination — plus the step ``x + α·d``, one
``g·d`` per trial and the secant pair, all threaded (``n_threads``) over fixed
blocks in :mod:`sscrf._core` (``cpp/optim/vector_passes.cpp``), so their sums have
the same bits for any thread count.

Best point
----------
The result's ``x`` is the lowest-``F`` point ever evaluated, not merely the last
iterate. A trial point the line search evaluated but rejected is remembered by
its step length; it is rebuilt (bit for bit: the same arithmetic) only if it
must outlive the line search.

Scaling
-------
Two changes of variables keep a badly scaled problem trainable; both multiply
by powers of two, which is exact in binary floating point, so that a problem
that needs neither runs bit for bit as without them.

- ``x_scale`` (as in scipy's ``least_squares``): the iterations run on
  ``u = x / x_scale``. L-BFGS's ``H0 = γ·I`` is one scalar for every variable,
  so a variable whose curvature is 1e12 times the others' (the weight of a
  feature of 1e6) defeats it: the line search fails or the steps stall. The
  caller, who knows the features, gives the weights of large features a
  small scale. The stopping rules and the result stay in ``x``.
- The objective's own scale: when ``‖g‖`` at ``x0`` is above 2^100 (or its
  square overflows), ``F`` is multiplied by ``2^-e`` with ``‖g(x0)‖·2^-e``
  in ``[1/2, 1)``. L-BFGS's iterates do not change when ``F`` is multiplied
  by a constant, and the Gram matrix and the float32 history (whose entries
  overflow above 3.4e38) stay finite. Values, history and norms are
  reported unscaled.

Interruption and failure
------------------------
``KeyboardInterrupt`` is left to the caller: it is re-raised with a ``result``
attribute added, an :class:`OptimizeResult` holding the best point so far
(``stop_reason`` ``"interrupted"``)::

    try:
        res = lbfgs(fun, x0)
    except KeyboardInterrupt as exc:
        res = exc.result

A NaN or infinite value or gradient from ``fun`` raises
:class:`NonFiniteObjective` (an :class:`~sscrf.errors.SscrfError`) whose
``result`` is built the same way.

A run that stops short of a minimum without meeting a stopping rule says so
in ``result.stalled`` (None otherwise): a line search that found no lower
point although the first trial's step promised a decrease above
``sqrt(ε)·max(|F|, |F(x0)|)`` (the failures at ``F``'s rounding error near a minimum
promise 1e-16 to 1e-13 of ``F``; a problem with a feature of 1e5 promises 69
times ``F``), or iterations none of which lowered ``F`` below ``F(x0)``.

Accuracy: like libLBFGS, the line searches decide on values of ``F``, so near
a minimum they stop at ``F``'s rounding error ("line search failed: ..."), at
about ``‖x − x*‖ ~ sqrt(ε·|F|/λ_min)`` (ε = 2.2e-16); a smaller ``epsilon``
cannot go further.

Threads: the vector passes use ``n_threads`` OpenMP threads with sums over
fixed blocks (bit-identical for any thread count); the remaining numpy work
never starts BLAS threads.
"""

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np

from . import _core
from .errors import SscrfError, SscrfTypeError
from .inputs import check_integer, check_number, check_threads
from .linesearch import SUFFICIENT_DECREASE, strong_wolfe

__all__ = ["STOP_CALLBACK", "STOP_INTERRUPTED", "NonFiniteObjective", "OptimizeResult", "lbfgs"]

# stop reasons that the user chose (Ctrl-C, a callback returning True)
STOP_INTERRUPTED = "interrupted"
STOP_CALLBACK = "stopped by callback"

_BLOCK = 1 << 15       # entries per block of element-wise work (256 KiB per temporary)
_SKIP = 1e-10          # a pair (s, y) is stored only if s·y > _SKIP·y·y
_HUGE = 2.0 ** 100     # a gradient norm at x0 above this rescales F (see "Scaling")
_STALL = math.sqrt(2.0 ** -52)  # relative decrease a failed line search must not have promised
_OVERFLOW = "no descent direction: the gradient's squares overflow"


@dataclass
class OptimizeResult:
    """Outcome of :func:`lbfgs`.

    Attributes
    ----------
    x : ndarray (P,)
        The lowest-objective point evaluated.
    fun : float
        ``F(x) = f(x) + c1·‖x‖₁`` there (``inf`` if no evaluation was finite).
    n_iterations, n_evaluations : int
        Accepted steps; calls of ``fun``.
    stop_reason : str
    history : list of float
        ``F`` at the iterate after each iteration (non-increasing).
    stalled : str or None
        Why the run stopped short of a minimum without meeting a stopping
        rule (see "Interruption and failure"); None when it did not.
    """

    x: np.ndarray
    fun: float
    n_iterations: int
    n_evaluations: int
    stop_reason: str
    history: list[float] = field(default_factory=list)
    stalled: Optional[str] = None


class NonFiniteObjective(SscrfError):
    """``fun`` returned a NaN or infinite value or gradient.

    Attributes
    ----------
    result : OptimizeResult
        The best point evaluated before it (``x0`` and ``fun = inf`` if the
        very first evaluation failed), ``stop_reason = "non-finite objective"``.
    """

    def __init__(self, message: str, result: Optional[OptimizeResult] = None) -> None:
        super().__init__(message)
        self.result = result


def lbfgs(fun: Callable[..., Any], x0: Any, *, c1: float = 0.0, memory: int = 6,
          max_iterations: int = 100, epsilon: float = 1e-5, period: int = 10,
          delta: float = 1e-5, callback: Optional[Callable[..., Any]] = None,
          max_linesearch: int = 20, n_threads: int = 1, history_dtype: Any = np.float32,
          gradient_out: bool = False, x_scale: Optional[np.ndarray] = None) -> OptimizeResult:
    """Minimise ``f(x) + c1·‖x‖₁`` by L-BFGS (``c1 = 0``) or OWL-QN (``c1 > 0``).

    Parameters
    ----------
    fun : callable
        ``fun(x) -> (f, g)``: the smooth part ``f`` (float) and its gradient
        ``g``, shape ``(P,)``. ``x`` is a buffer the optimiser reuses: ``fun``
        must neither modify it nor keep a reference to it. With
        ``gradient_out=True`` it is called as ``fun(x, out)`` instead.
    x0 : array_like (P,)
        Starting point (copied; the caller's array is not modified).
    c1 : float
        L1 weight, ``>= 0``.
    memory : int
        Number of ``(s, y)`` correction pairs kept (CRFsuite's default is 6).
    max_iterations : int
        ``0`` evaluates ``x0`` only.
    epsilon : float
        Stop when ``‖g‖ / max(1, ‖x‖) < epsilon``; ``g`` is the pseudo-gradient
        when ``c1 > 0``. Also tested at ``x0``.
    period, delta : int, float
        Stop at iteration ``k > period`` when
        ``(F[k - period] - F[k]) / |F[k]| < delta`` (CRFsuite's test).
    callback : callable or None
        ``callback(iteration, F, x)`` after each iteration, ``x`` being the
        iterate (a live buffer: copy it to keep it); returning True stops.
    max_linesearch : int
        Evaluations allowed per line search; when they run out the optimiser
        stops with the best point so far.
    n_threads : int
        Threads for the passes over parameter vectors (results do not depend
        on it).
    history_dtype : numpy.float32 or numpy.float64
        Storage of the ``(s, y)`` pairs (see "History precision").
    gradient_out : bool
        Call ``fun(x, out)`` with ``out`` a float64 ``(P,)`` buffer of the
        optimiser's, into which ``fun`` writes the gradient (the ``g`` it
        returns should be ``out``; another array is copied there). The
        optimiser alternates two such buffers, so no gradient is allocated
        or copied per evaluation (see "Memory").
    x_scale : array_like (P,) or None
        Characteristic scale of each variable, positive: the iterations run on
        ``u = x / x_scale`` (see "Scaling"), ``fun``, ``callback``, the
        stopping rules and the result see ``x``. Powers of two make the
        change exact. It costs two more ``(P,)`` arrays and a pass over them
        per evaluation and per stopping test.

    Returns
    -------
    OptimizeResult

    Raises
    ------
    NonFiniteObjective
        ``fun`` returned a non-finite value or gradient; ``.result`` holds the
        best point so far. ``KeyboardInterrupt`` propagates with the same
        ``.result`` attribute.
    SscrfError
        Invalid arguments, or a gradient of the wrong shape.
    """
    if not callable(fun):
        raise SscrfTypeError("fun must be callable as fun(x) -> (value, gradient)")
    for name, value, low in (("period", period, 1), ("epsilon", epsilon, None),
                             ("delta", delta, None)):
        check_number(value, name, minimum=low)
    run = _Run(fun, x0, c1, memory, max_iterations, max_linesearch, n_threads, history_dtype,
               gradient_out, x_scale)
    try:
        reason = run.minimise(int(max_iterations), float(epsilon), int(period), float(delta),
                              callback)
    except (NonFiniteObjective, KeyboardInterrupt) as exc:
        interrupted = isinstance(exc, KeyboardInterrupt)
        setattr(exc, "result", run.result(STOP_INTERRUPTED if interrupted
                                          else "non-finite objective", copy=True))
        run.release()  # the traceback keeps this frame alive; let the histories go
        raise
    return run.result(reason, copy=False, stalled=run.stalled(reason))


class _Run:
    """State of one minimisation. ``best`` is ``(array, None, F)`` or, while a
    line search runs, ``(None, alpha, F)`` for its trial at step ``alpha``."""

    def __init__(self, fun, x0, c1, memory, max_iterations, max_linesearch, n_threads,
                 history_dtype=np.float32, gradient_out=False, x_scale=None):
        for name, value, low in (("memory", memory, 1), ("max_iterations", max_iterations, 0),
                                 ("max_linesearch", max_linesearch, 1)):
            check_integer(value, name, minimum=low)
        check_threads(n_threads, allow_none=False)
        if np.dtype(history_dtype) not in (np.dtype(np.float32), np.dtype(np.float64)):
            raise SscrfError(f"history_dtype must be float32 or float64, got {history_dtype!r}")
        check_number(c1, "c1", minimum=0)
        x = np.array(x0, dtype=np.float64)
        if x.ndim != 1:
            raise SscrfError(f"x0 must be a 1-D array, got shape {x.shape}")
        n = x.size
        if x_scale is not None:
            x_scale = np.array(x_scale, dtype=np.float64)
            if x_scale.shape != x.shape or not (np.isfinite(x_scale).all() and
                                                (x_scale > 0.0).all()):
                raise SscrfError(f"x_scale must be {n} finite positive numbers, like x0")
            x /= x_scale                         # u0
        # (P,) x_scale; fun's argument x = u·x_scale; ∂/∂u = g_factor·∂f/∂x, F·scale
        self.x_scale, self.X = x_scale, None if x_scale is None else np.empty(n)
        self.g_factor, self.scale = x_scale, 1.0
        rows = max(1, min(int(memory), int(max_iterations)))
        self.fun, self.c1, self.l1 = fun, float(c1), c1 > 0
        self.max_linesearch = int(max_linesearch)
        self.n_threads = int(n_threads)
        self.x = x                               # (P,) the iterate
        self.d = np.empty(n)                     # (P,) search direction; OWL-QN's pseudo-gradient
        self.S = np.empty((rows, n), history_dtype)  # (m, P) ring buffer of steps s = x_{k+1} − x_k
        self.Y = np.empty((rows, n), history_dtype)  # (m, P) ring buffer of y = g_{k+1} − g_k
        self.rho = np.zeros(rows)                # (m,) 1 / (s·y) per row
        self.gamma = 1.0                         # s·y / y·y of the newest pair: H0 = gamma·I
        self.order = []                          # rows holding pairs, oldest first
        # Gram matrix of the basis [S rows | Y rows | v], v being the vector the
        # direction is built from (the gradient, or OWL-QN's pseudo-gradient):
        # entries between rows in `order` and v are current.
        self.gram = np.zeros((2 * rows + 1, 2 * rows + 1))
        self.v = None                            # v while the direction is computed
        self.x_norm2 = 0.0                       # ‖x‖² at the iterate
        self.T = np.empty(n)                     # (P,) the line search's trial point
        self.G0 = np.empty(n)                    # (P,) the gradient at x during a line search
        # (P,) where fun writes the gradient of a trial, with gradient_out
        self.G1 = np.empty(n) if gradient_out else None
        self.blocks = [(a, min(a + _BLOCK, n)) for a in range(0, n, _BLOCK)]
        self.spare = None                        # (P,) only once a rejected trial must be kept
        self.best = (x, None, math.inf)
        self.n_iterations = self.n_evaluations = 0
        self.history = []
        self.F0 = math.inf                       # F(x0)
        self.promised = None                     # decrease a failed line search promised

    # -- the outer loop -------------------------------------------------------------

    def minimise(self, max_iterations, epsilon, period, delta, callback):
        x, rows = self.x, self.S.shape[0]
        f, g = self.evaluate(x)
        self.measure(g, None)
        if not self.gram[2 * rows, 2 * rows] <= _HUGE * _HUGE:
            f, g = self.rescale(f, g)
        F = f + self.c1 * self.l1_norm(x) if self.l1 else f
        self.best = (x, None, F)
        self.F0 = F
        x = None                                 # the iterate is self.x (see accept)
        if self.converged(epsilon):
            return "gradient norm below epsilon"
        while self.n_iterations < max_iterations:
            gd = self.direction()
            if not gd < 0.0 and self.order:
                # Not a descent direction (rounding, or the orthant constraint
                # removed every component): forget the pairs, take steepest descent.
                self.order.clear()
                gd = self.direction()
            self.v = None                        # fun's gradient may be freed below
            if not gd < 0.0:                     # 0, or NaN when ‖g‖² overflows
                return "gradient is zero" if gd == 0.0 else _OVERFLOW
            # libLBFGS's first step: unit length (‖d‖ = ‖v‖ for steepest descent)
            alpha = 1.0 if self.order else 1.0 / math.sqrt(self.gram[2 * rows, 2 * rows])
            if len(self.order) == rows:
                slot = self.order.pop(0)         # the oldest pair, already used by the direction
            else:
                slot = min(set(range(rows)) - set(self.order))
            if self.G1 is None:
                np.copyto(self.G0, g)            # keep g here so that fun's array can be freed
            else:                                # fun wrote g into G1: no copy, a swap
                self.G0, self.G1 = self.G1, self.G0
            g = None
            found = self.backtrack(F, alpha) if self.l1 else self.wolfe(f, gd, alpha)
            if found is None:
                self.promised = -alpha * gd
                return (f"line search failed: no acceptable step in {self.max_linesearch} "
                        "evaluations (the objective's rounding error near a minimum, "
                        "or a wrong gradient)")
            alpha, f, g, F = found
            found = None
            self.accept(slot, alpha, F, g)
            self.n_iterations += 1
            k = self.n_iterations
            self.history.append(F)
            if callback is not None and callback(k, F / self.scale, self.point(self.x)):
                return STOP_CALLBACK
            if self.converged(epsilon):
                return "gradient norm below epsilon"
            if k > period and F != 0.0 and (self.history[-1 - period] - F) / abs(F) < delta:
                return f"improvement over {period} iterations below delta"
        return "reached max_iterations"

    def converged(self, epsilon):
        """``‖v‖ / max(1, ‖x‖) < epsilon`` at the iterate (v: gradient or pseudo-gradient),
        in ``x`` and unscaled."""
        rows = self.S.shape[0]
        if self.x_scale is None:
            v_norm = math.sqrt(self.gram[2 * rows, 2 * rows]) / self.scale
            x_norm = math.sqrt(self.x_norm2)
            if x_norm == math.inf:               # ‖x‖² overflowed: ‖x‖ may still be finite
                x_norm = _norm(self.x[a:b] for a, b in self.blocks)
        else:
            v_norm = _norm(self.v[a:b] / self.g_factor[a:b] for a, b in self.blocks)
            x_norm = _norm(self.x[a:b] * self.x_scale[a:b] for a, b in self.blocks)
        return v_norm / max(1.0, x_norm) < epsilon

    def rescale(self, f, g):
        """Multiply ``F`` by ``2^-e``, ``‖g‖·2^-e`` in ``[1/2, 1)``, from now on, ``g``
        being the gradient at ``x0`` (see "Scaling"); returns ``f, g`` rescaled."""
        e = math.frexp(_norm(g[a:b] for a, b in self.blocks))[1]
        self.scale = math.ldexp(1.0, -e)
        self.c1 *= self.scale
        self.g_factor = self.scale if self.x_scale is None else self.x_scale * self.scale
        f *= self.scale                          # fun's own array is left alone
        g = np.multiply(g, self.scale, out=g if g is self.G1 else None)
        self.measure(g, None)
        return f, g

    def point(self, u):
        """``x`` of ``u``: ``u`` itself, or ``u·x_scale`` in a buffer."""
        if self.x_scale is None:
            return u
        return np.multiply(u, self.x_scale, out=self.X)

    def stalled(self, reason):
        """Why the run stopped short of a minimum, or None (see "Interruption and failure")."""
        F = self.best[2]
        # F's rounding error scales with its terms, which |F(x0)| bounds where F nears 0
        if self.promised is not None and self.promised > _STALL * max(abs(F), abs(self.F0)):
            return (f"the line search found no point below {F / self.scale:.6g} though the "
                    f"gradient promised a decrease of {self.promised / self.scale:.3g}: a badly "
                    "scaled problem, or a wrong gradient")
        if reason == _OVERFLOW:
            return "the gradient grew too large for the optimiser's sums after it was rescaled"
        if self.n_iterations and not F < self.F0 and not reason.startswith("gradient"):
            return f"no iteration lowered the objective from its value at x0, {F / self.scale:.6g}"
        return None

    def evaluate(self, x, along=None):
        """``(f, g)`` at ``x``, checked finite; with ``along = d``, ``(f, g, g·d)``.

        A finite sum proves every entry finite, and so does a finite ``g·d``
        for a finite ``d`` (an infinite entry gives ±inf, or NaN where
        ``d`` is 0): the line search's ``g·d`` doubles as the check. Otherwise
        the entries are checked one by one (a sum of finite entries can
        still overflow)."""
        point = self.point(x)
        if self.G1 is None:
            f, g = self.fun(point)
        else:
            f, g = self.fun(point, self.G1)
        self.n_evaluations += 1
        f = float(f)
        g = np.ascontiguousarray(g, dtype=np.float64)
        if g.shape != x.shape:
            raise SscrfError(f"fun returned a gradient of shape {g.shape}, expected {x.shape}")
        if self.G1 is not None and g is not self.G1:
            np.copyto(self.G1, g)
            g = self.G1
        if self.g_factor is not None:            # F·scale and ∂/∂u (see "Scaling")
            f *= self.scale                      # fun's own array is left alone
            g = np.multiply(g, self.g_factor, out=g if g is self.G1 else None)
        summary = float(np.sum(g)) if along is None else self.dot(g, along)
        if not (math.isfinite(f) and (math.isfinite(summary)
                                      or all(np.isfinite(g[a:b]).all() for a, b in self.blocks))):
            what = f"value {f}" if not math.isfinite(f) else "a gradient entry"
            raise NonFiniteObjective(
                f"the objective became non-finite ({what}) at evaluation {self.n_evaluations}; "
                "the best point so far is in this exception's .result")
        return (f, g) if along is None else (f, g, summary)

    def dot(self, a, b):
        return float(_core.dot_products([a, b], [[0, 1]], self.n_threads)[0])

    # -- direction: two-loop recursion on the Gram matrix ---------------------------

    def measure(self, g, slot, secant=None):
        """Form ``v`` from the gradient ``g`` at the iterate and, in one pass, the
        dot products the next direction needs: those of the new pair in ``slot``
        (if any) and of ``v`` with the basis, and ``‖x‖²``.

        With ``secant = (x_old, G0)``, the previous iterate and its gradient,
        the pass first writes the pair (``secant_pair``), block by block, so
        that the new vectors are read while in cache."""
        rows = self.S.shape[0]
        if self.l1:
            for a, b in self.blocks:
                self.d[a:b] = _pseudo_gradient(g[a:b], self.x[a:b], self.l1_weight(a, b))
            self.v = self.d
        else:
            self.v = g
        old = list(self.order)
        vectors = [self.S[r] for r in old] + [self.Y[r] for r in old]
        where = old + [rows + r for r in old]    # Gram index of each vector
        pairs = []
        if slot is not None:
            i_s, i_y = len(vectors), len(vectors) + 1
            vectors += [self.S[slot], self.Y[slot]]
            where += [slot, rows + slot]
            # The recursion never reads s_i·s_j (see direction), so neither
            # are computed: the s-s block of the Gram matrix stays 0.
            k = len(old)
            pairs += [(i_s, j) for j in range(k, 2 * k)] + [(i_y, j) for j in range(2 * k)]
            pairs += [(i_s, i_y), (i_y, i_y)]
        i_v = len(vectors)
        vectors += [self.v, self.x]
        where.append(2 * rows)
        pairs += [(i_v, j) for j in range(i_v + 1)] + [(i_v + 1, i_v + 1)]
        pairs_array = np.array(pairs, dtype=np.int64)
        if secant is None:
            dots = _core.dot_products(vectors, pairs_array, self.n_threads)
        else:
            x_old, G0 = secant
            dots = _core.secant_pair(x_old, self.x, g, G0, self.S[slot], self.Y[slot],
                                     self.n_threads, vectors=vectors, pairs=pairs_array)
        for (i, j), value in zip(pairs[:-1], dots[:-1]):
            self.gram[where[i], where[j]] = self.gram[where[j], where[i]] = value
        self.x_norm2 = float(dots[-1])

    def direction(self):
        """Set ``d = −H·v``, confined to ``v``'s orthant for OWL-QN; return ``v·d``.

        The two-loop recursion (Nocedal & Wright, Alg. 7.4) on coefficients:
        ``q = Σ_j δ_j b_j`` over the basis ``b = [s_i…, y_i…, v]``, so each
        ``s_i·q`` and ``y_i·r`` is a row of the Gram matrix times ``δ``. In
        the first loop ``q`` has no ``s`` component, so ``s_i·s_j`` is never
        needed (its entries are 0 and multiply 0)."""
        rows, order = self.S.shape[0], self.order
        k = len(order)
        basis = order + [rows + r for r in order] + [2 * rows]
        gram = self.gram[np.ix_(basis, basis)]
        delta = np.zeros(2 * k + 1)
        delta[-1] = 1.0
        alphas = np.zeros(k)
        for i in reversed(range(k)):             # newest to oldest: a_i = ρ_i s_i·q, q −= a_i y_i
            alphas[i] = self.rho[order[i]] * float(gram[i] @ delta)
            delta[k + i] -= alphas[i]
        if k:
            delta *= self.gamma                  # r = H0·q
        for i in range(k):                       # oldest to newest: r += s_i (a_i − ρ_i y_i·r)
            beta = self.rho[order[i]] * float(gram[k + i] @ delta)
            delta[i] += alphas[i] - beta
        vectors = [self.S[r] for r in order] + [self.Y[r] for r in order] + [self.v]
        return _core.linear_combination(self.d, -delta, vectors, self.v, self.l1,
                                        self.n_threads)

    # -- line searches --------------------------------------------------------------

    def trial(self, alpha, out):
        """``out = x + α·d``, for OWL-QN projected onto the orthant of ``x``.

        Returns ``(‖out‖₁, pg·(out − x))`` for OWL-QN, ``None`` otherwise.
        Deterministic in ``alpha`` while ``x``, ``d`` and ``G0`` are unchanged.
        """
        _core.step_along(out, self.x, alpha, self.d, self.n_threads)
        if not self.l1:
            return None
        norm, step = 0.0, 0.0
        for a, b in self.blocks:
            xb, ob = self.x[a:b], out[a:b]
            pg = _pseudo_gradient(self.G0[a:b], xb, self.l1_weight(a, b))
            # orthant ξ_j = sign(x_j), or sign(−pg_j) where x_j = 0; leaving it → 0
            orthant = np.where(xb != 0.0, np.sign(xb), -np.sign(pg))
            ob[np.sign(ob) != orthant] = 0.0
            norm += self.l1_block(ob, a, b)
            step += _dot(pg, ob - xb)
        return norm, step

    def note_trial(self, alpha, F):
        if F < self.best[2]:
            self.best = (None, alpha, F)

    def backtrack(self, F0, alpha):
        """OWL-QN's line search: halve ``α`` until ``F(x_α) <= F0 + 1e-4·pg·(x_α − x)``."""
        for _ in range(self.max_linesearch):
            norm, step = self.trial(alpha, self.T)
            f, g = self.evaluate(self.T)
            F = f + self.c1 * norm
            self.note_trial(alpha, F)
            if F <= F0 + SUFFICIENT_DECREASE * step:
                return alpha, f, g, F
            g = None
            alpha *= 0.5
        return None

    def wolfe(self, f0, gd0, alpha):
        """Strong-Wolfe line search along ``d``; the accepted trial is the last evaluated."""
        last = {}

        def phi(a):
            last.clear()                          # drop the previous trial's gradient first
            self.trial(a, self.T)
            f, g, gd = self.evaluate(self.T, along=self.d)
            self.note_trial(a, f)
            last["g"] = g
            return f, gd

        found = strong_wolfe(phi, f0, gd0, alpha, self.max_linesearch)
        if found is None:
            return None
        alpha, f = found
        return alpha, f, last.pop("g"), f

    # -- the update -----------------------------------------------------------------

    def accept(self, slot, alpha, F, g):
        """Make the accepted trial ``T`` the iterate (the two buffers swap) and
        store ``(s, y)`` in row ``slot`` (the oldest pair's, or an unused one).

        Statements are ordered so that ``best`` names a consistent point at
        every moment (an interrupt may land between any two).
        """
        x, T, G0 = self.x, self.T, self.G0
        array, best_alpha, best_F = self.best
        if array is None and best_alpha != alpha:
            # A trial the line search rejected is lower than the step it accepted.
            if self.spare is None:
                self.spare = np.empty_like(x)
            self.trial(best_alpha, self.spare)
            self.best = (self.spare, None, best_F)
        elif array is None or array is x:
            # Both line searches accept only F <= F(x) (sufficient decrease
            # along a descent direction), so T is as low as x: x's buffer
            # may take the next trials.
            self.best = (T, None, F)
        self.x, self.T = T, x                    # x's buffer takes the next trials
        self.measure(g, slot, secant=(x, G0))    # the pair, then the dot products
        rows = self.S.shape[0]
        sy, yy = self.gram[slot, rows + slot], self.gram[rows + slot, rows + slot]
        # Store the pair only with positive curvature, so that H stays positive
        # definite. Strong-Wolfe steps guarantee s·y > 0 up to rounding; OWL-QN's
        # backtracking does not on a nonconvex f. A skipped step still recycled
        # its row, so the oldest pair is gone either way.
        if sy > _SKIP * yy:
            self.rho[slot] = 1.0 / sy
            self.gamma = sy / yy
            self.order.append(slot)

    # -- measurements and the result ------------------------------------------------

    def l1_norm(self, u):
        """``‖x‖₁`` of the point ``u``."""
        return sum(self.l1_block(u[a:b], a, b) for a, b in self.blocks)

    def l1_block(self, ub, a, b):
        """``‖x[a:b]‖₁`` of ``u[a:b] = ub``."""
        if self.x_scale is None:
            return float(np.abs(ub).sum())
        return float(np.abs(ub * self.x_scale[a:b]).sum())

    def l1_weight(self, a, b):
        """The L1 weight of ``u[a:b]``: ``c1·x_scale`` (``c1`` times the objective's scale)."""
        return self.c1 if self.x_scale is None else self.c1 * self.x_scale[a:b]

    def result(self, reason, copy, stalled=None):
        array, alpha, F = self.best
        if array is None:                        # a trial of the running line search
            array = np.empty_like(self.x)
            self.trial(alpha, array)
        elif copy or (array is not self.x and array is not self.spare):
            array = array.copy()
        if self.x_scale is not None:
            array *= self.x_scale
        return OptimizeResult(array, F / self.scale, self.n_iterations, self.n_evaluations,
                              reason, [F / self.scale for F in self.history], stalled)

    def release(self):
        self.S = self.Y = self.T = self.G0 = self.G1 = self.d = self.spare = self.v = None


def _norm(blocks):
    """Euclidean norm of the concatenated ``blocks`` without overflow or underflow in
    the squares: each block is divided by its largest magnitude first, and the
    partial sums are kept relative to the largest so far (LAPACK's dnrm2)."""
    top, total = 0.0, 0.0                        # ‖·‖ = top·sqrt(total)
    for block in blocks:
        m = float(np.max(np.abs(block))) if block.size else 0.0
        if m == 0.0:
            continue
        part = _dot(block / m, block / m)
        if m > top:
            total = total * (top / m) ** 2 + part
            top = m
        else:
            total += part * (m / top) ** 2
    return top * math.sqrt(total)


def _dot(a, b):
    """``a·b`` for 1-D arrays by einsum's own single-threaded loop: ``np.dot`` calls
    BLAS ``ddot``, which OpenBLAS threads for long vectors, and those threads
    spin against the objective's OpenMP threads (100× slower on a busy 2-core
    machine for 1e5 entries)."""
    return float(np.einsum("i,i->", a, b))


def _pseudo_gradient(g, x, c1):
    """Pseudo-gradient of ``f + c1·‖x‖₁`` (Andrew & Gao, eq. 4); ``g, x``: (n,) → (n,).

    ``g_j + c1·sign(x_j)`` where ``x_j ≠ 0``; at ``x_j = 0`` the one-sided
    derivative that is negative (``g_j + c1 < 0`` or ``g_j − c1 > 0``), else 0,
    that is ``sign(g_j)·max(|g_j| − c1, 0)``.
    """
    pg = np.abs(g)
    pg -= c1
    np.maximum(pg, 0.0, out=pg)
    np.copysign(pg, g, out=pg)                   # x_j = 0
    off_zero = np.copysign(c1, x)
    off_zero += g                                # x_j ≠ 0
    np.copyto(pg, off_zero, where=x != 0.0)
    return pg
