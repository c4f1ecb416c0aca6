#!/usr/bin/env python
"""Time of L-BFGS's vector passes per iteration, and the memory traffic they move.

In dense mode (7.4M parameters on CoNLL-2000) the optimiser's passes over
parameter-sized vectors cost about as much as the loss and gradient
(README, "Where the time goes"). This script times each pass of one
iteration of :func:`sscrf.optimize.lbfgs` on random vectors of that size,
called as the optimiser calls them (``sscrf._core``), with a full history
of ``--memory`` float32 pairs:

- ``new pair + products``: the secant pair ``s = x⁺ − x``, ``y = g⁺ − g``
  written into the history, and in the same pass the dot products the next
  direction needs (the new pair and the gradient against the basis, ‖x‖²);
- ``products alone``: the same dot products without the secant pair;
- ``secant pair alone``;
- ``direction``: ``d = Σ_j δ_j b_j`` over the history and the gradient;
- ``trial point``: ``x + α·d``;
- ``g·d``: the line search's directional derivative.

Each pass's effective bandwidth counts the bytes it must read and write
once each (history entries 4 bytes, the others 8), not the lines a write
reads first. A sample is one call; rounds alternate the passes; medians.

    python bench/probes/optimiser_passes.py [--parameters 7385356] [--memory 6]
        [--threads 1,2] [--repeats 9] [--json OUT]
"""

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))  # the repository root, for bench.lib
from bench.lib import host, tables  # noqa: E402

DENSE_CONLL2000 = 7_385_356  # parameters of the dense CoNLL-2000 model


def passes(P, m, seed=0):
    """name -> (call(n_threads), bytes moved): the passes of one iteration with a
    full history."""
    from sscrf import _core

    rng = np.random.default_rng(seed)
    S = rng.standard_normal((m, P)).astype(np.float32)
    Y = rng.standard_normal((m, P)).astype(np.float32)
    x_old, trial, g, g_old, d = (rng.standard_normal(P) for _ in range(5))
    # As in optimize._Run.measure: the oldest pair's row takes the new pair,
    # the other m - 1 pairs are the basis.
    slot, old = 0, list(range(1, m))
    k = len(old)
    vectors = [S[r] for r in old] + [Y[r] for r in old]
    i_s, i_y = len(vectors), len(vectors) + 1
    vectors += [S[slot], Y[slot]]
    pairs = [(i_s, j) for j in range(k, 2 * k)] + [(i_y, j) for j in range(2 * k)]
    pairs += [(i_s, i_y), (i_y, i_y)]
    i_v = len(vectors)
    vectors += [g, trial]
    pairs += [(i_v, j) for j in range(i_v + 1)] + [(i_v + 1, i_v + 1)]
    pairs = np.array(pairs, dtype=np.int64)
    basis = [S[r] for r in range(m)] + [Y[r] for r in range(m)] + [g]
    coefficients = rng.standard_normal(len(basis))
    f4, f8 = 4 * P, 8 * P
    return {
        "new pair + products": (
            lambda n_threads: _core.secant_pair(x_old, trial, g, g_old, S[slot], Y[slot],
                                                n_threads, vectors=vectors, pairs=pairs),
            4 * f8 + 2 * f4 + 2 * k * f4),
        "products alone": (lambda n_threads: _core.dot_products(vectors, pairs, n_threads),
                           (2 * k + 2) * f4 + 2 * f8),
        "secant pair alone": (
            lambda n_threads: _core.secant_pair(x_old, trial, g, g_old, S[slot], Y[slot],
                                                n_threads),
            4 * f8 + 2 * f4),
        "direction": (
            lambda n_threads: _core.linear_combination(d, coefficients, basis, g, False,
                                                       n_threads),
            2 * m * f4 + 2 * f8),
        "trial point": (lambda n_threads: _core.step_along(trial, x_old, 0.5, d, n_threads),
                        3 * f8),
        "g·d": (lambda n_threads: _core.dot_products([g, d], [[0, 1]], n_threads), 2 * f8),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--parameters", type=int, default=DENSE_CONLL2000,
                    help="vector length (default: the dense CoNLL-2000 model's)")
    ap.add_argument("--memory", type=int, default=6, help="L-BFGS pairs (default 6)")
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    ap.add_argument("--repeats", type=int, default=9, help="rounds (default 9)")
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args(argv)
    if args.parameters < 1 or args.memory < 2 or args.repeats < 1:
        ap.error("--parameters must be >= 1, --memory >= 2, --repeats >= 1")
    threads = [int(t) for t in args.threads.split(",")]
    if not threads or min(threads) < 1:
        ap.error("--threads must list counts >= 1")

    rows, results = [], []
    calls = passes(args.parameters, args.memory)
    for n_threads in threads:
        samples = {name: [] for name in calls}
        for r in range(args.repeats):
            order = list(calls)
            order = order[r % len(order):] + order[:r % len(order)]
            for name in order:
                t0 = time.perf_counter()
                calls[name][0](n_threads)
                samples[name].append(time.perf_counter() - t0)
        for name, (_, moved) in calls.items():
            seconds = tables.median(samples[name])
            results.append({"pass": name, "threads": n_threads, "seconds": seconds,
                            "bytes": moved, "samples": samples[name]})
            rows.append([name, n_threads, f"{seconds * 1e3:.2f}", f"{moved / 1e6:,.0f}",
                         f"{moved / seconds / 1e9:.1f}"])
    print(host.machine_line())
    print(f"{args.parameters:,} parameters, {args.memory} float32 pairs; medians of "
          f"{args.repeats} rounds")
    print(tables.markdown_table(["pass", "threads", "ms", "MB moved", "GB/s"], rows,
                                 align="lrrrr"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": host.machine_info(), "parameters": args.parameters,
                       "memory": args.memory, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
