#!/usr/bin/env python
"""Peak memory of training against corpus size: does it grow only per token?

The design (docs/architecture.md, "Objectives: chunked, deterministic evaluation") asks
that training memory be the corpus plus the parameters plus the optimiser plus
one chunk's working set, with nothing that grows as tokens × labels for the
whole corpus. This benchmark trains on CoNLL-2000 ``train.txt`` **tiled**
k times (the file read k times, so every token of every tile is a distinct
Python object, as it would be in a k-times larger file) with
``templates="default"`` and ``max_iterations`` (default 3), in two modes:

- ``supervised``: ``CRF().fit(X, y)`` (``observed`` feature set);
- ``entropy``: ``CRF(entropy_weight=0.1).fit(X, y, X_unlabeled=X)``: the
  same sentences again, without labels, for the entropy term (``dense``
  feature set; a supervised warm start runs first, as ``fit`` does);
- ``phases`` (diagnostic, no training): the steps of ``fit`` that hold
  per-token memory, one after the other, with the RSS after each: template
  extraction to the numpy CSR matrix (``FeatureExtractor.fit_transform``),
  then the C++ corpus with its chunk index (``sscrf._core.Corpus``, as
  ``fit`` builds it), then the numpy matrix dropped. It says where the
  per-token bytes of the other modes go.

Tiling repeats the same sentences, so the attribute vocabulary, the label
set and the parameter vector are identical at every k (the report checks
this): the growth of the peak from 1x to kx is memory per token, and
``bytes/token = (peak(kx) - peak(1x)) / (tokens(kx) - tokens(1x))``.

Each configuration runs in a fresh child process (this script with
``--child MODE K``) that reports ``ru_maxrss`` at three points: after its
imports (numpy, scipy, sscrf: the baseline), after reading the corpus
(``read``), and after ``fit`` (``peak``). ``ru_maxrss`` is a high-water mark,
so each value is the peak up to that point; ``fit - read`` per token is what
training adds per token on top of the Python corpus. The parent imports only
the standard library (a child's ``ru_maxrss`` cannot be below the parent's
RSS at spawn; that floor is printed).

Usage::

    python bench/probes/memory_scaling.py [--data ../shared/data/conll2000]
        [--tiles 1,4,16] [--modes supervised,entropy] [--max-iterations 3]
        [--threads N] [--timeout SECONDS] [--json OUT]

On a small or busy machine use ``--tiles 1,2,4,8``.
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))  # the repository root, for bench.lib
from bench.lib import host, tables, timing  # noqa: E402

DEFAULT_DATA = os.path.join(host.DATA_ROOT, "conll2000")
MODES = ("supervised", "entropy", "phases")


# -- child ----------------------------------------------------------------------


def _rss_now():
    """Current resident set size in bytes (VmRSS), or None off Linux."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def child(args):
    import resource

    def peak():
        r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return r if sys.platform == "darwin" else r * 1024

    import numpy as np  # noqa: F401

    import sscrf.model  # noqa: F401  (everything fit imports)
    from sscrf import CRF
    from sscrf.io import read_conll

    out = {"mode": args.child_mode, "tiles": args.child_tiles,
           "rss_after_imports": _rss_now(), "peak_after_imports": peak()}
    path = os.path.join(args.data, "train.txt")
    started = time.perf_counter()
    X, y = [], []
    for _ in range(args.child_tiles):
        corpus = read_conll(path)  # a fresh read: distinct objects per tile
        X += corpus.tokens
        y += corpus.labels
        del corpus
    out["read_seconds"] = time.perf_counter() - started
    out["sentences"] = len(X)
    out["tokens"] = sum(map(len, X))
    out["peak_after_read"] = peak()
    if args.child_mode == "phases":
        phases(out, X, y, peak)
        print(json.dumps(out))
        return
    entropy = args.child_mode == "entropy"
    model = CRF(templates="default", max_iterations=args.max_iterations, n_threads=args.threads,
                entropy_weight=0.1 if entropy else 0.0, verbose=False)
    started = time.perf_counter()
    model.fit(X, y, X_unlabeled=X if entropy else None)
    out["fit_seconds"] = time.perf_counter() - started
    out["peak_after_fit"] = peak()
    out["n_attributes"] = len(model.extractor_.attributes_)
    out["n_parameters"] = int(model.n_parameters_)
    out["n_labels"] = len(model.classes_)
    out["feature_set"] = model.feature_set_
    out["iterations"] = model.training_["iterations"]
    # Attributes per token, for reading the per-token bytes (measured after
    # the peak was taken, on one tile only).
    one = model.extractor_.transform(X[:len(X) // args.child_tiles])
    out["nnz_per_token"] = one.nnz / max(one.n_tokens, 1)
    print(json.dumps(out))


def phases(out, X, y, peak):
    """Peak and current RSS after each per-token step of fit (mode ``phases``)."""
    import gc

    import numpy as np

    from sscrf.features import FeatureExtractor, default_templates

    from sscrf.corpus import compile_corpus

    out["rss_after_read"] = _rss_now()
    extractor = FeatureExtractor(default_templates(2))
    (features,) = extractor.fit_transform(X)
    gc.collect()
    out["peak_after_extract"] = peak()
    out["rss_after_extract"] = _rss_now()
    out["nnz_per_token"] = features.nnz / max(features.n_tokens, 1)
    # bytes held, not nbytes: all-ones values are a stride-0 view of one 1.0
    held = lambda a: a.itemsize if a.ndim and a.strides[0] == 0 else a.nbytes  # noqa: E731
    out["csr_bytes"] = int(held(features.indptr) + held(features.indices)
                           + held(features.values) + held(features.offsets))
    index = {label: i for i, label in enumerate(sorted({l for s in y for l in s}))}
    labels = np.fromiter((index[l] for s in y for l in s), dtype=np.int32)
    corpus = compile_corpus(features, labels=labels)
    # What the C++ corpus holds (cpp/layer/corpus.hpp): its CSR copy (int64 indptr,
    # int32 ids, double values), int32 labels, int64 offsets, and per chunk
    # of whole sentences of at most 32768 tokens (corpus.cpp) the attribute
    # index: int32 token + double value per entry, plus an int32 id and an
    # int64 pointer per distinct attribute of the chunk.
    n, nnz = features.n_tokens, features.nnz
    out["cpp_csr_bytes"] = 8 * (n + 1) + 12 * nnz + 4 * n + 8 * len(features.offsets)
    distinct, start, offsets = 0, 0, features.offsets
    while start < len(offsets) - 1:
        stop = start + 1
        while stop < len(offsets) - 1 and offsets[stop + 1] - offsets[start] <= 32768:
            stop += 1
        k0, k1 = features.indptr[offsets[start]], features.indptr[offsets[stop]]
        distinct += len(np.unique(features.indices[k0:k1]))
        start = stop
    out["cpp_chunk_index_bytes"] = 12 * nnz + 12 * distinct
    out["n_chunks"] = corpus.n_chunks  # builds the chunk index, as fit's first evaluation does
    out["peak_after_corpus"] = peak()
    out["rss_after_corpus"] = _rss_now()
    del features
    gc.collect()
    out["rss_without_numpy_csr"] = _rss_now()
    out["peak_after_fit"] = peak()
    out["n_attributes"] = len(extractor.attributes_)
    out["n_parameters"] = 0
    out["n_labels"] = len(index)
    out["feature_set"] = "none (no training)"
    out["fit_seconds"] = 0.0
    del corpus


# -- parent ---------------------------------------------------------------------


def _per_token(a, b, key):
    extra = b["tokens"] - a["tokens"]
    return (b[key] - a[key]) / extra if extra > 0 else None


def _print_phases(results, tiles):
    got = [(k, results["phases", k]) for k in tiles if ("phases", k) in results]
    if not got:
        return
    keys = [("after imports (current)", "rss_after_imports"),
            ("after read (current)", "rss_after_read"),
            ("extraction peak", "peak_after_extract"),
            ("after extraction (current: + numpy CSR)", "rss_after_extract"),
            ("C++ corpus build peak", "peak_after_corpus"),
            ("after C++ corpus (current: + CSR copy + chunk index)", "rss_after_corpus"),
            ("numpy CSR dropped (current)", "rss_without_numpy_csr")]
    headers = ["phases: RSS MB"] + [f"{k}x" for k, _ in got]
    if len(got) > 1:
        headers.append(f"bytes/token {got[0][0]}x→{got[-1][0]}x")
    rows = []
    extra = got[-1][1]["tokens"] - got[0][1]["tokens"]
    for name, key in keys:
        row = [name] + [tables.fmt_mb(r[key]) for _, r in got]
        if len(got) > 1:
            row.append(f"{(got[-1][1][key] - got[0][1][key]) / extra:.0f}" if extra else "—")
        rows.append(row)
    for name, key in (("C++ CSR copy + labels (computed)", "cpp_csr_bytes"),
                      ("C++ chunk index (computed)", "cpp_chunk_index_bytes")):
        rows.append([name] + [tables.fmt_mb(r[key]) for _, r in got]
                    + ([f"{(got[-1][1][key] - got[0][1][key]) / extra:.0f}"]
                       if len(got) > 1 and extra else []))
    rows.append(["numpy CSR arrays (computed)"] + [tables.fmt_mb(r["csr_bytes"]) for _, r in got]
                + ([f"{(got[-1][1]['csr_bytes'] - got[0][1]['csr_bytes']) / extra:.0f}"]
                   if len(got) > 1 and extra else []))
    print(tables.markdown_table(headers, rows))
    print(f"(phases: {got[0][1]['nnz_per_token']:.2f} attributes per token; "
          f"{got[-1][1]['n_chunks']} chunks at {got[-1][0]}x)")
    print()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=DEFAULT_DATA)
    parser.add_argument("--tiles", default="1,4,16",
                        help="comma-separated tiling factors; the first is the reference")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--max-iterations", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None,
                        help="n_threads of the model (default: every core)")
    parser.add_argument("--timeout", type=float, default=1800.0,
                        help="seconds per child before it is killed")
    parser.add_argument("--json", help="also write the measurements here")
    parser.add_argument("--child", nargs=2, metavar=("MODE", "K"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        args.child_mode, args.child_tiles = args.child[0], int(args.child[1])
        child(args)
        return 0

    tiles = [int(t) for t in args.tiles.split(",")]
    modes = [m for m in args.modes.split(",") if m]
    for m in modes:
        if m not in MODES:
            parser.error(f"unknown mode {m!r}; modes are {', '.join(MODES)}")
    print("# Peak RSS of training vs corpus size (CoNLL-2000 train.txt, tiled)")
    print()
    print(host.machine_line())
    print(f"data: {os.path.join(args.data, 'train.txt')}, TILED {tiles} times "
          "(the file read k times: distinct Python objects per tile, same vocabulary)")
    print(f"templates='default', max_iterations={args.max_iterations}, "
          f"n_threads={args.threads or 'all cores'}; entropy mode: entropy_weight=0.1, "
          "X_unlabeled = the same sentences (without labels)")
    floor = timing.child_rss_floor()
    print(f"child RSS floor (bare `python -c pass` from this parent): {tables.fmt_mb(floor)} MB")
    print()
    sys.stdout.flush()

    results = {}
    for mode in modes:
        for k in tiles:
            cmd = [sys.executable, os.path.abspath(__file__), "--data", args.data,
                   "--max-iterations", str(args.max_iterations), "--child", mode, str(k)]
            if args.threads:
                cmd[2:2] = ["--threads", str(args.threads)]
            try:
                res = timing.run_child(cmd, timeout=args.timeout)
            except Exception as e:  # noqa: BLE001  (timeout: report and go on)
                print(f"{mode} {k}x: {type(e).__name__}: {e}", flush=True)
                continue
            if res.returncode != 0:
                print(f"{mode} {k}x: child failed (exit {res.returncode}, peak "
                      f"{tables.fmt_mb(res.peak_rss_bytes)} MB):\n{res.stderr[-2000:]}",
                      flush=True)
                continue
            r = json.loads(res.stdout.strip().splitlines()[-1])
            r["wait4_peak"] = res.peak_rss_bytes
            r["wall_seconds"] = res.wall_s
            results[mode, k] = r
            print(f"{mode} {k}x: {r['tokens']} tokens, peak {tables.fmt_mb(r['peak_after_fit'])} "
                  f"MB, read {r['read_seconds']:.1f} s, fit {r['fit_seconds']:.1f} s", flush=True)
    print()

    trained = [m for m in modes if m != "phases"]
    headers = ["mode", "tiles", "tokens", "params", "after imports MB", "after read MB",
               "peak MB", "Δpeak MB vs first", "bytes/token (peak)",
               "bytes/token (read)", "bytes/token (fit−read)", "fit s"]
    rows = []
    for mode in trained:
        ref = results.get((mode, tiles[0]))
        for k in tiles:
            r = results.get((mode, k))
            if r is None:
                rows.append([mode, f"{k}x", "failed"] + [""] * (len(headers) - 3))
                continue
            per = per_read = per_fit = None
            if ref is not None and r is not ref:
                per = _per_token(ref, r, "peak_after_fit")
                per_read = _per_token(ref, r, "peak_after_read")
                fit_part = {key: r[key] for key in ("tokens",)}
                fit_part["d"] = r["peak_after_fit"] - r["peak_after_read"]
                ref_part = {"tokens": ref["tokens"],
                            "d": ref["peak_after_fit"] - ref["peak_after_read"]}
                per_fit = _per_token(ref_part, fit_part, "d")
            rows.append([
                mode, f"{k}x", r["tokens"], r["n_parameters"],
                tables.fmt_mb(r["rss_after_imports"]), tables.fmt_mb(r["peak_after_read"]),
                tables.fmt_mb(r["peak_after_fit"]),
                ("—" if ref is None
                 else tables.fmt_mb(r["peak_after_fit"] - ref["peak_after_fit"])),
                "—" if per is None else f"{per:.0f}",
                "—" if per_read is None else f"{per_read:.0f}",
                "—" if per_fit is None else f"{per_fit:.0f}",
                f"{r['fit_seconds']:.1f}",
            ])
    print(tables.markdown_table(headers, rows))
    print()
    if "phases" in modes:
        _print_phases(results, tiles)
    for mode in trained:
        got = [results[mode, k] for k in tiles if (mode, k) in results]
        if got:
            same = len({(r["n_parameters"], r["n_attributes"]) for r in got}) == 1
            r = got[0]
            print(f"{mode}: {r['n_attributes']} attributes, {r['n_labels']} labels, "
                  f"{r['n_parameters']} parameters ({r['feature_set']}), "
                  f"{r['nnz_per_token']:.2f} attributes per token; parameters identical "
                  f"across tiles: {'yes' if same else 'NO'}")
    print()
    print("bytes/token (peak): growth of the peak over the extra tokens; (read): the same "
          "for the peak after reading the corpus (Python lists of str); (fit−read): what "
          "fit adds on top of the corpus, per extra token.")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({f"{m} {k}": v for (m, k), v in results.items()}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
