"""HMMs trained by EM for state features: the E-step against enumeration of
every state sequence, EM's monotone likelihood, decoding, and the states as
word-representation features (files, threads, the command line)."""

import copy
import itertools

import numpy as np
import pytest

from sscrf import _core, serialization
from sscrf.errors import SscrfError
from sscrf.hidden_states import HiddenMarkovModel, fit_hmm, most_probable_states, viterbi_states
from sscrf.progress import Progress
from sscrf.representations import WordRepresentations, word_shape_class

from hmm_common import dense_emissions, packed, random_hmm


def enumerate_counts(hmm, sentences):
    """log p(text), the expected counts and each token's posteriors, summing p
    over every state sequence."""
    pi, A, B = hmm.start, hmm.transitions, dense_emissions(hmm)
    K = len(pi)
    log_p = 0.0
    emissions, transitions, start = np.zeros(B.shape), np.zeros((K, K)), np.zeros(K)
    posteriors = []
    for s in sentences:
        joint = {}
        for y in itertools.product(range(K), repeat=len(s)):
            p = pi[y[0]] * B[s[0], y[0]]
            for t in range(1, len(s)):
                p *= A[y[t - 1], y[t]] * B[s[t], y[t]]
            joint[y] = p
        Z = sum(joint.values())
        log_p += np.log(Z)
        node = np.zeros((len(s), K))
        for y, p in joint.items():
            q = p / Z
            start[y[0]] += q
            node[np.arange(len(s)), y] += q
            for t in range(len(s)):
                emissions[s[t], y[t]] += q
                if t:
                    transitions[y[t - 1], y[t]] += q
        posteriors.append(node)
    return log_p, emissions, transitions, start, posteriors


def on_supports(hmm, dense):
    """A (n_symbols, K) array's entries at the supports, aligned with hmm.support."""
    rows = np.repeat(np.arange(len(hmm.support_ptr) - 1), np.diff(hmm.support_ptr))
    return dense[rows, hmm.support]


@pytest.mark.parametrize("seed", range(6))
def test_expected_counts_match_enumeration(seed):
    rng = np.random.default_rng(seed)
    n_symbols, K = 6, 3
    sentences = [list(rng.integers(0, n_symbols, rng.integers(0, 6))) for _ in range(6)]
    hmm = random_hmm(rng, n_symbols, K, full=seed == 0)
    symbols, offsets = packed(sentences)
    log_p, emissions, transitions, start, _ = enumerate_counts(hmm, [s for s in sentences if s])
    got = {}
    for threads in (1, 2):
        got[threads] = hmm.kernel().expected_counts(symbols, offsets, threads)
        assert got[threads][0] == pytest.approx(log_p, rel=1e-12)
        np.testing.assert_allclose(got[threads][1], on_supports(hmm, emissions), rtol=1e-9,
                                   atol=1e-12)
        np.testing.assert_allclose(got[threads][2], transitions, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(got[threads][3], start, rtol=1e-9, atol=1e-12)
    for a, b in zip(got[1][1:], got[2][1:]):
        assert np.array_equal(a, b)


def forward_backward_numpy(hmm, sentences):
    """The E-step by dense scaled forward-backward in numpy, for texts too long to
    enumerate."""
    pi, A, B = hmm.start, hmm.transitions, dense_emissions(hmm)
    log_p, E, T, S = 0.0, np.zeros(B.shape), np.zeros(A.shape), np.zeros(len(pi))
    for s in sentences:
        n = len(s)
        alpha, beta, c = np.zeros((n, len(pi))), np.ones((n, len(pi))), np.zeros(n)
        for t in range(n):
            a = (pi if t == 0 else alpha[t - 1] @ A) * B[s[t]]
            c[t] = a.sum()
            alpha[t] = a / c[t]
        for t in range(n - 1, 0, -1):
            w = B[s[t]] * beta[t] / c[t]
            beta[t - 1] = A @ w
            T += np.outer(alpha[t - 1], w) * A
        gamma = alpha * beta
        np.add.at(E, np.array(s), gamma)
        S += gamma[0]
        log_p += np.log(c).sum()
    return log_p, E, T, S


def test_expected_counts_over_many_groups_have_the_same_bits_at_any_thread_count():
    # about 60,000 tokens: several groups of sentences, summed in group order
    rng = np.random.default_rng(7)
    n_symbols, K = 40, 6
    hmm = random_hmm(rng, n_symbols, K)
    sentences = [list(rng.integers(0, n_symbols, rng.integers(1, 40))) for _ in range(3000)]
    symbols, offsets = packed(sentences)
    runs = [hmm.kernel().expected_counts(symbols, offsets, threads) for threads in (1, 2, 3)]
    for run in runs[1:]:
        assert run[0] == runs[0][0]
        for a, b in zip(run[1:], runs[0][1:]):
            assert np.array_equal(a, b)
    log_p, E, T, S = forward_backward_numpy(hmm, sentences)
    assert runs[0][0] == pytest.approx(log_p, rel=1e-11)
    np.testing.assert_allclose(runs[0][1], on_supports(hmm, E), rtol=1e-9)
    np.testing.assert_allclose(runs[0][2], T, rtol=1e-9)
    np.testing.assert_allclose(runs[0][3], S, rtol=1e-9)


def test_most_probable_states_are_the_enumerated_posteriors_argmax():
    rng = np.random.default_rng(3)
    hmm = random_hmm(rng, 7, 3)
    sentences = [list(rng.integers(0, 7, n)) for n in (0, 1, 2, 5, 4)]
    *_, posteriors = enumerate_counts(hmm, [s for s in sentences if s])
    want = np.concatenate([p.argmax(1) for p in posteriors])
    symbols, offsets = packed(sentences)
    for threads in (1, 2):
        got = most_probable_states(hmm.kernel(), symbols, offsets, threads)
        assert got.tolist() == want.tolist()
    for s, p in zip([s for s in sentences if s], posteriors):
        assert most_probable_states(hmm.kernel(), s).tolist() == p.argmax(1).tolist()
    assert len(most_probable_states(hmm.kernel(), [])) == 0
    # two states alike in everything: every posterior a tie, won by the lower state
    alike = HiddenMarkovModel(np.full(3, 1 / 3), np.full((3, 3), 1 / 3), np.array([0, 2, 4]),
                              np.array([1, 2, 1, 2], np.int32), np.full(4, 0.5))
    assert most_probable_states(alike.kernel(), [0, 1, 1, 0]).tolist() == [1, 1, 1, 1]


def test_the_kernel_refuses_bad_models_and_symbols():
    rng = np.random.default_rng(0)
    good = random_hmm(rng, 4, 3)

    def build(**change):
        return _core.SparseHmm(*good._replace(**change))

    cases = [
        (dict(start=np.array([0.5, 0.7, -0.2])), "start must hold probabilities"),
        (dict(transitions=np.full((3, 2), 0.5)), "transitions must have shape"),
        (dict(emission=good.emission[:-1]), "one entry per entry of support"),
        (dict(emission=np.where(np.arange(len(good.emission)) == 0, np.nan, good.emission)),
         "emission must hold probabilities"),
        (dict(support=np.where(np.arange(len(good.support)) == 0, 3, good.support)
              .astype(np.int32)), r"support must hold states in \[0, 3\)"),
        (dict(support_ptr=np.array([0, 0, len(good.support) // 2, len(good.support) - 1,
                                    len(good.support)])), "symbol 0 has no state"),
    ]
    for change, message in cases:
        with pytest.raises(SscrfError, match=message):
            build(**change)
    unsorted = HiddenMarkovModel(good.start, good.transitions, np.array([0, 2]),
                                 np.array([1, 0], np.int32), np.array([0.5, 0.5]))
    with pytest.raises(SscrfError, match="support must increase"):
        unsorted.kernel()
    kernel = good.kernel()
    with pytest.raises(SscrfError, match=r"symbols must be in \[0, 4\), got 4"):
        kernel.expected_counts(np.array([0, 4], np.int32), np.array([0, 2]), 1)
    with pytest.raises(SscrfError, match="indptr"):
        kernel.posterior_states(np.array([0, 1], np.int32), np.array([0, 3]), 1)
    with pytest.raises(SscrfError, match="n_threads"):
        kernel.expected_counts(np.array([0], np.int32), np.array([0, 1]), 0)
    # no path: state 0 alone emits symbol 0, and it never follows itself
    stuck = HiddenMarkovModel(np.array([1.0, 0.0]), np.array([[0.0, 1.0], [0.5, 0.5]]),
                              np.array([0, 1, 3]), np.array([0, 0, 1], np.int32),
                              np.array([1.0, 0.0, 1.0]))
    with pytest.raises(SscrfError, match="probability 0 at its token 1"):
        stuck.kernel().expected_counts(np.array([0, 0], np.int32), np.array([0, 2]), 1)


def stepwise_reference(hmm, weights, symbols, offsets, order, batch_ptr, alpha, eps_e, eps_t):
    """Stepwise EM with every count updated after every batch, each batch's
    E-step by the kernel (checked against enumeration above)."""
    K, lengths = len(hmm.start), np.diff(offsets)
    n_tokens, n_sentences = len(symbols), np.count_nonzero(lengths)
    emission = weights * (n_tokens / weights.sum())
    transitions, start = np.full((K, K), n_tokens / K ** 2), np.full(K, n_sentences / K)

    def estimate():
        t, s = transitions + eps_t, start + eps_t
        e = emission + eps_e
        return hmm._replace(start=s / s.sum(), transitions=t / t.sum(1, keepdims=True),
                            emission=e / np.bincount(hmm.support, weights=e,
                                                     minlength=K)[hmm.support])

    model, step, log_p = estimate(), 0, 0.0
    for b in range(len(batch_ptr) - 1):
        ids = order[batch_ptr[b]:batch_ptr[b + 1]]
        batch = [symbols[offsets[i]:offsets[i + 1]] for i in ids]
        batch_symbols, batch_offsets = packed(batch)
        if len(batch_symbols) == 0:
            continue
        lp, e, t, s = model.kernel().expected_counts(batch_symbols, batch_offsets, 1)
        log_p += lp
        eta = (step + 2.0) ** -alpha
        step += 1
        w = eta * n_tokens / len(batch_symbols)
        emission = (1 - eta) * emission + w * e
        transitions = (1 - eta) * transitions + w * t
        start = (1 - eta) * start + w * s
        model = estimate()
    return model, log_p


def test_stepwise_em_matches_a_reference_that_updates_every_count():
    rng = np.random.default_rng(4)
    hmm = random_hmm(rng, 9, 4)
    weights = rng.random(len(hmm.support)) + 0.2
    sentences = [list(rng.integers(0, 9, rng.integers(0, 7))) for _ in range(60)]
    symbols, offsets = packed(sentences)
    uniform = hmm._replace(start=np.full(4, 0.25), transitions=np.full((4, 4), 0.25))
    for passes in (1, 3):
        em = _core.StepwiseEm(uniform.kernel(), weights, len(symbols),
                              np.count_nonzero(np.diff(offsets)), 0.7, 1e-3, 1e-4)
        ref = uniform
        for p in range(passes):
            order = rng.permutation(60)
            batch_ptr = np.array([0, 7, 7, 25, 41, 60])  # an empty batch too
            got = em.run(symbols, offsets, order, batch_ptr, 2)
            if p == 0:
                ref, want = stepwise_reference(uniform, weights, symbols, offsets, order,
                                               batch_ptr, 0.7, 1e-3, 1e-4)
                assert got == pytest.approx(want, rel=1e-12)
        if passes == 1:
            start, transitions, emission = em.model()
            np.testing.assert_allclose(start, ref.start, rtol=1e-10)
            np.testing.assert_allclose(transitions, ref.transitions, rtol=1e-10)
            np.testing.assert_allclose(emission, ref.emission, rtol=1e-10)


def test_stepwise_em_refuses_bad_arguments():
    rng = np.random.default_rng(0)
    hmm = random_hmm(rng, 4, 3).kernel()
    n = len(random_hmm(np.random.default_rng(0), 4, 3).support)
    good = dict(emission_weights=np.ones(n), n_tokens=10.0, n_sentences=2.0, step_exponent=0.7,
                emission_pseudo_count=1e-4, transition_pseudo_count=1e-6)
    for change, message in [
            (dict(emission_weights=np.ones(n + 1)), "one entry per entry"),
            (dict(emission_weights=np.zeros(n)), "above 0"),
            (dict(step_exponent=0.5), r"step_exponent must be in \(0.5, 1\]"),
            (dict(n_sentences=11.0), "n_sentences"),
            (dict(emission_pseudo_count=0.0), "pseudo-counts")]:
        with pytest.raises(SscrfError, match=message):
            _core.StepwiseEm(hmm, **dict(good, **change))
    em = _core.StepwiseEm(hmm, **good)
    symbols, offsets = np.array([0, 1, 2], np.int32), np.array([0, 2, 3])
    with pytest.raises(SscrfError, match=r"order must hold sentences in \[0, 2\)"):
        em.run(symbols, offsets, np.array([0, 2]), np.array([0, 2]), 1)
    with pytest.raises(SscrfError, match="indptr"):
        em.run(symbols, offsets, np.array([0, 1]), np.array([0, 3]), 1)
    with pytest.raises(SscrfError, match=r"symbols must be in \[0, 4\)"):
        em.run(np.array([0, 9, 2], np.int32), offsets, np.array([0, 1]), np.array([0, 2]), 1)


def test_a_batch_that_fails_leaves_stepwise_em_as_it_was():
    # one state; symbol 1's emission underflows the forward pass's scaling
    hmm = HiddenMarkovModel(np.ones(1), np.ones((1, 1)), np.array([0, 1, 2]),
                            np.zeros(2, np.int32), np.array([1.0, 0.0]))
    weights, symbols = np.array([1.0, 1e-310]), np.array([0, 0, 1, 0], np.int32)
    offsets = np.array([0, 2, 4])

    def fresh():
        return _core.StepwiseEm(hmm.kernel(), weights, 4, 2, 0.7, 1e-310, 1e-6)

    em, reference = fresh(), fresh()
    with pytest.raises(SscrfError, match="probability 0 at its token 0"):
        em.run(symbols, offsets, np.array([1]), np.array([0, 1]), 1)
    after = em.run(symbols, offsets, np.array([0]), np.array([0, 1]), 1)
    assert after == reference.run(symbols, offsets, np.array([0]), np.array([0, 1]), 1)
    for a, b in zip(em.model(), reference.model()):
        assert np.array_equal(a, b)


def test_stepwise_em_raises_the_likelihood_and_keeps_the_supports():
    rng = np.random.default_rng(0)
    # sentences from a 3-state HMM, so that there is structure to find
    truth = random_hmm(rng, 8, 3, full=True)
    B = dense_emissions(truth)
    sentences = []
    for _ in range(600):
        y, s = rng.choice(3, p=truth.start), []
        for _ in range(rng.integers(1, 9)):
            s.append(int(rng.choice(8, p=B[:, y] / B[:, y].sum())))
            y = rng.choice(3, p=truth.transitions[y])
        sentences.append(s)
    symbols, offsets = packed(sentences)
    start = random_hmm(np.random.default_rng(1), 8, 3)
    before = start._replace(start=np.full(3, 1 / 3), transitions=np.full((3, 3), 1 / 3))
    hmm, _ = fit_hmm(symbols, offsets, start.support_ptr, start.support, start.emission, 3, 4,
                     np.random.default_rng(2), 1, Progress(False))
    n = len(symbols)
    initial = before.kernel().expected_counts(symbols, offsets, 1)[0] / n
    fitted = hmm.kernel().expected_counts(symbols, offsets, 1)[0] / n
    assert fitted > initial + 0.05
    assert np.array_equal(hmm.support, start.support)
    np.testing.assert_allclose(hmm.start.sum(), 1.0)
    np.testing.assert_allclose(hmm.transitions.sum(1), 1.0)
    np.testing.assert_allclose(np.bincount(hmm.support, weights=hmm.emission), 1.0)
    two, _ = fit_hmm(symbols, offsets, start.support_ptr, start.support, start.emission, 3, 4,
                     np.random.default_rng(2), 2, Progress(False))
    assert all(np.array_equal(a, b) for a, b in zip(hmm, two))


def grammar(n, seed=0):
    """Sentences whose word classes follow each other in a fixed order."""
    classes = [["the", "a", "this"], ["cat", "dog", "bird", "Rex"], ["sees", "likes", "eats"]]
    rng = np.random.default_rng(seed)
    return [[c[rng.integers(len(c))] for c in (classes[0], classes[1], classes[2], classes[0],
                                                 classes[1])] for _ in range(n)]


@pytest.fixture(scope="module")
def with_hmms():
    text = grammar(300) + [["the", "Zork42", "sees", "a", "cat"]]
    return WordRepresentations(dim=4, clusters=(2, 4), hmm_states=3, hmms=2, hmm_passes=10,
                               n_threads=1).fit(text)


def test_states_as_features_and_columns(with_hmms):
    rep = with_hmms
    assert len(rep.hmms_) == 2 and len(rep.hmm_log_likelihood_) == 2
    # "Zork42" (seen once) is read as its shape class
    assert rep.hmm_shapes_ == [word_shape_class("Zork42")]
    words = ["a", "dog", "eats", "the", "Qux"]
    states = rep.hidden_states(words)
    assert states.shape == (2, 5)
    # the grammar's classes come in a fixed order: a converged HMM tells the
    # positions apart by their state
    for row in states[:, :3]:
        assert len(set(row.tolist())) == 3
    f = rep.features(words)
    assert f[1]["rep.h0[0]"] == str(states[0, 1]) and f[1]["rep.h1[-1]"] == str(states[1, 0])
    assert f[0]["rep.h0[-1]"] == "<s>" and f[4]["rep.h1[+1]"] == "</s>"
    assert "rep.h0[+2]" not in f[0]
    assert rep.features(words, context=2)[0]["rep.h0[+2]"] == str(states[0, 2])
    without = rep.features(words, states=False)
    assert [{k: v for k, v in g.items() if not k.startswith("rep.h")} for g in f] == without
    columns = rep.columns(words)
    assert [c[2:] for c in columns] == [[str(a), str(b)] for a, b in states.T.tolist()]
    # a word never seen, of a shape never seen: the HMMs' last symbol
    assert rep.hidden_states(["the", "\u00e9\u00e9-\u00e9"]).shape == (2, 2)
    plain = WordRepresentations(dim=4, clusters=(2, 4), n_threads=1,
                                hmm_states=0).fit(grammar(300))
    assert plain.hidden_states(words).shape == (0, 5)
    assert not any(k.startswith("rep.h") for k in plain.features(words)[0])


@pytest.mark.parametrize("context", [0, 1, 2, 3])
def test_features_are_the_columns_of_each_offset(with_hmms, context):
    # built from columns() position by position: cluster ids then states,
    # "<s>" / "</s>" beyond the sentence, the vector for a word with a row
    words = ["a", "dog", "Qux", "eats", "the"]
    columns = with_hmms.columns(words)
    names = [f"c{k}" for k in with_hmms.clusters] + [f"h{m}" for m in range(2)]
    for states in (True, False):
        got = with_hmms.features(words, context=context, states=states)
        for i, f in enumerate(got):
            want = {}
            for d in range(-context, context + 1):
                t = i + d
                row = columns[t] if 0 <= t < len(words) else ["<s>" if t < 0 else "</s>"] * 4
                for name, value in zip(names, row):
                    if states or name.startswith("c"):
                        want[f"rep.{name}[{d:+d}]" if d else f"rep.{name}[0]"] = value
            vector = f.pop("rep.v", None)
            assert f == want
            r = with_hmms.row(words[i])
            assert (vector is None) == (r < 0)
            if vector is not None:
                np.testing.assert_allclose(vector, 6.0 * with_hmms.vectors_[r])


def test_each_decoding_reads_the_states_it_names(with_hmms):
    words = ["the", "dog", "likes", "a", "bird", "sees"]
    symbols = [with_hmms.row(w) for w in words]
    kernels = [h.kernel() for h in with_hmms.hmms_]
    assert with_hmms.hmm_decoding == "viterbi"
    assert np.array_equal(with_hmms.hidden_states(words), viterbi_states(kernels, symbols))
    posterior = copy.copy(with_hmms)
    posterior.hmm_decoding = "posterior"
    want = np.array([most_probable_states(k, symbols) for k in kernels])
    assert np.array_equal(posterior.hidden_states(words), want)
    f = posterior.features(words)
    assert [g["rep.h1[0]"] for g in f] == [str(k) for k in want[1]]
    assert [c[-1] for c in posterior.columns(words)] == [str(k) for k in want[1]]
    posterior.hmm_decoding = "beam"
    with pytest.raises(SscrfError, match="hmm_decoding must be one of viterbi, posterior"):
        posterior.hidden_states(words)


def test_hmms_have_the_same_bits_at_any_thread_count(with_hmms):
    text = grammar(300) + [["the", "Zork42", "sees", "a", "cat"]]
    two = WordRepresentations(dim=4, clusters=(2, 4), hmm_states=3, hmms=2, hmm_passes=10,
                              n_threads=2).fit(text)
    for a, b in zip(with_hmms.hmms_, two.hmms_):
        for x, y in zip(a, b):
            assert np.array_equal(x, y)


def test_hmm_file_round_trip_and_refusals(with_hmms, tmp_path):
    path = tmp_path / "h.rep"
    with_hmms.save(path)
    back = WordRepresentations.load(path)
    assert (back.hmm_states, back.hmms, back.hmm_passes, back.hmm_support) == (3, 2, 10, 24)
    assert back.hmm_decoding == "viterbi"
    assert back.hmm_shapes_ == with_hmms.hmm_shapes_
    words = ["this", "bird", "likes", "a", "Rex"]
    assert np.array_equal(back.hidden_states(words), with_hmms.hidden_states(words))
    meta, arrays = serialization.load(path)
    # a file from before the HMMs loads without them
    old_meta = dict(meta, params={k: v for k, v in meta["params"].items()
                                  if not k.startswith("hmm")})
    del old_meta["hmm_shapes"], old_meta["hmm_log_likelihood"]
    serialization.save(tmp_path / "old.rep", old_meta,
                       {k: v for k, v in arrays.items() if not k.startswith("hmm_")})
    old = WordRepresentations.load(tmp_path / "old.rep")
    assert old.hmm_states == 0 and old.hmms_ == []
    # a file from before hmm_decoding decodes posteriors, as it did
    posterior_meta = dict(meta, params={k: v for k, v in meta["params"].items()
                                        if k != "hmm_decoding"})
    serialization.save(tmp_path / "posterior.rep", posterior_meta, arrays)
    posterior = WordRepresentations.load(tmp_path / "posterior.rep")
    assert posterior.hmm_decoding == "posterior"
    symbols = [with_hmms.row(w) for w in words]
    assert np.array_equal(posterior.hidden_states(words),
                          [most_probable_states(h.kernel(), symbols) for h in with_hmms.hmms_])
    # a file whose HMMs are dense log-probabilities loads with every state
    # emitting every symbol, and decodes as they did
    dense = {k: v for k, v in arrays.items() if not k.startswith("hmm_")}
    dense["hmm_log_start"] = np.log(arrays["hmm_start"])
    dense["hmm_log_transitions"] = np.log(arrays["hmm_transitions"])
    dense["hmm_log_emissions"] = np.log(np.stack([dense_emissions(h) for h in with_hmms.hmms_]))
    serialization.save(tmp_path / "dense.rep", meta, dense)
    assert np.array_equal(WordRepresentations.load(tmp_path / "dense.rep").hidden_states(words),
                          with_hmms.hidden_states(words))
    bad = tmp_path / "bad.rep"
    wrong = dict(arrays, hmm_transitions=arrays["hmm_transitions"][:, :2])
    serialization.save(bad, meta, wrong)
    with pytest.raises(SscrfError, match="bad.rep.*hmm_transitions must be float64"):
        WordRepresentations.load(bad)
    above = dict(arrays, hmm_start=arrays["hmm_start"] + 1.0)
    serialization.save(bad, meta, above)
    with pytest.raises(SscrfError, match="HMM 0: start must hold probabilities"):
        WordRepresentations.load(bad)
    serialization.save(bad, dict(meta, hmm_shapes=["~x", "~x"]), arrays)
    with pytest.raises(SscrfError, match="repeats a shape class"):
        WordRepresentations.load(bad)
    serialization.save(bad, old_meta, arrays)
    with pytest.raises(SscrfError, match="HMM arrays without hmm_states"):
        WordRepresentations.load(bad)


@pytest.mark.parametrize("setting, message", [
    ({"hmm_states": 1}, "at least 2"), ({"hmm_states": -1}, "hmm_states"),
    ({"hmm_states": 2, "hmms": 0}, "hmms"), ({"hmm_states": 2, "hmm_passes": 0}, "hmm_passes"),
    ({"hmm_states": 2, "hmm_support": 0}, "hmm_support"),
    ({"hmm_states": 2, "hmm_decoding": "beam"}, "hmm_decoding must be one of viterbi, posterior")])
def test_bad_hmm_settings(setting, message):
    with pytest.raises(SscrfError, match=message):
        WordRepresentations(dim=2, clusters=(2,), **setting).fit(grammar(20))


def test_cli_represent_with_hmms_train_tag(tmp_path, capsys):
    from sscrf import CRF
    from sscrf.cli import main

    raw, rep, model = tmp_path / "raw.txt", tmp_path / "h.rep", tmp_path / "m.model"
    raw.write_text("\n".join(" ".join(s) for s in grammar(200, 1)) + "\n")
    nouns = {"cat", "dog", "bird", "Rex"}
    for name, seed in (("train.txt", 2), ("test.txt", 3)):
        with open(tmp_path / name, "w") as f:
            for s in grammar(15, seed):
                f.write("".join(f"{w} {'B-N' if w in nouns else 'O'}\n" for w in s) + "\n")
    assert main(["represent", str(raw), "-o", str(rep), "--dim", "3", "--clusters", "2",
                 "--hmm-states", "3", "--hmms", "2", "--hmm-passes", "4", "-q",
                 "--threads", "1"]) == 0
    assert "2 HMMs of 3 states" in capsys.readouterr().out
    assert main(["represent", str(raw), "-o", str(tmp_path / "p.rep"), "--dim", "3",
                 "--clusters", "2", "--hmm-states", "3", "--hmm-passes", "1",
                 "--hmm-decoding", "posterior", "-q"]) == 0
    assert WordRepresentations.load(tmp_path / "p.rep").hmm_decoding == "posterior"
    direct = WordRepresentations(dim=3, clusters=(2,), hmm_states=3, hmms=2, hmm_passes=4,
                                 n_threads=2).fit(line.split()
                                                  for line in raw.read_text().splitlines())
    loaded = WordRepresentations.load(rep)
    for a, b in zip(loaded.hmms_, direct.hmms_):
        assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert main(["train", str(tmp_path / "train.txt"), "--representations", str(rep), "-m",
                 str(model), "-q", "--max-iterations", "20"]) == 0
    crf = CRF.load(model)
    assert crf.representations_["columns"] == 3  # one cluster column, two state columns
    assert any(t.startswith("Urep.h1") for t in crf.templates)
    assert any(a.startswith("Urep.h0+0:") for a in crf.attributes_)
    capsys.readouterr()
    assert main(["tag", "-m", str(model), str(tmp_path / "test.txt")]) == 0
    lines = [ln.split() for ln in capsys.readouterr().out.splitlines() if ln]
    assert len(lines) == 75 and sum(a[1] == a[2] for a in lines) == len(lines)
