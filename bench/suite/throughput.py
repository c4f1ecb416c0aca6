#!/usr/bin/env python
"""Suite items 4 and 5: tagging and feature-extraction throughput, sscrf against CRFsuite.

Two parts, each usable alone (``--part``), both on CoNLL-2000 with the
attributes of CRFsuite's chunking example (``bench/lib/features_conll2000.py``: the
same attribute strings reach both tools).

``tagging``
    Trains each tool once on ``train.txt`` with the same settings (first
    order, c2 = 1, c1 = 0, L-BFGS, ``--max-iterations`` iterations, all label
    transitions; sscrf ``feature_set="observed"``, CRFsuite's observed
    attribute-label pairs), then times tagging ``test.txt`` only:

    - Viterbi: ``CRF.predict(X)`` (feature dicts in, label lists out:
      vocabulary lookup, CSR, compile, decode, names) against
      ``[Tagger.tag(x) for x in X]`` (attribute-string lists in);
    - marginals: ``CRF.predict_marginals(X)`` (one ``{label: p}`` dict per
      token) against what sklearn-crfsuite does for every sentence:
      ``Tagger.set(x)`` and ``Tagger.marginal(label, t)`` for every label of
      every token;
    - breakdown rows: sscrf's compiled-core calls alone on a corpus compiled
      beforehand (``_core.viterbi_corpus`` / ``_core.marginals_corpus``), and
      CRFsuite's ``Tagger.tag`` on ``ItemSequence`` objects built beforehand.

    sscrf runs at 1 thread and at ``--threads`` (default: every usable CPU);
    CRFsuite has no threads. Each sample is one pass over the test set; the
    methods rotate order over ``--repeats`` rounds; medians, and ratios of
    medians (and medians of the per-round ratios). Also reports each model's
    chunk F1 and how often the two tools' Viterbi labels agree, to show that
    like is compared with like.

``extraction``
    From the CoNLL rows (``read_conll`` output: per token its column strings)
    to what the tool trains on:

    - sscrf (dicts): the attribute dicts (``sscrf_tokens``), then
      ``FeatureExtractor().fit_transform`` (vocabulary + CSR), then
      ``_core.Corpus`` (the compiled corpus the kernels read);
    - sscrf (templates, informational): CRF++-style templates equivalent to
      the chunking attributes, applied to the rows directly by
      ``FeatureExtractor(templates).fit_transform``, then ``_core.Corpus``.
      CRF++ semantics pad positions outside the sentence (``_B-1``) where
      CRFsuite's example emits nothing, so the vocabulary differs a little;
    - CRFsuite: the attribute-string lists (``crfsuite_tokens``), then
      ``pycrfsuite.ItemSequence`` per sentence, and separately
      ``Trainer.append`` (which converts the lists and interns the strings
      into CRFsuite's dictionary: the analogue of ``fit_transform``).

    Every sample runs after ``gc.collect()``; rotating order, medians.

Usage::

    python bench/suite/throughput.py [--part tagging,extraction] [--data DIR]
        [--max-iterations 30] [--repeats 5] [--threads N] [--quick] [--json OUT]

``--quick``: a few hundred sentences, 5 iterations, 2 rounds. The Markdown
report goes to stdout, every number to ``--json``.
"""

import argparse
import gc
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))  # the repository root, for bench.lib
from bench.lib import host, tables  # noqa: E402
from bench.lib.corpora import CONLL2000 as DEFAULT_DATA  # noqa: E402
from bench.lib.features_conll2000 import crfpp_templates, crfsuite_tokens, sscrf_tokens  # noqa: E402,E501
from bench.suite.children import log as _log  # noqa: E402
from bench.suite.children import run_json_child  # noqa: E402

C1, C2 = 0.0, 1.0

def read_data(data_dir, max_train=None, max_test=None):
    from sscrf.io import read_conll

    t0 = time.perf_counter()
    train = read_conll(os.path.join(data_dir, "train.txt"))
    test = read_conll(os.path.join(data_dir, "test.txt"))
    read_s = time.perf_counter() - t0
    tr_tokens, tr_labels = train.tokens, train.labels
    te_tokens, te_labels = test.tokens, test.labels
    if max_train:
        tr_tokens, tr_labels = tr_tokens[:max_train], tr_labels[:max_train]
    if max_test:
        te_tokens, te_labels = te_tokens[:max_test], te_labels[:max_test]
    return (list(tr_tokens), list(tr_labels), list(te_tokens), list(te_labels), read_s)


def timed(fn):
    gc.collect()
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def rotate_rounds(methods, repeats, on_sample=None):
    """Run each method once per round, rotating the order; {name: [seconds]}."""
    names = list(methods)
    samples = {n: [] for n in names}
    for r in range(repeats):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            s, out = timed(methods[name])
            samples[name].append(s)
            if on_sample:
                on_sample(name, out)
            del out
    return samples


def paired_ratios(samples, name, ref):
    return [a / b for a, b in zip(samples[name], samples[ref]) if b]


# -- tagging ----------------------------------------------------------------------


def timing_row(samples_s, n_sent, n_tok):
    """A method's samples, their median and the rates at that median."""
    med = tables.median(samples_s)
    return {"samples_s": samples_s, "median_s": med,
            "sentences_per_s": n_sent / med if med else None,
            "tokens_per_s": n_tok / med if med else None}


def measure_tagging(args):
    import numpy as np
    import pycrfsuite
    import sscrf
    from sscrf import _core
    from sscrf.metrics import chunk_scores

    from sscrf.corpus import compile_corpus

    tr, ytr, te, yte, read_s = read_data(args.data, args.max_train, args.max_test)
    X_tr_s = [sscrf_tokens(s) for s in tr]
    X_te_s = [sscrf_tokens(s) for s in te]
    X_tr_c = [crfsuite_tokens(s) for s in tr]
    X_te_c = [crfsuite_tokens(s) for s in te]
    n_sent, n_tok = len(te), sum(len(s) for s in te)
    _log(f"tagging: {len(tr)} training / {n_sent} test sentences ({n_tok} tokens)")

    # train each tool once
    t0 = time.perf_counter()
    model = sscrf.CRF(c1=C1, c2=C2, max_iterations=args.max_iterations, feature_set="observed",
                      n_threads=1, verbose=False)
    model.fit(X_tr_s, ytr)
    sscrf_train_s = time.perf_counter() - t0
    _log(f"  sscrf trained in {sscrf_train_s:.1f} s ({model.training_['iterations']} iterations)")

    tmp = tempfile.mkdtemp(prefix="sscrf-bench-")
    path = os.path.join(tmp, "model.crfsuite")
    t0 = time.perf_counter()
    trainer = pycrfsuite.Trainer(verbose=False)
    for x, y in zip(X_tr_c, ytr):
        trainer.append(x, y)
    trainer.set_params({"c1": C1, "c2": C2, "max_iterations": args.max_iterations,
                        "feature.possible_transitions": True})
    trainer.train(path)
    crf_train_s = time.perf_counter() - t0
    crf_iterations = len(trainer.logparser.iterations)
    del trainer
    _log(f"  CRFsuite trained in {crf_train_s:.1f} s ({crf_iterations} iterations)")
    tagger = pycrfsuite.Tagger()
    tagger.open(path)
    crf_labels = tagger.labels()

    threads_all = args.threads or host.usable_cpus()
    thread_counts = sorted({1, threads_all})

    def sscrf_predict(th):
        def run():
            model.n_threads = th
            return model.predict(X_te_s)
        return run

    def sscrf_marginals(th):
        def run():
            model.n_threads = th
            return model.predict_marginals(X_te_s)
        return run

    corpus = compile_corpus(model.extractor_.transform(X_te_s))
    layout, coef = model.layout_.core, model.coef_

    def core_viterbi(th):
        return lambda: _core.viterbi_corpus(corpus, layout, coef, th)

    def core_marginals(th):
        return lambda: _core.marginals_corpus(corpus, layout, coef, th)

    def crf_tag():
        return [tagger.tag(x) for x in X_te_c]

    items = [pycrfsuite.ItemSequence(x) for x in X_te_c]

    def crf_tag_items():
        return [tagger.tag(x) for x in items]

    def crf_marginals():
        out = []
        for x in X_te_c:
            tagger.set(x)
            out.append([{label: tagger.marginal(label, t) for label in crf_labels}
                        for t in range(len(x))])
        return out

    viterbi = {"crfsuite tag": crf_tag, "crfsuite tag (ItemSequence prebuilt)": crf_tag_items}
    marg = {"crfsuite marginal": crf_marginals}
    for th in thread_counts:
        viterbi[f"sscrf predict {th}t"] = sscrf_predict(th)
        viterbi[f"sscrf core viterbi {th}t"] = core_viterbi(th)
        marg[f"sscrf predict_marginals {th}t"] = sscrf_marginals(th)
        marg[f"sscrf core marginals {th}t"] = core_marginals(th)

    # sanity: accuracy of each model, agreement, marginals sum to one
    y_sscrf = sscrf_predict(1)()
    y_crf = crf_tag()
    agree = sum(a == b for s1, s2 in zip(y_sscrf, y_crf) for a, b in zip(s1, s2)) / n_tok
    f1_sscrf = 100.0 * chunk_scores(yte, y_sscrf)["f1"]
    f1_crf = 100.0 * chunk_scores(yte, y_crf)["f1"]
    m_s = sscrf_marginals(1)()
    m_c = crf_marginals()
    diffs = [abs(p.get(label, 0.0) - q[label]) for s1, s2 in zip(m_s, m_c)
             for p, q in zip(s1, s2) for label in q]
    max_diff, mean_diff = max(diffs), sum(diffs) / len(diffs)
    sums = [sum(p.values()) for s1 in m_s for p in s1]
    sum_err = max(abs(x - 1.0) for x in sums)
    del diffs, sums
    same_threads = all(sscrf_predict(th)() == y_sscrf for th in thread_counts)
    del m_s, m_c, y_crf
    _log(f"  F1 sscrf {f1_sscrf:.2f}, CRFsuite {f1_crf:.2f}; Viterbi agreement "
         f"{100 * agree:.2f}%")

    _log(f"  timing Viterbi ({args.repeats} rounds) ...")
    s_vit = rotate_rounds(viterbi, args.repeats)
    _log(f"  timing marginals ({args.repeats} rounds) ...")
    s_marg = rotate_rounds(marg, args.repeats)
    tagger.close()
    try:
        os.remove(path)
        os.rmdir(tmp)
    except OSError:
        pass

    def rows(samples, ref):
        out = {}
        for name, v in samples.items():
            out[name] = row = timing_row(v, n_sent, n_tok)
            med = row["median_s"]
            row |= {"speedup_vs_crfsuite": tables.ratio(tables.median(samples[ref]), med),
                    "median_paired_speedup": tables.median(
                        [1.0 / r for r in paired_ratios(samples, name, ref) if r])}
        return out

    return {
        "part": "tagging", "n_train_sentences": len(tr), "n_test_sentences": n_sent,
        "n_test_tokens": n_tok, "max_iterations": args.max_iterations,
        "threads": thread_counts, "repeats": args.repeats,
        "sscrf": {"train_s": sscrf_train_s, "iterations": model.training_["iterations"],
                  "f1": f1_sscrf, "n_parameters": int(model.n_parameters_)},
        "crfsuite": {"train_s": crf_train_s, "iterations": crf_iterations, "f1": f1_crf,
                     "n_labels": len(crf_labels),
                     "version": _version("python-crfsuite")},
        "viterbi_agreement": agree, "marginals_max_abs_diff": max_diff,
        "marginals_mean_abs_diff": mean_diff, "sscrf_marginals_max_sum_error": sum_err,
        "sscrf_threads_identical": same_threads,
        "viterbi": rows(s_vit, "crfsuite tag"),
        "marginals": rows(s_marg, "crfsuite marginal"),
        "build_info": sscrf.build_info(),
    }


def _version(name):
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:
        return None


# -- extraction ---------------------------------------------------------------------


def measure_extraction(args):
    import pycrfsuite
    from sscrf import _core
    from sscrf.features import FeatureExtractor

    tr, ytr, _, _, read_s = read_data(args.data, args.max_train, 1)
    n_sent, n_tok = len(tr), sum(len(s) for s in tr)
    templates = crfpp_templates()
    _log(f"extraction: {n_sent} sentences ({n_tok} tokens)")

    def compile_(features):
        return _core.Corpus(features.indptr, features.indices, features.values,
                            features.offsets, features.n_attributes, None, None, None)

    info = {}

    def sscrf_dicts():
        return [sscrf_tokens(s) for s in tr]

    def sscrf_dicts_fit():
        X = [sscrf_tokens(s) for s in tr]
        (f,) = FeatureExtractor(None).fit_transform(X)
        return f

    def sscrf_dicts_all():
        X = [sscrf_tokens(s) for s in tr]
        (f,) = FeatureExtractor(None).fit_transform(X)
        return compile_(f)

    def sscrf_templates_all():
        (f,) = FeatureExtractor(templates).fit_transform(tr)
        return compile_(f)

    def crf_lists():
        return [crfsuite_tokens(s) for s in tr]

    def crf_items():
        return [pycrfsuite.ItemSequence(crfsuite_tokens(s)) for s in tr]

    def crf_append():
        trainer = pycrfsuite.Trainer(verbose=False)
        for x, y in zip(tr, ytr):
            trainer.append(crfsuite_tokens(x), y)
        return trainer

    methods = {
        "sscrf: attribute dicts": sscrf_dicts,
        "sscrf: dicts + fit_transform (vocabulary, CSR)": sscrf_dicts_fit,
        "sscrf: dicts + fit_transform + Corpus": sscrf_dicts_all,
        "sscrf: templates on rows + fit_transform + Corpus": sscrf_templates_all,
        "crfsuite: attribute lists": crf_lists,
        "crfsuite: lists + ItemSequence": crf_items,
        "crfsuite: lists + Trainer.append": crf_append,
    }
    # sizes, once
    X = sscrf_dicts()
    (f,) = FeatureExtractor(None).fit_transform(X)
    info["sscrf_dicts_attributes"] = f.n_attributes
    info["sscrf_dicts_nnz"] = f.nnz
    (ft,) = FeatureExtractor(templates).fit_transform(tr)
    info["sscrf_templates_attributes"] = ft.n_attributes
    info["sscrf_templates_nnz"] = ft.nnz
    del X, f, ft
    _log(f"  timing ({args.repeats} rounds) ...")
    samples = rotate_rounds(methods, args.repeats)
    ref = "crfsuite: lists + Trainer.append"
    out = {}
    for name, v in samples.items():
        out[name] = row = timing_row(v, n_sent, n_tok)
        row |= {"time_vs_crfsuite_append": tables.ratio(row["median_s"],
                                                        tables.median(samples[ref])),
                "median_paired_time_ratio": tables.median(paired_ratios(samples, name, ref))}
    return {"part": "extraction", "n_sentences": n_sent, "n_tokens": n_tok, "read_s": read_s,
            "repeats": args.repeats, "templates": templates, "sizes": info, "methods": out,
            "reference": ref}


# -- report ----------------------------------------------------------------------------


def tagging_tables(t):
    vit, marg = t["viterbi"], t["marginals"]
    L = []
    headers = ["method", "median s", "sentences/s", "tokens/s", "vs CRFsuite (ratio of medians)",
               "median paired"]

    def table(rows):
        return tables.markdown_table(headers, [
            [name, tables.fmt_num(r["median_s"]), f"{r['sentences_per_s']:,.0f}",
             f"{r['tokens_per_s']:,.0f}", tables.fmt_ratio(r["speedup_vs_crfsuite"]),
             tables.fmt_ratio(r["median_paired_speedup"])] for name, r in rows.items()])

    L += ["Viterbi (speed-up = CRFsuite time / this time):", "", table(vit), "",
          "Marginals of every label of every token:", "", table(marg), ""]
    L.append(
        f"Test set: {t['n_test_sentences']:,} sentences, {t['n_test_tokens']:,} tokens; models "
        f"trained on {t['n_train_sentences']:,} sentences, max_iterations = "
        f"{t['max_iterations']} (sscrf {t['sscrf']['iterations']} iterations, F1 "
        f"{t['sscrf']['f1']:.2f}; CRFsuite {t['crfsuite']['iterations']}, F1 "
        f"{t['crfsuite']['f1']:.2f}); Viterbi labels agree on "
        f"{100 * t['viterbi_agreement']:.2f}% of tokens, marginals differ by "
        f"{t.get('marginals_mean_abs_diff', float('nan')):.4f} on average (at most "
        f"{t['marginals_max_abs_diff']:.3f}; the two models differ, their optimisers do); "
        f"sscrf labels identical across thread counts: "
        f"{'yes' if t['sscrf_threads_identical'] else 'NO'}. {t['repeats']} rounds, rotating "
        "order; `core` rows: the compiled kernel on a corpus compiled beforehand; "
        "`ItemSequence prebuilt`: CRFsuite's attribute conversion done beforehand.")
    return "\n".join(L)


def extraction_tables(e):
    headers = ["method", "median s", "sentences/s", "tokens/s", "time vs CRFsuite append",
               "median paired"]
    rows = [[name, tables.fmt_num(r["median_s"]), f"{r['sentences_per_s']:,.0f}",
             f"{r['tokens_per_s']:,.0f}", tables.fmt_ratio(r["time_vs_crfsuite_append"]),
             tables.fmt_ratio(r["median_paired_time_ratio"])]
            for name, r in e["methods"].items()]
    sz = e["sizes"]
    return "\n".join([
        tables.markdown_table(headers, rows), "",
        f"{e['n_sentences']:,} sentences, {e['n_tokens']:,} tokens of CoNLL-2000 train, from "
        f"the parsed rows (read_conll itself: {e['read_s']:.2f} s for train + test, not "
        f"included). sscrf dicts: {sz['sscrf_dicts_attributes']:,} attributes, "
        f"{sz['sscrf_dicts_nnz']:,} non-zeros; templates (CRF++ padding semantics): "
        f"{sz['sscrf_templates_attributes']:,} attributes, {sz['sscrf_templates_nnz']:,} "
        f"non-zeros. {e['repeats']} rounds, gc.collect() before each sample, rotating order."])


def run(args, tmp, log_path, part):
    """Item 4 (``part="tagging"``) or 5 (``"extraction"``) in the suite: this script
    in a child process."""
    path = os.path.join(tmp, f"{part}.json")
    cmd = [sys.executable, os.path.abspath(__file__), "--part", part, "--data",
           args.data, "--max-iterations", str(args.tag_iterations), "--repeats",
           str(args.repeats), "--threads", str(max(args.thread_list)), "--json", path]
    label = "item 4: tagging" if part == "tagging" else "item 5: extraction"
    return run_json_child(cmd, log_path, f"{label} (throughput.py)", json_path=path)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", default="tagging,extraction",
                    help="comma-separated: tagging, extraction")
    ap.add_argument("--data", default=DEFAULT_DATA)
    ap.add_argument("--max-iterations", type=int, default=30)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=None,
                    help="sscrf's multi-thread count (default: every usable CPU)")
    ap.add_argument("--max-train", type=int, default=None, help="first N training sentences")
    ap.add_argument("--max-test", type=int, default=None, help="first N test sentences")
    ap.add_argument("--quick", action="store_true",
                    help="300 training / 200 test sentences, 5 iterations, 2 rounds")
    ap.add_argument("--json", metavar="OUT", help="write every number here ('-': stdout only)")
    args = ap.parse_args(argv)
    if args.quick:
        args.max_train = args.max_train or 300
        args.max_test = args.max_test or 200
        args.max_iterations = min(args.max_iterations, 5)
        args.repeats = min(args.repeats, 2)
    args.data = os.path.abspath(args.data)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    parts = [p.strip() for p in args.part.split(",") if p.strip()]
    for p in parts:
        if p not in ("tagging", "extraction"):
            ap.error(f"unknown part {p!r}")
    machine = host.machine_info()
    result = {"machine": machine, "args": vars(args)}
    if "tagging" in parts:
        result["tagging"] = measure_tagging(args)
    if "extraction" in parts:
        result["extraction"] = measure_extraction(args)
    result["load_average_end"] = host.machine_info()["load_average"]
    if args.json == "-":
        sys.stdout.write(json.dumps(result, default=str) + "\n")
        return 0
    L = ["# Tagging and feature-extraction throughput: sscrf vs CRFsuite", "",
         host.machine_line(machine), ""]
    if "tagging" in result:
        L += ["## Tagging", "", tagging_tables(result["tagging"]), ""]
    if "extraction" in result:
        L += ["## Feature extraction", "", extraction_tables(result["extraction"]), ""]
    print("\n".join(L))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1, default=str)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
