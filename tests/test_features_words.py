"""sscrf.features.words: the named-entity token features, as dicts
and as derived columns with the templates that read them."""

from sscrf import CRF
from sscrf.demo import generate_hmm_corpus
from sscrf.features import word_features
from sscrf.features.words import (
    add_word_columns,
    preset_columns,
    word_columns,
    word_templates,
)


def test_word_features_of_a_sentence():
    f = word_features(["John", "lives", "in", "NY-2"])
    assert f[0]["w"] == "john" and f[0]["shape"] == "Xxxx" and f[0]["short_shape"] == "Xx"
    assert f[0]["p2"] == "jo" and f[0]["s3"] == "ohn" and f[0]["caps"] == "initial"
    assert f[0]["w[-1]"] == "<s>" and f[0]["w[+1]"] == "lives"
    assert f[3]["shape"] == "XX-d" and f[3]["digits"] == "some" and f[3]["caps"] == "all"
    assert f[2]["p3"] == "_" and f[3]["w[+1]"] == "</s>"
    assert word_features([["a", "DT"]], window=2)[0]["w[-2]"] == "<s>"
    assert word_columns("42") == ["42", "dd", "d", "4", "42", "_", "_", "2", "42", "_", "_",
                                  "all", "none"]
    # the dicts train in the Python API
    X, y = generate_hmm_corpus(30, seed=4)
    model = CRF(max_iterations=5, verbose=False).fit(
        [word_features(s) for s in X], y)
    assert any(a.startswith("short_shape") for a in model.attributes_)


def test_word_templates_read_the_derived_columns():
    templates = word_templates(2)
    assert preset_columns(templates) == 2 and preset_columns(None) is None
    sentence = add_word_columns([["John", "NNP"], ["ran", "VBD"]])
    assert len(sentence[0]) == 2 + 13 and templates.max_column == 14
