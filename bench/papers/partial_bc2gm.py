#!/usr/bin/env python
"""Alternative gene-mention boundaries on BC2GM: marginalised training vs GENE boundaries alone.

BioCreative II gene mention (``original-data``): every gold mention of
``GENE.eval`` may come with acceptable alternative boundaries in
``ALTGENE.eval`` (a shorter or longer span overlapping it). Offsets count
the non-space characters of the sentence before the mention and up to and
including its last character (``README.GM``), so the end offset in the files
is inclusive.

Design:

- sentences of ``train/train.in`` (the first ``--train-sentences``),
  tokenised here: runs of letters, runs of digits, single other characters
  (``IL-2R`` → ``IL - 2 R``); training tokens are further split at every
  GENE/ALTGENE boundary so that every annotated span is a token span.
  Labels ``B-GENE``/``I-GENE``/``O``;
- per sentence, the acceptable labelings: for every gold mention, either
  its GENE span or an ALTGENE span overlapping it (the spans alt_eval
  accepts for it); every combination whose spans do not overlap (one
  ALTGENE span covering two gold mentions serves both), at most
  ``--max-alternatives`` per sentence (the gold labeling first). ALTGENE
  spans overlapping no gold mention are ignored (predicting them is never
  an error, but nothing asks for them);
- methods:

  - ``GENE``: a CRF trained on the GENE boundaries alone (complete labels);
  - ``GENE continued``: the same, trained for another ``--max-iterations``
    from ``GENE``: the control for the iterations the runs below add;
  - ``alternatives``: the marginalised likelihood over exactly the
    acceptable labelings (``sscrf.partial.Alternatives``: node + edge masks
    where they represent the set exactly, the explicit ``alternatives``
    term otherwise), warm-started from ``GENE``;
  - ``token sets``: the same annotation flattened to per-token label sets
    (an over-approximation: it also admits e.g. a B inside a mention),
    warm-started from ``GENE``;
  - ``random``: one acceptable labeling per sentence at random (Tsuboi et
    al.'s ``random`` baseline), trained normally, warm-started from ``GENE``
    (so every method gets the same iteration budget after ``GENE``);

- evaluation on ``test/test.in`` (tokenised without looking at the
  mentions) the way BioCreative scored it (``train/alt_eval.perl``,
  re-implemented): a gold mention is a true positive when some predicted
  mention equals it or equals an ALTGENE span overlapping it; a predicted
  mention that is neither a GENE nor an ALTGENE span is a false positive.
  Also the strict score (GENE spans only, exact match).

Features: :mod:`bench.lib.features_bc2gm` (word, affixes, shapes, Greek letters,
±2 context). ``c2 = --c2``, at most ``--max-iterations`` L-BFGS iterations
per run, the ``observed`` feature set.

Usage::

    python bench/papers/partial_bc2gm.py [--data ../shared/data/bc2gm/original-data]
        [--train-sentences 5000] [--max-iterations 50] [--threads 2]
        [--out bench/results/partial_bc2gm]
"""

import argparse
import collections
import itertools
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))  # the repository root, for bench.lib
from bench.lib import host, tables  # noqa: E402
from bench.lib import features_bc2gm  # noqa: E402

DEFAULT_DATA = os.path.join(host.DATA_ROOT, "bc2gm",
                            "original-data")
DEFAULT_OUT = os.path.join(host.REPO_ROOT, "bench", "results", "partial_bc2gm")
LABELS = ["B-GENE", "I-GENE", "O"]

_T0 = time.perf_counter()


def log(message):
    print(f"[{time.perf_counter() - _T0:7.1f} s] {message}", file=sys.stderr, flush=True)


# -- data -------------------------------------------------------------------------

_TOKEN = re.compile(r"[^\W\d_]+|\d+|[^\w\s]|_")


def read_sentences(path):
    """[(id, text)] of a train.in / test.in file."""
    out = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if line:
                sid, _, text = line.partition(" ")
                out.append((sid, text))
    return out


def read_mentions(path):
    """id → sorted list of (start, stop) spans, non-space offsets, stop exclusive."""
    out = collections.defaultdict(set)
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            sid, span, _ = line.split("|", 2)
            a, b = span.split()
            out[sid].add((int(a), int(b) + 1))
    return {k: sorted(v) for k, v in out.items()}


def _nonspace_prefix(text):
    """counts[i] = non-space characters in text[:i]."""
    counts = [0] * (len(text) + 1)
    for i, c in enumerate(text):
        counts[i + 1] = counts[i] + (not c.isspace())
    return counts


def tokenize(text, cuts=()):
    """Tokens and their (start, stop) in non-space character offsets.

    Runs of letters, runs of digits, single other characters; ``cuts``:
    extra non-space offsets where a token must be split.
    """
    cuts = set(cuts)
    prefix = _nonspace_prefix(text)
    tokens, spans = [], []
    for m in _TOKEN.finditer(text):
        word = m.group()
        start = prefix[m.start()]
        piece = 0
        for k in range(1, len(word)):
            if start + k in cuts:
                tokens.append(word[piece:k])
                spans.append((start + piece, start + k))
                piece = k
        tokens.append(word[piece:])
        spans.append((start + piece, start + len(word)))
    return tokens, spans


def span_labels(spans, mentions):
    """BIO labels for non-overlapping mentions (start, stop); None if one is not token-aligned."""
    labels = ["O"] * len(spans)
    starts = {s: i for i, (s, _) in enumerate(spans)}
    stops = {e: i for i, (_, e) in enumerate(spans)}
    for a, b in mentions:
        if a not in starts or b not in stops:
            return None
        i, j = starts[a], stops[b]
        labels[i] = "B-GENE"
        for k in range(i + 1, j + 1):
            labels[k] = "I-GENE"
    return labels


def overlaps(x, y):
    return x[0] < y[1] and y[0] < x[1]


def acceptable_mention_sets(gold, alt, limit):
    """Non-overlapping mention sets: each gold mention itself or an ALTGENE span overlapping it."""
    # Overlapping gold mentions cannot both be BIO-labeled: keep the first of each clash.
    kept = []
    for g in gold:
        if not any(overlaps(g, k) for k in kept):
            kept.append(g)
    choices = [[g] + [a for a in alt if a != g and overlaps(a, g)] for g in kept]
    out, seen = [], set()
    for combo in itertools.product(*choices):
        spans = tuple(sorted(set(combo)))
        if spans in seen or any(overlaps(x, y) for x, y in zip(spans, spans[1:])):
            continue
        seen.add(spans)
        out.append(spans)
        if len(out) >= limit:
            break
    return out, len(gold) - len(kept)


def predicted_mentions(labels, spans):
    """(start, stop) of the B-GENE/I-GENE chunks (conlleval reading)."""
    from sscrf.metrics import chunks

    return [(spans[a][0], spans[b - 1][1]) for _, a, b in chunks(labels)]


def alt_eval(predicted, gold, alt):
    """TP, FP, FN the way alt_eval.perl counts them (spans with exclusive stops).

    A gold mention is found when some prediction equals it, or equals an
    ALTGENE span that overlaps it; a prediction is a false positive when it
    is neither a GENE nor an ALTGENE span.
    """
    tp = fp = fn = 0
    for sid in set(gold) | set(predicted):
        g = gold.get(sid, [])
        a = alt.get(sid, [])
        t = set(predicted.get(sid, []))
        for span in g:
            if span in t or any(s in t and overlaps(s, span) for s in a):
                tp += 1
            else:
                fn += 1
        ok = set(g) | set(a)
        fp += sum(1 for span in t if span not in ok)
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return dict(tp=tp, fp=fp, fn=fn, precision=100 * p, recall=100 * r, f1=100 * f)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=DEFAULT_DATA)
    parser.add_argument("--train-sentences", type=int, default=5000,
                        help="the first N sentences of train.in (default: 5,000 of 15,000, "
                             "about 7 minutes on a busy 2-core machine)")
    parser.add_argument("--test-sentences", type=int, default=None,
                        help="evaluate on the first N test sentences (default: all 5,000)")
    parser.add_argument("--max-alternatives", type=int, default=64)
    parser.add_argument("--max-iterations", type=int, default=50)
    parser.add_argument("--c2", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--methods",
                        default="GENE,GENE continued,alternatives,token sets,random")
    parser.add_argument("--out", default=DEFAULT_OUT)
    args = parser.parse_args(argv)

    import numpy as np

    from sscrf import CRF
    from sscrf.partial import Alternatives, sentence_masks

    info = host.machine_info()
    train = read_sentences(os.path.join(args.data, "train", "train.in"))[:args.train_sentences]
    gene = read_mentions(os.path.join(args.data, "train", "GENE.eval"))
    altgene = read_mentions(os.path.join(args.data, "train", "ALTGENE.eval"))
    test = read_sentences(os.path.join(args.data, "test", "test.in"))[:args.test_sentences]
    test_gene = read_mentions(os.path.join(args.data, "test", "GENE.eval"))
    test_alt = read_mentions(os.path.join(args.data, "test", "ALTGENE.eval"))

    # -- training annotations
    X, y_gene, y_alt = [], [], []
    stats = collections.Counter()
    index = {label: i for i, label in enumerate(LABELS)}
    for sid, text in train:
        g, a = gene.get(sid, []), altgene.get(sid, [])
        cuts = {x for span in g + a for x in span}
        tokens, spans = tokenize(text, cuts)
        sets, dropped = acceptable_mention_sets(g, a, args.max_alternatives + 1)
        stats["gold mentions dropped (overlapping another gold mention)"] += dropped
        stats["ALTGENE spans overlapping no GENE span (ignored)"] += sum(
            1 for s in a if not any(overlaps(s, x) for x in g))
        labelings = [span_labels(spans, m) for m in sets]
        if labelings[0] is None or any(lab is None for lab in labelings):
            stats["sentences skipped (misaligned span)"] += 1
            continue
        if len(labelings) > args.max_alternatives:
            stats[f"sentences with more than {args.max_alternatives} labelings (cut)"] += 1
            labelings = labelings[:args.max_alternatives]
        X.append(features_bc2gm.sentence_features(tokens))
        y_gene.append(labelings[0])
        if len(labelings) == 1:
            y_alt.append(labelings[0])
            continue
        alt = Alternatives(labelings)
        y_alt.append(alt)
        stats["sentences with alternatives"] += 1
        stats["alternative labelings (in those sentences)"] += len(alt.labelings)
        exact = sentence_masks(alt, index).exact
        stats["  of which node+edge masks are exact"] += exact
    stats["training sentences"] = len(X)
    stats["training tokens"] = sum(map(len, y_gene))
    for k, v in stats.items():
        log(f"{k}: {v}")

    # -- test data
    X_test, test_spans, reachable = [], [], 0
    for sid, text in test:
        tokens, spans = tokenize(text)
        X_test.append(features_bc2gm.sentence_features(tokens))
        test_spans.append(spans)
        starts, stops = {s for s, _ in spans}, {e for _, e in spans}
        reachable += sum(1 for a, b in test_gene.get(sid, []) if a in starts and b in stops)
    test_ids = {sid for sid, _ in test}
    test_gene = {k: v for k, v in test_gene.items() if k in test_ids}
    test_alt = {k: v for k, v in test_alt.items() if k in test_ids}
    n_test_gold = sum(map(len, test_gene.values()))
    log(f"test: {len(X_test)} sentences, {n_test_gold} GENE mentions, {reachable} of them "
        f"token-aligned ({100 * reachable / n_test_gold:.1f}%)")

    def evaluate(model):
        pred = model.predict(X_test)
        predicted = {sid: predicted_mentions(p, spans)
                     for (sid, _), p, spans in zip(test, pred, test_spans)}
        official = alt_eval(predicted, test_gene, test_alt)
        strict = alt_eval(predicted, test_gene, {})
        return official, strict

    def make():
        return CRF(c2=args.c2, max_iterations=args.max_iterations, labels=LABELS,
                   n_threads=args.threads, verbose=False)

    rows, records = [], []
    methods = [m.strip() for m in args.methods.split(",")]
    rng = np.random.default_rng(args.seed)
    base = None
    for method in methods:
        t0 = time.perf_counter()
        if method == "GENE":
            model = make().fit(X, y_gene)
            base = model
        elif method == "GENE continued":
            model = make().fit(X, y_gene, init=base)
        elif method == "alternatives":
            model = make().fit(X, y_alt, init=base)
        elif method == "token sets":
            y_sets = [list(a) if isinstance(a, Alternatives) else a for a in y_alt]
            model = make().fit(X, y_sets, init=base)
        elif method == "random":
            y_rand = [list(a.labelings[int(rng.integers(len(a.labelings)))])
                      if isinstance(a, Alternatives) else a for a in y_alt]
            model = make().fit(X, y_rand, init=base)
        else:
            raise SystemExit(f"unknown method {method!r}")
        seconds = time.perf_counter() - t0
        official, strict = evaluate(model)
        tr = model.training_
        rec = dict(method=method, official=official, strict=strict, seconds=seconds,
                   iterations=tr["iterations"], stop=tr["stop_reason"])
        records.append(rec)
        rows.append([method, f"{official['precision']:.2f}", f"{official['recall']:.2f}",
                     f"{official['f1']:.2f}", f"{strict['f1']:.2f}", str(official["tp"]),
                     str(official["fp"]), str(official["fn"]), f"{seconds:.0f}",
                     str(tr["iterations"])])
        log(f"{method:14s} official P {official['precision']:.2f} R {official['recall']:.2f} "
            f"F {official['f1']:.2f} | strict F {strict['f1']:.2f} | {seconds:.0f} s, "
            f"{tr['iterations']} it ({tr['stop_reason']})")

    header = (f"# Alternative boundaries on BC2GM (Tsuboi et al. 2008, alternatives)\n\n"
              f"{host.machine_line(info)}\n\n"
              f"Training: {stats['training sentences']:,} sentences of train.in "
              f"({stats['training tokens']:,} tokens), "
              f"{stats['sentences with alternatives']:,} with more than one acceptable "
              f"labeling ({stats['alternative labelings (in those sentences)']:,} labelings; "
              f"node+edge masks exact for {stats['  of which node+edge masks are exact']:,} "
              f"of those sentences). Test: {len(X_test):,} sentences of test.in, "
              f"{n_test_gold:,} GENE mentions ({100 * reachable / n_test_gold:.1f}% "
              f"token-aligned). c2 = {args.c2}, at most {args.max_iterations} L-BFGS "
              f"iterations per run; every run after GENE starts from GENE. Official = "
              f"alt_eval.perl semantics (GENE or an overlapping ALTGENE span counts); "
              f"strict = exact GENE spans only.\n")
    table = tables.markdown_table(
        ["training labels", "P", "R", "F1", "strict F1", "TP", "FP", "FN", "train s",
         "iterations"], rows)
    notes = "\n".join(f"- {k}: {v:,}" for k, v in stats.items())
    text = header + "\n" + table + "\n\n" + notes + "\n"
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out + ".md", "w", encoding="utf-8") as f:
        f.write(text)
    with open(args.out + ".json", "w", encoding="utf-8") as f:
        json.dump({"machine": info, "args": vars(args), "stats": dict(stats), "runs": records},
                  f, indent=1)
    print(text)


if __name__ == "__main__":
    main()
