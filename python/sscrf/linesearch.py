"""The strong-Wolfe line search of :mod:`sscrf.optim`'s L-BFGS (Nocedal & Wright,
*Numerical Optimization*, Alg. 3.5 bracketing, Alg. 3.6 zoom by safeguarded
cubic interpolation), on the objective along one direction.
"""

from __future__ import annotations

import math
from typing import Callable, Optional

__all__ = ["SUFFICIENT_DECREASE", "strong_wolfe"]

_Point = tuple[float, float, float]  # (a, φ(a), φ'(a))

SUFFICIENT_DECREASE = 1e-4  # the Armijo constant, libLBFGS's ftol
_CURVATURE = 0.9       # strong-Wolfe curvature constant for quasi-Newton steps (N&W §3.1)
_EXTRAPOLATE = 4.0     # step growth while bracketing, libLBFGS's max extrapolation


def strong_wolfe(phi: Callable[[float], tuple[float, float]], f0: float, g0: float,
                 alpha: float, max_evals: int) -> Optional[tuple[float, float]]:
    """A step meeting the strong Wolfe conditions (Nocedal & Wright, Alg. 3.5).

    ``phi(a) -> (φ(a), φ'(a))`` evaluates the objective along the direction;
    ``f0 = φ(0)``, ``g0 = φ'(0) < 0``. Returns ``(a, φ(a))`` for the accepted
    step, always the last one evaluated, or None after ``max_evals`` evaluations.
    """
    previous = (0.0, f0, g0)
    for i in range(max_evals):
        f, g = phi(alpha)
        current = (alpha, f, g)
        if f > f0 + SUFFICIENT_DECREASE * alpha * g0 or (i > 0 and f >= previous[1]):
            return _zoom(phi, f0, g0, previous, current, max_evals - i - 1)
        if abs(g) <= -_CURVATURE * g0:
            return alpha, f
        if g >= 0.0:
            return _zoom(phi, f0, g0, current, previous, max_evals - i - 1)
        previous = current
        alpha *= _EXTRAPOLATE
    return None


def _zoom(phi: Callable[[float], tuple[float, float]], f0: float, g0: float, lo: _Point,
          hi: _Point, max_evals: int) -> Optional[tuple[float, float]]:
    """Nocedal & Wright, Alg. 3.6. ``lo``, ``hi``: ``(a, φ(a), φ'(a))``; ``lo`` is the
    lowest point meeting sufficient decrease, and ``φ'(lo)·(hi − lo) < 0``, so
    strong-Wolfe steps lie between them."""
    for _ in range(max_evals):
        a = _cubic_minimiser(lo, hi)
        if a == lo[0] or a == hi[0]:
            return None                          # the interval is down to rounding
        f, g = phi(a)
        if f > f0 + SUFFICIENT_DECREASE * a * g0 or f >= lo[1]:
            hi = (a, f, g)
        else:
            if abs(g) <= -_CURVATURE * g0:
                return a, f
            if g * (hi[0] - lo[0]) >= 0.0:
                hi = lo
            lo = (a, f, g)
    return None


def _cubic_minimiser(p: _Point, q: _Point) -> float:
    """Minimiser of the cubic matching ``(a, φ, φ')`` at ``p`` and ``q`` (N&W eq. 3.59),
    or the midpoint when it is undefined or within a tenth of the interval of an end."""
    (a0, f0, g0), (a1, f1, g1) = p, q
    middle = a0 + 0.5 * (a1 - a0)
    d1 = g0 + g1 - 3.0 * (f0 - f1) / (a0 - a1)
    radicand = d1 * d1 - g0 * g1
    if not (math.isfinite(radicand) and radicand >= 0.0):
        return middle
    d2 = math.copysign(math.sqrt(radicand), a1 - a0)
    denominator = g1 - g0 + 2.0 * d2
    if denominator == 0.0:
        return middle
    a = a1 - (a1 - a0) * (g1 + d2 - d1) / denominator
    margin = 0.1 * abs(a1 - a0)
    if not (min(a0, a1) + margin <= a <= max(a0, a1) - margin):
        return middle
    return a
