"""python-crfsuite's attribute naming (``key:value``) and token forms; models and
inputs written for the older ``key=value`` naming keep working."""

import pickle
from collections import OrderedDict

import numpy as np
import pytest
from sscrf import CRF, serialization
from sscrf import constraints as C
from sscrf.errors import SscrfError
from sscrf.features import FeatureExtractor
from sscrf.features.dicts import spellings

# Every kind of value python-crfsuite's ItemSequence takes, and the names its
# documentation gives them (nested keys joined with ":", a string value or a
# list / set item joined to its key with ":", True and numbers by their key).
TOKEN = {"w": "a", "n": {"x": "b", "y": 1.5, "z": {"q": "r"}}, "l": ["p", "q"],
         "s": {"v", "u"}, "b": True, "f": False, "num": 2.0}
NAMES = {"w:a": 1.0, "n:x:b": 1.0, "n:y": 1.5, "n:z:q:r": 1.0, "l:p": 1.0, "l:q": 1.0,
         "s:u": 1.0, "s:v": 1.0, "b": 1.0, "num": 2.0}

WORDS = {"D": ["the", "a"], "N": ["cat", "dog", "ant"], "V": ["sat", "ran"]}


def corpus(seed, n=30):
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n):
        labels = ["D", "N", "V"] if rng.random() < 0.7 else ["D", "N", "V", "D", "N"]
        words = [str(rng.choice(WORDS[l])) for l in labels]
        X.append([{"w": w, "suffix": w[-1:], "bias": 1.0} for w in words])
        y.append(labels)
    return X, y


def test_string_values_are_named_key_colon_value():
    fx = FeatureExtractor()
    (f,) = fx.fit_transform([[TOKEN]])
    got = {fx.attributes_[i]: v for i, v in zip(f.indices.tolist(), f.values.tolist())}
    assert got == NAMES


def test_the_old_naming_on_request():
    fx = FeatureExtractor(value_separator="=")
    fx.fit([[TOKEN]])
    assert sorted(fx.attributes_) == sorted(["w=a", "n:x=b", "n:y", "n:z:q=r", "l=p", "l=q",
                                             "s=u", "s=v", "b", "num"])
    for bad in ("", 1, None, "a\0"):
        with pytest.raises(SscrfError, match="value_separator"):
            FeatureExtractor(value_separator=bad)


def test_a_token_may_be_a_list_of_attribute_strings():
    as_lists = [[["w=a", "pos:N", "w=a"], ("bias",), []]]
    as_dicts = [[{"w=a": 2.0, "pos:N": True}, {"bias": 1.0}, {}]]
    fx = FeatureExtractor()
    (f,) = fx.fit_transform(as_lists)
    assert fx.attributes_ == ["w=a", "pos:N", "bias"]
    (g,) = FeatureExtractor().fit_transform(as_dicts)
    for name in ("indptr", "indices", "values"):
        np.testing.assert_array_equal(getattr(f, name), getattr(g, name))
    # the same model either way
    X, y = corpus(0)
    lists = [[[f"w={t['w']}", f"suffix={t['suffix']}", "bias"] for t in s] for s in X]
    dicts = [[{f"w={t['w']}": 1.0, f"suffix={t['suffix']}": True, "bias": 1} for t in s]
             for s in X]
    a = CRF(max_iterations=10, n_threads=1).fit(lists, y)
    b = CRF(max_iterations=10, n_threads=1).fit(dicts, y)
    assert a.attributes_ == b.attributes_
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert a.predict(lists[:3]) == b.predict(dicts[:3]) == y[:3]


def test_state_features_keys_match_python_crfsuite(tmp_path):
    pycrfsuite = pytest.importorskip("pycrfsuite")
    X, y = corpus(1, n=12)
    X = [[dict(t, ctx={"len": len(t["w"]), "w": t["w"]}, tags=[t["suffix"], "t"])
          for t in s] for s in X]
    X[0][0] = ["w=the", "odd:name", "bias"]  # a token as a list of attribute strings
    trainer = pycrfsuite.Trainer(verbose=False)
    for xs, ys in zip(X, y):
        trainer.append(xs, ys)
    trainer.set_params({"c1": 0.0, "c2": 0.1, "max_iterations": 5})
    trainer.train(str(tmp_path / "m.crfsuite"))
    tagger = pycrfsuite.Tagger()
    tagger.open(str(tmp_path / "m.crfsuite"))
    info = tagger.info()
    ours = CRF(c1=0.0, c2=0.1, max_iterations=5, n_threads=1).fit(X, y)
    assert set(ours.attributes_) == set(info.attributes)
    assert set(ours.state_features_) == set(info.state_features)


def test_pickles_and_states_keep_the_naming():
    for separator in (":", "="):
        fx = FeatureExtractor(value_separator=separator).fit([[TOKEN]])
        for again in (pickle.loads(pickle.dumps(fx)), FeatureExtractor.from_state(fx.to_state())):
            assert again.value_separator == separator
            assert again.attribute_strings([TOKEN]) == fx.attribute_strings([TOKEN])
    # written before the field: "="
    state = FeatureExtractor().fit([[TOKEN]]).to_state()
    del state["value_separator"]
    assert FeatureExtractor.from_state(state).value_separator == "="
    fx = FeatureExtractor().fit([[TOKEN]])
    del fx.value_separator
    assert pickle.loads(pickle.dumps(fx)).value_separator == "="


def old_model_file(model, path, tmp_path):
    """``model`` saved as a file written before the naming field: attributes
    spelled ``key=value`` and no ``value_separator``."""
    model.save(tmp_path / "new.sscrf")
    meta, arrays = serialization.load(tmp_path / "new.sscrf")
    assert meta["features"]["value_separator"] == ":"
    del meta["features"]["value_separator"]
    meta["features"]["attributes"] = [a.replace(":", "=", 1)
                                      for a in meta["features"]["attributes"]]
    serialization.save(path, meta, arrays)
    return CRF.load(path)


def test_a_model_file_without_the_naming_field_loads_as_equals(tmp_path):
    X, y = corpus(2)
    model = CRF(max_iterations=15, n_threads=1).fit(X, y)
    old = old_model_file(model, tmp_path / "old.sscrf", tmp_path)
    assert old.extractor_.value_separator == "="
    assert "w=cat" in old.attributes_ and "w:cat" not in old.attributes_
    Xt, _ = corpus(3)
    assert old.predict(Xt) == model.predict(Xt)
    np.testing.assert_array_equal(np.concatenate(old.predict_marginals_array(Xt)),
                                  np.concatenate(model.predict_marginals_array(Xt)))
    # and it keeps its naming when saved again
    old.save(tmp_path / "again.sscrf")
    assert CRF.load(tmp_path / "again.sscrf").extractor_.value_separator == "="


def test_init_from_a_model_in_the_old_naming(tmp_path):
    X, y = corpus(4)
    first = CRF(max_iterations=15, n_threads=1).fit(X, y)
    old = old_model_file(first, tmp_path / "old.sscrf", tmp_path)
    X2, y2 = corpus(5)
    from_new = CRF(max_iterations=1, n_threads=1).fit(X2, y2, init=first)
    from_old = CRF(max_iterations=1, n_threads=1).fit(X2, y2, init=old)
    cold = CRF(max_iterations=1, n_threads=1).fit(X2, y2)
    np.testing.assert_array_equal(from_old.coef_, from_new.coef_)
    assert not np.array_equal(from_old.coef_, cold.coef_)


def test_ge_constraints_in_the_old_spelling_match():
    X, y = corpus(6, n=6)
    XU, _ = corpus(7, n=40)
    kw = dict(ge_weight=2.0, max_iterations=10, n_threads=1)
    old = {"w=cat": {"N": 0.9, "D": 0.05, "V": 0.05}, "suffix=e": {"D": 0.5, "V": 0.5}}
    new = {"w:cat": old["w=cat"], "suffix:e": old["suffix=e"]}
    a = CRF(**kw).fit(X, y, X_unlabeled=XU, constraints=old)
    b = CRF(**kw).fit(X, y, X_unlabeled=XU, constraints=new)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert set(a.constraints_) == set(old)


def test_prototypes_and_occurrences_in_the_old_spelling():
    X, y = corpus(8)
    new = C.propose_features(X, y, 2, prefix="w:")
    assert new == C.propose_features(X, y, 2, prefix="w=")
    assert all(a.startswith("w:") for found in new.values() for a, _, _ in found)
    where = C.attribute_occurrences(X, ["w=cat", "w:cat", "w=zebra"])
    np.testing.assert_array_equal(where["w=cat"], where["w:cat"])
    assert len(where["w:cat"]) > 0 and len(where["w=zebra"]) == 0
    assert C.estimate_constraints(X, y, ["w=cat"], 5, seed=1) == \
        {"w=cat": C.estimate_constraints(X, y, ["w:cat"], 5, seed=1)["w:cat"]}


def test_an_attribute_named_with_equals_is_found_first():
    fx = FeatureExtractor().fit([[{"k": "v", "k=v": 1.0, "x": "a=b", "p=q": "r"}]])
    index = fx.attribute_index()
    assert index["k=v"] == fx.attributes_.index("k=v")  # the attribute itself
    assert index["x=a=b"] == fx.attributes_.index("x:a=b")  # the key ends at the first "="
    assert index["p=q=r"] == fx.attributes_.index("p=q:r")  # or at a later one
    assert "x=zz" not in index and index.get("x=zz", -1) == -1 and 3 not in index
    with pytest.raises(KeyError):
        index["nothing"]
    assert spellings("a=b=c") == ["a=b=c", "a:b=c", "a=b:c"]
    assert spellings("a=b", "=") == ["a=b"]
    # templates name attributes themselves: no other spelling
    templated = FeatureExtractor(["U00:%x[0,0]"]).fit([[["a=b"]]])
    assert "U00=a=b" not in templated.attribute_index()



MIN_FREQ_X = [[{"x": 1.0, "a": 1.0}, {"x": 1.0, "b": 1.0}], [{"a": 1.0}, {"b": 1.0}]]
MIN_FREQ_Y = [["A", "B"], ["A", "B"]]


def test_min_freq_counts_tokens_of_any_label():
    # "x" fires at two tokens, once with each label: kept at min_freq=2
    crf = CRF(min_freq=2, max_iterations=3, n_threads=1).fit(MIN_FREQ_X, MIN_FREQ_Y)
    assert sorted(crf.attributes_) == ["a", "b", "x"]
    assert CRF(min_freq=3, max_iterations=3, n_threads=1).fit(
        MIN_FREQ_X + [[{"x": 1.0}]], MIN_FREQ_Y + [["A"]]).attributes_ == ["x"]


def test_crfsuite_min_freq_counts_each_label_apart(tmp_path):
    pycrfsuite = pytest.importorskip("pycrfsuite")
    trainer = pycrfsuite.Trainer(verbose=False)
    for xs, ys in zip(MIN_FREQ_X, MIN_FREQ_Y):
        trainer.append(xs, ys)
    trainer.set_params({"feature.minfreq": 2, "max_iterations": 3})
    trainer.train(str(tmp_path / "m.crfsuite"))
    tagger = pycrfsuite.Tagger()
    tagger.open(str(tmp_path / "m.crfsuite"))
    # ("x", A) and ("x", B) are seen once each: dropped; a count of 2 is kept (≥, not >)
    assert sorted(tagger.info().state_features) == [("a", "A"), ("b", "B")]


@pytest.mark.parametrize("separator", [":", "=", "::", "\u2192"])
def test_the_compiled_and_the_python_paths_name_alike(separator):
    tokens = [{"w": "the", "x": 0.5, "b": True}, {"w": "caf\u00e9", "w" + separator + "a": 2}]
    fast = FeatureExtractor(value_separator=separator)
    (f,) = fast.fit_transform([tokens])
    slow = FeatureExtractor(value_separator=separator)
    (g,) = slow.fit_transform([[OrderedDict(t) for t in tokens]])  # not a dict: Python path
    assert fast.attributes_ == slow.attributes_ == [
        f"w{separator}the", "x", "b", f"w{separator}caf\u00e9", f"w{separator}a"]
    for name in ("indptr", "indices", "values"):
        np.testing.assert_array_equal(getattr(f, name), getattr(g, name))
