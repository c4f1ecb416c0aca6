"""The machine and the code under test, for the header of every benchmark report.

- :data:`REPO_ROOT`, :data:`DATA_ROOT`: the repository and the shared corpora
  beside it (``../shared/data``).
- :func:`machine_info` / :func:`machine_line`: CPU model, core counts, load,
  date, git commit, Python version.
- :func:`default_threads` / :func:`parse_threads` / :func:`thread_counts`:
  the thread counts a benchmark measures.

Standard library only, so that a parent process that launches measured
children stays small (see :mod:`bench.lib.timing`).
"""

import argparse
import datetime
import os
import platform
import subprocess

__all__ = [
    "REPO_ROOT",
    "DATA_ROOT",
    "machine_info",
    "machine_line",
    "git_commit",
    "usable_cpus",
    "default_threads",
    "parse_threads",
    "thread_counts",
]

#: The repository root (the directory above ``bench/``).
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

#: The shared corpora: ``../shared/data`` beside the repository.
DATA_ROOT = os.path.join(os.path.dirname(REPO_ROOT), "shared", "data")


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




# -- thread counts -------------------------------------------------------------


def usable_cpus():
    """The CPUs this process may run on (a container or taskset may allow fewer)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def default_threads():
    """1, 2, ... up to the usable CPUs; powers of two beyond 4, then every CPU."""
    n = usable_cpus()
    if n <= 4:
        return list(range(1, n + 1))
    ths, k = [1], 2
    while k < n:
        ths.append(k)
        k *= 2
    return ths + [n]


def parse_threads(text):
    """``"1,2,4"`` -> ``[1, 2, 4]`` (sorted, distinct); an argparse ``type=``."""
    out = sorted({int(x) for x in text.split(",") if x.strip()})
    if not out or out[0] < 1:
        raise argparse.ArgumentTypeError("--threads: positive integers, e.g. 1,2")
    return out


def thread_counts(requested):
    """The counts to measure: ``requested`` (or :func:`default_threads`), 1 always first
    among them, since every speed-up is relative to one thread."""
    counts = list(requested or default_threads())
    return counts if 1 in counts else [1] + counts
