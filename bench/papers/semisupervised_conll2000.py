#!/usr/bin/env python
"""Entropy regularisation vs self-training on CoNLL-2000 chunking (Jiao et al. 2006 design).

The experiment of ``semisupervised_bc2gm.py`` (its runner is
:mod:`bench.lib.semisupervised`) on CoNLL-2000:

- labeled set A: the first sentences of ``train.txt`` until A holds at least
  ``--labeled-tokens`` tokens (5,000);
- unlabeled sets of 1x, 2x and 5x |A| tokens: the sentences that follow A,
  nested, labels dropped;
- c2 = 0.5 (Jiao et al.'s ‖θ‖²/2), γ grid 0, 0.1, 0.5, 1, 5, 10; rows
  ``g·|A|/|U|`` use the weight g·(sentences in A)/(sentences in U)
  (MALLET's documented scaling) for g in ``--scaled-gammas``; self-training
  with ``sscrf.self_train``; a supervised ``observed``-feature-set reference;
- features: CRFsuite's chunking tutorial attributes (``example/chunking.py``:
  words and POS tags at −2..2, word bigrams, POS bigrams and trigrams,
  BOS/EOS), exactly as the suite's (``bench/lib/features_conll2000.py``);
- the label set is the labels seen in A (chunk types absent from A cannot
  be predicted; their test chunks count as misses);
- evaluation: chunk precision, recall and F1 over all chunk types
  (conlleval semantics, :func:`sscrf.metrics.chunk_scores`) on ``test.txt``,
  with the numbers of predicted and correct chunks.

Usage::

    python bench/papers/semisupervised_conll2000.py [--data ../shared/data/conll2000]
        [--gammas 0,0.1,0.5,1,5,10] [--sizes 1,2,5] [--max-iterations 100]
        [--jobs 2] [--json OUT] [--quick]
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))  # the repository root, for bench.lib
from bench.lib import host  # noqa: E402
from bench.lib import semisupervised as ss  # noqa: E402
from bench.lib.features_conll2000 import sscrf_tokens  # noqa: E402

DEFAULT_DATA = os.path.join(host.DATA_ROOT, "conll2000")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ss.common_arguments(p, DEFAULT_DATA, 5000)
    args = p.parse_args(argv)
    ss.apply_quick(args)
    machine = host.machine_info()

    from sscrf.io import read_conll

    t0 = time.perf_counter()
    train = read_conll(os.path.join(args.data, "train.txt"))
    test = read_conll(os.path.join(args.data, "test.txt"))
    split = ss.split_labeled_unlabeled(train.tokens, train.labels, args.labeled_tokens,
                                       args.sizes, shuffle=args.shuffle)
    A_tokens, A_labels = split["A"]
    XA = [sscrf_tokens(s) for s in A_tokens]
    XU = {size: [sscrf_tokens(s) for s in sents] for size, sents in split["U"].items()}
    X_test = [sscrf_tokens(s) for s in test.tokens]
    ss.log(f"data and features: {time.perf_counter() - t0:.1f} s")
    labels_a = sorted({l for s in A_labels for l in s})
    labels_all = sorted({l for s in train.labels + test.labels for l in s})
    missing = [l for l in labels_all if l not in labels_a]
    n_chunks_a = sum(l.startswith("B-") for s in A_labels for l in s)
    info = [f"Data: {args.data}. Labeled set A = first {len(A_tokens):,} sentences of "
            f"train.txt{ss.order_text(args)} ({split['A_tokens']:,} tokens, {n_chunks_a:,} chunks, "
            f"{len(labels_a)} labels; labels of train/test not in A: "
            f"{', '.join(missing) or 'none'}). Unlabeled sets (the sentences after A, nested, "
            "labels dropped): "
            + ", ".join(f"{size}x = {len(s):,} sentences / {ss.n_tokens(s):,} tokens"
                        for size, s in split["U"].items())
            + f". Test: test.txt, {len(test.tokens):,} sentences / "
            f"{ss.n_tokens(test.tokens):,} tokens. Features: CRFsuite chunking tutorial "
            "attributes (bench/lib/features_conll2000.py)."]
    exp = ss.run_experiment(args, title="Semi-supervised CRF on CoNLL-2000 chunking: "
                                        "entropy regularisation vs self-training",
                            XA=XA, yA=A_labels, XU=XU, X_test=X_test, y_test=test.labels,
                            unit="chunks")
    ss.finish(args, exp, info, machine)


if __name__ == "__main__":
    main()
