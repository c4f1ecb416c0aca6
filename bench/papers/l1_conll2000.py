"""L1 / elastic net on CoNLL-2000 against python-crfsuite.

Trains sscrf (OWL-QN) and CRFsuite (its OWL-QN, ``c1 > 0``) with the same
CRFsuite tutorial attributes and c1 = 0.1, c2 = 0.1 on observed pairs, back to
back, and prints chunk F1 and the number of active (non-zero) state features
of each. Targets: F1 within 0.3; active feature counts within 20%.

    python bench/papers/l1_conll2000.py [--data ../shared/data/conll2000] [--max-iterations 100]
"""

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))  # the repository root, for bench.lib

from bench.lib import host  # noqa: E402
from bench.lib.corpora import CONLL2000, chunk_f1, read_conll2000  # noqa: E402
from bench.lib.features_conll2000 import crfsuite_tokens, sscrf_tokens  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=CONLL2000)
    parser.add_argument("--max-iterations", type=int, default=100)
    parser.add_argument("--c1", type=float, default=0.1)
    parser.add_argument("--c2", type=float, default=0.1)
    args = parser.parse_args(argv)
    try:
        import pycrfsuite
    except ImportError:
        sys.exit("python-crfsuite is required: pip install '.[bench]'")
    import sscrf

    train, test, _ = read_conll2000(args.data)
    print(host.machine_line())
    rows = []

    X = [crfsuite_tokens(s) for s in train.tokens]
    trainer = pycrfsuite.Trainer(verbose=False)
    for x, y in zip(X, train.labels):
        trainer.append(x, y)
    trainer.set_params({"c1": args.c1, "c2": args.c2, "max_iterations": args.max_iterations,
                        "feature.possible_transitions": True})
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "m.crfsuite")
        started = time.perf_counter()
        trainer.train(path)
        seconds = time.perf_counter() - started
        tagger = pycrfsuite.Tagger()
        tagger.open(path)
        predicted = [tagger.tag(crfsuite_tokens(s)) for s in test.tokens]
        info = tagger.info()
        active = sum(1 for w in info.state_features.values() if w != 0.0)
        tagger.close()
    rows.append(("CRFsuite", chunk_f1(test.labels, predicted)["f1"], active, seconds))

    model = sscrf.CRF(c1=args.c1, c2=args.c2, max_iterations=args.max_iterations,
                      feature_set="observed", verbose=False)
    Xs = [sscrf_tokens(s) for s in train.tokens]
    started = time.perf_counter()
    model.fit(Xs, train.labels)
    seconds = time.perf_counter() - started
    predicted = model.predict([sscrf_tokens(s) for s in test.tokens])
    rows.append(("sscrf", chunk_f1(test.labels, predicted)["f1"], model.n_active_features_,
                 seconds))

    print(f"c1 = {args.c1}, c2 = {args.c2}, max_iterations = {args.max_iterations}, observed pairs")
    print("| tool | chunk F1 | active state features | training s |")
    print("|:--|--:|--:|--:|")
    for name, f1, active, seconds in rows:
        print(f"| {name} | {f1:.2f} | {active:,} | {seconds:.1f} |")
    (_, f1_c, act_c, _), (_, f1_s, act_s, _) = rows
    print(f"{'PASS' if abs(f1_s - f1_c) <= 0.3 else 'FAIL'}: F1 within 0.3 "
          f"({f1_s:.2f} vs {f1_c:.2f})")
    ratio = act_s / act_c if act_c else float("inf")
    print(f"{'PASS' if 0.8 <= ratio <= 1.2 else 'FAIL'}: active features within 20% "
          f"({act_s:,} vs {act_c:,}, ratio {ratio:.2f})")


if __name__ == "__main__":
    main()
