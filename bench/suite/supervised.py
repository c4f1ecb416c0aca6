#!/usr/bin/env python
"""Suite item 1 (and 6): supervised CoNLL-2000 chunking, sscrf against CRFsuite.

Both tools train a first-order CRF on ``train.txt`` with the feature set of
CRFsuite's chunking example (``example/chunking.py``: word unigrams at −2..2,
word bigrams w[-1]|w[0] and w[0]|w[1], POS unigrams at −2..2, POS bigrams and
trigrams over −2..2, ``__BOS__`` on the first token and ``__EOS__`` on the
last), L2 c2 = 1.0, c1 = 0, L-BFGS with CRFsuite's stopping rule (epsilon
1e-5, period 10, delta 1e-5) and at most ``--max-iterations`` iterations, and
are scored by chunk F1 (conlleval) on ``test.txt``.

The same attribute strings go to both tools (``w[0]=the``,
``pos[-1]|pos[0]=DT|NN``, ``__BOS__``): sscrf gets one feature dict per token
(str values, so it forms ``name=value`` attributes; True for BOS/EOS),
CRFsuite the equivalent list of strings. The report checks that both end up
with the same attribute vocabulary.

Configurations: CRFsuite (always one thread, observed attribute-label pairs,
all label transitions: ``feature.possible_transitions=True``,
``feature.possible_states=False``), and sscrf with ``feature_set="observed"``
and ``"dense"``, each at 1 and 2 threads.

Every run happens in a fresh child process (this script with ``--child TOOL
CONFIG``) that reads the data, extracts features, trains, decodes the test
set, reports its own peak RSS (``ru_maxrss``), and, for sscrf, times the bare
loss-and-gradient evaluation at the trained weights. The parent only
collects the JSON the children print, so it stays small (a child's peak RSS
cannot be below the parent's; see ``bench/lib/timing.py``).

Usage::

    python bench/suite/supervised.py [--data ../shared/data/conll2000]
        [--max-iterations 100] [--repeats 3] [--json OUT]

Quick check while developing: ``--max-iterations 5 --repeats 1``.
"""

import argparse
import importlib.util
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))  # the repository root, for bench.lib
from bench.lib import host, tables, timing  # noqa: E402
from bench.lib.corpora import CONLL2000 as DEFAULT_DATA  # noqa: E402
from bench.lib.corpora import chunk_f1, read_conll2000  # noqa: E402
from bench.lib.features_conll2000 import (crfsuite_tokens, distinct_attributes,  # noqa: E402
                                          sscrf_tokens, template_names)
from bench.suite.children import run_json_child  # noqa: E402

C1, C2 = 0.0, 1.0
EPSILON, PERIOD, DELTA = 1e-5, 10, 1e-5

#: (tool, feature set, threads); CRFsuite is the reference and comes first.
CONFIGS = (
    ("crfsuite", "observed", 1),
    ("sscrf", "observed", 1),
    ("sscrf", "observed", 2),
    ("sscrf", "dense", 1),
    ("sscrf", "dense", 2),
)
REFERENCE = "crfsuite observed-1"

# Targets (sscrf observed vs CRFsuite).
F1_TOLERANCE = 0.3          # F1 points
SPEED_TARGETS = {1: 1.0, 2: 0.55}  # s/eval ratio to CRFsuite, by thread count


def config_key(tool, feature_set, threads):
    return f"{tool} {feature_set}-{threads}"


def config_label(tool, feature_set, threads):
    if tool == "crfsuite":
        return "CRFsuite (observed, 1 thread)"
    return f"sscrf {feature_set}, {threads} thread{'s' if threads > 1 else ''}"


# -- child processes -----------------------------------------------------------


def _extract(make, train, test):
    t0 = time.perf_counter()
    X_train = [make(s) for s in train.tokens]
    X_test = [make(s) for s in test.tokens]
    return X_train, X_test, time.perf_counter() - t0


def child_crfsuite(args, feature_set, threads):
    import tempfile
    import re

    import pycrfsuite

    if feature_set != "observed" or threads != 1:
        raise SystemExit("CRFsuite runs only as observed-1")
    train, test, read_s = read_conll2000(args.data)
    X_train, X_test, extract_s = _extract(crfsuite_tokens, train, test)
    rss_extracted = timing.self_peak_rss_bytes()

    t0 = time.perf_counter()
    trainer = pycrfsuite.Trainer(verbose=False)
    for xseq, yseq in zip(X_train, train.labels):
        trainer.append(xseq, yseq)
    append_s = time.perf_counter() - t0
    trainer.set_params({"c1": C1, "c2": C2, "max_iterations": args.max_iterations,
                        "epsilon": EPSILON, "period": PERIOD, "delta": DELTA,
                        "feature.possible_transitions": True})
    params = trainer.get_params()

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.crfsuite")
        t0 = time.perf_counter()
        trainer.train(path)
        train_wall = time.perf_counter() - t0
        lp = trainer.logparser
        log = "".join(lp.log)
        tagger = pycrfsuite.Tagger()
        tagger.open(path)
        t0 = time.perf_counter()
        y_pred = [tagger.tag(x) for x in X_test]
        predict_s = time.perf_counter() - t0
        tagger.close()

    def counted(what):
        m = re.search(rf"Number of active {what}: (\d+) \((\d+)\)", log)
        return (int(m.group(1)), int(m.group(2))) if m else (None, None)

    _, n_features = counted("features")
    _, n_attributes = counted("attributes")
    _, n_labels = counted("labels")
    stop = re.search(r"^(L-BFGS (?:resulted|terminated)[^\n]*)$", log, re.M)
    iterations = lp.iterations
    trials = [it.get("linesearch_trials") for it in iterations]
    evaluations = 1 + sum(t for t in trials if t is not None)  # + the initial evaluation
    train_s = lp.training_seconds
    scores = chunk_f1(test.labels, y_pred)
    peak = timing.self_peak_rss_bytes()
    n_transitions = None if n_labels is None else n_labels * n_labels
    return {
        "tool": "crfsuite", "feature_set": feature_set, "threads": threads,
        "pycrfsuite_version": _dist_version("python-crfsuite"),
        "params_set": {k: str(trainer.get(k)) for k in params},
        "n_train_sentences": len(train.tokens), "n_test_sentences": len(test.tokens),
        "n_attributes": n_attributes,
        "n_distinct_attribute_strings": distinct_attributes(train.tokens),
        "n_labels": n_labels,
        "n_parameters": n_features,
        "n_state_weights": None if n_features is None else n_features - n_transitions,
        "n_transition_weights": n_transitions,
        "iterations": len(iterations), "evaluations": evaluations,
        "linesearch_trials": trials,
        "final_loss": iterations[-1].get("loss") if iterations else None,
        "stop_reason": stop.group(1) if stop else None,
        "read_s": read_s, "extract_s": extract_s,
        "setup_s": None if train_s is None else append_s + train_wall - train_s,
        "train_s": train_s, "train_wall_s": append_s + train_wall,
        "featgen_s": lp.featgen_seconds, "append_s": append_s,
        "s_per_eval": None if train_s is None else train_s / evaluations,
        "eval_only_s": None, "eval_only_samples": [],
        "predict_s": predict_s, "scores": scores, "peak_rss_bytes": peak,
        "peak_rss_after_extract_bytes": rss_extracted, "peak_rss_end_bytes": peak,
    }


def _dist_version(name):
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:
        return None


def child_sscrf(args, feature_set, threads):
    import sscrf
    from sscrf import CRF

    train, test, read_s = read_conll2000(args.data)
    X_train, X_test, extract_s = _extract(sscrf_tokens, train, test)
    rss_extracted = timing.self_peak_rss_bytes()

    model = CRF(c2=C2, max_iterations=args.max_iterations, epsilon=EPSILON, period=PERIOD,
                delta=DELTA, n_threads=threads, feature_set=feature_set, verbose=False)
    t0 = time.perf_counter()
    model.fit(X_train, train.labels)
    fit_wall = time.perf_counter() - t0
    tr = model.training_
    t0 = time.perf_counter()
    y_pred = model.predict(X_test)
    predict_s = time.perf_counter() - t0
    scores = chunk_f1(test.labels, y_pred)
    # Peak of the benchmarked work (read, extract, train, decode), before the
    # extra corpus built below for the evaluation-only timing.
    peak = timing.self_peak_rss_bytes()

    eval_samples, eval_loss, eval_error = [], None, None
    try:
        import numpy as np
        from sscrf.objectives import OBJECTIVES

        from sscrf.corpus import compile_corpus
        from sscrf.inputs import encode_labels

        features = model.extractor_.transform(X_train)
        label_index = {label: i for i, label in enumerate(model.classes_)}
        corpus = compile_corpus(
            features, labels=encode_labels(train.labels, label_index))
        term = OBJECTIVES["likelihood"](corpus, model.layout_.core, threads)
        theta = np.ascontiguousarray(model.coef_, dtype=np.float64)
        # into one gradient buffer, as training does (the optimiser's own)
        gradient = np.empty_like(theta)
        value, _ = term.value_and_gradient(theta, out=gradient)  # warm-up
        eval_loss = float(value) + C2 * float(theta @ theta)
        for _ in range(args.eval_repeats):
            t0 = time.perf_counter()
            term.value_and_gradient(theta, out=gradient)
            eval_samples.append(time.perf_counter() - t0)
    except Exception as e:  # keep the other numbers
        eval_error = f"{type(e).__name__}: {e}"

    evaluations = tr["evaluations"]
    return {
        "tool": "sscrf", "feature_set": feature_set, "threads": threads,
        "sscrf_version": getattr(sscrf, "__version__", None),
        "build_info": sscrf.build_info(), "core": _core_file(),
        "n_train_sentences": len(train.tokens), "n_test_sentences": len(test.tokens),
        "n_attributes": len(model.extractor_.attributes_),
        "n_distinct_attribute_strings": distinct_attributes(train.tokens),
        "n_labels": len(model.classes_),
        "n_parameters": int(model.n_parameters_),
        "n_state_weights": int(len(model.label_ids_)),
        "n_transition_weights": len(model.classes_) ** 2,
        "iterations": tr["iterations"], "evaluations": evaluations,
        "final_loss": tr["loss"], "stop_reason": tr["stop_reason"],
        "read_s": read_s, "extract_s": extract_s,
        "setup_s": fit_wall - tr["seconds"],
        "train_s": tr["seconds"], "train_wall_s": fit_wall,
        "s_per_eval": tr["seconds"] / evaluations if evaluations else None,
        "eval_only_s": tables.median(eval_samples), "eval_only_samples": eval_samples,
        "eval_only_loss": eval_loss, "eval_only_error": eval_error,
        "predict_s": predict_s, "scores": scores, "peak_rss_bytes": peak,
        "peak_rss_after_extract_bytes": rss_extracted,
        "peak_rss_end_bytes": timing.self_peak_rss_bytes(),
    }


def _core_file():
    """Path and modification time of the compiled core that was loaded."""
    import datetime

    from sscrf import _core

    path = getattr(_core, "__file__", None)
    if not path:
        return None
    mtime = datetime.datetime.fromtimestamp(os.path.getmtime(path), datetime.timezone.utc)
    return {"path": path, "mtime": mtime.strftime("%Y-%m-%dT%H:%M:%SZ")}


def run_child_mode(args):
    tool, config = args.child
    try:
        feature_set, threads = config.rsplit("-", 1)
        threads = int(threads)
    except ValueError:
        raise SystemExit(f"bad child config {config!r}; expected FEATURESET-THREADS") from None
    if tool == "crfsuite":
        result = child_crfsuite(args, feature_set, threads)
    elif tool == "sscrf":
        result = child_sscrf(args, feature_set, threads)
    else:
        raise SystemExit(f"unknown tool {tool!r}")
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()


# -- parent: run, aggregate, report --------------------------------------------


def _child_env(threads):
    env = dict(os.environ)
    # At most `threads` cores per process: keep BLAS (numpy/scipy vector
    # work inside L-BFGS) from spreading, unless the caller chose otherwise.
    for name in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(name, str(threads))
    return env


def run_config(args, tool, feature_set, threads):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", tool,
           f"{feature_set}-{threads}", "--data", args.data,
           "--max-iterations", str(args.max_iterations), "--eval-repeats", str(args.eval_repeats)]
    res = timing.run_child(cmd, env=_child_env(threads), timeout=args.child_timeout)
    lines = [l for l in res.stdout.splitlines() if l.strip()]
    if res.returncode != 0 or not lines:
        sys.stderr.write(res.stderr)
        raise SystemExit(f"error: child {' '.join(cmd[2:])} failed with exit status "
                         f"{res.returncode}")
    out = json.loads(lines[-1])
    out["child_wall_s"] = res.wall_s
    out["wait4_peak_rss_bytes"] = res.peak_rss_bytes
    return out


def summarize(runs):
    """Deterministic fields from the first run; medians of times; max of peaks."""
    first = runs[0]
    s = {k: first[k] for k in (
        "n_attributes", "n_distinct_attribute_strings", "n_labels", "n_parameters",
        "n_state_weights", "n_transition_weights", "iterations", "evaluations", "final_loss",
        "stop_reason")}
    s["f1"] = first["scores"]["f1"]
    s["precision"] = first["scores"]["precision"]
    s["recall"] = first["scores"]["recall"]
    for k in ("read_s", "extract_s", "setup_s", "train_s", "train_wall_s", "s_per_eval",
              "eval_only_s", "predict_s", "child_wall_s"):
        s[k] = tables.median([r.get(k) for r in runs])
    s["peak_rss_bytes"] = max(r["peak_rss_bytes"] for r in runs)
    s["peak_rss_after_extract_bytes"] = max(r["peak_rss_after_extract_bytes"] for r in runs)
    s["repeats"] = len(runs)
    varying = [k for k in ("iterations", "evaluations") if len({r[k] for r in runs}) > 1]
    if len({r["scores"]["f1"] for r in runs}) > 1:
        varying.append("f1")
    s["varying_across_repeats"] = varying
    if first.get("params_set"):
        s["params_set"] = first["params_set"]
    if first.get("eval_only_error"):
        s["eval_only_error"] = first["eval_only_error"]
    return s


def build_report(summary, machine, args, floor, core_line=None):
    ref = summary[REFERENCE]
    lines = [
        f"# Supervised CoNLL-2000 chunking: sscrf vs CRFsuite",
        "",
        host.machine_line(machine),
        (f"Settings: first-order CRF, c1 = {C1:g}, c2 = {C2:g}, L-BFGS, max_iterations = "
         f"{args.max_iterations}, epsilon = {EPSILON:g}, period = {PERIOD}, delta = {DELTA:g}; "
         f"repeats = {args.repeats} (medians of times, max of peaks); eval-only = median of "
         f"{args.eval_repeats} loss+gradient calls at the trained weights."),
    ]
    if core_line:
        lines.append(core_line)
    lines.append("")
    headers = ["tool/config", "F1", "params", "state w.", "iterations", "evaluations",
               "s/eval", "eval-only s", "total s", "peak MB", "s/eval ratio", "total ratio"]
    rows = []
    for tool, fs, th in CONFIGS:
        key = config_key(tool, fs, th)
        s = summary[key]
        rows.append([
            config_label(tool, fs, th), f"{s['f1']:.2f}", tables.fmt_num(s["n_parameters"]),
            tables.fmt_num(s["n_state_weights"]), s["iterations"], s["evaluations"],
            tables.fmt_num(s["s_per_eval"]), tables.fmt_num(s["eval_only_s"]),
            tables.fmt_num(s["train_s"], 1), tables.fmt_mb(s["peak_rss_bytes"]),
            tables.fmt_ratio(tables.ratio(s["s_per_eval"], ref["s_per_eval"])),
            tables.fmt_ratio(tables.ratio(s["train_s"], ref["train_s"])),
        ])
    lines += [tables.markdown_table(headers, rows), ""]
    lines.append(
        "s/eval = training time / loss-and-gradient evaluations (CRFsuite: 1 initial + Σ line "
        "search trials from its log); total s = optimiser time to the stopping rule (CRFsuite: "
        "\"Total seconds required for training\"; sscrf: training_['seconds']); peak MB = "
        "whole-process ru_maxrss of a separate child (read + extract + train + decode; floor "
        f"of a bare child here: {tables.fmt_mb(floor)} MB).")
    lines.append("")

    headers2 = ["tool/config", "read s", "extract s", "setup s", "fit wall s", "predict s",
                "MB after extract", "final loss", "stop reason"]
    rows2 = []
    for tool, fs, th in CONFIGS:
        s = summary[config_key(tool, fs, th)]
        rows2.append([config_label(tool, fs, th), tables.fmt_num(s["read_s"], 2),
                      tables.fmt_num(s["extract_s"], 2), tables.fmt_num(s["setup_s"], 2),
                      tables.fmt_num(s["train_wall_s"], 1), tables.fmt_num(s["predict_s"], 2),
                      tables.fmt_mb(s["peak_rss_after_extract_bytes"]),
                      tables.fmt_num(s["final_loss"], 2), s["stop_reason"] or "—"])
    lines += [tables.markdown_table(headers2, rows2, align="lrrrrrrrl"), ""]
    lines.append(
        "extract s = building the attribute strings (train + test, not inside any training "
        "time); setup s = the tool's own ingestion outside the optimiser (sscrf: fit wall − "
        "training_['seconds']: vocabulary, layout, compile; CRFsuite: Trainer.append + feature "
        "generation + storing the model); fit wall s = setup + optimiser; MB after extract = "
        "peak RSS once the data is read and the attribute strings built (sscrf: feature dicts, "
        "CRFsuite: string lists), i.e. before the tool ingests anything.")
    lines.append("")

    # vocabulary check
    vocab = {key: s["n_attributes"] for key, s in summary.items()}
    distinct = {s["n_distinct_attribute_strings"] for s in summary.values()}
    vocab_ok = len(set(vocab.values())) == 1 and distinct == set(vocab.values())
    n_attr = ref["n_attributes"]
    if vocab_ok:
        lines.append(f"Attribute vocabulary: {n_attr:,} attributes in every configuration "
                     f"(CRFsuite's dictionary = sscrf's extractor = distinct strings) — OK; "
                     f"{ref['n_labels']} labels.")
    else:
        lines.append(f"Attribute vocabulary MISMATCH: {vocab}; distinct strings: {sorted(distinct)}")
    obs = summary[config_key("sscrf", "observed", 1)]
    states_ok = obs["n_state_weights"] == ref["n_state_weights"]
    lines.append(
        f"State weights: CRFsuite {tables.fmt_num(ref['n_state_weights'])} (features − labels²), "
        f"sscrf observed {tables.fmt_num(obs['n_state_weights'])} — "
        f"{'same' if states_ok else 'DIFFERENT'}; sscrf adds {2 * obs['n_labels']} start/end "
        f"weights (CRFsuite models the boundaries with __BOS__/__EOS__ only).")
    ps = ref.get("params_set") or {}
    if ps:
        lines.append("CRFsuite parameters: " + ", ".join(
            f"{k}={ps[k]}" for k in ("feature.possible_states", "feature.possible_transitions",
                                     "feature.minfreq", "c1", "c2", "num_memories",
                                     "linesearch", "max_linesearch") if k in ps))
    varying = {k: s["varying_across_repeats"] for k, s in summary.items()
               if s["varying_across_repeats"]}
    if varying:
        lines.append(f"Note: values that differed between repeats: {varying}")
    errors = {k: s["eval_only_error"] for k, s in summary.items() if s.get("eval_only_error")}
    if errors:
        lines.append(f"Note: eval-only timing failed: {errors}")
    lines.append("")

    # targets
    targets = []
    for th in (1, 2):
        s = summary[config_key("sscrf", "observed", th)]
        diff = s["f1"] - ref["f1"]
        targets.append({
            "name": f"F1 within {F1_TOLERANCE} of CRFsuite (sscrf observed, {th} thread"
                    f"{'s' if th > 1 else ''})",
            "value": f"{s['f1']:.2f} vs {ref['f1']:.2f} ({diff:+.2f})",
            "ok": abs(diff) <= F1_TOLERANCE + 1e-9})
    for th, limit in SPEED_TARGETS.items():
        s = summary[config_key("sscrf", "observed", th)]
        r = tables.ratio(s["s_per_eval"], ref["s_per_eval"])
        targets.append({
            "name": f"s/eval at {th} thread{'s' if th > 1 else ''} ≤ {limit:.2f}x CRFsuite "
                    f"(sscrf observed)",
            "value": tables.fmt_ratio(r), "ok": None if r is None else r <= limit})
    lines.append("Targets:")
    for t in targets:
        lines.append(f"- {tables.verdict(t['ok'])}: {t['name']}: {t['value']}")
    info = []
    for th, limit in SPEED_TARGETS.items():
        s = summary[config_key("sscrf", "dense", th)]
        r = tables.ratio(s["s_per_eval"], ref["s_per_eval"])
        info.append(f"dense {th} thread{'s' if th > 1 else ''}: {tables.fmt_ratio(r)} "
                    f"(limit {limit:.2f}x, F1 {s['f1'] - ref['f1']:+.2f})")
    lines.append(f"- (informational) {'; '.join(info)}")
    return "\n".join(lines), targets, vocab_ok, states_ok


def _core_line(runs):
    """Which compiled sscrf core the children loaded (it can change while a run goes on)."""
    seen, versions, info = set(), set(), None
    for rs in runs.values():
        for r in rs:
            if r["tool"] == "sscrf":
                core = r.get("core") or {}
                seen.add((core.get("path"), core.get("mtime")))
                info = r.get("build_info") or info
            elif r.get("pycrfsuite_version"):
                versions.add(r["pycrfsuite_version"])
    parts = []
    if seen:
        by_path = {}
        for path, mtime in sorted(seen, key=str):
            by_path.setdefault(path, []).append(mtime)
        builds = "; ".join(f"{p} (built {', '.join(map(str, m))})" for p, m in by_path.items())
        extra = ""
        if info:
            extra = (f", {info.get('compiler', '?')}, OpenMP "
                     f"{'on' if info.get('openmp') else 'off'}, kernels "
                     f"{info.get('kernels', '?')}")
        parts.append(f"sscrf core: {builds}{extra}")
        if len(seen) > 1:
            parts.append("WARNING: the compiled core changed between children (rebuilt during "
                         "the run); sscrf rows are not strictly comparable")
    if versions:
        parts.append(f"python-crfsuite {', '.join(sorted(versions))}")
    return "; ".join(parts) or None


def run(args, tmp, log_path):
    """Item 1 in the suite: this script in a child process (which runs one child per
    configuration and repetition)."""
    path = os.path.join(tmp, "supervised.json")
    cmd = [sys.executable, os.path.abspath(__file__), "--data", args.data,
           "--max-iterations", str(args.max_iterations), "--repeats", str(args.repeats),
           "--eval-repeats", str(1 if args.quick else 5), "--json", path]
    return run_json_child(cmd, log_path, "item 1/6: supervised.py", json_path=path)


def _sup_runs(sup, key):
    return sup["runs"].get(key, [])


def paired(sup, key, ref, field, ref_field=None):
    """Median over repetitions of key's field / ref's ref_field (default: the same field)."""
    ref_field = ref_field or field
    a, b = _sup_runs(sup, key), _sup_runs(sup, ref)
    return tables.median([x[field] / y[ref_field] for x, y in zip(a, b)
                           if x.get(field) is not None and y.get(ref_field)])


def ratios(sup):
    """Per configuration: its time, evaluation and memory ratios to the reference."""
    ref = sup["reference"]
    s = sup["summary"]
    out = {}
    for key in s:
        out[key] = {
            "s_per_eval_ratio_of_medians": tables.ratio(s[key]["s_per_eval"],
                                                         s[ref]["s_per_eval"]),
            "s_per_eval_median_paired_ratio": paired(sup, key, ref, "s_per_eval"),
            "eval_only_vs_crfsuite_s_per_eval": tables.ratio(s[key].get("eval_only_s"),
                                                              s[ref]["s_per_eval"]),
            "eval_only_median_paired_ratio": paired(sup, key, ref, "eval_only_s", "s_per_eval"),
            "total_ratio_of_medians": tables.ratio(s[key]["train_s"], s[ref]["train_s"]),
            "total_median_paired_ratio": paired(sup, key, ref, "train_s"),
            "peak_ratio": tables.ratio(s[key]["peak_rss_bytes"], s[ref]["peak_rss_bytes"]),
        }
    return out


def core_line_or_none(sup):
    """:func:`_core_line` of the suite's record, or None where it cannot be formed."""
    try:
        return _core_line(sup["runs"])
    except Exception:
        return None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=DEFAULT_DATA,
                    help="directory with CoNLL-2000 train.txt and test.txt "
                         "(default: ../shared/data/conll2000 next to the repository)")
    ap.add_argument("--max-iterations", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3,
                    help="runs of each configuration (medians of times)")
    ap.add_argument("--eval-repeats", type=int, default=5,
                    help="sscrf loss+gradient calls timed at the trained weights (median)")
    ap.add_argument("--json", metavar="OUT", help="write every number to this JSON file")
    ap.add_argument("--child-timeout", type=float, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--child", nargs=2, metavar=("TOOL", "CONFIG"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.data = os.path.abspath(args.data)
    if args.max_iterations < 1 or args.repeats < 1 or args.eval_repeats < 1:
        ap.error("--max-iterations, --repeats and --eval-repeats must be at least 1")

    if args.child:
        run_child_mode(args)
        return 0

    if importlib.util.find_spec("pycrfsuite") is None:
        print("error: python-crfsuite is not installed (import pycrfsuite failed); this "
              "benchmark compares against it and cannot run without it. Install it with "
              "`pip install python-crfsuite`.", file=sys.stderr)
        return 2
    if importlib.util.find_spec("sscrf") is None:
        print("error: sscrf is not importable; install the package (pip install -e .).",
              file=sys.stderr)
        return 2
    for name in ("train.txt", "test.txt"):
        if not os.path.isfile(os.path.join(args.data, name)):
            print(f"error: {os.path.join(args.data, name)} not found (--data DIR)",
                  file=sys.stderr)
            return 2

    machine = host.machine_info()
    print(host.machine_line(machine), file=sys.stderr, flush=True)
    floor = timing.child_rss_floor()
    runs = {config_key(*c): [] for c in CONFIGS}
    started = time.perf_counter()
    for r in range(args.repeats):
        for tool, fs, th in CONFIGS:
            key = config_key(tool, fs, th)
            t0 = time.perf_counter()
            print(f"[repeat {r + 1}/{args.repeats}] {key} ...", end="", file=sys.stderr,
                  flush=True)
            out = run_config(args, tool, fs, th)
            runs[key].append(out)
            print(f" {time.perf_counter() - t0:.1f}s (F1 {out['scores']['f1']:.2f}, "
                  f"{out['evaluations']} evals, {tables.fmt_num(out['s_per_eval'])} s/eval)",
                  file=sys.stderr, flush=True)
    machine_end = host.machine_info()
    machine["load_average_end"] = machine_end["load_average"]

    summary = {key: summarize(rs) for key, rs in runs.items()}
    core_line = _core_line(runs)
    report, targets, vocab_ok, states_ok = build_report(summary, machine, args, floor, core_line)
    print(report)
    print(f"\n(benchmark wall time {time.perf_counter() - started:.0f}s; load average at end "
          f"{machine_end['load_average']})")

    if args.json:
        payload = {
            "benchmark": "supervised_conll2000", "machine": machine,
            "settings": {"c1": C1, "c2": C2, "max_iterations": args.max_iterations,
                         "epsilon": EPSILON, "period": PERIOD, "delta": DELTA,
                         "repeats": args.repeats, "eval_repeats": args.eval_repeats,
                         "data": args.data,
                         "templates": template_names() + ["__BOS__", "__EOS__"]},
            "child_rss_floor_bytes": floor, "reference": REFERENCE,
            "summary": summary, "runs": runs, "targets": targets,
            "vocabulary_match": vocab_ok, "state_weights_match": states_ok,
        }
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(payload, f, indent=1, default=str)
            f.write("\n")
    if not vocab_ok:
        print("error: the two tools' attribute vocabularies differ", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
