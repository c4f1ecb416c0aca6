"""select_hyperparameters, and zero semi-supervised weights as the baseline of a grid."""

import warnings

import numpy as np
import pytest

import sscrf
from sscrf.metrics import chunk_scores

from test_dev_selection import chunk_data


@pytest.fixture(scope="module")
def data():
    X, y = chunk_data(10, 40, noise=0.3)
    X_dev, y_dev = chunk_data(11, 40, noise=0.0)
    XU, _ = chunk_data(12, 50, noise=0.0)
    return X, y, X_dev, y_dev, XU


def test_c2_path_table_and_best_model(data):
    X, y, X_dev, y_dev, _ = data
    grid = {"c2": [0.01, 1.0, 0.1]}
    sel = sscrf.select_hyperparameters(sscrf.CRF(max_iterations=30, n_threads=1), grid,
                                       X, y, X_dev, y_dev)
    assert [row["c2"] for row in sel.table] == [1.0, 0.1, 0.01]  # largest c2 first
    assert [row["warm_start"] for row in sel.table] == [False, True, True]
    for row in sel.table:
        assert set(row) >= {"c2", "dev_score", "iterations", "seconds", "best_iteration"}
    scores = [row["dev_score"] for row in sel.table]
    assert sel.best_score == max(scores)
    assert sel.best_params["c2"] == max(r["c2"] for r in sel.table if r["dev_score"] == max(scores))
    assert sel.model.c2 == sel.best_params["c2"]
    assert sel.best_score == pytest.approx(chunk_scores(y_dev, sel.model.predict(X_dev))["f1"])
    assert sel.added_zero == []
    # as text: a header, a row per setting in the table's order, the chosen one marked
    lines = str(sel).splitlines()
    assert lines[0].split() == ["c2", "dev", "score", "best", "iteration", "iterations", "seconds"]
    rows = [line.split() for line in lines[1:]]
    assert [float(r[0]) for r in rows] == [row["c2"] for row in sel.table]
    assert [float(r[1]) for r in rows] == [round(row["dev_score"], 4) for row in sel.table]
    assert [r[0] for r in rows if r[-1] == "chosen"] == [f"{sel.best_params['c2']:g}"]


def test_warm_start_begins_near_the_previous_optimum(data):
    X, y, X_dev, y_dev, _ = data
    first = []  # the loss after each fit's first iteration

    def first_loss(k, loss, theta):
        if k == 1:
            first.append(loss)

    sscrf.select_hyperparameters(sscrf.CRF(max_iterations=30, n_threads=1), {"c2": [1.0, 0.5]},
                                 X, y, X_dev, y_dev, callback=first_loss)
    sscrf.CRF(max_iterations=30, n_threads=1, c2=0.5).fit(X, y, callback=first_loss)
    assert len(first) == 3
    assert first[1] < first[2]  # the c2 = 0.5 fit from the c2 = 1 optimum, then from 0


def test_zero_is_added_to_semi_supervised_weights(data):
    X, y, X_dev, y_dev, XU = data
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sel = sscrf.select_hyperparameters(
            sscrf.CRF(max_iterations=15, n_threads=1), {"c2": [1.0, 0.1], "entropy_weight": [0.05]},
            X, y, X_dev, y_dev, X_unlabeled=XU)
    assert sel.added_zero == ["entropy_weight"]
    assert sorted({row["entropy_weight"] for row in sel.table}) == [0.0, 0.05]
    assert len(sel.table) == 4
    # the baseline setting is the search's own: no warning that its weight is zero
    assert not any("zero entropy_weight" in str(w.message) for w in caught)


def test_add_zero_false_fits_the_grid_as_given(data):
    X, y, X_dev, y_dev, XU = data
    grid = {"c2": [1.0, 0.1], "entropy_weight": [0.05]}
    sel = sscrf.select_hyperparameters(sscrf.CRF(max_iterations=15, n_threads=1), grid,
                                       X, y, X_dev, y_dev, add_zero=False, X_unlabeled=XU)
    assert sel.added_zero == []
    assert [(row["entropy_weight"], row["c2"]) for row in sel.table] == [(0.05, 1.0),
                                                                          (0.05, 0.1)]
    # the rows are those of the same settings in the search that adds 0
    full = sscrf.select_hyperparameters(sscrf.CRF(max_iterations=15, n_threads=1), grid,
                                        X, y, X_dev, y_dev, X_unlabeled=XU)
    assert [row["dev_score"] for row in sel.table] == [
        row["dev_score"] for row in full.table if row["entropy_weight"] == 0.05]
    with pytest.raises(sscrf.SscrfTypeError, match="add_zero"):
        sscrf.select_hyperparameters(sscrf.CRF(), {"c2": [1.0]}, X, y, X_dev, y_dev,
                                     add_zero="no")


def test_ties_prefer_the_baseline(data):
    X, y, X_dev, y_dev, XU = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the zero weight's
        sel = sscrf.select_hyperparameters(
            sscrf.CRF(max_iterations=5, n_threads=1, dev_scoring=lambda t, p: 1.0),
            {"entropy_weight": [0.0, 0.05], "c2": [0.1, 1.0]}, X, y, X_dev, y_dev,
            X_unlabeled=XU)
    assert sel.best_params == {"entropy_weight": 0.0, "c2": 1.0}


@pytest.mark.parametrize("grid, match", [
    ({}, "non-empty dict"),
    ({"gamma": [1]}, "not a hyperparameter"),
    ({"c2": 0.1}, "list of values"),
    ({"c2": []}, "empty"),
])
def test_bad_grids(data, grid, match):
    X, y, X_dev, y_dev, _ = data
    with pytest.raises(sscrf.SscrfError, match=match):
        sscrf.select_hyperparameters(sscrf.CRF(), grid, X, y, X_dev, y_dev)
    with pytest.raises(sscrf.SscrfError, match="X_dev"):
        sscrf.select_hyperparameters(sscrf.CRF(), {"c2": [1]}, X, y, None, None)


def test_zero_entropy_weight_is_the_dense_baseline(data):
    X, y, _, _, XU = data
    with pytest.warns(UserWarning, match="zero entropy_weight"):
        zero = sscrf.CRF(entropy_weight=0.0, max_iterations=40, n_threads=1).fit(
            X, y, X_unlabeled=XU)
    on = sscrf.CRF(entropy_weight=0.05, max_iterations=40, n_threads=1).fit(X, y, X_unlabeled=XU)
    assert zero.feature_set_ == on.feature_set_ == "dense"
    assert zero.attributes_ == on.attributes_  # the unlabeled attributes are in both
    # γ = 0 is exactly the supervised stage the entropy fit starts from
    assert zero.training_["loss"] == on.training_["stages"]["supervised"]["loss"]
    assert "stages" not in zero.training_
    dense = sscrf.CRF(feature_set="dense", max_iterations=40, n_threads=1).fit(X, y)
    assert zero.predict(X) == dense.predict(X)


def test_zero_ge_weight_drops_the_constraints(data):
    X, y, _, _, XU = data
    constraints = {"w=w0": {"B-X": 0.9, "I-X": 0.05, "O": 0.05}}
    with pytest.warns(UserWarning, match="zero entropy_weight, ge_weight"):
        m = sscrf.CRF(ge_weight=0.0, max_iterations=10, n_threads=1).fit(
            X, y, X_unlabeled=XU, constraints=constraints)
    assert m.feature_set_ == "dense" and not hasattr(m, "constraints_")
    with pytest.raises(sscrf.SscrfError, match="ge_weight"):  # nothing left to train on
        sscrf.CRF(ge_weight=0.0).fit([], [], X_unlabeled=XU, constraints=constraints)


def test_grid_search_cv_over_entropy_weight_with_zero(data):
    model_selection = pytest.importorskip("sklearn.model_selection")
    X, y, _, _, XU = data
    search = model_selection.GridSearchCV(
        sscrf.CRF(max_iterations=10, n_threads=1), {"entropy_weight": [0.0, 0.05]}, cv=2,
        error_score="raise")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        search.fit(X, y, X_unlabeled=XU)
    scores = search.cv_results_["mean_test_score"]
    assert len(scores) == 2 and np.all(np.isfinite(scores))


def test_a_search_extracts_once_and_fits_as_separate_fits_do(data, monkeypatch):
    X, y, X_dev, y_dev, XU = data
    from sscrf import training
    from sscrf.features import FeatureExtractor

    calls = {"extract": 0, "dev": 0, "always on": 0}

    def counted(name, real):
        def call(*args, **kwargs):
            calls[name] += 1
            return real(*args, **kwargs)
        return call

    monkeypatch.setattr(FeatureExtractor, "fit_transform",
                        counted("extract", FeatureExtractor.fit_transform))
    monkeypatch.setattr(training, "DevSet", counted("dev", training.DevSet))
    monkeypatch.setattr(training, "always_on_corpus",
                        counted("always on", training.always_on_corpus))
    n_tokens = sum(map(len, X))
    grid = {"c2": [1.0, 0.1], "entropy_weight": [0.05], "proportion_weight": [0.1 * n_tokens],
            "min_freq": [1, 2]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        sel = sscrf.select_hyperparameters(sscrf.CRF(max_iterations=12, n_threads=1), grid,
                                           X, y, X_dev, y_dev, X_unlabeled=XU)
    # one extraction, dev set and label-proportion corpus per min_freq, for the 8
    # settings of each
    assert len(sel.table) == 16 and calls == {"extract": 2, "dev": 2, "always on": 2}
    # each row is what the same chain of fits gives outside a search
    for row in sel.table:
        if not row["warm_start"]:
            previous = None
        params = {k: row[k] for k in grid}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            model = sscrf.CRF(max_iterations=12, n_threads=1, **params).fit(
                X, y, X_unlabeled=XU, init=previous, X_dev=X_dev, y_dev=y_dev)
        assert model.training_["dev"]["best_score"] == row["dev_score"]
        assert row["iterations"] == model.training_["iterations"] + sum(
            stage["iterations"] for stage in model.training_.get("stages", {}).values())
        if params == sel.best_params:
            assert np.array_equal(model.coef_, sel.model.coef_)
            assert model.attributes_ == sel.model.attributes_
        previous = model
    # outside a search every fit makes its own
    assert calls == {"extract": 2 + 16, "dev": 2 + 16, "always on": 2 + 8}
