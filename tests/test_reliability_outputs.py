"""Reliability, outputs: no command writes over one of its inputs, a read-only file is not
replaced, a replaced file keeps its permissions, a bad output name is refused before any
work, and a failed write (a full disk) names the file.

Every writer goes through :func:`sscrf.serialization.replace_file`, which checks with
:func:`sscrf.inputs.check_writable`; commands check their output against their inputs with
:func:`sscrf.inputs.check_not_an_input`. The next defect of this kind has its test here.
"""

import errno
import os
import stat

import pytest
from cli_common import assert_error, data, run  # noqa: F401  (data is a fixture)

from sscrf import CRF, SscrfError
from sscrf.constraints import write_constraints
from sscrf.demo import generate_hmm_corpus
from sscrf.io import write_conll
from sscrf.serialization import replace_file


@pytest.fixture()
def files(data, tmp_path):  # noqa: F811
    """Copies of the training file and model, a template file and an unlabeled file."""
    train = tmp_path / "train.txt"
    train.write_bytes(data["train"].read_bytes())
    model = tmp_path / "m.model"
    model.write_bytes(data["model"].read_bytes())
    template = tmp_path / "tpl"
    template.write_text("U00:%x[0,0]\nU01:%x[-1,0]\nB\n")
    unlabeled = tmp_path / "unlabeled.txt"
    write_conll(unlabeled, data["X_test"][:20])
    test = tmp_path / "test.txt"
    test.write_bytes(data["test"].read_bytes())
    return {"train": train, "model": model, "template": template, "unlabeled": unlabeled,
            "test": test}


def _same_file_as(kind, path, tmp_path):
    """``path`` itself, a symbolic link to it, or a hard link to it."""
    if kind == "itself":
        return path
    other = tmp_path / f"{kind}-to-{path.name}"
    (os.symlink if kind == "symlink" else os.link)(path, other)
    return other


def _assert_untouched(files, before):
    for name, content in before.items():
        assert files[name].read_bytes() == content, name


LINKS = ("itself", "symlink", "hard link")


@pytest.mark.parametrize("link", LINKS)
@pytest.mark.parametrize("argv, output", [
    (["train", "{train}", "-m", "{out}", "--quiet"], "train"),
    (["train", "{train}", "--template", "{template}", "-m", "{out}", "--quiet"], "template"),
    (["train", "{train}", "--unlabeled", "{unlabeled}", "--entropy-weight", "0.1", "-m",
      "{out}", "--quiet"], "unlabeled"),
    (["tag", "-m", "{model}", "{test}", "-o", "{out}"], "model"),
    (["tag", "-m", "{model}", "{test}", "-o", "{out}"], "test"),
    (["tag", "-m", "{model}", "{test}", "--constraints", "{train}", "-o", "{out}"], "train"),
])
def test_an_output_over_an_input_is_refused_before_any_work(capsys, files, tmp_path, argv,
                                                           output, link):
    before = {name: path.read_bytes() for name, path in files.items()}
    out = _same_file_as(link, files[output], tmp_path)
    names = {name: str(path) for name, path in files.items()}
    code, stdout, err = run(capsys, *[a.format(out=out, **names) for a in argv])
    assert_error(code, err, str(out), "writing it would destroy the input")
    assert stdout == ""  # no training summary, no tagging
    _assert_untouched(files, before)


@pytest.mark.parametrize("argv", [
    ["train", "{train}", "-m", "{out}", "--quiet"],
    ["tag", "-m", "{model}", "{test}", "-o", "{out}"],
])
def test_a_read_only_output_is_refused_and_kept(capsys, files, tmp_path, argv):
    out = tmp_path / "read-only"
    out.write_bytes(b"keep me")
    out.chmod(0o444)
    names = {name: str(path) for name, path in files.items()}
    code, stdout, err = run(capsys, *[a.format(out=out, **names) for a in argv])
    assert_error(code, err, str(out), "read-only", "0444")
    assert out.read_bytes() == b"keep me"
    assert stat.S_IMODE(out.stat().st_mode) == 0o444


def test_save_refuses_a_read_only_file(files):
    path = files["model"]
    good = path.read_bytes()
    path.chmod(0o444)
    with pytest.raises(SscrfError, match="read-only"):
        CRF.load(path).save(path)
    assert path.read_bytes() == good and stat.S_IMODE(path.stat().st_mode) == 0o444


def test_a_replaced_file_keeps_its_permissions(files, tmp_path):
    model = CRF.load(files["model"])
    for mode in (0o600, 0o640, 0o755):
        path = tmp_path / f"mode-{mode:o}.model"
        path.write_bytes(b"old")
        path.chmod(mode)
        model.save(path)
        assert stat.S_IMODE(path.stat().st_mode) == mode
        CRF.load(path)


@pytest.mark.parametrize("command", ["train", "tag"])
def test_an_empty_output_name_is_refused_before_any_work(capsys, files, command):
    argv = (["train", files["train"], "-m", "", "--quiet"] if command == "train"
            else ["tag", "-m", files["model"], files["test"], "-o", ""])
    code, stdout, err = run(capsys, *argv)
    assert_error(code, err, "output file name is empty")
    assert stdout == ""


def test_a_model_to_standard_output_is_refused(capsys, files, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, stdout, err = run(capsys, "train", files["train"], "-m", "-", "--quiet")
    assert_error(code, err, "-m -", "give a file name")
    assert stdout == "" and not (tmp_path / "-").exists()


def test_tag_to_standard_output_with_dash_still_works(capsys, files):
    code, stdout, err = run(capsys, "tag", "-m", files["model"], files["test"], "-o", "-")
    assert code == 0 and stdout


# -- a full disk -----------------------------------------------------------------------


def test_a_full_device_is_named(files, capsys):
    # /dev/full is written in place (not renamed over) and fails with ENOSPC
    model = CRF.load(files["model"])
    with pytest.raises(OSError) as info:
        model.save("/dev/full")
    assert info.value.errno == errno.ENOSPC and info.value.filename == "/dev/full"
    code, _, err = run(capsys, "tag", "-m", files["model"], files["test"], "-o", "/dev/full")
    assert_error(code, err, "/dev/full: No space left on device")


def test_a_full_disk_while_writing_the_temporary_file_names_the_target(tmp_path, monkeypatch):
    # no small tmpfs here: the errno is simulated where a regular file is written
    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    target = tmp_path / "out.txt"
    X, y = generate_hmm_corpus(3, seed=1)
    with pytest.raises(OSError) as info:
        replace_file(target, lambda f: f.write("x\n"), "w", "utf-8")
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(target)
    assert "out.txt" in str(info.value)
    assert list(tmp_path.iterdir()) == []  # the temporary file is removed
    with pytest.raises(OSError, match="out.txt"):
        write_conll(target, X, y)


def test_write_constraints_goes_through_the_atomic_writer(tmp_path):
    path = tmp_path / "read-only.constraints"
    path.write_text("keep me\n")
    path.chmod(0o444)
    with pytest.raises(SscrfError, match="read-only"):
        write_constraints(path, {"U00:the": {"DT": 1.0}})
    assert path.read_text() == "keep me\n"
