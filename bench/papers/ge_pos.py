#!/usr/bin/env python
"""GE criteria from prototype words on UD English EWT part-of-speech tagging (UPOS, 17 tags).

Mann & McCallum (2008) Tables 3 and 4, on EWT instead of CLASSIFIEDS:

- labeled features: prototype words per tag chosen on the training split
  the way the paper's Table 1 was (``sscrf.constraints.propose_features``:
  for each tag, the most frequent words whose majority tag it is), ``k`` per
  tag for k in ``--prototypes`` (3 as in the paper, and 6); the attribute is
  the lower-cased word ``w=<word>``;
- targets: the 0.99 majority heuristic (§5.1), or estimated from 1, 5 and 10
  labeled tokens per feature sampled from the training split (§5.3;
  ``estimate_constraints``, additive smoothing α = 0.1);
- labeled instances: 0, 10, 25, 100 sentences (nested, a seeded random draw
  from the training split); unlabeled data: ``--unlabeled-sentences``
  further training sentences, labels dropped;
- systems: supervised CRF, CRF + entropy regularisation (γ), CRF + GE
  (λ, KL); with labeled data the semi-supervised runs start from the
  supervised optimum (``CRF.fit``'s warm start);
- features (dict tokens): lower-cased word, its 2- and 3-letter suffixes,
  first letter, a shape class (capitalised, lower, digit, other), digit and
  hyphen flags, previous and next lower-cased word; ``dense`` feature set
  for every system (semi-supervised terms need it; the supervised rows use
  it too, so every row has the same parameters);
- evaluation: token accuracy on the test split.

Also times one GE loss-and-gradient evaluation per token against the
``likelihood`` term on the same real features and layout (target: at most
2x, GE needs two passes over the corpus), medians of interleaved repeats.

Usage::

    python bench/papers/ge_pos.py [--data ../shared/data/ud-english-ewt] [--quick]
        [--unlabeled-sentences 2000] [--max-iterations 40] [--threads 2]

Writes ``bench/results/ge_pos.md`` (tables), ``.json`` (every run) and
progress on stderr.
"""

import argparse
import json
import math
import os
import sys
import time
import warnings

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))  # the repository root, for bench.lib
from bench.lib import host, tables  # noqa: E402
from bench.lib.features_words import token_features  # noqa: E402

DEFAULT_DATA = os.path.join(os.path.dirname(host.REPO_ROOT), "shared", "data",
                            "ud-english-ewt")
RESULTS = os.path.join(host.REPO_ROOT, "bench", "results")


def _log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def target_entropy(constraints):
    return sum(-sum(p * math.log(p) for p in d.values() if p > 0)
               for d in constraints.values()) / max(len(constraints), 1)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default=DEFAULT_DATA)
    p.add_argument("--unlabeled-sentences", type=int, default=2000)
    p.add_argument("--labeled", default="0,10,25,100")
    p.add_argument("--prototypes", default="3,6")
    p.add_argument("--samples", default="1,5,10")
    p.add_argument("--max-iterations", type=int, default=40)
    p.add_argument("--c2", type=float, default=1.0)
    p.add_argument("--ge-weight", type=float, default=5.0)
    p.add_argument("--entropy-weight", type=float, default=0.1)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timing-sentences", type=int, default=4000)
    p.add_argument("--timing-repeats", type=int, default=7)
    p.add_argument("--out", default=os.path.join(RESULTS, "ge_pos"))
    p.add_argument("--timing-only", action="store_true",
                   help="only the GE vs likelihood timing (written to OUT-timing.md)")
    p.add_argument("--quick", action="store_true",
                   help="a smoke run: 300 unlabeled sentences, 5 iterations, 3/tag, heuristic "
                        "and 5 samples")
    args = p.parse_args(argv)
    if args.quick:
        args.unlabeled_sentences, args.max_iterations = 300, 5
        args.prototypes, args.samples = "3", "5"
        args.timing_sentences, args.timing_repeats = 500, 2
    labeled_sizes = [int(x) for x in args.labeled.split(",")]
    prototype_counts = [int(x) for x in args.prototypes.split(",")]
    sample_sizes = [int(x) for x in args.samples.split(",")]
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    machine = host.machine_info()

    import numpy as np

    import sscrf
    from sscrf import _core
    from sscrf import constraints as C
    from sscrf.io import read_conllu
    from sscrf.features import FeatureExtractor
    from sscrf.objectives import OBJECTIVES

    from sscrf.corpus import compile_corpus
    from sscrf.layout import ParameterLayout

    started = time.perf_counter()
    train = read_conllu(os.path.join(args.data, "en_ewt-ud-train.conllu"))
    test = read_conllu(os.path.join(args.data, "en_ewt-ud-test.conllu"))
    X_train = [token_features(s) for s in train.tokens]
    y_train = train.labels
    X_test = [token_features(s) for s in test.tokens]
    y_test = test.labels
    labels = sorted({l for s in y_train for l in s})
    n_tok = lambda X: sum(map(len, X))  # noqa: E731
    _log(f"data: {len(X_train)} train / {len(X_test)} test sentences, {len(labels)} tags, "
         f"{time.perf_counter() - started:.1f} s")

    rng = np.random.default_rng(args.seed)
    perm = rng.permutation(len(X_train))
    max_labeled = max(labeled_sizes)
    labeled_ids = perm[:max_labeled]
    unlabeled_ids = perm[max_labeled:max_labeled + args.unlabeled_sentences]
    XU = [X_train[i] for i in unlabeled_ids]

    # -- constraints -----------------------------------------------------------
    t0 = time.perf_counter()
    constraint_sets = {}  # (k, source) -> dict
    constraint_info = []
    # the top k per tag are the first k of the top max(k) (one extraction for every k)
    proposed_all = C.propose_features(X_train, y_train, max(prototype_counts), labels=labels,
                                      prefix="w=")
    occurrences_all = C.attribute_occurrences(
        X_train, [a for found in proposed_all.values() for a, _, _ in found])
    for k in prototype_counts:
        proposed = {label: found[:k] for label, found in proposed_all.items()}
        majority = {a: label for label, found in proposed.items() for a, _, _ in found}
        occurrences = {a: occurrences_all[a] for a in majority}
        constraint_sets[(k, "heuristic")] = C.majority_constraints(majority, labels)
        for n in sample_sizes:
            constraint_sets[(k, f"sampled-{n}")] = C.estimate_constraints(
                X_train, y_train, list(majority), n, labels=labels, seed=args.seed + 1000 * n + k,
                occurrences=occurrences)
        words = {label: " ".join(a[2:] for a, _, _ in found) for label, found in proposed.items()}
        constraint_info.append((k, len(majority), words, occurrences))
    _log(f"constraints: {time.perf_counter() - t0:.1f} s")

    results = {"machine": machine, "args": vars(args), "runs": [], "timing": None}

    def save():
        with open(args.out + ".json", "w", encoding="utf-8") as f:
            json.dump(results, f, indent=1, default=str)

    # -- timing: GE vs likelihood per token on real features ---------------------
    t0 = time.perf_counter()
    timing_X = [X_train[i] for i in perm[:args.timing_sentences]]
    timing_y = [y_train[i] for i in perm[:args.timing_sentences]]
    extractor = FeatureExtractor()
    (features,) = extractor.fit_transform(timing_X)
    index = {l: i for i, l in enumerate(labels)}
    token_labels = np.array([index[l] for s in timing_y for l in s], dtype=np.int32)
    S = len(labels)
    layout = ParameterLayout.for_feature_set(features, token_labels, S, "dense").core
    corpus_labeled = compile_corpus(features, labels=token_labels)
    corpus_unlabeled = compile_corpus(features)
    k_timing = max(prototype_counts)
    cons = constraint_sets[(k_timing, "heuristic")]
    attr_index = extractor.attribute_index()
    kept = {a: d for a, d in cons.items() if a in attr_index}
    attributes, targets = C.target_matrix(kept, labels)
    cmap = np.full(features.n_attributes, -1, dtype=np.int64)
    cmap[[attr_index[a] for a in attributes]] = np.arange(len(attributes))
    theta = np.random.default_rng(1).normal(scale=0.1, size=layout.n_parameters)
    score_weights = np.random.default_rng(2).normal(size=targets.shape)
    firings = _core.ConstraintFirings(corpus_unlabeled, cmap, len(attributes))
    timing_rows = []
    for n_threads in sorted({1, args.threads}):
        lik = OBJECTIVES["likelihood"](corpus_labeled, layout, n_threads)
        ge = OBJECTIVES["ge"](corpus_unlabeled, layout, n_threads,
                              constraint_of_attribute=cmap, targets=targets)
        calls = {
            "likelihood": lambda: lik.value_and_gradient(theta),
            "ge": lambda: ge.value_and_gradient(theta),
            # the two passes of the ge term, alone
            "ge_expectations": lambda: _core.ge_expectations(
                corpus_unlabeled, layout, theta, n_threads, firings),
            "ge_gradient": lambda: _core.ge_gradient(
                corpus_unlabeled, layout, theta, n_threads, firings, score_weights),
            # another user of the covariance kernel, for reference
            "entropy": lambda: _core.entropy_objective(corpus_unlabeled, layout, theta,
                                                       n_threads),
        }
        times = {name: [] for name in calls}
        for _ in range(args.timing_repeats):
            for name, call in calls.items():
                t = time.perf_counter()
                call()
                times[name].append(time.perf_counter() - t)
        med = {name: tables.median(v) for name, v in times.items()}
        low = {name: min(v) for name, v in times.items()}
        timing_rows.append({"threads": n_threads, "tokens": features.n_tokens,
                            "constraints": len(attributes),
                            "median_s": med, "min_s": low,
                            "ratio": med["ge"] / med["likelihood"],
                            "ratio_min": low["ge"] / low["likelihood"]})
        _log(f"timing, {n_threads} thread(s): medians likelihood {med['likelihood']:.3f} s, "
             f"ge {med['ge']:.3f} s (expectations {med['ge_expectations']:.3f} + gradient "
             f"{med['ge_gradient']:.3f}), ratio {med['ge'] / med['likelihood']:.2f}; "
             f"minima ratio {low['ge'] / low['likelihood']:.2f}")
    results["timing"] = {"rows": timing_rows, "parameters": layout.n_parameters,
                         "seconds": time.perf_counter() - t0}
    if args.timing_only:
        args.out += "-timing"
        save()
        text = "\n".join([host.machine_line(machine), ""] + timing_report(
            results["timing"], args, prototype_counts)) + "\n"
        with open(args.out + ".md", "w", encoding="utf-8") as f:
            f.write(text)
        print(text)
        return
    save()

    # -- training runs ------------------------------------------------------------
    accuracy = {}

    def run(system, n_labeled, k=None, source=None):
        X = [X_train[i] for i in labeled_ids[:n_labeled]]
        y = [y_train[i] for i in labeled_ids[:n_labeled]]
        kwargs = dict(c2=args.c2, max_iterations=args.max_iterations, n_threads=args.threads,
                      feature_set="dense", labels=labels, verbose=False)
        fit_kwargs = {}
        if system == "entropy":
            kwargs["entropy_weight"] = args.entropy_weight
            fit_kwargs["X_unlabeled"] = XU
        elif system == "ge":
            kwargs["ge_weight"] = args.ge_weight
            fit_kwargs.update(X_unlabeled=XU, constraints=constraint_sets[(k, source)])
        t = time.perf_counter()
        model = sscrf.CRF(**kwargs)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", UserWarning)  # constraints absent from U: dropped
            model.fit(X, y, **fit_kwargs)
        acc = model.score(X_test, y_test)
        seconds = time.perf_counter() - t
        record = {"system": system, "labeled": n_labeled, "labeled_tokens": n_tok(X),
                  "prototypes": k, "targets": source, "accuracy": acc, "seconds": seconds,
                  "iterations": model.training_["iterations"],
                  "stop_reason": model.training_["stop_reason"]}
        if system == "ge":
            record["constraints_kept"] = len(model.constraints_)
            record["warnings"] = [str(w.message) for w in caught]
        if "stages" in model.training_:
            record["warm_start_iterations"] = model.training_["stages"]["supervised"]["iterations"]
        results["runs"].append(record)
        accuracy[(system, n_labeled, k, source)] = acc
        save()
        _log(f"{system:10s} labeled={n_labeled:3d} k={k} targets={source}: acc {acc:.4f}, "
             f"{record['iterations']} it ({record['stop_reason']}), {seconds:.1f} s")

    sizes_with_labels = [n for n in labeled_sizes if n > 0]
    for n in sizes_with_labels:
        run("supervised", n)
    for k in prototype_counts:
        for n in labeled_sizes:
            run("ge", n, k, "heuristic")
    for n in sizes_with_labels:
        run("entropy", n)
    for k in prototype_counts:
        for m in sample_sizes:
            for n in labeled_sizes:
                run("ge", n, k, f"sampled-{m}")

    # -- report ---------------------------------------------------------------------
    pct = lambda x: "—" if x is None else f"{100 * x:.1f}%"  # noqa: E731
    lines = ["# GE criteria on UD English EWT POS tagging (UPOS)", "",
             host.machine_line(machine), "",
             f"Data: {args.data}; train {len(X_train):,} sentences / {n_tok(X_train):,} tokens, "
             f"test {len(X_test):,} / {n_tok(X_test):,}; {len(labels)} tags. Labeled instances: "
             f"the first N of a seeded permutation of train (seed {args.seed}), nested; "
             f"unlabeled: the next {len(XU):,} sentences ({n_tok(XU):,} tokens), labels dropped. "
             f"c2 = {args.c2}, L-BFGS ≤ {args.max_iterations} iterations per stage, "
             f"GE λ = {args.ge_weight} (KL), entropy γ = {args.entropy_weight}, "
             f"{args.threads} threads, dense feature set for every row. "
             f"Token accuracy on test.", ""]
    lines += ["## Prototypes (chosen on train by sscrf.constraints.propose_features)", ""]
    for k, n_feat, words, occ in constraint_info:
        lines.append(f"k = {k} per tag: {n_feat} features, firing at "
                     f"{sum(len(v) for v in occ.values()):,} train tokens.")
        lines.append("")
        lines.append(tables.markdown_table(["tag", "prototype words"],
                                            [[l, words[l]] for l in labels], align="ll"))
        lines.append("")
    ent_rows = []
    for (k, source), cs in constraint_sets.items():
        n = int(source.split("-")[1]) if source.startswith("sampled") else None
        occ = next(o for kk, _, _, o in constraint_info if kk == k)
        used = "—" if n is None else f"{sum(min(n, len(occ[a])) for a in cs):,}"
        ent_rows.append([f"{k}/tag {source}", len(cs), f"{target_entropy(cs):.3f}", used])
    lines += ["Targets: mean entropy (nats) of the target distributions; labeled tokens used "
              "to estimate them (sampled).", "",
              tables.markdown_table(["constraints", "features", "mean target entropy",
                                      "labeled tokens used"], ent_rows), ""]

    def acc_of(*key):
        return accuracy.get(key)

    cols3 = sizes_with_labels
    rows3 = [["supervised CRF"] + [pct(acc_of("supervised", n, None, None)) for n in cols3],
             [f"CRF + entropy reg. (γ={args.entropy_weight})"]
             + [pct(acc_of("entropy", n, None, None)) for n in cols3]]
    for k in prototype_counts:
        rows3.append([f"CRF + GE/Heuristic ({k}/tag)"]
                     + [pct(acc_of("ge", n, k, "heuristic")) for n in cols3])
    lines += ["## Table 3 layout: labeled instances (sentences)", "",
              tables.markdown_table(["method"] + [str(n) for n in cols3], rows3), ""]
    rows4 = []
    for k in prototype_counts:
        rows4.append([f"GE/Heuristic ({k}/tag)"]
                     + [pct(acc_of("ge", n, k, "heuristic")) for n in labeled_sizes])
        for m in sample_sizes:
            rows4.append([f"GE/Sampled, {m} token(s)/feature ({k}/tag)"]
                         + [pct(acc_of("ge", n, k, f"sampled-{m}")) for n in labeled_sizes])
    rows4.append(["supervised CRF"] + ["—" if n == 0 else pct(acc_of("supervised", n, None, None))
                                       for n in labeled_sizes])
    lines += ["## Table 4 layout: labeled instances (sentences)", "",
              tables.markdown_table(["method"] + [str(n) for n in labeled_sizes], rows4), ""]
    labeled_tokens = {r["labeled"]: r["labeled_tokens"] for r in results["runs"]}
    lines += ["Labeled tokens: " + ", ".join(f"{n} sentences = {labeled_tokens.get(n, 0):,}"
                                             for n in labeled_sizes) + ".", ""]
    lines += timing_report(results["timing"], args, prototype_counts)
    total = time.perf_counter() - started
    lines += [f"Total wall time {total / 60:.1f} min."]
    text = "\n".join(lines) + "\n"
    with open(args.out + ".md", "w", encoding="utf-8") as f:
        f.write(text)
    results["seconds"] = total
    save()
    print(text)


def timing_report(t, args, prototype_counts):
    us = lambda r, name: f"{1e6 * r['median_s'][name] / r['tokens']:.2f}"  # noqa: E731
    trows = [[r["threads"], f"{r['tokens']:,}", r["constraints"], us(r, "likelihood"),
              us(r, "ge"), us(r, "ge_expectations"), us(r, "ge_gradient"), us(r, "entropy"),
              tables.fmt_ratio(r["ratio"]), tables.fmt_ratio(r["ratio_min"]),
              tables.verdict(r["ratio"] <= 2.0)] for r in t["rows"]]
    return ["## GE loss-and-gradient cost vs the likelihood term", "",
            f"One evaluation (value and gradient) on {t['rows'][0]['tokens']:,} training "
            f"tokens, the features above, dense layout ({t['parameters']:,} parameters), "
            f"{max(prototype_counts)}/tag heuristic constraints; medians of "
            f"{args.timing_repeats} interleaved repeats (µs per token), the ratio of medians "
            "and of minima. The GE term is its two passes (expectations, then gradient "
            "through the covariance kernel) plus O(M·S) numpy; the entropy term (one "
            "forward-backward and the same covariance kernel) for reference. Target: GE ≤ 2x "
            "likelihood.", "",
            tables.markdown_table(["threads", "tokens", "constraints", "likelihood",
                                    "GE term", "GE pass 1", "GE pass 2", "entropy",
                                    "GE / lik. (median)",
                                    "(min)", "≤ 2x"], trows), ""]
  

if __name__ == "__main__":
    main()
