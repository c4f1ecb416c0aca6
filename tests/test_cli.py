"""The `sscrf` program (sscrf.cli).

Help, version, usage errors, files that are missing or bad, standard input,
threads, the entry point.
"""

import io
import os
import subprocess
import sys

import pytest

from sscrf import CRF
from cli_common import assert_error, run
from cli_common import data  # noqa: F401 (fixtures)


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
                         "--strategy", "least_confidence", "--count", "3", "--threads", "2")
    assert code == 0, err


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
