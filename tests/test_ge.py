"""Generalized expectation (GE) criteria: the ``ge`` term, constraint sources, fit and CLI.

References are computed independently of the code under test:

- model expectations from brute-force enumeration of every labeling of tiny
  chains (``reference.brute_force``), with the emission matrix built in numpy
  from the flat parameter vector; the KL / L2 penalty from those marginals;
- gradients by central finite differences of that brute-force value;
- training progress from the model's own node marginals
  (``predict_marginals_array``) averaged by hand over the tokens where an
  attribute is present.
"""

import math
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sscrf
from reference import brute_force, unpack
from sscrf import _core
from sscrf import constraints as C
from sscrf.cli import main
from sscrf.demo import generate_hmm_corpus
from sscrf.errors import SscrfError
from sscrf.io import write_conll
from sscrf.layout import ParameterLayout
from sscrf.features import Features
from sscrf.objectives import OBJECTIVES, Entropy, EntropyAndGE
from sscrf.proportions import proportion_term

SMOOTH = OBJECTIVES["ge"].DEFAULT_SMOOTHING


# ---------------------------------------------------------------------------
# Tiny corpora and the brute-force penalty
# ---------------------------------------------------------------------------


class Tiny:
    """A random CSR corpus with a dense or sparse layout, and the pieces to score it by hand."""

    def __init__(self, seed, lengths, A=6, S=3, dense=True, p_fire=0.5):
        rng = np.random.default_rng(seed)
        self.S, self.A, self.lengths = S, A, list(lengths)
        indptr, indices, values = [0], [], []
        for n in self.lengths:
            for _ in range(n):
                present = np.flatnonzero(rng.random(A) < p_fire)
                if len(present) == 0:
                    present = np.array([rng.integers(A)])
                indices += present.tolist()
                # Values other than 1 (and one 0) score emissions; GE firing ignores them.
                vals = rng.normal(size=len(present))
                vals[rng.random(len(present)) < 0.1] = 0.0
                values += vals.tolist()
                indptr.append(len(indices))
        self.indptr = np.array(indptr, dtype=np.int64)
        self.indices = np.array(indices, dtype=np.int32)
        self.values = np.array(values, dtype=np.float64)
        self.offsets = np.cumsum([0] + self.lengths).astype(np.int64)
        # 4096-token chunks: the larger corpora below span several of them
        self.corpus = _core.Corpus(self.indptr, self.indices, self.values, self.offsets, A,
                                   None, None, None, chunk_tokens=4096)
        if dense:
            every = ParameterLayout.every_pair(A, S)
            row_ptr, label_ids = every.row_ptr, every.label_ids
        else:  # a sparse layout: each attribute scores a random non-empty label subset
            rows, ids = [0], []
            for _ in range(A):
                k = rng.permutation(S)[: rng.integers(1, S + 1)]
                ids += sorted(k.tolist())
                rows.append(len(ids))
            row_ptr, label_ids = np.array(rows, np.int64), np.array(ids, np.int32)
        self.row_ptr, self.label_ids = row_ptr, label_ids
        self.layout = _core.Layout(row_ptr, label_ids, S)
        self.n_params = self.layout.n_parameters

    def unpack(self, theta):
        return unpack(theta, self.row_ptr, self.label_ids, self.A, self.S)

    def node_marginals(self, theta):
        """(n_tokens, S) by enumeration, sentence by sentence."""
        W, T, start, end = self.unpack(theta)
        out = []
        for s in range(len(self.lengths)):
            E = np.zeros((self.lengths[s], self.S))
            for i, t in enumerate(range(self.offsets[s], self.offsets[s + 1])):
                for k in range(self.indptr[t], self.indptr[t + 1]):
                    E[i] += self.values[k] * W[self.indices[k]]
            out.append(brute_force(E, T, start, end).node)
        return np.concatenate(out)

    def fires(self, attribute):
        """Bool (n_tokens,): the attribute is stored at the token (any value)."""
        f = np.zeros(len(self.indptr) - 1, dtype=bool)
        for t in range(len(f)):
            f[t] = attribute in self.indices[self.indptr[t]:self.indptr[t + 1]]
        return f


def brute_penalty(tiny, theta, attributes, targets, penalty, smoothing=SMOOTH):
    """λ = 1 GE value from enumerated marginals, smoothing as documented in objectives.GE."""
    node = tiny.node_marginals(theta)
    total = 0.0
    S = tiny.S
    for attribute, target in zip(attributes, targets):
        f = tiny.fires(attribute)
        raw = node[f].sum(axis=0) / f.sum()
        if penalty == "l2":
            total += math.fsum((raw - target) ** 2)
        else:
            p_hat = (raw + smoothing) / (1 + S * smoothing)
            total += math.fsum(p * math.log(p / q) for p, q in zip(target, p_hat) if p > 0)
    return total


def constraint_map(A, attributes):
    cmap = np.full(A, -1, dtype=np.int64)
    cmap[list(attributes)] = np.arange(len(attributes))
    return cmap


TARGETS = np.array([[0.7, 0.3, 0.0],    # a zero target
                    [0.1, 0.1, 0.8],
                    [1.0, 0.0, 0.0],    # one-hot
                    [1 / 3, 1 / 3, 1 / 3]])
ATTRS = [0, 2, 3, 5]


@pytest.mark.parametrize("penalty", ["kl", "l2"])
@pytest.mark.parametrize("dense", [True, False])
@pytest.mark.parametrize("seed", [0, 1])
def test_value_and_gradient_match_brute_force(penalty, dense, seed):
    tiny = Tiny(seed, [3, 1, 4, 2, 5], dense=dense, p_fire=0.6)
    for a in ATTRS:
        assert tiny.fires(a).any()
    # several constraints fire at one position
    multi = sum(tiny.fires(a).astype(int) for a in ATTRS)
    assert multi.max() >= 3
    weight = 0.7
    term = OBJECTIVES["ge"](tiny.corpus, tiny.layout, 2, weight=weight,
                            constraint_of_attribute=constraint_map(tiny.A, ATTRS),
                            targets=TARGETS, penalty=penalty)
    rng = np.random.default_rng(100 + seed)
    theta = rng.normal(scale=1.5, size=tiny.n_params)
    value, grad = term.value_and_gradient(theta)
    expected = weight * brute_penalty(tiny, theta, ATTRS, TARGETS, penalty)
    assert value == pytest.approx(expected, rel=1e-10, abs=1e-12)
    h = 1e-5
    fd = np.empty(tiny.n_params)
    for k in range(tiny.n_params):
        e = np.zeros(tiny.n_params)
        e[k] = h
        fd[k] = weight * (brute_penalty(tiny, theta + e, ATTRS, TARGETS, penalty)
                          - brute_penalty(tiny, theta - e, ATTRS, TARGETS, penalty)) / (2 * h)
    assert np.max(np.abs(grad - fd)) <= 1e-7 * max(1.0, np.max(np.abs(fd)))
    # counts are the numbers of firing positions
    assert term.counts.tolist() == [int(tiny.fires(a).sum()) for a in ATTRS]


def test_smoothing_is_negligible_for_the_plain_kl():
    """With a tiny δ, the smoothed KL is the textbook KL of enumerated marginals."""
    tiny = Tiny(3, [2, 3, 4], p_fire=0.5)
    attrs = [a for a in range(tiny.A) if tiny.fires(a).any()][:3]
    targets = TARGETS[:len(attrs)]
    term = OBJECTIVES["ge"](tiny.corpus, tiny.layout, 1,
                            constraint_of_attribute=constraint_map(tiny.A, attrs),
                            targets=targets, smoothing=1e-14)
    theta = np.random.default_rng(5).normal(size=tiny.n_params)
    node = tiny.node_marginals(theta)
    plain = 0.0
    for a, target in zip(attrs, targets):
        f = tiny.fires(a)
        q = node[f].mean(axis=0)
        plain += sum(p * math.log(p / qq) for p, qq in zip(target, q) if p > 0)
    assert term.value_and_gradient(theta)[0] == pytest.approx(plain, rel=1e-9)
    assert term.divergences(theta).sum() == pytest.approx(plain, rel=1e-9)


@pytest.mark.parametrize("penalty", ["kl", "l2"])
def test_peaked_models_and_zero_targets_stay_finite(penalty):
    tiny = Tiny(7, [3, 2, 4, 1], p_fire=0.6)
    attrs = [a for a in range(tiny.A) if tiny.fires(a).any()][:3]
    targets = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [0.5, 0.5, 0.0]])
    term = OBJECTIVES["ge"](tiny.corpus, tiny.layout, 1,
                            constraint_of_attribute=constraint_map(tiny.A, attrs),
                            targets=targets, penalty=penalty)
    S = tiny.S
    for scale in (0.0, 1e2, 1e3):
        # start and transitions force label 0 everywhere: the model gives ~0 (underflow
        # at 1e3) to the labels the targets want; emissions add random noise
        theta = np.random.default_rng(1).normal(size=tiny.n_params)
        _, T, start, _ = ParameterLayout(tiny.row_ptr, tiny.label_ids, S).split(theta)
        T[:] = scale * np.eye(S)
        start[:] = [scale, 0, 0]
        value, grad = term.value_and_gradient(theta)
        assert math.isfinite(value) and np.all(np.isfinite(grad))
        if penalty == "kl":
            # bounded by log((1 + Sδ)/δ) per constraint
            assert value <= len(attrs) * math.log((1 + S * SMOOTH) / SMOOTH) + 1e-9
            if scale >= 1e2:
                assert value > 10  # and really large: the model is far from the targets
        p_hat = term.expectations(theta)
        assert np.all(np.isfinite(p_hat)) and np.all(p_hat >= 0)


def test_identical_bits_for_any_thread_count():
    info = sscrf.build_info()
    assert info["openmp"] is True, info  # a serial build would pass trivially
    rng = np.random.default_rng(11)
    lengths = rng.integers(1, 12, size=2500).tolist()  # ≈ 15k tokens: several 4096-token chunks
    assert sum(lengths) > 3 * 4096
    tiny = Tiny(11, lengths, A=40, S=5, p_fire=0.15)
    assert tiny.corpus.n_chunks >= 3
    attrs = list(range(0, 40, 3))
    targets = rng.dirichlet(np.ones(5), size=len(attrs))
    targets[0] = [0.5, 0.5, 0, 0, 0]
    theta = rng.normal(size=tiny.n_params)
    for penalty in ("kl", "l2"):
        results = []
        for n in (1, 2, 4):
            term = OBJECTIVES["ge"](tiny.corpus, tiny.layout, n, weight=1.3,
                                    constraint_of_attribute=constraint_map(tiny.A, attrs),
                                    targets=targets, penalty=penalty)
            value, grad = term.value_and_gradient(theta)
            results.append((value, grad.tobytes()))
        assert results[0] == results[1] == results[2]


@pytest.mark.parametrize("dense", [True, False])
def test_kept_emissions_give_the_bits_of_rescoring(dense, monkeypatch):
    # Pass 2 reusing pass 1's emissions must give the bits of scoring again,
    # over several chunks, with sequences where nothing fires (never scored),
    # after an evaluation at another theta has filled the kept array.
    rng = np.random.default_rng(5)
    lengths = rng.integers(1, 8, size=1800).tolist()
    tiny = Tiny(5, lengths, A=40, S=5, dense=dense, p_fire=0.1)
    assert tiny.corpus.n_chunks >= 2
    attrs = list(range(0, 40, 4))
    fires = np.isin(tiny.indices, attrs)
    token_fires = np.add.reduceat(fires, tiny.indptr[:-1]) > 0
    sequence_fires = np.array([token_fires[a:b].any()
                               for a, b in zip(tiny.offsets[:-1], tiny.offsets[1:])])
    assert 0 < (~sequence_fires).sum() < len(lengths)
    targets = rng.dirichlet(np.ones(5), size=len(attrs))
    cmap = constraint_map(tiny.A, attrs)
    first, theta = rng.normal(size=tiny.n_params), rng.normal(size=tiny.n_params)
    kept = {}
    for n in (1, 3):
        term = OBJECTIVES["ge"](tiny.corpus, tiny.layout, n, constraint_of_attribute=cmap,
                                targets=targets)
        term.value_and_gradient(first)
        assert term._emissions is not None
        value, grad = term.value_and_gradient(theta)
        kept[n] = (value, grad.tobytes())
    assert kept[1] == kept[3]
    monkeypatch.setattr(OBJECTIVES["ge"], "EMISSION_CACHE_BYTES", 0)
    term = OBJECTIVES["ge"](tiny.corpus, tiny.layout, 2, constraint_of_attribute=cmap,
                            targets=targets)
    value, grad = term.value_and_gradient(theta)
    assert term._emissions is None
    assert (value, grad.tobytes()) == kept[1]


@pytest.mark.parametrize("dense", [True, False])
@pytest.mark.parametrize("proportions", [False, True])
def test_entropy_joined_to_ge_is_the_two_terms_summed(dense, proportions, monkeypatch):
    # The joined term against the Entropy and GE terms evaluated apart (each checked
    # against enumeration elsewhere), over several chunks; with constraints, some
    # sequences have no firing (their rows are scored, not read from pass 1); with
    # label proportions every token fires and pass 1's rows are read.
    rng = np.random.default_rng(8)
    lengths = rng.integers(0, 8, size=1500).tolist()  # empty sentences too
    tiny = Tiny(8, lengths, A=30, S=4, dense=dense, p_fire=0.12)
    assert tiny.corpus.n_chunks >= 2
    gamma, lam = 0.7, 1.9
    theta = rng.normal(size=tiny.n_params)
    attrs = list(range(0, 30, 7))
    targets = rng.dirichlet(np.ones(4), size=len(attrs))
    results = {}
    for cached in (True, False):
        if not cached:
            monkeypatch.setattr(OBJECTIVES["ge"], "EMISSION_CACHE_BYTES", 0)
        for n in (1, 3):
            if proportions:
                features = Features(tiny.indptr, tiny.indices, tiny.values, tiny.offsets, tiny.A)
                ge = proportion_term(features, tiny.layout, n, lam, np.full((1, 4), 0.25))
            else:
                ge = OBJECTIVES["ge"](tiny.corpus, tiny.layout, n, weight=lam,
                                      constraint_of_attribute=constraint_map(tiny.A, attrs),
                                      targets=targets)
            entropy = Entropy(ge.corpus, tiny.layout, n, weight=gamma)
            joined = EntropyAndGE(ge, gamma)
            assert joined.name == ("entropy+label_proportions" if proportions else "entropy+ge")
            value, grad = joined.value_and_gradient(theta)
            results[cached, n] = (value, grad.tobytes())
            v1, g1 = entropy.value_and_gradient(theta)
            v2, g2 = ge.value_and_gradient(theta)
            assert value == pytest.approx(v1 + v2, rel=1e-12)
            np.testing.assert_allclose(grad, g1 + g2, rtol=0,
                                       atol=1e-12 * np.max(np.abs(g1 + g2)))
    assert results[True, 1] == results[True, 3] == results[False, 1] == results[False, 3]


@pytest.mark.parametrize("settings, announced", [
    (dict(proportion_weight=1.0, ge_weight=0.5), "ge, entropy+label_proportions terms"),
    (dict(ge_weight=0.5), "entropy+ge terms"),
    (dict(ge_weight=0.5, entropy_method="jiao"), "entropy, ge terms"),
    (dict(), "entropy term"),
])
def test_training_joins_the_fast_entropy_to_one_ge_term(hmm, settings, announced, capsys):
    constraints = hmm["constraints"] if "ge_weight" in settings else None
    sscrf.CRF(max_iterations=2, entropy_weight=0.1, verbose=True, **settings).fit(
        hmm["X"][:50], hmm["y"][:50], X_unlabeled=hmm["Xt"][:50], constraints=constraints)
    assert f"stage 2/2: adding the {announced}" in capsys.readouterr().err


def test_one_term_evaluated_from_two_threads_at_once():
    # Both evaluations are held between their two passes (at a barrier in the
    # Python step between them) so that each has scored the corpus before
    # either reads its scores back: sharing the kept emissions would give the
    # first the second's theta.
    rng = np.random.default_rng(8)
    tiny = Tiny(8, rng.integers(1, 8, size=300).tolist(), A=40, S=5, p_fire=0.2)
    attrs = list(range(0, 40, 4))
    term = OBJECTIVES["ge"](tiny.corpus, tiny.layout, 2, constraint_of_attribute=constraint_map(
        tiny.A, attrs), targets=rng.dirichlet(np.ones(5), size=len(attrs)))
    thetas = [rng.normal(size=tiny.n_params) for _ in range(2)]
    want = [(v, g.tobytes()) for v, g in map(term.value_and_gradient, thetas)]
    meet = threading.Barrier(2, timeout=60)
    smoothed = term._smoothed
    term._smoothed = lambda sums: (meet.wait(), smoothed(sums))[1]
    with ThreadPoolExecutor(2) as pool:
        got = [(v, g.tobytes()) for v, g in pool.map(term.value_and_gradient, thetas)]
    assert got == want


def test_ge_passes_reject_bad_emissions_and_weights():
    tiny = Tiny(3, [3, 2, 4], p_fire=0.5)
    attrs = [0, 2]
    firings = _core.ConstraintFirings(tiny.corpus, constraint_map(tiny.A, attrs), len(attrs))
    theta = np.zeros(tiny.n_params)
    N, S = tiny.corpus.n_tokens, tiny.S
    good = np.zeros((len(attrs), S))
    read_only = np.zeros((N, S))
    read_only.flags.writeable = False
    for bad in (np.zeros((N + 1, S)), np.zeros((N, S), dtype=np.float32), read_only,
                np.zeros((S, N)).T, [[0.0] * S] * N):
        with pytest.raises(ValueError, match="emissions must be"):
            _core.ge_expectations(tiny.corpus, tiny.layout, theta, 1, firings, emissions=bad)
        if bad is not read_only:  # pass 2 only reads the rows
            with pytest.raises(ValueError, match="emissions must be"):
                _core.ge_gradient(tiny.corpus, tiny.layout, theta, 1, firings, good,
                                  emissions=bad)
    with pytest.raises(ValueError, match="score_weights"):
        _core.ge_gradient(tiny.corpus, tiny.layout, theta, 1, firings,
                          np.zeros((len(attrs) + 1, S)))
    with pytest.raises(ValueError, match="score_weights"):
        _core.ge_gradient(tiny.corpus, tiny.layout, theta, 1, firings,
                          np.full((len(attrs), S), np.nan))


def test_ge_passes_sharing_emissions_match_rescoring():
    # pass 2 reading pass 1's rows gives the bits of pass 2 scoring them anew
    tiny = Tiny(3, [3, 2, 4, 5, 1], p_fire=0.5)
    attrs = [0, 2]
    firings = _core.ConstraintFirings(tiny.corpus, constraint_map(tiny.A, attrs), len(attrs))
    theta = np.random.default_rng(4).normal(size=tiny.n_params)
    weights = np.random.default_rng(5).normal(size=(len(attrs), tiny.S))
    rows = np.full((tiny.corpus.n_tokens, tiny.S), np.nan)
    shared = _core.ge_expectations(tiny.corpus, tiny.layout, theta, 1, firings, emissions=rows)
    alone = _core.ge_expectations(tiny.corpus, tiny.layout, theta, 1, firings)
    assert shared.tobytes() == alone.tobytes()
    reused = _core.ge_gradient(tiny.corpus, tiny.layout, theta, 1, firings, weights,
                               emissions=rows)
    rescored = _core.ge_gradient(tiny.corpus, tiny.layout, theta, 1, firings, weights)
    assert reused.tobytes() == rescored.tobytes()


def test_term_rejects_bad_input():
    tiny = Tiny(0, [3, 2])
    cmap = constraint_map(tiny.A, [0])
    make = OBJECTIVES["ge"]
    with pytest.raises(ValueError, match="penalty"):
        make(tiny.corpus, tiny.layout, 1, constraint_of_attribute=cmap, targets=TARGETS[:1],
             penalty="l1")
    with pytest.raises(ValueError, match="sum to 1"):
        make(tiny.corpus, tiny.layout, 1, constraint_of_attribute=cmap, targets=[[0.5, 0.2, 0.2]])
    with pytest.raises(ValueError, match="shape"):
        make(tiny.corpus, tiny.layout, 1, constraint_of_attribute=cmap, targets=[[0.5, 0.5]])
    with pytest.raises(ValueError, match="smoothing"):
        make(tiny.corpus, tiny.layout, 1, constraint_of_attribute=cmap, targets=TARGETS[:1],
             smoothing=0.0)
    never = Tiny(1, [2, 2], A=8, p_fire=0.0)  # one attribute per token
    silent = next(a for a in range(8) if not never.fires(a).any())
    with pytest.raises(ValueError, match="fire nowhere"):
        make(never.corpus, never.layout, 1, constraint_of_attribute=constraint_map(8, [silent]),
             targets=TARGETS[:1])


# ---------------------------------------------------------------------------
# Training through CRF.fit
# ---------------------------------------------------------------------------


def dict_tokens(tokens):
    return [[{"w": w, "p": p} for w, p in sentence] for sentence in tokens]


@pytest.fixture(scope="module")
def hmm():
    X, y = generate_hmm_corpus(300, seed=3)
    Xt, yt = generate_hmm_corpus(150, seed=4)
    labels = sorted({l for s in y for l in s})
    proposed = C.propose_features(dict_tokens(X), y, 3, labels=labels, prefix="w=")
    majority = {a: label for label, found in proposed.items() for a, _, _ in found}
    return dict(X=dict_tokens(X), y=y, Xt=dict_tokens(Xt), yt=yt, labels=labels,
                constraints=C.majority_constraints(majority, labels))


def kl_by_hand(model, X, constraints):
    """Σ_m KL(p̃_m ‖ p̂_m) from the model's node marginals (plain KL, no smoothing)."""
    node = np.concatenate(model.predict_marginals_array(X))
    words = np.array([tok["w"] for sentence in X for tok in sentence])
    total = 0.0
    for attribute, target in constraints.items():
        q = node[words == attribute[len("w="):]].mean(axis=0)
        for label, p in target.items():
            if p > 0:
                total += p * math.log(p / q[model.classes_.index(label)])
    return total


@pytest.mark.parametrize("penalty", ["kl", "l2"])
def test_constraints_only_training_reduces_the_kl(hmm, penalty):
    model = sscrf.CRF(ge_weight=1.0, ge_penalty=penalty, c2=0.01, max_iterations=60,
                      n_threads=2, verbose=False)
    model.fit([], [], X_unlabeled=hmm["X"], constraints=hmm["constraints"])
    assert model.classes_ == hmm["labels"]  # from the constraints' labels, sorted
    assert model.feature_set_ == "dense"
    S = len(model.classes_)
    start = sum(sum(p * math.log(p * S) for p in target.values() if p > 0)
                for target in hmm["constraints"].values())  # p̂ uniform at θ = 0
    end = kl_by_hand(model, hmm["X"], hmm["constraints"])
    assert end <= 0.25 * start, (start, end)
    # and it learned something about the task from features alone
    assert model.score(hmm["Xt"], hmm["yt"]) > 0.5


def test_ge_combines_with_likelihood_and_entropy(hmm):
    X, y = hmm["X"][:10], hmm["y"][:10]
    kwargs = dict(c2=0.1, max_iterations=8, n_threads=2, verbose=False)
    base = sscrf.CRF(**kwargs).fit(X, y)
    both = sscrf.CRF(ge_weight=2.0, entropy_weight=0.1, **kwargs)
    both.fit(X, y, X_unlabeled=hmm["X"][:150], constraints=hmm["constraints"])
    assert "supervised" in both.training_["stages"]  # warm start from the supervised optimum
    assert both.constraints_.keys() == hmm["constraints"].keys()
    assert kl_by_hand(both, hmm["X"][:150], hmm["constraints"]) < kl_by_hand(
        base, hmm["X"][:150], hmm["constraints"])
    # labels= fixes the order; GE alone with labeled data too
    order = list(reversed(hmm["labels"]))
    m = sscrf.CRF(ge_weight=1.0, labels=order, **kwargs)
    m.max_iterations = 2
    m.fit(X, y, X_unlabeled=hmm["X"][:50], constraints=hmm["constraints"])
    assert m.classes_ == order


def test_observed_feature_set_trains_the_labeled_pairs_with_ge_and_entropy(hmm):
    # The unlabeled terms move the weights of the pairs the labeled data has,
    # and only those: the model is the size of the supervised observed one.
    X, y = hmm["X"][:10], hmm["y"][:10]
    kwargs = dict(c2=0.1, max_iterations=8, n_threads=2, verbose=False)
    base = sscrf.CRF(feature_set="observed", **kwargs).fit(X, y)
    seen = {(f"{k}:{v}", label) for s, labels in zip(X, y) for tok, label in zip(s, labels)
            for k, v in tok.items()}
    for extra in (dict(ge_weight=2.0), dict(entropy_weight=0.1)):
        m = sscrf.CRF(feature_set="observed", **extra, **kwargs)
        m.fit(X, y, X_unlabeled=hmm["X"][:150],
              constraints=hmm["constraints"] if "ge_weight" in extra else None)
        assert m.feature_set_ == "observed"
        assert "supervised" in m.training_["stages"]
        pairs = {(m.extractor_.attributes_[a], m.classes_[m.label_ids_[k]])
                 for a in range(len(m.row_ptr_) - 1)
                 for k in range(m.row_ptr_[a], m.row_ptr_[a + 1])}
        assert pairs == seen and len(m.label_ids_) == len(seen)
        if "ge_weight" in extra:
            assert kl_by_hand(m, hmm["X"][:150], hmm["constraints"]) < kl_by_hand(
                base, hmm["X"][:150], hmm["constraints"])
        else:  # the entropy term makes the unlabeled tokens' marginals more certain
            assert token_entropy(m, hmm["X"][:150]) < token_entropy(base, hmm["X"][:150])


def token_entropy(model, X):
    node = np.concatenate(model.predict_marginals_array(X))
    return float(-(node * np.log(np.maximum(node, 1e-300))).sum())


def test_fit_constraint_errors_and_warnings(hmm):
    XU = hmm["X"][:30]
    cons = hmm["constraints"]
    kw = dict(max_iterations=2, verbose=False)
    with pytest.raises(SscrfError, match="ge_weight"):
        sscrf.CRF(**kw).fit([], [], X_unlabeled=XU, constraints=cons)
    with pytest.raises(SscrfError, match="X_unlabeled"):
        sscrf.CRF(ge_weight=1.0, **kw).fit(hmm["X"][:3], hmm["y"][:3], constraints=cons)
    with pytest.warns(UserWarning, match="zero entropy_weight"):  # the grid's baseline
        sscrf.CRF(**kw).fit(hmm["X"][:3], hmm["y"][:3], X_unlabeled=XU)
    with pytest.raises(SscrfError, match="not one of the labels"):
        sscrf.CRF(ge_weight=1.0, labels=["B-NP", "O"], **kw).fit(
            [], [], X_unlabeled=XU, constraints=cons)
    with pytest.raises(SscrfError, match="sums to"):
        sscrf.CRF(ge_weight=1.0, **kw).fit([], [], X_unlabeled=XU,
                                           constraints={"w=the": {"B-NP": 0.9}})
    with pytest.raises(SscrfError, match="empty"):
        sscrf.CRF(ge_weight=1.0, **kw).fit([], [], X_unlabeled=XU, constraints={})
    for bad in (dict(ge_weight=-1.0), dict(ge_weight=float("nan")), dict(ge_penalty="kl2")):
        with pytest.raises(SscrfError, match="ge_"):
            sscrf.CRF(**bad, **kw).fit([], [], X_unlabeled=XU, constraints=cons)
    # an attribute that never occurs is dropped with a warning; none left is an error
    extra = dict(cons, **{"w=zzz-never": {"O": 1.0}})
    with pytest.warns(UserWarning, match="w=zzz-never"):
        m = sscrf.CRF(ge_weight=1.0, **kw).fit([], [], X_unlabeled=XU, constraints=extra)
    assert "w=zzz-never" not in m.constraints_ and len(m.constraints_) == len(cons)
    # one that occurs in labeled data only has no position in X_unlabeled
    only_labeled = [[{"w": "labeled-only", "p": "NN"}]]
    with pytest.warns(UserWarning, match="never present in X_unlabeled"), \
            pytest.warns(UserWarning, match="named by the constraints but by no labeled token"):
        sscrf.CRF(ge_weight=1.0, **kw).fit(only_labeled, [["O"]], X_unlabeled=XU,
                                           constraints=dict(cons, **{"w=labeled-only": {"O": 1}}))
    with pytest.warns(UserWarning), pytest.raises(SscrfError, match="no constraint attribute"
                                                   ".* named as the features name them, e.g. "
                                                   "'"):
        sscrf.CRF(ge_weight=1.0, **kw).fit([], [], X_unlabeled=XU,
                                           constraints={"w=zzz-never": {"O": 1.0}})
    # beside labeled data, a label that only the constraints name is likely a misspelling
    attribute = next(iter(cons))
    with pytest.warns(UserWarning, match="'B-NPP' are named by the constraints but by no "
                                         "labeled token"):
        m = sscrf.CRF(ge_weight=1.0, **kw).fit(
            hmm["X"][:30], hmm["y"][:30], X_unlabeled=XU,
            constraints=dict(cons, **{attribute: {"B-NPP": 1.0}}))
    assert "B-NPP" in m.classes_
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # labels all seen in y: no warning
        sscrf.CRF(ge_weight=1.0, **kw).fit(hmm["X"][:30], hmm["y"][:30], X_unlabeled=XU,
                                           constraints=cons)


# ---------------------------------------------------------------------------
# Constraint sources
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("bad, message", [
    ([("a", 1.0)], "must be a dict"),
    ({"a": {"X": 0.5, "Y": 0.6}}, "sums to"),
    ({"a": {"X": 1.2, "Y": -0.2}}, r"not in \[0, 1\]"),
    ({"a": {"X": float("nan")}}, r"not in \[0, 1\]"),
    ({"a": {"X": "1"}}, "must be a number"),
    ({"a": {"X": True}}, "must be a number"),
    ({"a": {}}, "empty"),
    ({"a": ["X"]}, "must be a dict"),
    ({"": {"X": 1.0}}, "non-empty"),
    ({3: {"X": 1.0}}, "non-empty strings"),
    ({"a": {1: 1.0}}, "labels must be"),
    ({"a": {"Q": 1.0}}, "not one of the labels"),
])
def test_check_constraints_errors(bad, message):
    with pytest.raises(SscrfError, match=message):
        C.check_constraints(bad, labels=["X", "Y", "Z"])


def test_check_constraints_normalises_within_tolerance():
    out = C.check_constraints({"a": {"Y": 0.5 + 4e-7, "X": 0.5}}, labels=["X", "Y"])
    assert out == {"a": {"X": 0.5, "Y": 0.5 + 4e-7}} and list(out["a"]) == ["X", "Y"]
    _, rows = C.target_matrix(out, ["X", "Y"])
    assert rows.sum() == pytest.approx(1, abs=1e-15)
    thirds = {"X": 0.333333, "Y": 0.333333, "Z": 0.333333}  # as written by hand
    assert C.check_constraints({"a": thirds}, labels=["X", "Y", "Z"]) == {"a": thirds}
    with pytest.raises(SscrfError, match="sums to 0.99, not 1"):
        C.check_constraints({"a": {"X": 0.33, "Y": 0.33, "Z": 0.33}}, labels=["X", "Y", "Z"])
    attributes, targets = C.target_matrix({"b": {"Y": 1.0}, "a": {"X": 0.25, "Y": 0.75}},
                                          ["X", "Y", "Z"])
    assert attributes == ["b", "a"]
    np.testing.assert_array_equal(targets, [[0, 1, 0], [0.25, 0.75, 0]])


def test_majority_heuristic():
    out = C.majority_constraints({"w=john": "PER", "w=ibm": "ORG"}, ["PER", "ORG", "LOC", "O"])
    assert out["w=john"] == pytest.approx({"PER": 0.99, "ORG": 0.01 / 3, "LOC": 0.01 / 3,
                                           "O": 0.01 / 3}, rel=1e-12)
    assert out["w=ibm"]["ORG"] == 0.99
    C.check_constraints(out)
    assert C.majority_constraints({"a": "X"}, ["X"]) == {"a": {"X": 1.0}}
    with pytest.raises(SscrfError, match="not one of the labels"):
        C.majority_constraints({"a": "Q"}, ["X", "Y"])


CORPUS = [[{"w": "a"}, {"w": "b"}, {"w": "a"}],
          [{"w": "a"}, {"w": "c"}],
          [{"w": "b"}, {"w": "c"}, {"w": "c"}, {"w": "d"}]]
LABELS = [["X", "Y", "X"], ["Y", "Z", ], ["Y", "Z", "Y", "X"]]


def test_propose_features_as_in_table_1():
    # a: X 2, Y 1 -> X; b: Y 2 -> Y; c: Z 2, Y 1 -> Z; d: X 1 -> X
    out = C.propose_features(CORPUS, LABELS, 5)
    assert out == {"X": [("w:a", 2, 3), ("w:d", 1, 1)], "Y": [("w:b", 2, 2)],
                   "Z": [("w:c", 2, 3)]}
    assert C.propose_features(CORPUS, LABELS, 1, min_count=2)["X"] == [("w:a", 2, 3)]
    assert C.propose_features(CORPUS, LABELS, 5, exclude=lambda a: a == "w:a")["X"] == \
        [("w:d", 1, 1)]
    # ties go to the label listed first
    tie = C.propose_features([[{"w": "t"}, {"w": "t"}]], [["B", "A"]], 2, labels=["B", "A"])
    assert tie == {"B": [("w:t", 1, 2)], "A": []}


def test_estimate_constraints_counts_and_smoothing():
    labels = ["X", "Y", "Z"]
    # all tokens (n ≥ occurrences): the smoothed empirical distribution
    out = C.estimate_constraints(CORPUS, LABELS, ["w=a", "w=c"], 10, labels=labels,
                                 smoothing=0.5)
    assert out["w=a"] == pytest.approx({"X": 2.5 / 4.5, "Y": 1.5 / 4.5, "Z": 0.5 / 4.5})
    assert out["w=c"] == pytest.approx({"X": 0.5 / 4.5, "Y": 1.5 / 4.5, "Z": 2.5 / 4.5})
    # one token: its label gets (1 + α) / (1 + Sα); deterministic for a seed
    one = C.estimate_constraints(CORPUS, LABELS, ["w=a"], 1, labels=labels, seed=3)
    assert max(one["w=a"].values()) == pytest.approx(1.1 / 1.3)
    assert one == C.estimate_constraints(CORPUS, LABELS, ["w=a"], 1, labels=labels, seed=3)
    seen = {max(C.estimate_constraints(CORPUS, LABELS, ["w=a"], 1, labels=labels, seed=s)["w=a"].items(),
                key=lambda kv: kv[1])[0] for s in range(20)}
    assert seen == {"X", "Y"}  # sampling, not the majority
    zero = C.estimate_constraints(CORPUS, LABELS, ["w=b"], 5, labels=labels, smoothing=0)
    assert zero == {"w=b": {"Y": 1.0}}
    with pytest.warns(UserWarning, match="w=zz"):
        assert C.estimate_constraints(CORPUS, LABELS, ["w=zz"], 2) == {}
    with pytest.raises(SscrfError, match="n_per_feature"):
        C.estimate_constraints(CORPUS, LABELS, ["w=a"], 0)
    with pytest.raises(SscrfError, match="smoothing"):
        C.estimate_constraints(CORPUS, LABELS, ["w=a"], 1, smoothing=-1)


def test_attribute_occurrences_with_templates():
    X = [[["the", "DT"], ["dog", "NN"]], [["a", "DT"], ["the", "DT"]]]
    where = C.attribute_occurrences(X, ["U02:the", "U02:zzz"], templates="default")
    assert where["U02:the"].tolist() == [0, 3]
    assert where["U02:zzz"].tolist() == []


# ---------------------------------------------------------------------------
# File format
# ---------------------------------------------------------------------------


def test_file_round_trip(tmp_path):
    cons = {
        "w[0]=john": {"PERSON": 0.95, "ORG": 0.05},
        "U02:New York": {"LOC": 0.1, "ORG": 0.9},
        "tab\there\\back\nnl\rcr": {"A:B": 1.0},
        "#hash": {"O": 1 / 3, "X": 2 / 3},
        "ünï©ødé:x": {"label with space": 0.3, "O": 0.7},
    }
    path = tmp_path / "c.txt"
    C.write_constraints(path, cons)
    back = C.read_constraints(path)
    assert back == C.check_constraints(cons)
    assert list(back) == list(cons)
    text = path.read_text(encoding="utf-8")
    assert text.splitlines()[0] == "w[0]=john PERSON:0.95 ORG:0.05"
    assert len(text.splitlines()) == len(cons)
    assert C.read_constraints(path, labels=["PERSON", "ORG", "LOC", "A:B", "O", "X",
                                            "label with space"]) == back


def test_file_comments_blank_lines_tabs_and_bom(tmp_path):
    path = tmp_path / "c.txt"
    path.write_bytes("\ufeff# heading\n\n  \t\nw=a\tX:0.5   Y:0.5\r\n  # indented comment\n"
                     "w=b Y:1\n".encode("utf-8"))
    assert C.read_constraints(path) == {"w=a": {"X": 0.5, "Y": 0.5}, "w=b": {"Y": 1.0}}


@pytest.mark.parametrize("line, message", [
    ("w=a", "found only the attribute"),
    ("w=a X", "expected LABEL:PROBABILITY"),
    ("w=a :1", "expected LABEL:PROBABILITY"),
    ("w=a X:abc", "bad probability"),
    ("w=a X:nan", r"not in \[0, 1\]"),
    ("w=a X:inf", r"not in \[0, 1\]"),
    ("w=a X:1.5 Y:-0.5", r"not in \[0, 1\]"),
    ("w=a X:0.5 Y:0.4", "sum to"),
    ("w=a X:0.5 X:0.5", "label 'X' repeated"),
    ("w=a Q:1", "not one of the labels"),
    ("w\\q=a X:1", "bad escape"),
    ("w=a\\ X:1", "bad escape"),
    # a lone carriage return ends a line (old Mac files), so Y:0.5 is a line of its own
    ("w=a X:0.5\rY:0.5", "sum to 0.5"),
])
def test_file_malformed_lines(tmp_path, line, message):
    path = tmp_path / "bad.txt"
    path.write_text(f"# ok\nw=ok X:1\n{line}\n", encoding="utf-8", newline="")
    with pytest.raises(SscrfError, match=message) as info:
        C.read_constraints(path, labels=["X", "Y"])
    assert str(info.value).startswith(f"{path}:3: ")


def test_file_with_old_mac_line_ends(tmp_path):
    # "\r" alone ends lines: such a file starting with a comment was one comment
    path = tmp_path / "mac.txt"
    path.write_bytes(b"# targets\rw=a X:1\rw=b X:0.25 Y:0.75\r")
    assert C.read_constraints(path, labels=["X", "Y"]) == {"w=a": {"X": 1.0},
                                                          "w=b": {"X": 0.25, "Y": 0.75}}


def test_file_repeated_attribute_and_bad_utf8(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("w=a X:1\nw=b X:1\nw=a Y:1\n", encoding="utf-8")
    with pytest.raises(SscrfError, match=r":3: attribute 'w=a' repeated \(first on line 1\)"):
        C.read_constraints(path)
    path.write_bytes(b"w=a X:1\nw=\xff Y:1\n")
    with pytest.raises(SscrfError, match=r":2: not valid UTF-8"):
        C.read_constraints(path)


def test_constraint_text_with_a_byte_order_mark():
    # as read_constraints drops it from a file, parse_constraints from a str
    text = "w=the DET:0.9 NOUN:0.1\nw=dog NOUN:1\n"
    assert C.parse_constraints("\ufeff" + text) == C.parse_constraints(text)
    assert list(C.parse_constraints("\ufeff" + text)) == ["w=the", "w=dog"]


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab:X.01 \t\n\r\\#e-+s") + ["é", "\x00", "\u2028"]),
               max_size=60))
def test_file_reader_is_fuzz_safe(text):
    try:
        out = C.parse_constraints(text)
    except SscrfError:
        return
    # whatever parses is valid and round-trips
    assert C.parse_constraints(C.format_constraints(out)) == C.check_constraints(out)


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=80))
def test_file_reader_is_fuzz_safe_on_bytes(data):
    import tempfile

    with tempfile.TemporaryDirectory() as root:
        path = f"{root}/c.txt"
        with open(path, "wb") as f:
            f.write(b"w=a X:1\n" + data)
        try:
            C.read_constraints(path)
        except SscrfError as e:
            assert str(e).startswith(f"{path}:")


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=8),
                       st.dictionaries(st.text(min_size=1, max_size=5),
                                       st.floats(0.01, 1.0), min_size=1, max_size=3),
                       max_size=4))
def test_any_constraints_round_trip(raw):
    cons = {a: {l: p / math.fsum(d.values()) for l, p in d.items()} for a, d in raw.items()}
    cons = C.check_constraints(cons)
    assert C.parse_constraints(C.format_constraints(cons)) == cons


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------


def test_cli_train_from_constraints_only(tmp_path, capsys):
    X, y = generate_hmm_corpus(120, seed=21)
    Xt, yt = generate_hmm_corpus(60, seed=22)
    empty, unlabeled, test = tmp_path / "empty.txt", tmp_path / "u.txt", tmp_path / "test.txt"
    empty.write_text("")
    write_conll(unlabeled, X)
    write_conll(test, Xt, yt)
    labels = sorted({l for s in y for l in s})
    proposed = C.propose_features(X, y, 2, labels=labels, templates="default", prefix="U02:")
    cons = C.majority_constraints({a: l for l, f in proposed.items() for a, _, _ in f}, labels)
    cfile = tmp_path / "c.txt"
    C.write_constraints(cfile, cons)
    model = tmp_path / "m.model"
    code = main(["train", str(empty), "-m", str(model), "--unlabeled", str(unlabeled),
                 "--constraints", str(cfile), "--ge-weight", "1", "--max-iterations", "15",
                 "--threads", "2", "-q"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert f"{len(cons)} constraints" in out
    m = sscrf.CRF.load(model)
    assert m.classes_ == labels
    assert m.score(Xt, yt) > 0.3
    code = main(["eval", "-m", str(model), str(test)])
    assert code == 0
    capsys.readouterr()
    base = ["train", str(empty), "-m", str(model), "-q"]
    for extra, message in [
        (["--unlabeled", str(unlabeled), "--constraints", str(cfile)], "--ge-weight"),
        (["--unlabeled", str(unlabeled), "--ge-weight", "1"], "--constraints"),
        (["--constraints", str(cfile), "--ge-weight", "1"], "--unlabeled"),
        (["--unlabeled", str(unlabeled), "--constraints", str(cfile), "--ge-weight", "1",
          "--labels", "O,B-NP"], "not one of the labels"),
    ]:
        code = main(base + extra)
        _, err = capsys.readouterr()
        assert code == 2 and err.startswith("sscrf: error: ") and message in err, (extra, err)
    bad = tmp_path / "bad.txt"
    bad.write_text("U02:the B-NP:0.5\n")
    code = main(base + ["--unlabeled", str(unlabeled), "--constraints", str(bad),
                        "--ge-weight", "1"])
    _, err = capsys.readouterr()
    assert code == 2 and f"{bad}:1:" in err
    # a constraint on an attribute the data never has: a warning, training goes on
    partly = tmp_path / "partly.txt"
    C.write_constraints(partly, dict(cons, **{"U02:zzz-never": {"O": 1.0}}))
    code = main(base + ["--unlabeled", str(unlabeled), "--constraints", str(partly),
                        "--ge-weight", "1", "--max-iterations", "2"])
    _, err = capsys.readouterr()
    assert code == 0 and "sscrf: warning:" in err and "U02:zzz-never" in err


def test_constraint_firings_count_occurrences_and_belong_to_one_corpus():
    # C_m counts every token where attribute m occurs, from the CSR by hand;
    # firings built for one corpus are refused for another.
    tiny = Tiny(11, [3, 1, 4], p_fire=0.4)
    attrs = [0, 2, 5]
    firings = _core.ConstraintFirings(tiny.corpus, constraint_map(tiny.A, attrs), len(attrs))
    expected = [float(np.sum(tiny.indices == a)) for a in attrs]
    assert firings.counts.tolist() == expected
    assert firings.n_constraints == len(attrs)
    other = Tiny(12, [2, 2], p_fire=0.4)
    theta = np.zeros(other.n_params)
    with pytest.raises(ValueError, match="another corpus"):
        _core.ge_expectations(other.corpus, other.layout, theta, 1, firings)
    with pytest.raises(ValueError, match="score_weights"):
        _core.ge_gradient(tiny.corpus, tiny.layout, np.zeros(tiny.n_params), 1, firings,
                          np.zeros((len(attrs) + 1, tiny.S)))
    with pytest.raises(ValueError, match="out of range"):
        _core.ConstraintFirings(tiny.corpus, constraint_map(tiny.A, attrs), 2)
