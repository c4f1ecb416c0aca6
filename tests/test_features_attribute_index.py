"""Compiled feature-dict extraction (_core.AttributeIndex) against the former Python path.

The reference below is the numpy implementation that feature dicts went
through before the compiled one (strings interned through a dict, CSR from
(token, id, value) triples, repeated ids summed by ``np.add.reduceat``). The
compiled path must give the same vocabulary and the same CSR bits.
"""

import copy
import math
import pickle
from collections import OrderedDict
from itertools import repeat

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sscrf import _core
from sscrf.errors import SscrfError
from sscrf.features import FeatureExtractor, Features
from sscrf.features.csr import is_ones as _is_ones
from sscrf.features.dicts import dict_pairs
from sscrf.features.sentences import flatten_corpus as _flatten_corpus


# -- the former Python path ---------------------------------------------------


def reference_intern(index, strings, grow):
    if not grow:
        return np.fromiter(map(index.get, strings, repeat(-1)), np.int64, count=len(strings))
    fresh = dict.fromkeys(strings)
    if index:
        fresh = [s for s in fresh if s not in index]
    index.update(zip(fresh, range(len(index), len(index) + len(fresh))))
    return np.fromiter(map(index.__getitem__, strings), np.int64, count=len(strings))


def reference_csr(rows, ids, values, offsets, n_ids):
    n = int(offsets[-1])
    known = ids >= 0
    rows, ids, values = rows[known], ids[known], values[known]
    keys = rows * max(n_ids, 1) + ids
    order = np.argsort(keys, kind="stable")
    keys, values = keys[order], values[order]
    new = np.ones(len(keys), dtype=bool)
    np.not_equal(keys[1:], keys[:-1], out=new[1:])
    starts = np.flatnonzero(new)
    with np.errstate(over="ignore"):
        merged = np.add.reduceat(values, starts) if len(starts) else np.zeros(0)
    unique = keys[starts]
    token = unique // max(n_ids, 1)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(token, minlength=n), out=indptr[1:])
    indices = (unique - token * max(n_ids, 1)).astype(np.int32)
    return Features(indptr, indices, merged, offsets, n_ids)


def reference_features(X, index, grow):
    """CSR of a dict corpus under ``index`` (a dict, grown in place with ``grow``)."""
    tokens, lengths = _flatten_corpus(X, "")
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    names, values, counts = dict_pairs(tokens, lengths, "")
    ids = reference_intern(index, names, grow)
    rows = np.repeat(np.arange(len(tokens)), counts)
    return reference_csr(rows, ids, np.array(values, dtype=np.float64), offsets, len(index))


def reference_fit_transform(corpora, min_freq=1):
    index = {}
    provisional = [reference_features(X, index, True) for X in corpora]
    counts = np.zeros(len(index), dtype=np.int64)
    for f in provisional:
        counts += np.bincount(f.indices, minlength=len(index))
    # kept attributes, most frequent first, ties in order of first occurrence
    ranked = sorted((-int(c), i, a) for i, (a, c) in enumerate(zip(index, counts)) if c >= min_freq)
    attributes = [a for _, _, a in ranked]
    final = dict(zip(attributes, range(len(attributes))))
    return attributes, [reference_features(X, dict(final), False) for X in corpora]


def assert_same_bits(got, want):
    assert got.n_attributes == want.n_attributes
    for name in ("indptr", "indices", "values", "offsets"):
        a, b = np.asarray(getattr(got, name)), np.asarray(getattr(want, name))
        assert a.dtype == b.dtype and a.shape == b.shape, name
        # bit patterns, so that -0.0 and 0.0 differ
        assert np.array_equal(np.ascontiguousarray(a).view(np.uint8),
                              np.ascontiguousarray(b).view(np.uint8)), name


# -- corpora ------------------------------------------------------------------

# "a1": a scalar key that is also position 1 of an array under key "a"
names = st.sampled_from(["a", "b", "a=x", "c", "é", "a:k", "€=", "\U0001f600", "\ud800", "a1"])
strings = st.sampled_from(["x", "y", "x=", "", "é", "€", "\U0001f600", "\udfff", "x|y"])
floats = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.1, 1e308, 5e-324]),
)
leaf = st.one_of(strings, floats, st.integers(-2**70, 2**70), st.booleans())
# vectors: float64 arrays are read in C++, other dtypes go the Python way
vector = st.one_of(
    st.lists(floats, max_size=4).map(lambda v: np.array(v, dtype=np.float64)),
    st.lists(st.floats(-1e6, 1e6, width=32), max_size=3).map(
        lambda v: np.array(v, dtype=np.float32)),
    st.lists(st.integers(-5, 5), max_size=3).map(lambda v: np.array(v, dtype=np.int64)),
)
dict_value = st.one_of(
    leaf,
    vector,
    st.lists(strings, max_size=3),
    st.dictionaries(st.sampled_from(["k", "m", "x"]), leaf, max_size=3),
)
dict_token = st.dictionaries(names, dict_value, max_size=5)
corpus = st.lists(st.lists(dict_token, max_size=4), max_size=4)


def values_too_large(corpora):
    """Whether a value, or the sum of a repeated attribute's values, is above the
    core's 1e250 or overflows in the reference (fit must raise)."""
    index = {}
    return any(not (np.abs(reference_features(X, index, True).values) <= 1e250).all()
               for X in corpora)


@settings(max_examples=150, deadline=None)
@given(corpora=st.lists(corpus, min_size=1, max_size=3), min_freq=st.integers(1, 2))
def test_fit_transform_and_transform_match_the_python_path(corpora, min_freq):
    if values_too_large(corpora):
        with pytest.raises(SscrfError):
            FeatureExtractor(min_freq=min_freq).fit_transform(*corpora)
        return
    attributes, want = reference_fit_transform(corpora, min_freq)
    fx = FeatureExtractor(min_freq=min_freq)
    got = fx.fit_transform(*corpora)
    assert fx.attributes_ == attributes
    for g, w in zip(got, want):
        assert_same_bits(g, w)
    for X, w in zip(corpora, want):
        assert_same_bits(fx.transform(X), w)


def nested_paths(parts, value):
    """A dict in which every way of grouping ``parts`` into nested keys gives
    the attribute ':'.join(parts): 2^(len(parts)-1) duplicates, values
    value(0), value(1), ... in dict order."""
    counter = iter(range(1 << len(parts)))

    def build(rest):
        out = {}
        for i in range(1, len(rest) + 1):
            key = ":".join(rest[:i])
            out[key] = value(next(counter)) if i == len(rest) else build(rest[i:])
        return out

    return build(parts)


def assert_fits_like_the_reference(corpus):
    attributes, (want,) = reference_fit_transform([corpus])
    fx = FeatureExtractor()
    (got,) = fx.fit_transform(corpus)
    assert fx.attributes_ == attributes
    assert_same_bits(got, want)


@pytest.mark.parametrize("n_parts", [1, 2, 3, 4, 5, 8, 9, 10])
def test_many_repeats_of_one_attribute_sum_like_numpy(n_parts):
    # 2^(n-1) repeats: below 8, up to 128 and beyond take numpy's three
    # summation branches; the values are chosen so that the order matters.
    rng = np.random.default_rng(n_parts)
    scales = 10.0 ** rng.integers(-12, 12, size=1 << n_parts)
    token = nested_paths([f"p{k}" for k in range(n_parts)],
                         lambda k: float(rng.uniform(-1, 1) * scales[k]))
    token.update({"w": "dog", "z": -0.0, "bias": True})
    corpus = [[token, {"w": "cat", "z": 0.0}]]
    assert_fits_like_the_reference(corpus)


def test_many_entries_in_one_token_sort_stably():
    # more than 64 entries take the library sort instead of insertion sort
    items = [f"v{k % 37}" for k in range(500)]
    token = {"list": items, "n": 2.5, "list=v3": 0.25, "t": ("v1", "v2", "v1")}
    corpus = [[token, {"list": items[::-1]}]]
    assert_fits_like_the_reference(corpus)


def test_array_values_are_one_attribute_per_position():
    vec = np.array([0.5, -0.0, 2.0])
    tokens = [{"w": "a", "emb": vec, "emb1": 0.25}, {"emb": vec[::-1].copy(), "b": True}]
    expanded = [{"w": "a", "emb0": 0.5, "emb1": -0.0, "emb2": 2.0, "emb1#": 0.0},
                {"emb0": 2.0, "emb1": -0.0, "emb2": 0.5, "b": True}]
    del expanded[0]["emb1#"]
    expanded[0]["emb1"] = -0.0 + 0.25  # "emb1" is both a position and a key: summed
    fx = FeatureExtractor()
    (a,) = fx.fit_transform([tokens])
    assert csr_dicts(a, fx.attributes_) == [
        {"w:a": 1.0, "emb0": 0.5, "emb1": 0.25, "emb2": 2.0},
        {"emb0": 2.0, "emb1": -0.0, "emb2": 0.5, "b": 1.0}]
    assert_fits_like_the_reference([tokens])
    # float32, int and non-contiguous arrays take the Python path: the same result
    other = [{"w": "a", "emb": vec.astype(np.float32), "emb1": 0.25},
             {"emb": np.array([2.0, -0.0, 0.5, 9.0])[:3], "b": True}]
    assert_same_bits(fx.transform([other]), a)
    assert_same_bits(fx.transform([[{"emb": np.arange(6.0)[::2]}]]),
                     fx.transform([[{"emb0": 0.0, "emb1": 2.0, "emb2": 4.0}]]))
    # tagging: an id both a position's and a scalar key's, before or after the
    # array, and arrays shorter, longer and twice in one token
    tagged = [{"emb1": 0.25, "emb": vec}, {"emb": vec, "emb1": 0.25, "w": "a"},
              {"emb": vec[:2].copy()}, {"emb": np.arange(5.0), "b": True},
              {"e": vec, "emb": vec}]
    _, (want,) = reference_fit_transform([[tokens, tagged]])
    fx = FeatureExtractor().fit([tokens, tagged])
    assert_same_bits(fx.transform([tokens, tagged]), want)


@pytest.mark.parametrize("bad, error, message", [
    (np.array([1.0, np.nan]), SscrfError, "array value 1 is nan, not finite"),
    (np.array([np.inf]), SscrfError, "not finite"),
    (np.zeros((2, 2)), TypeError, "one-dimensional, of real numbers"),
    (np.array(["x"]), TypeError, "one-dimensional, of real numbers"),
])
def test_bad_array_values_name_sentence_and_token(bad, error, message):
    X = [[{"w": "a"}], [{"w": "b"}, {"emb": bad}]]
    with pytest.raises(error, match="sentence 1, token 1.*" + message):
        FeatureExtractor().fit(X)


def test_key_objects_repeated_over_many_tokens_and_many_keys():
    # the ids of (key object, position) are cached within a call: keys shared
    # by every token, arrays, and more distinct keys than the cache holds
    rng = np.random.default_rng(5)
    shared = ["bias", "len", "emb"]
    corpus = []
    for s in range(60):
        sentence = []
        for t in range(int(rng.integers(1, 200))):
            token = {shared[0]: True, shared[1]: float(t), shared[2]: rng.normal(size=7)}
            token[f"u{int(rng.integers(0, 20000))}"] = 1.5  # new str objects, mostly distinct
            token["w"] = f"w{int(rng.integers(0, 50))}"
            sentence.append(token)
        corpus.append(sentence)
    # positions of one key that share cache slots (more of them than slots)
    corpus[3][0]["big"] = rng.normal(size=20000)
    corpus[7][-1]["big"] = rng.normal(size=20000)
    assert_fits_like_the_reference(corpus)
    fx = FeatureExtractor(min_freq=2)
    fx.fit(corpus[:30])
    _, (want,) = reference_fit_transform([corpus[:30]], min_freq=2)
    assert_same_bits(fx.transform(corpus[:30]), want)


def test_rows_far_longer_or_shorter_than_the_first_tokens_foretell():
    # the output's room is projected from the first 256 tokens: here they
    # have one entry of value 1 each, the values appear later, then long
    # arrays run in between scalar ids, then the rows shrink again
    rng = np.random.default_rng(9)
    short = [{"w": f"w{k % 7}"} for k in range(600)]
    weighted = [{"w": f"w{k % 7}", "x": 0.25} for k in range(300)]
    # "z" takes an id between the positions below 100 and those above
    narrow = [{"w": f"w{k % 7}", "v": rng.normal(size=100)} for k in range(300)]
    wide = [{"w": f"w{k % 7}", "z": 1.5, "v": rng.normal(size=300)} for k in range(300)]
    clash = [{"w": f"w{k % 7}", "v": rng.normal(size=300), "v150": 2.0} for k in range(300)]
    assert_fits_like_the_reference([short, weighted, narrow, wide, clash, short])


def test_mapping_tokens_take_the_python_path_with_the_same_result():
    tokens = [{"w": "the", "x": 0.5, "b": True, "f": False, "n": 3},
              {"w": "é\U0001f600", "w:é\U0001f600": 2.0}]
    fast = [tokens]
    slow = [[OrderedDict(t) for t in tokens]]
    fx = FeatureExtractor()
    (a,) = fx.fit_transform(fast)
    fy = FeatureExtractor()
    (b,) = fy.fit_transform(slow)
    assert fx.attributes_ == fy.attributes_ == ["w:the", "x", "b", "n", "w:é\U0001f600"]
    assert_same_bits(a, b)
    assert_same_bits(fx.transform(slow), a)
    assert_same_bits(fy.transform(fast), a)
    assert csr_dicts(a, fx.attributes_) == [
        {"w:the": 1.0, "x": 0.5, "b": 1.0, "n": 3.0}, {"w:é\U0001f600": 3.0}]


def csr_dicts(f, attributes):
    return [{attributes[i]: float(v) for i, v in
             zip(f.indices[f.indptr[t]:f.indptr[t + 1]], f.values[f.indptr[t]:f.indptr[t + 1]])}
            for t in range(f.n_tokens)]


def test_str_subclass_values_and_numpy_scalars_match_exact_types():
    class Word(str):
        pass

    odd = [[{Word("w"): Word("dog"), "x": np.float64(0.5), "n": np.int32(2), "b": np.bool_(True)}]]
    plain = [[{"w": "dog", "x": 0.5, "n": 2, "b": True}]]
    fx = FeatureExtractor()
    (a,) = fx.fit_transform(odd)
    (b,) = FeatureExtractor().fit_transform(plain)
    assert fx.attributes_ == ["w:dog", "x", "n", "b"]
    assert_same_bits(a, b)


def test_unicode_keys_are_exact():
    # strings of all three storage widths, lone surrogates, and strings equal
    # after normalisation but not as code points stay distinct attributes
    words = ["e\u0301", "\u00e9", "\ud800", "\udc00", "\ud800\udc00", "\U00010000", "a\x00b", "ÿ"]
    corpus = [[{"w": w} for w in words], [{"w": w, "n:" + w: 1.5} for w in words]]
    fx = FeatureExtractor()
    (f,) = fx.fit_transform(corpus)
    assert fx.attributes_ == [f"w:{w}" for w in words] + [f"n:{w}" for w in words]
    attributes, (want,) = reference_fit_transform([corpus])
    assert_same_bits(f, want)


def test_values_all_one_take_no_memory_and_compile_like_ones():
    corpus = [[{"w": "a", "b": True}, {"w": "b", "x": 1.0, "y": 1}]]
    (f,) = FeatureExtractor().fit_transform(corpus)
    assert f.values.strides == (0,) and not f.values.flags.writeable
    assert f.values.dtype == np.float64 and f.values.tolist() == [1.0] * f.nnz
    (g,) = FeatureExtractor().fit_transform([[{"w": "a", "b": True}, {"w": "b", "x": 2.0}]])
    assert g.values.strides == (8,) and g.values.tolist() == [1.0, 1.0, 1.0, 2.0]
    # a constant array compiles like the materialised one
    labels = np.array([0, 1], dtype=np.int32)
    layout = _core.Layout(np.arange(f.n_attributes + 1, dtype=np.int64) * 2,
                          np.tile(np.arange(2, dtype=np.int64), f.n_attributes), 2)
    theta = np.linspace(-1, 1, layout.n_parameters)
    results = []
    for values in (f.values, np.ones(f.nnz), np.broadcast_to(np.float64(1.0), (f.nnz,))):
        c = _core.Corpus(f.indptr, f.indices, values, f.offsets, f.n_attributes, labels)
        results.append(_core.likelihood(c, layout, theta, 1))
    for value, grad in results[1:]:
        assert value == results[0][0]
        assert np.array_equal(grad, results[0][1])


@pytest.mark.parametrize("values, message", [
    (np.broadcast_to(np.float64(np.nan), (3,)), r"feature values.*NaN"),
    (np.broadcast_to(np.float64(2.0), (2,)), r"values and indices"),
])
def test_constant_values_are_validated(values, message):
    with pytest.raises(ValueError, match=message):
        _core.Corpus(np.array([0, 1, 3], dtype=np.int64), np.array([0, 1, 2], dtype=np.int32),
                     values, np.array([0, 2], dtype=np.int64), 3)


def test_corpus_ids_in_int32_and_int64_give_the_same_corpus():
    f = FeatureExtractor().fit_transform([[{"w": "a", "x": 0.5}, {"w": "b"}]])[0]
    layout = _core.Layout(np.arange(f.n_attributes + 1, dtype=np.int64),
                          np.zeros(f.n_attributes, dtype=np.int64), 1)
    theta = np.arange(layout.n_parameters, dtype=np.float64)
    out = [_core.viterbi_corpus(_core.Corpus(f.indptr, f.indices.astype(t), f.values, f.offsets,
                                             f.n_attributes), layout, theta, 1)[1]
           for t in (np.int32, np.int64, np.int16)]
    assert out[0].tolist() == out[1].tolist() == out[2].tolist()
    with pytest.raises(ValueError, match=r"attribute id 3 out of range"):
        _core.Corpus(f.indptr, np.array([0, 3, 1], dtype=np.int32), f.values, f.offsets, 3)


def test_attribute_index_object():
    index = _core.AttributeIndex(["a", "b=c", "\ud800", ""])
    assert len(index) == 4 and index.nbytes > 0
    assert len(_core.AttributeIndex()) == 0
    with pytest.raises(ValueError, match=r"attribute 2 repeats"):
        _core.AttributeIndex(["a", "b", "a"])
    with pytest.raises(ValueError, match=r"attribute 1 is not a str"):
        _core.AttributeIndex(["a", b"b"])
    tokens = [{"b": "c", "a": True, "\ud800": 2.0, "zz": "new"}, {}]
    new = []
    indptr, indices, values = index.dict_tokens_to_csr(tokens, False, None, new)
    assert indptr.tolist() == [0, 3, 3] and indices.tolist() == [0, 1, 2]
    assert values.tolist() == [1.0, 1.0, 2.0] and new == [] and len(index) == 4
    indptr, indices, values = index.dict_tokens_to_csr(tokens, True, None, new)
    assert indices.tolist() == [0, 1, 2, 4] and new == ["zz=new"] and len(index) == 5


def test_the_strings_of_ids_in_any_order_and_after_renumbering():
    words = ["a", "b=c", "\ud800", "", "é\U0001f600"]
    index = _core.AttributeIndex(words)
    order = np.array([4, 0, 3, 3, 1, 2])
    assert index.strings(order) == [words[i] for i in order.tolist()]
    assert index.strings(np.zeros(0, dtype=np.int64)) == []
    index.renumber(np.array([2, 0, 1, 4, 3]))  # word i is now id new_id[i]
    assert index.strings(np.arange(5)) == ["b=c", "\ud800", "a", "é\U0001f600", ""]
    for bad in (np.array([5]), np.array([-1])):
        with pytest.raises(ValueError, match="is not an id of the index"):
            index.strings(bad)


def test_templates_without_strings_give_the_same_rows_and_index():
    # None: the new attributes' strings are not made; the index holds them
    columns, offsets, _ = _core.encode_columns([[["a", "X"], ["b", "Y"]], [["a", "Z"]]], [0, 1])
    pieces = [["U0:", (0, 0)], ["U1:", (-1, 1)], ["U2:", (0, 0), "/", (0, 1)]]
    made, none = _core.AttributeIndex(), _core.AttributeIndex()
    strings = []
    got = made.templates_to_csr(pieces, columns, offsets, True, 1, strings)
    want = none.templates_to_csr(pieces, columns, offsets, True, 1, None)
    for a, b in zip(got, want):
        assert (a is None and b is None) or np.array_equal(a, b)
    assert none.strings(np.arange(len(none))) == strings == made.strings(np.arange(len(made)))
    assert strings[:3] == ["U0:a", "U1:_B-1", "U2:a/X"]


def test_the_index_grows_past_many_rehashes():
    words = [f"w{k}" for k in range(50000)]
    corpus = [[{"w": w, "s": w[-2:]} for w in words]]
    fx = FeatureExtractor()
    (f,) = fx.fit_transform(corpus)
    attributes, (want,) = reference_fit_transform([corpus])
    assert fx.attributes_ == attributes
    assert_same_bits(f, want)
    again = FeatureExtractor.from_state(fx.to_state())
    assert_same_bits(again.transform([[{"w": w} for w in words[::-7]]]),
                     reference_features([[{"w": w} for w in words[::-7]]],
                                        dict(zip(attributes, range(len(attributes)))), False))


def test_fitted_extractor_pickles_and_copies():
    corpus = [[{"w": "a", "x": 0.5}, {"w": "b"}], [{"w": "c", "y": True}]]
    fx = FeatureExtractor().fit(corpus)
    want = fx.transform(corpus)
    for other in (pickle.loads(pickle.dumps(fx)), copy.copy(fx), copy.deepcopy(fx)):
        assert other.attributes_ == fx.attributes_
        assert_same_bits(other.transform(corpus), want)
    assert fx.attribute_index() == {"w:a": 0, "x": 1, "w:b": 2, "w:c": 3, "y": 4}


def test_errors_name_sentence_and_token_from_the_compiled_path():
    ok = {"w": "a"}
    cases = [
        ([[ok], [ok, {"x": math.nan}]], r"^sentence 1, token 1: feature x has non-finite"),
        ([[ok, {"x": 10**400}]], r"^sentence 0, token 1: feature x: integer value too large"),
        ([[ok], [{1: "x"}]], r"^sentence 1, token 0: feature name 1 is not a string"),
        ([[ok, ["w", 3]]], r"^sentence 0, token 1: a token given as a list holds attribute "
                             r"strings .*, not int \(3\)"),
        ([[ok, "w"]], r"^sentence 0, token 1: a token must be a feature dict or a list of "
                      r"attribute strings"),
        ([[{"x": None}]], r"^sentence 0, token 0: feature x has a value of type NoneType"),
    ]
    fx = FeatureExtractor().fit([[ok]])
    for X, message in cases:
        with pytest.raises(SscrfError, match=message):
            FeatureExtractor().fit(X)
        with pytest.raises(SscrfError, match=message):
            fx.transform(X)
    with pytest.raises(SscrfError, match=r"^corpus 1, sentence 0, token 0: feature x has non"):
        FeatureExtractor().fit([[ok]], [[{"x": -math.inf}]])


# -- templates: the same index, slices of sentences -------------------------------


def test_intern_method():
    index = _core.AttributeIndex(["a"])
    new = []
    assert index.intern(["b", "a", "b", "\udfff", "é"], True, new).tolist() == [1, 0, 1, 2, 3]
    assert new == ["b", "\udfff", "é"]
    assert index.intern(["é", "zz", "a"], False, new).tolist() == [3, -1, 0]
    assert index.intern([], True, new).tolist() == [] and len(index) == 4
    with pytest.raises(TypeError, match=r"item 1 is not a str"):
        index.intern(["a", 1], True, new)


TEMPLATE_CORPUS = [
    [["He", "PRP"], ["reckons", "VBZ"], ["the", "DT"]],
    [],
    [["a", "DT"]],
    [["He", "PRP"], ["He", "PRP"], ["runs", "VBZ"], ["a", "DT"], ["b", "NN"]],
    [["é", "\ud800"]],
]


@pytest.mark.parametrize("slice_tokens", [1, 2, 3, 7])
@pytest.mark.parametrize("min_freq", [1, 2])
def test_template_slices_give_the_whole_corpus_result(slice_tokens, min_freq, monkeypatch):
    from sscrf.features import extractor

    lines = ["U00:%x[-1,0]", "U01:%x[0,0]/%x[1,1]", "U02:%x[0,1]", "U02:%x[0,1]", "U04:bias"]
    other = [[["He", "NN"], ["unseen", "XX"]]]
    whole = FeatureExtractor(lines, min_freq=min_freq)
    want = whole.fit_transform(TEMPLATE_CORPUS, other)
    monkeypatch.setattr(extractor, "TEMPLATE_SLICE_TOKENS", slice_tokens)
    fx = FeatureExtractor(lines, min_freq=min_freq)
    got = fx.fit_transform(TEMPLATE_CORPUS, other)
    assert fx.attributes_ == whole.attributes_ and fx.n_columns_ == whole.n_columns_
    for g, w in zip(got, want):
        assert_same_bits(g, w)
    assert_same_bits(fx.transform(other), whole.transform(other))
    # the repeated U02 line counts its attribute twice: values are not all one
    assert not _is_ones(want[0].values) and 2.0 in want[0].values


def test_template_values_without_repeats_take_no_memory():
    (f,) = FeatureExtractor(["U00:%x[0,0]", "U01:%x[-1,0]"]).fit_transform(TEMPLATE_CORPUS)
    assert _is_ones(f.values) and f.values.strides == (0,) and len(f.values) == f.nnz


def test_python_code_of_a_token_may_change_its_neighbours():
    # A Mapping token runs Python code (its items()) in the middle of the
    # compiled pipeline; if that code replaces the values of the dicts
    # before and after it, the result is what reading the tokens one after
    # the other gives, and nothing reads a freed object.
    from collections.abc import Mapping

    class Meddling(Mapping):
        def __init__(self, before, after):
            self.before, self.after, self.data = before, after, {"m": "x"}

        def __getitem__(self, key):
            return self.data[key]

        def __len__(self):
            return len(self.data)

        def __iter__(self):
            for d in (self.before, self.after):
                for key in list(d):
                    d[key] = "".join(["changed", str(len(d))])  # a fresh object
            return iter(self.data)

    def corpus():
        tokens = [{"w": "".join(["a", str(k)]), "v": float(k)} for k in range(12)]
        tokens[5] = Meddling(tokens[4], tokens[6])
        return [tokens[:7], tokens[7:]]

    index = {}
    first = reference_features(corpus(), index, True)  # one pass, as fit makes
    assert "w:changed2" in index and "w:a4" in index
    # then the ids by frequency, each token's entries sorted by them
    counts = np.bincount(first.indices, minlength=len(index))
    order = sorted(range(len(index)), key=lambda i: (-counts[i], i))
    new_id = np.empty(len(index), dtype=np.int32)
    new_id[order] = np.arange(len(index))
    entries = [sorted(zip(new_id[first.indices[a:b]].tolist(), first.values[a:b].tolist()))
               for a, b in zip(first.indptr[:-1], first.indptr[1:])]
    want = first._replace(indices=np.array([i for e in entries for i, _ in e], dtype=np.int32),
                          values=np.array([v for e in entries for _, v in e]))
    fx = FeatureExtractor()
    (got,) = fx.fit_transform(corpus())
    assert fx.attributes_ == [list(index)[i] for i in order]
    assert_same_bits(got, want)


def test_a_value_freed_by_python_code_is_not_mistaken_for_the_next_at_its_address():
    # Ids are cached by the objects of a (key, value) pair within a call. The
    # Python code of a token that is not a dict frees the value of the token
    # before it and makes the value of the token after it, which then likely
    # takes the freed object's address: it must still be read as what it says.
    class Other:  # not a dict: the Python path reads it
        pass

    # made beforehand, so that the new value is the first str made after the
    # old one is freed (CPython's allocator then gives it the old address)
    digits = [str(k) for k in range(1000)]
    tokens = []
    for k in range(300):
        tokens += [{"w": "".join(["a", digits[k]])}, Other(), {"w": "placeholder"}]

    def slow(i):
        tokens[i - 1]["w"] = 0.5  # the only reference to its str goes
        tokens[i + 1]["w"] = "".join(["b", digits[i]])
        return ["m"], [1.0]

    index, new_strings = _core.AttributeIndex(), []
    indptr, indices, values = index.dict_tokens_to_csr(tokens, True, slow, new_strings)
    read = [new_strings[i] for i in indices]
    want = []
    for k in range(300):
        want += [f"w=a{k}", "m", f"w=b{3 * k + 1}"]
    assert read == want and values is None and indptr.tolist() == list(range(901))


def test_signal_handlers_run_during_a_long_conversion():
    # A SIGALRM handler that raises stops the compiled loops (as Ctrl-C
    # does) well before their end: the token (or string) at the end, which
    # would call `slow` (a C function, list.append: no Python code in which
    # the handler could run instead), is never reached.
    import signal
    import sys

    if sys.platform == "win32" or not hasattr(signal, "setitimer"):
        pytest.skip("needs setitimer")

    class Alarm(Exception):
        pass

    def handler(signum, frame):
        raise Alarm

    tokens = [{"w": f"w{k % 5000}", "p": "NN", "b": True} for k in range(400_000)] * 3
    tokens.append(OrderedDict(w="last"))
    strings = [f"w{k % 5000}" for k in range(1_000_000)] * 3 + ["last"]
    index = _core.AttributeIndex()
    index.dict_tokens_to_csr(tokens[:5000], True, None, [])
    index.intern(strings[:5000], True, [])
    old = signal.signal(signal.SIGALRM, handler)
    try:
        slow_calls, new_strings = [], []
        signal.setitimer(signal.ITIMER_REAL, 0.01)
        with pytest.raises(Alarm):
            index.dict_tokens_to_csr(tokens, False, slow_calls.append, [])
        assert slow_calls == []
        signal.setitimer(signal.ITIMER_REAL, 0.01)
        with pytest.raises(Alarm):
            index.intern(strings, True, new_strings)
        assert new_strings == []
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def test_renumber_csr_maps_drops_and_sorts_each_token():
    rng = np.random.default_rng(3)
    n_old, n_tokens = 400, 30
    # tokens of up to 8 entries, and two past 64 (sorted another way)
    sizes = [int(k) for k in rng.integers(0, 9, size=n_tokens - 2)] + [70, 300]
    rows = [np.sort(rng.choice(n_old, size=k, replace=False)) for k in sizes]
    indptr = np.r_[0, np.cumsum([len(r) for r in rows])].astype(np.int64)
    indices = np.concatenate(rows).astype(np.int32)
    values = rng.standard_normal(len(indices))
    new_id = np.full(n_old, -1, dtype=np.int64)
    kept = rng.choice(n_old, size=250, replace=False)
    new_id[kept] = rng.permutation(250)
    ip, ix, vs = _core.renumber_csr(indptr, indices, values, new_id)
    for t, r in enumerate(rows):
        want = sorted((int(new_id[a]), values[indptr[t] + j]) for j, a in enumerate(r)
                      if new_id[a] >= 0)
        got = list(zip(ix[ip[t]:ip[t + 1]].tolist(), vs[ip[t]:ip[t + 1]].tolist()))
        assert got == want
    ip2, ix2, none = _core.renumber_csr(indptr, indices, None, new_id)
    assert none is None and np.array_equal(ip2, ip) and np.array_equal(ix2, ix)
    assert ix.dtype == np.int32


@pytest.mark.parametrize("change, message", [
    (lambda a: a.update(new_id=np.array([0, 0, 1, 2])), "gives id 0 twice"),
    (lambda a: a.update(new_id=np.array([0, 4, 1, 2])), r"new_id\[1\] = 4 out of range"),
    (lambda a: a.update(new_id=np.array([0, -2, 1, 2])), r"out of range \[-1, 4\)"),
    (lambda a: a.update(indices=np.array([0, 1, 4], dtype=np.int32)), "attribute id 4 out of range"),
    (lambda a: a.update(indices=np.array([0, 1, 2], dtype=np.int64)), "int32"),
    (lambda a: a.update(indptr=np.array([0, 2, 1, 3])), "non-decreasing"),
    (lambda a: a.update(indptr=np.array([0, 2, 2])), "end at len"),
    (lambda a: a.update(values=np.ones(2)), "values must have shape"),
])
def test_renumber_csr_refuses_bad_input(change, message):
    args = dict(indptr=np.array([0, 2, 2, 3]), indices=np.array([0, 1, 2], dtype=np.int32),
                values=np.ones(3), new_id=np.array([3, -1, 0, 1]))
    change(args)
    with pytest.raises(ValueError, match=message):
        _core.renumber_csr(**args)


def test_index_renumber_takes_a_permutation_only():
    index = _core.AttributeIndex(["a", "b", "c"])
    index.renumber(np.array([2, 0, 1]))
    assert index.intern(["a", "b", "c", "d"], False, []).tolist() == [2, 0, 1, -1]
    for bad in ([0, 0, 1], [0, 1, 3], [0, 1], [-1, 0, 1]):
        with pytest.raises(ValueError, match="new_id must be"):
            index.renumber(np.array(bad))
    assert index.intern(["a", "b", "c"], False, []).tolist() == [2, 0, 1]
