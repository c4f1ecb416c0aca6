#!/usr/bin/env python
"""How the entropy weight γ plays out on EWT UPOS, against both supervised baselines.

100 labeled sentences of EWT train, the next 3,000 as unlabeled data, the
feature dicts of ``ge_pos.token_features`` (word, suffixes, shape,
neighbours), c2 = 0.5; accuracy on EWT test. Rows: supervised with the
``observed`` feature set (the default for supervised training), supervised
with ``dense`` (every attribute of the labeled data with every label: what
entropy regularisation uses, over the unlabeled data's attributes too), then
entropy regularisation at γ = 1/3, 1 and 3 times 0.1 × labeled / unlabeled
tokens, and at 0.1 and 0.5. A gain is one over the dense row.

Usage::

    python bench/papers/entropy_weight_ewt.py [--data DIR] [--labeled 100] [--unlabeled 3000]
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))  # the repository root, for bench.lib
import sscrf  # noqa: E402
from bench.lib import host  # noqa: E402
from bench.lib.features_words import token_features  # noqa: E402
from bench.lib.host import machine_line  # noqa: E402
from sscrf.io import read_conllu  # noqa: E402

DEFAULT_DATA = os.path.join(host.DATA_ROOT, "ud-english-ewt")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=DEFAULT_DATA)
    parser.add_argument("--labeled", type=int, default=100)
    parser.add_argument("--unlabeled", type=int, default=3000)
    args = parser.parse_args()
    train = read_conllu(os.path.join(args.data, "en_ewt-ud-train.conllu"))
    test = read_conllu(os.path.join(args.data, "en_ewt-ud-test.conllu"))
    n = args.labeled
    X = [token_features(s) for s in train.tokens[:n]]
    y = train.labels[:n]
    X_unlabeled = [token_features(s) for s in train.tokens[n:n + args.unlabeled]]
    X_test = [token_features(s) for s in test.tokens]
    base = 0.1 * sum(map(len, X)) / sum(map(len, X_unlabeled))
    runs = [("supervised, observed", {}), ("supervised, dense", {"feature_set": "dense"})]
    runs += [(f"entropy, γ = {g:.3g}", {"entropy_weight": g})
             for g in (base / 3, base, 3 * base, 0.1, 0.5)]
    print(machine_line())
    print(f"EWT UPOS: {n} labeled, {len(X_unlabeled)} unlabeled sentences; "
          f"0.1 x labeled / unlabeled tokens = {base:.3g}\n")
    print("| model | accuracy % | parameters | fit s |")
    print("|:--|--:|--:|--:|")
    for name, options in runs:
        started = time.perf_counter()
        model = sscrf.CRF(c2=0.5, verbose=False, **options)
        if "entropy_weight" in options:
            model.fit(X, y, X_unlabeled=X_unlabeled)
        else:
            model.fit(X, y)
        seconds = time.perf_counter() - started
        predicted = model.predict(X_test)
        right = sum(p == g for ps, gs in zip(predicted, test.labels) for p, g in zip(ps, gs))
        total = sum(map(len, test.labels))
        print(f"| {name} | {100 * right / total:.2f} | {model.n_parameters_:,} | "
              f"{seconds:.1f} |", flush=True)


if __name__ == "__main__":
    main()
