"""sklearn-crfsuite's CoNLL 2002 NER tutorial on CoNLL-2000 chunking, sscrf beside sklearn-crfsuite.

The tutorial's code (docs/CoNLL2002.ipynb of sklearn-crfsuite: its
``word2features``, ``CRF(algorithm='lbfgs', c1=0.1, c2=0.1, max_iterations=100,
all_possible_transitions=True)``, ``fit``, ``predict``, ``flat_f1_score``
over the labels but ``O``, ``flat_classification_report``, optionally the
``RandomizedSearchCV`` over c1 / c2, and the ``Counter.most_common``
inspection of ``transition_features_`` / ``state_features_``) runs once per
library, in :func:`tutorial`, which is handed the two modules the notebook
imports (``sklearn_crfsuite`` and its ``metrics``): ``import sscrf as
sklearn_crfsuite`` and ``from sscrf import metrics`` are the only changes.
CoNLL-2000's ``word POS chunk`` sentences stand for nltk's
``iob_sents``. sklearn-crfsuite runs when importable (``pip install
'.[bench]'``). Prints both weighted token F1s (the tutorial's figure), chunk
F1 (conlleval's), training and tagging seconds and whether the attribute
names agree. Target: the same F1 within 0.3 (points).

    python bench/papers/sklearn_crfsuite_tutorial.py [--data ../shared/data/conll2000]
        [--search-iter 0] [--top 5]
"""

import argparse
import os
import sys
import time
import warnings
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))  # the repository root, for bench.lib

from bench.lib import host  # noqa: E402
from bench.lib.corpora import CONLL2000, chunk_f1, read_conll2000  # noqa: E402


# -- the tutorial's code ------------------------------------------------------

def word2features(sent, i):
    word = sent[i][0]
    postag = sent[i][1]

    features = {
        'bias': 1.0,
        'word.lower()': word.lower(),
        'word[-3:]': word[-3:],
        'word[-2:]': word[-2:],
        'word.isupper()': word.isupper(),
        'word.istitle()': word.istitle(),
        'word.isdigit()': word.isdigit(),
        'postag': postag,
        'postag[:2]': postag[:2],
    }
    if i > 0:
        word1 = sent[i-1][0]
        postag1 = sent[i-1][1]
        features.update({
            '-1:word.lower()': word1.lower(),
            '-1:word.istitle()': word1.istitle(),
            '-1:word.isupper()': word1.isupper(),
            '-1:postag': postag1,
            '-1:postag[:2]': postag1[:2],
        })
    else:
        features['BOS'] = True

    if i < len(sent)-1:
        word1 = sent[i+1][0]
        postag1 = sent[i+1][1]
        features.update({
            '+1:word.lower()': word1.lower(),
            '+1:word.istitle()': word1.istitle(),
            '+1:word.isupper()': word1.isupper(),
            '+1:postag': postag1,
            '+1:postag[:2]': postag1[:2],
        })
    else:
        features['EOS'] = True

    return features


def sent2features(sent):
    return [word2features(sent, i) for i in range(len(sent))]

def sent2labels(sent):
    return [label for token, postag, label in sent]


def tutorial(sklearn_crfsuite, metrics, train_sents, test_sents, search_iter, top):
    """The notebook's cells from feature extraction on; returns the figures."""
    X_train = [sent2features(s) for s in train_sents]
    y_train = [sent2labels(s) for s in train_sents]

    X_test = [sent2features(s) for s in test_sents]
    y_test = [sent2labels(s) for s in test_sents]

    crf = sklearn_crfsuite.CRF(
        algorithm='lbfgs',
        c1=0.1,
        c2=0.1,
        max_iterations=100,
        all_possible_transitions=True
    )
    started = time.perf_counter()
    crf.fit(X_train, y_train)
    fit_seconds = time.perf_counter() - started

    labels = list(crf.classes_)
    labels.remove('O')

    started = time.perf_counter()
    y_pred = crf.predict(X_test)
    predict_seconds = time.perf_counter() - started
    f1 = metrics.flat_f1_score(y_test, y_pred,
                               average='weighted', labels=labels)

    # group B and I results
    sorted_labels = sorted(
        labels,
        key=lambda name: (name[1:], name[0])
    )
    report = metrics.flat_classification_report(
        y_test, y_pred, labels=sorted_labels, digits=3
    )
    figures = {"f1": 100 * f1, "chunk_f1": chunk_f1(y_test, y_pred)["f1"],
               "fit_seconds": fit_seconds, "predict_seconds": predict_seconds,
               "report": report, "attributes": set(crf.attributes_),
               "weighted": {a for a, _ in crf.state_features_}}

    if search_iter:
        import scipy.stats
        from sklearn.metrics import make_scorer
        from sklearn.model_selection import RandomizedSearchCV

        # define fixed parameters and parameters to search
        crf = sklearn_crfsuite.CRF(
            algorithm='lbfgs',
            max_iterations=100,
            all_possible_transitions=True
        )
        params_space = {
            'c1': scipy.stats.expon(scale=0.5),
            'c2': scipy.stats.expon(scale=0.05),
        }

        # use the same metric for evaluation
        f1_scorer = make_scorer(metrics.flat_f1_score,
                                average='weighted', labels=labels)

        # search
        rs = RandomizedSearchCV(crf, params_space,
                                cv=3,
                                verbose=1,
                                n_jobs=1,
                                n_iter=search_iter,
                                scoring=f1_scorer,
                                random_state=0)
        started = time.perf_counter()
        rs.fit(X_train, y_train)
        figures["search_seconds"] = time.perf_counter() - started
        figures["best_params"] = rs.best_params_
        figures["best_cv"] = 100 * rs.best_score_
        crf = rs.best_estimator_
        y_pred = crf.predict(X_test)
        figures["best_f1"] = 100 * metrics.flat_f1_score(y_test, y_pred, average='weighted',
                                                         labels=labels)

    figures["transitions"] = Counter(crf.transition_features_).most_common(top)
    figures["states"] = Counter(crf.state_features_).most_common(top)
    return figures


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=CONLL2000)
    parser.add_argument("--search-iter", type=int, default=0,
                        help="candidates of the randomized search (the notebook's 50; 0: skip)")
    parser.add_argument("--top", type=int, default=5,
                        help="most likely transitions and state features to show")
    args = parser.parse_args(argv)
    # labels of the training data absent from the test data (I-INTJ, I-PRT,
    # B-UCP, I-UCP) make scikit-learn warn at every report, for both libraries
    warnings.filterwarnings("ignore", message=".* is ill-defined")
    import sscrf as sklearn_crfsuite_port
    from sscrf import metrics as metrics_port

    train, test, _ = read_conll2000(args.data)
    train_sents = [[(w, p, l) for (w, p), l in zip(xs, ys)]
                   for xs, ys in zip(train.tokens, train.labels)]
    test_sents = [[(w, p, l) for (w, p), l in zip(xs, ys)]
                  for xs, ys in zip(test.tokens, test.labels)]
    print(host.machine_line())
    print(f"CoNLL-2000: {len(train_sents):,} training and {len(test_sents):,} test sentences")

    runs = [("sscrf", sklearn_crfsuite_port, metrics_port)]
    try:
        import sklearn_crfsuite
        from sklearn_crfsuite import metrics
    except ImportError:
        print("sklearn-crfsuite is not installed (pip install '.[bench]'): sscrf alone")
    else:
        runs.insert(0, ("sklearn-crfsuite", sklearn_crfsuite, metrics))
    results = {}
    for name, module, module_metrics in runs:
        results[name] = tutorial(module, module_metrics, train_sents, test_sents,
                                 args.search_iter, args.top)
        print(f"\n{name}:\n{results[name]['report']}")
        print("top transitions:", ", ".join(f"{a}->{b} {w:.3f}"
                                            for (a, b), w in results[name]["transitions"]))
        print("top state features:", ", ".join(f"{a} {l} {w:.3f}"
                                               for (a, l), w in results[name]["states"]))

    print("\n| library | weighted token F1 (labels but O) | chunk F1 | fit s | predict s |"
          + (" search s | best c1, c2 | best CV F1 | best test F1 |" if args.search_iter else ""))
    print("|:--|--:|--:|--:|--:|" + ("--:|:--|--:|--:|" if args.search_iter else ""))
    for name, r in results.items():
        row = (f"| {name} | {r['f1']:.2f} | {r['chunk_f1']:.2f} | {r['fit_seconds']:.1f} | "
               f"{r['predict_seconds']:.2f} |")
        if args.search_iter:
            p = r["best_params"]
            row += (f" {r['search_seconds']:.0f} | {p['c1']:.3f}, {p['c2']:.4f} | "
                    f"{r['best_cv']:.2f} | {r['best_f1']:.2f} |")
        print(row)
    if len(results) == 2:
        theirs, ours = results["sklearn-crfsuite"], results["sscrf"]
        gap = abs(ours["f1"] - theirs["f1"])
        print(f"{'PASS' if gap <= 0.3 else 'FAIL'}: weighted token F1 within 0.3 "
              f"({ours['f1']:.2f} vs {theirs['f1']:.2f}); chunk F1 {ours['chunk_f1']:.2f} vs "
              f"{theirs['chunk_f1']:.2f}")
        # CRFsuite's model keeps the attributes of its non-zero weights only
        # (c1 = 0.1 zeroes most), so its names are compared with those of
        # sscrf's non-zero weights and of its whole vocabulary
        kept = theirs["attributes"]
        print(f"{'PASS' if kept <= ours['attributes'] else 'FAIL'}: each of the "
              f"{len(kept):,} attribute names of sklearn-crfsuite's model is one of sscrf's "
              f"{len(ours['attributes']):,} ({len(kept & ours['weighted']):,} of them with a "
              f"non-zero weight in both, of sscrf's {len(ours['weighted']):,})")
        # the tutorial leaves sscrf on every core; CRFsuite has one thread
        X_train = [sent2features(s) for s in train_sents]
        y_train = [sent2labels(s) for s in train_sents]
        one = sklearn_crfsuite_port.CRF(algorithm='lbfgs', c1=0.1, c2=0.1, max_iterations=100,
                                        all_possible_transitions=True, n_threads=1)
        started = time.perf_counter()
        one.fit(X_train, y_train)
        one_seconds = time.perf_counter() - started
        print(f"training time ratio sscrf / sklearn-crfsuite: "
              f"{ours['fit_seconds'] / theirs['fit_seconds']:.2f} on sscrf's default threads "
              f"({os.cpu_count()} CPUs), {one_seconds / theirs['fit_seconds']:.2f} on one "
              f"({one_seconds:.1f} s); CRFsuite on one")


if __name__ == "__main__":
    main()
