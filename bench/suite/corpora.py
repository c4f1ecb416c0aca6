#!/usr/bin/env python
"""Time per loss-and-gradient evaluation against CRFsuite on corpora other than CoNLL-2000.

The suite's per-evaluation targets are measured on CoNLL-2000 chunking (22
labels, about 20 attributes per token). The cost of both tools depends on the
label count and on the attributes per token, so this script repeats the
measurement on the other corpora in ``../shared/data``:

- ``bc2gm``: BioCreative II gene mention, ``conll/train.tsv``, 3 labels
  (B-GENE, I-GENE, O), the few-label case of named-entity tagging;
- ``ewt-upos`` and ``ewt-xpos``: UD English EWT ``train``, 17 and 49 tags.

Both tools get the same feature dicts per token (``ge_pos.token_features``:
lower-cased word, 2- and 3-letter suffixes, first letter, shape class, digit
and hyphen flags, previous and next word; about 7 attributes per token), c2
= 1, all label transitions. CRFsuite (observed attribute-label pairs) trains
``--iterations`` L-BFGS iterations; its time per evaluation is its training
time over its evaluation count. sscrf's is the median of 5 direct calls of
the ``likelihood`` term (writing into one reused gradient buffer, as
training does) at the weights that sscrf reaches after the same iterations,
at each thread count, for the ``observed`` and ``dense`` feature sets.
Repetitions alternate the tools; the table gives medians and ratios of
medians.

    python bench/eval_time_corpora.py [--corpora bc2gm,ewt-upos,ewt-xpos]
        [--iterations 10] [--repeats 3] [--threads 1,2] [--out bench/results]

Writes ``eval_time_corpora.md`` and ``.json`` under ``--out``.
"""

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _common  # noqa: E402  (stdlib only: bench/run.py imports this module)

DATA = os.path.join(os.path.dirname(_common.REPO_ROOT), "shared", "data")
CORPORA = {
    "bc2gm": ("bc2gm/conll/train.tsv", None),
    "ewt-upos": ("ud-english-ewt/en_ewt-ud-train.conllu", "upos"),
    "ewt-xpos": ("ud-english-ewt/en_ewt-ud-train.conllu", "xpos"),
}


def _log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def read_corpus(name, data_dir):
    from ge_pos import token_features
    from sscrf.io import read_conll, read_conllu

    path, column = CORPORA[name]
    path = os.path.join(data_dir, path)
    if not os.path.exists(path):
        raise SystemExit(f"{name}: {path} not found (--data names the folder of the corpora)")
    corpus = read_conll(path) if column is None else read_conllu(path, label_column=column)
    return [token_features(s) for s in corpus.tokens], corpus.labels


def measure(name, X, y, args, thread_counts):
    import numpy as np

    import sscrf
    from sscrf.model import _compile, _encode_labels
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
        labels = _encode_labels(y, {label: i for i, label in enumerate(model.classes_)})
        corpus = _compile(features, labels=labels)
        row.setdefault("attributes_per_token", len(features.indices) / n_tokens)
        row.setdefault("parameters", {})[fs] = model.n_parameters_
        for k in thread_counts:
            terms[fs, k] = (OBJECTIVES["likelihood"](corpus, model._layout(), k), model.coef_,
                            np.empty_like(model.coef_))
    crfsuite, ours = [], {key: [] for key in terms}
    for rep in range(args.repeats):
        crfsuite.append(_common.crfsuite_seconds_per_evaluation(X, y, args.iterations))
        for key, (term, weights, out) in terms.items():
            ours[key].append(_common.median_call_seconds(term, weights, out))
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
    return _common.markdown_table(header, cells)


SETTINGS = ("Same feature dicts to both tools (`ge_pos.token_features`), c2 = 1; CRFsuite "
            "with observed pairs; ratios of medians of alternating repetitions (below 1: "
            "sscrf is faster).")


def report(rows, machine):
    return "\n".join(["# Time per loss-and-gradient evaluation against CRFsuite, other corpora",
                      "", machine, "", SETTINGS, "", table(rows)]) + "\n"


def present_corpora(data_dir):
    """The corpora whose files are under ``data_dir``."""
    return [name for name, (path, _) in CORPORA.items()
            if os.path.exists(os.path.join(data_dir, path))]


def add_measure_arguments(parser, feature_sets, iterations):
    """The options of :func:`measure` (shared with eval_time_shapes.py)."""
    parser.add_argument("--feature-sets", default=feature_sets)
    parser.add_argument("--iterations", type=int, default=iterations)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", default="1,2",
                        help="sscrf thread counts, comma-separated (default 1,2)")
    parser.add_argument("--out", default=os.path.join(_common.REPO_ROOT, "bench", "results"))


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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=DATA, help="folder of the corpora (default %(default)s)")
    parser.add_argument("--corpora", default=",".join(CORPORA),
                        help="comma-separated, of " + ", ".join(CORPORA))
    add_measure_arguments(parser, "observed,dense", 10)
    args = parser.parse_args(argv)
    corpora, thread_counts = check_measure_arguments(parser, args, args.corpora, CORPORA,
                                                     "--corpora")

    machine = _common.machine_line()
    rows = []
    for name in corpora:
        _log(f"{name}: reading and extracting features")
        X, y = read_corpus(name, args.data)
        rows.append(measure(name, X, y, args, thread_counts))
    write_report(args, machine, rows, "eval_time_corpora", report(rows, machine))


def write_report(args, machine, rows, stem, text):
    """Prints ``text`` and writes it to OUT/stem.md, the rows to OUT/stem.json."""
    print(text)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, f"{stem}.md"), "w") as f:
        f.write(text)
    with open(os.path.join(args.out, f"{stem}.json"), "w") as f:
        json.dump({"machine": machine, "args": vars(args), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
