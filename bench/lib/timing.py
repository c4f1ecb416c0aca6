"""Timing and memory of benchmark runs.

- :func:`run_child`: run a command in a child process and get its output,
  wall time and peak resident memory (``ru_maxrss`` from ``wait4``).
- :func:`self_peak_rss_bytes`, :func:`child_rss_floor`: peak memory of this
  process and the floor of any child's.
- :func:`crfsuite_seconds_per_evaluation`, :func:`median_call_seconds`: time
  per loss-and-gradient evaluation of CRFsuite and of an sscrf term.

Standard library only at import (pycrfsuite is imported by the function
that needs it), so that a parent process that launches measured children
stays small.

Peak memory caveat (Linux): a process's ``ru_maxrss`` survives ``execve``:
the kernel folds the high-water RSS of the address space being replaced
into the new program's maximum, and with ``vfork``/``posix_spawn`` (what
:mod:`subprocess` uses) that address space is the parent's. A child's
reported peak is therefore at least the parent's peak RSS at spawn time.
Benchmarks that measure memory in children must keep the parent light (no
numpy, no data) and can report :func:`child_rss_floor` to show the floor.
"""

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import NamedTuple, Optional

__all__ = [
    "ChildResult",
    "run_child",
    "child_rss_floor",
    "self_peak_rss_bytes",
    "crfsuite_seconds_per_evaluation",
    "median_call_seconds",
]


# -- child processes and memory ------------------------------------------------


def _maxrss_bytes(ru_maxrss):
    # Linux reports KiB, macOS bytes.
    return ru_maxrss if sys.platform == "darwin" else ru_maxrss * 1024


def self_peak_rss_bytes():
    """Peak resident set size of the calling process, in bytes."""
    return _maxrss_bytes(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


class ChildResult(NamedTuple):
    """Outcome of :func:`run_child`.

    ``peak_rss_bytes`` is the child's ``ru_maxrss`` as reported by ``wait4``
    (see the module docstring for the floor it inherits from the parent);
    ``wall_s`` is the time from spawn to exit.
    """

    returncode: int
    stdout: str
    stderr: str
    wall_s: float
    peak_rss_bytes: Optional[int]


def run_child(cmd, env=None, cwd=None, timeout=None):
    """Run ``cmd`` to completion; return its output, wall time and peak RSS.

    Unlike ``subprocess.run``, the child is reaped with ``os.wait4`` so that
    its own resource usage (not that of every child so far) is known.

    Parameters
    ----------
    cmd : list of str
    env : dict or None
        The child's whole environment (None: inherit).
    cwd : str or None
    timeout : float or None
        Seconds; on expiry the child is killed and ``subprocess.TimeoutExpired``
        raised.

    Returns
    -------
    ChildResult
    """
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            cwd=cwd)
    chunks = {"out": b"", "err": b""}

    def drain(stream, key):
        chunks[key] = stream.read()

    readers = [threading.Thread(target=drain, args=(proc.stdout, "out"), daemon=True),
               threading.Thread(target=drain, args=(proc.stderr, "err"), daemon=True)]
    for r in readers:
        r.start()
    peak = None
    try:
        if timeout is None or not hasattr(os, "wait4"):
            if hasattr(os, "wait4"):
                _, status, usage = os.wait4(proc.pid, 0)
                proc.returncode = os.waitstatus_to_exitcode(status)
                peak = _maxrss_bytes(usage.ru_maxrss)
            else:
                proc.wait(timeout)
        else:
            deadline = started + timeout
            while True:
                pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    proc.returncode = os.waitstatus_to_exitcode(status)
                    peak = _maxrss_bytes(usage.ru_maxrss)
                    break
                if time.perf_counter() > deadline:
                    proc.kill()
                    proc.wait()
                    raise subprocess.TimeoutExpired(cmd, timeout)
                time.sleep(0.05)
    finally:
        for r in readers:
            r.join()
        proc.stdout.close()
        proc.stderr.close()
    wall = time.perf_counter() - started
    return ChildResult(proc.returncode, chunks["out"].decode("utf-8", "replace"),
                       chunks["err"].decode("utf-8", "replace"), wall, peak)


def child_rss_floor(python=None):
    """Peak RSS (bytes) that a bare ``python -c pass`` child reports from here.

    The lower bound of any child's peak: the interpreter itself plus what it
    inherits from this process (module docstring).
    """
    code = ("import resource, sys; r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss; "
            "print(r if sys.platform == 'darwin' else r * 1024)")
    res = run_child([python or sys.executable, "-c", code])
    try:
        return int(res.stdout.strip())
    except ValueError:
        return res.peak_rss_bytes


# -- per-evaluation timing ------------------------------------------------------


def crfsuite_seconds_per_evaluation(X, y, iterations):
    """CRFsuite's training time over its evaluation count: L-BFGS, ``iterations``
    iterations, c2 = 1, c1 = 0, all label transitions (imports pycrfsuite here,
    so that importing this module stays cheap)."""
    import pycrfsuite

    trainer = pycrfsuite.Trainer(verbose=False)
    for x, labels in zip(X, y):
        trainer.append(x, labels)
    trainer.set_params({"c1": 0.0, "c2": 1.0, "max_iterations": iterations,
                        "feature.possible_transitions": True})
    with tempfile.TemporaryDirectory() as tmp:
        trainer.train(os.path.join(tmp, "m"))
    log = trainer.logparser
    evaluations = 1 + sum(it.get("linesearch_trials") or 0 for it in log.iterations)
    return log.training_seconds / evaluations


def median_call_seconds(term, weights, out=None, calls=5):
    """Median wall time of ``calls`` calls of ``term.value_and_gradient(weights, out=out)``."""
    times = []
    for _ in range(calls):
        t = time.perf_counter()
        term.value_and_gradient(weights, out=out)
        times.append(time.perf_counter() - t)
    return statistics.median(times)
