#!/usr/bin/env python
"""Template extraction throughput (numpy reference vs the core) and end-to-end training.

``extraction`` (in this process)
    CoNLL-2000 ``train.txt`` read once with ``sscrf.io.read_conll``, then,
    with the default templates (``default_templates(2)``: CRF++'s 19
    CoNLL-2000 templates), ``FeatureExtractor.fit_transform`` and
    ``transform`` by

    - ``python``: the numpy path (``Templates.apply``, factorised keys and
      one string per distinct attribute; what the extractor ran before
      extraction moved into the core);
    - ``core-1`` / ``core-2``: the core (``Templates.expand``) at 1 and 2
      threads.

    Every method gives the same attributes, ids and CSR (asserted). Rounds
    rotate the order; every sample runs after ``gc.collect()``. Reports the
    median wall time and tokens per second, the median CPU time of the
    one-thread methods (less sensitive to a shared machine), and ratios of
    medians against ``python``.

``processes`` (child processes)
    The core at 1 thread and at ``--threads``, each child process running
    one of them (children alternate, ``--processes`` of each): the
    process's first ``fit_transform`` and ``transform`` (what a user's one
    call per process pays, page faults of fresh memory included), then
    ``--repeats`` more rounds, whose medians are the steady state the
    ``extraction`` part measures. Reports medians over processes and the
    ratio of each consecutive pair of children (1 thread / more), with its
    range: layout and allocator state differ between processes, so a
    ratio taken within one process can sit at either end of that range.

``train`` (child processes)
    ``sscrf train`` on ``train.txt`` (default templates, 100 iterations,
    ``--threads``) against python-crfsuite on the same file in one process:
    read the rows, build the attribute lists of CRFsuite's chunking example
    (``bench/lib/features_conll2000.py``), ``Trainer.append``, train 100
    L-BFGS iterations with c2 = 1 and every label transition, write the
    model. Wall time from process start to exit; rounds alternate.

``phases`` (child processes)
    Where ``sscrf train``'s time goes (the same command as ``train``, run by
    ``sscrf.cli.main`` in a child whose functions are wrapped in timers):
    imports, reading TRAIN, the fit (of which the likelihood's core calls,
    the rest of the optimiser, and what precedes it: extraction, layout),
    writing the model. Medians over ``--train-repeats`` processes; the
    likelihood's share bounds the end-to-end ratio from below.

Usage::

    python bench/probes/extraction.py [--part extraction,processes,train,phases] [--data DIR]
        [--repeats 5] [--processes 10] [--train-repeats 2] [--threads 2] [--json OUT]
"""

import argparse
import gc
import json
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)  # bench.lib
sys.path.insert(0, os.path.join(ROOT, "python"))
from bench.lib import host  # noqa: E402
from bench.lib.host import machine_line  # noqa: E402
from bench.lib.timing import run_child  # noqa: E402

DEFAULT_DATA = os.path.join(host.DATA_ROOT, "conll2000")

CRFSUITE = """
import sys
sys.path.insert(0, sys.argv[1])
import pycrfsuite
from bench.lib.features_conll2000 import crfsuite_tokens
path, model, iterations = sys.argv[2], sys.argv[3], int(sys.argv[4])
trainer = pycrfsuite.Trainer(verbose=False)
rows, labels = [], []
with open(path, encoding="utf-8") as f:
    for line in list(f) + [""]:
        cells = line.split()
        if cells:
            rows.append(tuple(cells[:-1]))
            labels.append(cells[-1])
        elif rows:
            trainer.append(crfsuite_tokens(rows), labels)
            rows, labels = [], []
trainer.set_params({"c1": 0.0, "c2": 1.0, "max_iterations": iterations,
                    "feature.possible_transitions": True})
trainer.train(model)
"""


def extraction(args):
    import numpy as np

    from sscrf.features import FeatureExtractor, default_templates
    from sscrf.io import read_conll

    X = read_conll(os.path.join(args.data, "train.txt")).tokens
    n_tokens = sum(map(len, X))
    templates = default_templates(2)
    threads = args.threads

    def make(method):
        if method == "python":
            fx = FeatureExtractor(templates)
            fx._compiled_templates = False
        else:
            fx = FeatureExtractor(templates, n_threads=int(method.split("-")[1]))
        return fx

    methods = ["python", "core-1", f"core-{threads}"]
    wall = {(m, op): [] for m in methods for op in ("fit_transform", "transform")}
    cpu = {k: [] for k in wall}
    outputs = {}
    for r in range(args.repeats):
        for m in methods[r % len(methods):] + methods[:r % len(methods)]:
            fx = make(m)
            gc.collect()
            w, c = time.perf_counter(), time.process_time()
            (f,) = fx.fit_transform(X)
            wall[m, "fit_transform"].append(time.perf_counter() - w)
            cpu[m, "fit_transform"].append(time.process_time() - c)
            gc.collect()
            w, c = time.perf_counter(), time.process_time()
            g = fx.transform(X)
            wall[m, "transform"].append(time.perf_counter() - w)
            cpu[m, "transform"].append(time.process_time() - c)
            if m not in outputs:
                outputs[m] = (fx.attributes_, f, g)
            del fx, f, g
    ref = outputs["python"]
    for m in methods[1:]:
        got = outputs[m]
        assert got[0] == ref[0], f"{m}: attributes differ"
        for a, b in zip(got[1:], ref[1:]):
            for name in ("indptr", "indices", "offsets"):
                assert np.array_equal(getattr(a, name), getattr(b, name)), (m, name)
            assert np.array_equal(np.asarray(a.values), np.asarray(b.values)), m
    med = {k: statistics.median(v) for k, v in wall.items()}
    cmed = {k: statistics.median(v) for k, v in cpu.items()}
    print(f"\n## Template extraction, CoNLL-2000 train ({n_tokens:,} tokens, "
          f"{len(templates)} default templates, {len(ref[0]):,} attributes)\n")
    print(f"{args.repeats} rounds, rotating order, medians; same attributes, ids and CSR "
          "asserted.\n")
    print("| operation | method | wall s | tokens/s | vs python (wall) | CPU s | "
          "vs python (CPU) |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for op in ("fit_transform", "transform"):
        for m in methods:
            k = (m, op)
            cpu_cell = f"{cmed[k]:.3f}" if m != f"core-{threads}" or threads == 1 else "-"
            cpu_ratio = (f"{cmed['python', op] / cmed[k]:.2f}x"
                         if m != f"core-{threads}" or threads == 1 else "-")
            print(f"| {op} | {m} | {med[k]:.3f} | {n_tokens / med[k]:,.0f} | "
                  f"{med['python', op] / med[k]:.2f}x | {cpu_cell} | {cpu_ratio} |")
    for op in ("fit_transform", "transform"):
        # a round runs each method once, seconds apart: the spread of the
        # rounds' ratios shows how far one run's figure can move
        paired = sorted(a / b for a, b in zip(wall["core-1", op], wall[f"core-{threads}", op]))
        print(f"\n{op}: core {threads} threads vs 1 thread: "
              f"{med['core-1', op] / med[f'core-{threads}', op]:.2f}x (wall; per round "
              f"{statistics.median(paired):.2f}x, from {paired[0]:.2f}x to {paired[-1]:.2f}x)")
    return {"n_tokens": n_tokens, "wall": {f"{m}/{op}": v for (m, op), v in wall.items()},
            "cpu": {f"{m}/{op}": v for (m, op), v in cpu.items()}}


PROCESS_CHILD = """
import gc, json, statistics, sys, time
sys.path.insert(0, sys.argv[1])
from sscrf.features import FeatureExtractor, default_templates
from sscrf.io import read_conll
X = read_conll(sys.argv[2]).tokens
threads, repeats = int(sys.argv[3]), int(sys.argv[4])
times = {"fit_transform": [], "transform": []}
for _ in range(1 + repeats):
    fx = FeatureExtractor(default_templates(2), n_threads=threads)
    gc.collect()
    t = time.perf_counter()
    fx.fit_transform(X)
    times["fit_transform"].append(time.perf_counter() - t)
    gc.collect()
    t = time.perf_counter()
    fx.transform(X)
    times["transform"].append(time.perf_counter() - t)
    del fx
print(json.dumps({op: [v[0], statistics.median(v[1:])] for op, v in times.items()}))
"""


def processes(args):
    if args.threads < 2:
        raise SystemExit("--part processes compares 1 thread with --threads: give 2 or more")
    path = os.path.join(args.data, "train.txt")
    counts = (1, args.threads)
    runs = {t: [] for t in counts}
    for p in range(args.processes):
        for t in (counts if p % 2 == 0 else counts[::-1]):
            result = run_child([sys.executable, "-c", PROCESS_CHILD, os.path.join(ROOT, "python"),
                                path, str(t), str(args.repeats)])
            if result.returncode != 0:
                raise SystemExit(f"child at {t} threads failed:\n{result.stderr}")
            runs[t].append(json.loads(result.stdout))
    print("\n## Template extraction in fresh processes (CoNLL-2000 train, the core)\n")
    print(f"{args.processes} child processes at each thread count, alternating; each: "
          f"its first call, then the median of {args.repeats} more.\n")
    print(f"| operation | call | 1 thread ms | {args.threads} threads ms | ratio of medians | "
          "ratio per pair of processes (range) |")
    print("| --- | --- | ---: | ---: | ---: | --- |")
    for op in ("fit_transform", "transform"):
        for i, call in enumerate(("first", "steady")):
            one = [r[op][i] for r in runs[1]]
            more = [r[op][i] for r in runs[args.threads]]
            paired = sorted(a / b for a, b in zip(one, more))
            print(f"| {op} | {call} | {1000 * statistics.median(one):.1f} | "
                  f"{1000 * statistics.median(more):.1f} | "
                  f"{statistics.median(one) / statistics.median(more):.2f}x | "
                  f"{statistics.median(paired):.2f}x ({paired[0]:.2f}x to {paired[-1]:.2f}x) |")
    return {str(t): v for t, v in runs.items()}


PHASES = """
import json, sys, time
started = time.perf_counter()
sys.path.insert(0, sys.argv[1])
from sscrf import _core, training
from sscrf.cli import main, train
from sscrf.model import CRF
spent = {}
def timed(owner, name, phase):
    inner = getattr(owner, name)
    def wrapper(*args, **kwargs):
        t = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[phase] = spent.get(phase, 0.0) + time.perf_counter() - t
    setattr(owner, name, wrapper)
for owner, name, phase in ((train, "read_labeled", "read"), (train, "_fit", "fit"),
                           (training, "_optimise", "optimiser"),
                           (_core, "likelihood", "likelihood"), (CRF, "save", "write")):
    timed(owner, name, phase)
imported = time.perf_counter()
code = main(sys.argv[2:])
spent.update(imports=imported - started, main=time.perf_counter() - imported, code=code)
print(json.dumps(spent))
"""


def phases(args):
    path = os.path.join(args.data, "train.txt")
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        command = [sys.executable, "-c", PHASES, os.path.join(ROOT, "python"), "train", "-q",
                   "-m", os.path.join(tmp, "m.sscrf"), "--max-iterations", str(args.iterations),
                   "--threads", str(args.threads), path]
        for _ in range(args.train_repeats):
            result = run_child(command)
            if result.returncode != 0:
                raise SystemExit(f"sscrf train failed:\n{result.stderr}")
            spent = json.loads(result.stdout.strip().splitlines()[-1])
            spent["process"] = result.wall_s
            runs.append(spent)
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0] if k != "code"}
    rows = [("process, start to exit", med["process"]),
            ("interpreter start (process less imports and main)",
             med["process"] - med["imports"] - med["main"]),
            ("imports", med["imports"]), ("reading TRAIN", med["read"]), ("fit", med["fit"]),
            ("  before the optimiser (extraction, layout, terms)", med["fit"] - med["optimiser"]),
            ("  likelihood (the core's calls)", med["likelihood"]),
            ("  the rest of the optimiser", med["optimiser"] - med["likelihood"]),
            ("writing the model", med["write"]),
            ("the rest of the command",
             med["main"] - med["read"] - med["fit"] - med["write"])]
    print(f"\n## Where sscrf train's time goes (CoNLL-2000 train, {args.iterations} iterations, "
          f"--threads {args.threads})\n")
    print(f"{args.train_repeats} child processes, medians.\n")
    print("| phase | s | share |")
    print("| --- | ---: | ---: |")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.3f} | {seconds / med['process']:.0%} |")
    return runs


def train(args):
    path = os.path.join(args.data, "train.txt")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    times = {"sscrf": [], "crfsuite": []}
    with tempfile.TemporaryDirectory() as tmp:
        commands = {
            "sscrf": [sys.executable, "-m", "sscrf", "train", "-q", "-m",
                      os.path.join(tmp, "m.sscrf"), "--max-iterations", str(args.iterations),
                      "--threads", str(args.threads), path],
            "crfsuite": [sys.executable, "-c", CRFSUITE, ROOT, path,
                         os.path.join(tmp, "m.crfsuite"), str(args.iterations)],
        }
        for r in range(args.train_repeats):
            for name in (["sscrf", "crfsuite"] if r % 2 == 0 else ["crfsuite", "sscrf"]):
                result = run_child(commands[name], env=env)
                if result.returncode != 0:
                    raise SystemExit(f"{name} failed:\n{result.stderr}")
                times[name].append(result.wall_s)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"\n## End to end: read, extract, train {args.iterations} iterations, write "
          f"(CoNLL-2000 train)\n")
    print(f"{args.train_repeats} rounds, alternating; wall time of each child process.\n")
    print("| tool | median s | all |")
    print("| --- | ---: | --- |")
    for k in ("sscrf", "crfsuite"):
        print(f"| {k}{' --threads ' + str(args.threads) if k == 'sscrf' else ''} | "
              f"{med[k]:.2f} | {', '.join(f'{t:.2f}' for t in times[k])} |")
    print(f"\nsscrf / crfsuite: {med['sscrf'] / med['crfsuite']:.3f}x")
    return times


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--part", default="extraction,train")
    p.add_argument("--data", default=DEFAULT_DATA)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--processes", type=int, default=10,
                   help="child processes per thread count for --part processes")
    p.add_argument("--train-repeats", type=int, default=2)
    p.add_argument("--iterations", type=int, default=100)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--json")
    args = p.parse_args()
    print(machine_line())
    print(f"load average at start: {os.getloadavg()[0]:.1f}")
    out = {}
    parts = args.part.split(",")
    if "extraction" in parts:
        out["extraction"] = extraction(args)
    if "processes" in parts:
        out["processes"] = processes(args)
    if "train" in parts:
        out["train"] = train(args)
    if "phases" in parts:
        out["phases"] = phases(args)
    print(f"\nload average at end: {os.getloadavg()[0]:.1f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
