#!/usr/bin/env python
"""Time per loss-and-gradient evaluation against CRFsuite on corpora of other shapes.

The real corpora (``eval_time_conll2000.py``, ``eval_time.py``) have
3 to 49 labels, 7 to 20 attributes per token and sentences of tens of
tokens. Users bring others: binary or BIES segmentation, named-entity
models with rich templates (tens of attributes per token), tag sets of
hundreds, whole documents as one sequence. Each shape changes which part of
an evaluation dominates (the lattice's O(S²) per token, scoring and
back-projection, the buffers' sizes), so this script generates one
synthetic corpus per shape and repeats the suite's corpora measurement
on it:

==========  ======  ============  ==============================  ===================
shape       labels  attributes    sentences                       what it stresses
==========  ======  ============  ==============================  ===================
binary      2       10            3,000 of 10-39 tokens           per-token overhead
bies        4       10            3,000 of 10-39 tokens           the 4-label path
wide        9       60            2,000 of 10-39 tokens           scoring, back-projection
many        150     8             1,500 of 10-29 tokens           the S² lattice, S-wide rows
long        10      8             60 of 2,000 tokens              long lattices, few sequences
==========  ======  ============  ==============================  ===================

Labels follow a random Markov chain (Dirichlet(0.3) rows); half of each
token's attributes are drawn around its label, half are noise (Zipf ids).
Both tools get the same feature dicts; CRFsuite trains ``--iterations``
L-BFGS iterations with c2 = 1 and all transitions, and its time per
evaluation is its training time over its evaluations; sscrf's is the median
of 5 direct calls of the ``likelihood`` term at the weights it reaches
after the same iterations (see ``eval_time.py``).

    python bench/probes/eval_time_shapes.py [--shapes binary,bies,wide,many,long] [--terms] [--tagging]
        [--iterations 5] [--repeats 3] [--threads 1,2] [--out bench/results]

``--terms`` also times the entropy, partial and alternatives terms against the
likelihood (item 3 of the suite, on these shapes); ``--tagging`` compares
Viterbi tagging throughput with CRFsuite's (item 4).

Writes ``eval_time_shapes.md`` and ``.json`` under ``--out``.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))  # the repository root, for bench.lib

from bench.lib import host, tables  # noqa: E402
from bench.lib import eval_time  # noqa: E402

# name: (labels, attributes per token, sentences, length range or fixed length)
SHAPES = {
    "binary": (2, 10, 3000, (10, 40)),
    "bies": (4, 10, 3000, (10, 40)),
    "wide": (9, 60, 2000, (10, 40)),
    "many": (150, 8, 1500, (10, 30)),
    "long": (10, 8, 60, 2000),
}
VOCABULARY = 20000  # distinct values per attribute slot
SETTINGS = ("Synthetic corpora, the same feature dicts to both tools, c2 = 1; CRFsuite with "
            "observed pairs; ratios of medians of alternating repetitions (below 1: sscrf is "
            "faster).")


def synthetic_corpus(S, n_attributes, n_sentences, length, seed=0):
    """Feature dicts and label strings of a corpus of the given shape (see the docstring)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    chain = rng.dirichlet(np.full(S, 0.3), size=S)
    X, y = [], []
    for _ in range(n_sentences):
        n = length if isinstance(length, int) else int(rng.integers(*length))
        labels = [int(rng.integers(S))]
        for _ in range(n - 1):
            labels.append(int(rng.choice(S, p=chain[labels[-1]])))
        ids = rng.zipf(1.3, size=(n, n_attributes)) % VOCABULARY
        ids[:, ::2] = (ids[:, ::2] * 7 + np.asarray(labels)[:, None] * 1009) % VOCABULARY
        X.append([{f"a{k}={v}": 1.0 for k, v in enumerate(row)} for row in ids.tolist()])
        y.append([f"L{label}" for label in labels])
    return X, y


def term_costs(X, y, repeats):
    """Median seconds per call of the likelihood, entropy, partial and alternatives terms
    at 1 thread on (X, y), calls interleaved, with the scaling item's setup (dense
    layout, random weights; bench/suite/scaling.py)."""
    import statistics

    import numpy as np

    from sscrf.features import FeatureExtractor
    from sscrf.objectives import OBJECTIVES

    from bench.lib import workloads
    from sscrf.layout import ParameterLayout

    (features,) = FeatureExtractor(None).fit_transform(X)
    labels = sorted({label for s in y for label in s})
    index = {label: i for i, label in enumerate(labels)}
    gold = np.array([index[label] for s in y for label in s], dtype=np.int32)
    S = len(labels)
    layout = ParameterLayout.every_pair(features.n_attributes, S).core
    theta = 0.1 * np.random.default_rng(0).standard_normal(layout.n_parameters)
    rng = np.random.default_rng(1)
    mask, _ = workloads.partial_mask(gold, S, rng)
    alternatives, groups = workloads.alternatives_setup(features, gold, S, rng)
    terms = {
        "likelihood": OBJECTIVES["likelihood"](workloads.corpus(features, labels=gold), layout, 1),
        "entropy": OBJECTIVES["entropy"](workloads.corpus(features), layout, 1, method="fast"),
        "partial_likelihood": OBJECTIVES["partial_likelihood"](
            workloads.corpus(features, mask=mask), layout, 1),
        "alternatives": OBJECTIVES["alternatives"](features, alternatives, groups, layout, 1),
    }
    out = np.empty_like(theta)
    seconds = {name: [] for name in terms}
    for term in terms.values():  # warm-up
        term.value_and_gradient(theta, out=out)
    for _ in range(max(repeats, 3)):
        for name, term in terms.items():
            started = time.perf_counter()
            term.value_and_gradient(theta, out=out)
            seconds[name].append(time.perf_counter() - started)
    return {name: statistics.median(v) for name, v in seconds.items()}


def tagging_rates(X, y, repeats, sentences=500):
    """Viterbi tokens per second of sscrf (1 thread, from feature dicts) and CRFsuite's
    Tagger.tag on the first ``sentences`` sentences, both models trained 10 iterations;
    medians over alternating rounds."""
    import statistics
    import tempfile

    import pycrfsuite

    import sscrf

    model = sscrf.CRF(max_iterations=10, verbose=False, n_threads=1).fit(X, y)
    trainer = pycrfsuite.Trainer(verbose=False)
    for x, labels in zip(X, y):
        trainer.append(x, labels)
    trainer.set_params({"c1": 0.0, "c2": 1.0, "max_iterations": 10,
                        "feature.possible_transitions": True})
    sample = X[:sentences]
    n_tokens = sum(map(len, sample))
    ours, theirs = [], []
    with tempfile.TemporaryDirectory() as tmp:
        trainer.train(os.path.join(tmp, "m"))
        tagger = pycrfsuite.Tagger()
        tagger.open(os.path.join(tmp, "m"))
        for _ in range(max(repeats, 3)):
            started = time.perf_counter()
            model.predict(sample)
            ours.append(time.perf_counter() - started)
            started = time.perf_counter()
            for x in sample:
                tagger.tag(x)
            theirs.append(time.perf_counter() - started)
        tagger.close()
    return {"sscrf": n_tokens / statistics.median(ours),
            "crfsuite": n_tokens / statistics.median(theirs)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default=",".join(SHAPES),
                        help="comma-separated, of " + ", ".join(SHAPES))
    parser.add_argument("--terms", action="store_true",
                        help="also time the entropy, partial and alternatives terms against "
                             "the likelihood per token (1 thread, dense layout)")
    parser.add_argument("--tagging", action="store_true",
                        help="also compare Viterbi tagging throughput with CRFsuite's")
    eval_time.add_measure_arguments(parser, "observed", 5)
    args = parser.parse_args(argv)
    shapes, thread_counts = eval_time.check_measure_arguments(
        parser, args, args.shapes, SHAPES, "--shapes")

    machine = host.machine_line()
    rows = []
    for name in shapes:
        print(f"[{time.strftime('%H:%M:%S')}] {name}: generating", file=sys.stderr, flush=True)
        X, y = synthetic_corpus(*SHAPES[name])
        rows.append(eval_time.measure(name, X, y, args, thread_counts))
        if args.terms:
            rows[-1]["term_seconds"] = term_costs(X, y, args.repeats)
        if args.tagging:
            rows[-1]["tagging_tokens_per_s"] = tagging_rates(X, y, args.repeats)
    lines = ["# Time per loss-and-gradient evaluation against CRFsuite, synthetic shapes", "",
             machine, "", SETTINGS, "", eval_time.table(rows)]
    if args.terms:
        names = list(rows[0]["term_seconds"])
        cells = [[r["corpus"], str(r["labels"])] + [
            f"{r['term_seconds'][n] * 1e3:.1f} ms ({r['term_seconds'][n] / r['term_seconds']['likelihood']:.2f}x)"
            for n in names] for r in rows]
        lines += ["", "Each term per call at 1 thread, dense layout, random weights (the suite's "
                  "scaling setup), medians of interleaved calls; in brackets against the "
                  "likelihood:", "", tables.markdown_table(["corpus", "labels"] + names, cells)]
    if args.tagging:
        cells = [[r["corpus"], str(r["labels"]), f"{r['tagging_tokens_per_s']['sscrf']:,.0f}",
                  f"{r['tagging_tokens_per_s']['crfsuite']:,.0f}",
                  f"{r['tagging_tokens_per_s']['sscrf'] / r['tagging_tokens_per_s']['crfsuite']:.2f}x"]
                 for r in rows]
        lines += ["", "Viterbi tagging of 500 sentences from feature dicts, 1 thread, models "
                  "trained 10 iterations (tokens per second, medians of alternating rounds):", "",
                  tables.markdown_table(["corpus", "labels", "sscrf predict",
                                          "CRFsuite Tagger.tag", "speed-up"], cells)]
    text = "\n".join(lines) + "\n"
    eval_time.write_report(args, machine, rows, "eval_time_shapes", text)


if __name__ == "__main__":
    main()
