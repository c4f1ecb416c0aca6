#!/usr/bin/env python
"""A fair semi-supervised benchmark: every method against a c2-tuned dense supervised model.

Design (what the earlier benches of entropy regularisation did not hold fixed):

- one feature function for every method, :func:`sscrf.features.word_features`
  (lower-cased word, shape, short shape, affixes 1-4, digit and capital
  classes, neighbours' words and short shapes at ±1);
- ``--slices`` disjoint labeled slices of ``--labeled`` sentences each,
  drawn by document where the corpus marks documents (UD-EWT's ``newdoc``:
  documents from their start, the last one cut where the slice is full),
  by sentence otherwise (BC2GM and CoNLL-2000 carry no document ids) or
  with ``--slice-by sentence``;
- unlabeled text of ``--sizes`` × the slice's tokens (``max``: the whole
  rest of the training split), from the training split minus the slice,
  labels dropped; never the dev or test split;
- every method picks ``c2`` from the same grid (``--c2``, reaching 0.003)
  and its own weights on the dev split with :func:`sscrf.select_hyperparameters`
  (warm starts along the c2 path, each fit keeping its iterate of the best
  dev score, 0 in every semi-supervised grid), all with the same iteration
  cap; nothing is chosen on the test split;
- methods: ``observed`` and ``dense`` (supervised), ``entropy`` (γ from
  the dev split, in units of labeled/unlabeled tokens), ``entropy+prop``
  (entropy with the label-proportion term, ``proportion_weight`` in units
  of labeled tokens; its settings with ``proportion_weight`` = 0 are the
  ``entropy`` method's fits, taken from that method's search when it ran
  first, not fitted twice), ``self-training`` (c2 tuned on dev, rounds capped),
  ``ge`` (constraints from the labeled slice only: the 10 most frequent
  words of each label, targets from their labeled counts, smoothed),
  ``ge-prototypes`` (Mann & McCallum 2008's setting: ``--prototypes`` words
  a label, the most frequent whose majority label it is over the whole
  training split, the 0.99 majority targets; meant for EWT POS),
  ``representations`` (``sscrf.WordRepresentations``' default features,
  cluster ids at -1, 0, +1, the word's vector and the HMM states at -1, 0,
  +1, merged into every token's dict), its parts ``rep-clusters``,
  ``rep-vectors`` and ``rep-prototypes`` (prototype-similarity features
  alone, the ``--prototypes`` words a label of ``ge-prototypes``), its
  features without the HMM states ``rep-no-states``, their union
  ``representations+prototypes`` and ``representations+ge``; the
  representations are learned with the default settings (``--hmm-states``
  and ``--hmms`` change theirs)
  from the method's unlabeled text and the slice's words,
  or with ``--representation-text shared`` from the whole training split
  less the slice plus the other shared corpora's training text (stated in
  the output; never a dev or test split), or with ``shared+dev`` from that
  and the dev splits' words too, this corpus's and the others' (the whole
  dev split, labels dropped; never a test split); with either, the methods
  that read no unlabeled text, all but ``representations+ge``, run once
  per slice, as the supervised ones do;
- scores on the test split: entity F1, precision, recall and the number of
  predicted entities (chunk F1 of IOB2 tags, exact boundaries) for BC2GM
  and CoNLL-2000, token accuracy for EWT UPOS; the paired Δ against the
  tuned ``dense`` model of the same slice, its median over slices, and a
  95% bootstrap interval of the mean Δ (test sentences resampled, the same
  resample for both models and every slice).

Usage::

    python bench/papers/semisupervised_ner.py --corpus bc2gm [--labeled 200]
        [--slices 5] [--sizes 1,5,max] [--methods ...] [--quick] [--json OUT]

``--quick``: 3 slices, sizes 1, c2 ∈ {1, 0.1, 0.03, 0.003}, small weight
grids, 60 iterations, dev and test subsampled to 1,000 and 2,000 sentences
(each where the option is not given explicitly).
"""

import argparse
import json
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

import sscrf  # noqa: E402
from bench.lib.host import DATA_ROOT, machine_line  # noqa: E402
from bench.lib.tables import markdown_table  # noqa: E402
from sscrf.constraints import (estimate_constraints, majority_constraints,  # noqa: E402
                               propose_features)
from sscrf.features import word_features  # noqa: E402
from sscrf.metrics import chunks  # noqa: E402

METHODS = ("observed", "dense", "entropy", "entropy+prop", "self-training", "ge",
           "ge-prototypes", "representations", "rep-clusters", "rep-vectors",
           "rep-prototypes", "representations+prototypes", "representations+ge",
           "rep-no-states")
#: The feature function each representation method uses (the others: word_features).
REP_VARIANTS = {"representations": "default", "representations+ge": "default",
                "rep-clusters": "clusters", "rep-vectors": "vectors",
                "rep-prototypes": "prototypes", "representations+prototypes": "union",
                "rep-no-states": "no-states"}
#: The training text of the other corpora, for --representation-text shared.
OTHER_TEXT = {"bc2gm": [("conll2000", "train.txt", 0, 2), ("ud-english-ewt", None)],
              "conll2000": [("bc2gm", "conll/train.tsv", 0, 1), ("ud-english-ewt", None)],
              "ewt": [("conll2000", "train.txt", 0, 2), ("bc2gm", "conll/train.tsv", 0, 1)]}


# -- corpora ------------------------------------------------------------------------------


def read_columns(path, word_col, tag_col, sep=None):
    """Sentences of (words, tags) from a blank-line separated column file."""
    out, words, tags = [], [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.strip():
                if words:
                    out.append((words, tags))
                words, tags = [], []
                continue
            cells = line.split(sep)
            words.append(cells[word_col])
            tags.append(cells[tag_col])
    if words:
        out.append((words, tags))
    return out


def read_conllu(path):
    """Sentences of (words, UPOS tags, document id) from a CoNLL-U file."""
    out, words, tags, doc = [], [], [], None
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("# newdoc id"):
                doc = line.split("=", 1)[1].strip()
            if line.startswith("#"):
                continue
            if not line.strip():
                if words:
                    out.append((words, tags, doc))
                words, tags = [], []
                continue
            cells = line.split("\t")
            if "-" in cells[0] or "." in cells[0]:
                continue
            words.append(cells[1])
            tags.append(cells[3])
    return out


def load_corpus(name, data_root):
    """train (list of (words, tags, doc)), dev, test, scoring kind, description."""
    if name == "bc2gm":
        d = os.path.join(data_root, "bc2gm", "conll")
        train = [(w, t, None) for w, t in read_columns(os.path.join(d, "train.tsv"), 0, 1, "\t")]
        dev = read_columns(os.path.join(d, "devel.tsv"), 0, 1, "\t")
        test = read_columns(os.path.join(d, "test.tsv"), 0, 1, "\t")
        return train, dev, test, "chunk", "BC2GM (dev: devel.tsv)"
    if name == "conll2000":
        d = os.path.join(data_root, "conll2000")
        train = [(w, t, None) for w, t in read_columns(os.path.join(d, "train.txt"), 0, 2)]
        test = read_columns(os.path.join(d, "test.txt"), 0, 2)
        # no dev split: the last 1,000 training sentences, kept out of slices and unlabeled text
        dev = [(w, t) for w, t, _ in train[-1000:]]
        return train[:-1000], dev, test, "chunk", "CoNLL-2000 (dev: last 1,000 of train)"
    if name == "ewt":
        d = os.path.join(data_root, "ud-english-ewt")
        train = read_conllu(os.path.join(d, "en_ewt-ud-train.conllu"))
        dev = [(w, t) for w, t, _ in read_conllu(os.path.join(d, "en_ewt-ud-dev.conllu"))]
        test = [(w, t) for w, t, _ in read_conllu(os.path.join(d, "en_ewt-ud-test.conllu"))]
        return train, dev, test, "accuracy", "UD-EWT UPOS"
    raise SystemExit(f"unknown corpus {name!r}")


def slices_of(train, n_sentences, n_slices, seed, by_document=True):
    """Disjoint labeled slices (lists of train indices) of ``n_sentences`` sentences:
    documents in a random order where the corpus has them (and ``by_document``),
    each taken from its start, the last one cut where the slice is full (the
    rest of it is unlabeled text); random sentences otherwise."""
    rng = np.random.default_rng(seed)
    if by_document and train[0][2] is not None:
        docs = {}
        for i, (_, _, doc) in enumerate(train):
            docs.setdefault(doc, []).append(i)
        units = [docs[d] for d in sorted(docs)]
    else:
        units = [[i] for i in range(len(train))]
    order = rng.permutation(len(units))
    out, current = [], []
    for u in order:
        current.extend(units[u])
        if len(current) >= n_sentences:
            out.append(current[:n_sentences])
            current = []
            if len(out) == n_slices:
                break
    if len(out) < n_slices:
        raise SystemExit(f"only {len(out)} slices of {n_sentences} sentences fit")
    return out


def unlabeled_for(train, labeled, multiples, seed):
    """Per multiple (or 'max'), train indices outside ``labeled`` holding that many
    times the slice's tokens (nested: a larger set starts with the smaller)."""
    taken = set(labeled)
    rest = [i for i in np.random.default_rng(seed + 1000).permutation(len(train))
            if i not in taken]
    tokens = sum(len(train[i][0]) for i in labeled)
    out = {}
    for m in multiples:
        if m == "max":
            out[m] = rest
            continue
        chosen, n = [], 0
        for i in rest:
            if n >= m * tokens:
                break
            chosen.append(i)
            n += len(train[i][0])
        out[m] = chosen
    return out


# -- scores -------------------------------------------------------------------------------


def sentence_counts(kind, y_true, y_pred):
    """Per test sentence (n_true, n_pred, n_correct): entities, or tokens for accuracy."""
    rows = []
    for t, p in zip(y_true, y_pred):
        if kind == "accuracy":
            rows.append((len(t), len(t), sum(a == b for a, b in zip(t, p))))
        else:
            ct, cp = set(chunks(t)), set(chunks(p))
            rows.append((len(ct), len(cp), len(ct & cp)))
    return np.array(rows, dtype=np.float64)


def f1_of(counts):
    t, p, c = counts[..., 0], counts[..., 1], counts[..., 2]
    return np.where(t + p > 0, 200.0 * c / np.maximum(t + p, 1e-300), 0.0)


def summary(counts):
    t, p, c = counts.sum(axis=0)
    return {"f1": float(f1_of(np.array([t, p, c]))), "precision": 100.0 * c / max(p, 1),
            "recall": 100.0 * c / max(t, 1), "n_pred": int(p)}


def paired_bootstrap(method_counts, base_counts, n_boot=1000, seed=0):
    """95% interval of the mean over slices of ΔF1 (method − base), test sentences
    resampled with one resample shared by every slice and both models."""
    rng = np.random.default_rng(seed)
    n = method_counts[0].shape[0]
    weights = rng.multinomial(n, np.full(n, 1.0 / n), size=n_boot).astype(np.float64)
    deltas = np.zeros(n_boot)
    for m, b in zip(method_counts, base_counts):
        deltas += f1_of(weights @ m) - f1_of(weights @ b)
    deltas /= len(method_counts)
    return float(np.percentile(deltas, 2.5)), float(np.percentile(deltas, 97.5))


# -- methods ------------------------------------------------------------------------------


def select(base, grid, XA, yA, dev, searches=None, name=None, **fit_params):
    """(model, chosen settings, fits); the Selection goes to ``searches[name]``."""
    sel = sscrf.select_hyperparameters(base, grid, XA, yA, dev[0], dev[1], **fit_params)
    if searches is not None:
        searches[name] = sel
    return sel.model, sel.best_params, len(sel.table)


def entropy_and_proportions(base, c2, gammas, weights, XA, yA, XU, dev, entropy):
    """``entropy+prop``'s search, its settings with ``proportion_weight`` = 0 taken from
    the ``entropy`` method's Selection (the same fits, bit for bit: the term is dropped
    at weight 0) and only λp > 0 fitted here. The winner is the one the whole grid's
    search would pick: best dev score, then more zero weights, then the larger c2,
    then the setting fitted first in its order (γ, then λp, then the c2 path)."""
    fitted = {(row["entropy_weight"], row["c2"]) for row in entropy.table}
    expected = {(g, v) for g in [0.0] + gammas for v in c2["c2"]}
    if fitted != expected:
        raise SystemExit(f"entropy's grid {sorted(fitted)} is not entropy+prop's "
                         f"λp = 0 settings {sorted(expected)}")
    rest = sscrf.select_hyperparameters(
        base, dict(c2, entropy_weight=[0.0] + gammas, proportion_weight=weights), XA, yA,
        dev[0], dev[1], add_zero=False, X_unlabeled=XU)
    c2_path = sorted(c2["c2"], reverse=True)
    gamma_order = [0.0] + gammas

    def key(params, score, lam_index):
        zeros = (params["entropy_weight"] == 0) + (lam_index == 0)
        order = (gamma_order.index(params["entropy_weight"]), lam_index,
                 c2_path.index(params["c2"]))
        return (score, zeros, params["c2"], tuple(-i for i in order))

    from_entropy = key(entropy.best_params, entropy.best_score, 0)
    from_rest = key(rest.best_params, rest.best_score,
                    1 + weights.index(rest.best_params["proportion_weight"]))
    fits = len(entropy.table) + len(rest.table)
    if from_entropy > from_rest:
        return entropy.model, dict(entropy.best_params, proportion_weight=0.0), fits
    return rest.model, rest.best_params, fits


def ge_constraints(XA, yA):
    proposed = propose_features(XA, yA, 10, prefix="w=", min_count=2)
    attrs = [a for label in sorted(proposed) for a, _, _ in proposed[label]]
    return estimate_constraints(XA, yA, attrs, 10 ** 6, smoothing=0.1) if attrs else {}


def prototype_words(train, k):
    """Per label, the ``k`` most frequent words of the whole training split whose majority
    label it is (``ge-prototypes``' words)."""
    X = [word_features(words) for words, _, _ in train]
    y = [tags for _, tags, _ in train]
    labels = sorted({t for tags in y for t in tags})
    proposed = propose_features(X, y, k, labels=labels, prefix="w=")
    return {label: [a[len("w="):] for a, _, _ in found] for label, found in proposed.items()}


#: The dev split of each corpus that has one, for --representation-text shared+dev.
DEV_SPLITS = {"conll2000": None, "bc2gm": ("bc2gm", "conll/devel.tsv", 0, 1),
              "ud-english-ewt": ("ud-english-ewt", "en_ewt-ud-dev.conllu")}


def other_text(name, data_root, with_dev=False):
    """The words of the other shared corpora's training splits (and, ``with_dev``,
    their dev splits)."""
    out = []
    for source in OTHER_TEXT[name]:
        if source[0] == "ud-english-ewt":
            files = ["en_ewt-ud-train.conllu"] + (["en_ewt-ud-dev.conllu"] if with_dev else [])
            for file in files:
                out += [w for w, _, _ in read_conllu(os.path.join(data_root, source[0], file))]
            continue
        folder, file, word_col, tag_col = source
        sep = "\t" if file.endswith(".tsv") else None
        out += [w for w, _ in read_columns(os.path.join(data_root, folder, file),
                                           word_col, tag_col, sep)]
        dev = DEV_SPLITS[folder]
        if with_dev and dev is not None:
            out += [w for w, _ in read_columns(os.path.join(data_root, dev[0], dev[1]),
                                               dev[2], dev[3], "\t")]
    return out


def prototype_constraints(train, k):
    """Mann & McCallum's prototypes: for each label, the ``k`` most frequent words of the
    whole training split whose majority label it is (what a person listing a few
    typical words per label would give), targets by the 0.99 majority heuristic."""
    labels = sorted({t for _, tags, _ in train for t in tags})
    majority = {f"w={w}": label for label, words in prototype_words(train, k).items()
                for w in words}
    return majority_constraints(majority, labels)


def grid_units(settings, L, U, n_constraints):
    """The chosen settings in the grid's units: γ·U/L, λ_prop/L, λ_ge·M/L."""
    out = {}
    for name, value in settings.items():
        if name == "entropy_weight":
            out["γU/L"] = value * U / L
        elif name == "proportion_weight":
            out["λp/L"] = value / L
        elif name == "ge_weight":
            out["λge·M/L"] = value * n_constraints / L
        else:
            out[name] = value
    return out


def run_method(method, args, XA, yA, XU, dev, reps, searches):
    """(fitted model or None, chosen settings in the grid's units, fits).

    searches: the Selections of the methods run so far on this slice and size."""
    model, settings, fits = _run_method(method, args, XA, yA, XU, dev, reps, searches)
    n_constraints = 1
    if "ge_weight" in settings:
        n_constraints = len(args.prototype_constraints if method == "ge-prototypes"
                            else ge_constraints(XA, yA))
    return model, grid_units(settings, sum(map(len, XA)), max(1, sum(map(len, XU))),
                             n_constraints), fits


def _run_method(method, args, XA, yA, XU, dev, reps, searches):
    base = sscrf.CRF(max_iterations=args.max_iterations, n_threads=args.threads,
                     dev_period=args.dev_period)
    c2 = {"c2": args.c2}
    L, U = sum(map(len, XA)), max(1, sum(map(len, XU)))
    if method in ("observed", "dense"):
        return select(base.set_params(feature_set=method), c2, XA, yA, dev)
    if method == "entropy":
        grid = dict(c2, entropy_weight=[g * L / U for g in args.gammas])
        return select(base, grid, XA, yA, dev, searches, method, X_unlabeled=XU)
    if method == "entropy+prop":
        gammas = [g * L / U for g in args.gammas]
        weights = [h * L for h in args.proportion_weights]
        if "entropy" in searches:
            return entropy_and_proportions(base, c2, gammas, weights, XA, yA, XU, dev,
                                           searches["entropy"])
        grid = dict(c2, entropy_weight=gammas, proportion_weight=weights)
        return select(base, grid, XA, yA, dev, X_unlabeled=XU)
    if method == "self-training":
        best = None
        for value in args.c2:
            model = sscrf.self_train(sscrf.CRF(**dict(base.get_params(), c2=value)), XA, yA,
                                     XU, max_rounds=args.self_training_rounds)
            score = dev_score(args.kind, model, dev)
            if best is None or score > best[0]:
                best = (score, model, {"c2": value})
        return best[1], best[2], len(args.c2)
    if method in ("ge", "representations+ge"):
        if method == "representations+ge" and reps is None:
            return None, {}, 0
        constraints = ge_constraints(XA, yA)
        if not constraints:
            return select(base.set_params(feature_set="dense"), c2, XA, yA, dev)
        grid = dict(c2, ge_weight=[h * L / len(constraints) for h in args.ge_weights])
        return select(base, grid, XA, yA, dev, X_unlabeled=XU, constraints=constraints)
    if method == "ge-prototypes":
        constraints = args.prototype_constraints
        grid = dict(c2, ge_weight=[h * L / len(constraints) for h in args.ge_weights])
        return select(base, grid, XA, yA, dev, X_unlabeled=XU, constraints=constraints)
    if method in REP_VARIANTS:
        if reps is None:
            return None, {}, 0
        return select(base.set_params(feature_set="dense"), c2, XA, yA, dev)
    raise SystemExit(f"unknown method {method!r}")


def dev_score(kind, model, dev):
    counts = sentence_counts(kind, dev[1], model.predict(dev[0]))
    return float(f1_of(counts.sum(axis=0)))


def featurize(sentences, reps=None, variant="default", prototypes=None):
    """word_features, with a variant of the representations' features merged in."""
    out = [word_features(words) for words in sentences]
    if reps is None:
        return out
    for feats, words in zip(out, sentences):
        if variant == "default":
            reps.features(words, into=feats)
        elif variant == "no-states":
            reps.features(words, into=feats, states=False)
        elif variant == "clusters":
            reps.features(words, vectors=False, into=feats, states=False)
        elif variant == "union":
            reps.features(words, prototypes=prototypes, into=feats)
        else:  # one part alone
            keep = "rep.v" if variant == "vectors" else "rep.proto["
            for f, extra in zip(feats, reps.features(words, context=0,
                                                      vectors=variant == "vectors",
                                                      prototypes=prototypes)):
                f.update((key, v) for key, v in extra.items() if key.startswith(keep))
    return out


# -- the experiment -----------------------------------------------------------------------


def run(args):
    train, dev, test, kind, what = load_corpus(args.corpus, args.data)
    args.kind = kind
    dev_words = [d[0] for d in dev]  # the whole dev split, before any subsampling
    rng = np.random.default_rng(args.seed)
    if args.dev_sentences and len(dev) > args.dev_sentences:
        dev = [dev[i] for i in sorted(rng.choice(len(dev), args.dev_sentences, replace=False))]
    if args.test_sentences and len(test) > args.test_sentences:
        test = [test[i] for i in sorted(rng.choice(len(test), args.test_sentences,
                                                   replace=False))]
    has_reps = hasattr(sscrf, "WordRepresentations")
    want_reps = has_reps and any(m in REP_VARIANTS for m in args.methods)
    shared = []
    text_is_shared = args.representation_text in ("shared", "shared+dev")
    if want_reps and text_is_shared:
        with_dev = args.representation_text == "shared+dev"
        shared = other_text(args.corpus, args.data, with_dev)
        sources = ", ".join(src[0] for src in OTHER_TEXT[args.corpus])
        log(f"representations also learned from {sum(map(len, shared)):,} tokens of the "
            f"other corpora's training{' and dev' if with_dev else ''} text ({sources})")
        if with_dev:
            shared = dev_words + shared
            log(f"and from this corpus's dev split, {sum(map(len, dev_words)):,} tokens")
    if want_reps:
        log(f"representations with {args.hmms} HMMs of {args.hmm_states} states")
    prototypes = None
    if any(REP_VARIANTS.get(m) in ("prototypes", "union") for m in args.methods):
        prototypes = prototype_words(train, args.prototypes)
        log(f"prototype words: {prototypes}")
    if "ge-prototypes" in args.methods:
        args.prototype_constraints = prototype_constraints(train, args.prototypes)
        log(f"{len(args.prototype_constraints)} prototype constraints ({args.prototypes} a "
            "label, from the whole training split)")
    results = []  # dicts: slice, size, method, counts, settings, seconds
    if train[0][2] is None:
        args.slice_by = "sentence"  # no document ids
    slices = slices_of(train, args.labeled, args.slices, args.seed,
                       by_document=args.slice_by == "document")
    log(f"{what}: {len(train):,} train sentences, {len(dev):,} dev, {len(test):,} test; "
        f"{len(slices)} slices of {args.labeled} sentences, by {args.slice_by} (sentences, "
        f"tokens: {', '.join(f'{len(sl)}, {sum(len(train[i][0]) for i in sl)}' for sl in slices)})")
    for k, labeled in enumerate(slices):
        unlabeled = unlabeled_for(train, labeled, args.sizes, args.seed + k)
        reps = None
        for size in args.sizes:
            if want_reps and (reps is None or not text_is_shared):
                taken = set(labeled)
                text = ([train[i][0] for i in range(len(train)) if i not in taken] + shared
                        if text_is_shared else
                        [train[i][0] for i in unlabeled[size]] + [train[i][0] for i in labeled])
                reps = sscrf.WordRepresentations(hmm_states=args.hmm_states,
                                                 hmms=args.hmms).fit(text)
            words_a = [train[i][0] for i in labeled]
            yA = [train[i][1] for i in labeled]
            XU_words = [train[i][0] for i in unlabeled[size]]
            made = {}
            searches = {}  # method -> Selection, this slice and size

            def part(variant, name):
                """One corpus's feature dicts under a feature variant, made once."""
                if (variant, name) not in made:
                    words = {"labeled": words_a, "unlabeled": XU_words,
                             "dev": [w for w, _ in dev], "test": [w for w, _ in test]}[name]
                    made[variant, name] = featurize(
                        words, None if variant == "plain" else reps, variant, prototypes)
                return made[variant, name]

            def feature_sets(variant, method):
                """(labeled, unlabeled ([] where the method reads none), (dev, dev labels),
                test) under a feature variant."""
                reads = method not in ("observed", "dense") and (
                    method not in REP_VARIANTS or method == "representations+ge")
                return (part(variant, "labeled"), part(variant, "unlabeled") if reads else [],
                        (part(variant, "dev"), [t for _, t in dev]), part(variant, "test"))

            for method in args.methods:
                # supervised fits read no unlabeled text, nor do the representation
                # methods but representations+ge when the representations come from
                # the shared text: the same for every size, computed once per slice
                supervised = method in ("observed", "dense") or (
                    method in REP_VARIANTS and method != "representations+ge"
                    and text_is_shared)
                if supervised and size != args.sizes[0]:
                    continue
                XA, XU, dev_set, X_test = feature_sets(
                    REP_VARIANTS[method] if method in REP_VARIANTS and reps is not None
                    else "plain", method)
                started = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model, settings, fits = run_method(method, args, XA, yA, XU, dev_set, reps,
                                                       searches)
                seconds = time.perf_counter() - started
                counts = None if model is None else sentence_counts(
                    kind, [t for _, t in test], model.predict(X_test))
                sizes = args.sizes if supervised else [size]
                for s in sizes:
                    results.append({"slice": k, "size": s, "method": method, "counts": counts,
                                    "settings": settings, "fits": fits, "seconds": seconds})
                line = "not available" if counts is None else f"{summary(counts)['f1']:.2f}"
                log(f"slice {k} size {size} {method}: {line} {settings} "
                    f"({fits} fits, {seconds:.0f} s)")
    return results, kind, what, len(test)


def tables(args, results, kind, what):
    metric = "entity F1" if kind == "chunk" else "token accuracy"
    out = []
    for size in args.sizes:
        rows_here = [r for r in results if r["size"] == size]
        base = {r["slice"]: r["counts"] for r in rows_here if r["method"] == "dense"}
        rows = []
        for method in args.methods:
            runs = sorted((r for r in rows_here if r["method"] == method),
                          key=lambda r: r["slice"])
            if not runs or runs[0]["counts"] is None:
                rows.append([method, "n/a"] + [""] * 7
                            + ["not available: sscrf.WordRepresentations is missing"])
                continue
            summ = [summary(r["counts"]) for r in runs]
            deltas = [s["f1"] - summary(base[r["slice"]])["f1"] for s, r in zip(summ, runs)]
            lo, hi = paired_bootstrap([r["counts"] for r in runs],
                                      [base[r["slice"]] for r in runs])
            mean = lambda key: float(np.mean([s[key] for s in summ]))  # noqa: E731
            settings = "; ".join(" ".join(f"{k}={v:.3g}" for k, v in r["settings"].items())
                                 for r in runs)
            rows.append([method, f"{mean('f1'):.2f}",
                         "" if kind != "chunk" else f"{mean('precision'):.1f}",
                         "" if kind != "chunk" else f"{mean('recall'):.1f}",
                         "" if kind != "chunk" else f"{mean('n_pred'):.0f}",
                         f"{np.median(deltas):+.2f}", f"{np.mean(deltas):+.2f}",
                         f"[{lo:+.2f}, {hi:+.2f}]",
                         " ".join(f"{d:+.2f}" for d in deltas), settings])
        size_text = "all the rest of train" if size == "max" else f"{size}x the labeled tokens"
        out.append(f"\n{what}, {args.labeled} labeled sentences x {args.slices} slices "
                   f"(by {args.slice_by}), "
                   f"unlabeled {size_text}; {metric} on test (%), mean over slices; "
                   "Δ paired against the c2-tuned dense model of the same slice\n")
        out.append(markdown_table(["method", metric, "P", "R", "predicted", "median Δ",
                                   "mean Δ", "95% CI of mean Δ", "Δ per slice",
                                   "chosen on dev"], rows))
    return "\n".join(out)


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--corpus", default="bc2gm", choices=("bc2gm", "conll2000", "ewt"))
    p.add_argument("--data", default=DATA_ROOT)
    p.add_argument("--labeled", type=int, default=200, help="sentences per slice")
    p.add_argument("--slices", type=int, default=5)
    p.add_argument("--slice-by", default="document", choices=("document", "sentence"),
                   help="labeled slices of whole documents where the corpus marks them "
                        "(UD-EWT), or of random sentences")
    p.add_argument("--sizes", default="1,5,max", help="unlabeled text, multiples of the "
                   "slice's tokens, or 'max'")
    p.add_argument("--methods", default=",".join(METHODS))
    p.add_argument("--c2", default="3,1,0.3,0.1,0.03,0.01,0.003")
    p.add_argument("--gammas", default="0.01,0.03,0.1,0.3",
                   help="entropy_weight in units of labeled/unlabeled tokens (0 is added)")
    p.add_argument("--proportion-weights", default="0.01,0.1",
                   help="proportion_weight in units of labeled tokens (0 is added)")
    p.add_argument("--ge-weights", default="0.01,0.1",
                   help="ge_weight in units of labeled tokens per constraint (0 is added)")
    p.add_argument("--representation-text", default="unlabeled",
                   choices=("unlabeled", "shared", "shared+dev"),
                   help="what the representations are learned from: the method's unlabeled "
                        "text, all the training text of the shared corpora but the slice, "
                        "or that and their dev splits' words (never a test split)")
    p.add_argument("--hmm-states", type=int, default=80,
                   help="hmm_states of the representations (0: no HMM states)")
    p.add_argument("--hmms", type=int, default=3, help="hmms of the representations")
    p.add_argument("--prototypes", type=int, default=3,
                   help="prototype words per label for ge-prototypes")
    p.add_argument("--max-iterations", type=int, default=100)
    p.add_argument("--dev-period", type=int, default=5)
    p.add_argument("--self-training-rounds", type=int, default=3)
    p.add_argument("--dev-sentences", type=int, default=0, help="subsample dev (0: all)")
    p.add_argument("--test-sentences", type=int, default=0, help="subsample test (0: all)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    if args.quick:  # the quick grid, where the option was not given
        given = {a.split("=")[0].lstrip("-").replace("-", "_") for a in (argv or sys.argv[1:])
                 if a.startswith("--")}
        for name, value in (("slices", 3), ("sizes", "1"), ("c2", "1,0.1,0.03,0.003"),
                            ("gammas", "0.01,0.1"), ("proportion_weights", "0.1"),
                            ("ge_weights", "0.1"), ("max_iterations", 60),
                            ("self_training_rounds", 2), ("dev_sentences", 1000),
                            ("test_sentences", 2000)):
            if name not in given:
                setattr(args, name, value)
    args.sizes = [s if s == "max" else float(s) for s in args.sizes.split(",")]
    args.sizes = [int(s) if s != "max" and s == int(s) else s for s in args.sizes]
    args.methods = args.methods.split(",")
    for name in ("c2", "gammas", "proportion_weights", "ge_weights"):
        setattr(args, name, [float(v) for v in getattr(args, name).split(",")])
    return args


def main(argv=None):
    args = parse_args(argv)
    started = time.perf_counter()
    results, kind, what, n_test = run(args)
    text = tables(args, results, kind, what)
    print(machine_line())
    print(f"{n_test:,} test sentences; c2 grid {args.c2}; {args.max_iterations} iterations "
          f"at most; {time.perf_counter() - started:.0f} s in all")
    print(text)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"args": {k: v for k, v in vars(args).items()},
                       "results": [dict(r, counts=None if r["counts"] is None
                                        else r["counts"].sum(axis=0).tolist())
                                   for r in results]}, f, indent=1, default=str)


if __name__ == "__main__":
    main()
