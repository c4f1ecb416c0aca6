"""Time per loss-and-gradient evaluation, sscrf (1 and 2 threads) vs CRFsuite, in one run.

A quicker companion of supervised_conll2000.py for the per-evaluation targets:
CoNLL-2000 train, CRFsuite tutorial attributes, observed pairs, c2 = 1.
CRFsuite's time per evaluation is its training time over its evaluation count
(``--iterations`` L-BFGS iterations); sscrf's is the median of direct calls of
the likelihood term at the weights CRFsuite-like training reaches after the
same iterations. Repetitions alternate the tools; medians and ratios printed.

    python bench/eval_time_conll2000.py [--iterations 10] [--repeats 3]
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common  # noqa: E402
import supervised_conll2000 as sup  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=sup.DEFAULT_DATA)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    import numpy as np
    import pycrfsuite

    import sscrf
    from sscrf.model import _compile, _encode_labels
    from sscrf.objectives import OBJECTIVES

    train, _, _ = sup._read(args.data)
    Xc = [sup.crfsuite_tokens(s) for s in train.tokens]
    Xs = [sup.sscrf_tokens(s) for s in train.tokens]
    model = sscrf.CRF(max_iterations=args.iterations, feature_set="observed", verbose=False,
                      n_threads=1)
    model.fit(Xs, train.labels)
    features = model.extractor_.transform(Xs)
    labels = _encode_labels(train.labels, {l: i for i, l in enumerate(model.classes_)})
    corpus = _compile(features, labels=labels)
    terms = {k: OBJECTIVES["likelihood"](corpus, model._layout(), k) for k in (1, 2)}
    theta = model.coef_

    crfsuite, ours = [], {1: [], 2: []}
    for _ in range(args.repeats):
        trainer = pycrfsuite.Trainer(verbose=False)
        for x, y in zip(Xc, train.labels):
            trainer.append(x, y)
        trainer.set_params({"c1": 0.0, "c2": 1.0, "max_iterations": args.iterations,
                            "feature.possible_transitions": True})
        with tempfile.TemporaryDirectory() as tmp:
            trainer.train(os.path.join(tmp, "m"))
        log = trainer.logparser
        evals = 1 + sum(it.get("linesearch_trials") or 0 for it in log.iterations)
        crfsuite.append(log.training_seconds / evals)
        for k, term in terms.items():
            times = []
            for _ in range(5):
                t = time.perf_counter()
                term.value_and_gradient(theta)
                times.append(time.perf_counter() - t)
            ours[k].append(statistics.median(times))
    c = statistics.median(crfsuite)
    print(_common.machine_line())
    print(f"CoNLL-2000 train, {corpus.n_tokens:,} tokens, observed pairs, "
          f"{model.n_parameters_:,} parameters; medians of {args.repeats} alternating repetitions")
    print("| tool | s per evaluation | ratio to CRFsuite |")
    print("|:--|--:|--:|")
    print(f"| CRFsuite | {c:.3f} | 1.00x |")
    for k in (1, 2):
        m = statistics.median(ours[k])
        print(f"| sscrf, {k} thread{'s' if k > 1 else ''} | {m:.3f} | {m / c:.2f}x |")
    for k, limit in ((1, 1.0), (2, 0.55)):
        r = statistics.median(ours[k]) / c
        print(f"{'PASS' if r <= limit else 'FAIL'}: sscrf at {k} thread(s) <= {limit}x CRFsuite "
              f"per evaluation ({r:.2f}x)")


if __name__ == "__main__":
    main()
