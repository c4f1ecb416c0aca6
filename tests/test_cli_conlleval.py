"""`sscrf eval`: conlleval 2004's report byte for byte, CRFsuite's per-label
report for tags that are not chunks, and files that hold no predictions."""

from sscrf.metrics import conlleval_report, label_scores
from cli_common import assert_error, run

# Two sentences, hand-counted: gold chunks NP VP NP VP (4), predicted NP NP
# NP VP (4), correct: The cat (NP), It (NP), ran (VP) = 3; 6 of 7 tags right.
TAGGED = ("The B-NP B-NP\ncat I-NP I-NP\nsat B-VP B-NP\n. O O\n\n"
          "It B-NP B-NP\nran B-VP B-VP\nfast O O\n")
# NP: 3 predicted, 2 right, 2 gold; VP: 1 predicted, 1 right, 2 gold (the
# script's output on this file, checked by hand).
EXPECTED = (
    "processed 7 tokens with 4 phrases; found: 4 phrases; correct: 3.\n"
    "accuracy:  85.71%; precision:  75.00%; recall:  75.00%; FB1:  75.00\n"
    "               NP: precision:  66.67%; recall: 100.00%; FB1:  80.00  3\n"
    "               VP: precision: 100.00%; recall:  50.00%; FB1:  66.67  1\n")


def test_eval_prints_conllevals_report_byte_for_byte(capsys, tmp_path):
    path = tmp_path / "tagged.txt"
    path.write_text(TAGGED)
    code, out, err = run(capsys, "eval", path)
    assert code == 0, err
    assert out == EXPECTED


def test_conlleval_report_rounds_as_perls_printf():
    # 100*1/3 printed %6.2f; an empty type counted twice as the script does
    y_true = [["B-A", "O", "O"], ["B", "O", "O"]]
    y_pred = [["B-A", "B-A", "B-A"], ["B", "O", "O"]]
    assert conlleval_report(y_true, y_pred) == (
        "processed 6 tokens with 2 phrases; found: 4 phrases; correct: 2.\n"
        "accuracy:  66.67%; precision:  50.00%; recall: 100.00%; FB1:  66.67\n"
        "                 : precision: 100.00%; recall: 100.00%; FB1: 100.00  1\n"
        "                 : precision: 100.00%; recall: 100.00%; FB1: 100.00  1\n"
        "                A: precision:  33.33%; recall: 100.00%; FB1:  50.00  3\n")


def test_eval_tokens_report_for_tags_without_chunk_prefixes(capsys, tmp_path):
    path = tmp_path / "pos.txt"
    path.write_text("a DT DT\nb NN NN\nc VB NN\n\nd DT DT\n")
    code, out, err = run(capsys, "eval", path)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "Performance by label (#match, #model, #ref) (precision, recall, F1):"
    assert "    DT: (2, 2, 2) (1.0000, 1.0000, 1.0000)" in lines
    assert "    NN: (1, 2, 1) (0.5000, 1.0000, 0.6667)" in lines
    assert "    VB: (0, 0, 1) (******, 0.0000, ******)" in lines
    assert "Item accuracy: 3 / 4 (0.7500)" in lines
    assert "Instance accuracy: 1 / 2 (0.5000)" in lines
    assert "phrases" not in out
    # --tokens on chunk tags, --chunks on POS tags
    path.write_text(TAGGED)
    code, out, _ = run(capsys, "eval", path, "--tokens")
    assert code == 0 and "Item accuracy: 6 / 7 (0.8571)" in out
    path.write_text("a DT DT\nb NN NN\nc VB NN\n\nd DT DT\n")
    code, out, _ = run(capsys, "eval", path, "--chunks")
    assert code == 0 and out.startswith("processed 4 tokens with ")
    scores = label_scores([["DT", "NN"]], [["DT", "DT"]])
    assert scores["per_label"]["DT"]["precision"] == 0.5 and scores["accuracy"] == 0.5


def test_eval_refuses_an_untagged_file(capsys, tmp_path):
    # word POS chunk: the last two columns are the POS tag and the chunk tag
    path = tmp_path / "untagged.txt"
    path.write_text("He PRP B-NP\nran VBD B-VP\n. . O\n")
    code, out, err = run(capsys, "eval", path)
    assert_error(code, err, str(path), "share no label", "sscrf tag")
    assert out == ""
    two = tmp_path / "two.txt"
    two.write_text("He B-NP\nran B-VP\n")
    code, _, err = run(capsys, "eval", two)
    assert_error(code, err, "share no label")
