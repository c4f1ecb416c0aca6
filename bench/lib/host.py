"""Shared helpers for the benchmarks in this directory.

- :func:`machine_info` / :func:`machine_line`: CPU model, core counts, load,
  date, git commit, Python and library versions, for the header of every
  benchmark report.
- :func:`run_child`: run a command in a child process and get its output,
  wall time and peak resident memory (``ru_maxrss`` from ``wait4``).
- :func:`self_peak_rss_bytes`: the calling process's own peak RSS.
- :func:`median`, :func:`ratio`, :func:`fmt_ratio`, :func:`fmt_num`,
  :func:`fmt_mb`, :func:`markdown_table`, :func:`verdict`: formatting.

This module imports only the standard library, so that a parent process
that launches measured children stays small.

Peak memory caveat (Linux): a process's ``ru_maxrss`` survives ``execve``:
the kernel folds the high-water RSS of the address space being replaced
into the new program's maximum, and with ``vfork``/``posix_spawn`` (what
:mod:`subprocess` uses) that address space is the parent's. A child's
reported peak is therefore at least the parent's peak RSS at spawn time.
Benchmarks that measure memory in children must keep the parent light (no
numpy, no data) and can report :func:`child_rss_floor` to show the floor.
"""

import datetime
import os
import platform
import resource
import statistics
import subprocess
import sys
import threading
import time
from typing import NamedTuple, Optional

__all__ = [
    "REPO_ROOT",
    "machine_info",
    "machine_line",
    "git_commit",
    "ChildResult",
    "run_child",
    "child_rss_floor",
    "self_peak_rss_bytes",
    "median",
    "ratio",
    "fmt_ratio",
    "fmt_num",
    "fmt_mb",
    "markdown_table",
    "verdict",
]

#: The repository root (the directory above ``bench/``).
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# -- machine description ------------------------------------------------------


def _cpu_model():
    """CPU model name from /proc/cpuinfo (falls back to platform.processor())."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, sep, value = line.partition(":")
                if sep and key.strip() in ("model name", "Model", "cpu model", "Processor"):
                    value = " ".join(value.split())
                    if value:
                        return value
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def _physical_cores():
    """Distinct (physical id, core id) pairs in /proc/cpuinfo, or None."""
    try:
        cores, phys = set(), None
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "physical id":
                    phys = value.strip()
                elif key == "core id":
                    cores.add((phys, value.strip()))
        return len(cores) or None
    except OSError:
        return None


def _git(*args):
    try:
        out = subprocess.run(
            ["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def git_commit():
    """Short commit of the repository, with ``+dirty`` when tracked files are modified.

    Returns
    -------
    str
        e.g. ``"909771f"`` or ``"909771f+dirty"``, or ``"unknown"`` outside
        git. The environment variable ``SSCRF_BENCH_COMMIT`` overrides it, for
        a copy of the tree whose ``.git`` is missing or stale (as on a lent
        machine).
    """
    if os.environ.get("SSCRF_BENCH_COMMIT"):
        return os.environ["SSCRF_BENCH_COMMIT"]
    commit = _git("rev-parse", "--short", "HEAD")
    if not commit:
        return "unknown"
    status = _git("status", "--porcelain", "--untracked-files=no")
    return commit + ("+dirty" if status else "")


def machine_info():
    """A dict describing the machine and the code under test.

    Keys: ``cpu``, ``logical_cpus``, ``physical_cores`` (None when unknown),
    ``usable_cpus`` (the scheduler affinity mask), ``load_average`` (1, 5,
    15 min, or None), ``date`` (UTC, ISO 8601), ``commit``, ``python``,
    ``platform``.
    """
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count()
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        load = None
    return {
        "cpu": _cpu_model(),
        "logical_cpus": os.cpu_count(),
        "physical_cores": _physical_cores(),
        "usable_cpus": usable,
        "load_average": load,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": git_commit(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def machine_line(info=None):
    """One line for a report: CPU, cores, load, date, commit, Python."""
    info = machine_info() if info is None else info
    cores = f"{info['logical_cpus']} logical CPUs"
    if info.get("physical_cores"):
        cores += f" / {info['physical_cores']} cores"
    if info.get("usable_cpus") not in (None, info["logical_cpus"]):
        cores += f" ({info['usable_cpus']} usable)"
    load = info.get("load_average")
    load_text = f", load {load[0]:.2f}" if load else ""
    return (f"Machine: {info['cpu']}, {cores}{load_text}; {info['date']}; "
            f"commit {info['commit']}; Python {info['python']}")


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
    import tempfile

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


# -- statistics and formatting -------------------------------------------------


def median(values):
    """Median of the non-None values, or None when there are none."""
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def ratio(value, reference):
    """``value / reference``, or None when either is missing or the reference is 0."""
    if value is None or reference is None or reference == 0:
        return None
    return value / reference


def fmt_ratio(x, digits=2):
    """``"0.87x"``; ``"—"`` for None."""
    return "—" if x is None else f"{x:.{digits}f}x"


def fmt_num(x, digits=3):
    """A float with ``digits`` significant decimals (ints unchanged); ``"—"`` for None."""
    if x is None:
        return "—"
    if isinstance(x, int) and not isinstance(x, bool):
        return f"{x:,}"
    if x != 0 and abs(x) < 10 ** -(digits - 1):
        return f"{x:.{digits}g}"
    return f"{x:.{digits}f}"


def fmt_mb(n_bytes):
    """Bytes as decimal megabytes, e.g. ``"512.3"``; ``"—"`` for None."""
    return "—" if n_bytes is None else f"{n_bytes / 1e6:.1f}"


def markdown_table(headers, rows, align=None):
    """A GitHub-flavoured Markdown table.

    Parameters
    ----------
    headers : list of str
    rows : list of list
        Cells are converted with ``str``.
    align : str or None
        One character per column, ``"l"`` or ``"r"``; default: first column
        left, the rest right.
    """
    align = align or "l" + "r" * (len(headers) - 1)
    cells = [[str(c) for c in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]

    def line(row):
        parts = [c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(row, widths, align)]
        return "| " + " | ".join(parts) + " |"

    rule = "|" + "|".join(
        ("-" * (w + 1) + ":") if a == "r" else (":" + "-" * (w + 1))
        for w, a in zip(widths, align)) + "|"
    return "\n".join([line(headers), rule] + [line(r) for r in cells])


def verdict(ok):
    """``"PASS"``, ``"FAIL"``, or ``"N/A"`` for None."""
    return "N/A" if ok is None else ("PASS" if ok else "FAIL")
