"""Time per loss-and-gradient evaluation, sscrf against CRFsuite, on any corpus.

:func:`measure` trains CRFsuite (observed attribute-label pairs) for
``--iterations`` L-BFGS iterations and takes its time per evaluation as its
training time over its evaluation count; sscrf's is the median of 5 direct
calls of the ``likelihood`` term (writing into one reused gradient buffer,
as training does) at the weights sscrf reaches after the same iterations,
at each thread count and feature set. Repetitions alternate the tools.

Standard library only at import (numpy, sscrf and pycrfsuite are imported
by :func:`measure`), so that the suite's parent process stays small.
"""

import json
import os
import statistics
import sys
import time

from bench.lib import host, tables, timing

__all__ = ["measure", "table", "SETTINGS", "add_measure_arguments", "check_measure_arguments",
           "write_report"]


def _log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def measure(name, X, y, args, thread_counts):
    import numpy as np

    import sscrf
    from sscrf.corpus import compile_corpus
    from sscrf.inputs import encode_labels
    from sscrf.objectives import OBJECTIVES

    n_tokens = sum(len(s) for s in y)
    row = {"corpus": name, "sentences": len(X), "tokens": n_tokens,
           "labels": len({label for s in y for label in s}), "sscrf": {}}
    terms = {}
    for fs in args.feature_sets:
        model = sscrf.CRF(max_iterations=args.iterations, feature_set=fs, verbose=False,
                          n_threads=max(thread_counts))
        model.fit(X, y)
        features = model.extractor_.transform(X)
        labels = encode_labels(y, {label: i for i, label in enumerate(model.classes_)})
        corpus = compile_corpus(features, labels=labels)
        row.setdefault("attributes_per_token", len(features.indices) / n_tokens)
        row.setdefault("parameters", {})[fs] = model.n_parameters_
        for k in thread_counts:
            terms[fs, k] = (OBJECTIVES["likelihood"](corpus, model.layout_.core, k), model.coef_,
                            np.empty_like(model.coef_))
    crfsuite, ours = [], {key: [] for key in terms}
    for rep in range(args.repeats):
        crfsuite.append(timing.crfsuite_seconds_per_evaluation(X, y, args.iterations))
        for key, (term, weights, out) in terms.items():
            ours[key].append(timing.median_call_seconds(term, weights, out))
        _log(f"{name}: repetition {rep + 1}/{args.repeats} done")
    row["crfsuite_s"] = statistics.median(crfsuite)
    for (fs, k), values in ours.items():
        s = statistics.median(values)
        row["sscrf"][f"{fs}, {k} thread{'s' if k > 1 else ''}"] = {
            "s": s, "ratio": s / row["crfsuite_s"]}
    return row


def table(rows):
    """The Markdown table of ``rows`` (as ``measure`` returns them)."""
    configurations = list(rows[0]["sscrf"])
    header = ["corpus", "tokens", "labels", "attributes per token", "CRFsuite s"]
    header += [f"sscrf {c}" for c in configurations]
    cells = []
    for r in rows:
        line = [r["corpus"], f"{r['tokens']:,}", str(r["labels"]),
                f"{r['attributes_per_token']:.1f}", f"{r['crfsuite_s']:.3f}"]
        line += [f"{r['sscrf'][c]['s']:.3f} s ({r['sscrf'][c]['ratio']:.2f}x)"
                 for c in configurations]
        cells.append(line)
    return tables.markdown_table(header, cells)


SETTINGS = ("Same feature dicts to both tools (`bench/lib/features_words.py`), c2 = 1; CRFsuite "
            "with observed pairs; ratios of medians of alternating repetitions (below 1: "
            "sscrf is faster).")


def add_measure_arguments(parser, feature_sets, iterations):
    """The options of :func:`measure` ."""
    parser.add_argument("--feature-sets", default=feature_sets)
    parser.add_argument("--iterations", type=int, default=iterations)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", default="1,2",
                        help="sscrf thread counts, comma-separated (default 1,2)")
    parser.add_argument("--out", default=os.path.join(host.REPO_ROOT, "bench", "results"))


def check_measure_arguments(parser, args, names, known, option):
    """Validates the options of add_measure_arguments and ``option`` (a comma-separated
    choice of ``known``); returns (the chosen names, the thread counts)."""
    chosen = names.split(",")
    unknown = [c for c in chosen if c not in known]
    if unknown:
        parser.error(f"{option}: unknown {unknown}; choose from {', '.join(known)}")
    args.feature_sets = args.feature_sets.split(",")
    if not set(args.feature_sets) <= {"observed", "dense"}:
        parser.error("--feature-sets: observed and/or dense")
    try:
        thread_counts = [int(t) for t in args.threads.split(",")]
    except ValueError:
        thread_counts = []
    if not thread_counts or min(thread_counts) < 1:
        parser.error(f"--threads: comma-separated positive integers, not {args.threads!r}")
    if args.iterations < 1 or args.repeats < 1:
        parser.error("--iterations and --repeats must be at least 1")
    return chosen, thread_counts


def write_report(args, machine, rows, stem, text):
    """Prints ``text`` and writes it to OUT/stem.md, the rows to OUT/stem.json."""
    print(text)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, f"{stem}.md"), "w") as f:
        f.write(text)
    with open(os.path.join(args.out, f"{stem}.json"), "w") as f:
        json.dump({"machine": machine, "args": vars(args), "rows": rows}, f, indent=1)
