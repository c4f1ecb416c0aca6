#!/usr/bin/env python
"""Active-learning curves on CoNLL-2000 chunking: selectors compared per sentence and per token.

Pool: ``train.txt`` (8,936 sentences); test: ``test.txt``, or a fixed random
subset of it (``--test-sentences``). The CRF uses the default templates for
``word POS`` columns (CRF++'s CoNLL-2000 set), c2 = 1, and at most
``--max-iterations`` L-BFGS iterations per (warm-started) retraining.

Every strategy starts from the same ``--batch`` random sentences (labeled
whole), then runs :class:`sscrf.active.ActiveLearner` against the gold labels
(:func:`sscrf.active.simulate`), recording chunk F1 on the test sentences
after every round:

- ``random``, ``least_confidence`` (1 − p(ŷ|x)), ``sequence_entropy``
  (exact H(Y|x)) and ``token_entropy`` (Σ_t H(Y_t|x)): batches of
  ``--batch`` whole sentences up to ``--max-sentences``;
- ``most_uncertain_span`` (width ``--width``): batches of ``--span-batch``
  spans, the oracle labels the span's tokens only, up to ``--max-tokens``
  labeled tokens. Span answers train natively (the whole sentence, its
  unlabeled tokens marginalised: ``ActiveLearner``'s default) and, for
  comparison, through the approximation of :mod:`sscrf.active` (each
  labeled run as a short sentence; with templates the run's edge tokens see
  sentence-boundary pads instead of their real neighbours).

Each query scores a fresh random subset of ``--max-candidates`` unlabeled
sentences (``ActiveLearner(max_candidates=)``), to keep the rounds short on
a shared machine.

The report gives F1 at fixed numbers of labeled sentences and, interpolated
along each curve, at fixed numbers of labeled tokens; the full curves go to
``active_conll2000.json`` and a PNG plot (F1 against sentences and against
tokens) to ``active_conll2000.png``.

Usage::

    python bench/papers/active_conll2000.py [--data ../shared/data/conll2000] [--batch 20]
        [--max-sentences 500] [--max-tokens 6000] [--max-iterations 30]
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

from sscrf import CRF, SscrfError  # noqa: E402
from sscrf.active import ActiveLearner, simulate  # noqa: E402
from sscrf.io import read_conll  # noqa: E402
from sscrf.metrics import chunk_scores  # noqa: E402

DEFAULT_DATA = os.path.join(host.DATA_ROOT, "conll2000")
SENTENCE_STRATEGIES = ("random", "least_confidence", "sequence_entropy", "token_entropy")


def fits_partial_labels():
    """Whether ``CRF.fit`` accepts None labels (partial annotations)."""
    try:
        CRF(max_iterations=1, verbose=False).fit([[{"a": 1.0}, {"b": 1.0}]], [["X", None]])
    except SscrfError:
        return False
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=DEFAULT_DATA)
    ap.add_argument("--batch", type=int, default=20)
    ap.add_argument("--max-sentences", type=int, default=500)
    ap.add_argument("--width", type=int, default=5)
    ap.add_argument("--span-batch", type=int, default=100)
    ap.add_argument("--max-tokens", type=int, default=6000)
    ap.add_argument("--max-candidates", type=int, default=1000)
    ap.add_argument("--test-sentences", type=int, default=0, help="0: the whole test file")
    ap.add_argument("--max-iterations", type=int, default=30)
    ap.add_argument("--c2", type=float, default=1.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--strategies",
                    default=",".join(SENTENCE_STRATEGIES + ("most_uncertain_span",)))
    ap.add_argument("--span-training", default="fragments,native",
                    help="how span answers train: 'native' (the sentence with None labels, "
                         "marginalised) and/or 'fragments' (labeled runs as short sentences)")
    ap.add_argument("--out", default=os.path.join(host.REPO_ROOT, "bench", "results"))
    args = ap.parse_args()
    started = time.perf_counter()

    train = read_conll(os.path.join(args.data, "train.txt"))
    test = read_conll(os.path.join(args.data, "test.txt"))
    X_pool, y_pool = train.tokens, train.labels
    X_test, y_test = test.tokens, test.labels
    rng = np.random.default_rng(args.seed)
    if args.test_sentences:
        keep = np.sort(rng.choice(len(X_test), args.test_sentences, replace=False))
        X_test, y_test = [X_test[i] for i in keep], [y_test[i] for i in keep]
    seed = np.sort(rng.choice(len(X_pool), args.batch, replace=False))

    def f1(model, X, y):
        return chunk_scores(y, model.predict(X))["f1"]

    runs = []  # (name, strategy, partial)
    for strategy in args.strategies.split(","):
        if strategy != "most_uncertain_span":
            runs.append((strategy, strategy, "fragments"))
            continue
        for partial in args.span_training.split(","):
            if partial == "native" and not fits_partial_labels():
                print("CRF.fit does not train on partial labels yet: no native span run",
                      file=sys.stderr)
                continue
            runs.append((f"{strategy} ({partial})", strategy, partial))

    curves = {}
    for name, strategy, partial in runs:
        t0 = time.perf_counter()
        spans = strategy == "most_uncertain_span"
        options = {"width": args.width} if spans else {}
        learner = ActiveLearner(
            CRF(templates="default", c2=args.c2, max_iterations=args.max_iterations,
                n_threads=args.threads, verbose=False),
            X_pool, strategy, random_state=args.seed + 1, max_candidates=args.max_candidates,
            partial=partial, **options)
        learner.teach(seed, [y_pool[i] for i in seed])
        if spans:
            curve = simulate(learner, y_pool, X_test, y_test, args.span_batch,
                             max_tokens=args.max_tokens, scorer=f1)
        else:
            curve = simulate(learner, y_pool, X_test, y_test, args.batch,
                             max_sentences=args.max_sentences, scorer=f1)
        curves[name] = curve
        print(f"{name}: {len(curve)} points, {time.perf_counter() - t0:.0f} s; "
              f"last {curve[-1]}", file=sys.stderr, flush=True)

    sentence_levels = [n for n in (20, 100, 200, 300, 500) if n <= args.max_sentences]
    token_levels = [t for t in (1000, 2000, 4000, 6000, 8000, 12000)]
    headers = (["strategy"] + [f"{n} sent." for n in sentence_levels]
               + [f"{t // 1000}k tok." for t in token_levels])
    rows = []
    for strategy, curve in curves.items():
        by_sentences = {p["sentences"]: p for p in curve if not p["partial"]}
        tokens = np.array([p["tokens"] for p in curve], dtype=float)
        scores = np.array([p["score"] for p in curve])
        row = [strategy]
        for n in sentence_levels:
            p = by_sentences.get(n) if not strategy.startswith("most_uncertain_span") else None
            row.append(f"{p['score'] * 100:.2f}" if p else "—")
        for t in token_levels:
            inside = tokens[0] <= t <= tokens[-1]
            row.append(f"{np.interp(t, tokens, scores) * 100:.2f}" if inside else "—")
        rows.append(row)
    token_rows = []
    for strategy, curve in curves.items():
        if strategy.startswith("most_uncertain_span"):
            continue
        by = {p["sentences"]: p["tokens"] for p in curve}
        token_rows.append([strategy]
                          + [f"{by[n]:,}" if n in by else "—" for n in sentence_levels])
    lines = [
        "# Active learning on CoNLL-2000 chunking",
        "",
        host.machine_line(),
        "",
        f"Pool {len(X_pool):,} sentences; test {len(X_test):,} sentences "
        f"({sum(map(len, y_test)):,} tokens); default templates, c2 = {args.c2}, "
        f"max_iterations = {args.max_iterations} per warm-started retraining; every strategy "
        f"starts from the same {args.batch} random sentences; sentence strategies add "
        f"{args.batch} sentences per round up to {args.max_sentences}; most_uncertain_span adds "
        f"{args.span_batch} spans of width {args.width} per round up to {args.max_tokens:,} "
        f"labeled tokens (trained as fragments: an approximation, labeled runs as "
        f"short sentences; native: the whole sentence with unlabeled tokens marginalised, "
        f"where CRF.fit supports it); each query "
        f"scores {args.max_candidates} random candidates; one run (seed {args.seed}).",
        "",
        "Chunk F1 (%) on the test sentences, at a number of labeled sentences, and "
        "interpolated along each curve at a number of labeled tokens:",
        "",
        tables.markdown_table(headers, rows),
        "",
        "Labeled tokens at each number of labeled sentences:",
        "",
        tables.markdown_table(["strategy"] + [f"{n} sent." for n in sentence_levels],
                               token_rows),
        "",
        f"Wall time {time.perf_counter() - started:.0f} s.",
    ]
    report = "\n".join(lines)
    tables.write_report(args.out, "active_conll2000", report,
                        {"args": vars(args), "curves": curves})
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plot", file=sys.stderr)
        return
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for strategy, curve in curves.items():
        f1s = [p["score"] * 100 for p in curve]
        right.plot([p["tokens"] for p in curve], f1s, marker=".", label=strategy)
        if not strategy.startswith("most_uncertain_span"):
            left.plot([p["sentences"] for p in curve], f1s, marker=".", label=strategy)
    left.set_xlabel("labeled sentences")
    right.set_xlabel("labeled tokens")
    left.set_ylabel("chunk F1 (%)")
    for ax in (left, right):
        ax.grid(alpha=0.3)
    right.legend(loc="lower right", fontsize=8)
    fig.suptitle("CoNLL-2000: active learning curves")
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "active_conll2000.png"), dpi=120)


if __name__ == "__main__":
    main()
