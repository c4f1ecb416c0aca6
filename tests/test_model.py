"""The CRF estimator end to end, on tiny synthetic corpora built here.

Every probability the model reports is recomputed by brute-force enumeration
(``reference.brute_force``) from the model's own coefficients rebuilt into a
dense emission matrix in numpy: E[t, l] = Σ value(a, t) · state_features_[a, l]
over the attributes a of token t, computed here from the feature dicts (or
the column tokens and templates) without the library's extractor.
"""

import contextlib
import itertools
import math
import re
import os
import random
import sys

import numpy as np
import pytest

import sscrf
from reference import brute_force, labeling_score
from sscrf import CRF, SscrfError
from sscrf.training import TrainResult

# ---------------------------------------------------------------------------
# A tiny synthetic language
# ---------------------------------------------------------------------------

WORDS = {
    "DET": ["the", "a", "this"],
    "NOUN": ["dog", "cat", "man", "park"],
    "VERB": ["runs", "sees", "eats", "walks"],
}
SHAPES = [["DET", "NOUN", "VERB"], ["DET", "NOUN", "VERB", "DET", "NOUN"],
          ["NOUN", "VERB"], ["DET", "NOUN", "VERB", "NOUN"]]


def sentence_features(words):
    """sklearn-crfsuite-style feature dicts: strings, floats (some negative), bools."""
    out = []
    for i, w in enumerate(words):
        token = {
            "w": w,
            "suf": w[-2:],
            "len": len(w) / 3.0,
            "neg": -0.5 * (i % 2),  # 0.0 at even positions: stored, counts as firing
            "title": w.istitle(),  # False: no attribute at all
            "prev": words[i - 1] if i else "<s>",
        }
        if i == 0:
            token["first"] = 0.0  # only ever 0.0, still an attribute
        out.append(token)
    return out


def token_attributes(token):
    """(attribute, value) pairs of a feature dict, by the documented rules."""
    out = []
    for name, value in token.items():
        if isinstance(value, str):
            out.append((f"{name}:{value}", 1.0))
        elif isinstance(value, bool):
            if value:
                out.append((name, 1.0))
        else:
            out.append((name, float(value)))
    return out


def make_data(seed, n_sentences, shapes=SHAPES, words=WORDS, noise=0.1):
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n_sentences):
        shape = shapes[int(rng.integers(len(shapes)))]
        ws = [str(rng.choice(words[label])) for label in shape]
        labels = list(shape)
        if rng.random() < noise:  # a little label noise keeps weights finite-ish
            k = int(rng.integers(len(labels)))
            labels[k] = str(rng.choice(sorted(words)))
        X.append(sentence_features(ws))
        y.append(labels)
    return X, y


def fit(X, y, **params):
    params = {"c2": 0.1, "max_iterations": 60, "verbose": False, "n_threads": 1, **params}
    return CRF(**params).fit(X, y)


@pytest.fixture(scope="module")
def data():
    return make_data(0, 25)


@pytest.fixture(scope="module")
def model(data):
    return fit(*data)


def held_out_sentences():
    """Held-out sentences: unseen words, length 1, a long one."""
    return [sentence_features(ws) for ws in (
        ["the", "dog", "runs"], ["a", "zebra", "sleeps"], ["cat"], ["runs"],
        ["the", "man", "sees", "a", "dog", "in", "the", "park"], ["this", "cat", "eats", "man"])]


# ---------------------------------------------------------------------------
# Brute force from the model's coefficients
# ---------------------------------------------------------------------------


def dense_potentials(model, attribute_lists):
    """E (n, S) from state_features_ and the token attributes; T, start, end."""
    classes = model.classes_
    S = len(classes)
    weights = model.state_features_
    E = np.zeros((len(attribute_lists), S))
    for t, attrs in enumerate(attribute_lists):
        for j, label in enumerate(classes):
            E[t, j] = math.fsum(v * weights.get((a, label), 0.0) for a, v in attrs)
    tf = model.transition_features_
    T = np.array([[tf[(a, b)] for b in classes] for a in classes])
    return E, T, np.asarray(model.start_weights_), np.asarray(model.end_weights_)


def brute_force_of(model, sentence, attributes=None):
    attributes = attributes or [token_attributes(tok) for tok in sentence]
    E, T, start, end = dense_potentials(model, attributes)
    return brute_force(E, T, start, end), (E, T, start, end)


def brute_log_p(model, sentence, labels, attributes=None):
    if len(sentence) == 0:
        return 0.0
    bf, (E, T, start, end) = brute_force_of(model, sentence, attributes)
    index = {label: i for i, label in enumerate(model.classes_)}
    return labeling_score(E, T, start, end, [index[label] for label in labels]) - bf.log_z


def all_weights(model):
    """(attribute, label) → weight for every pair in the layout, zeros included."""
    names, classes = model.extractor_.attributes_, model.classes_
    attrs = model.layout_.attribute_of_pairs()
    w = model.layout_.split(model.coef_)[0]
    return {(names[a], classes[l]): float(v)
            for a, l, v in zip(attrs.tolist(), model.label_ids_.tolist(), w.tolist())}


# ---------------------------------------------------------------------------
# Inference against brute force
# ---------------------------------------------------------------------------


def test_fit_sets_attributes(model, data):
    X, y = data
    assert model.classes_ == sorted({label for seq in y for label in seq})
    assert model.coef_.ndim == 1 and np.all(np.isfinite(model.coef_))
    assert model.n_parameters_ == len(model.coef_)
    assert model.transitions_.shape == (len(model.classes_),) * 2
    assert set(model.training_) >= {"iterations", "evaluations", "loss", "stop_reason",
                                     "seconds", "history"}
    assert 0 < model.training_["iterations"] <= 60


def test_predict_is_a_brute_force_argmax(model):
    sentences = held_out_sentences()
    predicted = model.predict(sentences)
    assert len(predicted) == len(sentences)
    index = {label: i for i, label in enumerate(model.classes_)}
    for sentence, labels in zip(sentences, predicted):
        assert len(labels) == len(sentence)
        assert all(isinstance(label, str) for label in labels)
        bf, _ = brute_force_of(model, sentence)
        assert tuple(index[label] for label in labels) in bf.best
        assert model.predict_single(sentence) == labels


@pytest.mark.parametrize("chunk", [1, 4, 7])
def test_predict_in_chunks_is_a_brute_force_argmax(model, monkeypatch, chunk):
    # chunks of a few tokens: sentences longer than a chunk, several in one,
    # and empty ones between them
    monkeypatch.setattr(sscrf.decoding, "TAG_CHUNK_TOKENS", chunk)
    sentences = held_out_sentences()
    sentences = [sentences[0], [], *sentences[1:], []]
    predicted = model.predict(sentences)
    assert [len(p) for p in predicted] == [len(s) for s in sentences]
    index = {label: i for i, label in enumerate(model.classes_)}
    for sentence, labels in zip(sentences, predicted):
        if sentence:
            best = brute_force_of(model, sentence)[0].best
            assert tuple(index[label] for label in labels) in best
    assert model.predict([]) == []


def test_marginals_probabilities_and_entropies_in_chunks_have_the_same_bits(model,
                                                                            monkeypatch):
    sentences = held_out_sentences()
    sentences = [sentences[0], [], *sentences[1:], []]

    def everything():
        return (model.predict_marginals_array(sentences), model.sequence_entropy(sentences),
                model.token_entropy(sentences), model.sequence_log_probability(sentences),
                model.most_uncertain_span(sentences, 2))

    monkeypatch.setattr(sscrf.decoding, "TAG_CHUNK_TOKENS", 10 ** 9)
    whole = everything()
    for chunk in (1, 4, 7):
        monkeypatch.setattr(sscrf.decoding, "TAG_CHUNK_TOKENS", chunk)
        got = everything()
        for a, b in zip(got, whole):
            if isinstance(a, np.ndarray):
                assert a.tobytes() == b.tobytes()
            elif a and isinstance(a[0], np.ndarray):
                assert [x.tobytes() for x in a] == [x.tobytes() for x in b]
            else:
                assert a == b


def test_predict_in_chunks_names_a_bad_sentence_by_its_index_in_X(model, monkeypatch):
    monkeypatch.setattr(sscrf.decoding, "TAG_CHUNK_TOKENS", 3)
    sentences = held_out_sentences()
    bad = [*sentences, [dict(sentence_features(["the"])[0], x=float("nan"))]]
    with pytest.raises(SscrfError, match=rf"sentence {len(sentences)}, token 0\b"):
        model.predict(bad)


def test_predict_learns_the_language(model, data):
    X, y = data
    assert model.score(X, y) > 0.85
    assert model.predict_single(sentence_features(["the", "dog", "runs"])) == \
        ["DET", "NOUN", "VERB"]


def test_predict_marginals_match_brute_force(model):
    sentences = held_out_sentences()
    marginals = model.predict_marginals(sentences)
    assert len(marginals) == len(sentences)
    for sentence, rows in zip(sentences, marginals):
        assert len(rows) == len(sentence)
        bf, _ = brute_force_of(model, sentence)
        for t, row in enumerate(rows):
            assert isinstance(row, dict)
            assert list(row) == list(model.classes_)
            assert math.fsum(row.values()) == pytest.approx(1.0, abs=1e-12)
            np.testing.assert_allclose([row[c] for c in model.classes_], bf.node[t],
                                       rtol=1e-9, atol=1e-12)
    arrays = model.predict_marginals_array(sentences)
    for rows, array in zip(marginals, arrays):
        np.testing.assert_array_equal(array, [[r[c] for c in model.classes_] for r in rows])


def test_sequence_log_probability_matches_brute_force(model):
    sentences = held_out_sentences()
    rng = np.random.default_rng(1)
    labelings = [[str(rng.choice(model.classes_)) for _ in s] for s in sentences]
    got = model.sequence_log_probability(sentences, labelings)
    assert got.shape == (len(sentences),)
    expected = [brute_log_p(model, s, y) for s, y in zip(sentences, labelings)]
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)
    assert np.all(got <= 0)


def test_log_probabilities_are_never_positive():
    # A long sentence under large weights: the Viterbi labeling has p ≈ 1,
    # and its score and log Z, each a sum of 1000 terms, round apart (the
    # score landed a few ulps above log Z before they were clamped)
    # (whether it does depends on the rounding: this set-up gave +3e-9 on
    # x86-64 with GCC 12; the assertions hold wherever it is run)
    rng = random.Random(0)

    def sentence(n):
        labels = [rng.randrange(5) for _ in range(n)]
        return [{"w": f"w{l}", "v": rng.random()} for l in labels], [f"L{l}" for l in labels]

    X, y = zip(*[sentence(20) for _ in range(100)])
    m = CRF(c2=0.0, max_iterations=200, verbose=False).fit(list(X), list(y))
    m.coef_ = m.coef_ * 50
    long, _ = sentence(1000)
    assert m.sequence_log_probability([long])[0] <= 0.0
    assert m.sequence_log_probability([long], m.predict([long]))[0] <= 0.0
    assert m.predict_nbest([long], 2)[0][0][1] <= 0.0


def test_sequence_log_probability_of_viterbi_path(model):
    sentences = held_out_sentences()
    got = model.sequence_log_probability(sentences)
    predicted = model.predict(sentences)
    expected = [brute_log_p(model, s, y) for s, y in zip(sentences, predicted)]
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)
    for s, value in zip(sentences, got):  # the most probable labeling
        bf, _ = brute_force_of(model, s)
        assert value == pytest.approx(bf.best_score - bf.log_z, rel=1e-9, abs=1e-12)
    # the same numbers as scoring predict()'s labels (an empty sentence: log 1)
    np.testing.assert_array_equal(got, model.sequence_log_probability(sentences, predicted))
    both = model.sequence_log_probability([[], sentences[0]])
    assert both[0] == 0.0 and both[1] == got[0]


def test_probabilities_of_all_labelings_sum_to_one(model):
    sentence = sentence_features(["a", "cat", "sees"])
    labelings = [list(p) for p in itertools.product(model.classes_, repeat=3)]
    logp = model.sequence_log_probability([sentence] * len(labelings), labelings)
    assert math.fsum(np.exp(logp)) == pytest.approx(1.0, abs=1e-12)


def test_score_is_token_accuracy(model):
    sentences = held_out_sentences()
    predicted = model.predict(sentences)
    gold = [list(p) for p in predicted]
    gold[0][1] = "UNSEEN"  # a gold label the model never saw: an error
    gold[2][0] = next(c for c in model.classes_ if c != predicted[2][0])
    total = sum(len(s) for s in gold)
    assert model.score(sentences, gold) == pytest.approx((total - 2) / total)
    assert model.score(sentences, predicted) == 1.0
    with pytest.raises(SscrfError, match="sentence"):
        model.score(sentences, gold[:-1])


def test_training_loss_matches_brute_force(data):
    # training_["loss"] is −Σ log p(y|x) + c2‖θ‖² at coef_, by enumeration.
    X, y = data
    c2 = 0.3
    m = fit(X, y, c2=c2, max_iterations=15)
    nll = -math.fsum(brute_log_p(m, s, labels) for s, labels in zip(X, y))
    assert m.training_["loss"] == pytest.approx(nll + c2 * float(m.coef_ @ m.coef_), rel=1e-10)
    assert m.training_["history"][-1] >= m.training_["loss"] - 1e-12


# ---------------------------------------------------------------------------
# The solution is a stationary point (gradient by brute force, not by the library)
# ---------------------------------------------------------------------------


def brute_force_gradient(X, y, classes, W, T, start, end, c2):
    """Gradient of −Σ log p(y|x) + c2‖θ‖² w.r.t. the pairs in W (dict), T, start, end."""
    S = len(classes)
    index = {c: i for i, c in enumerate(classes)}
    gW = {pair: 2 * c2 * w for pair, w in W.items()}
    gT, gstart, gend = 2 * c2 * T, 2 * c2 * start, 2 * c2 * end
    for sentence, labels in zip(X, y):
        attrs = [token_attributes(tok) for tok in sentence]
        E = np.array([[math.fsum(v * W.get((a, c), 0.0) for a, v in at) for c in classes]
                      for at in attrs])
        bf = brute_force(E, T, start, end)
        yi = [index[label] for label in labels]
        dE = bf.node - np.eye(S)[yi]
        for t, at in enumerate(attrs):
            for a, v in at:
                for j, c in enumerate(classes):
                    if (a, c) in gW:
                        gW[(a, c)] += v * dE[t, j]
        gstart = gstart + dE[0]
        gend = gend + dE[-1]
        gT = gT + bf.edge.sum(axis=0)
        for t in range(1, len(yi)):
            gT[yi[t - 1], yi[t]] -= 1.0
    return np.concatenate([np.array(list(gW.values())), gT.ravel(), gstart, gend])


def test_solution_is_stationary(data):
    X, y = data
    X, y = X[:12], y[:12]
    c2 = 0.2
    m = fit(X, y, c2=c2, max_iterations=200)
    W = all_weights(m)
    S = len(m.classes_)
    g_solution = brute_force_gradient(X, y, m.classes_, W, m.transitions_, m.start_weights_,
                                      m.end_weights_, c2)
    zero = dict.fromkeys(W, 0.0)
    g_zero = brute_force_gradient(X, y, m.classes_, zero, np.zeros((S, S)), np.zeros(S),
                                  np.zeros(S), c2)
    assert np.linalg.norm(g_solution) < 1e-3 * np.linalg.norm(g_zero)
    loss_zero = -math.fsum(brute_log_p(_zero_like(m), s, labels) for s, labels in zip(X, y))
    assert m.training_["loss"] < loss_zero


def _zero_like(m):
    z = CRF(**m.get_params())
    for name in ("classes_", "extractor_", "feature_set_", "row_ptr_", "label_ids_"):
        setattr(z, name, getattr(m, name))
    z.coef_ = np.zeros_like(m.coef_)
    return z


# ---------------------------------------------------------------------------
# Feature sets
# ---------------------------------------------------------------------------


def observed_pairs(X, y):
    return {(a, label) for s, labels in zip(X, y) for tok, label in zip(s, labels)
            for a, _ in token_attributes(tok)}


def all_attributes(X):
    return {a for s in X for tok in s for a, _ in token_attributes(tok)}


def test_observed_feature_set_keeps_seen_pairs(data):
    X, y = data
    m = fit(X, y, feature_set="observed", max_iterations=5)
    assert m.feature_set_ == "observed"
    assert set(m.extractor_.attributes_) == all_attributes(X)
    pairs = set(all_weights(m))
    assert len(pairs) == len(m.label_ids_)  # no pair twice
    assert pairs == observed_pairs(X, y)
    assert set(m.state_features_) <= pairs
    assert any(a == "first" for a, _ in pairs)  # a stored 0.0 value fires
    assert not any(a == "title" for a, _ in pairs)  # False is absent


def test_dense_feature_set_has_all_pairs(data):
    X, y = data
    m = fit(X, y, feature_set="dense", max_iterations=5)
    assert m.feature_set_ == "dense"
    A, S = len(m.extractor_.attributes_), len(m.classes_)
    assert len(m.label_ids_) == A * S
    assert set(all_weights(m)) == set(itertools.product(all_attributes(X), m.classes_))
    assert len(m.coef_) == A * S + S * S + 2 * S


def test_auto_feature_set_is_observed_when_supervised(data):
    X, y = data
    auto = fit(X, y, max_iterations=5)
    observed = fit(X, y, feature_set="observed", max_iterations=5)
    assert auto.feature_set == "auto"
    assert auto.feature_set_ == "observed"
    np.testing.assert_array_equal(auto.row_ptr_, observed.row_ptr_)
    np.testing.assert_array_equal(auto.label_ids_, observed.label_ids_)
    np.testing.assert_array_equal(auto.coef_, observed.coef_)


def test_bad_feature_set(data):
    with pytest.raises(SscrfError, match="feature_set"):
        fit(*data, feature_set="sparse")


# ---------------------------------------------------------------------------
# Hyperparameters
# ---------------------------------------------------------------------------


def test_get_params_set_params_round_trip():
    m = CRF(c2=0.5, max_iterations=7, n_threads=2, feature_set="dense", labels=["A", "B"],
            templates=["U00:%x[0,0]"], min_freq=2, verbose=False)
    params = m.get_params()
    assert params == {"c1": 0.0, "c2": 0.5, "max_iterations": 7, "epsilon": 1e-5, "period": 10,
                      "delta": 1e-5, "n_threads": 2, "feature_set": "dense",
                      "labels": ["A", "B"], "templates": ["U00:%x[0,0]"], "min_freq": 2,
                      "entropy_weight": 0.0, "entropy_method": "fast", "ge_weight": 0.0,
                      "ge_penalty": "kl", "verbose": False, "algorithm": "lbfgs",
                      "num_memories": 6, "linesearch": "MoreThuente",
                      "all_possible_states": None, "all_possible_transitions": None,
                      "max_features": None, "dev_scoring": None, "dev_period": 5,
                      "proportion_weight": 0.0, "label_proportions": "labeled",
                      "hash_features": None, "word_vectors": None, "dev_patience": None}
    clone = type(m)(**m.get_params())
    assert clone.get_params() == params
    assert clone is not m
    assert m.set_params(c2=3.0, epsilon=1e-3) is m
    assert m.get_params()["c2"] == 3.0 and m.c2 == 3.0 and m.epsilon == 1e-3
    with pytest.raises(ValueError, match="no_such_param"):
        m.set_params(no_such_param=1)
    assert "c2=3.0" in repr(m)


def test_sklearn_tags_name_fields_scikit_learn_defines(monkeypatch):
    # scikit-learn (>= 1.6) asks estimators for __sklearn_tags__; it is not a
    # dependency, so a stand-in module with the dataclasses' field names of
    # scikit-learn 1.9 (sklearn/utils/_tags.py) checks the call.
    import dataclasses
    import types

    fake = types.ModuleType("sklearn.utils")
    fake.TargetTags = dataclasses.make_dataclass(
        "TargetTags", ["required", ("one_d_labels", bool, False), ("two_d_labels", bool, False),
                       ("positive_only", bool, False), ("multi_output", bool, False),
                       ("single_output", bool, True)], kw_only=True)
    fake.InputTags = dataclasses.make_dataclass(
        "InputTags", [(name, bool, default) for name, default in [
            ("one_d_array", False), ("two_d_array", True), ("three_d_array", False),
            ("sparse", False), ("categorical", False), ("string", False), ("dict", False),
            ("positive_only", False), ("allow_nan", False), ("pairwise", False)]], kw_only=True)
    fake.Tags = dataclasses.make_dataclass(
        "Tags", ["estimator_type", "target_tags", "transformer_tags", "classifier_tags",
                 "regressor_tags", ("array_api_support", bool, False),
                 ("no_validation", bool, False), ("non_deterministic", bool, False),
                 ("requires_fit", bool, True), ("_skip_test", bool, False),
                 ("input_tags", object, None)], kw_only=True)
    monkeypatch.setitem(sys.modules, "sklearn", types.ModuleType("sklearn"))
    monkeypatch.setitem(sys.modules, "sklearn.utils", fake)
    tags = CRF().__sklearn_tags__()
    assert tags.estimator_type is None  # not a classifier: folds are KFold, not stratified on y
    assert tags.target_tags.required and tags.requires_fit
    assert not tags.input_tags.two_d_array


def test_a_single_label_is_warned_about():
    # e.g. a CoNLL-U column of '_' only: the model can only give that label
    X = [[{"w": "a"}, {"w": "b"}], [{"w": "c"}]]
    with pytest.warns(UserWarning, match="the label set is the one label '_': the model will give"):
        model = CRF(max_iterations=3, verbose=False).fit(X, [["_", "_"], ["_"]])
    assert model.predict(X) == [["_", "_"], ["_"]]


def test_not_fitted():
    with pytest.raises(SscrfError, match="not fitted"):
        CRF().predict([[{"w": "a"}]])


@pytest.mark.parametrize("params, message", [
    (dict(c2=-1.0), "c2"), (dict(c2=float("nan")), "c2"), (dict(max_iterations=-1),
                                                            "max_iterations"),
    (dict(c1=True), "c1"), (dict(entropy_weight=True), "entropy_weight"),
    (dict(max_iterations=True), "max_iterations"), (dict(period=1.5), "period"),
    (dict(period=0), "period"), (dict(epsilon=-1e-3), "epsilon"), (dict(delta="0"), "delta"),
    (dict(min_freq=0), "min_freq"),
])
def test_bad_hyperparameters(data, params, message):
    with pytest.raises(SscrfError, match=message):
        fit(*data, **params)


def test_numpy_scalar_hyperparameters_train_and_save(data, tmp_path):
    # numpy scalars are numbers like any other, and the model file holds them
    # as plain JSON numbers (a checkpoint saves in the middle of fit)
    m = fit(*data, c2=np.float32(0.5), max_iterations=np.int64(6), period=np.int32(3),
            n_threads=np.int64(1))
    path = tmp_path / "np.model"
    m.fit(*data, checkpoint=path, checkpoint_every=2)
    loaded = CRF.load(path)
    assert loaded.get_params()["max_iterations"] == 6
    assert type(loaded.get_params()["max_iterations"]) is int
    assert loaded.get_params()["c2"] == 0.5


def test_labels_setting_survives_save_and_refit(data, tmp_path):
    X, y = data
    labels = ["VERB", "NOUN", "DET", "UNSEEN"]
    m = fit(X, y, labels=np.array(labels), max_iterations=5)
    assert "labels=array(" in repr(m)  # an array is never the default None
    assert m.classes_ == labels
    m.save(tmp_path / "l.model")
    loaded = CRF.load(tmp_path / "l.model")
    assert loaded.get_params()["labels"] == labels
    # a clone from the loaded settings keeps the label that y never shows
    assert type(loaded)(**loaded.get_params()).fit(X, y).classes_ == labels


def test_load_refuses_bad_settings(model, tmp_path):
    path = tmp_path / "m.model"
    model.save(path)
    meta, arrays = sscrf.serialization.load(path)
    for name, value in [("c2", -1.0), ("feature_set", "sparse"), ("period", 0)]:
        bad = dict(meta, params=dict(meta["params"], **{name: value}))
        sscrf.serialization.save(path, bad, arrays)
        with pytest.raises(SscrfError, match=f"invalid model file: {name}"):
            CRF.load(path)
    coef = arrays["coef"].copy()
    coef[0] = 1e300  # finite, but beyond what the lattice sums take
    sscrf.serialization.save(path, meta, dict(arrays, coef=coef))
    with pytest.raises(SscrfError, match="invalid model file: weights above 1e\\+250"):
        CRF.load(path)


# ---------------------------------------------------------------------------
# Warm start
# ---------------------------------------------------------------------------


WORDS_ADJ = dict(WORDS, ADJ=["big", "red"])
SHAPES_ADJ = [["DET", "ADJ", "NOUN", "VERB"], ["ADJ", "NOUN", "VERB"]]


@pytest.fixture(scope="module")
def warm_data():
    X1, y1 = make_data(2, 15)
    Xn, yn = make_data(3, 6, shapes=SHAPES_ADJ, words=WORDS_ADJ, noise=0.0)
    first = fit(X1, y1, max_iterations=30)
    return first, X1 + Xn, y1 + yn


def check_warm_values(first, second):
    assert "ADJ" in second.classes_ and "ADJ" not in first.classes_
    assert second.classes_ != first.classes_  # label indices really move
    w1, w2 = all_weights(first), all_weights(second)
    shared = [p for p in w2 if p in w1]
    assert len(shared) == len(w1)  # a superset of the data keeps every pair
    assert any(v != 0.0 for v in w1.values())
    for pair, value in w2.items():
        assert value == w1.get(pair, 0.0), pair
    t1, t2 = first.transition_features_, second.transition_features_
    for (a, b), value in t2.items():
        assert value == t1.get((a, b), 0.0), (a, b)
    for new, old in ((second.start_weights_, first.start_weights_),
                     (second.end_weights_, first.end_weights_)):
        for j, label in enumerate(second.classes_):
            expected = old[first.classes_.index(label)] if label in first.classes_ else 0.0
            assert new[j] == expected, label


def test_warm_start_initial_values(warm_data, monkeypatch):
    # What fit hands the optimiser as θ0, whatever the optimiser then does.
    first, X, y = warm_data
    seen = {}

    def fake_minimize(objective, theta0, **kwargs):
        seen["theta0"] = np.array(theta0)
        return TrainResult(np.array(theta0), 0.0, 0, 0, "fake", 0.0, [])

    monkeypatch.setattr(sscrf.training, "minimize", fake_minimize)
    second = CRF(verbose=False, n_threads=1).fit(X, y, init=first)
    np.testing.assert_array_equal(second.coef_, seen["theta0"])
    check_warm_values(first, second)


def test_warm_start_with_max_iterations_zero(warm_data):
    first, X, y = warm_data
    second = CRF(max_iterations=0, verbose=False, n_threads=1).fit(X, y, init=first)
    check_warm_values(first, second)


def test_max_iterations_zero_does_not_train(data):
    m = fit(*data, max_iterations=0)
    assert m.training_["iterations"] == 0
    assert not np.any(m.coef_)


def test_warm_start_from_path(warm_data, tmp_path):
    first, X, y = warm_data
    path = tmp_path / "first.sscrf"
    first.save(path)
    a = CRF(max_iterations=3, verbose=False, n_threads=1).fit(X, y, init=first)
    b = CRF(max_iterations=3, verbose=False, n_threads=1).fit(X, y, init=str(path))
    np.testing.assert_array_equal(a.coef_, b.coef_)


def test_warm_start_from_a_subset_model(warm_data, monkeypatch):
    # init trained on other data: only shared attributes and labels carry over.
    first, X, y = warm_data
    other = fit(X[-6:], y[-6:], max_iterations=20)  # ADJ-heavy sentences
    seen = {}

    def fake_minimize(objective, theta0, **kwargs):
        seen["theta0"] = np.array(theta0)
        return TrainResult(np.array(theta0), 0.0, 0, 0, "fake", 0.0, [])

    monkeypatch.setattr(sscrf.training, "minimize", fake_minimize)
    second = CRF(verbose=False, n_threads=1).fit(X[:15], y[:15], init=other)
    np.testing.assert_array_equal(second.coef_, seen["theta0"])
    w_other, w2 = all_weights(other), all_weights(second)
    assert any(p in w_other for p in w2) and any(p not in w_other for p in w2)
    for pair, value in w2.items():
        assert value == w_other.get(pair, 0.0), pair


# ---------------------------------------------------------------------------
# Save and load
# ---------------------------------------------------------------------------


def test_save_load_round_trip(model, tmp_path):
    path = tmp_path / "model.sscrf"
    model.save(path)
    loaded = CRF.load(path)
    sentences = held_out_sentences()
    assert loaded.classes_ == model.classes_
    assert loaded.coef_.dtype == np.float64
    assert np.array_equal(loaded.coef_, model.coef_)
    assert loaded.predict(sentences) == model.predict(sentences)
    assert loaded.predict_marginals(sentences) == model.predict_marginals(sentences)
    np.testing.assert_array_equal(loaded.sequence_log_probability(sentences),
                                  model.sequence_log_probability(sentences))
    assert loaded.state_features_ == model.state_features_
    assert loaded.transition_features_ == model.transition_features_
    assert loaded.feature_set_ == model.feature_set_
    assert loaded.training_["stop_reason"] == model.training_["stop_reason"]
    assert loaded.get_params()["c2"] == model.c2
    # str paths too, and overwriting an existing file
    model.save(str(path))
    assert np.array_equal(CRF.load(str(path)).coef_, model.coef_)
    assert [p.name for p in tmp_path.iterdir()] == ["model.sscrf"]  # no temporary left


def _saved_bytes(model, tmp_path):
    path = tmp_path / "good.sscrf"
    model.save(path)
    return path.read_bytes()


def _corruptions(data):
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0x01
    return {
        "truncated": data[:-17],
        "truncated_half": data[:len(data) // 2],
        "flipped": bytes(flipped),
        "empty": b"",
        "text": b"this is not a model\n",
        "json": b'{"kind": "sscrf.CRF", "labels": ["A"]}',
        "trailing": data + b"\0",
    }


@pytest.mark.parametrize("kind", sorted(_corruptions(b"x" * 100)))
def test_load_corrupt_file(model, tmp_path, kind):
    data = _saved_bytes(model, tmp_path)
    path = tmp_path / f"bad-{kind}.sscrf"
    path.write_bytes(_corruptions(data)[kind])
    with pytest.raises(SscrfError) as info:
        CRF.load(path)
    assert isinstance(info.value, ValueError)
    assert str(path) in str(info.value)


def test_load_missing_file(tmp_path):
    path = tmp_path / "missing.sscrf"
    with pytest.raises(SscrfError, match="missing.sscrf"):
        CRF.load(path)


def test_load_other_sscrf_file(tmp_path):
    # A valid sscrf container that is not a CRF model.
    path = tmp_path / "other.sscrf"
    sscrf.serialization.save(path, {"kind": "something else"}, {"a": np.zeros(3)})
    with pytest.raises(SscrfError, match="other.sscrf"):
        CRF.load(path)


# ---------------------------------------------------------------------------
# Threads
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("n_threads", [0, -1, 1.5, True, "2"])
def test_bad_thread_counts_fail_at_fit(data, n_threads):
    with pytest.raises(SscrfError, match="n_threads"):
        CRF(n_threads=n_threads, verbose=False, max_iterations=3).fit(*data)


def test_more_threads_than_cores_gives_same_bits(data):
    X, y = data
    one = fit(X, y, n_threads=1, max_iterations=20)
    many = fit(X, y, n_threads=max(8, 2 * (os.cpu_count() or 1)), max_iterations=20)
    assert np.array_equal(one.coef_, many.coef_)
    assert one.training_["history"] == many.training_["history"]
    sentences = held_out_sentences()
    assert one.predict(sentences) == many.predict(sentences)
    assert one.predict_marginals(sentences) == many.predict_marginals(sentences)
    default = fit(X, y, n_threads=None, max_iterations=20)
    assert np.array_equal(one.coef_, default.coef_)


# ---------------------------------------------------------------------------
# Bad and edge input
# ---------------------------------------------------------------------------


def test_empty_training_sentence_is_named(data):
    X, y = data
    X = [X[0], [], X[1]]
    y = [y[0], [], y[1]]
    with pytest.raises(SscrfError, match=r"sentence 1\b.*empty"):
        fit(X, y)


def test_empty_training_data():
    with pytest.raises(SscrfError, match="empty"):
        fit([], [])


def test_mismatched_lengths(data):
    X, y = data
    with pytest.raises(SscrfError, match=r"X has 3 sentences but y has 2"):
        fit(X[:3], y[:2])
    y_bad = [list(labels) for labels in y[:3]]
    y_bad[2] = y_bad[2][:-1]
    with pytest.raises(SscrfError, match=r"sentence 2: \d+ tokens but \d+ labels"):
        fit(X[:3], y_bad)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_feature_value(data, model, value):
    X, y = data
    X = [list(s) for s in X[:4]]
    X[3] = [dict(tok) for tok in X[3]]
    X[3][1]["bad_feature"] = value
    with pytest.raises(SscrfError, match=r"sentence 3, token 1.*bad_feature"):
        fit(X, y[:4])
    with pytest.raises(SscrfError, match=r"bad_feature"):
        model.predict([X[3]])


def test_non_string_label(data):
    X, y = data
    y = [list(labels) for labels in y]
    y[1][0] = 3
    with pytest.raises(SscrfError, match=r"sentence 1, token 0"):
        fit(X, y)


def test_empty_sentences_at_prediction(model):
    assert model.predict([]) == []
    assert model.predict([[]]) == [[]]
    assert model.predict_single([]) == []
    s = sentence_features(["the", "dog"])
    assert model.predict([[], s, []]) == [[], model.predict_single(s), []]
    assert model.predict_marginals([[]]) == [[]]
    np.testing.assert_array_equal(model.sequence_log_probability([[]]), [0.0])
    np.testing.assert_array_equal(model.sequence_log_probability([[]], [[]]), [0.0])


def test_length_one_sentences_train_and_predict():
    rng = np.random.default_rng(5)
    words = {"NOUN": ["dog", "cat"], "VERB": ["runs", "eats"]}
    X, y = [], []
    for _ in range(12):
        label = str(rng.choice(sorted(words)))
        X.append(sentence_features([str(rng.choice(words[label]))]))
        y.append([label])
    m = fit(X, y)
    assert m.predict([sentence_features(["dog"]), sentence_features(["eats"])]) == \
        [["NOUN"], ["VERB"]]
    s = sentence_features(["cat"])
    bf, _ = brute_force_of(m, s)
    np.testing.assert_allclose([m.predict_marginals([s])[0][0][c] for c in m.classes_],
                               bf.node[0], rtol=1e-9)
    assert m.sequence_log_probability([s], [["VERB"]])[0] == \
        pytest.approx(brute_log_p(m, s, ["VERB"]), rel=1e-9)


def test_label_outside_classes_is_named(model):
    s = sentence_features(["the", "dog"])
    with pytest.raises(SscrfError, match=r"'ZZZ'"):
        model.sequence_log_probability([s], [["DET", "ZZZ"]])


def test_labels_argument(data):
    X, y = data
    with pytest.raises(SscrfError, match=r"'VERB'"):
        fit(X, y, labels=["DET", "NOUN"])
    # an extra label that never occurs is valid and keeps the given order
    m = fit(X, y, labels=["VERB", "NOUN", "EXTRA", "DET"], max_iterations=10)
    assert m.classes_ == ["VERB", "NOUN", "EXTRA", "DET"]
    rows = m.predict_marginals([sentence_features(["a", "cat"])])[0]
    assert all(list(r) == m.classes_ for r in rows)
    s = sentence_features(["the", "dog", "runs"])
    assert m.sequence_log_probability([s], [["DET", "NOUN", "VERB"]])[0] == \
        pytest.approx(brute_log_p(m, s, ["DET", "NOUN", "VERB"]), rel=1e-9)
    with pytest.raises(SscrfError, match="distinct"):
        fit(X, y, labels=["DET", "DET", "NOUN", "VERB"])


# ---------------------------------------------------------------------------
# Column tokens and templates
# ---------------------------------------------------------------------------


TEMPLATES = ["# a comment line", "U00:%x[0,0]", "U01:%x[0,1]", "U02:%x[-1,0]", "B"]


def template_attributes(sentence):
    """Attributes of TEMPLATES, computed here: CRF++ pad _B-1 before the start."""
    out = []
    for t, tok in enumerate(sentence):
        prev = sentence[t - 1][0] if t else "_B-1"
        out.append([(f"U00:{tok[0]}", 1.0), (f"U01:{tok[1]}", 1.0), (f"U02:{prev}", 1.0)])
    return out


def column_data():
    X = [
        [["#", "#"], ["12", "CD"], ["items", "NNS"]],
        [["price", "NN"], ["#", "#"], ["3", "CD"]],
        [["#", "#"]],
        [["the", "DT"], ["#", "#"], ["#", "#"], ["5", "CD"]],
        [["items", "NNS"], ["cost", "VBP"], ["#", "#"], ["7", "CD"]],
    ]
    y = [["SYM", "NUM", "N"], ["N", "SYM", "NUM"], ["SYM"], ["D", "SYM", "SYM", "NUM"],
         ["N", "V", "SYM", "NUM"]]
    return X, y


def test_column_tokens_with_hash(tmp_path):
    X, y = column_data()
    m = fit(X, y, templates=TEMPLATES, max_iterations=80)
    attrs = set(m.extractor_.attributes_)
    assert {"U00:#", "U01:#", "U02:#", "U02:_B-1"} <= attrs
    assert attrs == {a for s in X for tok in template_attributes(s) for a, _ in tok}
    test = [["#", "#"], ["9", "CD"]]
    assert m.predict_single(test) == ["SYM", "NUM"]
    got = m.sequence_log_probability([test], [["SYM", "NUM"]])[0]
    assert got == pytest.approx(
        brute_log_p(m, test, ["SYM", "NUM"], template_attributes(test)), rel=1e-9)
    path = tmp_path / "columns.sscrf"
    m.save(path)
    loaded = CRF.load(path)
    assert loaded.predict(X) == m.predict(X)
    assert np.array_equal(loaded.coef_, m.coef_)


def test_default_templates_train():
    X, y = column_data()
    m = fit(X, y, templates="default", max_iterations=20)
    assert m.score(X, y) > 0.8


# ---------------------------------------------------------------------------
# Progress and interruption
# ---------------------------------------------------------------------------


def test_verbose_writes_progress_to_stderr(data, capsys):
    fit(*data, verbose=True, max_iterations=12)
    captured = capsys.readouterr()
    assert "iter" in captured.err and "loss" in captured.err
    assert "done" in captured.err
    assert captured.out == ""


def test_quiet_writes_nothing(data, capsys):
    fit(*data, verbose=False, max_iterations=12)
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""


@pytest.mark.parametrize("c1", [0.0, 0.5])
def test_progress_shows_each_term_once_there_are_several(data, capsys, c1):
    X, y = data
    CRF(c1=c1, c2=0.01, max_iterations=3, entropy_weight=0.5, verbose=True).fit(
        X[:10], y[:10], X_unlabeled=X[10:20])
    err = capsys.readouterr().err
    stage1, stage2 = err.split("stage 2/2")
    assert "(likelihood" not in stage1  # one data term: nothing to split
    lines = [line for line in stage2.splitlines() if line.startswith("iter")]
    assert lines
    for line in lines:
        loss = float(re.search(r"loss (\S+)", line).group(1))
        parts = dict((name, float(value)) for name, value in
                     re.findall(r"(likelihood|entropy|l2|l1) (\S+?)[,)]", line))
        assert set(parts) == {"likelihood", "entropy", "l2"} | ({"l1"} if c1 else set())
        assert sum(parts.values()) == pytest.approx(loss, rel=1e-3, abs=1e-3)


def test_keyboard_interrupt_keeps_a_usable_model(data):
    X, y = data
    calls = []

    def callback(iteration, loss, theta):
        calls.append(iteration)
        if iteration == 3:
            raise KeyboardInterrupt

    m = CRF(c2=0.01, max_iterations=100, verbose=False, n_threads=1)
    with pytest.raises(KeyboardInterrupt, match="after 3 iterations"):
        m.fit(X, y, callback=callback)  # re-raised once the model holds the best so far
    assert calls == [1, 2, 3]
    assert m.training_["stop_reason"] == "interrupted"
    assert np.all(np.isfinite(m.coef_)) and np.any(m.coef_)
    predicted = m.predict(X[:3])
    assert [len(p) for p in predicted] == [len(s) for s in X[:3]]
    # the best parameters so far: the loss at coef_ is the recorded one
    nll = -math.fsum(brute_log_p(m, s, labels) for s, labels in zip(X, y))
    assert m.training_["loss"] == pytest.approx(nll + 0.01 * float(m.coef_ @ m.coef_), rel=1e-10)
    assert m.training_["loss"] <= min(m.training_["history"]) + 1e-12


def test_stopping_in_the_warm_start_ends_the_fit(data):
    # Ctrl-C or the callback during the supervised first stage of a
    # semi-supervised fit stops training: the second stage does not run
    X, y = data
    for stop in ("interrupt", "callback"):
        calls = []

        def callback(iteration, loss, theta):
            calls.append(iteration)
            if iteration == 2 and stop == "interrupt":
                raise KeyboardInterrupt
            return iteration == 2

        m = CRF(c2=0.01, max_iterations=20, entropy_weight=0.5, verbose=False)
        stopped = (pytest.raises(KeyboardInterrupt) if stop == "interrupt"
                   else contextlib.nullcontext())
        with stopped:
            m.fit(X[:10], y[:10], X_unlabeled=X[10:20], callback=callback)
        assert calls == [1, 2], stop
        reason = "interrupted" if stop == "interrupt" else "stopped by callback"
        assert m.training_["stop_reason"] == reason
        assert m.training_["stages"]["supervised"]["stop_reason"] == reason
        assert m.training_["iterations"] == 2


def test_callback_iterations_count_on_across_the_stages(data):
    X, y = data
    calls = []
    m = CRF(c2=0.01, max_iterations=4, entropy_weight=0.5, verbose=False, epsilon=0.0,
            delta=0.0)
    m.fit(X[:10], y[:10], X_unlabeled=X[10:20],
          callback=lambda k, loss, theta: calls.append(k) and False)
    first = m.training_["stages"]["supervised"]["iterations"]
    assert calls == list(range(1, first + m.training_["iterations"] + 1))


def test_sklearn_crfsuite_introspection_names(model):
    x = held_out_sentences()[0]
    assert model.predict_marginals_single(x) == model.predict_marginals([x])[0]
    assert model.attributes_ == model.extractor_.attributes_
    assert model.attributes_ is not model.extractor_.attributes_  # a copy
    assert {a for a, _ in model.state_features_} <= set(model.attributes_)


def test_default_templates_need_a_column():
    with pytest.raises(SscrfError, match="sentence 0, token 0: templates='default' needs"):
        CRF(templates="default", verbose=False).fit([[[], []]], [["A", "B"]])


def test_callback_returning_true_stops(data):
    m = CRF(c2=0.01, max_iterations=100, verbose=False, n_threads=1).fit(
        *data, callback=lambda k, loss, theta: k >= 2)
    assert m.training_["iterations"] == 2
    assert m.training_["stop_reason"] == "stopped by callback"


def test_same_data_settings_and_threads_give_the_same_model_bytes(tmp_path):
    # Determinism: two independent trainings write identical files;
    # another thread count gives the same parameters bit for bit (the saved
    # n_threads setting differs, so compare the arrays there).
    X, y = make_data(5, 80)
    X_unlabeled, _ = make_data(6, 40)

    def trained(n_threads, name):
        model = CRF(max_iterations=15, n_threads=n_threads, verbose=False, entropy_weight=0.1)
        model.fit(X, y, X_unlabeled=X_unlabeled)
        path = tmp_path / name
        model.save(path)
        return model, path.read_bytes()

    first, first_bytes = trained(1, "a.sscrf")
    second, second_bytes = trained(1, "b.sscrf")
    assert first_bytes == second_bytes
    assert first.training_["seconds"] > 0  # kept in memory, not in the file
    other, _ = trained(2, "c.sscrf")
    assert other.coef_.tobytes() == first.coef_.tobytes()
    assert CRF.load(tmp_path / "c.sscrf").coef_.tobytes() == first.coef_.tobytes()
