"""Self-training (Jiao et al. 2006 §5.1) against references it could fail.

The pseudo-labels of each round are recomputed by brute force: every
labeling of an unlabeled sentence scored with the model's weights, read
through its public attributes (``state_features_``, ``transitions_``,
``start_weights_``, ``end_weights_``), the best one kept. The retraining is
checked against a plain warm-started fit on the labeled data plus those
labels.
"""

import itertools

import numpy as np
import pytest

from sscrf import CRF, self_train


def tokens(words):
    return [{"w": w, "suffix": w[-1:]} for w in words]


LABELED = [
    (["the", "dog", "runs"], ["D", "N", "V"]),
    (["a", "cat", "sleeps"], ["D", "N", "V"]),
    (["the", "cat", "runs"], ["D", "N", "V"]),
    (["dogs", "run"], ["N", "V"]),
]
# Words of the labeled data in new orders, and words it never saw ("bird",
# "sings"), whose labels the transitions and suffixes decide.
UNLABELED = [["a", "dog", "sleeps"], ["the", "bird", "sings"], ["cats", "run"],
             ["a", "bird", "runs"]]
X = [tokens(words) for words, _ in LABELED]
Y = [labels for _, labels in LABELED]
U = [tokens(words) for words in UNLABELED]


def params(**extra):
    return {"c2": 0.1, "max_iterations": 50, "verbose": False, "n_threads": 1, **extra}


def brute_force_labels(model, sentences):
    """Per sentence, the highest-scoring labeling over all S**n of them."""
    W, T = model.state_features_, model.transitions_
    start, end, classes = model.start_weights_, model.end_weights_, model.classes_
    out = []
    for sentence in sentences:
        attributes = [[f"{k}={v}" for k, v in token.items()] for token in sentence]
        best, best_score = None, -np.inf
        for y in itertools.product(range(len(classes)), repeat=len(sentence)):
            score = start[y[0]] + end[y[-1]]
            score += sum(W.get((a, classes[l]), 0.0) for attrs, l in zip(attributes, y)
                         for a in attrs)
            score += sum(T[a, b] for a, b in zip(y, y[1:]))
            if score > best_score:  # the first labeling wins ties, as Viterbi's lower ids
                best, best_score = y, score
        out.append([classes[l] for l in best])
    return out


def test_one_round_is_a_warm_started_fit_on_brute_force_pseudo_labels():
    supervised = CRF(**params()).fit(X, Y)
    guessed = brute_force_labels(supervised, U)
    expected = CRF(**params()).fit(X + U, Y + guessed, init=supervised)
    model = self_train(CRF(**params()), X, Y, U, max_rounds=1)
    np.testing.assert_array_equal(model.coef_, expected.coef_)
    assert model.classes_ == expected.classes_
    changed = sum(a != b for old, new in zip(guessed, brute_force_labels(expected, U))
                  for a, b in zip(old, new))
    assert model.self_training_ == [{"round": 0, "changed": None},
                                    {"round": 1, "changed": changed}]


def test_rounds_go_on_until_no_label_changes():
    model = self_train(CRF(**params()), X, Y, U, max_rounds=10)
    history = model.self_training_
    assert [h["round"] for h in history] == list(range(len(history)))
    assert history[-1]["changed"] == 0 or len(history) == 11
    assert all(h["changed"] > 0 for h in history[1:-1])
    # the labels the last round trained on are the model's own Viterbi labels
    assert model.predict(U) == brute_force_labels(model, U)


def test_the_pseudo_labels_of_this_corpus_by_hand():
    # determiners, nouns and verbs as in the labeled data; the unseen "bird"
    # sits between a determiner and a verb, the unseen "sings" ends the sentence
    model = self_train(CRF(**params()), X, Y, U, max_rounds=5)
    assert model.predict(U) == [["D", "N", "V"], ["D", "N", "V"], ["N", "V"], ["D", "N", "V"]]
    assert model.self_training_[-1]["changed"] == 0


def test_zero_rounds_is_the_supervised_fit():
    model = self_train(CRF(**params()), X, Y, U, max_rounds=0)
    np.testing.assert_array_equal(model.coef_, CRF(**params()).fit(X, Y).coef_)
    assert model.self_training_ == [{"round": 0, "changed": None}]


def test_entropy_weight_is_ignored_and_restored():
    model = CRF(**params(entropy_weight=0.5))
    self_train(model, X, Y, U, max_rounds=1)
    assert model.entropy_weight == 0.5
    plain = self_train(CRF(**params()), X, Y, U, max_rounds=1)
    np.testing.assert_array_equal(model.coef_, plain.coef_)


@pytest.mark.parametrize("verbose, lines", [(True, 1), (False, 0), (None, 0)])
def test_one_line_per_round(capsys, verbose, lines):
    self_train(CRF(**params()), X, Y, U, max_rounds=1, verbose=verbose)
    err = capsys.readouterr().err
    assert err.count("self-training round") == lines
