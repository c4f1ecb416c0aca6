"""The `sscrf` command line, end to end, in-process through `main`."""

import io
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from sscrf import CRF
from sscrf.cli import reading as cli_reading
from sscrf.cli import main
from sscrf.demo import LABELS, generate_hmm_corpus
from sscrf.io import read_conll, write_conll
from sscrf.metrics import chunk_scores, token_accuracy

N_ITER = "20"


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """Train/test files from the demo HMM and a model trained on them by `sscrf train`."""
    root = tmp_path_factory.mktemp("cli")
    X_train, y_train = generate_hmm_corpus(250, seed=11)
    X_test, y_test = generate_hmm_corpus(80, seed=12)
    paths = {
        "root": root,
        "train": root / "train.txt",
        "test": root / "test.txt",
        "test_nogold": root / "test_nogold.txt",
        "model": root / "hmm.model",
    }
    write_conll(paths["train"], X_train, y_train)
    write_conll(paths["test"], X_test, y_test)
    write_conll(paths["test_nogold"], X_test)
    code = main(["train", str(paths["train"]), "-m", str(paths["model"]),
                 "--max-iterations", N_ITER, "--threads", "2", "--quiet"])
    assert code == 0
    paths.update(X_train=X_train, y_train=y_train, X_test=X_test, y_test=y_test)
    return paths


def run(capsys, *argv):
    """main(argv) → (exit code, stdout, stderr)."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def overall(report):
    """(accuracy %, precision %, recall %, FB1) from a conlleval-style report."""
    m = re.search(r"accuracy:\s*([\d.]+)%; precision:\s*([\d.]+)%; recall:\s*([\d.]+)%; "
                  r"FB1:\s*([\d.]+)", report)
    assert m, report
    return tuple(float(g) for g in m.groups())


def assert_error(code, err, *fragments):
    assert code == 2
    assert err.startswith("sscrf: error: "), err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err, err


# -- help and version ------------------------------------------------------------

def test_module_help_subprocess():
    result = subprocess.run([sys.executable, "-m", "sscrf", "--help"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    for command in ("train", "tag", "eval", "dump", "demo"):
        assert command in result.stdout
    assert result.stdout.startswith("usage: sscrf")


def test_version(capsys):
    from sscrf import __version__

    code, out, _ = run(capsys, "--version")
    assert code == 0
    assert out.strip() == f"sscrf {__version__}"


@pytest.mark.parametrize("command", ["train", "tag", "eval", "dump", "demo"])
def test_subcommand_help(capsys, command):
    code, out, _ = run(capsys, command, "--help")
    assert code == 0
    assert out.startswith(f"usage: sscrf {command}")
    assert len(out.splitlines()) > 5


def test_no_command_is_a_usage_error(capsys):
    code, _, err = run(capsys)
    assert code == 2
    assert "usage:" in err


def test_bad_option_values(capsys, data):
    code, _, err = run(capsys, "train", data["train"], "-m", data["root"] / "x.model",
                       "--threads", "0")
    assert code == 2 and "--threads" in err
    code, _, err = run(capsys, "train", data["train"], "-m", data["root"] / "x.model",
                       "--feature-set", "sparse")
    assert code == 2 and "--feature-set" in err
    code, _, err = run(capsys, "eval", data["test"], "--scheme", "bilou")
    assert code == 2 and "--scheme" in err


# -- train ---------------------------------------------------------------------

def test_train_summary_and_progress(capsys, data, tmp_path):
    model_path = tmp_path / "m.model"
    code, out, err = run(capsys, "train", data["train"], "-m", model_path,
                         "--max-iterations", "12", "--threads", "1")
    assert code == 0, err
    n_tokens = sum(map(len, data["y_train"]))
    model = CRF.load(model_path)
    assert len(out.splitlines()) == 1
    assert "250 sentences" in out and f"{n_tokens} tokens" in out
    assert f"{len(LABELS)} labels" in out
    assert f"{model.n_parameters_} parameters" in out
    assert f"{model.training_['iterations']} iterations" in out
    assert re.search(r"[\d.]+ s$", out.strip())
    assert "iter" in err  # progress display on by default
    assert sorted(model.classes_) == sorted(LABELS)
    assert model.max_iterations == 12


def test_train_quiet_has_no_progress(capsys, data, tmp_path):
    code, out, err = run(capsys, "train", data["train"], "-m", tmp_path / "m.model",
                         "--max-iterations", "3", "--quiet")
    assert code == 0
    assert err == ""
    assert "sentences" in out


def test_train_options_reach_the_model(capsys, data, tmp_path):
    model_path = tmp_path / "m.model"
    labels = ["O", "B-NP", "I-NP", "B-VP", "I-VP"]
    code, _, err = run(capsys, "train", data["train"], "-m", model_path, "--max-iterations", "3",
                       "--c2", "0.5", "--feature-set", "dense", "--min-freq", "2",
                       "--labels", ",".join(labels), "--quiet")
    assert code == 0, err
    model = CRF.load(model_path)
    assert model.classes_ == labels
    assert model.c2 == 0.5 and model.min_freq == 2 and model.feature_set_ == "dense"
    assert len(model.label_ids_) == len(model.extractor_.attributes_) * len(labels)
    # --c1: OWL-QN, the same model as CRF(c1=...) gives
    code, out, err = run(capsys, "train", data["train"], "-m", model_path, "--max-iterations",
                         "30", "--c1", "0.5", "--c2", "0", "--quiet")
    assert code == 0, err
    model = CRF.load(model_path)
    direct = CRF(templates="default", c1=0.5, c2=0.0, max_iterations=30, verbose=False).fit(
        data["X_train"], data["y_train"])
    assert model.c1 == 0.5 and np.array_equal(model.coef_, direct.coef_)
    assert 0 < model.n_active_features_ < model.n_parameters_ / 2
    assert f"parameters ({model.n_active_features_} state weights not 0)" in out


def test_thread_count_does_not_change_the_model(capsys, data, tmp_path):
    coefs = []
    for threads in ("1", "2"):
        path = tmp_path / f"m{threads}.model"
        assert run(capsys, "train", data["train"], "-m", path, "--max-iterations", "5",
                   "--threads", threads, "--quiet")[0] == 0
        coefs.append(CRF.load(path).coef_)
    np.testing.assert_array_equal(coefs[0], coefs[1])


def test_interrupted_training_saves_the_model_and_exits_130(capsys, data, tmp_path,
                                                             monkeypatch):
    # Ctrl-C, as a KeyboardInterrupt at the third iteration (in either stage)
    fit = CRF.fit

    def interrupted_fit(self, *args, **kwargs):
        def callback(iteration, loss, theta):
            if iteration == 3:
                raise KeyboardInterrupt

        return fit(self, *args, callback=callback, **kwargs)

    monkeypatch.setattr(CRF, "fit", interrupted_fit)
    unlabeled = tmp_path / "unlabeled.txt"
    write_conll(unlabeled, data["X_test"])
    entropy = ("--unlabeled", unlabeled, "--entropy-weight", "0.01")
    for extra, iterations in (
            ((), "3 iterations (interrupted)"),
            (entropy + ("--max-iterations", "2"), "2 + 1 iterations (supervised warm start, "
                                                  "then interrupted)"),
            (entropy, "3 iterations (supervised warm start, interrupted; the second stage "
                      "did not run)")):
        model_path = tmp_path / "interrupted.model"
        code, out, err = run(capsys, "train", data["train"], "-m", model_path, "--quiet",
                             *extra)
        assert code == 130, err
        assert iterations in out
        assert err.endswith(f"sscrf: error: interrupted: {model_path} holds the best model so "
                            "far, not a finished training\n")
        assert CRF.load(model_path).training_["stop_reason"] == "interrupted"


def test_observed_features_with_unlabeled_data_fail_before_reading_it(capsys, data,
                                                                       tmp_path):
    code, _, err = run(capsys, "train", data["train"], "-m", tmp_path / "m.model",
                       "--unlabeled", tmp_path / "not_read.txt", "--entropy-weight", "0.1",
                       "--feature-set", "observed")
    assert_error(code, err, "--feature-set observed", "use dense or auto")


def test_interrupted_before_the_first_iteration_writes_nothing(capsys, data, tmp_path,
                                                               monkeypatch):
    from sscrf.objectives import Objective

    def interrupted(self, theta, out=None):
        raise KeyboardInterrupt

    monkeypatch.setattr(Objective, "__call__", interrupted)
    model_path = tmp_path / "never.model"
    code, out, err = run(capsys, "train", data["train"], "-m", model_path, "--quiet")
    assert code == 130 and out == ""
    assert err.endswith(f"sscrf: error: interrupted before the first iteration; {model_path} "
                        "not written\n")
    assert not model_path.exists()


def test_warnings_of_a_failed_fit_are_shown(capsys, data, tmp_path):
    # they may be the reason: here the one constraint names no attribute
    unlabeled, constraints = tmp_path / "unlabeled.txt", tmp_path / "constraints.txt"
    write_conll(unlabeled, data["X_test"])
    constraints.write_text("U02:no-such-word B-NP:1.0\n")
    code, _, err = run(capsys, "train", data["train"], "-m", tmp_path / "m.model", "--quiet",
                       "--unlabeled", unlabeled, "--constraints", constraints,
                       "--ge-weight", "1")
    assert code == 2
    assert err.splitlines()[-1].startswith("sscrf: error: no constraint attribute fires")
    assert "sscrf: warning: 1 constraint attribute(s) not in the vocabulary" in err
    assert "'U02:no-such-word'" in err


def test_train_with_template_file(capsys, data, tmp_path):
    template = tmp_path / "tiny.template"
    template.write_text("# word and previous POS only\nUw:%x[0,0]\nUp:%x[-1,1]/%x[0,1]\n\nB\n")
    model_path = tmp_path / "tiny.model"
    code, _, err = run(capsys, "train", data["train"], "-m", model_path, "--template", template,
                       "--max-iterations", "5", "--quiet")
    assert code == 0, err
    model = CRF.load(model_path)
    assert list(model.extractor_.templates.lines) == template.read_text().splitlines()
    attributes = model.extractor_.attributes_
    assert attributes and all(a.startswith(("Uw:", "Up:")) for a in attributes)
    assert "Uw:the" in attributes
    code, out, _ = run(capsys, "dump", model_path)
    assert code == 0 and "2 unigram templates" in out


def test_template_reading_a_missing_column(capsys, data, tmp_path):
    template = tmp_path / "bad.template"
    template.write_text("U00:%x[0,0]\nU01:%x[0,2]\n")
    code, _, err = run(capsys, "train", data["train"], "-m", tmp_path / "m.model",
                       "--template", template, "--quiet")
    assert_error(code, err, str(template), "U01:%x[0,2]", "column 2")


def test_train_conllu(capsys, tmp_path):
    lines = []
    words = [("the", "DET", "DT"), ("dog", "NOUN", "NN"), ("runs", "VERB", "VBZ"),
             ("fast", "ADV", "RB"), (".", "PUNCT", ".")]
    for k in range(20):
        lines.append(f"# sent_id = {k}")
        if k % 5 == 0:
            lines.append("1-2\tthedog\t_\t_\t_\t_\t_\t_\t_\t_")
        for i, (form, upos, xpos) in enumerate(words, 1):
            lines.append(f"{i}\t{form}\t{form}\t{upos}\t{xpos}\t_\t0\tdep\t_\t_")
        lines.append("")
    path = tmp_path / "tiny.conllu"
    path.write_text("\n".join(lines) + "\n")
    model_path = tmp_path / "ud.model"
    code, out, err = run(capsys, "train", path, "--conllu", "-m", model_path,
                         "--max-iterations", "10", "--quiet")
    assert code == 0, err
    assert "20 sentences" in out and "100 tokens" in out
    assert CRF.load(model_path).classes_ == sorted({u for _, u, _ in words})
    code, out, err = run(capsys, "train", path, "--conllu", "--label-column", "xpos",
                         "-m", model_path, "--max-iterations", "10", "--quiet")
    assert code == 0, err
    assert CRF.load(model_path).classes_ == sorted({x for _, _, x in words})
    # tag: FORM, gold (xpos), prediction
    code, out, err = run(capsys, "tag", "-m", model_path, path, "--conllu",
                         "--label-column", "xpos")
    assert code == 0, err
    first = out.splitlines()[:5]
    assert first == [f"{w} {x} {x}" for w, _, x in words]
    code, out, _ = run(capsys, "eval", "-m", model_path, path, "--conllu", "--label-column", "xpos")
    assert code == 0
    assert overall(out)[0] == 100.0
    assert "are not iob2 chunk tags (B/I-X or O), so only the token accuracy is meaningful" in out


def test_label_column_needs_conllu(capsys, data, tmp_path):
    code, _, err = run(capsys, "train", data["train"], "-m", tmp_path / "m.model",
                       "--label-column", "xpos")
    assert_error(code, err, "--conllu")


def test_label_outside_labels_option(capsys, data, tmp_path):
    code, _, err = run(capsys, "train", data["train"], "-m", tmp_path / "m.model",
                       "--labels", "B-NP,I-NP,O", "--quiet")
    assert_error(code, err, str(data["train"]), "unknown label")
    assert re.search(re.escape(str(data["train"])) + r":\d+: ", err)


# -- tag and eval -------------------------------------------------------------------

def reference_predictions(data):
    return CRF.load(data["model"]).predict(data["X_test"])


def test_partial_file_without_any_label_needs_labels_option(capsys, tmp_path):
    path = tmp_path / "unknown.txt"
    path.write_text("a X *\nb Y *\n\nc Z *\n")
    code, _, err = run(capsys, "train", path, "-m", tmp_path / "m.model", "--partial",
                       "--quiet")
    assert_error(code, err, "no token has a label", "--labels")
    code, _, err = run(capsys, "train", path, "-m", tmp_path / "m.model", "--partial",
                       "--quiet", "--labels", "A,B", "--max-iterations", "2")
    assert code == 0, err


def test_partial_looking_labels_without_the_option_are_flagged(capsys, tmp_path):
    # '*' and 'A|B' cells read as labels of their own unless --partial is given:
    # a warning says so (the model would otherwise learn a label '*')
    path = tmp_path / "partial.txt"
    path.write_text("a X A\nb Y *\n\nc Z A|B\nd X B\n")
    code, _, err = run(capsys, "train", path, "-m", tmp_path / "m.model", "--quiet",
                       "--max-iterations", "2")
    assert code == 0, err
    assert "sscrf: warning:" in err and "'*', 'A|B' look like partial annotations" in err
    assert sorted(CRF.load(tmp_path / "m.model").classes_) == ["*", "A", "A|B", "B"]
    code, _, err = run(capsys, "train", path, "-m", tmp_path / "p.model", "--quiet",
                       "--max-iterations", "2", "--partial")
    assert code == 0 and "warning" not in err, err
    assert sorted(CRF.load(tmp_path / "p.model").classes_) == ["A", "B"]


def test_conllu_lines_read_as_columns_are_flagged(capsys, tmp_path):
    path = tmp_path / "nocomments.conllu"
    path.write_text("".join(f"{i}\tw{i}\tw\tNOUN\tNN\t_\t0\troot\t_\t_\n" for i in (1, 2, 3))
                    + "\n" + "1\tx\tx\tVERB\tVB\t_\t0\troot\t_\t_\n")
    code, _, err = run(capsys, "train", path, "-m", tmp_path / "m.model", "--quiet",
                       "--max-iterations", "2")
    assert code == 0, err
    assert "warning:" in err and "look like CoNLL-U lines" in err and "--conllu" in err


def test_two_stage_summary_counts_both_stages(capsys, data, tmp_path):
    unlabeled = tmp_path / "raw.txt"
    write_conll(unlabeled, data["X_test"][:30])
    code, out, err = run(capsys, "train", data["train"], "-m", tmp_path / "m.model",
                         "--unlabeled", unlabeled, "--entropy-weight", "0.01",
                         "--max-iterations", "3", "--threads", "1")
    assert code == 0, err
    training = CRF.load(tmp_path / "m.model").training_
    first = training["stages"]["supervised"]["iterations"]
    assert f"{first} + {training['iterations']} iterations (supervised warm start, then " in out
    assert "250 sentences" in out and "30 unlabeled sentences" in out
    assert "stage 2/2: adding the entropy term (entropy_weight x unlabeled tokens = " in err


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


def test_tag_and_eval_read_standard_input(capsys, data, tmp_path):
    tagged = tmp_path / "tagged.txt"
    assert run(capsys, "tag", "-m", data["model"], data["test"], "-o", tagged)[0] == 0
    expected_report = run(capsys, "eval", tagged)[1]
    command = [sys.executable, "-m", "sscrf"]
    piped = subprocess.run(command + ["tag", "-m", str(data["model"]), "-"],
                           input=data["test"].read_bytes(), capture_output=True, timeout=120)
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout.decode() == tagged.read_text()
    report = subprocess.run(command + ["eval", "-"], input=piped.stdout, capture_output=True,
                            timeout=120)
    assert report.returncode == 0 and report.stdout.decode() == expected_report
    bad = subprocess.run(command + ["tag", "-m", str(data["model"]), "-"],
                         input=b"a b c d\n", capture_output=True, timeout=120)
    assert bad.returncode == 2
    assert bad.stderr.decode().startswith("sscrf: error: <stdin>:1: found 4 columns")
    # -o /dev/stdout into a pipe is written in place (its real path names nothing)
    to_pipe = subprocess.run(command + ["tag", "-m", str(data["model"]), str(data["test"]),
                                        "-o", "/dev/stdout"], capture_output=True, timeout=120)
    assert to_pipe.returncode == 0 and to_pipe.stdout.decode() == tagged.read_text()
    closed = subprocess.run(command + ["tag", "-m", str(data["model"]), "-"],
                            capture_output=True, timeout=120, preexec_fn=lambda: os.close(0))
    assert closed.returncode == 2 and closed.stderr == b"sscrf: error: standard input is closed\n"


def test_standard_input_is_read_as_files_are(capsys, data, tmp_path, monkeypatch):
    # its bytes, so "\r\r\n" ends one line as in a file, and decoding errors
    # name their line
    text = data["test"].read_text().replace("\n", "\r\r\n")
    path = tmp_path / "crcrlf.txt"
    path.write_text(text, newline="")
    from_file = run(capsys, "eval", "-m", data["model"], path)
    assert from_file[0] == 0
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    assert run(capsys, "eval", "-m", data["model"], "-") == from_file
    lines = text.count("\n")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode() + b"\xff\n")))
    code, _, err = run(capsys, "tag", "-m", data["model"], "-")
    assert_error(code, err, f":{lines + 1}: cannot decode as utf-8")


def test_tag_eval_select_take_threads(capsys, data, tmp_path, monkeypatch):
    # the model file's n_threads (1 here) unless --threads says otherwise
    model_path = tmp_path / "one_thread.model"
    assert run(capsys, "train", data["train"], "-m", model_path, "--threads", "1",
               "--max-iterations", "5", "--quiet")[0] == 0
    assert CRF.load(model_path).n_threads == 1
    seen = []
    predict = CRF.predict

    def spy(self, X, allowed=None):
        seen.append(self.n_threads)
        return predict(self, X, allowed=allowed)

    monkeypatch.setattr(CRF, "predict", spy)
    outputs = []
    for threads in ((), ("--threads", "2")):
        outputs.append(run(capsys, "tag", "-m", model_path, data["test"], *threads))
        assert run(capsys, "eval", "-m", model_path, data["test"], *threads)[0] == 0
    assert seen == [1, 1, 2, 2] and outputs[0] == outputs[1]
    code, out, err = run(capsys, "select", "--model", model_path, "--pool", data["test_nogold"],
                         "--strategy", "least_confidence", "-m", "3", "--threads", "2")
    assert code == 0, err


def test_tag_wrong_number_of_columns(capsys, data, tmp_path):
    path = tmp_path / "wide.txt"
    path.write_text("a b c d e\n")
    code, _, err = run(capsys, "tag", "-m", data["model"], path)
    assert_error(code, err, f"{path}:1:", "found 5 columns")


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
    code, out, err = run(capsys, "eval", path)
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
    assert out.splitlines()[0].startswith("2 phrases; found: 2 phrases; correct: 2.")


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


# -- dump -----------------------------------------------------------------------

def test_dump(capsys, data):
    code, out, err = run(capsys, "dump", data["model"], "--top", "7")
    assert code == 0, err
    model = CRF.load(data["model"])
    assert f"labels ({len(model.classes_)}): " + " ".join(model.classes_) in out
    assert f"parameters: {model.n_parameters_}" in out
    state = model.state_features_
    assert f"non-zero state features: {len(state)}" in out
    lines = out.splitlines()
    start = lines.index("top 7 state features by |weight|:")
    rows = [line.split() for line in lines[start + 2:start + 9]]
    weights = [abs(float(r[0])) for r in rows]
    assert weights == sorted(weights, reverse=True)
    best_attribute, best_label = max(state, key=lambda k: abs(state[k]))
    assert rows[0][1:] == [best_label, best_attribute]
    assert float(rows[0][0]) == pytest.approx(state[best_attribute, best_label], abs=1e-4)
    # transition table: a header of labels, then one row per previous label
    t = lines.index("transitions (row: previous label, column: next label):")
    assert lines[t + 1].split() == model.classes_
    for i, label in enumerate(model.classes_):
        row = lines[t + 2 + i].split()
        assert row[0] == label
        np.testing.assert_allclose([float(v) for v in row[1:]], model.transitions_[i], atol=1e-4)
    assert any(line.split()[:1] == ["start"] for line in lines)
    assert any(line.split()[:1] == ["end"] for line in lines)


# -- demo -----------------------------------------------------------------------

def test_demo_command(capsys):
    code, out, err = run(capsys, "demo", "--n-train", "60", "--n-test", "20", "--seed", "3",
                         "--threads", "1", "--quiet")
    assert code == 0, err
    assert "FB1" in out and "60 training sentences" in out
    assert err == ""


# -- bad input ------------------------------------------------------------------------

def test_missing_files(capsys, data, tmp_path):
    missing = tmp_path / "nope.txt"
    code, _, err = run(capsys, "train", missing, "-m", tmp_path / "m.model")
    assert_error(code, err, str(missing))
    code, _, err = run(capsys, "tag", "-m", data["model"], missing)
    assert_error(code, err, str(missing))
    code, _, err = run(capsys, "tag", "-m", tmp_path / "nope.model", data["test"])
    assert_error(code, err, "nope.model")
    code, _, err = run(capsys, "train", data["train"], "-m", tmp_path / "m.model",
                       "--template", tmp_path / "nope.template")
    assert_error(code, err, "nope.template")
    code, _, err = run(capsys, "train", data["train"], "-m", tmp_path / "no" / "dir" / "m.model")
    assert_error(code, err, "does not exist")


def test_malformed_conll_line(capsys, tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("He PRP B-NP\nreckons VBZ B-VP\n\nthe DT B-NP\ncurrent I-NP\n")
    code, _, err = run(capsys, "train", path, "-m", tmp_path / "m.model", "--quiet")
    assert_error(code, err, f"{path}:5:")
    assert not (tmp_path / "m.model").exists()
    code, _, err = run(capsys, "eval", path)
    assert_error(code, err, f"{path}:5:")


def test_truncated_model(capsys, data, tmp_path):
    blob = data["model"].read_bytes()
    truncated = tmp_path / "truncated.model"
    truncated.write_bytes(blob[: len(blob) // 2])
    for argv in (["tag", "-m", truncated, data["test"]], ["eval", "-m", truncated, data["test"]],
                 ["dump", truncated]):
        code, out, err = run(capsys, *argv)
        assert_error(code, err, str(truncated))
        assert out == ""
    not_a_model = tmp_path / "text.model"
    not_a_model.write_text("hello\n")
    code, _, err = run(capsys, "dump", not_a_model)
    assert_error(code, err, str(not_a_model))


def test_console_script_entry_point():
    # pyproject.toml declares `sscrf = "sscrf.cli:main"`; main returns an int for sys.exit.
    import sscrf.cli

    assert callable(sscrf.cli.main)
    assert os.path.exists(os.path.join(os.path.dirname(sscrf.cli.__file__), "__main__.py"))


def test_option_choices_are_the_library_s():
    # The parser lists them itself (it loads no numpy); they must not drift.
    from sscrf.cli import build_parser
    from sscrf.inputs import ENTROPY_METHODS
    from sscrf.layout import FEATURE_SETS

    train = build_parser()._subparsers._group_actions[0].choices["train"]
    choices = {a.dest: a.choices for a in train._actions if a.choices}
    assert tuple(choices["entropy_method"]) == ENTROPY_METHODS
    assert tuple(choices["feature_set"]) == ("auto",) + FEATURE_SETS
