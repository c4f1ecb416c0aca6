"""Where thread scaling goes: the phases of a dense likelihood evaluation, and the optimiser.

The suite's scaling item (bench/suite/scaling.py, item 2) times whole terms; this
script times parts of one at 1, 2, 4, ... threads, to tell the program's
losses (a phase that scales badly) from the machine's (bench/probes/scaling_ceiling.py):

- ``likelihood``: the loss and gradient, as the suite times it;
- the same with other chunk sizes (``Corpus(chunk_tokens=...)``): each chunk
  costs two fork-joins, and its residual rows should stay in cache;
- ``log_probability``: scoring and one forward pass per sentence;
- ``marginals``: scoring and forward-backward, writing node marginals; the
  likelihood adds to it the residuals and their back-projection ``Xᵀ·∂E``;
- ``viterbi``: scoring and Viterbi;
- ``ge`` (100 constraints, as the suite's), whose evaluation is two passes
  over the corpus, whole (as the suite times it) and each pass alone: its
  expectations pass, and its gradient pass as ``ge_gradient`` runs it
  alone (scoring again: the term reuses the first pass's scores);
- ``alternatives`` (two labelings per sentence, as the suite's);
- ``training``: L-BFGS on the dense likelihood with an L2 prior (c2 = 1,
  a fixed number of iterations), seconds per evaluation with and without
  the optimiser's own passes.

Data: CoNLL-2000 train, CRFsuite tutorial attributes, the dense layout and
random weights of the suite's scaling item.

    python bench/probes/thread_phases.py [--threads 1,2,4,8,16] [--rounds 5] [--min-time 0.3]
        [--iterations 20] [--data DIR] [--json FILE]
"""

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))  # the repository root, for bench.lib

from bench.lib import host  # noqa: E402
from bench.lib.corpora import CONLL2000, load_conll2000  # noqa: E402


def phases(features, y, S, attributes):
    """(layout, the labelled corpus, name -> f(n_threads, theta, gradient): one
    call of that part)."""
    import numpy as np
    from sscrf import _core
    from sscrf.objectives import OBJECTIVES

    from bench.lib import workloads
    from sscrf.layout import ParameterLayout

    def corpus(chunk_tokens=None, labels=None):
        return workloads.corpus(features, labels=labels, chunk_tokens=chunk_tokens)

    layout = ParameterLayout.every_pair(features.n_attributes, S).core
    labelled, plain = corpus(labels=y), corpus()
    out = {"likelihood": lambda th, x, g: _core.likelihood(labelled, layout, x, th, out=g)}
    for size in (8192, 131072, features.n_tokens):
        c = corpus(size, y)
        name = ("likelihood, one chunk" if size >= features.n_tokens
                else f"likelihood, chunks of {size}")
        out[name] = lambda th, x, g, c=c: _core.likelihood(c, layout, x, th, out=g)
    out["log_probability"] = lambda th, x, g: _core.log_probability_corpus(labelled, layout, x, th)
    out["marginals"] = lambda th, x, g: _core.marginals_corpus(plain, layout, x, th)
    out["viterbi"] = lambda th, x, g: _core.viterbi_corpus(plain, layout, x, th)

    terms = {}  # a term is built for one thread count

    def term(name, th, build):
        if (name, th) not in terms:
            terms[(name, th)] = build(th)
        return terms[(name, th)]

    cmap, targets, _ = workloads.ge_setup(features, attributes, y, S, 100)

    def ge(th):
        return term("ge", th, lambda k: OBJECTIVES["ge"](
            plain, layout, k, constraint_of_attribute=cmap, targets=targets))

    score_weights = np.full((len(targets), S), 1e-3)  # the pass costs the same for any
    out["ge"] = lambda th, x, g: ge(th).value_and_gradient(x, out=g)
    out["ge, expectations pass"] = lambda th, x, g: _core.ge_expectations(
        plain, layout, x, th, ge(th).firings)
    out["ge, gradient pass (scoring again)"] = lambda th, x, g: _core.ge_gradient(
        plain, layout, x, th, ge(th).firings, score_weights, out=g)

    rng = np.random.default_rng(1)
    workloads.partial_mask(y, S, rng)  # draws as the suite does before its alternatives
    alt_labels, groups = workloads.alternatives_setup(features, y, S, rng)
    out["alternatives"] = lambda th, x, g: term("alternatives", th, lambda k: OBJECTIVES[
        "alternatives"](features, alt_labels, groups, layout, k)).value_and_gradient(x, out=g)
    return layout, labelled, out


def sample(f, th, theta, gradient, min_time):
    k, t0 = 0, time.perf_counter()
    while True:
        f(th, theta, gradient)
        k += 1
        elapsed = time.perf_counter() - t0
        if elapsed >= min_time:
            return elapsed / k


def training(corpus, layout, th, iterations):
    """(s per evaluation in all, s per evaluation in the objective, evaluations)."""
    import numpy as np
    from sscrf import _core
    from sscrf.optimize import lbfgs

    inside = [0.0]

    def fun(x, out):
        t0 = time.perf_counter()
        f, g = _core.likelihood(corpus, layout, x, th, out=out)
        f += _core.add_l2_prior(x, g, 1.0, th)
        inside[0] += time.perf_counter() - t0
        return f, g

    t0 = time.perf_counter()
    res = lbfgs(fun, np.zeros(layout.n_parameters), max_iterations=iterations, n_threads=th,
                gradient_out=True, epsilon=0.0, delta=0.0)
    total = time.perf_counter() - t0
    return total / res.n_evaluations, inside[0] / res.n_evaluations, res.n_evaluations


def main(argv=None):
    import numpy as np

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=CONLL2000)
    ap.add_argument("--threads", type=host.parse_threads, default=None,
                    help="thread counts (default: the suite's)")
    ap.add_argument("--rounds", type=int, default=5, help="alternated rounds (default 5)")
    ap.add_argument("--min-time", type=float, default=0.3,
                    help="seconds of repeated calls per sample (default 0.3)")
    ap.add_argument("--iterations", type=int, default=20,
                    help="L-BFGS iterations of the training row, 0 to skip (default 20)")
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args(argv)
    threads = host.thread_counts(args.threads)

    machine = host.machine_info()
    features, y, S, attributes = load_conll2000(args.data, with_attributes=True)
    layout, labelled, parts = phases(features, y, S, attributes)
    theta = 0.1 * np.random.default_rng(0).standard_normal(layout.n_parameters)
    gradient = np.empty_like(theta)
    for f in parts.values():  # warm-up, and page in each part's buffers
        for th in threads:
            f(th, theta, gradient)
    samples = {name: {th: [] for th in threads} for name in parts}
    for r in range(args.rounds):
        ths = threads if r % 2 == 0 else threads[::-1]
        for name, f in parts.items():
            for th in ths:
                samples[name][th].append(sample(f, th, theta, gradient, args.min_time))
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    medians = {name: {th: statistics.median(v) for th, v in d.items()}
               for name, d in samples.items()}
    trained = {}
    if args.iterations:
        for th in (threads[0], threads[-1]):
            trained[th] = training(labelled, layout, th, args.iterations)

    head = (f"Machine: {machine['cpu']}, {machine['usable_cpus']} usable CPUs; "
            f"{machine['date']}; commit {machine['commit']}\n"
            f"CoNLL-2000 train, {features.n_tokens:,} tokens, dense layout "
            f"({layout.n_parameters:,} parameters), random weights; medians of "
            f"{args.rounds} alternated rounds\n")
    cols = " | ".join(f"{th} thr." for th in threads)
    lines = [head, f"| part | ms per call, {cols} | efficiency at "
             + " / ".join(str(th) for th in threads[1:]) + " |",
             "|:--|" + "--:|" * len(threads) + ":--|"]
    for name, m in medians.items():
        eff = " / ".join(f"{100 * m[threads[0]] / (th * m[th]):.0f}%" for th in threads[1:])
        lines.append(f"| {name} | " + " | ".join(f"{1e3 * m[th]:.2f}" for th in threads)
                     + f" | {eff} |")
    if trained:
        lines += ["", f"L-BFGS, dense likelihood + L2 (c2 = 1), {args.iterations} iterations:",
                  "", "| threads | evaluations | ms per evaluation | of which the objective "
                  "| the optimiser's share |", "|--:|--:|--:|--:|--:|"]
        for th, (every, inside, n) in trained.items():
            lines.append(f"| {th} | {n} | {1e3 * every:.1f} | {1e3 * inside:.1f} "
                         f"| {100 * (1 - inside / every):.0f}% |")
    text = "\n".join(lines)
    print(text)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"machine": machine, "threads": threads, "samples": {
                n: {str(th): v for th, v in d.items()} for n, d in samples.items()},
                "training": {str(th): v for th, v in trained.items()}}, fh, indent=1)


if __name__ == "__main__":
    main()
