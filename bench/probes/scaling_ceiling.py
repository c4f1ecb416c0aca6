"""How far thread scaling can go on this machine: k independent processes against k threads.

Parallel efficiency below 100% has two kinds of cause: the program (serial
parts, load imbalance, threads writing each other's cache lines) and the
machine (cores that share memory bandwidth, caches, a clock that drops as
more cores run, virtual CPUs that are hyperthreads of one physical core).
This benchmark separates them. For each k it runs k independent processes,
each evaluating one term at 1 thread on its own copy of the data, all at
once: nothing is shared but the machine, so their slow-down against one
process alone is the machine's ceiling for k threads. Right after, the
parent evaluates the same term with k OpenMP threads. Reported per term and
k: the ceiling (time alone / median time of the k processes), the OpenMP
efficiency (time at 1 thread / k / time at k threads) and the part of the
ceiling that OpenMP reaches. The whole is repeated in rounds, each ratio
taken within its round and reported as the median over rounds (with the
ceiling's range): the speed of a core on a shared host drifts from minute
to minute.

The pseudo-term ``in_core`` separates the clock from memory: each process
runs the same vector arithmetic on arrays that fit its core's own L2
cache, touching neither the shared cache nor memory, so its ceiling is
what the clock (and anything else a core shares) leaves; a term's ceiling
below that is memory. It has no threaded version.

Data: CoNLL-2000 train, CRFsuite tutorial attributes, the dense layout and
random weights of the suite's scaling item (bench/suite/scaling.py, item 2).

    python bench/probes/scaling_ceiling.py [--terms in_core,likelihood,entropy] [--counts 1,2,4,8,16]
        [--evaluations 8] [--rounds 3] [--data DIR] [--json FILE]
"""

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))  # the repository root, for bench.lib

from bench.lib import host, tables, timing  # noqa: E402
from bench.lib.corpora import CONLL2000, load_conll2000  # noqa: E402

TERMS = ("in_core", "likelihood", "entropy", "partial_likelihood")


class InCore:
    """Vector multiply-adds over three 32 KiB arrays, as long as a likelihood
    evaluation at 1 thread takes (about 0.1 s): work that stays in one core's L2."""

    def __init__(self, rounds=40000):
        import numpy as np

        self.a = np.linspace(0.5, 1.5, 4096)
        self.b = np.linspace(1.5, 0.5, 4096)
        self.c = np.zeros(4096)
        self.rounds = rounds

    def value_and_gradient(self, theta=None, out=None):
        import numpy as np

        a, b, c = self.a, self.b, self.c
        for _ in range(self.rounds):
            np.multiply(a, b, out=c)
            np.add(c, a, out=c)
        return float(c[0])


def prepare(data_dir, path):
    """Extract the features once and save what a process needs to rebuild the terms."""
    import numpy as np

    features, y, S = load_conll2000(data_dir)
    np.savez(path, indptr=features.indptr, indices=features.indices,
             values=np.asarray(features.values), offsets=features.offsets,
             n_attributes=features.n_attributes, y=y, S=S)
    return features.n_tokens


def build_term(path, name, n_threads):
    """(term, theta) rebuilt from the saved arrays, as the suite's scaling item builds it."""
    import numpy as np
    from sscrf import _core
    from sscrf.objectives import OBJECTIVES

    from bench.lib import workloads
    from sscrf.layout import ParameterLayout

    if name == "in_core":
        return InCore(), None
    d = np.load(path)
    S, A = int(d["S"]), int(d["n_attributes"])
    layout = ParameterLayout.every_pair(A, S).core
    theta = 0.1 * np.random.default_rng(0).standard_normal(layout.n_parameters)
    args = (d["indptr"], d["indices"], d["values"], d["offsets"], A)
    if name == "likelihood":
        corpus = _core.Corpus(*args, d["y"], None, None)
        return OBJECTIVES["likelihood"](corpus, layout, n_threads), theta
    if name == "entropy":
        corpus = _core.Corpus(*args, None, None, None)
        return OBJECTIVES["entropy"](corpus, layout, n_threads, method="fast"), theta
    mask, _ = workloads.partial_mask(d["y"], S, np.random.default_rng(1))  # as the suite's
    corpus = _core.Corpus(*args, None, None, mask)
    return OBJECTIVES["partial_likelihood"](corpus, layout, n_threads), theta


def time_evaluations(term, theta, n):
    """Median seconds of n evaluations, after one warm-up."""
    import numpy as np

    gradient = None if theta is None else np.empty_like(theta)
    term.value_and_gradient(theta, out=gradient)
    return timing.median_call_seconds(term, theta, out=gradient, calls=n)


def child(path, name, n, barrier, results):
    term, theta = build_term(path, name, 1)
    term.value_and_gradient(theta)
    barrier.wait()  # every process starts timing together
    results.put(time_evaluations(term, theta, n))


def independent(ctx, path, name, k, n):
    """Median over k simultaneous 1-thread processes of their median evaluation time."""
    barrier, results = ctx.Barrier(k), ctx.Queue()
    procs = [ctx.Process(target=child, args=(path, name, n, barrier, results))
             for _ in range(k)]
    for p in procs:
        p.start()
    times = [results.get() for _ in procs]
    for p in procs:
        p.join()
        if p.exitcode != 0:
            raise RuntimeError(f"a {name} process failed (exit code {p.exitcode})")
    return statistics.median(times)


def spread(ratios):
    return f"{min(ratios):.0%}-{max(ratios):.0%}" if len(ratios) > 1 else "—"


def cell(value, spec):
    return "—" if value is None else format(value, spec)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=CONLL2000)
    ap.add_argument("--terms", default="in_core,likelihood,entropy",
                    help=f"comma-separated, from {', '.join(TERMS)} "
                         "(default in_core,likelihood,entropy)")
    ap.add_argument("--counts", type=host.parse_threads, default=None,
                    help="process / thread counts (default: the suite's thread counts)")
    ap.add_argument("--evaluations", type=int, default=8,
                    help="timed evaluations per process and per thread count (default 8)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="rounds of the whole measurement; medians over them (default 3)")
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args(argv)
    terms = args.terms.split(",")
    for name in terms:
        if name not in TERMS:
            ap.error(f"unknown term {name!r}; choose from {', '.join(TERMS)}")
    if args.evaluations < 1 or args.rounds < 1:
        ap.error("--evaluations and --rounds must be at least 1")
    counts = host.thread_counts(args.counts)

    ctx = multiprocessing.get_context("spawn")  # no fork of a process that ran OpenMP
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "conll2000.npz")
        n_tokens = prepare(args.data, path)
        for name in terms:
            threads = name != "in_core"
            term_threads = ({k: build_term(path, name, k) for k in counts} if threads else {})
            samples = {k: [] for k in counts}
            for r in range(args.rounds):
                # A round times everything once, the lone process first: on a
                # shared host the speed of one core drifts from minute to minute.
                alone = independent(ctx, path, name, 1, args.evaluations)
                one_thread = (time_evaluations(*term_threads[1], args.evaluations)
                              if threads else None)
                for k in counts:
                    each = independent(ctx, path, name, k, args.evaluations) if k > 1 else alone
                    sample = {"alone_s": alone, "each_of_k_s": each, "ceiling": alone / each,
                              "one_thread_s": one_thread, "k_threads_s": None,
                              "efficiency": None, "share_of_ceiling": None}
                    if threads:
                        threaded = (time_evaluations(*term_threads[k], args.evaluations)
                                    if k > 1 else one_thread)
                        efficiency = one_thread / k / threaded
                        sample.update(k_threads_s=threaded, efficiency=efficiency,
                                      share_of_ceiling=efficiency / sample["ceiling"])
                    samples[k].append(sample)
                    openmp = f", OpenMP {sample['efficiency']:.0%}" if threads else ""
                    print(f"[{time.strftime('%H:%M:%S')}] {name} round {r + 1} k={k}: "
                          f"ceiling {sample['ceiling']:.0%}{openmp}", file=sys.stderr, flush=True)
            for k in counts:
                row = {"term": name, "k": k, "rounds": samples[k]}
                for key in samples[k][0]:
                    row[key] = tables.median([sample[key] for sample in samples[k]])
                row["ceiling_range"] = spread([sample["ceiling"] for sample in samples[k]])
                rows.append(row)
            del term_threads

    print(host.machine_line())
    print(f"CoNLL-2000 train, {n_tokens:,} tokens, dense layout; medians of "
          f"{args.evaluations} evaluations per process, then of {args.rounds} rounds "
          "(times, and ratios taken within each round)")
    print(tables.markdown_table(
        ["term", "k", "1 process alone, s", "each of k processes, s", "ceiling", "ceiling, rounds",
         "1 thread, s", "k threads, s", "OpenMP efficiency", "of the ceiling"],
        [[r["term"], r["k"], f"{r['alone_s']:.4f}", f"{r['each_of_k_s']:.4f}",
          f"{r['ceiling']:.0%}", r["ceiling_range"], cell(r["one_thread_s"], ".4f"),
          cell(r["k_threads_s"], ".4f"), cell(r["efficiency"], ".0%"),
          cell(r["share_of_ceiling"], ".0%")] for r in rows]))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"machine": host.machine_info(), "n_tokens": n_tokens,
                       "evaluations": args.evaluations, "rounds": args.rounds, "rows": rows},
                      f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
