#!/usr/bin/env python
"""The sscrf benchmark suite: one entry point, one JSON file, one Markdown table.

Items, all on CoNLL-2000 chunking with the attributes of CRFsuite's chunking
example (the same attribute strings reach both tools), each in a child
process and a module of this package:

1. ``supervised``: loss-and-gradient time per evaluation and total training
   time to the same stopping rule (L2 c2 = 1, L-BFGS, epsilon/period/delta
   1e-5/10/1e-5), sscrf ``observed`` and ``dense`` at 1 and 2 threads
   against python-crfsuite, back to back, several repetitions, medians and
   ratios (:mod:`bench.suite.supervised`);
2. ``scaling``: tokens per second of every registered objective term at
   each thread count, parallel efficiency, and the same bits at every
   thread count (:mod:`bench.suite.scaling`);
3. the cost of each term per token relative to ``likelihood`` at 1 thread
   (with item 2);
4. ``tagging``: Viterbi (``CRF.predict``) and marginals
   (``CRF.predict_marginals``) against ``Tagger.tag`` and
   ``Tagger.marginal`` (:mod:`bench.suite.throughput`);
5. ``extraction``: feature extraction from the CoNLL rows to the compiled
   CSR against building CRFsuite's attribute lists and ``Trainer.append``
   (:mod:`bench.suite.throughput`);
6. whole-process peak memory of training, each tool in its own process from
   the same input (from item 1's children);

and, with no target, the loss-and-gradient time per evaluation against
CRFsuite on BC2GM and UD EWT (3, 17 and 49 labels; item ``corpora``,
:mod:`bench.suite.corpora`; skipped when ``--corpora-data`` has none of
them).

Each measuring child records the machine (CPU model, cores), the date and
the commit; every table row carries them. The targets
(:mod:`bench.suite.targets`) are checked at the end (PASS / FAIL / N/A);
the suite does not try to meet them.

Usage, from the repository root::

    python -m bench.suite [--quick] [--repeats N] [--threads 1,2]
        [--out bench/results] [--data ../shared/data/conll2000]
        [--corpora-data ../shared/data] [--items supervised,scaling,tagging,extraction,corpora]

(``python bench/suite/run.py`` is the same.) ``--quick``: every item on the
first 300 training / 200 test sentences, a few iterations and rounds (a
smoke test in a few minutes; the numbers mean little). Writes
``OUT/suite.json``, ``OUT/suite.md`` (rewritten after each item, so a
partial run leaves its results) and the children's progress in
``OUT/suite.log``.

This parent imports only the standard library and the stdlib-only parts of
``bench``, so that the peak memory the children report is not inflated by it.
"""

import argparse
import importlib.util
import json
import os
import shlex
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))  # the repository root, for bench.lib

from bench.lib import host  # noqa: E402
from bench.lib.corpora import CONLL2000  # noqa: E402
from bench.suite import corpora, report, scaling, supervised, throughput  # noqa: E402
from bench.suite.children import log  # noqa: E402

SUITE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(os.path.dirname(SUITE), "results")
ITEMS = ("supervised", "scaling", "tagging", "extraction", "corpora")

QUICK = {"train": 300, "test": 200, "max_iterations": 3, "tag_iterations": 5, "repeats": 2,
         "min_time": 0.05}


def make_subset(data, out_dir, n_train, n_test):
    """Copy the first sentences of train.txt / test.txt (blank-line separated)."""
    for name, n in (("train.txt", n_train), ("test.txt", n_test)):
        kept, count, in_sentence = [], 0, False
        with open(os.path.join(data, name), encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    if not in_sentence:
                        if count == n:
                            break
                        count += 1
                    in_sentence = True
                else:
                    in_sentence = False
                kept.append(line)
        with open(os.path.join(out_dir, name), "w", encoding="utf-8") as f:
            f.writelines(kept)
            if kept and kept[-1].strip():
                f.write("\n")


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m bench.suite",
                                 description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smoke test on a small subset")
    ap.add_argument("--repeats", type=int, default=None,
                    help="repetitions / timing rounds of every item (default 3; quick 1-2)")
    ap.add_argument("--threads", type=host.parse_threads, default=None,
                    help="thread counts for the scaling item, e.g. 1,2,4 (default: 1, 2, ... "
                         "up to the usable CPUs; powers of two beyond 4)")
    ap.add_argument("--out", default=DEFAULT_OUT, help="directory for suite.json / suite.md")
    ap.add_argument("--data", default=CONLL2000, help="CoNLL-2000 directory (train.txt, "
                                                         "test.txt)")
    ap.add_argument("--corpora-data", default=os.path.dirname(CONLL2000),
                    help="folder holding bc2gm/ and ud-english-ewt/ for the corpora item")
    ap.add_argument("--items", default=",".join(ITEMS),
                    help=f"comma-separated subset of {', '.join(ITEMS)}")
    ap.add_argument("--max-iterations", type=int, default=100,
                    help="L-BFGS iterations of item 1 (default 100)")
    ap.add_argument("--tag-iterations", type=int, default=30,
                    help="training iterations of the models item 4 tags with (default 30)")
    ap.add_argument("--min-time", type=float, default=0.5,
                    help="seconds of repeated calls per scaling sample (default 0.5)")
    ap.add_argument("--ge-constraints", type=int, default=100,
                    help="constraints of the ge term in items 2-3 (default 100)")
    ap.add_argument("--report-only", action="store_true",
                    help="rebuild OUT/suite.md (the targets and ratios) from OUT/suite.json")
    args = ap.parse_args(argv)
    args.data = os.path.abspath(args.data)
    args.thread_list = host.thread_counts(args.threads)

    if args.report_only:
        with open(os.path.join(args.out, "suite.json"), encoding="utf-8") as f:
            res = json.load(f)
        args.quick = res.get("mode") == "quick"
        st = res.get("settings", {})
        args.repeats, args.thread_list = st.get("repeats"), st.get("threads", args.thread_list)
        if res.get("supervised"):  # derived from the runs: recomputed with this code
            res["supervised"]["ratios"] = supervised.ratios(res["supervised"])
        if res.get("scaling", {}).get("samples"):
            res["scaling"]["summary"] = scaling.summarize_scaling(res["scaling"])
        res["targets"] = report.check_targets(res, args.quick)
        md = report.build_markdown(res, args, res["machine"], res.get("suite_wall_s", 0.0))
        with open(os.path.join(args.out, "suite.md"), "w", encoding="utf-8") as f:
            f.write(md + "\n")
        print(md)
        return 0

    items = [i.strip() for i in args.items.split(",") if i.strip()]
    for i in items:
        if i not in ITEMS:
            ap.error(f"unknown item {i!r}; choose from {', '.join(ITEMS)}")
    for name in ("train.txt", "test.txt"):
        if not os.path.isfile(os.path.join(args.data, name)):
            ap.error(f"{os.path.join(args.data, name)} not found (--data DIR)")
    for mod, hint in (("sscrf", "pip install -e ."), ("pycrfsuite", "pip install python-crfsuite")):
        if importlib.util.find_spec(mod) is None:
            print(f"error: {mod} is not importable ({hint})", file=sys.stderr)
            return 2

    if args.quick:
        args.repeats = args.repeats or 1
        args.rounds = min(args.repeats + 1, QUICK["repeats"])
        args.max_iterations = min(args.max_iterations, QUICK["max_iterations"])
        args.tag_iterations = min(args.tag_iterations, QUICK["tag_iterations"])
        args.min_time = min(args.min_time, QUICK["min_time"])
    else:
        args.repeats = args.repeats or 3
        args.rounds = max(args.repeats, 5)
    if args.repeats < 1:
        ap.error("--repeats must be at least 1")

    started = time.perf_counter()
    started_info = host.machine_info()
    log(host.machine_line(started_info))
    os.makedirs(args.out, exist_ok=True)
    log_path = os.path.join(args.out, "suite.log")
    with open(log_path, "w", encoding="utf-8") as f:
        f.write(host.machine_line(started_info) + "\n")
    tmp = tempfile.mkdtemp(prefix="sscrf-suite-")
    res = {"suite": "sscrf bench/suite", "command": " ".join(
        ["python", "-m", "bench.suite"] + [shlex.quote(a) for a in (argv if argv is not None
                                                                    else sys.argv[1:])]),
        "machine": started_info, "mode": "quick" if args.quick else "full",
        "settings": {"repeats": args.repeats, "rounds": args.rounds, "threads": args.thread_list,
                     "max_iterations": args.max_iterations,
                     "tag_iterations": args.tag_iterations, "min_time": args.min_time,
                     "ge_constraints": args.ge_constraints, "data": args.data},
        "errors": {}}
    try:
        if args.quick:
            sub = os.path.join(tmp, "conll2000-subset")
            os.makedirs(sub)
            make_subset(args.data, sub, QUICK["train"], QUICK["test"])
            args.data = sub
            res["settings"]["subset"] = {"train_sentences": QUICK["train"],
                                         "test_sentences": QUICK["test"]}
        steps = {
            "supervised": lambda: supervised.run(args, tmp, log_path),
            "scaling": lambda: scaling.run(args, tmp, log_path),
            "tagging": lambda: throughput.run(args, tmp, log_path, "tagging"),
            "extraction": lambda: throughput.run(args, tmp, log_path, "extraction"),
            "corpora": lambda: corpora.run(args, tmp, log_path),
        }
        for name in items:
            t0 = time.perf_counter()
            try:
                out = steps[name]()
                if name == "supervised":
                    out["ratios"] = supervised.ratios(out)
                    out["core_line"] = supervised.core_line_or_none(out)
                res[name] = out
                log(f"{name}: done in {time.perf_counter() - t0:.0f} s")
            except Exception as e:  # keep going: report what could be measured
                res["errors"][name] = f"{type(e).__name__}: {e}"
                log(f"{name}: FAILED: {e}")
            report.write_outputs(res, args, started_info, started)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    md = report.write_outputs(res, args, started_info, started)
    print(md)
    log(f"wrote {os.path.join(args.out, 'suite.json')} and suite.md; log in {log_path}")
    return 1 if res["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
