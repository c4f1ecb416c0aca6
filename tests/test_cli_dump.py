"""`sscrf dump` (sscrf.cli.dump): a model's labels, sizes and weights."""

import json

import numpy as np
import pytest

from sscrf import CRF
from cli_common import run
from cli_common import data  # noqa: F401 (fixtures)


# -- dump -----------------------------------------------------------------------

def test_dump(capsys, data):
    code, out, err = run(capsys, "dump", data["model"], "--top", "7")
    assert code == 0, err
    model = CRF.load(data["model"])
    assert f"labels ({len(model.classes_)}): " + " ".join(model.classes_) in out
    assert f"parameters: {model.n_parameters_}" in out
    state = model.state_features_
    assert f"non-zero state features: {len(state)}" in out
    lines = out.splitlines()
    assert f"settings: c2={model.c2:g}" in lines  # c1 and the term weights are 0
    assert not any(line.startswith("dev:") for line in lines)
    start = lines.index("top 7 state features by |weight|:")
    rows = [line.split() for line in lines[start + 2:start + 9]]
    weights = [abs(float(r[0])) for r in rows]
    assert weights == sorted(weights, reverse=True)
    best_attribute, best_label = max(state, key=lambda k: abs(state[k]))
    assert rows[0][1:] == [best_label, best_attribute]
    assert float(rows[0][0]) == pytest.approx(state[best_attribute, best_label], abs=1e-4)
    # transition table: a header of labels, then one row per previous label
    t = lines.index("transitions (row: previous label, column: next label):")
    assert lines[t + 1].split() == model.classes_
    for i, label in enumerate(model.classes_):
        row = lines[t + 2 + i].split()
        assert row[0] == label
        np.testing.assert_allclose([float(v) for v in row[1:]], model.transitions_[i], atol=1e-4)
    assert any(line.split()[:1] == ["start"] for line in lines)
    assert any(line.split()[:1] == ["end"] for line in lines)


def test_dump_json_has_every_weight(capsys, data):
    code, out, err = run(capsys, "dump", data["model"], "--json")
    assert code == 0, err
    document = json.loads(out)
    model = CRF.load(data["model"])
    assert document["labels"] == list(model.classes_)
    assert document["attributes"] == model.attributes_
    stored = {(a, label): w for a, label, w in document["state_features"]}
    assert len(document["state_features"]) == model.layout_.n_pairs
    assert {k: v for k, v in stored.items() if v != 0.0} == model.state_features_
    assert np.array_equal(document["transitions"], model.transitions_)
    assert document["start"] == model.start_weights_.tolist()
    assert document["end"] == model.end_weights_.tolist()
    assert document["templates"]["lines"] == list(model.extractor_.templates.lines)
    assert document["training"]["iterations"] == model.training_["iterations"]
    assert document["parameters"]["c2"] == model.c2
