#!/usr/bin/env python
"""Quick calibration of :class:`sscrf.WordRepresentations` on BC2GM gene mentions.

Design:

- labeled slices: ``--slices`` (3) random samples of ``--labeled`` (200)
  sentences of BC2GM ``train.tsv`` (seeds 0, 1, 2);
- unlabeled text, per slice: the rest of BC2GM ``train.tsv`` (labels
  dropped), CoNLL-2000 ``train.txt`` and UD-EWT ``en_ewt-ud-train.conllu``
  words (never a dev or test split; ``--bc2gm-only``: the first alone); representations with the library's
  default settings (``WordRepresentations()``, features with ``features()``'s
  defaults);
- one feature function for every row: :func:`sscrf.features.word_features`;
  the representation row merges ``WordRepresentations.features`` into it;
- both rows: ``feature_set="dense"``, the same ``--max-iterations``, ``c2``
  from ``--c2`` picked on the dev split (``devel.tsv``) by gene-mention F1;
- reported: test-split (``test.tsv``) exact-match gene-mention F1,
  precision, recall, predictions, paired Δ F1 per slice and its median,
  and a 95% bootstrap interval of the mean Δ over slices (test sentences
  resampled, one resample for every slice and both models);
  seconds to learn the representations; tagging seconds of the test split
  (features and Viterbi) with and without them, measured side by side.

With ``--tagging``, instead: the test split tagged (feature dicts, then
predict on one thread; 5 repetitions side by side, median) by models of
slice 0 at c2 = 0.1 with word features only, with the representations'
cluster ids added, with cluster ids and vectors, and with the defaults
(cluster ids, vectors and HMM states).

With ``--cli``, instead: the same slices through the command line, each a
child process: ``sscrf represent`` on the slice's unlabeled text, then
``sscrf train --features words`` alone, with ``--representations REP
--vector-scale 0`` (cluster ids) and with ``--representations REP`` (cluster
ids and vectors, the default), ``--c2`` picked on dev by ``sscrf eval``'s
FB1, test FB1 of each pick and the paired Δ against ``--features words``.

With ``--throughput``, instead: ``sscrf represent`` (a child process) on
the unlabeled text tiled to 1M and to 10M tokens (read from a file, one
sentence a line), its wall seconds and peak resident memory. Tiled text
repeats the same vocabulary, so it measures the streaming and counting,
not a vocabulary that keeps growing.

Usage::

    python bench/papers/representations_quick.py [--data ../shared/data]
        [--slices 3] [--labeled 200] [--c2 0.003,0.01,0.03,0.1,0.3,1]
        [--max-iterations 200] [--threads 2] [--scale S] [--throughput | --tagging | --cli]
"""

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

import numpy as np  # noqa: E402

from sscrf import CRF  # noqa: E402
from sscrf.features import word_features  # noqa: E402
from sscrf.metrics import chunk_scores  # noqa: E402
from sscrf.representations import WordRepresentations  # noqa: E402
from bench.papers.semisupervised_ner import paired_bootstrap, sentence_counts  # noqa: E402


def read_columns(path, sep=None, conllu=False):
    """(words, labels) per sentence of a CoNLL-like file (label: last column)."""
    sentences, words, labels = [], [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if conllu and line.startswith("#"):
                continue
            if not line.strip():
                if words:
                    sentences.append((words, labels))
                    words, labels = [], []
                continue
            cells = line.split("\t") if (sep == "\t" or conllu) else line.split(" ")
            if conllu:
                if not cells[0].isdigit():
                    continue
                words.append(cells[1])
                labels.append(cells[3])
            else:
                words.append(cells[0])
                labels.append(cells[-1])
    if words:
        sentences.append((words, labels))
    return sentences


def f1_of(model, X, y):
    s = chunk_scores(y, model.predict(X))
    return s


def fit_best(X, y, X_dev, y_dev, grid, args):
    best = None
    for c2 in grid:
        model = CRF(c2=c2, feature_set="dense", max_iterations=args.max_iterations,
                    n_threads=args.threads)
        model.fit(X, y)
        f1 = f1_of(model, X_dev, y_dev)["f1"]
        if best is None or f1 > best[0]:
            best = (f1, c2, model)
    return best


def throughput(text, threads):
    """Seconds and peak memory of `sscrf represent` on ``text`` tiled to 1M and 10M tokens."""
    n = sum(map(len, text))
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(__file__), "..", "..",
                                                   "python"))
    with tempfile.TemporaryDirectory() as tmp:
        for target in (1_000_000, 10_000_000):
            path = os.path.join(tmp, "text.txt")
            with open(path, "w", encoding="utf-8") as f:
                written = 0
                while written < target:
                    for s in text:
                        f.write(" ".join(s) + "\n")
                        written += len(s)
                        if written >= target:
                            break
            before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
            t = time.perf_counter()
            subprocess.run([sys.executable, "-m", "sscrf", "represent", path, "-o",
                            os.path.join(tmp, "x.rep"), "--threads", str(threads), "-q"],
                           check=True, env=env)
            seconds = time.perf_counter() - t
            peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
            print(f"{written:,} tokens ({n:,} tiled): {seconds:.1f} s, peak memory "
                  f"{max(peak, before) / 1024:.0f} MB (the largest child so far)", flush=True)


def tagging(train, other, test_words, args):
    """Tagging seconds of the test split (feature dicts, then predict on one
    thread), without and with representation features: 5 runs side by side,
    median."""
    picked = set(np.random.default_rng(0).choice(len(train), args.labeled,
                                                 replace=False).tolist())
    unlabeled = [train[i][0] for i in range(len(train)) if i not in picked] + other
    rep = WordRepresentations(n_threads=args.threads).fit(unlabeled)
    labeled = [train[i] for i in sorted(picked)]
    kinds = {"words": word_features,
             "+ clusters": lambda s: rep.features(s, into=word_features(s), vectors=False,
                                                  states=False),
             "+ clusters, vectors": lambda s: rep.features(s, into=word_features(s),
                                                           states=False),
             "+ clusters, vectors, states (defaults)":
                 lambda s: rep.features(s, into=word_features(s))}
    models = {name: CRF(c2=0.1, feature_set="dense", max_iterations=args.max_iterations,
                        n_threads=args.threads).fit([fun(w) for w, _ in labeled],
                                                    [l for _, l in labeled])
              for name, fun in kinds.items()}
    for model in models.values():
        model.set_params(n_threads=1)
    times = {name: [] for name in kinds}
    for _ in range(5):
        for name, fun in kinds.items():
            t = time.perf_counter()
            models[name].predict([fun(s) for s in test_words])
            times[name].append(time.perf_counter() - t)
    base = statistics.median(times["words"])
    print(f"tagging {len(test_words):,} test sentences, 1 thread, median of 5 runs:")
    for name in kinds:
        m = statistics.median(times[name])
        print(f"  {name}: {m:.3f} s (x{m / base:.2f})")


def write_columns(path, sentences):
    with open(path, "w", encoding="utf-8") as f:
        for words, labels in sentences:
            f.write("".join(f"{w}\t{l}\n" for w, l in zip(words, labels)) + "\n")


def command_line(train, other, dev, test, grid, args):
    """Test FB1 through `sscrf represent`, `train` and `eval`, per slice and configuration."""
    env = dict(os.environ, PYTHONPATH=os.path.join(os.path.dirname(__file__), "..", "..",
                                                   "python"))

    def sscrf(*argv):
        return subprocess.run([sys.executable, "-m", "sscrf", *argv], check=True, env=env,
                              capture_output=True, text=True).stdout

    def fb1(model, path):
        out = sscrf("eval", "-m", model, path, "--threads", str(args.threads))
        return float(out.split("FB1:")[1].split()[0])

    configurations = {"words": [], "words + clusters": ["--vector-scale", "0"],
                      "words + clusters + vectors": []}
    deltas = {name: [] for name in configurations if name != "words"}
    with tempfile.TemporaryDirectory() as tmp:
        write_columns(os.path.join(tmp, "dev.txt"), dev)
        write_columns(os.path.join(tmp, "test.txt"), test)
        for seed in range(args.slices):
            rng = np.random.default_rng(seed)
            picked = set(rng.choice(len(train), args.labeled, replace=False).tolist())
            write_columns(os.path.join(tmp, "labeled.txt"), [train[i] for i in sorted(picked)])
            with open(os.path.join(tmp, "raw.txt"), "w", encoding="utf-8") as f:
                for words in [train[i][0] for i in range(len(train)) if i not in picked] + other:
                    f.write(" ".join(words) + "\n")
            rep = os.path.join(tmp, "raw.rep")
            sscrf("represent", os.path.join(tmp, "raw.txt"), "-o", rep, "-q",
                  "--threads", str(args.threads))
            scores = {}
            for name, extra in configurations.items():
                if name != "words":
                    extra = ["--representations", rep] + extra
                best = None
                for c2 in grid:
                    model = os.path.join(tmp, f"{len(scores)}-{c2}.model")
                    sscrf("train", os.path.join(tmp, "labeled.txt"), "--features", "words",
                          "--c2", str(c2), "--max-iterations", str(args.max_iterations),
                          "--threads", str(args.threads), "-q", "-m", model, *extra)
                    dev_f1 = fb1(model, os.path.join(tmp, "dev.txt"))
                    if best is None or dev_f1 > best[0]:
                        best = (dev_f1, c2, model)
                scores[name] = (best[1], fb1(best[2], os.path.join(tmp, "test.txt")))
            for name in deltas:
                deltas[name].append(scores[name][1] - scores["words"][1])
            print(f"slice {seed}: " + "; ".join(f"{name} c2={c2}: FB1 {f:.2f}" for name, (c2, f)
                                                 in scores.items()), flush=True)
    for name, d in deltas.items():
        print(f"{name}: median Δ FB1 {statistics.median(d):+.2f} "
              f"({', '.join(f'{x:+.2f}' for x in d)})")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default=os.path.join(here, "..", "..", "..", "shared", "data"))
    p.add_argument("--slices", type=int, default=3)
    p.add_argument("--scale", type=float, default=None,
                   help="the vectors' scale (default: the library's)")
    p.add_argument("--labeled", type=int, default=200)
    p.add_argument("--c2", default="0.003,0.01,0.03,0.1,0.3,1")
    p.add_argument("--max-iterations", type=int, default=200)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--throughput", action="store_true")
    p.add_argument("--tagging", action="store_true")
    p.add_argument("--cli", action="store_true")
    p.add_argument("--bc2gm-only", action="store_true",
                   help="unlabeled text: the rest of the BC2GM training split only")
    args = p.parse_args()
    grid = [float(c) for c in args.c2.split(",")]
    bc = os.path.join(args.data, "bc2gm", "conll")
    train = read_columns(os.path.join(bc, "train.tsv"), "\t")
    dev = read_columns(os.path.join(bc, "devel.tsv"), "\t")
    test = read_columns(os.path.join(bc, "test.tsv"), "\t")
    other = [w for w, _ in read_columns(os.path.join(args.data, "conll2000", "train.txt"))]
    other += [w for w, _ in read_columns(os.path.join(args.data, "ud-english-ewt",
                                                      "en_ewt-ud-train.conllu"), conllu=True)]
    if args.bc2gm_only:
        other = []
    if args.throughput:
        throughput([w for w, _ in train] + other, args.threads)
        return
    if args.tagging:
        tagging(train, other, [w for w, _ in test], args)
        return
    if args.cli:
        command_line(train, other, dev, test, grid, args)
        return
    scale = {} if args.scale is None else {"scale": args.scale}
    Xd_words, y_dev = [w for w, _ in dev], [l for _, l in dev]
    Xt_words, y_test = [w for w, _ in test], [l for _, l in test]
    X_dev_base = [word_features(s) for s in Xd_words]
    sources = ("the rest of train" if args.bc2gm_only else "the rest of train + CoNLL-2000 "
               f"train + EWT train ({sum(map(len, other)):,} tokens of other corpora)")
    print(f"BC2GM train {len(train)} sentences; unlabeled: {sources}; dev "
          f"{len(dev)}, test {len(test)}; c2 grid {grid}; {args.max_iterations} iterations; "
          f"{args.threads} threads (machine shared with other jobs)")
    rows = []
    for seed in range(args.slices):
        rng = np.random.default_rng(seed)
        picked = set(rng.choice(len(train), args.labeled, replace=False).tolist())
        labeled = [train[i] for i in sorted(picked)]
        unlabeled = [train[i][0] for i in range(len(train)) if i not in picked] + other
        X_words, y = [w for w, _ in labeled], [l for _, l in labeled]
        t = time.perf_counter()
        rep = WordRepresentations(n_threads=args.threads).fit(iter(unlabeled))
        rep_seconds = time.perf_counter() - t

        def merged(s):
            return rep.features(s, into=word_features(s), **scale)

        X_base = [word_features(s) for s in X_words]
        f_base, c2_base, base = fit_best(X_base, y, X_dev_base, y_dev, grid, args)
        X_rep = [merged(s) for s in X_words]
        X_dev_rep = [merged(s) for s in Xd_words]
        f_rep, c2_rep, with_rep = fit_best(X_rep, y, X_dev_rep, y_dev, grid, args)
        # tagging the test split, features included, side by side, 3 repetitions
        times = {"base": [], "rep": []}
        for _ in range(3):
            for name, model, fun in (("base", base, word_features), ("rep", with_rep, merged)):
                t = time.perf_counter()
                pred = model.predict([fun(s) for s in Xt_words])
                times[name].append(time.perf_counter() - t)
                if name == "base":
                    s_base = chunk_scores(y_test, pred)
                    counts_base = sentence_counts("chunk", y_test, pred)
                else:
                    s_rep = chunk_scores(y_test, pred)
                    counts_rep = sentence_counts("chunk", y_test, pred)
        row = {"seed": seed, "rep_s": rep_seconds, "tokens": rep.n_tokens_,
               "c2_base": c2_base, "c2_rep": c2_rep, "base": s_base, "rep": s_rep,
               "dev_base": f_base, "dev_rep": f_rep,
               "tag_base": statistics.median(times["base"]),
               "tag_rep": statistics.median(times["rep"]),
               "counts_base": counts_base, "counts_rep": counts_rep}
        rows.append(row)
        print(f"slice {seed}: representations from {rep.n_tokens_:,} tokens in "
              f"{rep_seconds:.1f} s; dense c2={c2_base}: F1 {100 * s_base['f1']:.2f} (P "
              f"{100 * s_base['precision']:.1f} R {100 * s_base['recall']:.1f}, "
              f"{s_base['n_pred']} predicted); +representations c2={c2_rep}: F1 "
              f"{100 * s_rep['f1']:.2f} (P {100 * s_rep['precision']:.1f} R "
              f"{100 * s_rep['recall']:.1f}, {s_rep['n_pred']} predicted); Δ "
              f"{100 * (s_rep['f1'] - s_base['f1']):+.2f}; tagging test "
              f"{row['tag_base']:.1f} s vs {row['tag_rep']:.1f} s "
              f"(x{row['tag_rep'] / row['tag_base']:.2f})", flush=True)
    print("dev F1, median over slices: with representations %.2f (%s), dense %.2f" % (
        100 * statistics.median(r["dev_rep"] for r in rows),
        ", ".join("%.2f" % (100 * r["dev_rep"]) for r in rows),
        100 * statistics.median(r["dev_base"] for r in rows)))
    deltas = [100 * (r["rep"]["f1"] - r["base"]["f1"]) for r in rows]
    lo, hi = paired_bootstrap([r["counts_rep"] for r in rows], [r["counts_base"] for r in rows])
    print(f"median Δ F1 {statistics.median(deltas):+.2f} over {len(rows)} slices "
          f"({', '.join(f'{d:+.2f}' for d in deltas)}); mean {statistics.mean(deltas):+.2f}, "
          f"95% bootstrap CI [{lo:+.2f}, {hi:+.2f}]; tagging ratio median "
          f"x{statistics.median(r['tag_rep'] / r['tag_base'] for r in rows):.2f}")


if __name__ == "__main__":
    main()
