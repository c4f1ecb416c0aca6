"""What a distributed evaluation costs beyond its compute, and what that gives on 16 and 64 workers.

Measured here, on a LocalCluster of worker processes (loopback network):

- ``one process``: seconds per evaluation of ``CRF.fit`` on the whole corpus
  at one thread (``training_["seconds"] / training_["evaluations"]``);
- ``cluster``: the same for :func:`sscrf.distributed.fit` on ``W`` shards
  and ``W`` workers of one thread each, and on ``4·W`` shards (one task per
  worker either way: the overhead must not grow with the shards);
- ``overhead = cluster − one process / W``: scheduling, sending θ, and
  the tree's gradient moves;
- ``task``: the round trip of a trivial task; ``move(P)``: adding two
  P-vectors held on different workers (one gradient move of the tree).

Then a weak-scaling projection (each worker keeps its shard, the workers
grow) for 0.5M, 7.5M and 40M parameters:

    T(W) = compute + 2·task·⌈log2 W⌉ + (1 + ⌈log2 W⌉) · (8·P / bandwidth + latency)

θ goes client → one worker → the rest (dask copies it between workers as
tasks need it; counted as a tree of the same depth as the reduction), and
the reduction is ⌈log2 W⌉ levels of one gradient move each. The bandwidth
and latency are stated in the output (defaults: 10 Gbit/s, 0.2 ms, a
datacenter network), not measured: the loopback here is not a network.

    python bench/probes/dask_overhead.py [--iterations 10] [--workers 2]
"""

import argparse
import math
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

import distributed  # noqa: E402

import sscrf  # noqa: E402
from sscrf.distributed import ShardedCorpus, fit  # noqa: E402
from sscrf.distributed.shards import Partial, add_results  # noqa: E402
from sscrf.io import read_conll  # noqa: E402

DATA = Path("/work/shared/data/conll2000/train.txt")
#: Tokens per worker at which the overhead is judged (target: at most 10% of an evaluation).
SHARD_TOKENS = 10_000_000


def per_evaluation(model):
    return model.training_["seconds"] / model.training_["evaluations"]


def one_process(X, y, params, iterations):
    model = sscrf.CRF(max_iterations=iterations, n_threads=1, **params).fit(X, y)
    return per_evaluation(model), model.coef_.size


def on_cluster(client, X, y, params, iterations, n_shards):
    labeled = ShardedCorpus.from_sentences(client, X, y, n_shards=n_shards)
    model = fit(client, sscrf.CRF(max_iterations=iterations, n_threads=1, **params), labeled)
    return per_evaluation(model)


def task_round_trip(client, repeats=30):
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        client.submit(int, 1, pure=False).result()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def gradient_move(client, n, repeats=5):
    """Seconds to add two n-vectors held on two different workers (one moves)."""
    a_worker, b_worker = sorted(client.scheduler_info()["workers"])[:2]
    times = []
    for _ in range(repeats):
        a = client.scatter(Partial(0.0, np.ones(n)), workers=[a_worker], hash=False)
        b = client.scatter(Partial(0.0, np.ones(n)), workers=[b_worker], hash=False)
        distributed.wait([a, b])
        t = time.perf_counter()
        client.submit(add_results, a, b, workers=[a_worker], pure=False).result()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def project(compute, task, n_parameters, workers, bandwidth, latency):
    depth = math.ceil(math.log2(workers)) if workers > 1 else 0
    move = 8 * n_parameters / bandwidth + latency
    return compute + 2 * task * depth + (1 + depth) * move


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--bandwidth-gbit", type=float, default=10.0)
    parser.add_argument("--latency-ms", type=float, default=0.2)
    args = parser.parse_args()
    corpus = read_conll(DATA)
    X, y = corpus.tokens, corpus.labels
    tokens = sum(map(len, X))
    print(f"CoNLL-2000 train: {len(X)} sentences, {tokens} tokens; {args.workers} worker "
          f"processes x 1 thread on this machine; {args.iterations} iterations per fit")
    warnings.simplefilter("ignore")
    with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                                  host="127.0.0.1", dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        task = task_round_trip(client)
        print(f"task round trip: {task * 1e3:.2f} ms")
        rows = []
        for label, params in (("observed", {"templates": "default"}),
                              ("dense", {"templates": "default", "feature_set": "dense"})):
            single, n_parameters = one_process(X, y, params, args.iterations)
            cluster_time = on_cluster(client, X, y, params, args.iterations, args.workers)
            many_shards = on_cluster(client, X, y, params, args.iterations, 4 * args.workers)
            compute = single / args.workers
            move = gradient_move(client, n_parameters)
            rows.append((label, n_parameters, single, cluster_time, compute, move, many_shards))
        print("\n| model | parameters | one process s/eval | cluster s/eval | compute/W | "
              "overhead | overhead share | one gradient move (loopback) | "
              "cluster s/eval, 4 shards per worker |")
        print("|:--|--:|--:|--:|--:|--:|--:|--:|--:|")
        for label, n, single, cluster_time, compute, move, many_shards in rows:
            overhead = cluster_time - compute
            print(f"| {label} | {n:,} | {single:.3f} | {cluster_time:.3f} | {compute:.3f} | "
                  f"{overhead:.3f} | {overhead / cluster_time:.0%} | {move * 1e3:.1f} ms | "
                  f"{many_shards:.3f} |")
        bandwidth = args.bandwidth_gbit * 1e9 / 8
        latency = args.latency_ms * 1e-3
        print(f"\nWeak scaling, projected: each worker holds {SHARD_TOKENS:,} tokens, at the "
              "compute rate per token measured above (one thread; 'observed' for 0.5M, 'dense' "
              f"for 7.5M and 40M); network {args.bandwidth_gbit:g} Gbit/s and "
              f"{args.latency_ms:g} ms latency (assumed, not measured); task "
              f"{task * 1e3:.2f} ms (measured here, on a busy 2-core machine)")
        print("\n| parameters | workers | compute s | per-evaluation s | overhead share |")
        print("|--:|--:|--:|--:|--:|")
        for n, rate_row in ((500_000, rows[0]), (7_500_000, rows[1]), (40_000_000, rows[1])):
            compute = rate_row[2] / tokens * SHARD_TOKENS
            for workers in (16, 64):
                total = project(compute, task, n, workers, bandwidth, latency)
                print(f"| {n:,} | {workers} | {compute:.2f} | {total:.2f} | "
                      f"{(total - compute) / total:.1%} |")
        print("\nThe overhead measured above, next to a shard of "
              f"{SHARD_TOKENS:,} tokens: " + ", ".join(
                  f"{label} {(c - comp) / (c - comp + single / tokens * SHARD_TOKENS):.1%}"
                  for label, n, single, c, comp, _, _ in rows))


if __name__ == "__main__":
    main()
