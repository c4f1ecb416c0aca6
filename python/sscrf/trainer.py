"""L-BFGS training loop: stopping rules, progress display, interruption.

Runs sscrf's L-BFGS / OWL-QN (:func:`sscrf.optimize.lbfgs`), or on request
``scipy.optimize.minimize(method="L-BFGS-B")``, with CRFsuite's
stopping tests (relative improvement over the last ``period`` iterations
below ``delta``; gradient norm below ``epsilon·max(1, ‖θ‖)``), a
per-iteration callback, a progress display on stderr, a guard against a
non-finite loss, and Ctrl-C handling that keeps the best parameters so far.
"""

import math
import sys
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from . import _core
from .errors import SscrfError
from .optimize import STOP_CALLBACK, STOP_INTERRUPTED


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
    """

    theta: np.ndarray
    loss: float
    n_iterations: int
    n_evaluations: int
    stop_reason: str
    seconds: float
    history: list = field(default_factory=list)


class _Stop(Exception):
    pass


class NonFiniteLoss(SscrfError):
    """The loss or its gradient became NaN or infinite during training."""


def minimize(objective, theta0, *, max_iterations=100, epsilon=1e-5, period=10, delta=1e-5,
             memory=6, callback=None, verbose=False, c1=0.0, use_scipy=False, n_threads=1):
    """Minimise ``objective(theta) -> (loss, grad)`` by L-BFGS.

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
    use_scipy : bool
        Use scipy's L-BFGS-B (about 27 doubles per parameter) instead of
        sscrf's compact L-BFGS (:func:`sscrf.optimize.lbfgs`: a float32
        history and 5 float64 vectors, 11 doubles' worth per parameter at
        m = 6), which is the default.
    n_threads : int
        Threads for sscrf's L-BFGS vector passes (results do not depend on it).

    Returns
    -------
    TrainResult
    """
    try:
        return _minimize(objective, theta0, max_iterations=max_iterations, epsilon=epsilon,
                         period=period, delta=delta, memory=memory, callback=callback,
                         verbose=verbose, c1=c1, use_scipy=use_scipy, n_threads=n_threads)
    finally:
        # The kernels keep their large scratch from one evaluation to the
        # next (cpp/block_cache.hpp); training is over, so it goes back.
        _core.release_scratch()


def _minimize(objective, theta0, *, max_iterations, epsilon, period, delta, memory, callback,
              verbose, c1, use_scipy, n_threads):
    best = {"loss": math.inf, "theta": np.array(theta0, dtype=np.float64), "grad_norm": math.nan}
    history = []
    counts = {"evaluations": 0}
    started = time.perf_counter()
    show = _Progress(verbose, max_iterations)

    def fun(theta):
        loss, grad = objective(theta)
        grad = np.array(grad, dtype=np.float64)  # the objective may reuse its buffer
        counts["evaluations"] += 1
        if not (math.isfinite(loss) and np.all(np.isfinite(grad))):
            raise NonFiniteLoss(
                f"the training loss became non-finite ({loss}) at evaluation "
                f"{counts['evaluations']}; the model keeps the last good parameters. "
                "Lower the learning signal (e.g. a larger c2 or smaller term weights)."
            )
        if loss < best["loss"]:
            best["loss"], best["theta"] = loss, theta.copy()
            best["grad_norm"] = float(np.linalg.norm(grad))
        return loss, grad

    reason = {"text": "reached max_iterations"}

    def on_iteration(intermediate_result):
        k = len(history) + 1
        loss = float(intermediate_result.fun)
        history.append(loss)
        show.line(k, loss, best["grad_norm"], counts["evaluations"], time.perf_counter() - started,
                  getattr(objective, "last_terms", None))
        if callback is not None and callback(k, loss, intermediate_result.x):
            reason["text"] = STOP_CALLBACK
            raise StopIteration
        x_norm = float(np.linalg.norm(intermediate_result.x))
        if best["grad_norm"] / max(1.0, x_norm) < epsilon:
            reason["text"] = "gradient norm below epsilon"
            raise StopIteration
        if k > period and loss != 0.0 and (history[-1 - period] - loss) / abs(loss) < delta:
            reason["text"] = f"improvement over {period} iterations below delta"
            raise StopIteration

    if c1 > 0 or not use_scipy:
        return _minimize_owlqn(objective, theta0, c1, max_iterations=max_iterations,
                               epsilon=epsilon, period=period, delta=delta, memory=memory,
                               callback=callback, show=show, started=started,
                               n_threads=n_threads)
    stop_reason = None
    if max_iterations == 0:
        # scipy takes one step even with maxiter=0; zero means "evaluate the start".
        loss, grad = fun(np.asarray(theta0, dtype=np.float64))
        seconds = time.perf_counter() - started
        show.done(0, loss, 1, seconds, "max_iterations is 0")
        return TrainResult(best["theta"], best["loss"], 0, 1, "max_iterations is 0", seconds, [])
    try:
        import scipy.optimize  # only this path needs it (a heavy import)
        from threadpoolctl import threadpool_limits

        # The optimiser's vector operations are far too small for BLAS threads,
        # whose spinning would compete with the OpenMP threads of the objective.
        with threadpool_limits(limits=1, user_api="blas"):
            result = scipy.optimize.minimize(
                fun, np.asarray(theta0, dtype=np.float64), jac=True, method="L-BFGS-B",
                callback=on_iteration,
                options={"maxiter": max_iterations, "maxcor": memory, "ftol": 0.0, "gtol": 0.0,
                         "maxfun": max(20 * max_iterations, 100)},
            )
        if len(history) >= max_iterations:
            stop_reason = "reached max_iterations"
        elif reason["text"] != "reached max_iterations":
            stop_reason = reason["text"]
        else:
            stop_reason = f"optimiser: {result.message}"
    except KeyboardInterrupt:
        stop_reason = STOP_INTERRUPTED
        warnings.warn(
            f"training interrupted after {len(history)} iterations; keeping the best "
            "parameters so far", RuntimeWarning, stacklevel=3)
    except NonFiniteLoss as e:
        e.result = TrainResult(best["theta"], best["loss"], len(history), counts["evaluations"],
                               "non-finite loss", time.perf_counter() - started, history)
        raise
    seconds = time.perf_counter() - started
    show.done(len(history), best["loss"], counts["evaluations"], seconds, stop_reason)
    return TrainResult(best["theta"], best["loss"], len(history), counts["evaluations"],
                       stop_reason, seconds, history)


def _minimize_owlqn(objective, theta0, c1, *, max_iterations, epsilon, period, delta, memory,
                    callback, show, started, n_threads):
    from .objectives import Objective
    from .optimize import NonFiniteObjective, lbfgs

    state = {"evaluations": 0}
    # An Objective writes its gradient into the optimiser's buffers: none is
    # allocated or copied per evaluation.
    gradient_out = isinstance(objective, Objective)

    def fun(theta, *out):
        state["evaluations"] += 1
        return objective(theta, *out)

    def on_iteration(k, loss, theta):
        terms = getattr(objective, "last_terms", None)
        if terms and c1 > 0:  # the loss also holds c1·‖θ‖₁, which the objective does not
            terms = terms + [("l1", loss - math.fsum(value for _, value in terms))]
        show.line(k, loss, None, state["evaluations"], time.perf_counter() - started, terms)
        return bool(callback(k, loss, theta)) if callback is not None else False

    try:
        r = lbfgs(fun, np.asarray(theta0, dtype=np.float64), c1=c1, memory=memory,
                  max_iterations=max_iterations, epsilon=epsilon, period=period, delta=delta,
                  callback=on_iteration, n_threads=n_threads, gradient_out=gradient_out)
    except KeyboardInterrupt as e:
        r = e.result
        warnings.warn(f"training interrupted after {r.n_iterations} iterations; keeping the "
                      "best parameters so far", RuntimeWarning, stacklevel=3)
    except NonFiniteObjective as e:
        r = e.result
        error = NonFiniteLoss(f"the training loss became non-finite; the model keeps the last "
                              f"good parameters ({e})")
        error.result = TrainResult(r.x, r.fun, r.n_iterations, r.n_evaluations, r.stop_reason,
                                   time.perf_counter() - started, list(r.history))
        raise error from None
    seconds = time.perf_counter() - started
    show.done(r.n_iterations, r.fun, r.n_evaluations, seconds, r.stop_reason)
    return TrainResult(r.x, r.fun, r.n_iterations, r.n_evaluations, r.stop_reason, seconds,
                       list(r.history))


class _Progress:
    """One line per iteration on stderr (every tenth when stderr is not a terminal)."""

    def __init__(self, enabled, max_iterations):
        self.enabled = enabled
        self.tty = enabled and sys.stderr.isatty()
        self.width = len(str(max_iterations))

    def line(self, k, loss, grad_norm, evaluations, seconds, terms=None):
        """``terms``: (name, value) of the loss's parts at the iterate, shown when
        there are several data terms (their values include their weights)."""
        if not self.enabled or (not self.tty and k % 10 and k != 1):
            return
        norm = "" if grad_norm is None else f"  |g| {grad_norm:.3g}"
        text = (f"iter {k:>{self.width}}  loss {loss:.6g}{norm}  "
                f"evals {evaluations}  {seconds:.1f}s")
        if terms and sum(name not in ("l1", "l2") for name, _ in terms) > 1:
            text += "  (" + ", ".join(f"{name} {value:.4g}" for name, value in terms) + ")"
        end = "\r" if self.tty else "\n"
        print(text.ljust(70), end=end, file=sys.stderr, flush=True)

    def done(self, k, loss, evaluations, seconds, reason):
        if self.enabled:
            print(f"done: {k} iterations, {evaluations} evaluations, loss {loss:.6g}, "
                  f"{seconds:.1f}s ({reason})".ljust(70), file=sys.stderr, flush=True)
