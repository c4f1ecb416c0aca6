"""`sscrf tag` (sscrf.cli.tag).

Gold columns, stdout, batches, streaming, constrained decoding, column counts.
"""

import os

import pytest

from sscrf.cli import reading as cli_reading
from sscrf.io import read_conll, write_conll
from cli_common import assert_error, reference_predictions, run
from cli_common import data  # noqa: F401 (fixtures)


def test_tag_with_gold_column(capsys, data, tmp_path):
    out_path = tmp_path / "tagged.txt"
    code, out, err = run(capsys, "tag", "-m", data["model"], data["test"], "-o", out_path)
    assert code == 0, err
    assert out == ""
    tagged = read_conll(out_path, has_labels=False)
    predicted = reference_predictions(data)
    assert len(tagged.tokens) == len(data["X_test"])
    for sentence, x, gold, pred in zip(tagged.tokens, data["X_test"], data["y_test"], predicted):
        assert [token[:2] for token in sentence] == x
        assert [token[2] for token in sentence] == gold
        assert [token[3] for token in sentence] == pred


def test_tag_without_gold_to_stdout(capsys, data):
    code, out, err = run(capsys, "tag", "-m", data["model"], data["test_nogold"])
    assert code == 0, err
    predicted = reference_predictions(data)
    sentences = out.strip("\n").split("\n\n")
    assert len(sentences) == len(predicted)
    first = [line.split() for line in sentences[0].splitlines()]
    assert first == [x + [p] for x, p in zip(data["X_test"][0], predicted[0])]
    # '-o -' is stdout too (it wrote a file named '-')
    assert run(capsys, "tag", "-m", data["model"], data["test_nogold"], "-o", "-")[1] == out
    assert not os.path.exists("-")


@pytest.mark.parametrize("options", [(), ("-n", "3"), ("--constraints", "CONSTRAINTS")])
def test_tag_in_batches_writes_what_one_batch_writes(capsys, data, tmp_path, monkeypatch,
                                                    options):
    # FILE is read and tagged a batch of sentences at a time; the test file's
    # 80 sentences are one batch by default, dozens of 5 tokens here.
    constraints = tmp_path / "constraints.txt"
    allowed = [[None if t % 3 else {"B-NP", "O"} for t in range(len(x))]
               for x in data["X_test"]]
    write_conll(constraints, data["X_test"], allowed)
    argv = ["tag", "-m", data["model"], data["test"]]
    argv += [constraints if option == "CONSTRAINTS" else option for option in options]
    whole = run(capsys, *argv)
    assert whole[0] == 0 and whole[1].count("\n\n") == len(data["X_test"]), whole[2]
    monkeypatch.setattr(cli_reading, "BATCH_TOKENS", 5)
    assert run(capsys, *argv) == whole
    out_path = tmp_path / "tagged.txt"
    assert run(capsys, *argv, "-o", out_path)[0] == 0
    assert out_path.read_text() == whole[1]
    whole_eval = run(capsys, "eval", "-m", data["model"], data["test"])
    monkeypatch.setattr(cli_reading, "BATCH_TOKENS", 1 << 16)
    assert run(capsys, "eval", "-m", data["model"], data["test"]) == whole_eval


def test_tag_streams_and_stops_at_a_malformed_line(capsys, data, tmp_path, monkeypatch):
    # The sentences before a malformed line are tagged and written to stdout
    # by then; a file named by -o is left as it was.
    path = tmp_path / "late_error.txt"
    text = data["test"].read_text()
    path.write_text(text + "a b c d e\n")
    monkeypatch.setattr(cli_reading, "BATCH_TOKENS", 5)
    code, out, err = run(capsys, "tag", "-m", data["model"], path)
    bad_line = text.count("\n") + 1
    assert_error(code, err, f"{path}:{bad_line}: expected 3 columns, found 5")
    assert out.count("\n\n") >= len(data["X_test"]) - 1
    out_path = tmp_path / "kept.txt"
    out_path.write_text("old\n")
    code, _, err = run(capsys, "tag", "-m", data["model"], path, "-o", out_path)
    assert_error(code, err, f"{path}:{bad_line}:")
    assert out_path.read_text() == "old\n"
    assert not [name for name in os.listdir(tmp_path) if name.endswith(".tmp")]


def test_tag_constraints_of_other_sentences(capsys, data, tmp_path):
    X = data["X_test"]
    for n_sentences in (3, len(X) + 2):
        constraints = tmp_path / f"c{n_sentences}.txt"
        sentences = (X * 2)[:n_sentences]
        write_conll(constraints, sentences, [[None] * len(x) for x in sentences])
        code, _, err = run(capsys, "tag", "-m", data["model"], data["test"],
                           "--constraints", constraints)
        assert_error(code, err, f"{constraints}: {n_sentences} sentences, but "
                                f"{data['test']} has {len(X)}")
    constraints = tmp_path / "short_sentence.txt"
    write_conll(constraints, [X[0]] + [x[:-1] for x in X[1:]],
                [[None] * len(x) for x in X[:1]] + [[None] * (len(x) - 1) for x in X[1:]])
    code, _, err = run(capsys, "tag", "-m", data["model"], data["test"],
                       "--constraints", constraints)
    line = len(X[0]) + 2
    assert_error(code, err, f"{constraints}:{line}: sentence 2 has {len(X[1]) - 1} tokens, "
                            f"but {len(X[1])} in {data['test']}")


def test_tag_wrong_number_of_columns(capsys, data, tmp_path):
    path = tmp_path / "wide.txt"
    path.write_text("a b c d e\n")
    code, _, err = run(capsys, "tag", "-m", data["model"], path)
    assert_error(code, err, f"{path}:1:", "found 5 columns")
