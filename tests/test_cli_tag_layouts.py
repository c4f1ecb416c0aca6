"""`sscrf tag` layouts that `sscrf eval` reads back: N-best without comment
lines, --probability and --marginals columns before the gold label."""

import math

import pytest

from sscrf import CRF
from sscrf.io import read_conll, write_conll
from cli_common import assert_error, run
from cli_common import data  # noqa: F401 (fixtures)


def _columns(text):
    return [[line.split() for line in block.splitlines()]
            for block in text.strip("\n").split("\n\n")]


def test_nbest_output_has_no_comment_lines_and_eval_scores_the_best(capsys, data, tmp_path):
    model = CRF.load(data["model"])
    out_path = tmp_path / "nbest.txt"
    code, _, err = run(capsys, "tag", "-m", data["model"], data["test"], "-n", "3",
                       "--probability", "-o", out_path)
    assert code == 0, err
    text = out_path.read_text()
    assert "#" not in text
    nbest = model.predict_nbest(data["X_test"], 3)
    for sentence, x, gold, candidates in zip(_columns(text), data["X_test"], data["y_test"],
                                            nbest):
        for t, cells in enumerate(sentence):
            assert cells[:2] == x[t]
            assert [float(c) for c in cells[2:5]] == pytest.approx(
                [math.exp(logp) for _, logp in candidates], abs=1e-6)
            assert cells[5:7] == [candidates[1][0][t], candidates[2][0][t]]
            assert cells[7] == gold[t] and cells[8] == candidates[0][0][t]
    code, out, err = run(capsys, "eval", out_path)
    assert code == 0, err
    assert out == run(capsys, "eval", "-m", data["model"], data["test"])[1]


def test_nbest_pads_a_sentence_with_fewer_labelings(capsys, data, tmp_path):
    path = tmp_path / "one.txt"
    write_conll(path, [data["X_test"][0][:1], data["X_test"][1]])
    n_labels = len(CRF.load(data["model"]).classes_)
    code, out, err = run(capsys, "tag", "-m", data["model"], path, "-n", str(n_labels + 2))
    assert code == 0, err
    sentences = _columns(out)
    assert len({len(cells) for sentence in sentences for cells in sentence}) == 1
    assert sentences[0][0][2 + n_labels - 1:-1] == ["_", "_"]


def test_marginals_and_probability_columns_eval_reads_back(capsys, data, tmp_path):
    model = CRF.load(data["model"])
    out_path = tmp_path / "marginals.txt"
    code, _, err = run(capsys, "tag", "-m", data["model"], data["test"], "--probability",
                       "--marginals", "-o", out_path)
    assert code == 0, err
    predicted = model.predict(data["X_test"])
    marginals = model.predict_marginals(data["X_test"])
    logp = model.sequence_log_probability(data["X_test"], predicted)
    tagged = read_conll(out_path, has_labels=False).tokens
    for s, sentence in enumerate(tagged):
        for t, cells in enumerate(sentence):
            assert float(cells[2]) == pytest.approx(math.exp(logp[s]), abs=1e-6)
            assert float(cells[3]) == pytest.approx(marginals[s][t][predicted[s][t]], abs=1e-6)
            assert cells[4:] == [data["y_test"][s][t], predicted[s][t]]
    assert run(capsys, "eval", out_path)[1] == run(capsys, "eval", "-m", data["model"],
                                                   data["test"])[1]
    code, out, err = run(capsys, "tag", "-m", data["model"], data["test_nogold"],
                         "--marginals", "all")
    assert code == 0, err
    first = _columns(out)[0][0]
    assert [cell.split(":")[0] for cell in first[2:-1]] == model.classes_
    assert sum(float(cell.split(":")[1]) for cell in first[2:-1]) == pytest.approx(1, abs=1e-5)
    code, _, err = run(capsys, "tag", "-m", data["model"], data["test"], "--marginals",
                       "-n", "2")
    assert_error(code, err, "--marginals")
    # FILE right after the bare option is taken for its value: said, with where FILE goes
    code, _, err = run(capsys, "tag", "-m", data["model"], "--marginals", data["test"])
    assert code == 2 and "FILE goes before --marginals" in err
    code, _, err = run(capsys, "tag", "-m", data["model"], data["test"], "--marginals", "al")
    assert code == 2 and "invalid choice: 'al'" in err and "FILE goes" not in err
