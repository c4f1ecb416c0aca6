#!/usr/bin/env python
"""Suite item ``corpora``: time per loss-and-gradient evaluation against CRFsuite on
corpora other than CoNLL-2000 (no target).

The suite's per-evaluation targets are measured on CoNLL-2000 chunking (22
labels, about 20 attributes per token). The cost of both tools depends on the
label count and on the attributes per token, so this script repeats the
measurement on the other corpora in ``../shared/data``:

- ``bc2gm``: BioCreative II gene mention, ``conll/train.tsv``, 3 labels
  (B-GENE, I-GENE, O), the few-label case of named-entity tagging;
- ``ewt-upos`` and ``ewt-xpos``: UD English EWT ``train``, 17 and 49 tags.

Both tools get the same feature dicts per token (``bench/lib/features_words.py``:
lower-cased word, 2- and 3-letter suffixes, first letter, shape class, digit
and hyphen flags, previous and next word; about 7 attributes per token), c2
= 1, all label transitions. CRFsuite (observed attribute-label pairs) trains
``--iterations`` L-BFGS iterations; its time per evaluation is its training
time over its evaluation count. sscrf's is the median of 5 direct calls of
the ``likelihood`` term (writing into one reused gradient buffer, as
training does) at the weights that sscrf reaches after the same iterations,
at each thread count, for the ``observed`` and ``dense`` feature sets
(:mod:`bench.lib.eval_time`). Repetitions alternate the tools; the table
gives medians and ratios of medians.

    python bench/suite/corpora.py [--corpora bc2gm,ewt-upos,ewt-xpos]
        [--iterations 10] [--repeats 3] [--threads 1,2] [--out bench/results]

Writes ``eval_time_corpora.md`` and ``.json`` under ``--out``.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))  # the repository root, for bench.lib

from bench.lib import host  # noqa: E402
from bench.lib.features_words import token_features  # noqa: E402
from bench.lib.eval_time import (SETTINGS, add_measure_arguments,  # noqa: E402
                                 check_measure_arguments, measure, table, write_report)
from bench.suite.children import log, run_json_child  # noqa: E402

DATA = host.DATA_ROOT
CORPORA = {
    "bc2gm": ("bc2gm/conll/train.tsv", None),
    "ewt-upos": ("ud-english-ewt/en_ewt-ud-train.conllu", "upos"),
    "ewt-xpos": ("ud-english-ewt/en_ewt-ud-train.conllu", "xpos"),
}


def read_corpus(name, data_dir):
    from sscrf.io import read_conll, read_conllu

    path, column = CORPORA[name]
    path = os.path.join(data_dir, path)
    if not os.path.exists(path):
        raise SystemExit(f"{name}: {path} not found (--data names the folder of the corpora)")
    corpus = read_conll(path) if column is None else read_conllu(path, label_column=column)
    return [token_features(s) for s in corpus.tokens], corpus.labels


def report(rows, machine):
    return "\n".join(["# Time per loss-and-gradient evaluation against CRFsuite, other corpora",
                      "", machine, "", SETTINGS, "", table(rows)]) + "\n"


def present_corpora(data_dir):
    """The corpora whose files are under ``data_dir``."""
    return [name for name, (path, _) in CORPORA.items()
            if os.path.exists(os.path.join(data_dir, path))]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=DATA, help="folder of the corpora (default %(default)s)")
    parser.add_argument("--corpora", default=",".join(CORPORA),
                        help="comma-separated, of " + ", ".join(CORPORA))
    add_measure_arguments(parser, "observed,dense", 10)
    args = parser.parse_args(argv)
    corpora, thread_counts = check_measure_arguments(parser, args, args.corpora, CORPORA,
                                                     "--corpora")

    machine = host.machine_line()
    rows = []
    for name in corpora:
        log(f"{name}: reading and extracting features")
        X, y = read_corpus(name, args.data)
        rows.append(measure(name, X, y, args, thread_counts))
    write_report(args, machine, rows, "eval_time_corpora", report(rows, machine))


def run(args, tmp, log_path):
    """The item in the suite: this script in a child process on the corpora present."""
    present = present_corpora(args.corpora_data)
    if not present:
        return {"skipped": f"no corpus of {', '.join(CORPORA)} under "
                           f"{args.corpora_data} (--corpora-data DIR)"}
    out = os.path.join(tmp, "corpora")
    threads = sorted({1, max(args.thread_list)})
    cmd = [sys.executable, os.path.abspath(__file__), "--data",
           args.corpora_data, "--corpora", ",".join(present), "--repeats", str(args.repeats),
           "--iterations", str(min(args.max_iterations, 10)), "--threads",
           ",".join(map(str, threads)), "--out", out]
    return run_json_child(cmd, log_path, "item 7 (no target): corpora.py",
                          json_path=os.path.join(out, "eval_time_corpora.json"))


if __name__ == "__main__":
    main()
