"""`sscrf eval` (sscrf.cli.evaluate): conlleval's scores of a tagged file or of a model.

Schemes, bad input.
"""

from sscrf.metrics import chunk_scores, token_accuracy
from cli_common import assert_error, overall, reference_predictions, run
from cli_common import data  # noqa: F401 (fixtures)


def test_eval_file_matches_metrics(capsys, data, tmp_path):
    tagged = tmp_path / "tagged.txt"
    assert run(capsys, "tag", "-m", data["model"], data["test"], "-o", tagged)[0] == 0
    code, out, err = run(capsys, "eval", tagged)
    assert code == 0, err
    predicted = reference_predictions(data)
    scores = chunk_scores(data["y_test"], predicted)
    accuracy = token_accuracy(data["y_test"], predicted)
    printed = overall(out)
    assert printed[0] == round(100 * accuracy, 2)
    assert printed[1] == round(100 * scores["precision"], 2)
    assert printed[2] == round(100 * scores["recall"], 2)
    assert printed[3] == round(100 * scores["f1"], 2)
    assert scores["f1"] > 0.5
    assert "NP:" in out and "VP:" in out
    # eval -m MODEL TEST tags and scores in one go: the same report
    code, out_m, err = run(capsys, "eval", "-m", data["model"], data["test"])
    assert code == 0, err
    assert out_m == out
    assert "only the token accuracy" not in out  # B-X/I-X/O labels: no note


def test_eval_notes_labels_that_are_not_chunk_tags(capsys, tmp_path):
    # POS tags with hyphens parse as chunks (conlleval reads -LRB- as type LRB-);
    # the report says its chunk scores mean nothing
    path = tmp_path / "pos.txt"
    path.write_text("( -LRB- -LRB-\nit PRP PRP\n) -RRB- NN\n")
    code, out, err = run(capsys, "eval", path, "--chunks")
    assert code == 0, err
    assert "gold labels such as '-LRB-', '-RRB-', 'PRP' are not iob2 chunk tags" in out
    path.write_text("a B-E S-E\nb O O\n")
    code, out, err = run(capsys, "eval", path, "--scheme", "iobes")
    assert code == 0 and "chunk tags" not in out, out


def test_eval_scheme_option(capsys, tmp_path):
    path = tmp_path / "iobes.txt"
    # gold: one two-token chunk and one single-token chunk; predicted: both right
    path.write_text("a B-X B-X\nb E-X E-X\nc S-X S-X\nd O O\n")
    code, out, _ = run(capsys, "eval", path, "--scheme", "iobes")
    assert code == 0
    assert out.splitlines()[0] == "processed 4 tokens with 2 phrases; found: 2 phrases; correct: 2."


def test_eval_needs_gold_with_model(capsys, data):
    code, _, err = run(capsys, "eval", "-m", data["model"], data["test_nogold"])
    assert_error(code, err, str(data["test_nogold"]), "gold")


def test_eval_single_column_and_empty(capsys, tmp_path):
    one = tmp_path / "one.txt"
    one.write_text("a\nb\n")
    code, _, err = run(capsys, "eval", one)
    assert_error(code, err, f"{one}:1:")
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    code, _, err = run(capsys, "eval", empty)
    assert_error(code, err, "no tokens")
