"""Time per loss-and-gradient evaluation, sscrf (any thread counts) vs CRFsuite, in one run.

A quicker companion of the suite's item 1 (bench/suite/supervised.py) for the per-evaluation targets:
CoNLL-2000 train, CRFsuite tutorial attributes, c2 = 1; CRFsuite with observed
pairs, sscrf with observed pairs and/or all pairs (``dense``).
CRFsuite's time per evaluation is its training time over its evaluation count
(``--iterations`` L-BFGS iterations); sscrf's is the median of direct calls of
the likelihood term at the weights CRFsuite-like training reaches after the
same iterations. Repetitions alternate the tools; medians and ratios printed.

    python bench/probes/eval_time_conll2000.py [--iterations 10] [--repeats 3] [--threads 1,2]
        [--feature-sets observed,dense]
"""

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))  # the repository root, for bench.lib

from bench.lib import host, timing  # noqa: E402
from bench.lib.corpora import CONLL2000, read_conll2000  # noqa: E402
from bench.lib.features_conll2000 import crfsuite_tokens, sscrf_tokens  # noqa: E402
from bench.suite import targets as suite_targets  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=CONLL2000)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--feature-sets", default="observed",
                        help="sscrf feature sets, comma-separated: observed, dense "
                             "(default observed)")
    parser.add_argument("--threads", default="1,2",
                        help="sscrf thread counts, comma-separated (default 1,2)")
    args = parser.parse_args(argv)
    try:
        thread_counts = [int(t) for t in args.threads.split(",")]
    except ValueError:
        parser.error(f"--threads: comma-separated positive integers, not {args.threads!r}")
    if not thread_counts or min(thread_counts) < 1:
        parser.error(f"--threads: comma-separated positive integers, not {args.threads!r}")
    feature_sets = args.feature_sets.split(",")
    if not set(feature_sets) <= {"observed", "dense"}:
        parser.error(f"--feature-sets: observed and/or dense, not {args.feature_sets!r}")
    import numpy as np

    import sscrf
    from sscrf.objectives import OBJECTIVES

    from sscrf.corpus import compile_corpus
    from sscrf.inputs import encode_labels

    train, _, _ = read_conll2000(args.data)
    Xc = [crfsuite_tokens(s) for s in train.tokens]
    Xs = [sscrf_tokens(s) for s in train.tokens]
    terms, weights, sizes = {}, {}, {}
    for fs in feature_sets:
        model = sscrf.CRF(max_iterations=args.iterations, feature_set=fs, verbose=False,
                          n_threads=1)
        model.fit(Xs, train.labels)
        features = model.extractor_.transform(Xs)
        labels = encode_labels(train.labels, {l: i for i, l in enumerate(model.classes_)})
        corpus = compile_corpus(features, labels=labels)
        for k in thread_counts:
            terms[fs, k] = OBJECTIVES["likelihood"](corpus, model.layout_.core, k)
        weights[fs], sizes[fs] = model.coef_, (corpus.n_tokens, model.n_parameters_)

    # one gradient buffer per feature set, reused by every call as training's are
    outs = {fs: np.empty_like(w) for fs, w in weights.items()}
    crfsuite, ours = [], {key: [] for key in terms}
    for _ in range(args.repeats):
        crfsuite.append(timing.crfsuite_seconds_per_evaluation(Xc, train.labels,
                                                                args.iterations))
        for (fs, k), term in terms.items():
            ours[fs, k].append(timing.median_call_seconds(term, weights[fs], outs[fs]))
    c = statistics.median(crfsuite)
    print(host.machine_line())
    n_tokens = next(iter(sizes.values()))[0]
    print(f"CoNLL-2000 train, {n_tokens:,} tokens; CRFsuite with observed pairs; "
          + "; ".join(f"sscrf {fs}: {n:,} parameters" for fs, (_, n) in sizes.items())
          + f"; medians of {args.repeats} alternating repetitions")
    print("| tool | s per evaluation | ratio to CRFsuite (observed) |")
    print("|:--|--:|--:|")
    print(f"| CRFsuite | {c:.3f} | 1.00x |")
    for (fs, k), v in ours.items():
        m = statistics.median(v)
        print(f"| sscrf {fs}, {k} thread{'s' if k > 1 else ''} | {m:.3f} | {m / c:.2f}x |")
    # the suite's per-evaluation targets (the loss and gradient alone)
    targets = {("observed", k): v for k, v in suite_targets.OBSERVED_EVAL.items()}
    targets.update({("dense", k): v for k, v in suite_targets.DENSE_EVAL.items()})
    for (fs, k), limit in targets.items():
        if (fs, k) in ours:
            r = statistics.median(ours[fs, k]) / c
            print(f"{'PASS' if r <= limit else 'FAIL'}: sscrf {fs} at {k} thread(s) <= "
                  f"{limit}x CRFsuite per evaluation ({r:.2f}x)")

if __name__ == "__main__":
    main()
