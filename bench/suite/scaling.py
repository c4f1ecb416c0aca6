#!/usr/bin/env python
"""Suite items 2 and 3: thread scaling and cost per token of every objective term.

Tokens per second of ``value_and_gradient`` for each thread count and every
objective term registered in ``sscrf.objectives.OBJECTIVES`` (``likelihood``;
``entropy`` fast; ``partial_likelihood``, ``ge`` and ``alternatives`` on the
inputs of :mod:`bench.lib.workloads`), on CoNLL-2000's real features, every
attribute-label pair, θ ~ N(0, 0.1²) (seed 0), each call writing into one
reused gradient array as the trainer's calls do (a fresh array per call adds
page faults that serialise); parallel efficiency = speed-up / threads; also
checks that every thread count gives the same bits as one thread.

Item 3, the cost of each term per token relative to ``likelihood`` at 1
thread: per round, the term's calls interleaved with the likelihood's call
by call, the ratio of their times, median over rounds (samples of the two
terms taken seconds apart move with the machine's speed).

    python bench/suite/scaling.py [--data DIR] [--threads 1,2] [--rounds 5]
        [--min-time 0.5] [--ge-constraints 100]

Prints one line of JSON (the suite summarises it). numpy and sscrf are
imported by :func:`child_scaling`: the suite's parent imports this module and
must stay small.
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))  # the repository root, for bench.lib

from bench.lib import host, tables  # noqa: E402
from bench.lib.corpora import CONLL2000  # noqa: E402
from bench.suite.children import log, run_json_child  # noqa: E402


def child_scaling(args):
    """Runs the measurements of items 2 and 3 (in the child process)."""
    import numpy as np
    import sscrf
    from sscrf.features import FeatureExtractor
    from sscrf.io import read_conll
    from sscrf.objectives import OBJECTIVES

    from bench.lib import workloads
    from sscrf.layout import ParameterLayout
    from bench.lib.features_conll2000 import sscrf_tokens

    machine = host.machine_info()
    t0 = time.perf_counter()
    train = read_conll(os.path.join(args.data, "train.txt"))
    tokens, gold = list(train.tokens), list(train.labels)
    if args.sentences:
        tokens, gold = tokens[:args.sentences], gold[:args.sentences]
    X = [sscrf_tokens(s) for s in tokens]
    extractor = FeatureExtractor(None)
    (features,) = extractor.fit_transform(X)
    del X
    labels = sorted({l for s in gold for l in s})
    index = {l: i for i, l in enumerate(labels)}
    y = np.array([index[l] for s in gold for l in s], dtype=np.int32)
    S, N = len(labels), features.n_tokens
    layout = ParameterLayout.every_pair(features.n_attributes, S).core
    theta = 0.1 * np.random.default_rng(0).standard_normal(layout.n_parameters)
    rng = np.random.default_rng(1)
    setup = {"n_sentences": features.n_sentences, "n_tokens": N, "S": S,
             "n_attributes": features.n_attributes, "n_parameters": layout.n_parameters,
             "nnz_per_token": features.nnz / max(N, 1)}

    lab = workloads.corpus(features, labels=y)
    unl = workloads.corpus(features)
    builders, notes = {}, {}
    builders["likelihood"] = lambda th: OBJECTIVES["likelihood"](lab, layout, th)
    notes["likelihood"] = "gold labels"
    if "entropy" in OBJECTIVES:
        builders["entropy"] = lambda th: OBJECTIVES["entropy"](unl, layout, th, method="fast")
        notes["entropy"] = "method=fast, all tokens unlabeled"
    if "partial_likelihood" in OBJECTIVES:
        mask, free = workloads.partial_mask(y, S, rng)
        part = workloads.corpus(features, mask=mask)
        builders["partial_likelihood"] = lambda th: OBJECTIVES["partial_likelihood"](
            part, layout, th)
        notes["partial_likelihood"] = (f"{100 * free.mean():.1f}% of tokens all-allowed, "
                                       "the rest one-hot gold")
    if "ge" in OBJECTIVES:
        cmap, targets, info = workloads.ge_setup(features, extractor.attributes_, y, S,
                                        args.ge_constraints)
        setup["ge"] = info
        builders["ge"] = lambda th: OBJECTIVES["ge"](unl, layout, th,
                                                     constraint_of_attribute=cmap,
                                                     targets=targets)
        notes["ge"] = (f"{info['constraints']} constraints (most frequent w[0]= attributes, "
                       f"smoothed empirical targets), KL; a constraint fires at "
                       f"{100 * info['tokens_with_a_constraint']:.0f}% of tokens")
    if "alternatives" in OBJECTIVES:
        alt_labels, groups = workloads.alternatives_setup(features, y, S, rng)
        builders["alternatives"] = lambda th: OBJECTIVES["alternatives"](
            features, alt_labels, groups, layout, th)
        notes["alternatives"] = ("2 labelings per sentence (gold, gold with one token "
                                 "relabeled)")
    missing = [name for name in OBJECTIVES if name not in builders]
    setup["prep_s"] = time.perf_counter() - t0

    threads = args.thread_list
    terms = {(name, th): build(th) for name, build in builders.items() for th in threads}
    log(f"scaling: {N} tokens, {layout.n_parameters} parameters, terms {list(builders)}, "
         f"threads {threads}")

    for term in terms.values():  # warm-up
        term.value_and_gradient(theta)
    gradient = np.empty_like(theta)  # reused, as Objective(reuse_gradient=True) does

    def interleaved(calls):
        """Seconds per call of each of `calls`, run in turn call by call
        (order reversed every other turn; min_time per call in all, as many
        seconds as separate samples took), so that the ratios between them
        see the same state of a machine whose speed drifts from second to
        second."""
        spent = [0.0] * len(calls)
        k = 0
        while k < 3 or sum(spent) < args.min_time * len(calls):
            turn = range(len(calls)) if k % 2 == 0 else reversed(range(len(calls)))
            for j in turn:
                t_call = time.perf_counter()
                calls[j].value_and_gradient(theta, out=gradient)
                spent[j] += time.perf_counter() - t_call
            k += 1
        return [t / k for t in spent]

    def sample(term):
        k, t_start = 0, time.perf_counter()
        while True:
            term.value_and_gradient(theta, out=gradient)
            k += 1
            elapsed = time.perf_counter() - t_start
            if elapsed >= args.min_time:
                return elapsed / k

    names = list(builders)
    samples = {name: {th: [] for th in threads} for name in names}
    # item 3: each term against the likelihood, both at one thread, in turn.
    # Thread counts stay back to back: interleaving them call by call did
    # not steady the 2-thread efficiencies (bench/HISTORY.md).
    cost_pairs = {name: [] for name in names if name != "likelihood"}
    base = threads[0]
    for r in range(args.rounds):
        k = r % len(names)
        order = names[k:] + names[:k]
        ths = threads if r % 2 == 0 else threads[::-1]
        for name in order:
            for th in ths:
                samples[name][th].append(sample(terms[(name, th)]))
            if name in cost_pairs and "likelihood" in builders:
                lik_t, term_t = interleaved([terms[("likelihood", base)], terms[(name, base)]])
                cost_pairs[name].append(term_t / lik_t)
        log(f"  round {r + 1}/{args.rounds} done")

    identical = {}
    for name in names:
        v1, g1 = terms[(name, 1)].value_and_gradient(theta) if 1 in threads else (None, None)
        identical[name] = {}
        for th in threads:
            if th == 1 or v1 is None:
                continue
            v, g = terms[(name, th)].value_and_gradient(theta)
            identical[name][th] = bool(v == v1 and np.array_equal(g, g1))
        del v1, g1

    return {"machine": machine, "setup": setup, "threads": threads, "rounds": args.rounds,
            "min_time": args.min_time, "notes": notes, "not_benchmarked": missing,
            "samples": {n: {str(th): v for th, v in d.items()} for n, d in samples.items()},
            "cost_ratio_samples": cost_pairs if "likelihood" in builders else {},
            "identical_to_1_thread": {n: {str(th): v for th, v in d.items()}
                                      for n, d in identical.items()},
            "build_info": sscrf.build_info(),
            "load_average_end": host.machine_info()["load_average"]}


def summarize_scaling(raw):
    """Per term and thread count: s/token, tokens/s, speed-up, efficiency; term cost."""
    N = raw["setup"]["n_tokens"]
    threads = raw["threads"]
    out = {}
    for name, by_th in raw["samples"].items():
        rows = {}
        base = by_th.get("1")
        for th in threads:
            v = by_th[str(th)]
            med = tables.median(v)
            row = {"median_s": med, "s_per_token": med / N, "tokens_per_s": N / med}
            if base:
                b = tables.median(base)
                row["speedup"] = b / med
                row["efficiency"] = b / med / th
                per_round = [a / c / th for a, c in zip(base, v)]
                row["median_paired_efficiency"] = tables.median(per_round)
                row["paired_efficiency_range"] = [min(per_round), max(per_round)]
            row["identical_to_1_thread"] = raw["identical_to_1_thread"].get(name, {}).get(
                str(th))
            rows[str(th)] = row
        out[name] = rows
    cost = {}
    lik = raw["samples"].get("likelihood", {}).get("1")
    if lik:
        for name, by_th in raw["samples"].items():
            v = by_th.get("1")
            if not v:
                continue
            # Interleaved with the likelihood call by call when measured so
            # (runs before that paired the scaling samples of one round).
            paired = raw.get("cost_ratio_samples", {}).get(name) or [
                a / b for a, b in zip(v, lik)]
            cost[name] = {"us_per_token": 1e6 * tables.median(v) / N,
                          "ratio_of_medians": tables.median(v) / tables.median(lik),
                          "median_paired_ratio": tables.median(paired),
                          "paired_ratio_range": [min(paired), max(paired)]}
    return {"by_term": out, "cost_vs_likelihood": cost}


def run(args, tmp, log_path):
    """Items 2-3 in the suite: this script in a child process, then the summary."""
    cmd = [sys.executable, os.path.abspath(__file__), "--data", args.data,
           "--threads", ",".join(map(str, args.thread_list)), "--rounds", str(args.rounds),
           "--min-time", str(args.min_time), "--ge-constraints", str(args.ge_constraints)]
    raw = run_json_child(cmd, log_path, "items 2-3: thread scaling and term cost")
    raw["summary"] = summarize_scaling(raw)
    return raw


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=CONLL2000, help="CoNLL-2000 directory (train.txt)")
    ap.add_argument("--threads", type=host.parse_threads, default=None,
                    help="thread counts, e.g. 1,2,4 (default: bench.lib.host.default_threads)")
    ap.add_argument("--rounds", type=int, default=5, help="timing rounds (default 5)")
    ap.add_argument("--min-time", type=float, default=0.5,
                    help="seconds of repeated calls per sample (default 0.5)")
    ap.add_argument("--ge-constraints", type=int, default=100,
                    help="constraints of the ge term (default 100)")
    ap.add_argument("--sentences", type=int, default=None,
                    help="only the first SENTENCES training sentences")
    args = ap.parse_args(argv)
    args.data = os.path.abspath(args.data)
    args.thread_list = host.thread_counts(args.threads)
    sys.stdout.write(json.dumps(child_scaling(args), default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
