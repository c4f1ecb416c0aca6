"""Training's optimiser loop: :func:`sscrf.optim.lbfgs` with CRFsuite's stopping
tests, the progress display, and the handling of Ctrl-C and of a non-finite loss.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

import numpy as np

from . import _core
from .errors import ConvergenceWarning, SscrfError
from .objectives import Objective
from .optim import NonFiniteObjective, lbfgs
from .progress import Progress

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

__all__ = ["HISTORY_PAIRS", "NonFiniteLoss", "TrainResult", "minimize"]

#: The correction pairs L-BFGS keeps (CRFsuite's default).
HISTORY_PAIRS = 6


@dataclass
class TrainResult:
    """Outcome of :func:`minimize`.

    Attributes
    ----------
    theta : ndarray
        Best parameters found (lowest loss evaluated).
    loss : float
    n_iterations, n_evaluations : int
    stop_reason : str
    seconds : float
    history : list of float
        Loss after each iteration.
    stalled : str or None
        Why training stopped short of a minimum without meeting a stopping
        rule (:attr:`sscrf.optim.OptimizeResult.stalled`), or None.
    """

    theta: NDArray[np.float64]
    loss: float
    n_iterations: int
    n_evaluations: int
    stop_reason: str
    seconds: float
    history: list[float] = field(default_factory=list)
    stalled: Optional[str] = None


class NonFiniteLoss(SscrfError):
    """The loss or its gradient became NaN or infinite during training; ``result`` is
    the :class:`TrainResult` of the last good parameters."""

    result: TrainResult


def minimize(objective: Callable[..., Any], theta0: ArrayLike, *, max_iterations: int = 100,
             epsilon: float = 1e-5, period: int = 10, delta: float = 1e-5,
             memory: int = HISTORY_PAIRS, callback: Optional[Callable[..., Any]] = None,
             verbose: bool = False, c1: float = 0.0, n_threads: int = 1,
             x_scale: Optional[NDArray[np.float64]] = None) -> TrainResult:
    """Minimise ``objective(theta) -> (loss, grad)`` (plus ``c1·‖θ‖₁``) by L-BFGS / OWL-QN.

    Runs :func:`sscrf.optim.lbfgs` with CRFsuite's stopping tests (relative
    improvement over the last ``period`` iterations below ``delta``;
    gradient norm below ``epsilon·max(1, ‖θ‖)``), a progress display on
    stderr, a guard against a non-finite loss, and Ctrl-C handling that
    keeps the best parameters so far (returned with stop reason
    ``"interrupted"``, without a warning: the caller says what it means).

    Parameters
    ----------
    objective : callable
    theta0 : ndarray (P,)
    max_iterations : int
    epsilon : float
        Stop when ``‖g‖ / max(1, ‖θ‖) < epsilon``.
    period, delta : int, float
        Stop when ``(f[k-period] - f[k]) / f[k] < delta`` (CRFsuite's test).
    memory : int
        Number of correction pairs L-BFGS keeps (CRFsuite's default is 6).
    callback : callable or None
        ``callback(iteration, loss, theta)`` after each iteration; returning
        True stops training.
    verbose : bool
        Print progress to stderr.
    c1 : float
        L1 coefficient: with c1 > 0 the loss is ``objective + c1·‖θ‖₁``,
        minimised by OWL-QN.
    n_threads : int
        Threads for the optimiser's vector passes (results do not depend on it).
    x_scale : ndarray (P,) or None
        The parameters' scales (:func:`variable_scale`, :func:`sscrf.optim.lbfgs`).

    Returns
    -------
    TrainResult

    Warns
    -----
    ConvergenceWarning
        Training stopped short of a minimum (``TrainResult.stalled`` says why).
    """
    try:
        return _minimize(objective, theta0, c1, max_iterations=max_iterations, epsilon=epsilon,
                         period=period, delta=delta, memory=memory, callback=callback,
                         show=_Progress(verbose, max_iterations), started=time.perf_counter(),
                         n_threads=n_threads, x_scale=x_scale)
    finally:
        # The kernels keep their large scratch from one evaluation to the
        # next (cpp/runtime/block_cache.hpp); training is over, so it goes back.
        _core.release_scratch()


def _minimize(objective: Callable[..., Any], theta0: ArrayLike, c1: float, *,
              max_iterations: int, epsilon: float, period: int, delta: float, memory: int,
              callback: Optional[Callable[..., Any]], show: _Progress, started: float,
              n_threads: int, x_scale: Optional[NDArray[np.float64]]) -> TrainResult:
    state = {"evaluations": 0}
    # An Objective writes its gradient into the optimiser's buffers: none is
    # allocated or copied per evaluation.
    gradient_out = isinstance(objective, Objective)

    def fun(theta: NDArray[np.float64], *out: Any) -> Any:
        state["evaluations"] += 1
        return objective(theta, *out)

    def on_iteration(k: int, loss: float, theta: NDArray[np.float64]) -> bool:
        terms = getattr(objective, "last_terms", None)
        if terms and c1 > 0:  # the loss also holds c1·‖θ‖₁, which the objective does not
            terms = terms + [("l1", loss - math.fsum(value for _, value in terms))]
        show.line(k, loss, None, state["evaluations"], time.perf_counter() - started, terms)
        return bool(callback(k, loss, theta)) if callback is not None else False

    try:
        r = lbfgs(fun, np.asarray(theta0, dtype=np.float64), c1=c1, memory=memory,
                  max_iterations=max_iterations, epsilon=epsilon, period=period, delta=delta,
                  callback=on_iteration, n_threads=n_threads, gradient_out=gradient_out,
                  x_scale=x_scale)
    except KeyboardInterrupt as e:  # the caller decides: CRF.fit commits, then re-raises
        r = e.result  # type: ignore[attr-defined]  # sscrf.optim.lbfgs attaches it
    except NonFiniteObjective as e:
        assert e.result is not None  # lbfgs attaches it
        r = e.result
        error = NonFiniteLoss(f"the training loss became non-finite; the model keeps the last "
                              f"good parameters ({e})")
        error.result = TrainResult(r.x, r.fun, r.n_iterations, r.n_evaluations, r.stop_reason,
                                   time.perf_counter() - started, list(r.history))
        raise error from None
    seconds = time.perf_counter() - started
    show.done(r.n_iterations, r.fun, r.n_evaluations, seconds, r.stop_reason)
    if r.stalled is not None:
        warnings.warn(f"training stopped short of a minimum after {r.n_iterations} iterations "
                      f"({r.stop_reason}): {r.stalled}; the weights are not a minimum's "
                      "(training_['stalled'] says so too)", ConvergenceWarning, stacklevel=3)
    return TrainResult(r.x, r.fun, r.n_iterations, r.n_evaluations, r.stop_reason, seconds,
                       list(r.history), r.stalled)


class _Progress:
    """The optimiser's iteration lines, by the package's rule (:mod:`sscrf.progress`)."""

    def __init__(self, enabled: Any, max_iterations: int) -> None:
        self.report = Progress(enabled)
        self.width = len(str(max_iterations))

    def line(self, k: int, loss: float, grad_norm: Optional[float], evaluations: int,
             seconds: float, terms: Optional[Sequence[tuple[str, float]]] = None) -> None:
        """``terms``: (name, value) of the loss's parts at the iterate, shown when
        there are several data terms (their values include their weights)."""
        norm = "" if grad_norm is None else f"  |g| {grad_norm:.3g}"
        text = (f"iter {k:>{self.width}}  loss {loss:.6g}{norm}  "
                f"evals {evaluations}  {seconds:.1f}s")
        if terms and sum(name not in ("l1", "l2") for name, _ in terms) > 1:
            text += "  (" + ", ".join(f"{name} {value:.4g}" for name, value in terms) + ")"
        self.report.step(k, text)

    def done(self, k: int, loss: float, evaluations: int, seconds: float, reason: str) -> None:
        self.report.note(f"done: {k} iteration{'' if k == 1 else 's'}, {evaluations} "
                         f"evaluation{'' if evaluations == 1 else 's'}, loss {loss:.6g}, "
                         f"{seconds:.1f}s ({reason})")
