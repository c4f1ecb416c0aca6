"""Running the suite's measuring children: progress lines, JSON results, the log.

Standard library only: the parent must stay small, since a child's peak
memory cannot be below the parent's (see :mod:`bench.lib.timing`).
"""

import json
import os
import shlex
import sys
import time

from bench.lib import host, timing

__all__ = ["log", "run_json_child"]


def log(message):
    """A time-stamped progress line on stderr."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def run_json_child(cmd, log_path, what, timeout=None, json_path=None):
    """Run a child; its stderr goes to the log; parse its JSON (file or last stdout line)."""
    log(f"{what}: {' '.join(shlex.quote(c) for c in cmd[1:])}")
    env = dict(os.environ)
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env.setdefault("MKL_NUM_THREADS", "1")
    res = timing.run_child(cmd, env=env, cwd=host.REPO_ROOT, timeout=timeout)
    with open(log_path, "a", encoding="utf-8") as f:
        f.write(f"\n===== {what} ({time.strftime('%Y-%m-%d %H:%M:%S')}; exit "
                f"{res.returncode}; {res.wall_s:.1f} s) =====\n$ {' '.join(cmd)}\n")
        f.write(res.stderr)
        if json_path is None or res.returncode != 0:
            f.write(res.stdout[-20000:])
    if res.returncode != 0:
        tail = "\n".join(res.stderr.strip().splitlines()[-15:])
        raise RuntimeError(f"{what} failed (exit {res.returncode}):\n{tail}")
    if json_path:
        with open(json_path, encoding="utf-8") as f:
            data = json.load(f)
    else:
        lines = [l for l in res.stdout.splitlines() if l.strip()]
        data = json.loads(lines[-1])
    data["_child_wall_s"] = res.wall_s
    return data
