"""The built-in demo HMM corpus and the demo run."""

import io

import pytest

from sscrf.demo import (EMISSIONS, LABELS, PROTOTYPES, START, TRANSITIONS, WORDS,
                        generate_hmm_corpus, run_demo)


def iob2_violations(labels):
    """Positions where I-X follows neither B-X nor I-X (including position 0)."""
    bad = []
    previous = "O"
    for t, label in enumerate(labels):
        if label.startswith("I-"):
            chunk_type = label[2:]
            if previous not in (f"B-{chunk_type}", f"I-{chunk_type}"):
                bad.append(t)
        previous = label
    return bad


def test_same_seed_same_corpus():
    a = generate_hmm_corpus(50, seed=3)
    b = generate_hmm_corpus(50, seed=3)
    assert a == b


def test_different_seeds_differ():
    assert generate_hmm_corpus(50, seed=0) != generate_hmm_corpus(50, seed=1)


def test_shapes_and_values():
    tokens, labels = generate_hmm_corpus(200, seed=1, min_length=3, max_length=7)
    assert len(tokens) == len(labels) == 200
    lengths = set()
    for sentence, sentence_labels in zip(tokens, labels):
        assert len(sentence) == len(sentence_labels)
        assert 3 <= len(sentence) <= 7
        lengths.add(len(sentence))
        for token, label in zip(sentence, sentence_labels):
            assert isinstance(token, list) and len(token) == 2
            word, pos = token
            assert isinstance(word, str) and word and not any(c.isspace() for c in word)
            assert pos in WORDS
            assert label in LABELS
    assert lengths == {3, 4, 5, 6, 7}


def test_labels_respect_iob2():
    _, labels = generate_hmm_corpus(1000, seed=2)
    for sentence_labels in labels:
        assert iob2_violations(sentence_labels) == []
    # and the checker itself catches violations
    assert iob2_violations(["I-NP"]) == [0]
    assert iob2_violations(["B-NP", "I-VP", "O", "I-NP"]) == [1, 3]


def test_every_label_occurs_and_words_are_ambiguous():
    tokens, labels = generate_hmm_corpus(300, seed=0)
    seen = {label for sentence in labels for label in sentence}
    assert seen == set(LABELS)
    labels_of_word = {}
    for sentence, sentence_labels in zip(tokens, labels):
        for (word, _), label in zip(sentence, sentence_labels):
            labels_of_word.setdefault(word, set()).add(label)
    assert sum(len(v) > 1 for v in labels_of_word.values()) >= 5


def test_tables_are_distributions_and_iob2():
    assert abs(sum(START.values()) - 1) < 1e-12
    assert not any(label.startswith("I-") for label, p in START.items() if p > 0)
    for previous, row in TRANSITIONS.items():
        assert abs(sum(row.values()) - 1) < 1e-12
        for label, p in row.items():
            if p > 0 and label.startswith("I-"):
                assert previous in (f"B-{label[2:]}", label)
    for row in EMISSIONS.values():
        assert abs(sum(row.values()) - 1) < 1e-12
        assert set(row) <= set(WORDS)


def test_lengths_one_and_empty_corpus():
    tokens, labels = generate_hmm_corpus(10, min_length=1, max_length=1)
    assert all(len(s) == 1 for s in tokens)
    assert all(not l[0].startswith("I-") for l in labels)
    assert generate_hmm_corpus(0) == ([], [])


@pytest.mark.parametrize("kwargs", [
    {"n_sentences": -1}, {"n_sentences": 2.5}, {"n_sentences": 3, "min_length": 0},
    {"n_sentences": 3, "min_length": 5, "max_length": 4},
])
def test_bad_arguments(kwargs):
    n = kwargs.pop("n_sentences")
    with pytest.raises(ValueError):
        generate_hmm_corpus(n, **kwargs)


def test_run_demo_small():
    out = io.StringIO()
    result = run_demo(n_train=150, n_test=50, seed=0, n_threads=1, verbose=False, out=out,
                      max_iterations=40)
    text = out.getvalue()
    assert "FB1" in text and "accuracy" in text and "examples" in text
    assert result["n_train"] == 150 and result["n_test"] == 50
    assert 0.5 < result["f1"] <= 1.0
    assert 0.7 < result["accuracy"] <= 1.0
    assert f"FB1: {100 * result['f1']:6.2f}" in text
    assert result["chunk_scores"]["f1"] == result["f1"]


def test_run_demo_silent():
    result = run_demo(n_train=30, n_test=10, seed=1, n_threads=1, verbose=False, out=None)
    assert 0.0 <= result["f1"] <= 1.0


def test_run_demo_side_by_side():
    out = io.StringIO()
    result = run_demo(n_train=90, n_test=40, seed=2, n_threads=1, verbose=False, out=out,
                      max_iterations=30, n_unlabeled=300, n_few=20)
    side = result["side_by_side"]
    assert set(side) == {"few", "few+representations", "few+active", "few+random",
                         "few+partial", "few+prototypes", "prototypes"}
    assert all(0 <= f1 <= 1 for f1 in side.values())
    text = out.getvalue()
    for name, f1 in side.items():  # each row printed with its figure
        assert f"{100 * f1:6.2f}" in text, name
    assert "20 labeled sentences" in text and "picked by active learning" in text
    assert "40 more with half their tokens labeled" in text
    # n_few is bounded by the pool the rest of n_train leaves; 0 drops the table
    small = run_demo(n_train=12, n_test=10, n_threads=1, verbose=False, out=None,
                     max_iterations=10, n_unlabeled=0, n_few=50)
    assert "few+representations" not in small["side_by_side"]
    assert "side_by_side" not in run_demo(n_train=12, n_test=10, n_threads=1, verbose=False,
                                          out=None, max_iterations=10, n_few=0, n_unlabeled=0)


def test_each_prototype_word_is_seen_mostly_with_its_label():
    tokens, labels = generate_hmm_corpus(3000, seed=5)
    counts = {}
    for sentence, sentence_labels in zip(tokens, labels):
        for (word, _), label in zip(sentence, sentence_labels):
            if word in PROTOTYPES:
                counts.setdefault(word, {}).setdefault(label, 0)
                counts[word][label] += 1
    assert set(counts) == set(PROTOTYPES)
    for word, label in PROTOTYPES.items():
        assert max(counts[word], key=counts[word].get) == label, (word, counts[word])
        assert counts[word][label] > 0.5 * sum(counts[word].values()), (word, counts[word])
    assert set(PROTOTYPES.values()) == set(LABELS)
