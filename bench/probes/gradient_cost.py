#!/usr/bin/env python
"""Cost of one loss-and-gradient evaluation: likelihood vs entropy (fast, jiao).

Times ``value_and_gradient(theta)`` of the registered objective terms
(:data:`sscrf.objectives.OBJECTIVES`): ``likelihood`` (labeled corpus),
``entropy`` with ``method="fast"`` (the O(n S²) covariance kernel) and with
``method="jiao"`` (Jiao et al.'s O(n² S³) nested programme), and reports the
time per token.

(a) Real features: CoNLL-2000 ``train.txt`` with CRFsuite's chunking
    attributes (the tutorial's ``example/chunking.py``, as in
    ``bench/lib/features_conll2000.py``), the ``dense`` layout (every attribute ×
    label), S = 22 (the labels of train), θ ~ N(0, 0.1²) i.i.d. (seed 0;
    random, not trained). Likelihood and fast entropy run on the whole
    training set; jiao, being O(n² S³) per sentence, on the first
    ``--jiao-sentences`` sentences, where likelihood and fast are timed too
    so that jiao/fast compares the same sentences. The subset has its own
    attribute vocabulary (and a new random θ): with the full one, the
    O(parameters) clearing and reduction of the gradient per call would
    dominate a few hundred tokens.
(b) Featureless synthetic chains: sentences of a fixed length n ∈ {10, 20,
    40, 80}, S ∈ {5, 22, 49}; each token has exactly one attribute, id =
    (token index in the corpus) mod 50, so emissions vary along the chain
    while feature scoring costs next to nothing (50·S weights); dense
    layout, θ ~ N(0, 1) i.i.d. (emissions and transitions, seed 0), random
    gold labels for the likelihood. Likelihood and fast run on about
    ``--tokens`` tokens; jiao on as many whole sentences as fit a time
    budget, estimated from a calibration run; combinations whose single
    sentence would exceed ``--jiao-max-seconds`` are skipped (shown as —).

Timing: each configuration's terms are timed in rotating order within each
of ``--repeats`` rounds (so that load from other jobs hits them alike); a
sample repeats the call until ``--min-time`` seconds have passed and
divides. Reported: medians. Ratios are of medians of the same run.

Targets: fast ≤ 1.5x likelihood on real features (aim 1.3x), ≤ 2.5x on the
featureless chains; jiao/fast growing like n·S, shown as (jiao/fast)/(n·S)
and by a least-squares fit ``jiao/fast ∝ n^a S^b`` over the synthetic grid
(pass when a and b both lie in [0.6, 1.4]).

Usage::

    python bench/probes/gradient_cost.py [--data ../shared/data/conll2000]
        [--repeats 5] [--threads 1] [--json OUT]
"""

import argparse
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))  # the repository root, for bench.lib
from bench.lib import host, tables  # noqa: E402

DEFAULT_DATA = os.path.join(host.DATA_ROOT, "conll2000")
NS = (10, 20, 40, 80)
SS = (5, 22, 49)
N_ATTRIBUTES_SYNTHETIC = 50
REAL_TARGET, REAL_AIM, SYNTHETIC_TARGET = 1.5, 1.3, 2.5
EXPONENT_RANGE = (0.6, 1.4)


# -- building corpora -----------------------------------------------------------


def dense_layout(n_attributes, S):
    import numpy as np
    from sscrf import _core

    row_ptr = np.arange(n_attributes + 1, dtype=np.int64) * S
    label_ids = np.tile(np.arange(S, dtype=np.int32), n_attributes)
    return _core.Layout(row_ptr, label_ids, S)


def corpus_from(features, labels=None):
    from sscrf import _core

    return _core.Corpus(features.indptr, features.indices, features.values, features.offsets,
                        features.n_attributes, labels, None, None)


def synthetic_features(n, n_sentences):
    import numpy as np
    from sscrf.features import Features

    N = n * n_sentences
    return Features(np.arange(N + 1, dtype=np.int64),
                    (np.arange(N) % N_ATTRIBUTES_SYNTHETIC).astype(np.int32),
                    np.ones(N), np.arange(0, N + 1, n, dtype=np.int64),
                    N_ATTRIBUTES_SYNTHETIC)


# -- timing -----------------------------------------------------------------------


def time_call(fn, min_time):
    """Seconds per call of ``fn()``, repeating until ``min_time`` has passed."""
    k, t0 = 0, time.perf_counter()
    while True:
        fn()
        k += 1
        elapsed = time.perf_counter() - t0
        if elapsed >= min_time:
            return elapsed / k


def time_terms(terms, theta, repeats, min_time):
    """{name: median seconds per call}; the terms rotate order each round."""
    names = list(terms)
    for name in names:  # warm-up (allocations, page faults)
        terms[name].value_and_gradient(theta)
    samples = {name: [] for name in names}
    for r in range(repeats):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            term = terms[name]
            samples[name].append(time_call(lambda: term.value_and_gradient(theta), min_time))
    return {name: tables.median(v) for name, v in samples.items()}, samples


def make_terms(corpus_lab, corpus_unl, layout, threads, methods=("fast", "jiao")):
    from sscrf.objectives import OBJECTIVES

    terms = {}
    if corpus_lab is not None:
        terms["likelihood"] = OBJECTIVES["likelihood"](corpus_lab, layout, threads)
    for m in methods:
        terms[m] = OBJECTIVES["entropy"](corpus_unl, layout, threads, weight=1.0, method=m)
    return terms


# -- (a) real features --------------------------------------------------------------


def real_features(args):
    import numpy as np
    from sscrf.features import FeatureExtractor
    from sscrf.io import read_conll
    from bench.lib.features_conll2000 import sscrf_tokens

    t0 = time.perf_counter()
    train = read_conll(os.path.join(args.data, "train.txt"))
    X = [sscrf_tokens(s) for s in train.tokens]
    features = FeatureExtractor(None).fit_transform(X)[0]
    labels = sorted({l for s in train.labels for l in s})
    index = {l: i for i, l in enumerate(labels)}
    y = np.array([index[l] for s in train.labels for l in s], dtype=np.int32)
    S = len(labels)
    layout = dense_layout(features.n_attributes, S)
    rng = np.random.default_rng(0)
    theta = 0.1 * rng.standard_normal(layout.n_parameters)
    prep_s = time.perf_counter() - t0

    out = {"S": S, "n_attributes": features.n_attributes, "n_parameters": layout.n_parameters,
           "n_sentences": features.n_sentences, "n_tokens": features.n_tokens,
           "nnz_per_token": features.nnz / features.n_tokens, "prep_s": prep_s}
    full = make_terms(corpus_from(features, y), corpus_from(features), layout, args.threads,
                      methods=("fast",))
    med, samples = time_terms(full, theta, args.repeats, args.min_time)
    out["full"] = {k: v / features.n_tokens for k, v in med.items()}
    out["full_samples"] = samples

    # The subset gets its own vocabulary: with the full one, every call would
    # also pay for clearing and summing the whole gradient (O(parameters)),
    # which swamps the per-token cost of a few hundred tokens.
    sub = FeatureExtractor(None).fit_transform(X[:args.jiao_sentences])[0]
    y_sub = y[:sub.n_tokens]
    sub_layout = dense_layout(sub.n_attributes, S)
    sub_theta = 0.1 * rng.standard_normal(sub_layout.n_parameters)
    lens = np.diff(sub.offsets)
    out["subset"] = {"n_sentences": sub.n_sentences, "n_tokens": sub.n_tokens,
                     "mean_n": float(lens.mean()), "mean_n2_over_n": float((lens ** 2).sum()
                                                                          / lens.sum())}
    out["subset"]["n_parameters"] = sub_layout.n_parameters
    terms = make_terms(corpus_from(sub, y_sub), corpus_from(sub), sub_layout, args.threads)
    med, samples = time_terms(terms, sub_theta, args.repeats, args.min_time)
    out["subset"].update({k: v / sub.n_tokens for k, v in med.items()})
    out["subset_samples"] = samples
    return out


# -- (b) synthetic chains --------------------------------------------------------------


def synthetic_case(args, n, S, jiao_sentences):
    import numpy as np

    rng = np.random.default_rng(0)
    layout = dense_layout(N_ATTRIBUTES_SYNTHETIC, S)
    theta = rng.standard_normal(layout.n_parameters)
    n_sent = max(1, args.tokens // n)
    feats = synthetic_features(n, n_sent)
    y = rng.integers(0, S, size=feats.n_tokens).astype(np.int32)
    terms = make_terms(corpus_from(feats, y), corpus_from(feats), layout, args.threads,
                       methods=("fast",))
    med, _ = time_terms(terms, theta, args.repeats, args.min_time)
    row = {"n": n, "S": S, "tokens": feats.n_tokens,
           "likelihood": med["likelihood"] / feats.n_tokens, "fast": med["fast"] / feats.n_tokens,
           "jiao": None, "jiao_tokens": 0, "fast_same": None}
    if jiao_sentences:
        jf = synthetic_features(n, jiao_sentences)
        jterms = make_terms(None, corpus_from(jf), layout, args.threads)
        jmed, _ = time_terms(jterms, theta, args.repeats, args.min_time)
        row["jiao"] = jmed["jiao"] / jf.n_tokens
        row["fast_same"] = jmed["fast"] / jf.n_tokens
        row["jiao_tokens"] = jf.n_tokens
    return row


def calibrate_jiao(args):
    """Seconds per n²·S³ of the jiao gradient, from one small chain."""
    import numpy as np

    n, S, k = 20, 22, 4
    layout = dense_layout(N_ATTRIBUTES_SYNTHETIC, S)
    theta = np.random.default_rng(0).standard_normal(layout.n_parameters)
    terms = make_terms(None, corpus_from(synthetic_features(n, k)), layout, args.threads,
                       methods=("jiao",))
    med, _ = time_terms(terms, theta, 3, args.min_time)
    return med["jiao"] / (k * n * n * S ** 3)


def plan_jiao(args, c):
    """Sentences of jiao per (n, S): fit --jiao-budget seconds per call; 0 to skip."""
    plan = {}
    for n in NS:
        for S in SS:
            one = c * n * n * S ** 3
            if one > args.jiao_max_seconds:
                plan[(n, S)] = 0
            else:
                plan[(n, S)] = int(max(1, min(args.tokens // n, args.jiao_budget // one)))
    return plan


def fit_exponents(rows, min_labels=0):
    """Least squares log(jiao/fast) = c + a log n + b log S over the rows with
    S >= min_labels; returns (a, b) or None."""
    import numpy as np

    pts = [(r["n"], r["S"], r["jiao"] / r["fast_same"]) for r in rows
           if r["jiao"] and r["S"] >= min_labels]
    if len(pts) < 3 or len({p[0] for p in pts}) < 2 or len({p[1] for p in pts}) < 2:
        return None
    A = np.array([[1.0, math.log(n), math.log(S)] for n, S, _ in pts])
    b = np.array([math.log(v) for _, _, v in pts])
    coef, *_ = np.linalg.lstsq(A, b, rcond=None)
    return float(coef[1]), float(coef[2])


# -- report ---------------------------------------------------------------------------


def us(x):
    return "—" if x is None else tables.fmt_num(1e6 * x, 3 if 1e6 * x < 10 else 2)


def report(args, machine, real, synth, c_jiao, plan, total_s):
    r = tables.ratio
    L = [
        "# Loss-and-gradient cost per token: likelihood vs entropy (fast, jiao)",
        "",
        host.machine_line(machine),
        f"{args.threads} thread(s); {args.repeats} rounds, terms in rotating order, each sample "
        f"≥ {args.min_time} s of repeated calls; medians. Total run {total_s / 60:.1f} min.",
        "",
    ]
    if real:
        sub = real["subset"]
        fr = r(real["full"]["fast"], real["full"]["likelihood"])
        L += [
            "## (a) CoNLL-2000 train, CRFsuite chunking attributes, dense layout",
            "",
            f"S = {real['S']}, {real['n_attributes']:,} attributes, {real['n_parameters']:,} "
            f"parameters, {real['nnz_per_token']:.1f} attributes per token; θ ~ N(0, 0.1²) "
            "random (seed 0), not trained. `all` = the whole training set "
            f"({real['n_sentences']:,} sentences, {real['n_tokens']:,} tokens); `first "
            f"{sub['n_sentences']}` = its first {sub['n_sentences']} sentences "
            f"({sub['n_tokens']:,} tokens, mean length {sub['mean_n']:.1f}, token-weighted mean "
            f"length {sub['mean_n2_over_n']:.1f}; own vocabulary, {sub['n_parameters']:,} "
            "parameters), where jiao runs.",
            "",
        ]
        rows = [
            ["all", f"{real['n_tokens']:,}", us(real["full"]["likelihood"]),
             us(real["full"]["fast"]), "—", tables.fmt_ratio(fr), "—"],
            [f"first {sub['n_sentences']}", f"{sub['n_tokens']:,}", us(sub["likelihood"]),
             us(sub["fast"]), us(sub["jiao"]),
             tables.fmt_ratio(r(sub["fast"], sub["likelihood"])),
             tables.fmt_ratio(r(sub["jiao"], sub["fast"]), 1)],
        ]
        L.append(tables.markdown_table(
            ["sentences", "tokens", "likelihood µs/token", "fast µs/token", "jiao µs/token",
             "fast/likelihood", "jiao/fast"], rows))
        L += ["", f"Target fast ≤ {REAL_TARGET}x likelihood on real features (aim {REAL_AIM}x), "
              f"whole training set: {tables.fmt_ratio(fr)} → "
              f"{tables.verdict(fr is not None and fr <= REAL_TARGET)}"
              f" (aim: {tables.verdict(fr is not None and fr <= REAL_AIM)})", ""]
    L += [
        "## (b) Featureless synthetic chains",
        "",
        f"One attribute per token (id = token index mod {N_ATTRIBUTES_SYNTHETIC}), dense layout, "
        f"θ ~ N(0, 1) random (seed 0). Likelihood and fast on ≈{args.tokens:,} tokens each; "
        f"jiao on the `jiao tokens` shown (whole sentences, ≈{args.jiao_budget} s per call "
        f"planned from a calibration of {c_jiao * 1e9:.3f} ns per n²·S³; combinations "
        f"whose one sentence would take more than {args.jiao_max_seconds} s are skipped: —). "
        "jiao/fast uses fast timed on the jiao sentences; (jiao/fast)/(n·S) should stay "
        "roughly constant.",
        "",
    ]
    rows = []
    ok_all = True
    for row in synth:
        fr = r(row["fast"], row["likelihood"])
        ok = fr is not None and fr <= SYNTHETIC_TARGET
        ok_all &= ok
        jf = r(row["jiao"], row["fast_same"])
        rows.append([row["n"], row["S"], f"{row['tokens']:,}", us(row["likelihood"]),
                     us(row["fast"]), us(row["jiao"]),
                     f"{row['jiao_tokens']:,}" if row["jiao"] else "—",
                     tables.fmt_ratio(fr), tables.verdict(ok),
                     tables.fmt_ratio(jf, 1),
                     "—" if jf is None else f"{jf / (row['n'] * row['S']):.3f}"])
    L.append(tables.markdown_table(
        ["n", "S", "tokens", "likelihood µs/token", "fast µs/token", "jiao µs/token",
         "jiao tokens", "fast/likelihood", f"≤ {SYNTHETIC_TARGET}x", "jiao/fast",
         "(jiao/fast)/(n·S)"], rows))
    skipped = [f"n={n}, S={S}" for (n, S), k in plan.items() if k == 0]
    L += ["", f"Target fast ≤ {SYNTHETIC_TARGET}x likelihood on every featureless chain: "
          f"{tables.verdict(ok_all)}"]
    if skipped:
        L.append(f"jiao skipped (one sentence over {args.jiao_max_seconds} s): "
                 + "; ".join(skipped))
    exps = fit_exponents(synth)
    if exps:
        a, b = exps
        lo, hi = EXPONENT_RANGE
        ok = lo <= a <= hi and lo <= b <= hi
        L.append(f"Fit jiao/fast ∝ n^a · S^b over the grid: a = {a:.2f}, b = {b:.2f} "
                 f"(n·S growth means a = b = 1; pass when both in [{lo}, {hi}]) → "
                 f"{tables.verdict(ok)}")
        large = fit_exponents(synth, min_labels=10)
        if large is not None:
            # At S = 5 the fast kernel's per-token cost is mostly fixed work
            # (scoring, exp, bookkeeping), not its S² products, which bends
            # the full-grid fit upwards in S; shown separately, not judged.
            L.append(f"Same fit over S ≥ 10 only (where fast's S² work dominates its cost): "
                     f"a = {large[0]:.2f}, b = {large[1]:.2f}")
    return "\n".join(L)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default=DEFAULT_DATA)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--min-time", type=float, default=0.2,
                   help="seconds of repeated calls per timing sample")
    p.add_argument("--jiao-sentences", type=int, default=100,
                   help="CoNLL-2000 sentences for the real-feature jiao timing")
    p.add_argument("--tokens", type=int, default=20000,
                   help="tokens of each synthetic corpus (likelihood and fast)")
    p.add_argument("--jiao-budget", type=float, default=0.3,
                   help="planned seconds per synthetic jiao call")
    p.add_argument("--jiao-max-seconds", type=float, default=3.0,
                   help="skip jiao where one sentence would take longer")
    p.add_argument("--skip-real", action="store_true")
    p.add_argument("--json", help="write the raw numbers here")
    args = p.parse_args(argv)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    machine = host.machine_info()
    started = time.perf_counter()

    real = None
    if not args.skip_real:
        print("(a) real features ...", file=sys.stderr, flush=True)
        real = real_features(args)
    print("(b) calibrating jiao ...", file=sys.stderr, flush=True)
    c_jiao = calibrate_jiao(args)
    plan = plan_jiao(args, c_jiao)
    synth = []
    for S in SS:
        for n in NS:
            print(f"    n={n} S={S} (jiao: {plan[(n, S)]} sentences)", file=sys.stderr,
                  flush=True)
            synth.append(synthetic_case(args, n, S, plan[(n, S)]))
    total = time.perf_counter() - started
    text = report(args, machine, real, synth, c_jiao, plan, total)
    print(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"machine": machine, "args": vars(args), "real": real,
                       "synthetic": synth, "jiao_seconds_per_n2S3": c_jiao,
                       "total_s": total}, f, indent=1)


if __name__ == "__main__":
    main()
