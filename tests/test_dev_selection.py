"""fit(..., X_dev=, y_dev=): the iterate of the best dev score, the curve, the scores."""

import warnings

import numpy as np
import pytest

import sscrf
from sscrf.fit_callbacks import DevTracker
from sscrf.metrics import chunk_scores, token_accuracy


def chunk_data(seed, n, noise=0.25):
    """Sentences of words w0..w29: w0-w4 begin an entity, w5-w9 continue one, the rest
    are outside; a token's label is flipped to a random one with probability ``noise``."""
    rng = np.random.default_rng(seed)
    labels = ["B-X", "I-X", "O"]
    X, y = [], []
    for _ in range(n):
        words = rng.integers(0, 30, size=rng.integers(3, 9))
        seq = []
        for w in words:
            gold = "B-X" if w < 5 else ("I-X" if w < 10 else "O")
            seq.append(labels[rng.integers(3)] if rng.random() < noise else gold)
        X.append([{"w": f"w{w}", "s": f"s{w % 7}"} for w in words])
        y.append(seq)
    return X, y


@pytest.fixture(scope="module")
def data():
    X, y = chunk_data(0, 60)
    X_dev, y_dev = chunk_data(1, 40, noise=0.0)
    return X, y, X_dev, y_dev


def fit_recording(data, **params):
    """A fit with X_dev and the iterates its callback saw, by iteration."""
    X, y, X_dev, y_dev = data
    seen = {}

    def record(k, loss, theta):
        seen[k] = np.array(theta)

    model = sscrf.CRF(n_threads=1, **params).fit(X, y, X_dev=X_dev, y_dev=y_dev,
                                                  callback=record)
    return model, seen


def test_keeps_the_iterate_of_the_best_dev_score(data):
    X, y, X_dev, y_dev = data
    model, seen = fit_recording(data, c2=0.0, max_iterations=40, dev_period=3)
    dev = model.training_["dev"]
    curve = dev["curve"]
    last = max(seen)
    assert [k for k, _ in curve] == [k for k in sorted(seen) if k % 3 == 0] + (
        [] if last % 3 == 0 else [last])
    assert dev["scoring"] == "chunk_f1" and dev["period"] == 3
    scores = [s for _, s in curve]
    assert dev["best_score"] == max(scores)
    best = max(k for k, s in curve if s == max(scores))  # ties: the later iterate
    assert dev["best_iteration"] == best
    if best in seen and best != last:
        np.testing.assert_array_equal(model.coef_, seen[best])
    # each point of the curve is what predict's own path scores for that iterate
    probe = sscrf.CRF(n_threads=1, c2=0.0, max_iterations=40).fit(X, y)
    for k, score in curve:
        if k in seen:
            probe.coef_ = seen[k]
            assert score == pytest.approx(chunk_scores(y_dev, probe.predict(X_dev))["f1"],
                                          abs=1e-12)
    assert dev["best_score"] == pytest.approx(
        chunk_scores(y_dev, model.predict(X_dev))["f1"], abs=1e-12)


def test_an_early_iterate_wins_when_later_ones_overfit():
    # noisy labels without a prior: the first iterates generalise better than the last
    X, y = chunk_data(3, 25, noise=0.45)
    X_dev, y_dev = chunk_data(4, 60, noise=0.0)
    model = sscrf.CRF(n_threads=1, c2=0.0, max_iterations=60, dev_period=1).fit(
        X, y, X_dev=X_dev, y_dev=y_dev)
    plain = sscrf.CRF(n_threads=1, c2=0.0, max_iterations=60).fit(X, y)
    kept = chunk_scores(y_dev, model.predict(X_dev))["f1"]
    assert kept == model.training_["dev"]["best_score"]
    assert kept > chunk_scores(y_dev, plain.predict(X_dev))["f1"]
    assert model.training_["dev"]["best_iteration"] < model.training_["dev"]["curve"][-1][0]


def test_scorings_callable_and_accuracy(data):
    X, y, X_dev, y_dev = data
    calls = []

    def tokens_right(t, p):
        calls.append(1)
        return token_accuracy(t, p)

    model = sscrf.CRF(n_threads=1, max_iterations=10, dev_scoring=tokens_right).fit(
        X, y, X_dev=X_dev, y_dev=y_dev)
    assert model.training_["dev"]["scoring"] == "tokens_right" and calls
    assert model.training_["dev"]["best_score"] == pytest.approx(
        token_accuracy(y_dev, model.predict(X_dev)))
    # labels without B-/I- prefixes: token accuracy by default
    plain = [[label.replace("-", "") for label in seq] for seq in y]
    plain_dev = [[label.replace("-", "") for label in seq] for seq in y_dev]
    m = sscrf.CRF(n_threads=1, max_iterations=10).fit(X, plain, X_dev=X_dev, y_dev=plain_dev)
    assert m.training_["dev"]["scoring"] == "accuracy"


def test_named_scores_equal_the_metrics_of_predict(data):
    # the named scores are computed on label ids; a dev label the model never saw
    # (Z) is a token it gets wrong and a chunk type it never finds
    X, y, X_dev, y_dev = data
    y_dev = [seq[:-1] + ["B-Z" if seq[-1] == "B-X" else seq[-1]] for seq in y_dev]
    for scoring, metric in (("accuracy", token_accuracy),
                            ("chunk_f1", lambda t, p: chunk_scores(t, p)["f1"])):
        with pytest.warns(UserWarning, match="labels the model has not: 'B-Z'"):
            model = sscrf.CRF(n_threads=1, max_iterations=10, dev_scoring=scoring,
                              dev_period=1).fit(X, y, X_dev=X_dev, y_dev=y_dev)
        dev = model.training_["dev"]
        assert dev["scoring"] == scoring and len(dev["curve"]) >= 10
        assert dev["best_score"] == metric(y_dev, model.predict(X_dev))


def test_saved_model_keeps_a_named_score_not_a_callable(data, tmp_path):
    X, y, X_dev, y_dev = data
    m = sscrf.CRF(n_threads=1, max_iterations=5, dev_scoring=lambda t, p: 0.5).fit(
        X, y, X_dev=X_dev, y_dev=y_dev)
    m.save(tmp_path / "m.crf")
    loaded = sscrf.CRF.load(tmp_path / "m.crf")
    assert loaded.dev_scoring is None
    assert loaded.training_["dev"]["best_score"] == 0.5
    m.set_params(dev_scoring="accuracy").save(tmp_path / "n.crf")
    assert sscrf.CRF.load(tmp_path / "n.crf").dev_scoring == "accuracy"
    # checkpoints are written the same way
    sscrf.CRF(n_threads=1, max_iterations=6, dev_scoring=lambda t, p: 0.5).fit(
        X, y, X_dev=X_dev, y_dev=y_dev, checkpoint=tmp_path / "c.crf", checkpoint_every=3)
    assert sscrf.CRF.load(tmp_path / "c.crf").dev_scoring is None


def test_two_stages_score_on_across_the_stages(data):
    X, y, X_dev, y_dev = data
    XU = [s for s, _ in zip(*chunk_data(5, 30))]
    m = sscrf.CRF(n_threads=1, max_iterations=12, entropy_weight=0.05, dev_period=4).fit(
        X, y, X_unlabeled=XU, X_dev=X_dev, y_dev=y_dev)
    first = m.training_["stages"]["supervised"]["iterations"]
    total = first + m.training_["iterations"]
    iterations = [k for k, _ in m.training_["dev"]["curve"]]
    assert iterations[-1] == total and any(k > first for k in iterations)


@pytest.mark.parametrize("kwargs, fit_kwargs, match", [
    ({}, {"X_dev": "dev"}, "together"),
    ({}, {"y_dev": "dev"}, "together"),
    ({"dev_scoring": "f2"}, {}, "dev_scoring"),
    ({"dev_scoring": 3}, {}, "dev_scoring"),
    ({"dev_period": 0}, {}, "dev_period"),
    ({"dev_patience": 0}, {}, "dev_patience"),
    ({"dev_patience": 2.5}, {}, "dev_patience"),
    ({"dev_patience": "3"}, {}, "dev_patience"),
])
def test_bad_dev_settings(data, kwargs, fit_kwargs, match):
    X, y, X_dev, y_dev = data
    given = {"X_dev": X_dev, "y_dev": y_dev}
    fit_kwargs = {k: given[k] for k in fit_kwargs} or given
    with pytest.raises(sscrf.SscrfError, match=match):
        sscrf.CRF(max_iterations=2, **kwargs).fit(X, y, **fit_kwargs)



def test_bad_dev_data_is_named_as_dev_data(data):
    X, y, X_dev, y_dev = data
    bad = [
        ({"X_dev": X_dev, "y_dev": y_dev[:-1]},
         f"X_dev has {len(X_dev)} sentences but y_dev has {len(y_dev) - 1}"),
        ({"X_dev": X_dev, "y_dev": [y_dev[0][:-1]] + y_dev[1:]}, "X_dev sentence 0: "),
        ({"X_dev": X_dev, "y_dev": ["O"] + y_dev[1:]}, r"y_dev\[0\] must be a list of labels"),
        ({"X_dev": X_dev, "y_dev": [[0] * len(y_dev[0])] + y_dev[1:]},
         "X_dev sentence 0, token 0: a label must be a string"),
        ({"X_dev": 5, "y_dev": y_dev}, "X_dev must be a list of sentences"),
    ]
    for fit_kwargs, match in bad:
        with pytest.raises(sscrf.SscrfError, match=match):
            sscrf.CRF(max_iterations=2).fit(X, y, **fit_kwargs)

def patience_stop(curve, patience):
    """The index in ``curve`` of the check at which ``patience`` scores in a row have not
    beaten the best before them, or None."""
    best, stale = None, 0
    for i, (_, score) in enumerate(curve):
        stale = 0 if best is None or score > best else stale + 1
        best = score if best is None else max(best, score)
        if stale >= patience:
            return i
    return None


class ScriptedDev:
    """A DevSet stand-in whose scores are given in advance."""
    name = "scripted"

    def __init__(self, scores):
        self.scores = iter(scores)

    def score(self, layout, theta):
        return next(self.scores)


@pytest.mark.parametrize("scores, patience, stop", [
    ([0.5, 0.6, 0.6, 0.55, 0.7], 2, 3),  # a tie is not an improvement
    ([0.5, 0.6, 0.6, 0.7, 0.65, 0.7, 0.8], 2, 5),
    ([0.5, 0.4, 0.6, 0.5, 0.7], 2, None),
    ([0.5, 0.5, 0.5], 1, 1),
])
def test_tracker_stops_after_patience_scores_without_a_better_one(scores, patience, stop):
    tracker = DevTracker(ScriptedDev(scores), None, 1, patience)
    callback = tracker.wrap(None)
    stopped_at = next((i for i in range(len(scores))
                       if callback(i + 1, 0.0, np.full(2, float(i)))), None)
    assert stopped_at == stop and tracker.stopped == (stop is not None)
    assert patience_stop([[i, s] for i, s in enumerate(scores)], patience) == stop
    theta, record = tracker.finish(len(tracker.curve), np.zeros(2))
    best = max(scores[:len(tracker.curve)])
    last_best = max(i for i, s in enumerate(scores[:len(tracker.curve)]) if s == best)
    assert record["best_score"] == best and theta[0] == last_best  # the latest on ties


@pytest.mark.parametrize("patience", [1, 3])
def test_patience_ends_the_fit_where_the_curve_stops_improving(patience):
    X, y = chunk_data(3, 25, noise=0.45)
    X_dev, y_dev = chunk_data(4, 60, noise=0.0)
    full = sscrf.CRF(n_threads=1, c2=0.0, max_iterations=60, dev_period=1).fit(
        X, y, X_dev=X_dev, y_dev=y_dev)
    curve = full.training_["dev"]["curve"]
    stop = patience_stop(curve, patience)
    assert stop is not None and stop < len(curve) - 1  # the data overfit: the test can fail
    m = sscrf.CRF(n_threads=1, c2=0.0, max_iterations=60, dev_period=1,
                  dev_patience=patience).fit(X, y, X_dev=X_dev, y_dev=y_dev)
    dev = m.training_["dev"]
    assert dev["curve"] == curve[:stop + 1]
    assert m.training_["iterations"] == curve[stop][0]
    assert m.training_["stop_reason"] == "no better dev score in dev_patience checks"
    kept = max(k for k, s in curve[:stop + 1] if s == max(s for _, s in curve[:stop + 1]))
    assert dev["best_iteration"] == kept
    assert dev["best_score"] == chunk_scores(y_dev, m.predict(X_dev))["f1"]
    # a patience the curve never exhausts changes nothing
    calm = sscrf.CRF(n_threads=1, c2=0.0, max_iterations=60, dev_period=1,
                     dev_patience=len(curve)).fit(X, y, X_dev=X_dev, y_dev=y_dev)
    np.testing.assert_array_equal(calm.coef_, full.coef_)
    assert calm.training_["stop_reason"] == full.training_["stop_reason"]


def test_patience_counts_in_the_semi_supervised_stage_only():
    X, y = chunk_data(3, 25, noise=0.45)
    X_dev, y_dev = chunk_data(4, 60, noise=0.0)
    XU = chunk_data(7, 40)[0]
    params = dict(n_threads=1, c2=0.0, max_iterations=40, dev_period=1, entropy_weight=0.05)
    full = sscrf.CRF(**params).fit(X, y, X_unlabeled=XU, X_dev=X_dev, y_dev=y_dev)
    first = full.training_["stages"]["supervised"]["iterations"]
    curve = full.training_["dev"]["curve"]
    # the supervised stage alone would have exhausted a patience of 1
    assert patience_stop([c for c in curve if c[0] <= first], 1) is not None
    m = sscrf.CRF(**params, dev_patience=1).fit(X, y, X_unlabeled=XU, X_dev=X_dev,
                                                y_dev=y_dev)
    stages = m.training_["stages"]["supervised"]
    assert stages["iterations"] == first
    assert stages["stop_reason"] == full.training_["stages"]["supervised"]["stop_reason"]
    # the second stage ran, and stopped at its first score not above the best so far
    best_before = max(s for k, s in curve if k <= first)
    later = [(k, s) for k, s in curve if k > first]
    stale = next((k for k, s in later if s <= max([best_before] + [t for j, t in later
                                                                  if j < k])), None)
    assert m.training_["iterations"] >= 1
    assert m.training_["dev"]["curve"] == [c for c in curve if c[0] <= (stale or curve[-1][0])]


def test_dev_labels_must_fit_the_sentences(data):
    X, y, X_dev, y_dev = data
    with pytest.raises(sscrf.SscrfError):
        sscrf.CRF(max_iterations=2).fit(X, y, X_dev=X_dev, y_dev=y_dev[:-1])


def test_same_choice_at_one_and_two_threads(data):
    X, y, X_dev, y_dev = data
    XU = chunk_data(6, 30)[0]
    runs = []
    for n_threads in (1, 2):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # the zero weight's
            sel = sscrf.select_hyperparameters(
                sscrf.CRF(max_iterations=15, n_threads=n_threads, dev_period=2),
                {"c2": [1.0, 0.1], "proportion_weight": [20.0]}, X, y, X_dev, y_dev,
                X_unlabeled=XU)
        runs.append(sel)
    assert runs[0].best_params == runs[1].best_params
    np.testing.assert_array_equal(runs[0].model.coef_, runs[1].model.coef_)
    assert [r["dev_score"] for r in runs[0].table] == [r["dev_score"] for r in runs[1].table]


def test_dev_labels_the_model_lacks_are_warned_of(data):
    # test_named_scores_equal_the_metrics_of_predict: they count as errors
    X, y, X_dev, y_dev = data
    y_other = [["B-Y" if label == "B-X" else label for label in seq] for seq in y_dev]
    n_other = sum(label == "B-Y" for seq in y_other for label in seq)
    with pytest.warns(UserWarning, match=rf"labels the model has not: 'B-Y' \({n_other} tokens\)"):
        sscrf.CRF(max_iterations=3).fit(X, y, X_dev=X_dev, y_dev=y_other)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the model's own labels: no warning
        sscrf.CRF(max_iterations=3).fit(X, y, X_dev=X_dev, y_dev=y_dev)
