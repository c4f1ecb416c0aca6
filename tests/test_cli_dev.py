"""`sscrf train --dev`: the best dev iterate, a search over several values, the
label-proportion term, files from standard input (sscrf.cli.train).

The command line only adapts: each model is checked against the library's
fit of the same settings, and each dev score against the saved model's
predictions scored anew.
"""

import io
import re
import sys

import numpy as np

from sscrf import CRF, select_hyperparameters
from sscrf.demo import generate_hmm_corpus
from sscrf.io import write_conll
from sscrf.metrics import chunk_scores
from cli_common import assert_error, run
from cli_common import data  # noqa: F401 (fixtures)


def dev_f1(model_path, X_dev, y_dev):
    """The saved model's chunk F1 on the dev sentences, scored here."""
    return chunk_scores(y_dev, CRF.load(model_path).predict(X_dev))["f1"]


def test_dev_keeps_the_best_iterate(capsys, data, tmp_path):
    path = tmp_path / "m.model"
    code, out, err = run(capsys, "train", data["train"], "-m", path, "--dev", data["test"],
                         "--dev-period", "2", "--max-iterations", "15", "--threads", "1", "-q")
    assert code == 0, err
    model = CRF.load(path)
    record = model.training_["dev"]
    assert record["period"] == 2 and record["scoring"] == "chunk_f1"
    assert record["best_score"] == max(score for _, score in record["curve"])
    assert np.isclose(dev_f1(path, data["X_test"], data["y_test"]), record["best_score"])
    assert f"dev chunk F1 {record['best_score']:.4f} at iteration {record['best_iteration']}" \
        in out
    library = CRF(templates="default", max_iterations=15, n_threads=1, dev_period=2).fit(
        data["X_train"], data["y_train"], X_dev=data["X_test"], y_dev=data["y_test"])
    assert np.array_equal(model.coef_, library.coef_)


def test_several_c2_values_are_searched_on_dev(capsys, data, tmp_path):
    path = tmp_path / "m.model"
    code, out, err = run(capsys, "train", data["train"], "-m", path, "--dev", data["test"],
                         "--c2", "0.01,1,0.1", "--max-iterations", "12", "--threads", "1", "-q")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["c2", "dev", "score"]
    rows = [line.split() for line in lines[1:4]]
    assert [float(r[0]) for r in rows] == [1, 0.1, 0.01]  # the c2 path, largest first
    scores = [float(r[1]) for r in rows]
    saved = [r for r in rows if r[-1] == "chosen"]
    assert len(saved) == 1 and float(saved[0][1]) == max(scores)
    model = CRF.load(path)
    assert model.c2 == float(saved[0][0])
    assert f"c2={model.c2:g}" in lines[-1]
    assert np.isclose(dev_f1(path, data["X_test"], data["y_test"]), max(scores), atol=1e-4)
    selection = select_hyperparameters(
        CRF(templates="default", max_iterations=12, n_threads=1), {"c2": [0.01, 1, 0.1]},
        data["X_train"], data["y_train"], data["X_test"], data["y_test"])
    assert np.array_equal(model.coef_, selection.model.coef_)
    code, out, err = run(capsys, "dump", path, "--top", "1")
    assert code == 0, err
    record = model.training_["dev"]
    assert f"settings: c2={model.c2:g}" in out.splitlines()
    assert (f"dev: chunk F1 {record['best_score']:.4f}, the iterate of iteration "
            f"{record['best_iteration']} (scored every 5 iterations)") in out.splitlines()


def test_c1_is_searched_as_c2_is(capsys, data, tmp_path):
    path = tmp_path / "m.model"
    code, out, err = run(capsys, "train", data["train"], "-m", path, "--dev", data["test"],
                         "--c1", "0,0.5", "--c2", "0.1", "--max-iterations", "10",
                         "--threads", "1", "-q")
    assert code == 0, err
    assert out.splitlines()[0].split()[:2] == ["c1", "dev"]
    model = CRF.load(path)
    selection = select_hyperparameters(
        CRF(templates="default", max_iterations=10, n_threads=1, c2=0.1), {"c1": [0, 0.5]},
        data["X_train"], data["y_train"], data["X_test"], data["y_test"])
    assert model.c1 == selection.best_params["c1"]
    assert np.array_equal(model.coef_, selection.model.coef_)
    assert ("state weights not 0" in out) == (model.c1 > 0)


def test_a_weight_searched_gets_zero_and_the_proportion_term(capsys, data, tmp_path):
    raw = tmp_path / "raw.txt"
    X_raw, _ = generate_hmm_corpus(120, seed=13)
    write_conll(raw, X_raw)
    path = tmp_path / "m.model"
    code, out, err = run(capsys, "train", data["train"], "-m", path, "--dev", data["test"],
                         "--unlabeled", raw, "--entropy-weight", "0.01",
                         "--proportion-weight", "30,100", "--max-iterations", "6",
                         "--threads", "1", "-q")
    assert code == 0, err
    rows = [line.split() for line in out.splitlines()
            if re.match(r"\s*[\d.]+\s+[\d.]+\s+[\d.]+", line)]
    assert sorted(float(r[0]) for r in rows) == [0, 30, 100]  # 0 added: entropy alone
    assert "0 was added to proportion_weight" in out
    model = CRF.load(path)
    assert model.entropy_weight == 0.01
    code, dumped, err = run(capsys, "dump", path, "--top", "1")
    assert code == 0, err
    chosen = model.proportion_weight  # shown when not 0
    assert ("settings: c2=1, entropy_weight=0.01"
            + (f", proportion_weight={chosen:g}" if chosen else "")) in dumped.splitlines()
    selection = select_hyperparameters(
        CRF(templates="default", max_iterations=6, n_threads=1, entropy_weight=0.01),
        {"proportion_weight": [30, 100]}, data["X_train"], data["y_train"], data["X_test"],
        data["y_test"], X_unlabeled=X_raw)
    assert model.proportion_weight == selection.best_params["proportion_weight"]
    assert np.array_equal(model.coef_, selection.model.coef_)
    # one value, without --dev: the term is trained as CRF(proportion_weight=) trains it
    code, _, err = run(capsys, "train", data["train"], "-m", path, "--unlabeled", raw,
                       "--proportion-weight", "30", "--max-iterations", "6", "--threads", "1",
                       "-q")
    assert code == 0, err
    library = CRF(templates="default", max_iterations=6, n_threads=1,
                  proportion_weight=30).fit(data["X_train"], data["y_train"], X_unlabeled=X_raw)
    assert np.array_equal(CRF.load(path).coef_, library.coef_)


def test_a_compiled_train_with_dev_gives_the_same_model(capsys, data, tmp_path):
    corpus = tmp_path / "train.corpus"
    code, _, err = run(capsys, "compile", "--labeled", data["train"], "-o", corpus, "-q")
    assert code == 0, err
    dev_corpus = tmp_path / "dev.corpus"
    code, _, err = run(capsys, "compile", "--labeled", data["test"], "--vocabulary", corpus,
                       "-o", dev_corpus, "-q")
    assert code == 0, err
    models, outputs = [], []
    for source, dev in ((data["train"], data["test"]), (corpus, data["test"]),
                        (corpus, dev_corpus)):
        models.append(tmp_path / f"{len(models)}.model")
        code, out, err = run(capsys, "train", source, "-m", models[-1], "--dev", dev,
                             "--c2", "1,0.1", "--max-iterations", "8", "--threads", "1", "-q")
        assert code == 0, err
        # the seconds (the table's last column, the summary's end) may differ
        outputs.append(re.sub(r"\d+\.\d( s)?(?=( +<- chosen)?$)", "T",
                              out.replace(str(models[-1]), "MODEL"), flags=re.M))
    assert models[0].read_bytes() == models[1].read_bytes() == models[2].read_bytes()
    assert outputs[1] == outputs[2] and "<- chosen" in outputs[2]  # the same dev scores
    code, _, err = run(capsys, "train", data["train"], "-m", tmp_path / "x.model", "--dev",
                       dev_corpus)
    assert_error(code, err, str(dev_corpus), "a compiled --dev goes with a compiled TRAIN",
                 "give DEV as a CoNLL file")
    assert not (tmp_path / "x.model").exists()


def test_dev_gets_the_columns_train_gets(capsys, tmp_path):
    """--features words derives columns from the word: DEV must get them too, or its
    score would be of other features than tagging sees."""
    X, y = generate_hmm_corpus(150, seed=3)
    X_dev, y_dev = generate_hmm_corpus(60, seed=4)
    words = lambda sentences: [[token[:1] for token in s] for s in sentences]  # noqa: E731
    write_conll(tmp_path / "train.txt", words(X), y)
    write_conll(tmp_path / "dev.txt", words(X_dev), y_dev)
    path = tmp_path / "m.model"
    code, out, err = run(capsys, "train", tmp_path / "train.txt", "-m", path, "--features",
                         "words", "--dev", tmp_path / "dev.txt", "--c2", "1,0.1",
                         "--max-iterations", "10", "--threads", "1", "-q")
    assert code == 0, err
    best = max(float(line.split()[1]) for line in out.splitlines()[1:3])
    code, report, err = run(capsys, "eval", "-m", path, tmp_path / "dev.txt")
    assert code == 0, err
    fb1 = float(re.search(r"FB1:\s*([\d.]+)", report).group(1))
    assert abs(fb1 - 100 * best) < 0.01


def test_bad_dev_options_are_refused(capsys, data, tmp_path):
    path = tmp_path / "m.model"
    base = ["train", data["train"], "-m", path, "--max-iterations", "3", "-q"]
    code, _, err = run(capsys, *base, "--c2", "1,0.1")
    assert_error(code, err, "--c2 1,0.1", "need --dev DEV")
    code, _, err = run(capsys, *base, "--dev", data["test"], "--c2", "1,0.1", "--init",
                       data["model"])
    assert_error(code, err, "--init", "one value")
    code, _, err = run(capsys, *base, "--dev-period", "2")
    assert_error(code, err, "--dev-period goes with --dev")
    code, _, err = run(capsys, *base, "--proportion-weight", "3")
    assert_error(code, err, "--proportion-weight needs --unlabeled")
    code, _, err = run(capsys, *base, "--dev", data["test_nogold"])
    assert_error(code, err, str(data["test_nogold"]), "column(s) before its label")
    empty = tmp_path / "empty.txt"
    empty.write_text("\n")
    code, _, err = run(capsys, *base, "--dev", empty)
    assert_error(code, err, str(empty), "no sentences to score on")
    code, _, err = run(capsys, *base, "--dev", path)  # the model would overwrite DEV
    assert code == 2 and "Traceback" not in err
    other = tmp_path / "other.txt"  # a label the model cannot have: warned, scored as errors
    other.write_text(data["test"].read_text().replace(" B-NP\n", " B-XP\n"))
    code, _, err = run(capsys, *base, "--dev", other)
    assert code == 0 and f"sscrf: warning: {other} has labels the model has not: 'B-XP'" in err
    path.unlink()
    code, _, err = run(capsys, *base, "--c2", "1,1")
    assert code == 2 and "repeated" in err
    assert not path.exists()


def test_train_reads_one_of_its_files_from_standard_input(capsys, data, tmp_path, monkeypatch):
    def stdin_of(path):
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(path.read_bytes())))

    base = ["--max-iterations", "8", "--threads", "1", "-q"]
    paths = [tmp_path / f"{k}.model" for k in range(4)]
    code, _, err = run(capsys, "train", data["train"], "-m", paths[0], "--dev", data["test"],
                       *base)
    assert code == 0, err
    stdin_of(data["train"])
    code, _, err = run(capsys, "train", "-", "-m", paths[1], "--dev", data["test"], *base)
    assert code == 0, err
    stdin_of(data["test"])
    code, _, err = run(capsys, "train", data["train"], "-m", paths[2], "--dev", "-", *base)
    assert code == 0, err
    assert paths[0].read_bytes() == paths[1].read_bytes() == paths[2].read_bytes()
    code, _, err = run(capsys, "train", "-", "-m", paths[3], "--dev", "-", *base)
    assert_error(code, err, "TRAIN and --dev are both '-'")
    assert not paths[3].exists()
