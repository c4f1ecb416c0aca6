"""The Viterbi path of a SparseHmm against enumeration of every state sequence,
and against a log-space numpy Viterbi on texts too long to enumerate."""

import itertools

import numpy as np
import pytest

from sscrf import _core
from sscrf.errors import SscrfError
from sscrf.hidden_states import HiddenMarkovModel, viterbi_states

from hmm_common import dense_emissions, packed, random_hmm


def enumerated_best(hmm, sentence):
    """(the largest joint probability, every path reaching it within 1e-9)."""
    pi, A, B = hmm.start, hmm.transitions, dense_emissions(hmm)
    joint = {}
    for y in itertools.product(range(len(pi)), repeat=len(sentence)):
        p = pi[y[0]] * B[sentence[0], y[0]]
        for t in range(1, len(sentence)):
            p *= A[y[t - 1], y[t]] * B[sentence[t], y[t]]
        joint[y] = p
    best = max(joint.values())
    return best, [list(y) for y, p in joint.items() if p >= best * (1 - 1e-9)]


def joint_probability(hmm, sentence, path):
    B = dense_emissions(hmm)
    p = hmm.start[path[0]] * B[sentence[0], path[0]]
    for t in range(1, len(sentence)):
        p *= hmm.transitions[path[t - 1], path[t]] * B[sentence[t], path[t]]
    return p


@pytest.mark.parametrize("seed", range(8))
def test_the_path_is_the_enumerated_most_probable(seed):
    # supports of 1 to 6 states: the four-rows sweep and its remainder
    rng = np.random.default_rng(seed)
    n_symbols, K = 7, 6
    hmm = random_hmm(rng, n_symbols, K, full=seed == 0)
    sentences = [list(rng.integers(0, n_symbols, n)) for n in (0, 1, 2, 4, 5, 3)]
    symbols, offsets = packed(sentences)
    got = {threads: viterbi_states([hmm.kernel()], symbols, offsets, threads)
           for threads in (1, 2)}
    assert np.array_equal(got[1], got[2])
    assert got[1].shape == (1, len(symbols))
    for s, (lo, hi) in zip(sentences, zip(offsets[:-1], offsets[1:])):
        if not s:
            continue
        path = got[1][0, lo:hi].tolist()
        best, argmax = enumerated_best(hmm, s)
        assert joint_probability(hmm, s, path) == pytest.approx(best, rel=1e-12)
        assert len(argmax) == 1 and path == argmax[0]


def test_ties_go_to_the_lower_state():
    # states 1 and 2 alike in everything: every path ties
    alike = HiddenMarkovModel(np.full(3, 1 / 3), np.full((3, 3), 1 / 3), np.array([0, 2, 4]),
                              np.array([1, 2, 1, 2], np.int32), np.full(4, 0.5))
    assert viterbi_states([alike.kernel()], [0, 1, 1, 0]).tolist() == [[1, 1, 1, 1]]
    # symbol 0 emitted alike by states 0, 1, 2; symbol 1 by 0 and 1
    def two_steps(row1):
        transitions = np.array([[0.5, 0.25, 0.25], row1, [1 / 3, 1 / 3, 1 / 3]])
        hmm = HiddenMarkovModel(np.array([0.4, 0.4, 0.2]), transitions, np.array([0, 3, 5]),
                                np.array([0, 1, 2, 0, 1], np.int32),
                                np.array([1 / 3, 1 / 3, 1 / 3, 0.5, 0.5]))
        _, argmax = enumerated_best(hmm, [0, 1])
        return viterbi_states([hmm.kernel()], [0, 1])[0].tolist(), argmax
    # [0, 0] and [1, 1] tie: the lower last state wins
    path, argmax = two_steps([0.25, 0.5, 0.25])
    assert sorted(argmax) == [[0, 0], [1, 1]] and path == [0, 0]
    # [0, 0] and [1, 0] tie: the lower predecessor wins
    path, argmax = two_steps([0.5, 0.25, 0.25])
    assert sorted(argmax) == [[0, 0], [1, 0]] and path == [0, 0]


def numpy_viterbi(hmm, sentence):
    """Log-space Viterbi over every state, ties to the lower state."""
    with np.errstate(divide="ignore"):
        log_pi, log_A = np.log(hmm.start), np.log(hmm.transitions)
        log_B = np.log(dense_emissions(hmm))
    score = log_pi + log_B[sentence[0]]
    back = []
    for x in sentence[1:]:
        candidates = score[:, None] + log_A
        back.append(candidates.argmax(0))
        score = candidates.max(0) + log_B[x]
    path = [int(score.argmax())]
    for b in reversed(back):
        path.append(int(b[path[-1]]))
    return path[::-1]


def test_long_texts_match_a_log_space_viterbi_at_any_thread_count():
    # 1,000-token sentences: their best path's probability underflows a double
    # unless each step is rescaled
    rng = np.random.default_rng(11)
    n_symbols, K = 30, 12
    hmms = [random_hmm(rng, n_symbols, K) for _ in range(2)]
    sentences = [list(rng.integers(0, n_symbols, n)) for n in rng.integers(1, 30, 300)]
    sentences += [list(rng.integers(0, n_symbols, 1000)) for _ in range(2)]
    symbols, offsets = packed(sentences)
    runs = [viterbi_states([h.kernel() for h in hmms], symbols, offsets, threads)
            for threads in (1, 2, 3)]
    for run in runs[1:]:
        assert np.array_equal(run, runs[0])
    for m, hmm in enumerate(hmms):
        want = np.concatenate([numpy_viterbi(hmm, s) for s in sentences])
        assert np.array_equal(runs[0][m], want)


def test_refusals_name_the_problem():
    rng = np.random.default_rng(0)
    kernel = random_hmm(rng, 4, 3).kernel()
    with pytest.raises(SscrfError, match=r"symbols must be in \[0, 4\), got 4"):
        viterbi_states([kernel], [0, 4])
    with pytest.raises(SscrfError, match="hmms must be a list of SparseHmm"):
        _core.hmm_viterbi_states([kernel, "hmm"], np.zeros(1, np.int32), np.array([0, 1]), 1)
    with pytest.raises(SscrfError, match="n_threads"):
        viterbi_states([kernel], [0], None, 0)
    with pytest.raises(SscrfError, match="indptr"):
        viterbi_states([kernel], [0, 1], np.array([0, 3]))
    # no path: state 0 alone emits symbol 0, and it never follows itself
    stuck = HiddenMarkovModel(np.array([1.0, 0.0]), np.array([[0.0, 1.0], [0.5, 0.5]]),
                              np.array([0, 1, 3]), np.array([0, 0, 1], np.int32),
                              np.array([1.0, 0.0, 1.0]))
    assert viterbi_states([stuck.kernel()], [0, 1, 1]).tolist() == [[0, 1, 1]]
    with pytest.raises(SscrfError, match="probability 0 at its token 1"):
        viterbi_states([stuck.kernel()], [0, 0])
    assert viterbi_states([], [0, 1]).shape == (0, 2)
    assert viterbi_states([kernel], []).shape == (1, 0)
