#!/usr/bin/env python
"""Quota sampling vs random vs least confidence (FuSAL) on NETtalk: Sokolovska (2011) §6.2-6.3.

Data: ``nettalk.data`` (word, phonemes aligned one to one with the letters,
``-`` = silent). One tenth of the words (a fixed random split) is the test
set; the rest is the pool. The CRF labels each letter with its phoneme from
CRF++-style templates over the letters: unigrams at offsets −3..3 and the
bigrams (o, o+1) for o in −3..2 (positions outside the word give the
``_B-k``/``_B+k`` pads), plus label transitions; c2 = 0.1 (the paper's ρ),
at most ``--max-iterations`` L-BFGS iterations.

q(x) is :class:`sscrf.active.NgramModel` (n = 4, interpolated Witten-Bell,
with an end-of-word symbol) over the letters of every word of the corpus,
as the paper estimates it from all available observations (inputs only).

Strategies, each scored by the token (letter) error of the test words at
n = 10, 30, 100, 300 training words:

- ``quota_sampling``: for each n an independent draw: the pool sorted by
  q(x) and cut into n groups, one word drawn from each (the paper's set-up);
- ``random``: for each n an independent draw of n pool words;
- ``least_confidence`` (FuSAL, Algorithm 1 with utility 1 − p(ŷ|x)): one
  random seed word, then the pool loop of :class:`sscrf.active.ActiveLearner`
  (warm-started retraining after every batch), one curve per replication.

Reductions against the paper, to fit the time on a shared 2-core machine:
FuSAL adds words in batches of m = max(1, ⌊n/5⌋) (m = 1 up to 10 words, then
about 20% growth per round, cut to land on 30, 100 and 300) instead of one
at a time, and scores a fresh random subset of ``--fusal-candidates`` pool
words at each round instead of the whole pool (``ActiveLearner(max_candidates=)``).

Usage::

    python bench/papers/active_nettalk.py [--repeats 10] [--max-iterations 50]
        [--fusal-candidates 3000] [--data ../shared/data/nettalk/nettalk.data]
"""

import argparse
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))  # the repository root, for bench.lib
from bench.lib import host, tables  # noqa: E402

from sscrf import CRF  # noqa: E402
from sscrf.active import ActiveLearner, NgramModel, gold_oracle, select  # noqa: E402

DEFAULT_DATA = os.path.join(host.DATA_ROOT, "nettalk",
                            "nettalk.data")
SIZES = (10, 30, 100, 300)
WINDOW = 3
TEMPLATES = ([f"U{o + WINDOW:02d}:%x[{o},0]" for o in range(-WINDOW, WINDOW + 1)]
             + [f"U{2 * WINDOW + 1 + o + WINDOW:02d}:%x[{o},0]/%x[{o + 1},0]"
                for o in range(-WINDOW, WINDOW)])


def read_nettalk(path):
    words, phonemes = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            cells = line.rstrip("\n").split("\t")
            if len(cells) < 2 or not cells[0]:
                continue
            if len(cells[0]) != len(cells[1]):
                raise ValueError(f"{path}: {cells[0]!r} and {cells[1]!r} are not aligned")
            words.append(cells[0])
            phonemes.append(list(cells[1]))
    return words, phonemes


def fusal_batches(target_sizes, start=1):
    """Labeled-set sizes after each round: +1 up to 10, then ≈ +20%, landing on each target."""
    sizes, n = [], start
    for target in target_sizes:
        while n < target:
            n = min(target, n + max(1, n // 5))
            sizes.append(n)
    return sizes


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=DEFAULT_DATA)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--max-iterations", type=int, default=50)
    ap.add_argument("--c2", type=float, default=0.1)
    ap.add_argument("--fusal-candidates", type=int, default=3000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--strategies", default="quota_sampling,random,least_confidence")
    ap.add_argument("--out", default=os.path.join(host.REPO_ROOT, "bench", "results"))
    args = ap.parse_args()
    strategies = args.strategies.split(",")
    started = time.perf_counter()

    words, phonemes = read_nettalk(args.data)
    X_all = [[[c] for c in w] for w in words]
    split = np.random.default_rng(args.seed).permutation(len(words))
    n_test = len(words) // 10
    test, pool = np.sort(split[:n_test]), np.sort(split[n_test:])
    X_test, y_test = [X_all[i] for i in test], [phonemes[i] for i in test]
    X_pool, y_pool = [X_all[i] for i in pool], [phonemes[i] for i in pool]
    pool_words = [words[i] for i in pool]
    log_q = NgramModel(n=4).fit(words).log_probs(pool_words)
    print(f"data and q(x): {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)

    def crf():
        return CRF(c2=args.c2, max_iterations=args.max_iterations, templates=TEMPLATES,
                   n_threads=args.threads, verbose=False)

    def error(model):
        return 1.0 - model.score(X_test, y_test)

    errors = {s: np.full((args.repeats, len(SIZES)), np.nan) for s in strategies}
    letters = {s: np.full((args.repeats, len(SIZES)), np.nan) for s in strategies}
    examples = {}
    schedule = fusal_batches(SIZES)
    for r in range(args.repeats):
        rng = np.random.default_rng([args.seed, r])
        for s in ("quota_sampling", "random"):
            if s not in strategies:
                continue
            for k, n in enumerate(SIZES):
                chosen, _ = select(None, X_pool, s, n, log_q=log_q, random_state=rng)
                model = crf().fit([X_pool[i] for i in chosen], [y_pool[i] for i in chosen])
                errors[s][r, k] = error(model)
                letters[s][r, k] = sum(len(y_pool[i]) for i in chosen)
                if r == 0 and n == 30:
                    examples[s] = [pool_words[i] for i in chosen]
        if "least_confidence" in strategies:
            learner = ActiveLearner(crf(), X_pool, "least_confidence", random_state=rng,
                                    max_candidates=args.fusal_candidates)
            oracle = gold_oracle(y_pool)
            seed_word = [int(rng.integers(len(X_pool)))]
            learner.teach(seed_word, oracle(seed_word))
            for size in schedule:
                chosen, _ = learner.query(size - learner.n_sentences_)
                learner.teach(chosen, oracle(chosen))
                if size in SIZES:
                    errors["least_confidence"][r, SIZES.index(size)] = error(learner.model)
                    letters["least_confidence"][r, SIZES.index(size)] = learner.n_tokens_
                if r == 0 and size == 30:
                    examples["least_confidence"] = [pool_words[i]
                                                    for i in learner.labeled_indices_]
        print(f"replication {r + 1}/{args.repeats}: {time.perf_counter() - started:.0f} s",
              file=sys.stderr, flush=True)

    headers = ["strategy"] + [f"n = {n}" for n in SIZES] + ["mean letters labeled"]
    rows = []
    for s in strategies:
        e = errors[s] * 100
        rows.append([s] + [f"{e[:, k].mean():.1f} ± {e[:, k].std(ddof=1):.1f} "
                           f"[{e[:, k].min():.1f}, {e[:, k].max():.1f}]"
                           for k in range(len(SIZES))]
                    + [" / ".join(f"{v:.0f}" for v in letters[s].mean(axis=0))])
    lines = [
        "# Active learning on NETtalk (Sokolovska 2011 §6.3)",
        "",
        host.machine_line(),
        "",
        f"{len(words):,} words: {len(pool):,} pool, {n_test:,} test "
        f"({sum(map(len, y_test)):,} letters); {len({p for ps in phonemes for p in ps})} phoneme "
        f"labels; {args.repeats} replications; c2 = {args.c2}, max_iterations = "
        f"{args.max_iterations}; letter unigrams at −3..3 and bigrams in that window. "
        f"FuSAL: one random seed word, batches up to sizes {schedule}, "
        f"{args.fusal_candidates} random candidates scored per round.",
        "",
        "Test token (letter) error %: mean ± sd [min, max] over replications; the last "
        "column: letters in the n training words, mean over replications, for each n.",
        "",
        tables.markdown_table(headers, rows),
        "",
    ]
    for s, ws in examples.items():
        lines.append(f"Words chosen by {s} (replication 1, n = 30): {' '.join(ws)}")
        lines.append("")
    lines.append(f"Wall time {time.perf_counter() - started:.0f} s.")
    report = "\n".join(lines)
    tables.write_report(args.out, "active_nettalk", report,
                        {"sizes": list(SIZES),
                         "errors": {s: e.tolist() for s, e in errors.items()},
                         "letters": {s: v.tolist() for s, v in letters.items()},
                         "examples": examples})


if __name__ == "__main__":
    main()
