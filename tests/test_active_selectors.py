"""sscrf.active.selectors: selectors against brute force, and quota sampling.

Every probability a selector uses is recomputed by enumerating all labelings of tiny
chains (see active_common.py).
"""

import itertools
import math

import numpy as np
import pytest

from reference import brute_force
from sscrf import CRF, SscrfError
from sscrf.active import select
from active_common import features, make_data, tiny_crf
from active_common import model  # noqa: F401 (fixtures)


def attributes(token):
    return [(f"{k}:{v}", 1.0) if isinstance(v, str) else (k, float(v)) for k, v in token.items()]


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
