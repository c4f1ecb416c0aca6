"""`sscrf train` (sscrf.cli.train).

Summary and progress, options, interrupts, templates, CoNLL-U, partial labels,
two stages.
"""

import re

import numpy as np

from sscrf import CRF
from sscrf.demo import LABELS
from sscrf.io import write_conll
from cli_common import assert_error, overall, run
from cli_common import data  # noqa: F401 (fixtures)


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


def test_observed_features_with_unlabeled_data_train_the_labeled_pairs(capsys, data,
                                                                       tmp_path):
    unlabeled = tmp_path / "u.txt"
    write_conll(unlabeled, data["X_test"][:40])
    common = ("--unlabeled", unlabeled, "--entropy-weight", "0.1", "--max-iterations", "3",
              "--quiet", "--threads", "1")
    code, _, err = run(capsys, "train", data["train"], "-m", tmp_path / "o.model", *common,
                       "--feature-set", "observed")
    assert code == 0, err
    code, _, err = run(capsys, "train", data["train"], "-m", tmp_path / "d.model", *common)
    assert code == 0, err
    observed, dense = CRF.load(tmp_path / "o.model"), CRF.load(tmp_path / "d.model")
    assert observed.feature_set_ == "observed" and dense.feature_set_ == "dense"
    supervised = CRF(feature_set="observed", templates="default", max_iterations=0).fit(
        data["X_train"], data["y_train"])
    assert observed.n_parameters_ < dense.n_parameters_
    assert len(observed.label_ids_) == len(supervised.label_ids_)


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


def test_the_summary_counts_one_without_a_plural(capsys, data, tmp_path):
    unlabeled, constraints = tmp_path / "unlabeled.txt", tmp_path / "constraints.txt"
    write_conll(unlabeled, data["X_test"][:1])
    constraints.write_text(f"U02:{data['X_test'][0][0][0]} B-NP:0.9 O:0.1\n")
    code, out, err = run(capsys, "train", data["train"], "-m", tmp_path / "m.model", "--quiet",
                         "--unlabeled", unlabeled, "--constraints", constraints,
                         "--ge-weight", "1", "--max-iterations", "1")
    assert code == 0, err
    assert ", 1 unlabeled sentence, " in out and ", 1 constraint, " in out
    assert "1 + 1 iterations" in out


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
    code, out, _ = run(capsys, "eval", "-m", model_path, path, "--conllu", "--label-column", "xpos",
                       "--chunks")
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


def test_train_and_tag_without_representations_do_not_import_scipy(data, tmp_path):
    # scipy.sparse comes with the word representations only: 0.1 s of every command
    import subprocess
    import sys

    model = tmp_path / "m.model"
    script = ("import sys; from sscrf.cli import main; "
              f"main(['train', '-q', '-m', {str(model)!r}, '--max-iterations', '2', "
              f"{str(data['train'])!r}]); "
              f"main(['tag', '-m', {str(model)!r}, {str(data['train'])!r}, '-o', "
              f"{str(tmp_path / 'out.txt')!r}]); "
              "print('scipy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip().splitlines()[-1] == "False", out.stderr
