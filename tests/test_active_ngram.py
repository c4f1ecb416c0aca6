"""sscrf.active.ngram: the n-gram q(x) against hand counts, and Sokolovska's weighted likelihood."""

import math

import numpy as np
import pytest

from sscrf import SscrfError
from sscrf.active import NgramModel, sokolovska_weights
from sscrf.corpus import compile_corpus as _compile
from sscrf.inputs import encode_labels as _encode_labels
from sscrf.objectives import OBJECTIVES
from active_common import make_data, tiny_crf
from active_common import model  # noqa: F401 (fixtures)


# ---------------------------------------------------------------------------
# The n-gram model of the inputs, against hand counts
# ---------------------------------------------------------------------------

def test_ngram_model_names_feature_dicts_as_the_problem():
    X = [[{"word": "the"}, {"word": "dog"}]]
    for call in (lambda lm: lm.fit(X), lambda lm: lm.fit(["ab"]).log_probs(X)):
        with pytest.raises(SscrfError, match=r"sentence 0, token 0: .*not feature dicts"):
            call(NgramModel(n=2))
    words = [[token["word"] for token in sentence] for sentence in X]
    assert NgramModel(n=2).fit(words).log_probs(words).shape == (1,)


def test_ngram_log_prob_of_a_corpus_points_to_log_probs():
    words = [["the", "dog"], ["a", "cat"]]
    columns = [[["the", "DT"], ["dog", "NN"]], [["a", "DT"], ["cat", "NN"]]]
    for corpus in (words, columns):
        lm = NgramModel(n=2).fit(corpus)
        with pytest.raises(SscrfError, match=r"log_prob takes one sentence.*use log_probs"):
            lm.log_prob(corpus)
        assert lm.log_probs(corpus)[1] == lm.log_prob(corpus[1])


def test_ngram_bigram_probabilities_match_hand_counts():
    # Corpus "ab", "abb", "b" with start/end symbols: predicted tokens
    # a b </s> | a b b </s> | b </s>  → N = 9, c(a)=2 c(b)=4 c(</s>)=3, V = 3 types.
    lm = NgramModel(n=2).fit(["ab", "abb", "b"])
    p0 = 1 / 4  # uniform over a, b, </s>, <unk>
    uni = {w: (c + 3 * p0) / (9 + 3) for w, c in [("a", 2), ("b", 4), ("</s>", 3), ("?", 0)]}
    # histories: <s> → a:2 b:1 (c=3, 2 types); a → b:2 (c=2, 1 type);
    #            b → </s>:3 b:1 (c=4, 2 types)
    p_a_bos = (2 + 2 * uni["a"]) / (3 + 2)
    p_b_a = (2 + 1 * uni["b"]) / (2 + 1)
    p_end_b = (3 + 2 * uni["</s>"]) / (4 + 2)
    p_b_b = (1 + 2 * uni["b"]) / (4 + 2)
    assert lm.prob("a") == pytest.approx(p_a_bos, rel=1e-12)
    assert lm.prob("b", ["a"]) == pytest.approx(p_b_a, rel=1e-12)
    assert lm.log_prob("ab") == pytest.approx(math.log(p_a_bos * p_b_a * p_end_b), rel=1e-12)
    assert lm.log_prob("abb") == pytest.approx(
        math.log(p_a_bos * p_b_a * p_b_b * p_end_b), rel=1e-12)
    # unseen symbol: <unk> at every level; its history is unseen, so back to the unigrams
    p_unk_bos = (0 + 2 * uni["?"]) / (3 + 2)
    assert lm.log_prob("z") == pytest.approx(math.log(p_unk_bos * uni["</s>"]), rel=1e-12)
    # a seen symbol in an unseen context: p(a | a) interpolates with zero count
    assert lm.prob("a", ["a"]) == pytest.approx((0 + 1 * uni["a"]) / 3, rel=1e-12)
    np.testing.assert_allclose(lm.log_probs(["ab", "z"]), [lm.log_prob("ab"), lm.log_prob("z")])


def test_ngram_unsmoothed_limit_and_without_boundaries():
    # n = 1 without boundaries: (c(w) + V p0)/(N + V); q("aab") = p(a)² p(b).
    lm = NgramModel(n=1, boundaries=False).fit(["aab", "a"])
    pa, pb = (3 + 2 / 3) / 6, (1 + 2 / 3) / 6
    assert lm.log_prob("aab") == pytest.approx(math.log(pa * pa * pb), rel=1e-12)


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_ngram_probabilities_sum_to_one(n):
    words = ["abc", "abd", "bcd", "aab", "dcba", "c"]
    lm = NgramModel(n=n).fit(words)
    symbols = ["a", "b", "c", "d", "unseen"]  # "unseen" stands for <unk>
    from sscrf.active import EOS
    for history in [[], ["a"], ["a", "b"], ["x", "a", "b"], ["d", "c", "b"], ["q", "q", "q"]]:
        total = sum(lm.prob(w, history) for w in symbols) + lm.prob(EOS, history)
        assert total == pytest.approx(1.0, abs=1e-12)


def test_ngram_several_columns_multiply():
    seqs = [[("the", "DT"), ("dog", "NN")], [("a", "DT"), ("cat", "NN"), ("runs", "VBZ")]]
    lm = NgramModel(n=3).fit(seqs)
    words = NgramModel(n=3).fit([[w for w, _ in s] for s in seqs])
    tags = NgramModel(n=3).fit([[t for _, t in s] for s in seqs])
    x = [("the", "NN"), ("cat", "DT")]
    assert lm.n_columns_ == 2
    assert lm.log_prob(x) == pytest.approx(
        words.log_prob([w for w, _ in x]) + tags.log_prob([t for _, t in x]), rel=1e-12)
    only_tags = NgramModel(n=3, columns=[1]).fit(seqs)
    assert only_tags.log_prob(x) == pytest.approx(tags.log_prob(["NN", "DT"]), rel=1e-12)


# ---------------------------------------------------------------------------
# Weighted likelihood (Sokolovska eq. 2 / 17)
# ---------------------------------------------------------------------------

def test_sokolovska_weights_by_hand():
    X = [[{"w": "a"}], [{"w": "b"}], [{"w": "a"}], [{"w": "c"}, {"w": "a"}]]
    q = np.array([0.2, 0.1, 0.2, 0.05])
    w = sokolovska_weights(X, np.log(q))
    raw = np.array([0.2 / 2, 0.1 / 1, 0.2 / 2, 0.05 / 1])
    np.testing.assert_allclose(w, raw / raw.mean(), rtol=1e-12)
    assert w.mean() == pytest.approx(1.0)
    with pytest.raises(SscrfError, match="one value per sentence"):
        sokolovska_weights(X, np.log(q[:3]))
    # vector values (word representations): equal arrays make equal sentences
    v = np.array([0.5, -1.0])
    X_vec = [[{"w": "a", "v": v}], [{"w": "a", "v": v.copy()}], [{"w": "a", "v": -v}]]
    w = sokolovska_weights(X_vec, np.log(np.full(3, 0.1)))
    raw = np.array([0.1 / 2, 0.1 / 2, 0.1])
    np.testing.assert_allclose(w, raw / raw.mean(), rtol=1e-12)


def test_sample_weight_two_equals_a_duplicated_sentence():
    X, y = make_data(5, 8)
    w = np.array([2.0, 1, 1, 3, 1, 1, 1, 0.0])
    weighted = tiny_crf(max_iterations=200, epsilon=1e-9, delta=1e-12).fit(X, y, sample_weight=w)
    Xd, yd = [], []
    for x, ys, k in zip(X, y, w.astype(int)):
        Xd += [x] * k
        yd += [ys] * k
    # the zero-weight sentence still brings its attributes into the vocabulary
    Xd.append(X[-1])
    yd.append(y[-1])
    dup_w = np.r_[np.ones(len(Xd) - 1), 0.0]
    duplicated = tiny_crf(max_iterations=200, epsilon=1e-9, delta=1e-12).fit(
        Xd, yd, sample_weight=dup_w)
    # ids go by frequency, which duplication changes: compare weights by name
    assert sorted(weighted.extractor_.attributes_) == sorted(duplicated.extractor_.attributes_)
    a, b = weighted.state_features_, duplicated.state_features_
    assert a.keys() == b.keys()
    np.testing.assert_allclose([a[k] for k in a], [b[k] for k in a], rtol=1e-5, atol=1e-6)
    # transitions, start and end weights
    for got, want in zip(weighted.layout_.split(weighted.coef_)[1:],
                         duplicated.layout_.split(duplicated.coef_)[1:]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_weighted_likelihood_gradient_by_finite_differences(model):
    # value through the public API (sequence_log_probability at perturbed weights), gradient
    # through the registered likelihood term with Sokolovska's weights on the corpus
    X, y = make_data(7, 6)
    log_q = NgramModel(n=2).fit([[t["w"] for t in x] for x in X]).log_probs(
        [[t["w"] for t in x] for x in X])
    w = sokolovska_weights(X, log_q)
    label_index = {l: i for i, l in enumerate(model.classes_)}
    corpus = _compile(model.extractor_.transform(X), labels=_encode_labels(y, label_index),
                      weights=w)
    term = OBJECTIVES["likelihood"](corpus, model.layout_.core, 1)
    theta = model.coef_ + np.random.default_rng(0).normal(0, 0.3, size=len(model.coef_))
    _, grad = term.value_and_gradient(theta)
    probe = tiny_crf()
    probe.__dict__.update({k: v for k, v in model.__dict__.items() if k != "coef_"})

    def loss(th):
        probe.coef_ = th
        return -float(np.dot(w, probe.sequence_log_probability(X, y)))

    assert term.value_and_gradient(theta)[0] == pytest.approx(loss(theta), rel=1e-10)
    h = 1e-5
    fd = np.array([(loss(theta + h * e) - loss(theta - h * e)) / (2 * h)
                   for e in np.eye(len(theta))])
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-6)
