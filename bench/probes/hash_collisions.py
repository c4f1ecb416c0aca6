"""Feature hashing on CoNLL-2000 train: how many attributes share a bucket.

For the default templates over CoNLL-2000 ``train.txt`` (word, POS), and each
``hash_features = 2**k`` (k = 16..22): the distinct attributes, the buckets
they occupy, the fraction of attributes that share their bucket with another,
the (token, attribute) entries merged by a collision inside one token, and
the time of ``fit_transform`` hashed vs with a counted vocabulary (median of
``--repeats``, side by side in one process). With ``--f1``: chunk F1 on
``test.txt`` and model parameters of ``CRF(templates="default",
hash_features=2**k)`` against no hashing (``--iterations`` L-BFGS
iterations, c2 = 1, observed pairs).

Usage: ``python bench/probes/hash_collisions.py [--data DIR] [--repeats 3] [--f1]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)  # bench.lib
sys.path.insert(0, os.path.join(ROOT, "python"))
from bench.lib import host  # noqa: E402
from bench.lib.host import machine_line  # noqa: E402

from sscrf import CRF  # noqa: E402
from sscrf.features import FeatureExtractor, default_templates  # noqa: E402
from sscrf.features.hashing import hash_buckets  # noqa: E402
from sscrf.io import read_conll  # noqa: E402
from sscrf.metrics import chunk_scores  # noqa: E402


def f1(args: argparse.Namespace) -> None:
    """Chunk F1 and parameters with and without hashing."""
    print(machine_line())
    train = read_conll(os.path.join(args.data, "train.txt"))
    test = read_conll(os.path.join(args.data, "test.txt"))
    print("hash_features  parameters  F1     train_s")
    for k in [None, 16, 18, 20, 22]:
        start = time.perf_counter()
        crf = CRF(templates="default", max_iterations=args.iterations,
                  hash_features=None if k is None else 2**k)
        crf.fit(train.tokens, train.labels)
        seconds = time.perf_counter() - start
        score = chunk_scores(test.labels, crf.predict(test.tokens))
        name = "none" if k is None else f"2**{k}"
        print(f"{name:<14} {crf.coef_.size:>10,} {100 * score['f1']:6.2f} {seconds:8.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=os.path.join(host.DATA_ROOT, "conll2000"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--f1", action="store_true")
    parser.add_argument("--iterations", type=int, default=100)
    args = parser.parse_args()
    if args.f1:
        f1(args)
        return
    print(machine_line())
    X = read_conll(os.path.join(args.data, "train.txt")).tokens
    templates = default_templates(2)
    fx = FeatureExtractor(templates)
    features, = fx.fit_transform(X)
    strings = fx.attributes_
    assert strings is not None
    n = len(strings)
    print(f"CoNLL-2000 train: {features.n_tokens:,} tokens, {n:,} distinct attributes, "
          f"{features.nnz:,} entries")
    print("k   buckets_used  attrs_sharing  entries_merged  vocab_s  hashed_s  ratio")
    for k in range(16, 23):
        buckets = hash_buckets(strings, 2**k)
        used = len(np.unique(buckets))
        sizes = np.bincount(buckets, minlength=2**k)
        sharing = float((sizes[buckets] > 1).mean())
        hashed, = FeatureExtractor(templates, hash_features=2**k).fit_transform(X)
        merged = features.nnz - hashed.nnz
        times: dict[str, list[float]] = {"vocab": [], "hashed": []}
        for _ in range(args.repeats):
            for name, extractor in (("vocab", FeatureExtractor(templates)),
                                    ("hashed", FeatureExtractor(templates, hash_features=2**k))):
                start = time.perf_counter()
                extractor.fit_transform(X)
                times[name].append(time.perf_counter() - start)
        v, h = statistics.median(times["vocab"]), statistics.median(times["hashed"])
        print(f"{k:<3} {used:>12,} {sharing:>14.3%} {merged:>15,} {v:>8.2f} {h:>9.2f} "
              f"{h / v:>6.2f}")


if __name__ == "__main__":
    main()
