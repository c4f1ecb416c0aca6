"""sklearn-crfsuite's CoNLL 2002 NER tutorial (its docs/CoNLL2002.ipynb) runs on
sscrf with only the import lines changed.

The tutorial's code below is the notebook's, cell by cell. What differs is
around it, not in it: the corpus is generated (sscrf.demo's chunking HMM,
given in nltk's ``iob_sents`` form of (word, POS, label) triples) instead of
read from nltk's CoNLL 2002, so there is no nltk cell; the randomized search
tries 3 candidates on one process instead of 50 on every core, so that the
test takes seconds; the matplotlib chart is left out. The bench
(bench/papers/sklearn_crfsuite_tutorial.py) runs the same code on
CoNLL-2000 beside sklearn-crfsuite itself.
"""

import math
import re

import pytest

from sscrf.demo import generate_hmm_corpus


def iob_sents(n_sentences, seed):
    """Sentences as nltk's ``conll2002.iob_sents`` gives them: (word, POS, label)."""
    X, y = generate_hmm_corpus(n_sentences, seed=seed, max_length=12)
    return [[(word, pos, label) for (word, pos), label in zip(xs, ys)]
            for xs, ys in zip(X, y)]


train_sents = iob_sents(150, seed=1)
test_sents = iob_sents(80, seed=2)


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

def sent2tokens(sent):
    return [token for token, postag, label in sent]


def test_the_tutorial_runs_with_only_its_imports_changed(capsys):
    # The notebook's import cell, run here rather than when the file is
    # collected: scikit-learn's 90 MB then join the test process only when
    # the test runs, as in the other tests that use it.
    pytest.importorskip("sklearn")

    from itertools import chain  # noqa: F401

    import scipy.stats
    from sklearn.metrics import make_scorer
    from sklearn.model_selection import cross_val_score  # noqa: F401
    from sklearn.model_selection import RandomizedSearchCV

    import sscrf as sklearn_crfsuite  # was: import sklearn_crfsuite
    from sscrf import metrics  # was: from sklearn_crfsuite import metrics

    sent2features(train_sents[0])[0]

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
    crf.fit(X_train, y_train)

    labels = list(crf.classes_)
    labels.remove('O')
    labels

    y_pred = crf.predict(X_test)
    f1 = metrics.flat_f1_score(y_test, y_pred,
                               average='weighted', labels=labels)

    # group B and I results
    sorted_labels = sorted(
        labels,
        key=lambda name: (name[1:], name[0])
    )
    print(metrics.flat_classification_report(
        y_test, y_pred, labels=sorted_labels, digits=3
    ))

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
                            n_iter=3,
                            scoring=f1_scorer,
                            random_state=0)
    rs.fit(X_train, y_train)

    # crf = rs.best_estimator_
    print('best params:', rs.best_params_)
    print('best CV score:', rs.best_score_)
    print('model size: {:0.2f}M'.format(rs.best_estimator_.size_ / 1000000))

    _x = [s['c1'] for s in rs.cv_results_['params']]
    _y = [s['c2'] for s in rs.cv_results_['params']]
    _c = [s for s in rs.cv_results_['mean_test_score']]

    crf = rs.best_estimator_
    y_pred = crf.predict(X_test)
    print(metrics.flat_classification_report(
        y_test, y_pred, labels=sorted_labels, digits=3
    ))

    from collections import Counter

    def print_transitions(trans_features):
        for (label_from, label_to), weight in trans_features:
            print("%-6s -> %-7s %0.6f" % (label_from, label_to, weight))

    print("Top likely transitions:")
    print_transitions(Counter(crf.transition_features_).most_common(20))

    print("\nTop unlikely transitions:")
    print_transitions(Counter(crf.transition_features_).most_common()[-20:])

    def print_state_features(state_features):
        for (attr, label), weight in state_features:
            print("%0.6f %-8s %s" % (weight, label, attr))

    print("Top positive:")
    print_state_features(Counter(crf.state_features_).most_common(30))

    print("\nTop negative:")
    print_state_features(Counter(crf.state_features_).most_common()[-30:])

    # -- what it gave -----------------------------------------------------------
    out = capsys.readouterr().out
    # the HMM's labels are learnable: far above chance, not perfect (POS noise)
    assert 0.8 < f1 < 1.0
    assert sorted_labels == ["B-NP", "I-NP", "B-VP", "I-VP"]
    for label in sorted_labels:
        assert re.search(rf"^\s+{label}(\s+\d\.\d{{3}}){{3}}\s+\d+$", out, re.M), label
    assert len(_x) == len(_y) == len(_c) == 3 and all(0 <= c <= 1 for c in _c)
    assert set(rs.best_params_) == {"c1", "c2"} and rs.best_estimator_.size_ > 0
    # an I-X after O is impossible in the HMM: all_possible_transitions gave it
    # a weight, and training made it negative
    assert crf.transition_features_[("O", "I-NP")] < 0
    assert len(re.findall(r"^\S+\s+-> \S+\s+-?\d+\.\d{6}$", out, re.M)) == 20 + 20
    # python-crfsuite's naming, as the notebook's remarks quote it
    # ("9.385823 B-ORG word.lower():psoe-progresistas")
    top = re.findall(r"^-?\d+\.\d{6} \S+\s+(\S+)$", out, re.M)
    assert len(top) == 60 and set(top) <= set(crf.attributes_)
    assert any(a.startswith(("word.lower():", "postag:", "-1:postag:", "+1:postag:"))
               for a in top)
    assert not any("=" in a for a in crf.attributes_)
    assert all(math.isfinite(w) for w in crf.state_features_.values())
