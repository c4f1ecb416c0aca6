"""Shared by the `sscrf` command-line tests.

A trained model and its files, running main, reading reports.
"""

import re

import pytest

from sscrf import CRF
from sscrf.cli import main
from sscrf.demo import generate_hmm_corpus
from sscrf.io import write_conll


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


# -- tag and eval -------------------------------------------------------------------

def reference_predictions(data):
    return CRF.load(data["model"]).predict(data["X_test"])
