"""Token accuracy and conlleval-style chunk scores.

Expected chunks and counts are worked out by hand in the comments, from
conlleval.pl's startOfChunk/endOfChunk rules. A transcription of conlleval's
counting loop (below) cross-checks random sequences.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sscrf.errors import SscrfError, SscrfTypeError
from sscrf.metrics import (EncodedChunkF1, chunk_scores, chunks, format_chunk_report,
                           token_accuracy)

# ------------------------------------------------------------------- chunks


@pytest.mark.parametrize(
    "labels, expected",
    [
        # B starts, I continues, O ends; B right after a chunk starts a new one.
        (["B-NP", "I-NP", "O", "B-VP", "B-NP", "I-NP"], [("NP", 0, 2), ("VP", 3, 4), ("NP", 4, 6)]),
        # I after O starts a chunk (conlleval reads IOB1 and IOB2 alike).
        (["O", "I-NP", "I-NP", "O"], [("NP", 1, 3)]),
        # I at the start of a sentence: the previous tag is the boundary, O.
        (["I-NP"], [("NP", 0, 1)]),
        # B-X B-X: two chunks.
        (["B-NP", "B-NP"], [("NP", 0, 1), ("NP", 1, 2)]),
        # I-X I-Y: the type changes, so one ends and another starts.
        (["I-X", "I-Y"], [("X", 0, 1), ("Y", 1, 2)]),
        (["B-X", "I-Y"], [("X", 0, 1), ("Y", 1, 2)]),
        # Type mismatch on the last token.
        (["B-X", "I-X", "I-Y"], [("X", 0, 2), ("Y", 2, 3)]),
        # A chunk running to the end of the sentence.
        (["O", "B-PP"], [("PP", 1, 2)]),
        # The type is everything after the first hyphen.
        (["B-A-B", "I-A-B", "I-A"], [("A-B", 0, 2), ("A", 2, 3)]),
        # Untyped tags have type ""; with no type change nothing starts.
        (["NN", "VB", "O"], []),
        ([], []),
        (["O", "O"], []),
    ],
)
def test_chunks_iob2(labels, expected):
    assert chunks(labels) == expected
    assert chunks(labels, scheme="iob2") == expected


def test_chunks_iob1():
    # IOB1: B only separates two adjacent chunks of one type.
    # I-NP I-NP | B-NP I-NP | O | I-VP  ->  NP[0,2) NP[2,4) VP[5,6)
    labels = ["I-NP", "I-NP", "B-NP", "I-NP", "O", "I-VP"]
    assert chunks(labels, scheme="iob1") == [("NP", 0, 2), ("NP", 2, 4), ("VP", 5, 6)]
    # I-NP directly followed by I-VP: two chunks, no B needed in IOB1.
    assert chunks(["I-NP", "I-VP"], scheme="iob1") == [("NP", 0, 1), ("VP", 1, 2)]


def test_chunks_ioe_with_conlleval_rules():
    # conlleval also reads IOE: E-X I-X is an end then a start.
    # I-NP E-NP | I-NP E-NP | O E-VP  ->  NP[0,2) NP[2,4) VP[5,6)
    labels = ["I-NP", "E-NP", "I-NP", "E-NP", "O", "E-VP"]
    assert chunks(labels) == [("NP", 0, 2), ("NP", 2, 4), ("VP", 5, 6)]


def test_chunks_iobes():
    labels = ["S-X", "S-X", "B-Y", "E-Y", "S-Y", "O", "B-X", "I-X", "E-X", "B-X", "E-X"]
    # With S rules: S-X, S-X, B-Y..E-Y, S-Y, then B-X I-X E-X and B-X E-X
    # (E followed by B is an end and a start).
    assert chunks(labels, scheme="iobes") == [
        ("X", 0, 1), ("X", 1, 2), ("Y", 2, 4), ("Y", 4, 5), ("X", 6, 9), ("X", 9, 11),
    ]
    # conlleval.pl itself has no S rules: S-X S-X has no start/end pair and
    # the same type, so it is one chunk; B-Y after S-X starts on the type
    # change; E-Y S-Y has no pair and the same type, so Y runs on to the O;
    # E-X B-X has no pair either, so X runs from 6 to the end.
    assert chunks(labels, scheme="iob2") == [("X", 0, 2), ("Y", 2, 5), ("X", 6, 11)]


def test_chunks_errors():
    with pytest.raises(SscrfError, match="token 1"):
        chunks(["B-NP", None])
    with pytest.raises(SscrfError, match="scheme"):
        chunks(["O"], scheme="bilou")
    with pytest.raises(SscrfError, match="string"):
        chunks("B-NP")


# ------------------------------------------------------------ chunk scores

# Two sentences, worked by hand:
#   sentence 0  true: NP[0,2) VP[3,4) NP[4,5)     pred: NP[0,2) NP[3,4) NP[4,5)
#   sentence 1  true: PP[0,1) NP[1,3)             pred: PP[0,1) NP[1,2)
# correct: NP[0,2), NP[4,5) in sentence 0 and PP[0,1) in sentence 1; the
# predicted NP[1,2) starts right but ends early, NP[3,4) has the wrong type.
#   NP: true 3, pred 4, correct 2 -> P 1/2, R 2/3, F1 = 2(1/2)(2/3)/(7/6) = 4/7
#   VP: true 1, pred 0, correct 0 -> 0, 0, 0
#   PP: true 1, pred 1, correct 1 -> 1, 1, 1
#   all: true 5, pred 5, correct 3 -> P = R = F1 = 3/5
# Tokens: sentence 0 differs at token 3, sentence 1 at token 2 -> 6/8 = 0.75.
Y_TRUE = [["B-NP", "I-NP", "O", "B-VP", "B-NP"], ["B-PP", "B-NP", "I-NP"]]
Y_PRED = [["B-NP", "I-NP", "O", "B-NP", "B-NP"], ["B-PP", "B-NP", "O"]]


def test_chunk_scores_worked_example():
    s = chunk_scores(Y_TRUE, Y_PRED)
    assert (s["n_true"], s["n_pred"], s["n_correct"]) == (5, 5, 3)
    assert s["precision"] == pytest.approx(0.6)
    assert s["recall"] == pytest.approx(0.6)
    assert s["f1"] == pytest.approx(0.6)
    assert sorted(s["per_type"]) == ["NP", "PP", "VP"]
    np_ = s["per_type"]["NP"]
    assert (np_["n_true"], np_["n_pred"], np_["n_correct"]) == (3, 4, 2)
    assert np_["precision"] == pytest.approx(0.5)
    assert np_["recall"] == pytest.approx(2 / 3)
    assert np_["f1"] == pytest.approx(4 / 7)
    assert s["per_type"]["VP"] == {
        "precision": 0.0, "recall": 0.0, "f1": 0.0, "n_true": 1, "n_pred": 0, "n_correct": 0,
    }
    assert s["per_type"]["PP"] == {
        "precision": 1.0, "recall": 1.0, "f1": 1.0, "n_true": 1, "n_pred": 1, "n_correct": 1,
    }


def test_token_accuracy_worked_example():
    assert token_accuracy(Y_TRUE, Y_PRED) == pytest.approx(0.75)
    assert token_accuracy(Y_TRUE, Y_TRUE) == 1.0


def test_chunks_do_not_cross_sentences():
    # Joined, "B-NP I-NP" would be one chunk; split, the I-NP after the
    # boundary starts a second chunk.
    s = chunk_scores([["B-NP"], ["I-NP"]], [["B-NP"], ["B-NP"]])
    assert (s["n_true"], s["n_pred"], s["n_correct"]) == (2, 2, 2)


def test_type_mismatch_is_not_correct():
    s = chunk_scores([["B-NP", "I-NP"]], [["B-VP", "I-VP"]])
    assert (s["n_true"], s["n_pred"], s["n_correct"]) == (1, 1, 0)
    assert s["f1"] == 0.0
    assert s["per_type"]["NP"]["recall"] == 0.0
    assert s["per_type"]["VP"]["precision"] == 0.0


def test_no_chunks_anywhere():
    s = chunk_scores([["O", "O"]], [["O", "O"]])
    assert s == {
        "precision": 0.0, "recall": 0.0, "f1": 0.0,
        "n_true": 0, "n_pred": 0, "n_correct": 0, "per_type": {},
    }


def test_only_predicted_or_only_true_chunks():
    # 0 true chunks: recall 0; 1 predicted, none correct: precision 0.
    s = chunk_scores([["O"]], [["B-X"]])
    assert (s["precision"], s["recall"], s["f1"], s["n_pred"]) == (0.0, 0.0, 0.0, 1)
    s = chunk_scores([["B-X"]], [["O"]])
    assert (s["precision"], s["recall"], s["f1"], s["n_true"]) == (0.0, 0.0, 0.0, 1)


def test_iob1_scores():
    # True IOB1 chunks NP[0,2) NP[2,3); predicting all I-NP gives one NP[0,3).
    s = chunk_scores([["I-NP", "I-NP", "B-NP"]], [["I-NP", "I-NP", "I-NP"]], scheme="iob1")
    assert (s["n_true"], s["n_pred"], s["n_correct"]) == (2, 1, 0)


def test_shape_errors():
    with pytest.raises(SscrfError, match="sentence 1"):
        chunk_scores([["O"], ["O", "O"]], [["O"], ["O"]])
    with pytest.raises(SscrfError, match="sentence 1"):
        token_accuracy([["O"], ["O", "O"]], [["O"], ["O"]])
    with pytest.raises(SscrfError, match="2 true sentences but 1"):
        chunk_scores([["O"], ["O"]], [["O"]])
    with pytest.raises(SscrfError, match="2 true sentences but 1"):
        token_accuracy([["O"], ["O"]], [["O"]])
    with pytest.raises(SscrfError, match="no tokens"):
        token_accuracy([], [])
    with pytest.raises(SscrfError, match="no tokens"):
        token_accuracy([[]], [[]])
    with pytest.raises(SscrfError, match="sentence 0, token 0"):
        chunk_scores([[None]], [["O"]])
    with pytest.raises(SscrfError, match="scheme"):
        chunk_scores([["O"]], [["O"]], scheme="IOB")


def test_format_chunk_report():
    s = chunk_scores(Y_TRUE, Y_PRED)
    report = format_chunk_report(s, accuracy=0.75)
    lines = report.splitlines()
    assert report.endswith("\n")
    assert lines[0] == "5 phrases; found: 5 phrases; correct: 3."
    assert lines[1] == "accuracy:  75.00%; precision:  60.00%; recall:  60.00%; FB1:  60.00"
    # 4/7 = 57.142...%; types sorted; the last number is the predicted count.
    assert lines[2] == "               NP: precision:  50.00%; recall:  66.67%; FB1:  57.14  4"
    assert lines[3] == "               PP: precision: 100.00%; recall: 100.00%; FB1: 100.00  1"
    assert lines[4] == "               VP: precision:   0.00%; recall:   0.00%; FB1:   0.00  0"
    assert len(lines) == 5
    assert format_chunk_report(s).splitlines()[1].startswith("precision:  60.00%")


# --------------------------------------- cross-check with conlleval's loop
#
# A line-by-line transcription of conlleval.pl's main loop (version
# 2004-01-26): it never builds chunks, it tracks whether the current gold and
# guessed chunks have agreed so far ($inCorrect). For IOBES the same loop runs
# with the start/end pairs of the common IOBES extension of the script.

_END = {("B", "B"), ("B", "O"), ("I", "B"), ("I", "O"), ("E", "E"), ("E", "I"), ("E", "O")}
_START = {("B", "B"), ("I", "B"), ("O", "B"), ("O", "I"), ("E", "E"), ("E", "I"), ("O", "E")}
_END_S = _END | {("B", "S"), ("I", "S"), ("E", "S"), ("E", "B")} | {
    ("S", t) for t in "EIOSB"
}
_START_S = _START | {(p, "B") for p in "SE"} | {(p, "S") for p in "BIOSE"} | {
    ("S", "I"), ("S", "E"),
}


def _perl_end(pt, t, pty, ty, pairs):
    return (pt, t) in pairs or (pt not in ("O", ".") and pty != ty) or pt in ("]", "[")


def _perl_start(pt, t, pty, ty, pairs):
    return (pt, t) in pairs or (t not in ("O", ".") and pty != ty) or t in ("[", "]")


def _conlleval_counts(y_true, y_pred, iobes=False):
    end_pairs, start_pairs = (_END_S, _START_S) if iobes else (_END, _START)

    def split(label):
        tag, _, ty = label.partition("-")
        return (tag, ty) if "-" in label else (label, "")

    found_correct, found_guessed, correct_chunk = {}, {}, {}
    in_correct = False
    last_c, last_ct, last_g, last_gt = "O", "", "O", ""
    # Sentences are separated by boundary lines, read as O for both.
    rows = []
    for t, p in zip(y_true, y_pred):
        rows += [split(a) + split(b) for a, b in zip(t, p)]
        rows.append(("O", "", "O", ""))
    for c, ct, g, gt in rows:
        end_c = _perl_end(last_c, c, last_ct, ct, end_pairs)
        end_g = _perl_end(last_g, g, last_gt, gt, end_pairs)
        start_c = _perl_start(last_c, c, last_ct, ct, start_pairs)
        start_g = _perl_start(last_g, g, last_gt, gt, start_pairs)
        if in_correct:
            if end_c and end_g and last_gt == last_ct:
                in_correct = False
                correct_chunk[last_ct] = correct_chunk.get(last_ct, 0) + 1
            elif end_c != end_g or gt != ct:
                in_correct = False
        if start_c and start_g and gt == ct:
            in_correct = True
        if start_c:
            found_correct[ct] = found_correct.get(ct, 0) + 1
        if start_g:
            found_guessed[gt] = found_guessed.get(gt, 0) + 1
        last_c, last_ct, last_g, last_gt = c, ct, g, gt
    if in_correct:
        correct_chunk[last_ct] = correct_chunk.get(last_ct, 0) + 1
    return found_correct, found_guessed, correct_chunk


def _corpus_pair(tags):
    label = st.sampled_from(["O"] + [f"{t}-{ty}" for t in tags for ty in "XY"])
    # A sentence is drawn as (true, predicted) label pairs so lengths match.
    sentence = st.lists(st.tuples(label, label), max_size=7)
    return st.lists(sentence, min_size=1, max_size=4)


def _check_against_conlleval(pairs, scheme):
    y_true = [[t for t, _ in sent] for sent in pairs]
    y_pred = [[p for _, p in sent] for sent in pairs]
    found_correct, found_guessed, correct_chunk = _conlleval_counts(
        y_true, y_pred, iobes=scheme == "iobes"
    )
    s = chunk_scores(y_true, y_pred, scheme=scheme)
    assert s["n_true"] == sum(found_correct.values())
    assert s["n_pred"] == sum(found_guessed.values())
    assert s["n_correct"] == sum(correct_chunk.values())
    for ty, d in s["per_type"].items():
        assert d["n_true"] == found_correct.get(ty, 0)
        assert d["n_pred"] == found_guessed.get(ty, 0)
        assert d["n_correct"] == correct_chunk.get(ty, 0)


# IOB1, IOB2 and IOE tags mixed freely, read with conlleval's own rules.
@settings(max_examples=80, deadline=None)
@given(pairs=_corpus_pair("BIE"))
def test_counts_match_conlleval_loop(pairs):
    _check_against_conlleval(pairs, "iob2")


@settings(max_examples=80, deadline=None)
@given(pairs=_corpus_pair("BIES"))
def test_counts_match_conlleval_loop_iobes(pairs):
    _check_against_conlleval(pairs, "iobes")


# Label ids against a fixed truth, as a fit scores its dev sentences: the F1 that
# chunk_scores' per-token loop gives (cross-checked with conlleval above), with
# odd tags mixed in and true labels that no id names.
_ODD = ["O", "B-X", "I-X", "B-Y", "I-Y", "E-X", "[", "]", ".", "B", "I", "I-"]


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_encoded_chunk_f1_is_chunk_scores_f1(data):
    names = data.draw(st.lists(st.sampled_from(_ODD), min_size=1, unique=True))
    lengths = data.draw(st.lists(st.integers(0, 7), min_size=1, max_size=4))
    y_true = [data.draw(st.lists(st.sampled_from(_ODD), min_size=n, max_size=n))
              for n in lengths]
    ids = data.draw(st.lists(st.integers(0, len(names) - 1), min_size=sum(lengths),
                             max_size=sum(lengths)))
    y_pred, k = [], 0
    for n in lengths:
        y_pred.append([names[i] for i in ids[k:k + n]])
        k += n
    assert (EncodedChunkF1(y_true, names)(np.array(ids, dtype=np.int64))
            == chunk_scores(y_true, y_pred)["f1"])


def test_encoded_chunk_f1_refuses_bad_input():
    score = EncodedChunkF1([["B-X", "I-X"], ["O"]], ["O", "B-X", "I-X"])
    assert score(np.array([1, 2, 0])) == 1.0
    with pytest.raises(SscrfError, match="for 3 tokens"):
        score(np.array([1, 2]))
    with pytest.raises(SscrfError, match=r"in \[0, 3\)"):
        score(np.array([1, 2, 3]))
    with pytest.raises(SscrfTypeError, match="must be str"):
        EncodedChunkF1([["B-X", None]], ["O", "B-X"])


# -- sklearn-crfsuite's flat metrics -------------------------------------------

FLAT_TRUE = [["B-NP", "I-NP", "O"], ["B-VP", "O"]]
FLAT_PRED = [["B-NP", "O", "O"], ["B-VP", "O"]]


def test_sequence_accuracy_score_counts_whole_sentences():
    from sscrf.metrics import sequence_accuracy_score
    assert sequence_accuracy_score(FLAT_TRUE, FLAT_PRED) == 0.5
    assert sequence_accuracy_score(FLAT_TRUE, FLAT_TRUE) == 1.0


def test_flat_metrics_match_scikit_learn_on_concatenated_tokens():
    sk = pytest.importorskip("sklearn.metrics")
    from sscrf import metrics as m
    t = [label for s in FLAT_TRUE for label in s]
    p = [label for s in FLAT_PRED for label in s]
    assert m.flat_accuracy_score(FLAT_TRUE, FLAT_PRED) == sk.accuracy_score(t, p) == 0.8
    labels = ["B-NP", "I-NP", "B-VP"]
    for name in ("precision", "recall", "f1"):
        ours = getattr(m, f"flat_{name}_score")(FLAT_TRUE, FLAT_PRED, average="weighted",
                                                labels=labels, zero_division=0)
        assert ours == getattr(sk, f"{name}_score")(t, p, average="weighted", labels=labels,
                                                    zero_division=0)
    report = m.flat_classification_report(FLAT_TRUE, FLAT_PRED, labels=labels[:2], digits=3,
                                          zero_division=0)
    assert report == sk.classification_report(t, p, labels=labels[:2], digits=3,
                                              zero_division=0)


def test_flat_metrics_without_scikit_learn_name_the_install(monkeypatch):
    import sys
    from sscrf import metrics as m
    monkeypatch.setitem(sys.modules, "sklearn", None)   # import sklearn now raises ImportError
    with pytest.raises(SscrfError, match="pip install scikit-learn"):
        m.flat_f1_score(FLAT_TRUE, FLAT_PRED, average="weighted")
