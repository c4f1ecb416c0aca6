"""sscrf.features.word_features and the command line's --features words;
templates without a B line."""

from sscrf import CRF
from sscrf.demo import generate_hmm_corpus
from sscrf.features import word_features
from sscrf.features.word_features import (
    add_word_columns,
    preset_columns,
    word_columns,
    word_templates,
)
from sscrf.io import read_conll, write_conll
from cli_common import run


def test_word_features_of_a_sentence():
    f = word_features(["John", "lives", "in", "NY-2"])
    assert f[0]["w"] == "john" and f[0]["shape"] == "Xxxx" and f[0]["short_shape"] == "Xx"
    assert f[0]["p2"] == "jo" and f[0]["s3"] == "ohn" and f[0]["caps"] == "initial"
    assert f[0]["w[-1]"] == "<s>" and f[0]["w[+1]"] == "lives"
    assert f[3]["shape"] == "XX-d" and f[3]["digits"] == "some" and f[3]["caps"] == "all"
    assert f[2]["p3"] == "_" and f[3]["w[+1]"] == "</s>"
    assert word_features([["a", "DT"]], window=2)[0]["w[-2]"] == "<s>"
    assert word_columns("42") == ["42", "dd", "d", "4", "42", "_", "_", "2", "42", "_", "_",
                                  "all", "none"]
    # the dicts train in the Python API
    X, y = generate_hmm_corpus(30, seed=4)
    model = CRF(max_iterations=5, verbose=False).fit(
        [word_features(s) for s in X], y)
    assert any(a.startswith("short_shape") for a in model.attributes_)


def test_word_templates_read_the_derived_columns():
    templates = word_templates(2)
    assert preset_columns(templates) == 2 and preset_columns(None) is None
    sentence = add_word_columns([["John", "NNP"], ["ran", "VBD"]])
    assert len(sentence[0]) == 2 + 13 and templates.max_column == 14


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
