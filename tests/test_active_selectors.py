"""Active learning (sscrf.active): selectors against brute force, quota sampling, the n-gram
q(x) against hand counts, Sokolovska's weighted likelihood, the pool loop and `sscrf select`.

Every probability a selector uses is recomputed here by enumerating all labelings of tiny
chains, from the trained model's own weights rebuilt into dense emissions
(``E[t, l] = Σ_a value(a, t)·state_features_[(a, l)]``), as tests/test_model.py does.
"""

import itertools
import math

import numpy as np
import pytest

from reference import brute_force
from sscrf import CRF, SscrfError
from sscrf.active import (SELECTORS, ActiveLearner, NgramModel, gold_oracle, select, simulate,
                          sokolovska_weights)
from sscrf.cli import SELECT_STRATEGIES, main
from sscrf.demo import generate_hmm_corpus
from sscrf.io import read_conll, write_conll
from sscrf.corpus import compile_corpus as _compile
from sscrf.inputs import encode_labels as _encode_labels
from sscrf.objectives import OBJECTIVES

# ---------------------------------------------------------------------------
# A tiny model on feature dicts, and brute force from its weights
# ---------------------------------------------------------------------------

WORDS = {"D": ["the", "a"], "N": ["dog", "cat", "park"], "V": ["runs", "sees", "park"]}
SHAPES = [["D", "N", "V"], ["N", "V"], ["D", "N", "V", "D", "N"], ["N", "V", "N"]]


def features(words):
    return [{"w": w, "suf": w[-1], "prev": words[i - 1] if i else "<s>", "bias": 1.0}
            for i, w in enumerate(words)]


def attributes(token):
    return [(f"{k}={v}", 1.0) if isinstance(v, str) else (k, float(v)) for k, v in token.items()]


def make_data(seed, n):
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n):
        shape = SHAPES[int(rng.integers(len(SHAPES)))]
        labels = list(shape)
        if rng.random() < 0.2:  # label noise keeps the model uncertain
            labels[int(rng.integers(len(labels)))] = str(rng.choice(sorted(WORDS)))
        X.append(features([str(rng.choice(WORDS[l])) for l in shape]))
        y.append(labels)
    return X, y


def tiny_crf(**params):
    return CRF(**{"c2": 0.5, "max_iterations": 40, "verbose": False, "n_threads": 1, **params})


@pytest.fixture(scope="module")
def model():
    return tiny_crf().fit(*make_data(0, 20))


POOL = [features(ws) for ws in (
    ["the", "dog", "runs"], ["a", "park", "sees", "the", "cat"], ["park"], ["cat", "park"],
    ["a", "zebra", "runs", "park"], ["dog", "sees", "a", "park", "park"], ["the", "the"])]


def distribution(model, sentence):
    """(labelings (K, n), probabilities (K,)) of every labeling, by enumeration."""
    S = len(model.classes_)
    w = model.state_features_
    E = np.array([[math.fsum(v * w.get((a, l), 0.0) for a, v in attributes(tok))
                   for l in model.classes_] for tok in sentence])
    bf = brute_force(E, model.transitions_, model.start_weights_, model.end_weights_)
    assert bf.labelings.shape == (S ** len(sentence), len(sentence))
    return bf.labelings, np.exp(bf.scores - bf.log_z)


def entropy(p):
    p = np.asarray(p)
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


def span_entropy(ys, p, begin, stop):
    """Entropy of the marginal over y[begin:stop], grouping the enumeration."""
    groups = {}
    for row, pr in zip(map(tuple, ys[:, begin:stop]), p):
        groups[row] = groups.get(row, 0.0) + pr
    return entropy(list(groups.values()))


def scores_by_index(model, strategy, **options):
    indices, scores = select(model, POOL, strategy, len(POOL), **options)
    assert sorted(indices.tolist()) == list(range(len(POOL)))
    assert np.all(np.diff(scores) <= 0), "best first"
    out = np.empty(len(POOL))
    out[indices] = scores
    return out


# ---------------------------------------------------------------------------
# Selectors against brute force
# ---------------------------------------------------------------------------

def test_least_confidence_and_entropies_match_brute_force(model):
    lc = scores_by_index(model, "least_confidence")
    seq = scores_by_index(model, "sequence_entropy")
    seq_norm = scores_by_index(model, "sequence_entropy", normalize=True)
    tok_sum = scores_by_index(model, "token_entropy")
    tok_mean = scores_by_index(model, "token_entropy", aggregate="mean")
    for s, sentence in enumerate(POOL):
        ys, p = distribution(model, sentence)
        n = len(sentence)
        assert lc[s] == pytest.approx(1.0 - p.max(), rel=1e-9, abs=1e-12)
        assert seq[s] == pytest.approx(entropy(p), rel=1e-9, abs=1e-12)
        assert seq_norm[s] == pytest.approx(entropy(p) / n, rel=1e-9, abs=1e-12)
        marginal_h = [span_entropy(ys, p, t, t + 1) for t in range(n)]
        assert tok_sum[s] == pytest.approx(sum(marginal_h), rel=1e-9, abs=1e-12)
        assert tok_mean[s] == pytest.approx(np.mean(marginal_h), rel=1e-9, abs=1e-12)


def test_least_confidence_keeps_its_digits_when_the_model_is_sure():
    # p(ŷ|x) ≈ 1 − 1e-9: the brute-force reference sums the other labelings' probabilities
    # (no cancellation), and −expm1(log p) must agree with it to many digits.
    X, y = make_data(1, 30)
    sharp = tiny_crf(c2=1e-4, max_iterations=200).fit(X, y)
    indices, scores = select(sharp, X[:8], "least_confidence", 8)
    for i, score in zip(indices.tolist(), scores):
        ys, p = distribution(sharp, X[i])
        others = math.fsum(np.delete(p, np.argmax(p)))
        assert score == pytest.approx(others, rel=1e-6)
    assert scores.min() < 1e-7  # the regime where 1 − p would lose digits


@pytest.mark.parametrize("width", [1, 2, 3, 6])
def test_most_uncertain_span_matches_brute_force(model, width):
    indices, scores = select(model, POOL, "most_uncertain_span", len(POOL), width=width)
    assert indices.shape == (len(POOL), 3)
    assert np.all(np.diff(scores) <= 0)
    for (s, begin, stop), score in zip(indices.tolist(), scores):
        ys, p = distribution(model, POOL[s])
        n = len(POOL[s])
        w = min(width, n)
        spans = [span_entropy(ys, p, a, a + w) for a in range(n - w + 1)]
        assert (begin, stop) == (int(np.argmax(spans)), int(np.argmax(spans)) + w)
        assert score == pytest.approx(max(spans), rel=1e-9, abs=1e-12)
    # the public per-sentence query agrees
    public = model.most_uncertain_span(POOL, width)
    for (s, begin, stop), score in zip(indices.tolist(), scores):
        assert public[s][:2] == (begin, stop)
        assert public[s][2] == pytest.approx(score, rel=1e-12, abs=1e-12)


def test_most_uncertain_span_avoids_labeled_tokens(model):
    exclude = [np.zeros(len(x), bool) for x in POOL]
    exclude[1][[1, 3]] = True  # free stretches [0,1), [2,3), [4,5)
    exclude[2][0] = True  # nothing left
    exclude[5][2] = True  # free stretches [0,2), [3,5)
    indices, scores = select(model, POOL, "most_uncertain_span", len(POOL), width=2,
                             exclude=exclude)
    chosen = {s: (b, e, h) for (s, b, e), h in zip(indices.tolist(), scores)}
    assert 2 not in chosen and len(chosen) == len(POOL) - 1
    for s, (b, e, h) in chosen.items():
        assert not exclude[s][b:e].any()
        ys, p = distribution(model, POOL[s])
        free = ~exclude[s]
        n = len(free)
        allowed = []  # spans of width 2 on free tokens, and free stretches shorter than 2
        for a, b in itertools.combinations(range(n + 1), 2):
            maximal = (a == 0 or not free[a - 1]) and (b == n or not free[b])
            if free[a:b].all() and (b - a == 2 or (b - a < 2 and maximal)):
                allowed.append(span_entropy(ys, p, a, b))
        assert h == pytest.approx(max(allowed), rel=1e-9, abs=1e-12)
    assert chosen[1][1] - chosen[1][0] == 1  # stretches of one token, offered as they are


def test_model_selectors_need_a_fitted_model():
    for name in ("least_confidence", "sequence_entropy", "token_entropy", "most_uncertain_span"):
        with pytest.raises(SscrfError, match="trained model"):
            select(CRF(), POOL, name, 2)
    with pytest.raises(SscrfError, match="unknown strategy"):
        select(None, POOL, "nope", 2)
    with pytest.raises(SscrfError, match="positive integer"):
        select(None, POOL, "random", 0)
    with pytest.raises(SscrfError, match="needs log_q"):
        select(None, POOL, "quota_sampling", 2)
    with pytest.raises(SscrfError, match="unexpected keyword"):
        select(None, POOL, "random", 2, width=3)


def test_random_selection_is_seeded_and_without_replacement():
    a, _ = select(None, POOL, "random", 5, random_state=3)
    b, _ = select(None, POOL, "random", 5, random_state=3)
    assert a.tolist() == b.tolist() and len(set(a.tolist())) == 5
    assert len(select(None, POOL, "random", 50)[0]) == len(POOL)


# ---------------------------------------------------------------------------
# Quota sampling
# ---------------------------------------------------------------------------

def test_quota_sampling_draws_one_per_group_and_covers_the_range():
    rng = np.random.default_rng(0)
    N, m = 103, 10
    log_q = rng.normal(-20.0, 5.0, size=N)
    pool = [[{"w": str(i)}] for i in range(N)]
    rank = np.empty(N, int)
    rank[np.argsort(-log_q)] = np.arange(N)  # 0 = most probable
    sizes = [len(g) for g in np.array_split(np.arange(N), m)]
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    hits = np.zeros(N, int)
    for seed in range(600):
        picks, scores = select(None, pool, "quota_sampling", m, log_q=log_q, random_state=seed)
        assert len(picks) == m
        np.testing.assert_array_equal(scores, log_q[picks])
        groups = np.searchsorted(bounds, rank[picks], side="right") - 1
        assert groups.tolist() == list(range(m))  # one per group, most probable group first
        hits[picks] += 1
    assert np.all(hits > 0)  # every sentence is drawn sometimes: the whole range is covered
    # uniform within a group: each member about 600/size times
    for g in range(m):
        members = np.flatnonzero((rank >= bounds[g]) & (rank < bounds[g + 1]))
        assert hits[members].sum() == 600
        assert np.all(np.abs(hits[members] - 600 / sizes[g]) < 5 * np.sqrt(600 / sizes[g]))


def test_quota_sampling_with_m_equal_to_pool_takes_everything():
    log_q = np.array([-3.0, -1.0, -2.0, -1.0])
    picks, scores = select(None, [[{}]] * 4, "quota_sampling", 10, log_q=log_q)
    assert picks.tolist() == [1, 3, 2, 0]  # sorted by q, ties by index
    with pytest.raises(SscrfError, match="one value per pool sentence"):
        select(None, [[{}]] * 3, "quota_sampling", 2, log_q=log_q)


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
    np.testing.assert_allclose(weighted.coef_[len(weighted.label_ids_):],
                               duplicated.coef_[len(duplicated.label_ids_):], rtol=1e-5, atol=1e-6)


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


# ---------------------------------------------------------------------------
# The pool loop
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def pool_data():
    X, y = make_data(11, 40)
    X_test, y_test = make_data(12, 20)
    return X, y, X_test, y_test


@pytest.mark.parametrize("strategy", ["random", "least_confidence", "sequence_entropy",
                                      "token_entropy", "quota_sampling"])
def test_loop_never_reoffers_taught_sentences(pool_data, strategy):
    X, y, _, _ = pool_data
    log_q = NgramModel(n=2).fit([[t["w"] for t in x] for x in X]).log_probs(
        [[t["w"] for t in x] for x in X])
    learner = ActiveLearner(tiny_crf(max_iterations=15), X, strategy, X_labeled=X[:1],
                            y_labeled=y[:1], log_q=log_q, random_state=0)
    oracle = gold_oracle(y)
    taught = set()
    previous = learner.model
    while True:
        indices, scores = learner.query(7)
        if len(indices) == 0:
            break
        assert len(scores) == len(indices) and len(set(indices.tolist())) == len(indices)
        assert not taught & set(indices.tolist())
        learner.teach(indices, oracle(indices))
        taught |= set(indices.tolist())
        assert learner.model is not previous  # retrained
        previous = learner.model
        assert learner.labeled_indices_.tolist() == sorted(taught)
        assert learner.n_sentences_ == 1 + len(taught)
        assert learner.n_tokens_ == len(y[0]) + sum(len(y[i]) for i in taught)
    assert taught == set(range(len(X)))


@pytest.mark.parametrize("partial", ["native", "fragments"])
def test_span_loop_labels_fresh_tokens_and_retires_full_sentences(pool_data, partial):
    X, y, _, _ = pool_data
    learner = ActiveLearner(tiny_crf(max_iterations=15), X, "most_uncertain_span",
                            X_labeled=X[:2], y_labeled=y[:2], width=2, partial=partial)
    assert ActiveLearner(tiny_crf(), X, "random").partial == "native"  # the default
    oracle = gold_oracle(y)
    labeled = [np.zeros(len(x), bool) for x in X]
    for _ in range(12):
        spans, _ = learner.query(5)
        if len(spans) == 0:
            break
        for i, b, e in spans.tolist():
            assert not labeled[i][b:e].any(), "a labeled token was offered again"
            assert not labeled[i].all()
            labeled[i][b:e] = True
        learner.teach(spans, oracle(spans))
        assert learner.n_tokens_ == len(y[0]) + len(y[1]) + sum(m.sum() for m in labeled)
        assert learner.n_sentences_ == 2 + sum(m.all() for m in labeled)
        assert learner.n_partial_ == sum(m.any() and not m.all() for m in labeled)
    assert learner.n_sentences_ > 2  # some sentences got covered and were retired whole
    X_train, y_train = learner.training_data()
    assert sum(l is not None for ys in y_train for l in ys) == learner.n_tokens_
    if partial == "fragments":  # partial sentences as their labeled runs
        assert sum(len(ys) for ys in y_train) == learner.n_tokens_
    else:  # partial sentences whole, None where unknown
        assert len(X_train) == learner.n_sentences_ + learner.n_partial_
        assert all(len(xs) == len(ys) for xs, ys in zip(X_train, y_train))


def test_partial_answers_fragments_and_native():
    from sscrf.active.learner import partial_examples as _partial_examples
    sentence = ["t0", "t1", "t2", "t3", "t4", "t5"]
    labels = [None, "A", "B", None, "C", None]
    assert _partial_examples(sentence, labels, "fragments") == [
        (["t1", "t2"], ["A", "B"]), (["t4"], ["C"])]
    assert _partial_examples(sentence, labels, "native") == [(sentence, labels)]


def test_native_partial_training_sees_the_whole_sentence(pool_data):
    X, y, _, _ = pool_data
    learner = ActiveLearner(tiny_crf(max_iterations=10), X, "most_uncertain_span",
                            X_labeled=X[:2], y_labeled=y[:2], width=2, partial="native")
    spans, _ = learner.query(3)
    learner.teach(spans, gold_oracle(y)(spans))
    X_train, y_train = learner.training_data()
    assert [len(x) for x in X_train[2:]] == [len(X[i]) for i in sorted(spans[:, 0].tolist())]
    assert sum(l is not None for ys in y_train[2:] for l in ys) == 2 * len(spans)


def test_teach_accepts_partial_labels_and_checks_them(pool_data):
    X, y, _, _ = pool_data
    learner = ActiveLearner(tiny_crf(max_iterations=5), X, "random", random_state=1)
    assert learner.model is None  # nothing to train on yet
    partial = [None] * len(y[3])
    partial[0] = y[3][0]
    learner.teach([3, (4, 0, 2)], [partial, y[4][:2]])
    assert learner.model is not None and learner.n_partial_ == 2 and learner.n_tokens_ == 3
    learner.teach([3], [y[3]])  # now whole
    assert learner.labeled_indices_.tolist() == [3]
    assert 3 not in learner.query(len(X))[0].tolist()
    with pytest.raises(SscrfError, match="not in the pool"):
        learner.teach([len(X)], [y[0]])
    with pytest.raises(SscrfError, match="tokens but the answer"):
        learner.teach([5], [y[5][:-1]])
    with pytest.raises(SscrfError, match="indices but"):
        learner.teach([5, 6], [y[5]])


def test_max_candidates_scores_a_random_subset_of_the_rest(pool_data):
    X, y, _, _ = pool_data
    learner = ActiveLearner(tiny_crf(max_iterations=10), X, "least_confidence",
                            X_labeled=X[:1], y_labeled=y[:1], max_candidates=5, random_state=0)
    seen = set()
    for _ in range(6):
        indices, _ = learner.query(10)
        assert len(indices) == 5 and not set(indices.tolist()) & set(learner.labeled_indices_)
        seen |= set(indices.tolist())
        learner.teach(indices[:2], gold_oracle(y)(indices[:2]))
    assert len(seen) > 10  # a fresh subset each time
    with pytest.raises(SscrfError, match="max_candidates"):
        ActiveLearner(tiny_crf(), X, "random", max_candidates=0)


def test_budgets_and_stop_rule(pool_data):
    X, y, X_test, y_test = pool_data
    learner = ActiveLearner(tiny_crf(max_iterations=10), X, "random", random_state=0)
    curve = simulate(learner, y, X_test, y_test, batch=4, max_sentences=10)
    assert [p["sentences"] for p in curve] == [4, 8, 10]
    assert all(0.0 <= p["score"] <= 1.0 for p in curve)
    learner = ActiveLearner(tiny_crf(max_iterations=10), X, "least_confidence",
                            X_labeled=X[:1], y_labeled=y[:1])
    curve = simulate(learner, y, X_test, y_test, batch=5, max_tokens=30)
    assert curve[0]["sentences"] == 1  # the seeded model is scored first
    assert all(p["tokens"] <= 30 for p in curve) and curve[-1]["tokens"] > 20
    learner = ActiveLearner(tiny_crf(max_iterations=10), X, "random", random_state=0)
    learner.run(gold_oracle(y), batch=3, stop=lambda lrn: lrn.n_sentences_ >= 5)
    assert learner.n_sentences_ == 6
    with pytest.raises(SscrfError, match="budget"):
        learner.run(gold_oracle(y), batch=3)


# ---------------------------------------------------------------------------
# sscrf select
# ---------------------------------------------------------------------------

def test_select_strategies_listed_in_cli():
    assert list(SELECT_STRATEGIES) == sorted(SELECTORS)


def test_select_command(tmp_path, capsys):
    X, y = generate_hmm_corpus(40, seed=1)
    pool, _ = generate_hmm_corpus(30, seed=2)
    write_conll(tmp_path / "train.txt", X, y)
    write_conll(tmp_path / "pool.txt", pool)
    assert main(["train", str(tmp_path / "train.txt"), "-m", str(tmp_path / "m.model"),
                 "--max-iterations", "10", "--quiet"]) == 0
    capsys.readouterr()
    model = CRF.load(tmp_path / "m.model")
    for strategy in SELECT_STRATEGIES:
        argv = ["select", "--model", str(tmp_path / "m.model"), "--pool",
                str(tmp_path / "pool.txt"), "--strategy", strategy, "-m", "5", "--seed", "0"]
        assert main(argv + ["--width", "2"]) == 0, strategy
        out = capsys.readouterr().out.splitlines()
        rows = [line.split("\t") for line in out[1:]]
        assert len(rows) == 5 and len({r[0] for r in rows}) == 5
        first_lines = read_conll(tmp_path / "pool.txt", has_labels=False).lines
        assert all(int(r[1]) == first_lines[int(r[0])] for r in rows)
        if strategy == "most_uncertain_span":
            assert out[0] == "sentence\tline\tbegin\tstop\tscore"
            assert all(int(r[3]) - int(r[2]) == 2 for r in rows)
        else:
            assert out[0] == "sentence\tline\tscore"
        if strategy == "least_confidence":
            expected, _ = select(model, pool, strategy, 5)
            assert [int(r[0]) for r in rows] == expected.tolist()
    # --per-token: the selectors' length normalisation
    for strategy, options in (("sequence_entropy", {"normalize": True}),
                              ("token_entropy", {"aggregate": "mean"})):
        assert main(["select", "--model", str(tmp_path / "m.model"), "--pool",
                     str(tmp_path / "pool.txt"), "--strategy", strategy, "-m", "4",
                     "--per-token"]) == 0
        rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()[1:]]
        expected, scores = select(model, pool, strategy, 4, **options)
        assert [int(r[0]) for r in rows] == expected.tolist()
        assert [float(r[2]) for r in rows] == pytest.approx(scores.tolist(), rel=1e-9)
    assert main(["select", "--model", str(tmp_path / "m.model"), "--pool",
                 str(tmp_path / "pool.txt"), "--strategy", "least_confidence",
                 "--per-token"]) == 2
    assert "--per-token is for" in capsys.readouterr().err
    # quota sampling without a model
    assert main(["select", "--pool", str(tmp_path / "pool.txt"), "--strategy",
                 "quota_sampling", "-m", "3", "--seed", "1"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 4
    assert main(["select", "--pool", str(tmp_path / "pool.txt"), "--strategy",
                 "least_confidence"]) == 2
    assert "needs --model" in capsys.readouterr().err
