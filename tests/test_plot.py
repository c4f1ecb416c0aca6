"""sscrf.plot and `sscrf plot`: each figure is drawn headless, written as a
PNG that is not blank, and shows the numbers it was given."""

import sys
from collections import Counter

import matplotlib.image
import numpy as np
import pytest

import sscrf
from sscrf import plot
from sscrf.active import ActiveLearner, simulate
from sscrf.cli import main
from sscrf.cli.plot import training_names
from sscrf.demo import generate_hmm_corpus
from sscrf.errors import SscrfError, SscrfTypeError
from sscrf.io import write_conll


def assert_png_not_blank(path):
    assert path.is_file() and path.stat().st_size > 0
    pixels = matplotlib.image.imread(str(path))
    assert pixels.ndim == 3 and pixels.shape[0] > 100 and pixels.shape[1] > 100
    assert float(np.var(pixels[..., :3])) > 0.0


def line_data(figure):
    (axes,) = [a for a in figure.axes if a.lines]
    return [(list(line.get_xdata()), list(line.get_ydata())) for line in axes.lines]


@pytest.fixture(scope="module")
def fitted():
    X, y = generate_hmm_corpus(60, seed=3)
    model = sscrf.CRF(templates="default", max_iterations=15, n_threads=1).fit(X, y)
    return model, X, y


def test_learning_curve_of_a_simulated_run(tmp_path):
    X, y = generate_hmm_corpus(40, seed=5)
    X_test, y_test = generate_hmm_corpus(20, seed=6)
    learner = ActiveLearner(sscrf.CRF(templates="default", max_iterations=5, n_threads=1),
                            X[5:], X_labeled=X[:5], y_labeled=y[:5], strategy="random",
                            random_state=0)
    curve = simulate(learner, y[5:], X_test, y_test, batch=5, max_sentences=15)
    figure = plot.learning_curve(curve, path=tmp_path / "curve.png")
    assert_png_not_blank(tmp_path / "curve.png")
    ((xs, ys),) = line_data(figure)
    assert xs == [p["sentences"] for p in curve] and ys == [p["score"] for p in curve]
    assert xs[0] == 5 and xs[-1] == 15


def test_learning_curves_of_several_strategies_by_tokens(tmp_path):
    history = {
        "random": [{"sentences": 10, "tokens": 100, "score": 0.5},
                   {"sentences": 20, "tokens": 210, "score": 0.6}],
        "least_confidence": [{"sentences": 10, "tokens": 100, "score": 0.5},
                             {"sentences": 20, "tokens": 260, "score": 0.7}],
    }
    figure = plot.learning_curve(history, x="tokens", path=tmp_path / "c.png")
    assert_png_not_blank(tmp_path / "c.png")
    assert line_data(figure) == [([100, 210], [0.5, 0.6]), ([100, 260], [0.5, 0.7])]
    assert [t.get_text() for t in figure.axes[0].get_legend().get_texts()] == list(history)
    with pytest.raises(SscrfError, match="'tokens'"):
        plot.learning_curve([{"sentences": 1, "score": 0.1}], x="tokens")
    with pytest.raises(SscrfTypeError):
        plot.learning_curve("curve")


def test_hyperparameter_curve_one_line_per_other_setting(tmp_path):
    table = [{"c2": c2, "entropy_weight": g, "dev_score": 0.9 - 0.01 * i - g,
              "iterations": 10 + i, "seconds": 0.1 * i}
             for i, c2 in enumerate([0.01, 0.1, 1.0, 10.0]) for g in (0.0, 0.1)]
    figure = plot.hyperparameter_curve(table, "c2", path=tmp_path / "h.png")
    assert_png_not_blank(tmp_path / "h.png")
    lines = line_data(figure)
    assert len(lines) == 2
    for xs, ys in lines:
        assert xs == [0.01, 0.1, 1.0, 10.0]
    assert lines[0][1] == pytest.approx([0.9, 0.89, 0.88, 0.87])
    assert figure.axes[0].get_xscale() == "log"  # a grid over three decades
    one = plot.hyperparameter_curve(table[::2], "c2", log=False)
    assert one.axes[0].get_xscale() == "linear" and len(line_data(one)) == 1
    assert len(line_data(plot.hyperparameter_curve(table, "c2", by=[]))[0][0]) == 8
    with pytest.raises(SscrfError, match="no 'gamma'"):
        plot.hyperparameter_curve(table, "gamma")


def test_confusion_matrix_counts_tokens(tmp_path):
    gold = [["B", "I", "O"], ["O", "O"]]
    pred = [["B", "O", "O"], ["I", "O"]]
    figure = plot.confusion_matrix(gold, pred, path=tmp_path / "cm.png")
    assert_png_not_blank(tmp_path / "cm.png")
    axes = figure.axes[0]
    names = ["B", "I", "O"]
    expected = Counter(zip(sum(gold, []), sum(pred, [])))
    cells = {(t.get_position()[1], t.get_position()[0]): int(t.get_text()) for t in axes.texts}
    for i, g in enumerate(names):
        for j, p in enumerate(names):
            assert cells[(i, j)] == expected[(g, p)], (g, p)
    # The colours are each row's share: the gold O row is 1/3 I, 2/3 O.
    image = axes.images[0].get_array()
    assert list(np.asarray(image[2])) == pytest.approx([0.0, 1 / 3, 2 / 3])
    flat = plot.confusion_matrix(sum(gold, []), sum(pred, []), labels=["O", "B"])
    assert len(flat.axes[0].texts) == 4
    with pytest.raises(SscrfError, match="5 tokens but y_pred has 4"):
        plot.confusion_matrix(gold, [["B", "O", "O"], ["I"]])


def test_training_loss_of_a_fit_and_of_its_log(fitted, tmp_path):
    model, X, y = fitted
    figure = plot.training_loss(model, path=tmp_path / "loss.png")
    assert_png_not_blank(tmp_path / "loss.png")
    ((xs, ys),) = line_data(figure)
    history = model.training_["history"]
    assert xs == list(range(1, len(history) + 1)) and ys == history
    assert line_data(plot.training_loss(model.training_log_)) == [(xs, ys)]
    assert line_data(plot.training_loss(history)) == [(xs, ys)]


def test_training_loss_of_two_stages_numbers_on():
    record = {"history": [5.0, 4.0], "stages": {"supervised": {"history": [9.0, 7.0, 6.0]}}}
    figure = plot.training_loss(record)
    assert line_data(figure) == [([1, 2, 3], [9.0, 7.0, 6.0]), ([4, 5], [5.0, 4.0])]


def test_a_loaded_model_has_no_history_to_plot(fitted, tmp_path):
    model = fitted[0]
    model.save(tmp_path / "m.model")
    with pytest.raises(SscrfError, match="no loss history"):
        plot.training_loss(sscrf.CRF.load(tmp_path / "m.model"))


def test_read_training_log_of_a_terminal_and_of_a_file():
    lines = ["features: 5,985 attributes\n", "iter   1  loss 1557.92  evals 2  0.0s\n",
             "\riter  10  loss 252.119  evals 12  0.0s\riter  20  loss 250.831  evals 23  0.0s\n",
             "done: 30 iterations\n"]
    assert plot.read_training_log(lines) == [(1, 1557.92), (10, 252.119), (20, 250.831)]
    with pytest.raises(SscrfError, match="no 'iter K loss F' line"):
        plot.read_training_log(["hello\n"])


def test_a_log_of_two_stages_and_of_a_search_is_drawn_a_line_a_training():
    lines = ["stage 1/2: supervised warm start\n", "iter  1  loss 9\n", "iter  3  loss 6\n",
             "stage 2/2: adding the entropy term\n", "iter  1  loss 5\n", "iter  2  loss 4\n",
             "setting 1/2: c2=1: dev 0.5\n", "iter  1  loss 3\n", "iter  2  loss 2\n",
             "setting 2/2: c2=0.1: dev 0.6\n"]
    record = plot.read_training_log(lines)
    assert record == [(1, 9.0), (3, 6.0), (4, 5.0), (5, 4.0), (1, 3.0), (2, 2.0)]
    figure = plot.training_loss(record)
    assert line_data(figure) == [([1, 3, 4, 5], [9.0, 6.0, 5.0, 4.0]), ([1, 2], [3.0, 2.0])]
    assert [t.get_text() for t in figure.axes[0].get_legend().get_texts()] == [
        "training 1", "training 2"]
    named = plot.training_loss(record, names=["c2=1", "c2=0.1"])
    assert [t.get_text() for t in named.axes[0].get_legend().get_texts()] == ["c2=1", "c2=0.1"]
    with pytest.raises(SscrfError, match="1 name"):
        plot.training_loss(record, names=["c2=1"])
    with pytest.raises(SscrfError, match="names goes with"):
        plot.training_loss([3.0, 2.0], names=["a"])


def test_no_pyplot_and_a_clear_error_without_matplotlib(monkeypatch, tmp_path):
    had_pyplot = "matplotlib.pyplot" in sys.modules
    plot.training_loss([3.0, 2.0, 1.0], path=tmp_path / "x.png")
    assert ("matplotlib.pyplot" in sys.modules) == had_pyplot
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(SscrfError, match=r"pip install 'sscrf\[plot\]'"):
        plot.training_loss([3.0, 2.0, 1.0])


def test_cli_plot_confusion_and_loss(fitted, tmp_path, capsys):
    model, X, y = fitted
    model.save(tmp_path / "m.model")
    write_conll(tmp_path / "tagged.txt", X, y, predicted=model.predict(X))
    png = tmp_path / "cm.png"
    assert main(["plot", "confusion", str(tmp_path / "tagged.txt"), "-o", str(png)]) == 0
    assert_png_not_blank(png)
    log = tmp_path / "train.log"
    write_conll(tmp_path / "train.txt", X, y)
    with open(log, "w") as f:
        saved_stderr = sys.stderr
        sys.stderr = f
        try:
            assert main(["train", str(tmp_path / "train.txt"), "-m", str(tmp_path / "t.model"),
                         "--max-iterations", "12", "--threads", "1"]) == 0
        finally:
            sys.stderr = saved_stderr
    assert main(["plot", "loss", str(log), "-o", str(tmp_path / "loss.png")]) == 0
    assert_png_not_blank(tmp_path / "loss.png")
    # a search on --dev: a line a setting, named as the log reports it
    with open(log, "w") as f:
        saved_stderr = sys.stderr
        sys.stderr = f
        try:
            assert main(["train", str(tmp_path / "train.txt"), "-m", str(tmp_path / "t.model"),
                         "--max-iterations", "6", "--threads", "1", "--dev",
                         str(tmp_path / "train.txt"), "--c2", "1,0.1"]) == 0
        finally:
            sys.stderr = saved_stderr
    lines = log.read_text().splitlines()
    assert training_names(lines, plot.read_training_log(lines)) == ["c2=1", "c2=0.1"]
    assert main(["plot", "loss", str(log), "-o", str(tmp_path / "search.png")]) == 0
    assert_png_not_blank(tmp_path / "search.png")
    capsys.readouterr()
    assert main(["plot", "loss", str(tmp_path / "m.model"), "-o", str(tmp_path / "x.png")]) == 2
    assert "keeps no loss history" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()
