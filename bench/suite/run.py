#!/usr/bin/env python
"""The sscrf benchmark suite: one entry point, one JSON file, one Markdown table.

Items (issue 7), all on CoNLL-2000 chunking with the attributes of CRFsuite's
chunking example (the same attribute strings reach both tools):

1. supervised loss-and-gradient time per evaluation and total training time
   to the same stopping rule (L2 c2 = 1, L-BFGS, epsilon/period/delta
   1e-5/10/1e-5), sscrf ``observed`` and ``dense`` at 1 and 2 threads
   against python-crfsuite, back to back, several repetitions, medians and
   ratios — ``bench/supervised_conll2000.py --json`` in a child process;
2. thread scaling: tokens per second of ``value_and_gradient`` for each
   thread count and every objective term registered in
   ``sscrf.objectives.OBJECTIVES`` (``likelihood``; ``entropy`` fast;
   ``partial_likelihood`` with half of the tokens, drawn at random, allowed
   every label and the rest their gold label; ``ge`` with the most frequent
   ``w[0]=`` attributes as constraints and their smoothed empirical label
   distributions as targets; ``alternatives`` with two labelings per
   sentence, the gold one and one with a random token relabeled), on the
   real features, ``dense`` layout, θ ~ N(0, 0.1²) (seed 0), each call
   writing into one reused gradient array as the trainer's calls do (a fresh
   59 MB array per call adds page faults that serialise: 68% instead of 92%
   2-thread efficiency for the likelihood in one test); parallel
   efficiency = speed-up / threads; also checks that every thread count
   gives the same bits as one thread — this script's ``--child scaling``;
3. cost of each term per token relative to ``likelihood`` at 1 thread: per
   round, the term's calls interleaved with the likelihood's call by call,
   the ratio of their times, median over rounds (samples of the two terms
   seconds apart moved with this machine's speed, which drifts by tens of
   percent from minute to minute);
4. tagging throughput, Viterbi (``CRF.predict``) and marginals
   (``CRF.predict_marginals``) against ``Tagger.tag`` and ``Tagger.marginal``
   for every label of every token — ``bench/throughput.py --part tagging``;
5. feature-extraction throughput from the CoNLL rows to the compiled CSR
   against building CRFsuite's attribute lists / ``Trainer.append`` —
   ``bench/throughput.py --part extraction``;
6. whole-process peak memory of training, each tool in its own process from
   the same input (from item 1's children);

and, with no target, the loss-and-gradient time per evaluation against
CRFsuite on BC2GM and UD EWT (3, 17 and 49 labels; ``bench/eval_time_corpora.py``,
item ``corpora``; skipped when ``--corpora-data`` has none of them).

Each measuring child records the machine (CPU model, cores), the date and
the commit; every table row carries them. The issue's targets are checked
at the end (PASS / FAIL / N/A); this script does not try to meet them.

Usage::

    python bench/run.py [--quick] [--repeats N] [--threads 1,2]
        [--out bench/results] [--data ../shared/data/conll2000]
        [--corpora-data ../shared/data] [--items supervised,scaling,tagging,extraction,corpora]

``--quick``: every item on the first 300 training / 200 test sentences, a
few iterations and rounds (a smoke test in a few minutes; the numbers mean
little). Writes ``OUT/suite.json``, ``OUT/suite.md`` (rewritten after each
item, so a partial run leaves its results) and the children's progress in
``OUT/suite.log``.

This parent imports only the standard library (``_common``), so that the
peak memory the children report is not inflated by it.
"""

import argparse
import json
import os
import shlex
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402

BENCH = os.path.dirname(os.path.abspath(__file__))
DEFAULT_DATA = os.path.join(os.path.dirname(_common.REPO_ROOT), "shared", "data", "conll2000")
DEFAULT_OUT = os.path.join(BENCH, "results")
ITEMS = ("supervised", "scaling", "tagging", "extraction", "corpora")

QUICK = {"train": 300, "test": 200, "max_iterations": 3, "tag_iterations": 5, "repeats": 2,
         "min_time": 0.05}

# -- targets (issue 7, "Targets") ------------------------------------------------
OBSERVED_EVAL = {1: 0.25, 2: 0.15}      # s/eval ratio to CRFsuite, observed
DENSE_EVAL = {1: 0.35, 2: 0.20}         # s/eval ratio to CRFsuite (observed), dense
TOTAL_OBSERVED_2T = 0.35                # training time ratio, observed, 2 threads
EFFICIENCY = {2: 0.90, 16: 0.75}        # parallel efficiency at these thread counts
ENTROPY_COST, ENTROPY_AIM, GE_COST = 1.5, 1.3, 2.0
TAGGING_SPEEDUP = 2.0
MEMORY_OBSERVED = 1.5                   # peak RSS ratio to CRFsuite (observed)
MEMORY_DENSE_WAPITI = 1.5               # peak RSS ratio to Wapiti (dense)
WAPITI_PEAK_MB = 922.0                  # recorded in issue 7 (Wapiti 1.5, all pairs)
F1_BEFORE = 93.62                       # recorded before the optimisation (commit f468bf4)
F1_TOLERANCE = 0.3


def _log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def machine_tag(info):
    """Short per-row tag: CPU, cores, date, commit."""
    cpu = info.get("cpu", "?")
    for noise in ("(R)", "(TM)", " CPU", " Processor"):
        cpu = cpu.replace(noise, "")
    cores = info.get("usable_cpus") or info.get("logical_cpus")
    return f"{' '.join(cpu.split())} ×{cores} · {info.get('date', '?')[:10]} · " \
           f"{info.get('commit', '?')}"


def row_meta(info):
    return {"cpu": info.get("cpu"), "cores": info.get("usable_cpus") or info.get("logical_cpus"),
            "date": info.get("date"), "commit": info.get("commit")}


# ======================================================================================
# child: thread scaling and term cost (items 2 and 3)
# ======================================================================================


def _dense_layout(n_attributes, S):
    import numpy as np
    from sscrf import _core

    row_ptr = np.arange(n_attributes + 1, dtype=np.int64) * S
    label_ids = np.tile(np.arange(S, dtype=np.int32), n_attributes)
    return _core.Layout(row_ptr, label_ids, S)


def _corpus(features, labels=None, mask=None):
    from sscrf import _core

    return _core.Corpus(features.indptr, features.indices, features.values, features.offsets,
                        features.n_attributes, labels, None, mask)


def partial_mask(y, S, rng):
    """Allowed labels (N, S) of the partial_likelihood term: about half the
    tokens all-allowed, the rest one-hot gold; returns (mask, free)."""
    import numpy as np

    N = len(y)
    free = rng.random(N) < 0.5
    mask = np.zeros((N, S), dtype=bool)
    mask[np.arange(N), y] = True
    mask[free] = True
    return mask, free


def _ge_setup(features, attributes, y, S, n_constraints):
    """The ``n_constraints`` most frequent ``w[0]=`` attributes and their label distributions."""
    import numpy as np

    A = features.n_attributes
    freq = np.bincount(features.indices, minlength=A)
    candidates = np.array([i for i, a in enumerate(attributes) if a.startswith("w[0]=")],
                          dtype=np.int64)
    chosen = candidates[np.argsort(-freq[candidates], kind="stable")[:n_constraints]]
    cmap = np.full(A, -1, dtype=np.int64)
    cmap[chosen] = np.arange(len(chosen))
    tok = np.repeat(np.arange(features.n_tokens), np.diff(features.indptr))
    m = cmap[features.indices]
    hit = m >= 0
    counts = np.zeros((len(chosen), S))
    np.add.at(counts, (m[hit], y[tok[hit]]), 1.0)
    targets = (counts + 0.1) / (counts + 0.1).sum(axis=1, keepdims=True)
    firing = np.zeros(features.n_tokens, dtype=bool)
    firing[tok[hit]] = True
    return cmap, targets, {"constraints": int(len(chosen)),
                           "tokens_with_a_constraint": float(firing.mean())}


def alternatives_setup(features, y, S, rng):
    """Two labelings per sentence for the ``alternatives`` term: the gold one and
    the gold one with one random token relabeled. Returns (their label ids,
    one after another; the sentence of each labeling)."""
    import numpy as np

    offsets = np.asarray(features.offsets)
    alt = []
    for s in range(features.n_sentences):
        seq = y[offsets[s]:offsets[s + 1]]
        other = seq.copy()
        if len(other):
            t = rng.integers(len(other))
            other[t] = (other[t] + 1 + rng.integers(S - 1)) % S
        alt += [seq, other]
    return np.concatenate(alt).astype(np.int32), np.repeat(np.arange(features.n_sentences), 2)


def child_scaling(args):
    import numpy as np
    import sscrf
    from sscrf.features import FeatureExtractor
    from sscrf.io import read_conll
    from sscrf.objectives import OBJECTIVES

    try:  # registers further terms (e.g. "alternatives") when present
        import sscrf.partial as partial
    except ImportError:
        partial = None
    from supervised_conll2000 import sscrf_tokens

    machine = _common.machine_info()
    t0 = time.perf_counter()
    train = read_conll(os.path.join(args.data, "train.txt"))
    tokens, gold = list(train.tokens), list(train.labels)
    if args.sentences:
        tokens, gold = tokens[:args.sentences], gold[:args.sentences]
    X = [sscrf_tokens(s) for s in tokens]
    extractor = FeatureExtractor(None)
    (features,) = extractor.fit_transform(X)
    del X
    labels = sorted({l for s in gold for l in s})
    index = {l: i for i, l in enumerate(labels)}
    y = np.array([index[l] for s in gold for l in s], dtype=np.int32)
    S, N = len(labels), features.n_tokens
    layout = _dense_layout(features.n_attributes, S)
    theta = 0.1 * np.random.default_rng(0).standard_normal(layout.n_parameters)
    rng = np.random.default_rng(1)
    setup = {"n_sentences": features.n_sentences, "n_tokens": N, "S": S,
             "n_attributes": features.n_attributes, "n_parameters": layout.n_parameters,
             "nnz_per_token": features.nnz / max(N, 1)}

    lab = _corpus(features, labels=y)
    unl = _corpus(features)
    builders, notes = {}, {}
    builders["likelihood"] = lambda th: OBJECTIVES["likelihood"](lab, layout, th)
    notes["likelihood"] = "gold labels"
    if "entropy" in OBJECTIVES:
        builders["entropy"] = lambda th: OBJECTIVES["entropy"](unl, layout, th, method="fast")
        notes["entropy"] = "method=fast, all tokens unlabeled"
    if "partial_likelihood" in OBJECTIVES:
        mask, free = partial_mask(y, S, rng)
        part = _corpus(features, mask=mask)
        builders["partial_likelihood"] = lambda th: OBJECTIVES["partial_likelihood"](
            part, layout, th)
        notes["partial_likelihood"] = (f"{100 * free.mean():.1f}% of tokens all-allowed, "
                                       "the rest one-hot gold")
    if "ge" in OBJECTIVES:
        cmap, targets, info = _ge_setup(features, extractor.attributes_, y, S,
                                        args.ge_constraints)
        setup["ge"] = info
        builders["ge"] = lambda th: OBJECTIVES["ge"](unl, layout, th,
                                                     constraint_of_attribute=cmap,
                                                     targets=targets)
        notes["ge"] = (f"{info['constraints']} constraints (most frequent w[0]= attributes, "
                       f"smoothed empirical targets), KL; a constraint fires at "
                       f"{100 * info['tokens_with_a_constraint']:.0f}% of tokens")
    if "alternatives" in OBJECTIVES and partial is not None:
        alt_labels, groups = alternatives_setup(features, y, S, rng)
        builders["alternatives"] = lambda th: OBJECTIVES["alternatives"](
            features, alt_labels, groups, layout, th)
        notes["alternatives"] = ("2 labelings per sentence (gold, gold with one token "
                                 "relabeled)")
    missing = [name for name in OBJECTIVES if name not in builders]
    setup["prep_s"] = time.perf_counter() - t0

    threads = args.thread_list
    terms = {(name, th): build(th) for name, build in builders.items() for th in threads}
    _log(f"scaling: {N} tokens, {layout.n_parameters} parameters, terms {list(builders)}, "
         f"threads {threads}")

    for term in terms.values():  # warm-up
        term.value_and_gradient(theta)
    gradient = np.empty_like(theta)  # reused, as Objective(reuse_gradient=True) does

    def interleaved(calls):
        """Seconds per call of each of `calls`, run in turn call by call
        (order reversed every other turn; min_time per call in all, as many
        seconds as separate samples took), so that the ratios between them
        see the same state of a machine whose speed drifts from second to
        second."""
        spent = [0.0] * len(calls)
        k = 0
        while k < 3 or sum(spent) < args.min_time * len(calls):
            turn = range(len(calls)) if k % 2 == 0 else reversed(range(len(calls)))
            for j in turn:
                t_call = time.perf_counter()
                calls[j].value_and_gradient(theta, out=gradient)
                spent[j] += time.perf_counter() - t_call
            k += 1
        return [t / k for t in spent]

    def sample(term):
        k, t_start = 0, time.perf_counter()
        while True:
            term.value_and_gradient(theta, out=gradient)
            k += 1
            elapsed = time.perf_counter() - t_start
            if elapsed >= args.min_time:
                return elapsed / k

    names = list(builders)
    samples = {name: {th: [] for th in threads} for name in names}
    # item 3: each term against the likelihood, both at one thread, in turn.
    # Thread counts stay back to back: interleaving them call by call did
    # not steady the 2-thread efficiencies here (the likelihood's read
    # 75-89% in five runs so, 86-95% in six runs back to back).
    cost_pairs = {name: [] for name in names if name != "likelihood"}
    base = threads[0]
    for r in range(args.rounds):
        k = r % len(names)
        order = names[k:] + names[:k]
        ths = threads if r % 2 == 0 else threads[::-1]
        for name in order:
            for th in ths:
                samples[name][th].append(sample(terms[(name, th)]))
            if name in cost_pairs and "likelihood" in builders:
                lik_t, term_t = interleaved([terms[("likelihood", base)], terms[(name, base)]])
                cost_pairs[name].append(term_t / lik_t)
        _log(f"  round {r + 1}/{args.rounds} done")

    identical = {}
    for name in names:
        v1, g1 = terms[(name, 1)].value_and_gradient(theta) if 1 in threads else (None, None)
        identical[name] = {}
        for th in threads:
            if th == 1 or v1 is None:
                continue
            v, g = terms[(name, th)].value_and_gradient(theta)
            identical[name][th] = bool(v == v1 and np.array_equal(g, g1))
        del v1, g1

    return {"machine": machine, "setup": setup, "threads": threads, "rounds": args.rounds,
            "min_time": args.min_time, "notes": notes, "not_benchmarked": missing,
            "samples": {n: {str(th): v for th, v in d.items()} for n, d in samples.items()},
            "cost_ratio_samples": cost_pairs if "likelihood" in builders else {},
            "identical_to_1_thread": {n: {str(th): v for th, v in d.items()}
                                      for n, d in identical.items()},
            "build_info": sscrf.build_info(),
            "load_average_end": _common.machine_info()["load_average"]}


def summarize_scaling(raw):
    """Per term and thread count: s/token, tokens/s, speed-up, efficiency; term cost."""
    N = raw["setup"]["n_tokens"]
    threads = raw["threads"]
    out = {}
    for name, by_th in raw["samples"].items():
        rows = {}
        base = by_th.get("1")
        for th in threads:
            v = by_th[str(th)]
            med = _common.median(v)
            row = {"median_s": med, "s_per_token": med / N, "tokens_per_s": N / med}
            if base:
                b = _common.median(base)
                row["speedup"] = b / med
                row["efficiency"] = b / med / th
                per_round = [a / c / th for a, c in zip(base, v)]
                row["median_paired_efficiency"] = _common.median(per_round)
                row["paired_efficiency_range"] = [min(per_round), max(per_round)]
            row["identical_to_1_thread"] = raw["identical_to_1_thread"].get(name, {}).get(
                str(th))
            rows[str(th)] = row
        out[name] = rows
    cost = {}
    lik = raw["samples"].get("likelihood", {}).get("1")
    if lik:
        for name, by_th in raw["samples"].items():
            v = by_th.get("1")
            if not v:
                continue
            # Interleaved with the likelihood call by call when measured so
            # (runs before that paired the scaling samples of one round).
            paired = raw.get("cost_ratio_samples", {}).get(name) or [
                a / b for a, b in zip(v, lik)]
            cost[name] = {"us_per_token": 1e6 * _common.median(v) / N,
                          "ratio_of_medians": _common.median(v) / _common.median(lik),
                          "median_paired_ratio": _common.median(paired),
                          "paired_ratio_range": [min(paired), max(paired)]}
    return {"by_term": out, "cost_vs_likelihood": cost}


# ======================================================================================
# parent
# ======================================================================================


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


def run_json_child(cmd, log, what, timeout=None, json_path=None):
    """Run a child; its stderr goes to the log; parse its JSON (file or last stdout line)."""
    _log(f"{what}: {' '.join(shlex.quote(c) for c in cmd[1:])}")
    env = dict(os.environ)
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env.setdefault("MKL_NUM_THREADS", "1")
    res = _common.run_child(cmd, env=env, cwd=_common.REPO_ROOT, timeout=timeout)
    with open(log, "a", encoding="utf-8") as f:
        f.write(f"\n===== {what} ({time.strftime('%Y-%m-%d %H:%M:%S')}; exit "
                f"{res.returncode}; {res.wall_s:.1f} s) =====\n$ {' '.join(cmd)}\n")
        f.write(res.stderr)
        if json_path is None or res.returncode != 0:
            f.write(res.stdout[-20000:])
    if res.returncode != 0:
        tail = "\n".join(res.stderr.strip().splitlines()[-15:])
        raise RuntimeError(f"{what} failed (exit {res.returncode}):\n{tail}")
    if json_path:
        with open(json_path, encoding="utf-8") as f:
            data = json.load(f)
    else:
        lines = [l for l in res.stdout.splitlines() if l.strip()]
        data = json.loads(lines[-1])
    data["_child_wall_s"] = res.wall_s
    return data


def item_supervised(args, tmp, log):
    path = os.path.join(tmp, "supervised.json")
    cmd = [sys.executable, os.path.join(BENCH, "supervised_conll2000.py"), "--data", args.data,
           "--max-iterations", str(args.max_iterations), "--repeats", str(args.repeats),
           "--eval-repeats", str(1 if args.quick else 5), "--json", path]
    return run_json_child(cmd, log, "item 1/6: supervised_conll2000.py", json_path=path)


def item_scaling(args, tmp, log):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "scaling", "--data", args.data,
           "--threads", ",".join(map(str, args.thread_list)), "--rounds", str(args.rounds),
           "--min-time", str(args.min_time), "--ge-constraints", str(args.ge_constraints)]
    raw = run_json_child(cmd, log, "items 2-3: thread scaling and term cost")
    raw["summary"] = summarize_scaling(raw)
    return raw


def item_throughput(args, tmp, log, part):
    path = os.path.join(tmp, f"{part}.json")
    cmd = [sys.executable, os.path.join(BENCH, "throughput.py"), "--part", part, "--data",
           args.data, "--max-iterations", str(args.tag_iterations), "--repeats",
           str(args.repeats), "--threads", str(max(args.thread_list)), "--json", path]
    label = "item 4: tagging" if part == "tagging" else "item 5: extraction"
    return run_json_child(cmd, log, f"{label} (throughput.py)", json_path=path)


def item_corpora(args, tmp, log):
    import eval_time_corpora

    present = eval_time_corpora.present_corpora(args.corpora_data)
    if not present:
        return {"skipped": f"no corpus of {', '.join(eval_time_corpora.CORPORA)} under "
                           f"{args.corpora_data} (--corpora-data DIR)"}
    out = os.path.join(tmp, "corpora")
    threads = sorted({1, max(args.thread_list)})
    cmd = [sys.executable, os.path.join(BENCH, "eval_time_corpora.py"), "--data",
           args.corpora_data, "--corpora", ",".join(present), "--repeats", str(args.repeats),
           "--iterations", str(min(args.max_iterations, 10)), "--threads",
           ",".join(map(str, threads)), "--out", out]
    return run_json_child(cmd, log, "item 7 (no target): eval_time_corpora.py",
                          json_path=os.path.join(out, "eval_time_corpora.json"))


# -- targets ------------------------------------------------------------------------------


def _sup_runs(sup, key):
    return sup["runs"].get(key, [])


def paired(sup, key, ref, field, ref_field=None):
    """Median over repetitions of key's field / ref's ref_field (default: the same field)."""
    ref_field = ref_field or field
    a, b = _sup_runs(sup, key), _sup_runs(sup, ref)
    return _common.median([x[field] / y[ref_field] for x, y in zip(a, b)
                           if x.get(field) is not None and y.get(ref_field)])


def supervised_ratios(sup):
    ref = sup["reference"]
    s = sup["summary"]
    out = {}
    for key in s:
        out[key] = {
            "s_per_eval_ratio_of_medians": _common.ratio(s[key]["s_per_eval"],
                                                         s[ref]["s_per_eval"]),
            "s_per_eval_median_paired_ratio": paired(sup, key, ref, "s_per_eval"),
            "eval_only_vs_crfsuite_s_per_eval": _common.ratio(s[key].get("eval_only_s"),
                                                              s[ref]["s_per_eval"]),
            "eval_only_median_paired_ratio": paired(sup, key, ref, "eval_only_s", "s_per_eval"),
            "total_ratio_of_medians": _common.ratio(s[key]["train_s"], s[ref]["train_s"]),
            "total_median_paired_ratio": paired(sup, key, ref, "train_s"),
            "peak_ratio": _common.ratio(s[key]["peak_rss_bytes"], s[ref]["peak_rss_bytes"]),
        }
    return out


def check_targets(res, quick):
    T = []

    def add(item, name, value, ok, note="", tag=None):
        T.append({"item": item, "name": name, "value": value, "ok": ok, "note": note,
                  "run": tag})

    sup = res.get("supervised")
    if sup:
        tag = machine_tag(sup["machine"])
        r = sup["ratios"]
        for fs, limits in (("observed", OBSERVED_EVAL), ("dense", DENSE_EVAL)):
            for th, lim in limits.items():
                key = f"sscrf {fs}-{th}"
                if key not in r:
                    continue
                q = r[key]
                which = f"{fs}, {th} thread{'s' * (th > 1)}: ≤ {lim:.2f}x CRFsuite (observed)"
                # The words: a loss-and-gradient call against CRFsuite's
                # time per evaluation (its training time / evaluations).
                v = q.get("eval_only_median_paired_ratio")
                add(1, f"loss+gradient per evaluation, {which}",
                    f"{_common.fmt_ratio(v)} (ratio of medians "
                    f"{_common.fmt_ratio(q['eval_only_vs_crfsuite_s_per_eval'])})",
                    None if v is None else v <= lim,
                    note="a bare loss-and-gradient call at the trained weights", tag=tag)
                # A stricter reading, with the optimiser's own passes counted.
                v = q["s_per_eval_median_paired_ratio"]
                add(1, f"training time per evaluation, optimiser included, {which}",
                    f"{_common.fmt_ratio(v)} (ratio of medians "
                    f"{_common.fmt_ratio(q['s_per_eval_ratio_of_medians'])})",
                    None if v is None else v <= lim,
                    note="a stricter reading than the issue's words", tag=tag)
        key = "sscrf observed-2"
        if key in r:
            v = r[key]["total_median_paired_ratio"]
            add(1, f"total training time, observed, 2 threads: ≤ {TOTAL_OBSERVED_2T:.2f}x "
                   "CRFsuite", f"{_common.fmt_ratio(v)} (ratio of medians "
                               f"{_common.fmt_ratio(r[key]['total_ratio_of_medians'])})",
                None if v is None else v <= TOTAL_OBSERVED_2T, tag=tag)
        for th in (1, 2):
            key = f"sscrf observed-{th}"
            if key in r:
                v = r[key]["peak_ratio"]
                add(6, f"peak training memory, observed, {th} thread{'s' * (th > 1)}: ≤ "
                       f"{MEMORY_OBSERVED}x CRFsuite",
                    f"{_common.fmt_ratio(v)} ({_common.fmt_mb(sup['summary'][key]['peak_rss_bytes'])}"
                    f" vs {_common.fmt_mb(sup['summary'][sup['reference']]['peak_rss_bytes'])} MB)",
                    None if v is None else v <= MEMORY_OBSERVED, tag=tag)
        for th in (1, 2):
            key = f"sscrf dense-{th}"
            if key in sup["summary"]:
                mb = sup["summary"][key]["peak_rss_bytes"] / 1e6
                v = mb / WAPITI_PEAK_MB
                add(6, f"peak training memory, dense, {th} thread{'s' * (th > 1)}: ≤ "
                       f"{MEMORY_DENSE_WAPITI}x Wapiti",
                    f"{v:.2f}x ({mb:.1f} vs {WAPITI_PEAK_MB:.0f} MB)",
                    None if quick else v <= MEMORY_DENSE_WAPITI,
                    note="Wapiti's figure is the one recorded in issue 7 (Wapiti is not "
                         "installed here), not measured in this run", tag=tag)
        s = sup["summary"]
        ref = sup["reference"]
        for key in ("sscrf observed-1", "sscrf observed-2"):
            if key in s:
                d = s[key]["f1"] - s[ref]["f1"]
                add(1, f"F1 ({key.split()[1]}) within {F1_TOLERANCE} of CRFsuite and of "
                       f"{F1_BEFORE} (before the optimisation)",
                    f"{s[key]['f1']:.2f} (CRFsuite {s[ref]['f1']:.2f}, {d:+.2f}; before "
                    f"{s[key]['f1'] - F1_BEFORE:+.2f})",
                    None if quick else (abs(d) <= F1_TOLERANCE + 1e-9
                                        and abs(s[key]["f1"] - F1_BEFORE) <= F1_TOLERANCE + 1e-9),
                    note="quick run: too few iterations to compare F1" if quick else "", tag=tag)
        for fs in ("observed", "dense"):
            a, b = s.get(f"sscrf {fs}-1"), s.get(f"sscrf {fs}-2")
            if a and b:
                same = (a["final_loss"] == b["final_loss"] and a["evaluations"] == b["evaluations"]
                        and a["f1"] == b["f1"])
                add(1, f"training identical at 1 and 2 threads ({fs}: final loss, evaluations, F1)",
                    f"loss {a['final_loss']!r} vs {b['final_loss']!r}", same, tag=tag)

    sc = res.get("scaling")
    if sc:
        tag = machine_tag(sc["machine"])
        by = sc["summary"]["by_term"]
        for th, lim in EFFICIENCY.items():
            for name, rows in by.items():
                row = rows.get(str(th))
                if row is None:
                    continue
                v = row.get("median_paired_efficiency")
                add(2, f"parallel efficiency at {th} threads ≥ {lim:.0%}: {name}",
                    "—" if v is None else f"{v:.0%} (from medians {row['efficiency']:.0%}"
                                          f"{_round_range(row.get('paired_efficiency_range'))})",
                    None if v is None else v >= lim, tag=tag)
            if not any(str(th) in rows for rows in by.values()):
                add(2, f"parallel efficiency at {th} threads ≥ {lim:.0%}", "not measured",
                    None, note=f"{th} threads not in --threads / not available", tag=tag)
        ident = {n: all(d.values()) for n, d in sc["identical_to_1_thread"].items() if d}
        if ident:
            add(2, "value and gradient bit-identical across thread counts (every term)",
                ", ".join(f"{n}: {'yes' if ok else 'NO'}" for n, ok in ident.items()),
                all(ident.values()), tag=tag)
        cost = sc["summary"]["cost_vs_likelihood"]
        if "entropy" in cost:
            v = cost["entropy"]["median_paired_ratio"]
            add(3, f"entropy (fast) per token ≤ {ENTROPY_COST}x likelihood (aim "
                   f"{ENTROPY_AIM}x)", f"{_common.fmt_ratio(v)} (aim: "
                                       f"{_common.verdict(v <= ENTROPY_AIM)}"
                                       f"{_round_range(cost['entropy'].get('paired_ratio_range'), 'x')})",
                v <= ENTROPY_COST, tag=tag)
        if "ge" in cost:
            v = cost["ge"]["median_paired_ratio"]
            add(3, f"ge per token ≤ {GE_COST}x likelihood",
                f"{_common.fmt_ratio(v)}{_round_range(cost['ge'].get('paired_ratio_range'), 'x', '')}",
                v <= GE_COST, tag=tag)
        else:
            add(3, f"ge per token ≤ {GE_COST}x likelihood", "no ge term", None, tag=tag)

    tg = res.get("tagging")
    if tg:
        t = tg["tagging"]
        tag = machine_tag(tg["machine"])
        for kind, name, ref in (("viterbi", "sscrf predict 1t", "crfsuite tag"),
                                ("marginals", "sscrf predict_marginals 1t",
                                 "crfsuite marginal")):
            row = t[kind].get(name)
            if row:
                v = row["median_paired_speedup"]
                add(4, f"tagging throughput, {kind} (1 thread, end to end): ≥ "
                       f"{TAGGING_SPEEDUP}x CRFsuite ({ref})",
                    f"{_common.fmt_ratio(v)} ({row['tokens_per_s']:,.0f} vs "
                    f"{t[kind][ref]['tokens_per_s']:,.0f} tokens/s)",
                    None if v is None else v >= TAGGING_SPEEDUP, tag=tag)
    return T


# -- report ---------------------------------------------------------------------------------


def _round_range(lo_hi, unit="%", sep="; "):
    """'; rounds 84-101%': the spread of the per-round values behind a median
    (empty for runs that did not record it), so a verdict near its limit
    shows how far the machine's noise reaches."""
    if not lo_hi:
        return ""
    lo, hi = lo_hi
    if unit == "%":
        text = f"rounds {100 * lo:.0f}-{100 * hi:.0f}%"
    else:
        text = f"rounds {lo:.2f}-{hi:.2f}x"
    return f"{sep}{text}" if sep else f" ({text})"


def _pct(x):
    return "—" if x is None else f"{x:.0%}"


def build_markdown(res, args, started_info, total_s):
    L = ["# sscrf benchmark suite", ""]
    L.append(_common.machine_line(started_info))
    load_end = res.get("load_average_end")
    L.append(f"Load average at start {started_info.get('load_average')}, at end {load_end}; "
             f"suite wall time {total_s / 60:.1f} min. Mode: "
             f"{'QUICK (smoke test on a subset; numbers are not meaningful)' if args.quick else 'full'}"
             f"; repeats {args.repeats}; threads {args.thread_list}.")
    L.append(f"Command: `{res['command']}`")
    usable = started_info.get("usable_cpus") or 0
    if started_info.get("load_average") and started_info["load_average"][0] > 0.5 * usable:
        L.append("")
        L.append(f"**Warning:** this machine was busy with other jobs (load "
                 f"{started_info['load_average'][0]:.1f} on {usable} usable CPUs). Absolute "
                 "times, thread scaling and some ratios are distorted; the ratios of tools run "
                 "back to back are the more trustworthy figures.")
    if res.get("errors"):
        L += ["", "**Items that failed:** " + "; ".join(f"{k}: {v.splitlines()[0]}"
                                                        for k, v in res["errors"].items())]
    L.append("")

    targets = res.get("targets", [])
    if targets:
        L += ["## Targets (issue 7; medians of ratios measured back to back)", ""]
        if args.quick:
            L += ["Quick run: the verdicts only show that every check runs; on a few hundred "
                  "sentences fixed per-call costs dominate and the numbers mean little.", ""]
        L.append(_common.markdown_table(
            ["item", "verdict", "target", "measured", "run"],
            [[t["item"], _common.verdict(t["ok"]), t["name"] + (f" — {t['note']}" if t["note"]
                                                                 else ""), t["value"], t["run"]]
             for t in targets], align="llllll"))
        counts = {v: sum(1 for t in targets if _common.verdict(t["ok"]) == v)
                  for v in ("PASS", "FAIL", "N/A")}
        L += ["", f"{counts['PASS']} PASS, {counts['FAIL']} FAIL, {counts['N/A']} N/A.", ""]

    sup = res.get("supervised")
    if sup:
        tag = machine_tag(sup["machine"])
        st = sup["settings"]
        s, r = sup["summary"], sup["ratios"]
        L += ["## 1. Supervised training, CoNLL-2000 (and 6. peak memory)", "",
              f"First-order CRF, CRFsuite chunking attributes, c2 = {st['c2']:g}, L-BFGS "
              f"≤ {st['max_iterations']} iterations, stopping rule epsilon {st['epsilon']:g} / "
              f"period {st['period']} / delta {st['delta']:g}; {st['repeats']} repetitions, "
              "configurations back to back, each in its own process; medians, ratios to "
              "CRFsuite as median of per-repetition ratios (ratio of medians in brackets). "
              "s/eval = optimiser time / loss-and-gradient evaluations (optimiser included); "
              "eval-only = a bare sscrf loss-and-gradient call at the trained weights. "
              f"Peak MB = whole-process ru_maxrss (read, extract, train, decode; a bare child's "
              f"floor is {_common.fmt_mb(sup.get('child_rss_floor_bytes'))} MB). "
              + ("\"2 threads\" is every CPU of this machine." if usable == 2 else
                 f"supervised_conll2000.py runs sscrf at 1 and 2 threads; this machine has "
                 f"{usable} usable CPUs (see item 2 for all thread counts)."), ""]
        rows = []
        order = ["crfsuite observed-1", "sscrf observed-1", "sscrf observed-2",
                 "sscrf dense-1", "sscrf dense-2"]
        for key in [k for k in order if k in s] + [k for k in s if k not in order]:
            x, q = s[key], r[key]
            rows.append([
                key, f"{x['f1']:.2f}", _common.fmt_num(x["n_parameters"]), x["evaluations"],
                _common.fmt_num(x["s_per_eval"]), _common.fmt_num(x.get("eval_only_s")),
                _common.fmt_num(x["train_s"], 1),
                f"{_common.fmt_ratio(q['s_per_eval_median_paired_ratio'])} "
                f"({_common.fmt_ratio(q['s_per_eval_ratio_of_medians'])})",
                f"{_common.fmt_ratio(q['total_median_paired_ratio'])} "
                f"({_common.fmt_ratio(q['total_ratio_of_medians'])})",
                _common.fmt_mb(x["peak_rss_bytes"]), _common.fmt_ratio(q["peak_ratio"]), tag])
        L.append(_common.markdown_table(
            ["config", "F1", "params", "evals", "s/eval", "eval-only s", "total s",
             "s/eval ratio", "total ratio", "peak MB", "peak ratio", "run"], rows,
            align="lrrrrrrrrrrl"))
        if sup.get("core_line"):
            L += ["", sup["core_line"]]
        L.append("")

    sc = res.get("scaling")
    if sc:
        tag = machine_tag(sc["machine"])
        su = sc["setup"]
        by = sc["summary"]["by_term"]
        L += ["## 2. Thread scaling of the loss-and-gradient terms", "",
              f"CoNLL-2000 train ({su['n_sentences']:,} sentences, {su['n_tokens']:,} tokens, "
              f"{su['nnz_per_token']:.1f} attributes per token), dense layout, S = {su['S']}, "
              f"{su['n_parameters']:,} parameters, θ ~ N(0, 0.1²) random (seed 0). "
              f"{sc['rounds']} rounds (terms in rotating order, thread counts back to back; "
              f"for item 3 each term's 1-thread calls interleaved with the likelihood's); "
              f"a sample repeats the call for ≥ {sc['min_time']} s, writing into one reused "
              "gradient array (as training does). Efficiency = speed-up / "
              "threads, median of per-round values (from medians in brackets). `same bits` = "
              "value and gradient equal to the 1-thread result bit for bit.", ""]
        rows = []
        for name, d in by.items():
            for th in sc["threads"]:
                row = d[str(th)]
                ident = row.get("identical_to_1_thread")
                rows.append([name, th, f"{row['tokens_per_s']:,.0f}",
                             _common.fmt_num(1e6 * row["s_per_token"], 3),
                             _common.fmt_ratio(row.get("speedup")),
                             f"{_pct(row.get('median_paired_efficiency'))} "
                             f"({_pct(row.get('efficiency'))})",
                             "—" if ident is None else ("yes" if ident else "NO"), tag])
        L.append(_common.markdown_table(
            ["term", "threads", "tokens/s", "µs/token", "speed-up", "efficiency", "same bits",
             "run"], rows, align="lrrrrrrl"))
        L.append("")
        for name, note in sc["notes"].items():
            L.append(f"- {name}: {note}")
        if sc.get("not_benchmarked"):
            L.append(f"- registered but not benchmarked (no builder in bench/run.py): "
                     f"{', '.join(sc['not_benchmarked'])}")
        L += ["", "## 3. Cost per token relative to likelihood (1 thread)", ""]
        rows = []
        for name, c in sc["summary"]["cost_vs_likelihood"].items():
            lim = {"entropy": f"≤ {ENTROPY_COST}x (aim {ENTROPY_AIM}x)",
                   "ge": f"≤ {GE_COST}x"}.get(name, "—")
            rows.append([name, _common.fmt_num(c["us_per_token"], 3),
                         f"{_common.fmt_ratio(c['median_paired_ratio'])} "
                         f"({_common.fmt_ratio(c['ratio_of_medians'])})", lim, tag])
        L.append(_common.markdown_table(
            ["term", "µs/token", "vs likelihood (median paired; ratio of medians)", "target",
             "run"], rows, align="lrrll"))
        L.append("")

    tg = res.get("tagging")
    if tg:
        import throughput

        tag = machine_tag(tg["machine"])
        L += ["## 4. Tagging throughput, CoNLL-2000 test", "", f"Run: {tag}.", "",
              throughput.tagging_tables(tg["tagging"]), ""]
    ex = res.get("extraction")
    if ex:
        import throughput

        tag = machine_tag(ex["machine"])
        L += ["## 5. Feature extraction throughput, CoNLL-2000 train", "", f"Run: {tag}.", "",
              throughput.extraction_tables(ex["extraction"]), ""]
    co = res.get("corpora")
    if co:
        L += ["## 7. Loss and gradient per evaluation on other corpora (no target)", ""]
        if co.get("skipped"):
            L += [f"Skipped: {co['skipped']}.", ""]
        else:
            import eval_time_corpora

            L += [eval_time_corpora.SETTINGS, "", eval_time_corpora.table(co["rows"]), ""]
    return "\n".join(L)


def write_outputs(res, args, started_info, started):
    res["targets"] = check_targets(res, args.quick)
    res["load_average_end"] = _common.machine_info()["load_average"]
    res["settings"]["data"] = args.data
    total = time.perf_counter() - started
    res["suite_wall_s"] = total
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "suite.json"), "w", encoding="utf-8") as f:
        json.dump(res, f, indent=1, default=str)
        f.write("\n")
    md = build_markdown(res, args, started_info, total)
    with open(os.path.join(args.out, "suite.md"), "w", encoding="utf-8") as f:
        f.write(md + "\n")
    return md


def parse_threads(text):
    out = sorted({int(x) for x in text.split(",") if x.strip()})
    if not out or out[0] < 1:
        raise argparse.ArgumentTypeError("--threads: positive integers, e.g. 1,2")
    return out


def default_threads():
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:
        n = os.cpu_count() or 1
    if n <= 4:
        return list(range(1, n + 1))
    ths, k = [1], 2
    while k < n:
        ths.append(k)
        k *= 2
    return ths + [n]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smoke test on a small subset")
    ap.add_argument("--repeats", type=int, default=None,
                    help="repetitions / timing rounds of every item (default 3; quick 1-2)")
    ap.add_argument("--threads", type=parse_threads, default=None,
                    help="thread counts for the scaling item, e.g. 1,2,4 (default: 1, 2, ... "
                         "up to the usable CPUs; powers of two beyond 4)")
    ap.add_argument("--out", default=DEFAULT_OUT, help="directory for suite.json / suite.md")
    ap.add_argument("--data", default=DEFAULT_DATA, help="CoNLL-2000 directory (train.txt, "
                                                         "test.txt)")
    ap.add_argument("--corpora-data", default=os.path.dirname(DEFAULT_DATA),
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
    # child mode (items 2-3)
    ap.add_argument("--child", choices=["scaling"], help=argparse.SUPPRESS)
    ap.add_argument("--rounds", type=int, default=5, help=argparse.SUPPRESS)
    ap.add_argument("--sentences", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.data = os.path.abspath(args.data)
    args.thread_list = args.threads or default_threads()
    if 1 not in args.thread_list:
        args.thread_list = [1] + args.thread_list

    if args.child == "scaling":
        sys.stdout.write(json.dumps(child_scaling(args), default=str) + "\n")
        return 0
    if args.report_only:
        with open(os.path.join(args.out, "suite.json"), encoding="utf-8") as f:
            res = json.load(f)
        args.quick = res.get("mode") == "quick"
        st = res.get("settings", {})
        args.repeats, args.thread_list = st.get("repeats"), st.get("threads", args.thread_list)
        if res.get("supervised"):  # derived from the runs: recomputed with this code
            res["supervised"]["ratios"] = supervised_ratios(res["supervised"])
        if res.get("scaling", {}).get("samples"):
            res["scaling"]["summary"] = summarize_scaling(res["scaling"])
        res["targets"] = check_targets(res, args.quick)
        md = build_markdown(res, args, res["machine"], res.get("suite_wall_s", 0.0))
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
    import importlib.util

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
    started_info = _common.machine_info()
    _log(_common.machine_line(started_info))
    os.makedirs(args.out, exist_ok=True)
    log = os.path.join(args.out, "suite.log")
    with open(log, "w", encoding="utf-8") as f:
        f.write(_common.machine_line(started_info) + "\n")
    tmp = tempfile.mkdtemp(prefix="sscrf-suite-")
    res = {"suite": "sscrf bench/run.py", "command": " ".join(
        ["python", "bench/run.py"] + [shlex.quote(a) for a in (argv if argv is not None
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
            "supervised": lambda: item_supervised(args, tmp, log),
            "scaling": lambda: item_scaling(args, tmp, log),
            "tagging": lambda: item_throughput(args, tmp, log, "tagging"),
            "extraction": lambda: item_throughput(args, tmp, log, "extraction"),
            "corpora": lambda: item_corpora(args, tmp, log),
        }
        for name in items:
            t0 = time.perf_counter()
            try:
                out = steps[name]()
                if name == "supervised":
                    out["ratios"] = supervised_ratios(out)
                    out["core_line"] = _supervised_core_line(out)
                res[name] = out
                _log(f"{name}: done in {time.perf_counter() - t0:.0f} s")
            except Exception as e:  # keep going: report what could be measured
                res["errors"][name] = f"{type(e).__name__}: {e}"
                _log(f"{name}: FAILED: {e}")
            write_outputs(res, args, started_info, started)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    md = write_outputs(res, args, started_info, started)
    print(md)
    _log(f"wrote {os.path.join(args.out, 'suite.json')} and suite.md; log in {log}")
    return 1 if res["errors"] else 0


def _supervised_core_line(sup):
    try:
        import supervised_conll2000 as sc

        return sc._core_line(sup["runs"])
    except Exception:
        return None


if __name__ == "__main__":
    sys.exit(main())
