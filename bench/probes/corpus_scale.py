#!/usr/bin/env python
"""Entropy and GE training on 1M, 3M, 10M unlabeled tokens from a compiled, memory-mapped corpus.

The unlabeled text is the word column of the shared corpora, CoNLL-2000
(train, test) then BC2GM (train, devel, test), 829,016 tokens together,
**tiled** (repeated whole, then cut at a sentence boundary) to each size;
the output says how many times. A tiled corpus inflates every count, so the
vocabulary is bounded with ``max_features``, never ``min_freq``. Attributes
come from ``default_templates(1)`` (7 unigram templates over the word
column). The labeled set is the first ``--labeled`` sentences of CoNLL-2000
train (word column, chunk labels); GE's constraints are the labeled data's
chunk distributions of its 20 most frequent words (``U02:word``, smoothed).

For each size the parent (standard library only) writes the text to a
CoNLL file and runs, each in its own child process:

- ``compile``: ``sscrf.compile_corpus_file`` with ``max_features``: wall
  time, tokens/s, the file's bytes per token and per stored entry (arrays
  only, and with the vocabulary);
- ``train``: ``CRF.fit(X, y, X_unlabeled=CompiledCorpus.open(file))`` for
  each term (``entropy``, ``ge``) and model (``observed``: the labeled
  data's pairs; ``dense``: every pair of the ``max_features`` vocabulary),
  ``--iterations`` per stage: wall time, seconds per evaluation of the
  second stage (the unlabeled term's), the process's peak RSS (VmHWM) and
  peak anonymous memory (RssAnon sampled every 20 ms by a thread; it
  leaves out the mapped file's pages);
- at the smallest size also ``train`` from the same sentences in memory
  (lists, as before compiled corpora), under the same vocabulary, for
  the ratio of time per evaluation mapped / in memory.

With ``hashed`` among ``--models``, the text is also compiled with feature
hashing into ``2**--hash-bits`` buckets (no vocabulary pass, no
``max_features``), and trained ``dense`` over the buckets with the same
``hash_features``. Binary attributes of one token in one bucket count
once, so a hashed corpus of template features stores no values either.

Usage::

    python bench/probes/corpus_scale.py [--sizes 1e6,3e6,1e7] [--iterations 5]
        [--max-features 200000] [--models observed,dense,hashed] [--hash-bits 18]
        [--threads 2] [--workdir DIR] [--json OUT]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))  # the repository root, for bench.lib
from bench.lib import host  # noqa: E402

SOURCES = [("conll2000", "train.txt"), ("conll2000", "test.txt"),
           ("bc2gm", "conll/train.tsv"), ("bc2gm", "conll/devel.tsv"),
           ("bc2gm", "conll/test.tsv")]


# -- the text ----------------------------------------------------------------------------


def read_words(path):
    """Sentences of the first column of a CoNLL file."""
    sentences, current = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            cols = line.split()
            if not cols or cols[0] == "-DOCSTART-":
                if current:
                    sentences.append(current)
                    current = []
                continue
            current.append(cols[0])
    if current:
        sentences.append(current)
    return sentences


def write_tiled(sentences, n_tokens, path):
    """Write sentences repeated until ``n_tokens``; returns (tokens, sentences, tiles)."""
    per_pass = sum(map(len, sentences))
    written = n_sent = 0
    with open(path, "w", encoding="utf-8") as f:
        while written < n_tokens:
            for s in sentences:
                f.write("\n".join(s))
                f.write("\n\n")
                written += len(s)
                n_sent += 1
                if written >= n_tokens:
                    break
    return written, n_sent, written / per_pass


# -- children ------------------------------------------------------------------------------


def _status(field):
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def _sampler():
    import threading

    peak = {"anon": _status("RssAnon")}
    stop = threading.Event()

    def loop():
        while not stop.wait(0.02):
            peak["anon"] = max(peak["anon"], _status("RssAnon"))

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return peak, stop


def child_compile(opts):
    peak, stop = _sampler()
    import sscrf

    started = time.perf_counter()
    hashing = opts.get("hash_features")
    info = sscrf.compile_corpus_file(opts["text"], opts["corpus"], templates="default",
                                     max_features=None if hashing else opts["max_features"],
                                     hash_features=hashing)
    stop.set()
    info.update(wall=time.perf_counter() - started, peak_anon=peak["anon"],
                peak_rss=_status("VmHWM"))
    return info


def labeled_set(n):
    sentences, labels, cur, cur_y = [], [], [], []
    with open(os.path.join(host.DATA_ROOT, "conll2000", "train.txt"), encoding="utf-8") as f:
        for line in f:
            cols = line.split()
            if not cols:
                if cur:
                    sentences.append(cur)
                    labels.append(cur_y)
                    cur, cur_y = [], []
                    if len(sentences) == n:
                        break
                continue
            cur.append([cols[0]])
            cur_y.append(cols[-1])
    return sentences, labels


def ge_targets(X, y, classes):
    counts = {}
    for s, ls in zip(X, y):
        for tok, label in zip(s, ls):
            counts.setdefault(tok[0], {}).setdefault(label, 0)
            counts[tok[0]][label] += 1
    top = sorted(counts, key=lambda w: -sum(counts[w].values()))[:20]
    out = {}
    for w in top:
        total = sum(counts[w].values()) + 0.1 * len(classes)
        out[f"U02:{w}"] = {c: (counts[w].get(c, 0) + 0.1) / total for c in classes}
    return out


def child_train(opts):
    peak, stop = _sampler()
    import numpy as np  # noqa: F401
    import sscrf
    from sscrf.corpus_file import CompiledCorpus

    X, y = labeled_set(opts["labeled"])
    classes = sorted({label for s in y for label in s})
    unlabeled = CompiledCorpus.open(opts["corpus"])
    base_anon = _status("RssAnon")
    if opts["in_memory"]:  # the same sentences as lists
        unlabeled = [[[w] for w in s] for s in read_words(opts["text"])]
    n_unlabeled = opts["n_tokens"]
    n_labeled = sum(map(len, X))
    hashed = opts["model"] == "hashed"
    params = dict(templates="default", max_iterations=opts["iterations"],
                  n_threads=opts["threads"], feature_set="dense" if hashed else opts["model"],
                  hash_features=opts["hash_features"] if hashed else None, verbose=False)
    constraints = None
    if opts["term"] == "entropy":
        params["entropy_weight"] = 0.1 * n_labeled / n_unlabeled
    else:
        params["ge_weight"] = 1.0
        constraints = ge_targets(X, y, classes)
    if opts["in_memory"] and not hashed:
        params["max_features"] = opts["max_features"]
    started = time.perf_counter()
    model = sscrf.CRF(**params).fit(X, y, X_unlabeled=unlabeled, constraints=constraints)
    wall = time.perf_counter() - started
    stop.set()
    t = model.training_
    return dict(wall=wall, per_eval=t["seconds"] / max(t["evaluations"], 1),
                evaluations=t["evaluations"], parameters=model.n_parameters_,
                attributes=len(model.extractor_.attributes_), peak_anon=peak["anon"],
                base_anon=base_anon, peak_rss=_status("VmHWM"))


def run_child(kind, opts, timeout):
    env = dict(os.environ, PYTHONPATH=os.path.join(host.REPO_ROOT, "python"))
    proc = subprocess.run([sys.executable, __file__, "--child", kind, json.dumps(opts)],
                          capture_output=True, text=True, timeout=timeout, env=env)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1:] or ["?"]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


# -- parent ----------------------------------------------------------------------------------


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="1e6,3e6,1e7")
    p.add_argument("--iterations", type=int, default=5)
    p.add_argument("--labeled", type=int, default=500)
    p.add_argument("--max-features", type=int, default=200_000)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--terms", default="entropy,ge")
    p.add_argument("--models", default="observed,dense,hashed")
    p.add_argument("--hash-bits", type=int, default=18)
    p.add_argument("--workdir", default=None)
    p.add_argument("--timeout", type=int, default=3600)
    p.add_argument("--json", default=None)
    p.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        kind, opts = args.child
        out = (child_compile if kind == "compile" else child_train)(json.loads(opts))
        print(json.dumps(out))
        return
    sentences = []
    for folder, name in SOURCES:
        sentences += read_words(os.path.join(host.DATA_ROOT, folder, name))
    per_pass = sum(map(len, sentences))
    work = args.workdir or tempfile.mkdtemp(prefix="corpus_scale-")
    os.makedirs(work, exist_ok=True)
    rows, mb = [], 1 << 20
    print(f"# unlabeled text: the word column of {', '.join(f'{a}/{b}' for a, b in SOURCES)}: "
          f"{len(sentences):,} sentences, {per_pass:,} tokens, tiled to each size; "
          f"templates default_templates(1); max_features={args.max_features:,}; "
          f"{args.labeled} labeled sentences (CoNLL-2000 train); {args.iterations} iterations "
          f"per stage; {args.threads} threads; {os.cpu_count()} cores, shared with other work")
    for size in (int(float(s)) for s in args.sizes.split(",")):
        text = os.path.join(work, f"u{size}.txt")
        corpus = os.path.join(work, f"u{size}.corpus")
        n_tokens, n_sent, tiles = write_tiled(sentences, size, text)
        hashed_corpus = os.path.join(work, f"u{size}.hashed.corpus")
        hashing = 1 << args.hash_bits
        compiles = [("max_features", corpus, None)]
        if "hashed" in args.models.split(","):
            compiles.append((f"hashed into {hashing:,}", hashed_corpus, hashing))
        failed = False
        for what, path, buckets in compiles:
            c = run_child("compile", dict(text=text, corpus=path, hash_features=buckets,
                                          max_features=args.max_features), args.timeout)
            if "error" in c:
                print(f"{size:,}: compile ({what}) failed: {c['error']}")
                failed = True
                continue
            print(f"{n_tokens:,} tokens ({tiles:.2f} tiles), {n_sent:,} sentences, {what}: "
                  f"compiled in {c['wall']:.1f} s ({n_tokens / c['wall']:,.0f} tokens/s, peak "
                  f"anon {c['peak_anon'] / mb:.0f} MB), {c['bytes'] / n_tokens:.2f} bytes/token, "
                  f"{c['array_bytes'] / c['nnz']:.2f} bytes/entry (arrays), "
                  f"{c['bytes'] / c['nnz']:.2f} with the vocabulary; {c['nnz']:,} entries, "
                  f"{c['n_attributes']:,} attributes", flush=True)
        if failed:
            continue
        sources = [False] + ([True] if size == min(int(float(s)) for s in
                                                   args.sizes.split(",")) else [])
        for term in args.terms.split(","):
            for model in args.models.split(","):
                for in_memory in sources:
                    opts = dict(text=text, corpus=hashed_corpus if model == "hashed" else corpus,
                                term=term, model=model, in_memory=in_memory,
                                iterations=args.iterations, labeled=args.labeled,
                                threads=args.threads, n_tokens=n_tokens,
                                max_features=args.max_features, hash_features=hashing)
                    r = run_child("train", opts, args.timeout)
                    row = dict(tokens=n_tokens, term=term, model=model,
                               source="memory" if in_memory else "mapped", **r)
                    rows.append(row)
                    if "error" in r:
                        print(f"  {term} {model} {row['source']}: failed: {r['error']}")
                        continue
                    print(f"  {term:7} {model:8} {row['source']:6}: {r['wall']:7.1f} s, "
                          f"{r['per_eval']:.3f} s/eval ({r['evaluations']} evals), "
                          f"{r['parameters']:,} parameters, peak anon "
                          f"{r['peak_anon'] / mb:,.0f} MB, peak RSS {r['peak_rss'] / mb:,.0f} MB",
                          flush=True)
        os.remove(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
