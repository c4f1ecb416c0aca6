#!/usr/bin/env python
"""Entropy regularisation vs self-training on BC2GM gene mentions (Jiao et al. 2006, Tables 1-2).

Design (Jiao et al. §5.1 on BioCreative gene mentions, here on the BC2GM
release in ``conll/``):

- labeled set A: the first sentences of ``train.tsv`` (file order, or shuffled
  with ``--shuffle SEED``) until A holds at least
  ``--labeled-tokens`` tokens (5,400; Jiao et al. had 5,448 words);
- unlabeled sets of ``--sizes`` × |A| tokens (1x, 2x, 5x; Jiao et al. 5,210,
  10,208 and 25,145 words): the sentences that follow A in ``train.tsv``,
  until the set holds at least k·|A| tokens. The sets are nested (the 2x set
  starts with the 1x set) and disjoint from A; their labels are dropped;
- prior ``c2 = 0.5``, i.e. Jiao et al.'s ``U(θ) = ‖θ‖²/2``: the loss is
  ``−Σ_A log p(y|x) + ‖θ‖²/2 + γ·Σ_unlabeled H(Y|x)``;
- γ grid ``--gammas`` (0, 0.1, 0.5, 1, 5, 10). γ = 0 is the supervised CRF
  on A alone; it uses the ``dense`` feature set (every attribute × label),
  the set the entropy runs need, and it is the warm start of every entropy
  run (``fit(..., init=supervised)``, what ``CRF.fit`` does itself as its
  stage 1: attributes seen only in unlabeled data start at 0, which is
  their supervised optimum). The γ = 0 row is the same for every size;
- γ relative to the data sizes: the entropy sum grows with the unlabeled
  set while the likelihood sum does not, so a fixed γ weighs the unlabeled
  data more as the set grows. MALLET's ``CRFOptimizableByEntropyRegularization``
  documents its scaling factor as "typically entropyRegGamma · numLabeled /
  numUnlabeled" (instance counts). Rows ``γ=g·|A|/|U|`` use the weight
  ``g · (sentences in A) / (sentences in U)`` for each ``g`` of
  ``--scaled-gammas`` (default 1 and 10); the actual weight is printed;
- self-training (``sscrf.self_train``, up to ``--self-training-rounds``
  retraining rounds on A ∪ Viterbi-labeled U, CRFsuite's default ``observed``
  feature set, warm-started each round);
- extra reference row: the supervised CRF on A with the ``observed`` feature
  set (CRFsuite's default);
- evaluation on ``test.tsv``: gene mentions (chunks of B-GENE/I-GENE, IOB2)
  matched exactly (:func:`sscrf.metrics.chunk_scores`): precision, recall,
  F1, number predicted, number correct. (The official BC2GM evaluation also
  accepts the alternative boundaries of ``ALTGENE.eval``; exact match on the
  IOB tags is stricter, so these numbers are lower than official ones.)

Features: :mod:`bench.lib.features_bc2gm` (word, lowercase, prefixes/suffixes 1-4,
shape, collapsed shape, has-digit, all-caps, has-hyphen, Greek letter name,
word/lowercase/shape at ±1 and ±2, BOS/EOS).

The second table gives, per run, L-BFGS iterations (of the stage with the
entropy term) and stop reason, training seconds, and the mean per-token
entropy ``H(Y|x)/n`` of the unlabeled set and of the test set under the
trained model (entropy regularisation should lower the former).

Usage::

    python bench/papers/semisupervised_bc2gm.py [--data ../shared/data/bc2gm]
        [--gammas 0,0.1,0.5,1,5,10] [--sizes 1,2,5] [--max-iterations 100]
        [--jobs 2] [--json OUT] [--quick]

``--quick``: γ ∈ {0, 1}, size 1x only, 20 iterations, no scaled γ,
2 self-training rounds: a smoke test of a minute or two.

The experiment runner is :mod:`bench.lib.semisupervised`, shared with
``semisupervised_conll2000.py``.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))  # the repository root, for bench.lib
from bench.lib import host  # noqa: E402
from bench.lib.features_bc2gm import corpus_features  # noqa: E402
from bench.lib.semisupervised import (apply_quick, common_arguments, finish,  # noqa: E402
                                      log, n_tokens, order_text, run_experiment,
                                      split_labeled_unlabeled)

DEFAULT_DATA = os.path.join(host.DATA_ROOT, "bc2gm")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    common_arguments(p, DEFAULT_DATA, 5400)
    args = p.parse_args(argv)
    apply_quick(args)
    machine = host.machine_info()

    from sscrf.io import read_conll

    t0 = time.perf_counter()
    train = read_conll(os.path.join(args.data, "conll", "train.tsv"))
    test = read_conll(os.path.join(args.data, "conll", "test.tsv"))
    split = split_labeled_unlabeled(train.tokens, train.labels, args.labeled_tokens, args.sizes,
                                    shuffle=args.shuffle)
    A_tokens, A_labels = split["A"]
    XA = corpus_features(A_tokens)
    XU = {size: corpus_features(s) for size, s in split["U"].items()}
    X_test = corpus_features(test.tokens)
    log(f"data and features: {time.perf_counter() - t0:.1f} s")
    n_mentions_a = sum(l == "B-GENE" for s in A_labels for l in s)
    info = [f"Data: {args.data}/conll. Labeled set A = first {len(A_tokens):,} sentences of "
            f"train.tsv{order_text(args)} ({split['A_tokens']:,} tokens, {n_mentions_a:,} gene mentions). "
            "Unlabeled sets (the sentences after A, nested, labels dropped): "
            + ", ".join(f"{size}x = {len(s):,} sentences / {n_tokens(s):,} tokens"
                        for size, s in split["U"].items())
            + f". Test: test.tsv, {len(test.tokens):,} sentences / {n_tokens(test.tokens):,} "
            "tokens. Features: bench/lib/features_bc2gm.py."]
    exp = run_experiment(args, title="Semi-supervised CRF on BC2GM gene mentions: "
                                     "entropy regularisation vs self-training",
                         XA=XA, yA=A_labels, XU=XU, X_test=X_test, y_test=test.labels,
                         unit="gene mentions")
    finish(args, exp, info, machine)


if __name__ == "__main__":
    main()
