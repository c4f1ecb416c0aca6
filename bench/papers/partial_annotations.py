#!/usr/bin/env python
"""Partial annotations on CoNLL-2000 chunking: marginalised likelihood vs the baselines.

Design (after Tsuboi et al. 2008 §5.1, on English chunking):

- F: the first ``--full`` sentences of ``train.txt``, fully labeled;
- P: the next ``--pool`` sentences, of which the annotator labels only
  some tokens (the rest are ``None``, ``*`` in a file):

  - ``50%`` / ``20%``: each token's label is kept with that probability;
  - ``NP only``: only the tokens inside ``--chunk-type`` chunks keep their
    labels ("annotate the words I care about");
  - ``NP + sets`` (extra row): the same annotation, but the annotator who
    marked every NP chunk also says that the other tokens are not in one:
    they get the set of the non-NP labels, an ambiguous annotation. Its
    cost is counted like ``NP only`` (the NP tokens).

- methods, at equal annotation cost (labeled tokens in P, the cost column):

  - ``marginalised``: ``CRF.fit`` on F + partial P (Tsuboi et al. eq. 3),
    warm-started from the model trained on F (``init=``), as Tsuboi et al.
    start from their source-domain CRF (every other run on F + P data starts
    there too, so that all get the same iteration budget after F);
  - ``marginalised, dense`` (settings of ``--dense-settings``): the same with
    the ``dense`` feature set: with ``observed``, the attributes of P's
    unlabeled tokens get no weights for labels never seen with them;
  - ``argmax``: the model trained on F fills the unlabeled tokens of P with
    its constrained Viterbi path, then a CRF is trained on F + filled P;
  - ``discard``: F + the sentences of P that happen to be completely
    labeled;
  - ``full sentences``: the same number of labeled tokens spent on whole
    sentences instead: F + the first sentences of P, completely labeled,
    until their tokens reach the cost.

- ``ambiguous`` (Tsuboi et al. §5.2): P completely annotated, but every
  chunk token of the ``--ambiguous-words`` most frequent words that occur in
  P both as ``B-X`` and ``I-X`` carries the set ``{B-X, I-X}``; methods
  marginalised, argmax, ``first`` (the alphabetically first: ``B-X``),
  ``random``, discard; APA over these words;

- references: F alone, and F + all of P completely labeled.

Evaluation on ``test.txt``: chunk F1 (conlleval), token accuracy and APA
(:func:`sscrf.metrics.apa` over the ambiguous words), in %.
Features: CRF++'s CoNLL-2000 templates (``templates="default"``), the
``observed`` feature set (CRFsuite's default; for partial sentences the
pairs come from the labeled tokens only), ``c2 = --c2``, at most
``--max-iterations`` L-BFGS iterations per stage.

Usage::

    python bench/papers/partial_annotations.py [--data ../shared/data/conll2000]
        [--full 250] [--pool 1500] [--max-iterations 50] [--seed 0]
        [--threads 2] [--out bench/results/partial_annotations]
"""

import argparse
import collections
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))  # the repository root, for bench.lib
from bench.lib import host, tables  # noqa: E402

DEFAULT_DATA = os.path.join(host.DATA_ROOT, "conll2000")
DEFAULT_OUT = os.path.join(host.REPO_ROOT, "bench", "results", "partial_annotations")

_T0 = time.perf_counter()


def log(message):
    print(f"[{time.perf_counter() - _T0:7.1f} s] {message}", file=sys.stderr, flush=True)


def mask_random(y, fraction, rng):
    """Keep each token's label with probability ``fraction``, else None."""
    return [[label if rng.random() < fraction else None for label in seq] for seq in y]


def mask_chunk_type(y, chunk_type, sets=False, all_labels=()):
    """Keep the labels inside ``chunk_type`` chunks; the others None (or the non-type set)."""
    others = frozenset(l for l in all_labels if not l.endswith("-" + chunk_type))
    out = []
    for seq in y:
        out.append([label if label.endswith("-" + chunk_type) else (others if sets else None)
                     for label in seq])
    return out


def ambiguate(X, y, n_words):
    """Boundary ambiguity: every chunk token of the ``n_words`` most frequent words seen in P
    both as B-X and I-X gets the annotation {B-X, I-X}. Returns (annotation, word set)."""
    seen = collections.defaultdict(collections.Counter)
    for x, seq in zip(X, y):
        for token, label in zip(x, seq):
            if label != "O":
                seen[token[0]][label[:2]] += 1
    candidates = [w for w, c in seen.items() if c["B-"] >= 2 and c["I-"] >= 2]
    candidates.sort(key=lambda w: (-sum(seen[w].values()), w))
    words = set(candidates[:n_words])
    out = [[frozenset({"B-" + label[2:], "I-" + label[2:]})
            if token[0] in words and label != "O" else label
            for token, label in zip(x, seq)] for x, seq in zip(X, y)]
    return out, words


def count_chunk_tokens(y, chunk_type):
    return sum(1 for seq in y for label in seq if label.endswith("-" + chunk_type))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=DEFAULT_DATA)
    parser.add_argument("--full", type=int, default=250, help="fully labeled sentences (F)")
    parser.add_argument("--pool", type=int, default=1500, help="partially labeled sentences (P)")
    parser.add_argument("--chunk-type", default="NP")
    parser.add_argument("--fractions", default="0.5,0.2")
    parser.add_argument("--dense-settings", default="20%,NP only",
                        help="settings that also get a marginalised run with the dense feature "
                             "set")
    parser.add_argument("--ambiguous-words", type=int, default=40,
                        help="words of P whose B-X/I-X labels become the set {B-X, I-X}")
    parser.add_argument("--max-iterations", type=int, default=50)
    parser.add_argument("--c2", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", default=DEFAULT_OUT, help="prefix of the .md and .json reports")
    args = parser.parse_args(argv)

    import numpy as np

    from sscrf import CRF
    from sscrf.io import read_conll
    from sscrf.metrics import apa, chunk_scores, token_accuracy
    from sscrf.partial import (ambiguous_words, annotation_cost, discard, fill_argmax,
                               fill_first, fill_random)

    info = host.machine_info()
    train = read_conll(os.path.join(args.data, "train.txt"))
    test = read_conll(os.path.join(args.data, "test.txt"))
    F = slice(0, args.full)
    P = slice(args.full, args.full + args.pool)
    X_F, y_F = train.tokens[F], train.labels[F]
    X_P, y_P = train.tokens[P], train.labels[P]
    labels = sorted({l for seq in train.labels for l in seq})
    log(f"F: {len(X_F)} sentences, {sum(map(len, y_F))} tokens; P: {len(X_P)} sentences, "
        f"{sum(map(len, y_P))} tokens; test: {len(test.tokens)} sentences; {len(labels)} labels")

    y_ambiguous, _ = ambiguate(X_P, y_P, args.ambiguous_words)
    A = ambiguous_words([[t[0] for t in x] for x in X_P], y_ambiguous)
    test_words = [[t[0] for t in x] for x in test.tokens]
    log(f"ambiguous words (A, for APA): {len(A)}: {' '.join(sorted(A))}")

    def make(feature_set="observed"):
        return CRF(c2=args.c2, max_iterations=args.max_iterations, templates="default",
                   labels=labels, n_threads=args.threads, verbose=False,
                   feature_set=feature_set)

    def evaluate(model):
        pred = model.predict(test.tokens)
        s = chunk_scores(test.labels, pred)
        return (100 * s["f1"], 100 * token_accuracy(test.labels, pred),
                100 * apa(test.labels, pred, test_words, A))

    rows, records = [], []

    def run(setting, method, cost, fit):
        t0 = time.perf_counter()
        model = fit()
        seconds = time.perf_counter() - t0
        f1, acc, apa_ = evaluate(model)
        tr = model.training_
        iters = tr["iterations"] + sum(st["iterations"] for st in tr.get("stages", {}).values())
        rec = dict(setting=setting, method=method, cost=cost, f1=f1, accuracy=acc, apa=apa_,
                   seconds=seconds, iterations=iters, stop=tr["stop_reason"])
        records.append(rec)
        rows.append([setting, method, f"{cost:,}", f"{f1:.2f}", f"{acc:.2f}", f"{apa_:.2f}",
                     f"{seconds:.0f}", str(iters)])
        log(f"{setting:12s} {method:20s} cost {cost:7,d}  F1 {f1:6.2f}  acc {acc:6.2f}  "
            f"APA {apa_:6.2f}  {seconds:6.1f} s  {iters} it")
        return model

    base = run("—", "F only", 0, lambda: make().fit(X_F, y_F))
    P_tokens = sum(map(len, y_P))
    run("—", "F + P complete", P_tokens, lambda: make().fit(X_F + X_P, y_F + y_P, init=base))

    rng = np.random.default_rng(args.seed)
    settings = [(f"{round(100 * float(f))}%", mask_random(y_P, float(f), rng))
                for f in args.fractions.split(",")]
    ct = args.chunk_type
    settings.append((f"{ct} only", mask_chunk_type(y_P, ct)))
    for name, y_partial in settings:
        cost = annotation_cost(y_partial)
        run(name, "marginalised", cost,
            lambda: make().fit(X_F + X_P, y_F + y_partial, init=base))
        if name in args.dense_settings.split(","):
            run(name, "marginalised, dense", cost,
                lambda: make("dense").fit(X_F + X_P, y_F + y_partial, init=base))
        filled = fill_argmax(base, X_P, y_partial)
        run(name, "argmax", cost, lambda: make().fit(X_F + X_P, y_F + filled, init=base))
        Xd, yd, kept = discard(X_P, y_partial)
        run(name, "discard", sum(map(len, yd)),
            lambda: make().fit(X_F + Xd, y_F + yd, init=base))
        n, tokens = 0, 0
        while n < len(y_P) and tokens < cost:
            tokens += len(y_P[n])
            n += 1
        run(name, "full sentences", tokens,
            lambda: make().fit(X_F + X_P[:n], y_F + y_P[:n], init=base))
    y_sets = mask_chunk_type(y_P, ct, sets=True, all_labels=labels)
    run(f"{ct} + sets", "marginalised", count_chunk_tokens(y_P, ct),
        lambda: make().fit(X_F + X_P, y_F + y_sets, init=base))

    # Ambiguous annotations (Tsuboi et al. §5.2): P completely annotated, but the chunk
    # tokens of the words in A carry the set {B-X, I-X}.
    name, cost = "ambiguous", annotation_cost(y_ambiguous)
    run(name, "marginalised", cost,
        lambda: make().fit(X_F + X_P, y_F + y_ambiguous, init=base))
    filled = fill_argmax(base, X_P, y_ambiguous)
    run(name, "argmax", cost, lambda: make().fit(X_F + X_P, y_F + filled, init=base))
    y_first = fill_first(y_ambiguous)
    run(name, "first", cost, lambda: make().fit(X_F + X_P, y_F + y_first, init=base))
    y_random = fill_random(y_ambiguous, args.seed)
    run(name, "random", cost, lambda: make().fit(X_F + X_P, y_F + y_random, init=base))
    Xd, yd, kept = discard(X_P, y_ambiguous)
    run(name, "discard", sum(map(len, yd)),
        lambda: make().fit(X_F + Xd, y_F + yd, init=base))

    header = (f"# Partial annotations on CoNLL-2000 (Tsuboi et al. 2008)\n\n"
              f"{host.machine_line(info)}\n\n"
              f"F = {len(X_F)} fully labeled sentences ({sum(map(len, y_F)):,} tokens); "
              f"P = {len(X_P)} more sentences ({P_tokens:,} tokens) partially labeled; "
              f"test = {len(test.tokens)} sentences. c2 = {args.c2}, at most "
              f"{args.max_iterations} L-BFGS iterations per run, every run but 'F only' "
              f"warm-started from 'F only', templates = CRF++ "
              f"CoNLL-2000, feature set observed, seed {args.seed}. 'P tokens labeled' = "
              f"the labeled tokens of P that training uses (discard throws away the rest of what was "
              f"annotated). F1 = chunk F1 (conlleval), acc = token accuracy, APA = "
              f"average per-word accuracy over the {len(A)} words A of the 'ambiguous' "
              f"setting (Tsuboi et al. §5.2), in %. 'ambiguous': P completely annotated, "
              f"but the chunk tokens of the words in A carry the set {{B-X, I-X}} "
              f"('first' takes B-X, the alphabetically first).\n")
    table = tables.markdown_table(
        ["P annotation", "method", "P tokens labeled", "F1", "acc", "APA", "train s",
         "iterations"], rows)
    text = header + "\n" + table + "\n"
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out + ".md", "w", encoding="utf-8") as f:
        f.write(text)
    with open(args.out + ".json", "w", encoding="utf-8") as f:
        json.dump({"machine": info, "args": vars(args), "runs": records}, f, indent=1)
    print(text)


if __name__ == "__main__":
    main()
