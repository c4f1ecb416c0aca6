"""Attribute extraction: templates, feature dicts, vocabulary, CSR layout, bad input."""

import json
import math
import re
from collections import Counter, defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sscrf.errors import SscrfError
from sscrf.features import (
    DEFAULT_TEMPLATES,
    FeatureExtractor,
    Features,
    default_templates,
    parse_templates,
    read_templates,
)

# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


def naive_template_strings(lines, sentence):
    """Obviously correct reference: build each attribute string token by token."""
    macro = re.compile(r"%x\[(-?\d+),(\d+)\]")
    out = []
    n = len(sentence)
    for t in range(n):
        attrs = []
        for line in lines:
            if not line.startswith("U"):
                continue

            def cell(m):
                row, col = int(m.group(1)), int(m.group(2))
                p = t + row
                if p < 0:
                    return f"_B-{-p}"
                if p >= n:
                    return f"_B+{p - n + 1}"
                return sentence[p][col]

            attrs.append(macro.sub(cell, line))
        out.append(attrs)
    return out


def csr_rows(features, attributes):
    """Per-token {attribute string: value} read back from a Features."""
    rows = []
    for t in range(features.n_tokens):
        lo, hi = features.indptr[t], features.indptr[t + 1]
        rows.append(
            {attributes[i]: v for i, v in zip(features.indices[lo:hi], features.values[lo:hi])}
        )
    return rows


def summed(pairs, vocabulary=None):
    """Per-token attribute multiset as {string: summed value}, optionally restricted."""
    out = defaultdict(float)
    for name, value in pairs:
        if vocabulary is None or name in vocabulary:
            out[name] += value
    return dict(out)


def check_csr_layout(f):
    assert isinstance(f, Features)
    assert f.indptr.dtype == np.int64 and f.indptr.shape == (f.n_tokens + 1,)
    assert f.indices.dtype == np.int32 and f.values.dtype == np.float64
    assert f.offsets.dtype == np.int64 and f.offsets.shape == (f.n_sentences + 1,)
    assert f.indices.shape == f.values.shape == (f.indptr[-1],)
    assert f.indptr[0] == 0 and np.all(np.diff(f.indptr) >= 0)
    assert f.offsets[0] == 0 and f.offsets[-1] == f.n_tokens and np.all(np.diff(f.offsets) >= 0)
    assert np.all((f.indices >= 0) & (f.indices < max(f.n_attributes, 1)))
    for t in range(f.n_tokens):
        row = f.indices[f.indptr[t] : f.indptr[t + 1]]
        assert np.all(np.diff(row) > 0), "ids must be unique and ascending within a token"


SENTENCE = [["a", "A"], ["b", "B"], ["c", "C"]]
TEMPLATES = ["U00:%x[-1,0]", "U01:%x[0,0]/%x[1,1]", "U02:%x[2,0]"]


# ---------------------------------------------------------------------------
# Templates
# ---------------------------------------------------------------------------


def test_hand_worked_template_strings_with_crfpp_pads():
    fx = FeatureExtractor(TEMPLATES)
    got = fx.attribute_strings(SENTENCE)
    assert got == [
        [("U00:_B-1", 1.0), ("U01:a/B", 1.0), ("U02:c", 1.0)],
        [("U00:a", 1.0), ("U01:b/C", 1.0), ("U02:_B+1", 1.0)],
        [("U00:b", 1.0), ("U01:c/_B+1", 1.0), ("U02:_B+2", 1.0)],
    ]


def test_far_offsets_pad_with_their_distance():
    fx = FeatureExtractor(["U0:%x[-3,0]|%x[3,0]|%x[-1,0]"])
    assert fx.attribute_strings([["w"]]) == [[("U0:_B-3|_B+3|_B-1", 1.0)]]


def test_constant_template_fires_on_every_token():
    fx = FeatureExtractor(["U99:bias", "U00:%x[0,0]"])
    assert [[a for a, _ in tok] for tok in fx.attribute_strings(SENTENCE)] == [
        ["U99:bias", "U00:a"],
        ["U99:bias", "U00:b"],
        ["U99:bias", "U00:c"],
    ]


def test_template_file_syntax_comments_blank_lines_and_bare_b(tmp_path):
    text = "# unigrams\n\nU00:%x[0,0]\n  U01:%x[-1,0]  \nB\n"
    templates = parse_templates(text)
    assert len(templates) == 2
    assert templates.lines == ("# unigrams", "", "U00:%x[0,0]", "  U01:%x[-1,0]  ", "B")
    assert templates.max_column == 0
    assert parse_templates(list(templates.lines)) == templates
    path = tmp_path / "template"
    path.write_text(text, encoding="utf-8")
    assert read_templates(path) == templates
    path.write_text(text, encoding="utf-8-sig")  # with a byte-order mark, as Notepad writes
    assert read_templates(path) == templates
    # A B line without macros (any name) means the plain transitions.
    assert len(parse_templates(["U00:%x[0,0]", "B01"])) == 1


def test_b_template_with_macro_is_rejected():
    with pytest.raises(SscrfError, match=r"B with %x macros\) are not supported yet"):
        parse_templates("U00:%x[0,0]\nB01:%x[0,0]\n")


@pytest.mark.parametrize(
    "line, message",
    [
        ("X01:%x[0,0]", r"line 2: 'X01:%x\[0,0\]': a template line must start with 'U'"),
        ("U01:%x[0]", r"line 2: unsupported or malformed macro"),
        ("U01:%y[0,0]", r"line 2: unsupported or malformed macro"),
        ("U01:%x[0,-1]", r"line 2: negative column -1"),
    ],
)
def test_bad_template_lines_are_named(line, message):
    with pytest.raises(SscrfError, match=message):
        parse_templates(["U00:%x[0,0]", line])


def test_no_unigram_template_is_rejected(tmp_path):
    path = tmp_path / "only_b.txt"
    path.write_text("# nothing\nB\n", encoding="utf-8")
    with pytest.raises(SscrfError, match="only_b.txt: no unigram"):
        read_templates(path)


def test_column_out_of_range_names_template_column_sentence_and_token():
    fx = FeatureExtractor(["U00:%x[0,0]", "U01:%x[0,2]"])
    good = [[["a", "b", "c"]]]
    fx.fit(good)
    assert fx.n_columns_ == 3
    with pytest.raises(SscrfError, match=r"sentence 1, token 1: .*'U01:%x\[0,2\]' uses column 2"):
        fx.transform([[["a", "b", "c"]], [["a", "b", "c"], ["d", "e"]]])
    with pytest.raises(SscrfError, match=r"corpus 1, sentence 0, token 0: token has 2"):
        FeatureExtractor(["U01:%x[0,2]"]).fit(good, [[["d", "e"]]])


def test_default_templates_reproduce_the_chunking_example():
    templates = default_templates(2)
    assert len(templates) == 19
    assert templates.lines[-1] == "B"
    assert DEFAULT_TEMPLATES == templates.text
    assert parse_templates(DEFAULT_TEMPLATES) == templates
    assert len(default_templates(1)) == 7
    assert len(default_templates(3)) == 31
    attrs = [a for a, _ in FeatureExtractor(templates).attribute_strings(SENTENCE)[1]]
    assert attrs == [
        "U00:_B-1", "U01:a", "U02:b", "U03:c", "U04:_B+1", "U05:a/b", "U06:b/c",
        "U07:_B-1", "U08:A", "U09:B", "U10:C", "U11:_B+1",
        "U12:_B-1/A", "U13:A/B", "U14:B/C", "U15:C/_B+1",
        "U16:_B-1/A/B", "U17:A/B/C", "U18:B/C/_B+1",
    ]  # fmt: skip
    for bad in (0, -1, 1.5, True):
        with pytest.raises(SscrfError):
            default_templates(bad)


def test_equal_strings_from_different_cells_share_one_attribute():
    # ("a/b", "c") and ("a", "b/c") both spell "U:a/b/c"; a real value spelled
    # like a pad spells the pad's string. Strings, not cells, define attributes.
    fx = FeatureExtractor(["U:%x[0,0]/%x[0,1]", "UP:%x[-1,0]"])
    corpus = [[["a/b", "c"]], [["a", "b/c"]], [["_B-1", "x"], ["y", "z"]]]
    (f,) = fx.fit_transform(corpus)
    assert fx.attributes_ == ["UP:_B-1", "U:a/b/c", "U:_B-1/x", "U:y/z"]  # by frequency
    rows = csr_rows(f, fx.attributes_)
    assert rows[0] == rows[1] == {"U:a/b/c": 1.0, "UP:_B-1": 1.0}
    assert rows[3] == {"U:y/z": 1.0, "UP:_B-1": 1.0}


def test_column_values_must_be_strings():
    fx = FeatureExtractor(["U00:%x[0,1]"])
    with pytest.raises(SscrfError, match=r"sentence 0, token 1: column 1 is int, not str"):
        fx.fit([[["a", "b"], ["c", 3]]])


# ---------------------------------------------------------------------------
# Feature dicts
# ---------------------------------------------------------------------------


def test_dict_feature_values():
    token = {
        "w": "the",
        "n": 2,
        "x": -0.5,
        "upper": True,
        "title": False,
        "suffixes": ["he", "e"],
        "tags": {"b", "a"},
        "ctx": {"w": "cat", "len": 3, "deep": {"k": True}},
        "f32": np.float32(0.25),
        "i64": np.int64(4),
        "nb": np.bool_(True),
    }
    fx = FeatureExtractor()
    assert fx.attribute_strings([token]) == [
        [
            ("w=the", 1.0),
            ("n", 2.0),
            ("x", -0.5),
            ("upper", 1.0),
            ("suffixes=he", 1.0),
            ("suffixes=e", 1.0),
            ("tags=a", 1.0),
            ("tags=b", 1.0),
            ("ctx:w=cat", 1.0),
            ("ctx:len", 3.0),
            ("ctx:deep:k", 1.0),
            ("f32", 0.25),
            ("i64", 4.0),
            ("nb", 1.0),
        ]
    ]


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, np.float64("nan")])
def test_non_finite_dict_value_names_sentence_token_and_feature(bad):
    corpus = [[{"a": 1.0}], [{"a": 1.0}, {"ok": "x", "score": bad}]]
    with pytest.raises(SscrfError, match=r"sentence 1, token 1: feature score has non-finite"):
        FeatureExtractor().fit(corpus)


@pytest.mark.parametrize(
    "token, message",
    [
        ({"a": None}, r"feature a has a value of type NoneType"),
        ({"a": {"b": object()}}, r"feature a:b has a value of type object"),
        ({"a": ["x", 1]}, r"feature a: list items must be strings"),
        ({1: "x"}, r"feature name 1 is not a string"),
        (["w", "NN"], r"a token given as a list of columns needs templates"),
        ("word", r"a token must be a feature dict, not str"),
    ],
)
def test_bad_dict_tokens(token, message):
    with pytest.raises(SscrfError, match=r"sentence 0, token 0: " + message):
        FeatureExtractor().fit([[token]])


def test_overflowing_dict_values_are_rejected():
    with pytest.raises(SscrfError, match=r"sentence 0, token 0: feature a: integer value too"):
        FeatureExtractor().fit([[{"a": 10**400}]])
    token = {"x": {"y": 1e308}, "x:y": 1e308}
    with pytest.raises(SscrfError, match=r"corpus 1, sentence 1, token 0: summing the values"):
        FeatureExtractor().fit([[{"a": 1.0}]], [[], [token]])
    # finite, but beyond what the lattice sums take (the core's 1e250)
    with pytest.raises(SscrfError, match=r"sentence 0, token 1: .* is 1e\+308, above 1e\+250"):
        FeatureExtractor().fit([[{"a": 1.0}, {"a": 1e308}]])
    token = {"x": {"y": 6e249}, "x:y": 6e249, "b": -1e250}
    with pytest.raises(SscrfError, match=r"token 0: .*repeats in the token\) is 1.2e\+250"):
        FeatureExtractor().fit_transform([[token]])
    FeatureExtractor().fit_transform([[{"x": 1e250, "y": -1e250}]])  # at the limit: accepted


def test_dict_token_with_templates_is_rejected():
    with pytest.raises(SscrfError, match=r"feature dicts need templates=None \(CRF's default"):
        FeatureExtractor(["U00:%x[0,0]"]).fit([[["a"], {"w": "a"}]])


# ---------------------------------------------------------------------------
# Vocabulary and CSR
# ---------------------------------------------------------------------------


def test_vocabulary_by_frequency_then_first_occurrence():
    fx = FeatureExtractor()
    fx.fit([[{"b": 1, "a": 1}, {"c": 1, "a": 1}]], [[{"d": 1, "b": 1}, {"d": 1, "a": 1}]])
    # tokens per attribute over both corpora: a 3, b 2, d 2, c 1
    assert fx.attributes_ == ["a", "b", "d", "c"]
    assert fx.attribute_index() == {"a": 0, "b": 1, "d": 2, "c": 3}
    f = fx.transform([[{"c": 1.0, "b": 2.0, "a": 3.0}]])
    assert f.indices.tolist() == [0, 1, 3] and f.values.tolist() == [3.0, 2.0, 1.0]


def test_min_freq_counts_tokens_over_all_corpora():
    labeled = [[{"w": "x"}, {"w": "y"}]]
    unlabeled = [[{"w": "x"}], [{"w": "z", "also": "z"}]]
    # Within one token a repeated attribute counts once.
    repeated = [[{"w": "q", "w=q": 1.0}]]
    fx = FeatureExtractor(min_freq=2)
    f_lab, f_unl, f_rep = fx.fit_transform(labeled, unlabeled, repeated)
    assert fx.attributes_ == ["w=x"]
    assert [f.n_attributes for f in (f_lab, f_unl, f_rep)] == [1, 1, 1]
    assert csr_rows(f_lab, fx.attributes_) == [{"w=x": 1.0}, {}]
    assert csr_rows(f_unl, fx.attributes_) == [{"w=x": 1.0}, {}]
    # fit alone gives the same vocabulary; transform then agrees with fit_transform.
    again = FeatureExtractor(min_freq=2).fit(labeled, unlabeled, repeated)
    assert again.attributes_ == fx.attributes_
    corpora = (labeled, unlabeled, repeated)
    for got, want in zip(map(again.transform, corpora), (f_lab, f_unl, f_rep)):
        for a, b in zip(got[:4], want[:4]):
            np.testing.assert_array_equal(a, b)


def test_unseen_attributes_are_ignored_at_transform():
    fx = FeatureExtractor(["U00:%x[0,0]"]).fit([[["a"], ["b"]]])
    f = fx.transform([[["b"], ["new"], ["a"]]])
    check_csr_layout(f)
    assert csr_rows(f, fx.attributes_) == [{"U00:b": 1.0}, {}, {"U00:a": 1.0}]


def test_duplicate_attributes_in_a_token_are_summed():
    fx = FeatureExtractor(["U00:%x[0,0]", "U00:%x[0,0]", "U01:%x[0,0]"])
    (f,) = fx.fit_transform([[["a"]]])
    assert csr_rows(f, fx.attributes_) == [{"U00:a": 2.0, "U01:a": 1.0}]
    fd = FeatureExtractor()
    (g,) = fd.fit_transform([[{"a": "b", "a=b": 1.5, "s": ["t", "t"]}]])
    assert csr_rows(g, fd.attributes_) == [{"a=b": 2.5, "s=t": 2.0}]
    check_csr_layout(f)
    check_csr_layout(g)


def test_csr_layout_and_empty_sentences():
    fx = FeatureExtractor(["U00:%x[0,0]", "U01:%x[-1,0]/%x[0,0]", "U02:bias"])
    corpus = [[], [["z"], ["a"], ["z"]], [], [["a"]], []]
    (f,) = fx.fit_transform(corpus)
    check_csr_layout(f)
    assert f.n_sentences == 5 and f.n_tokens == 4
    np.testing.assert_array_equal(f.offsets, [0, 0, 3, 3, 4, 4])
    np.testing.assert_array_equal(f.indptr, [0, 3, 6, 9, 12])
    assert f.n_attributes == len(fx.attributes_)
    g = fx.transform([[], []])
    check_csr_layout(g)
    assert (g.n_sentences, g.n_tokens, g.nnz) == (2, 0, 0)


def test_empty_corpus():
    for fx in (FeatureExtractor(["U00:%x[0,0]"]), FeatureExtractor()):
        (f,) = fx.fit_transform([])
        check_csr_layout(f)
        assert (f.n_sentences, f.n_tokens, f.n_attributes) == (0, 0, 0)
        assert fx.attributes_ == []
        g = fx.transform([[]])
        assert (g.n_sentences, g.n_tokens, g.nnz) == (1, 0, 0)


@pytest.mark.parametrize(
    "X, message",
    [
        ("not a corpus", r"X must be a list of sentences, not str"),
        ({"a": 1}, r"X must be a list of sentences, not dict"),
        ([[["a"]], "abc"], r"sentence 1: a sentence must be a list or tuple of tokens, not str"),
        ([[["a"]], {"w": "a"}], r"sentence 1: a sentence must be .* not dict"),
        ([["a", "b"]], r"sentence 0, token 0: with templates a token must be a list"),
    ],
)
def test_bad_corpus_shapes_are_named(X, message):
    fx = FeatureExtractor(["U00:%x[0,0]"])
    with pytest.raises(SscrfError, match=message):
        fx.fit(X)


def test_usage_errors():
    with pytest.raises(SscrfError, match="not fitted"):
        FeatureExtractor().transform([])
    with pytest.raises(SscrfError, match="at least one corpus"):
        FeatureExtractor().fit()
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(SscrfError, match="min_freq"):
            FeatureExtractor(min_freq=bad)
    with pytest.raises(SscrfError, match="templates must be"):
        FeatureExtractor(templates=3)


def test_state_round_trip_gives_identical_transform():
    train = [[["He", "PRP"], ["reckons", "VBZ"]], [["the", "DT"], ["current", "JJ"]]]
    test = [[["the", "DT"], ["deficit", "NN"]], []]
    for fx, corpus_train, corpus_test in [
        (FeatureExtractor(default_templates(2), min_freq=1), train, test),
        (
            FeatureExtractor(min_freq=2),
            [[{"w": w, "n": 0.5} for w, _ in s] for s in train + train],
            [[{"w": w, "n": 0.5} for w, _ in s] for s in test],
        ),
    ]:
        fx.fit(corpus_train)
        state = json.loads(json.dumps(fx.to_state()))
        restored = FeatureExtractor.from_state(state)
        assert restored.attributes_ == fx.attributes_
        assert restored.n_columns_ == fx.n_columns_
        a, b = fx.transform(corpus_test), restored.transform(corpus_test)
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize(
    "change",
    [
        {"attributes": ["a", "a"]},
        {"attributes": "a"},
        {"min_freq": 0},
        {"templates": "U00:%x[0,0]"},
        {"templates": ["B01:%x[0,0]", "U00:%x[0,0]"]},
        {"n_columns": -1},
        {"extra": 1},
    ],
)
def test_bad_state_is_rejected(change):
    state = FeatureExtractor(["U00:%x[0,0]"]).fit([[["a"]]]).to_state()
    state.update(change)
    with pytest.raises(SscrfError):
        FeatureExtractor.from_state(state)


# ---------------------------------------------------------------------------
# Properties on random small corpora
# ---------------------------------------------------------------------------

# Few distinct values, including ones that collide with pads and separators.
values = st.sampled_from(["a", "b", "a/b", "b/a", "_B-1", "_B+1", ""])
column_sentence = st.lists(st.lists(values, min_size=2, max_size=2), max_size=5)
cell = st.tuples(st.integers(-3, 3), st.integers(0, 1))
template_line = st.lists(cell, max_size=3).map(
    lambda cells: "U" + ":" + "/".join(f"%x[{r},{c}]" for r, c in cells)
)
template_lines = st.lists(template_line, min_size=1, max_size=4).map(
    lambda lines: [f"U{k}{line[1:]}" for k, line in enumerate(lines)]
)


@settings(max_examples=60, deadline=None)
@given(
    lines=template_lines,
    corpus=st.lists(column_sentence, max_size=4),
    other=st.lists(column_sentence, max_size=3),
    min_freq=st.integers(1, 3),
)
def test_template_csr_matches_attribute_strings(lines, corpus, other, min_freq):
    fx = FeatureExtractor(lines, min_freq=min_freq)
    for sentence in corpus + other:
        want = naive_template_strings(lines, sentence)
        got = [[a for a, v in tok] for tok in fx.attribute_strings(sentence)]
        assert got == want
    f, g = fx.fit_transform(corpus, other)
    check_csr_layout(f)
    check_csr_layout(g)
    # min_freq counted in tokens over both corpora.
    counts = Counter(
        name
        for sentence in corpus + other
        for tok in fx.attribute_strings(sentence)
        for name in {a for a, _ in tok}
    )
    vocabulary = {a for a, k in counts.items() if k >= min_freq}
    assert set(fx.attributes_) == vocabulary
    for features, sentences in ((f, corpus), (g, other), (fx.transform(other), other)):
        want = [summed(tok, vocabulary) for s in sentences for tok in fx.attribute_strings(s)]
        assert csr_rows(features, fx.attributes_) == want
        assert features.offsets.tolist() == np.cumsum([0] + [len(s) for s in sentences]).tolist()


dict_value = st.one_of(
    st.sampled_from(["x", "y"]),
    st.integers(-3, 3),
    st.floats(-2, 2, allow_nan=False),
    st.booleans(),
    st.lists(st.sampled_from(["x", "y"]), max_size=2),
    st.dictionaries(st.sampled_from(["k", "m"]), st.sampled_from(["x", 1.5, True]), max_size=2),
)
dict_token = st.dictionaries(st.sampled_from(["a", "b", "a=x", "c"]), dict_value, max_size=4)


@settings(max_examples=60, deadline=None)
@given(corpus=st.lists(st.lists(dict_token, max_size=4), max_size=4), min_freq=st.integers(1, 2))
def test_dict_csr_matches_attribute_strings(corpus, min_freq):
    fx = FeatureExtractor(min_freq=min_freq)
    (f,) = fx.fit_transform(corpus)
    check_csr_layout(f)
    counts = Counter(
        name for s in corpus for tok in fx.attribute_strings(s) for name in {a for a, _ in tok}
    )
    vocabulary = {a for a, k in counts.items() if k >= min_freq}
    assert set(fx.attributes_) == vocabulary
    want = [summed(tok, vocabulary) for s in corpus for tok in fx.attribute_strings(s)]
    got = csr_rows(f, fx.attributes_)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.keys() == w.keys()
        assert all(math.isclose(g[k], w[k], abs_tol=1e-12) for k in w)


@pytest.mark.parametrize("n_cells", [5, 24])
def test_many_cells_sorted_and_compacted_keys(n_cells):
    # 5 cells over ~30 values exceed the presence-table range, and 24 cells
    # would overflow a single int64 key: both take the other branches of the
    # key factorisation, which must agree with building strings one by one.
    rng = np.random.default_rng(n_cells)
    vocabulary = [f"v{k}" for k in range(30)]
    corpus = [
        [[str(rng.choice(vocabulary))] for _ in range(rng.integers(0, 8))] for _ in range(40)
    ]
    line = "U0:" + "/".join(f"%x[{int(r)},0]" for r in rng.integers(-2, 3, n_cells))
    fx = FeatureExtractor([line, "U1:%x[0,0]"])
    (f,) = fx.fit_transform(corpus)
    check_csr_layout(f)
    want = [
        {a: 1.0 for a in attrs}
        for sentence in corpus
        for attrs in naive_template_strings([line, "U1:%x[0,0]"], sentence)
    ]
    assert csr_rows(f, fx.attributes_) == want


def test_module_example():
    import doctest

    import sscrf.features

    assert doctest.testmod(sscrf.features).failed == 0
