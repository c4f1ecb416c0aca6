"""HMMs trained by EM for state features: the E-step against enumeration of
every state sequence, EM's monotone likelihood, decoding, and the states as
word-representation features (files, threads, the command line)."""

import itertools

import numpy as np
import pytest

from sscrf import serialization
from sscrf.errors import SscrfError
from sscrf.hidden_states import (HiddenMarkovModel, _dense_layout, _one_hot_corpus,
                                 expected_counts, fit_hmm, most_probable_states)
from sscrf.progress import Progress
from sscrf.representations import WordRepresentations, word_shape_class


def random_hmm(rng, n_symbols, K):
    A = rng.random((K, K)) + 0.1
    pi = rng.random(K) + 0.1
    B = rng.random((n_symbols, K)) + 0.1
    return HiddenMarkovModel(np.log(pi / pi.sum()), np.log(A / A.sum(1, keepdims=True)),
                             np.log(B / B.sum(0, keepdims=True)))


def enumerate_counts(hmm, sentences):
    """log p(text) and the expected counts, summing p over every state sequence."""
    pi, A, B = (np.exp(a) for a in hmm)
    K = len(pi)
    log_p = 0.0
    emissions, transitions, start = np.zeros(B.shape), np.zeros((K, K)), np.zeros(K)
    for s in sentences:
        joint = {}
        for y in itertools.product(range(K), repeat=len(s)):
            p = pi[y[0]] * B[s[0], y[0]]
            for t in range(1, len(s)):
                p *= A[y[t - 1], y[t]] * B[s[t], y[t]]
            joint[y] = p
        Z = sum(joint.values())
        log_p += np.log(Z)
        for y, p in joint.items():
            q = p / Z
            start[y[0]] += q
            for t in range(len(s)):
                emissions[s[t], y[t]] += q
                if t:
                    transitions[y[t - 1], y[t]] += q
    return log_p, emissions, transitions, start


def packed(sentences):
    symbols = np.array([w for s in sentences for w in s], dtype=np.int32)
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in sentences])]).astype(np.int64)
    return symbols, offsets


@pytest.mark.parametrize("seed", range(4))
def test_expected_counts_match_enumeration(seed):
    rng = np.random.default_rng(seed)
    n_symbols, K = 6, 3
    sentences = [list(rng.integers(0, n_symbols, rng.integers(1, 6))) for _ in range(5)]
    hmm = random_hmm(rng, n_symbols, K)
    symbols, offsets = packed(sentences)
    corpus = _one_hot_corpus(symbols, offsets, n_symbols, labels=True)
    layout = _dense_layout(n_symbols, K)
    want = enumerate_counts(hmm, sentences)
    got = {}
    for threads in (1, 2):
        got[threads] = expected_counts(hmm, corpus, layout, symbols, np.diff(offsets), threads)
        assert got[threads][0] == pytest.approx(want[0], rel=1e-12)
        for g, w in zip(got[threads][1:], want[1:]):
            np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)
    for a, b in zip(got[1][1:], got[2][1:]):  # the same bits at any thread count
        assert np.array_equal(a, b)


def test_em_never_lowers_the_likelihood():
    rng = np.random.default_rng(0)
    sentences = [list(rng.integers(0, 8, rng.integers(2, 9))) for _ in range(40)]
    symbols, offsets = packed(sentences)
    # fit_hmm reports the log-likelihood of its last E-step: that of the model
    # after k - 1 updates, for k iterations
    curve = [fit_hmm(symbols, offsets, 8, 3, k, np.random.default_rng(5), 1,
                     Progress(False))[1] for k in range(1, 12)]
    assert all(b >= a - 1e-12 for a, b in zip(curve, curve[1:]))
    assert curve[-1] > curve[0] + 1e-3
    hmm, _ = fit_hmm(symbols, offsets, 8, 3, 11, np.random.default_rng(5), 1, Progress(False))
    np.testing.assert_allclose(np.exp(hmm.log_start).sum(), 1.0)
    np.testing.assert_allclose(np.exp(hmm.log_transitions).sum(1), 1.0)
    np.testing.assert_allclose(np.exp(hmm.log_emissions).sum(0), 1.0)


def test_most_probable_states_are_the_enumerated_marginals_argmax():
    rng = np.random.default_rng(3)
    hmm = random_hmm(rng, 7, 3)
    for n in (0, 1, 2, 5):
        s = list(rng.integers(0, 7, n))
        got = most_probable_states(hmm, np.array(s, dtype=np.int32))
        if n == 0:
            assert len(got) == 0
            continue
        node = np.zeros((n, 3))
        pi, A, B = (np.exp(a) for a in hmm)
        for y in itertools.product(range(3), repeat=n):
            p = pi[y[0]] * B[s[0], y[0]]
            for t in range(1, n):
                p *= A[y[t - 1], y[t]] * B[s[t], y[t]]
            node[np.arange(n), y] += p
        assert got.tolist() == node.argmax(1).tolist()


def grammar(n, seed=0):
    """Sentences whose word classes follow each other in a fixed order."""
    classes = [["the", "a", "this"], ["cat", "dog", "bird", "Rex"], ["sees", "likes", "eats"]]
    rng = np.random.default_rng(seed)
    return [[c[rng.integers(len(c))] for c in (classes[0], classes[1], classes[2], classes[0],
                                                 classes[1])] for _ in range(n)]


@pytest.fixture(scope="module")
def with_hmms():
    text = grammar(300) + [["the", "Zork42", "sees", "a", "cat"]]
    return WordRepresentations(dim=4, clusters=(2, 4), hmm_states=3, hmms=2, hmm_iterations=30,
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
    plain = WordRepresentations(dim=4, clusters=(2, 4), n_threads=1).fit(grammar(300))
    assert plain.hidden_states(words).shape == (0, 5)
    assert not any(k.startswith("rep.h") for k in plain.features(words)[0])


def test_hmms_have_the_same_bits_at_any_thread_count(with_hmms):
    text = grammar(300) + [["the", "Zork42", "sees", "a", "cat"]]
    two = WordRepresentations(dim=4, clusters=(2, 4), hmm_states=3, hmms=2, hmm_iterations=30,
                              n_threads=2).fit(text)
    for a, b in zip(with_hmms.hmms_, two.hmms_):
        for x, y in zip(a, b):
            assert np.array_equal(x, y)


def test_hmm_file_round_trip_and_refusals(with_hmms, tmp_path):
    path = tmp_path / "h.rep"
    with_hmms.save(path)
    back = WordRepresentations.load(path)
    assert (back.hmm_states, back.hmms, back.hmm_iterations) == (3, 2, 30)
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
    bad = tmp_path / "bad.rep"
    wrong = dict(arrays, hmm_log_transitions=arrays["hmm_log_transitions"][:, :2])
    serialization.save(bad, meta, wrong)
    with pytest.raises(SscrfError, match="bad.rep.*hmm_log_transitions must be float64"):
        WordRepresentations.load(bad)
    positive = dict(arrays, hmm_log_start=np.abs(arrays["hmm_log_start"]))
    serialization.save(bad, meta, positive)
    with pytest.raises(SscrfError, match="hmm_log_start must hold finite log-probabilities"):
        WordRepresentations.load(bad)
    serialization.save(bad, dict(meta, hmm_shapes=["~x", "~x"]), arrays)
    with pytest.raises(SscrfError, match="repeats a shape class"):
        WordRepresentations.load(bad)
    serialization.save(bad, old_meta, arrays)
    with pytest.raises(SscrfError, match="HMM arrays without hmm_states"):
        WordRepresentations.load(bad)


@pytest.mark.parametrize("setting, message", [
    ({"hmm_states": 1}, "at least 2"), ({"hmm_states": -1}, "hmm_states"),
    ({"hmm_states": 2, "hmms": 0}, "hmms"), ({"hmm_states": 2, "hmm_iterations": 0},
                                             "hmm_iterations")])
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
                 "--hmm-states", "3", "--hmms", "2", "--hmm-iterations", "10", "-q",
                 "--threads", "1"]) == 0
    assert "2 HMMs of 3 states" in capsys.readouterr().out
    direct = WordRepresentations(dim=3, clusters=(2,), hmm_states=3, hmms=2, hmm_iterations=10,
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
