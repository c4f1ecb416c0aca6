"""The active-learning loop on the command line: select --count, -m the model,
-o CHOSEN and --rest REST, train --init; errors that never print a pool."""

import pytest

from sscrf import CRF
from sscrf.active import ActiveLearner, select
from sscrf.demo import generate_hmm_corpus
from sscrf.errors import SscrfTypeError
from sscrf.cli import main
from sscrf.io import read_conll, write_conll
from cli_common import assert_error, run


@pytest.fixture(scope="module")
def loop(tmp_path_factory):
    root = tmp_path_factory.mktemp("loop")
    X, y = generate_hmm_corpus(40, seed=1)
    pool, pool_y = generate_hmm_corpus(30, seed=2)
    write_conll(root / "seed.txt", X, y)
    write_conll(root / "pool.txt", pool)
    write_conll(root / "pool_gold.txt", pool, pool_y)
    assert main(["train", str(root / "seed.txt"), "-m", str(root / "r0.model"),
                 "--max-iterations", "10", "--quiet"]) == 0
    return {"root": root, "pool": pool, "pool_y": pool_y, "X": X, "y": y}


def test_select_writes_chosen_and_rest(capsys, loop):
    root = loop["root"]
    code, out, err = run(capsys, "select", "-m", root / "r0.model", "--pool", root / "pool.txt",
                         "--strategy", "least_confidence", "--count", "5",
                         "-o", root / "chosen.txt", "--rest", root / "rest.txt")
    assert code == 0, err
    ranked = [int(line.split("\t")[0]) for line in out.splitlines()[1:]]
    expected, _ = select(CRF.load(root / "r0.model"), loop["pool"], "least_confidence", 5)
    assert ranked == expected.tolist()
    chosen = read_conll(root / "chosen.txt", has_labels=False).tokens
    rest = read_conll(root / "rest.txt", has_labels=False).tokens
    assert chosen == [loop["pool"][i] for i in ranked]
    assert rest == [s for i, s in enumerate(loop["pool"]) if i not in set(ranked)]
    # a pool with a gold column keeps it in both files (simulation)
    code, out, err = run(capsys, "select", "--model", root / "r0.model", "--pool",
                         root / "pool_gold.txt", "--strategy", "least_confidence", "--count",
                         "5", "-o", root / "chosen_gold.txt")
    assert code == 0, err
    labeled = read_conll(root / "chosen_gold.txt")
    assert labeled.labels == [loop["pool_y"][i] for i in ranked]


def test_select_refuses_output_over_input_and_old_count_spelling(capsys, loop):
    root = loop["root"]
    code, _, err = run(capsys, "select", "--pool", root / "pool.txt", "--strategy", "random",
                       "-o", root / "pool.txt")
    assert_error(code, err, "writing it would destroy the input")
    assert read_conll(root / "pool.txt", has_labels=False).tokens == loop["pool"]
    code, _, err = run(capsys, "select", "--pool", root / "pool.txt", "--strategy", "random",
                       "-o", root / "a.txt", "--rest", root / "a.txt")
    assert_error(code, err, "give two files")
    code, _, err = run(capsys, "select", "--pool", root / "pool.txt", "--strategy", "random",
                       "-m", "20")
    assert_error(code, err, "-m is the model", "--count 20")


def test_train_init_continues_from_the_previous_model(capsys, loop):
    root = loop["root"]
    write_conll(root / "more.txt", loop["X"] + loop["pool"][:5],
                loop["y"] + loop["pool_y"][:5])
    code, out, err = run(capsys, "train", root / "more.txt", "--init", root / "r0.model",
                         "-m", root / "r1.model", "--max-iterations", "0", "--quiet")
    assert code == 0, err
    old, new = CRF.load(root / "r0.model"), CRF.load(root / "r1.model")
    # zero iterations: the warm start itself, the old weights where the old model has them
    assert new.transition_features_ == old.transition_features_
    code, out, err = run(capsys, "eval", "-m", root / "r1.model", root / "seed.txt")
    assert code == 0 and out.startswith("processed "), err


def test_learner_query_with_the_pool_names_its_length():
    X, y = generate_hmm_corpus(300, seed=3)
    learner = ActiveLearner(CRF(max_iterations=3, templates="default", verbose=False), X[50:], X_labeled=X[:50], y_labeled=y[:50])
    with pytest.raises(SscrfTypeError) as info:
        learner.query(X[50:])
    message = str(info.value)
    assert len(message) < 300 and "250 items" in message
    with pytest.raises(SscrfTypeError) as info:
        select(None, X, "random", X)
    assert len(str(info.value)) < 300
    with pytest.raises(ValueError) as info:
        select(None, X, str(X), 3)
    assert len(str(info.value)) < 400
