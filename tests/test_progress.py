"""The package's one rule for long work: quiet unless asked; on a terminal a
report is redrawn in place, elsewhere one line per report; every report also
reaches the ``sscrf`` logger at INFO, which has a NullHandler."""

import io
import logging
import os
import select

import pytest

import sscrf
from sscrf import CRF
from sscrf.progress import Progress


def sentences(n=30):
    X = [[{"w": w} for w in "the cat sat on the mat".split()] for _ in range(n)]
    y = [["D", "N", "V", "P", "D", "N"] for _ in range(n)]
    return X, y


def test_the_package_logger_has_a_null_handler_from_import():
    handlers = logging.getLogger("sscrf").handlers
    assert any(isinstance(h, logging.NullHandler) for h in handlers)
    assert sscrf.progress.logger is logging.getLogger("sscrf")


def test_off_a_terminal_each_report_is_its_own_line_and_steps_are_thinned():
    out = io.StringIO()
    report = Progress(True, out, every=10)
    for k in range(1, 26):
        report.step(k, f"iter {k}")
    report.note("done")
    assert out.getvalue().splitlines() == ["iter 1", "iter 10", "iter 20", "done"]
    assert "\r" not in out.getvalue()


def read_all(fd):
    """Everything written to the terminal so far: a read may return part of it."""
    chunks = []
    while select.select([fd], [], [], 0.5)[0]:
        data = os.read(fd, 65536)
        if not data:
            break
        chunks.append(data)
    return b"".join(chunks).decode()


def test_on_a_terminal_steps_are_redrawn_in_place():
    master, slave = os.openpty()
    try:
        with os.fdopen(slave, "w", closefd=False) as terminal:
            assert terminal.isatty()
            report = Progress(True, terminal)
            for k in range(1, 4):
                report.step(k, f"iter {k}")
            report.note("done")
        shown = read_all(master)
    finally:
        os.close(master)
        os.close(slave)
    # three draws over one line (every step, not every tenth), then the final
    # line replaces the last draw and ends it
    assert shown.count("\r") >= 4
    assert "iter 2" in shown and "iter 3" in shown
    lines = shown.replace("\r\n", "\n").split("\n")
    assert len([line for line in lines if line.strip()]) == 1
    assert lines[0].split("\r")[-1].strip() == "done"


def test_a_disabled_report_writes_nothing_but_still_logs(caplog):
    out = io.StringIO()
    with caplog.at_level(logging.INFO, logger="sscrf"):
        Progress(False, out).step(1, "iter 1")
        Progress(False, out).note("stage 1/2")
    assert out.getvalue() == ""
    assert [r.getMessage() for r in caplog.records] == ["iter 1", "stage 1/2"]
    assert all(r.name == "sscrf" and r.levelno == logging.INFO for r in caplog.records)


def test_quiet_fit_prints_nothing_and_logs_its_progress(capsys, caplog):
    X, y = sentences()
    with caplog.at_level(logging.INFO, logger="sscrf"):
        CRF(max_iterations=12).fit(X, y)
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""
    messages = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("features:") for m in messages)
    assert any(m.startswith("iter") for m in messages)
    assert any(m.startswith("done:") for m in messages)


def test_verbose_fit_off_a_terminal_writes_whole_lines(capsys):
    X, y = sentences()
    CRF(max_iterations=12, verbose=True).fit(X, y)
    err = capsys.readouterr().err
    assert "\r" not in err
    iterations = [line.split()[1] for line in err.splitlines() if line.startswith("iter")]
    assert iterations and iterations[0] == "1"
    assert all(k == "1" or int(k) % 10 == 0 for k in iterations)


@pytest.mark.parametrize("verbose", [False, True])
def test_self_training_rounds_follow_the_rule(capsys, caplog, verbose):
    X, y = sentences(10)
    with caplog.at_level(logging.INFO, logger="sscrf"):
        sscrf.self_train(CRF(max_iterations=5, verbose=verbose), X, y, X[:3], max_rounds=1)
    err = capsys.readouterr().err
    assert ("self-training round 1" in err) == verbose
    assert any("self-training round 1" in r.getMessage() for r in caplog.records)
