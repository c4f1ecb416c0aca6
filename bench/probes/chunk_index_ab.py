#!/usr/bin/env python
"""Two builds of the package side by side: the bits and the time of one evaluation.

For changes that must leave every result bit for bit as it was (how the
core holds a corpus's chunk index, GE's constraint firings): each build
(``--a`` and ``--b``, folders holding an ``sscrf`` package with its
``_core``) evaluates, in its own process, rounds alternating A and B:

- ``likelihood``: CoNLL-2000 train, the CRFsuite tutorial attributes, the
  every-pair layout, in memory; ``ge_memory``: GE on the same corpus (its 20
  most frequent attributes as constraints, random targets);
- ``entropy`` and ``ge`` (the 20 attributes of lowest id, that is the most
  frequent, as constraints with random targets): a compiled corpus file
  (``--corpus``), memory-mapped, the every-pair layout of its vocabulary
  and CoNLL-2000's 23 labels;

each at 1 and 2 threads, at one random theta (seeded): the SHA-256 of the
loss and the gradient's bytes (must be equal between A and B, and between
1 and 2 threads), the median seconds per evaluation over the rounds, and
the process's anonymous memory (RssAnon) after opening the corpus and at
its peak (sampled every 20 ms).

    python bench/probes/chunk_index_ab.py --a OLD/python --b python --corpus FILE
        [--rounds 5] [--reps 3] [--json OUT]
"""

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
S_CONLL = 23


def _anon():
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    return 0


def _digest(loss, grad):
    import numpy as np
    return hashlib.sha256(np.float64(loss).tobytes() + grad.tobytes()).hexdigest()[:16]


def child(opts):
    import threading

    import numpy as np

    peak = [_anon()]
    stop = threading.Event()

    def sample():
        while not stop.wait(0.02):
            peak[0] = max(peak[0], _anon())

    threading.Thread(target=sample, daemon=True).start()
    from sscrf import _core
    from sscrf.corpus_file import CompiledCorpus
    from sscrf.layout import ParameterLayout
    from sscrf.objectives import OBJECTIVES

    out = {}

    def timed(name, term_of):
        for th in (1, 2):
            term = term_of(th)
            theta = np.random.default_rng(7).normal(0.0, 0.1, term.layout.n_parameters)
            grad = np.empty_like(theta)
            loss, _ = term.value_and_gradient(theta, out=grad)  # builds what is built once
            times = []
            for _ in range(opts["reps"]):
                t0 = time.perf_counter()
                term.value_and_gradient(theta, out=grad)
                times.append(time.perf_counter() - t0)
            out[f"{name}@{th}"] = dict(hash=_digest(loss, grad), seconds=min(times))

    data = np.load(opts["conll"])
    labelled = _core.Corpus(data["indptr"], data["indices"], data["values"], data["offsets"],
                            int(data["n_attributes"]), data["y"], None, None)
    dense = ParameterLayout.every_pair(int(data["n_attributes"]), int(data["S"])).core
    timed("likelihood", lambda th: OBJECTIVES["likelihood"](labelled, dense, th))
    del labelled
    plain = _core.Corpus(data["indptr"], data["indices"], data["values"], data["offsets"],
                         int(data["n_attributes"]), None, None, None)
    freq = np.bincount(data["indices"], minlength=int(data["n_attributes"]))
    cmap = np.full(int(data["n_attributes"]), -1, dtype=np.int64)
    cmap[np.argsort(-freq, kind="stable")[:20]] = np.arange(20)
    targets = np.random.default_rng(3).dirichlet(np.ones(int(data["S"])), 20)
    timed("ge_memory", lambda th: OBJECTIVES["ge"](plain, dense, th, constraint_of_attribute=cmap,
                                                   targets=targets))
    del plain
    compiled = CompiledCorpus.open(opts["corpus"], validate=False)
    f = compiled.features()
    mapped = _core.Corpus(f.indptr, f.indices, f.values, f.offsets, f.n_attributes, None, None,
                          None, None, chunk_tokens=_core.chunk_tokens_for(S_CONLL))
    layout = ParameterLayout.every_pair(f.n_attributes, S_CONLL).core
    out["anon_opened"] = _anon()
    timed("entropy", lambda th: OBJECTIVES["entropy"](mapped, layout, th))
    out["anon_peak_entropy"] = peak[0]
    cmap = np.full(f.n_attributes, -1, dtype=np.int64)
    cmap[:20] = np.arange(20)
    targets = np.random.default_rng(3).dirichlet(np.ones(S_CONLL), 20)
    timed("ge", lambda th: OBJECTIVES["ge"](mapped, layout, th, constraint_of_attribute=cmap,
                                            targets=targets))
    stop.set()
    out["anon_peak"] = peak[0]
    return out


def conll_cache(path):
    """CoNLL-2000 train's tutorial features and labels, saved once."""
    if os.path.exists(path):
        return
    sys.path.insert(0, ROOT)
    import numpy as np

    from bench.lib import host
    from bench.lib.corpora import CONLL2000, load_conll2000
    features, y, S = load_conll2000(os.path.join(host.DATA_ROOT, CONLL2000))
    np.savez(path, indptr=features.indptr, indices=features.indices,
             values=np.ascontiguousarray(features.values), offsets=features.offsets,
             n_attributes=features.n_attributes, y=y, S=S)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--a")
    p.add_argument("--b")
    p.add_argument("--corpus")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--conll-cache", default="/tmp/chunk_index_ab_conll2000.npz")
    p.add_argument("--json", default=None)
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return
    if not (args.a and args.b and args.corpus):
        p.error("--a, --b and --corpus are required")
    env0 = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {ROOT!r}); "
                    "from bench.probes.chunk_index_ab import conll_cache; "
                    f"conll_cache({args.conll_cache!r})"], check=True, env=env0)
    opts = json.dumps(dict(conll=args.conll_cache, corpus=args.corpus, reps=args.reps))
    runs = {"A": [], "B": []}
    for r in range(args.rounds):
        for name, folder in (("A", args.a), ("B", args.b)):
            env = dict(os.environ, PYTHONPATH=os.path.abspath(folder))
            proc = subprocess.run([sys.executable, __file__, "--child", opts], env=env,
                                  capture_output=True, text=True, check=True)
            runs[name].append(json.loads(proc.stdout.strip().splitlines()[-1]))
            print(f"round {r} {name} done", file=sys.stderr, flush=True)
    mb = 1 << 20
    keys = [k for k in runs["A"][0] if "@" in k]
    print(f"{'evaluation':16} {'A s':>8} {'B s':>8} {'B/A':>6}  hash A / B")
    for k in keys:
        a = statistics.median(x[k]["seconds"] for x in runs["A"])
        b = statistics.median(x[k]["seconds"] for x in runs["B"])
        ha = {x[k]["hash"] for x in runs["A"]}
        hb = {x[k]["hash"] for x in runs["B"]}
        print(f"{k:16} {a:8.4f} {b:8.4f} {b / a:6.3f}  {'/'.join(sorted(ha))} "
              f"{'==' if ha == hb else '!='} {'/'.join(sorted(hb))}")
    for k in ("anon_opened", "anon_peak_entropy", "anon_peak"):
        print(f"{k:18} A {statistics.median(x[k] for x in runs['A']) / mb:8.1f} MB   "
              f"B {statistics.median(x[k] for x in runs['B']) / mb:8.1f} MB")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(runs, f, indent=1)


if __name__ == "__main__":
    main()
