"""`sscrf train --features words` (sscrf.cli.train) and what tag, eval and
select do with its models; template files without a B line."""

from sscrf import CRF
from sscrf.demo import generate_hmm_corpus
from sscrf.features.words import add_word_columns, preset_columns
from sscrf.io import read_conll, write_conll
from cli_common import run


def test_train_features_words_then_tag_eval_select(capsys, tmp_path):
    X, y = generate_hmm_corpus(60, seed=5)
    words = [[[token[0]] for token in sentence] for sentence in X]
    write_conll(tmp_path / "train.txt", words[:40], y[:40])
    write_conll(tmp_path / "test.txt", words[40:], y[40:])
    model_path = tmp_path / "w.model"
    code, out, err = run(capsys, "train", tmp_path / "train.txt", "--features", "words",
                         "-m", model_path, "--max-iterations", "15", "--quiet")
    assert code == 0, err
    model = CRF.load(model_path)
    assert preset_columns(model.extractor_.templates) == 1
    assert any(a.startswith("Ush:") for a in model.attributes_)
    code, out, err = run(capsys, "tag", "-m", model_path, tmp_path / "test.txt")
    assert code == 0, err
    tagged = [[line.split() for line in block.splitlines()]
              for block in out.strip("\n").split("\n\n")]
    expected = model.predict([add_word_columns(s) for s in words[40:]])
    assert [[cells[-1] for cells in s] for s in tagged] == expected
    assert all(len(cells) == 3 for s in tagged for cells in s)
    code, out, err = run(capsys, "eval", "-m", model_path, tmp_path / "test.txt")
    assert code == 0 and out.startswith("processed "), err
    code, out, err = run(capsys, "select", "-m", model_path, "--pool", tmp_path / "test.txt",
                         "--strategy", "least_confidence", "--count", "3",
                         "-o", tmp_path / "chosen.txt")
    assert code == 0, err
    assert len(read_conll(tmp_path / "chosen.txt").tokens) == 3
    # --init from a words model keeps its features
    code, _, err = run(capsys, "train", tmp_path / "train.txt", "--init", model_path,
                       "-m", tmp_path / "w2.model", "--max-iterations", "2", "--quiet")
    assert code == 0, err
    assert preset_columns(CRF.load(tmp_path / "w2.model").extractor_.templates) == 1


def test_template_without_b_line_warns(capsys, tmp_path):
    X, y = generate_hmm_corpus(20, seed=6)
    write_conll(tmp_path / "train.txt", X, y)
    template = tmp_path / "t.template"
    template.write_text("U00:%x[0,0]\n")
    code, _, err = run(capsys, "train", tmp_path / "train.txt", "--template", template,
                       "-m", tmp_path / "m.model", "--max-iterations", "2", "--quiet")
    assert code == 0 and "no 'B' line" in err and "CRF++ would train none" in err
    template.write_text("U00:%x[0,0]\nB\n")
    code, _, err = run(capsys, "train", tmp_path / "train.txt", "--template", template,
                       "-m", tmp_path / "m.model", "--max-iterations", "2", "--quiet")
    assert code == 0 and "'B' line" not in err
