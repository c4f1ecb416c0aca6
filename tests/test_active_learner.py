"""sscrf.active.learner: the pool loop (ActiveLearner, simulate), partial answers, budgets."""

import numpy as np
import pytest

from sscrf import SscrfError
from sscrf.active import ActiveLearner, NgramModel, gold_oracle, simulate
from active_common import make_data, tiny_crf


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
