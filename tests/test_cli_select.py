"""`sscrf select` (sscrf.cli.selection): the strategies of sscrf.active on a pool file."""

import pytest

from sscrf import CRF
from sscrf.active import SELECTORS, select
from sscrf.cli import SELECT_STRATEGIES, main
from sscrf.demo import generate_hmm_corpus
from sscrf.io import read_conll, write_conll


# ---------------------------------------------------------------------------
# sscrf select
# ---------------------------------------------------------------------------

def test_select_strategies_listed_in_cli():
    assert list(SELECT_STRATEGIES) == sorted(SELECTORS)


def test_select_command(tmp_path, capsys):
    X, y = generate_hmm_corpus(40, seed=1)
    pool, _ = generate_hmm_corpus(30, seed=2)
    write_conll(tmp_path / "train.txt", X, y)
    write_conll(tmp_path / "pool.txt", pool)
    assert main(["train", str(tmp_path / "train.txt"), "-m", str(tmp_path / "m.model"),
                 "--max-iterations", "10", "--quiet"]) == 0
    capsys.readouterr()
    model = CRF.load(tmp_path / "m.model")
    for strategy in SELECT_STRATEGIES:
        argv = ["select", "--model", str(tmp_path / "m.model"), "--pool",
                str(tmp_path / "pool.txt"), "--strategy", strategy, "--count", "5", "--seed", "0"]
        assert main(argv + ["--width", "2"]) == 0, strategy
        out = capsys.readouterr().out.splitlines()
        rows = [line.split("\t") for line in out[1:]]
        assert len(rows) == 5 and len({r[0] for r in rows}) == 5
        first_lines = read_conll(tmp_path / "pool.txt", has_labels=False).lines
        assert all(int(r[1]) == first_lines[int(r[0])] for r in rows)
        if strategy == "most_uncertain_span":
            assert out[0] == "sentence\tline\tbegin\tstop\tscore"
            assert all(int(r[3]) - int(r[2]) == 2 for r in rows)
        else:
            assert out[0] == "sentence\tline\tscore"
        if strategy == "least_confidence":
            expected, _ = select(model, pool, strategy, 5)
            assert [int(r[0]) for r in rows] == expected.tolist()
    # --per-token: the selectors' length normalisation
    for strategy, options in (("sequence_entropy", {"normalize": True}),
                              ("token_entropy", {"aggregate": "mean"})):
        assert main(["select", "--model", str(tmp_path / "m.model"), "--pool",
                     str(tmp_path / "pool.txt"), "--strategy", strategy, "--count", "4",
                     "--per-token"]) == 0
        rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()[1:]]
        expected, scores = select(model, pool, strategy, 4, **options)
        assert [int(r[0]) for r in rows] == expected.tolist()
        assert [float(r[2]) for r in rows] == pytest.approx(scores.tolist(), rel=1e-9)
    assert main(["select", "--model", str(tmp_path / "m.model"), "--pool",
                 str(tmp_path / "pool.txt"), "--strategy", "least_confidence",
                 "--per-token"]) == 2
    assert "--per-token is for" in capsys.readouterr().err
    # quota sampling without a model
    assert main(["select", "--pool", str(tmp_path / "pool.txt"), "--strategy",
                 "quota_sampling", "--count", "3", "--seed", "1"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 4
    assert main(["select", "--pool", str(tmp_path / "pool.txt"), "--strategy",
                 "least_confidence"]) == 2
    assert "needs --model" in capsys.readouterr().err


def test_a_pool_smaller_than_the_count_or_empty_is_warned_of(tmp_path, capsys):
    X, y = generate_hmm_corpus(20, seed=5)
    pool, _ = generate_hmm_corpus(3, seed=6)
    write_conll(tmp_path / "train.txt", X, y)
    write_conll(tmp_path / "pool.txt", pool)
    (tmp_path / "empty.txt").write_text("")
    model = str(tmp_path / "m.model")
    assert main(["train", str(tmp_path / "train.txt"), "-m", model, "--max-iterations", "5",
                 "-q"]) == 0
    capsys.readouterr()
    for strategy in ("least_confidence", "most_uncertain_span"):
        assert main(["select", "-m", model, "--pool", str(tmp_path / "pool.txt"), "--strategy",
                     strategy, "--count", "5", "-o", str(tmp_path / "chosen.txt")]) == 0
        out, err = capsys.readouterr()
        assert len(out.splitlines()) == 4
        assert "warning: --count 5, but the pool has 3 sentences: all are chosen" in err
        chosen = read_conll(tmp_path / "chosen.txt", has_labels=False).tokens
        assert sorted(map(str, chosen)) == sorted(map(str, pool))
    assert main(["select", "-m", model, "--pool", str(tmp_path / "pool.txt"), "--strategy",
                 "least_confidence", "--count", "3"]) == 0
    assert capsys.readouterr().err == ""
    assert main(["select", "-m", model, "--pool", str(tmp_path / "empty.txt"), "--strategy",
                 "random", "--count", "2"]) == 0
    assert "empty.txt: no sentences in the pool; none is chosen" in capsys.readouterr().err
