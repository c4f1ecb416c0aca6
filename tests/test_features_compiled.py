"""Template extraction in the core against the numpy reference (Templates.apply).

The reference is the factorised numpy path the extractor ran before the core
did (``FeatureExtractor._compiled_templates = False``); it is itself checked
against strings built token by token in test_features_templates.py.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sscrf import _core
from sscrf.errors import SscrfError
from sscrf.features import FeatureExtractor, default_templates, parse_templates

from features_common import check_csr_layout


def extractors(lines, min_freq=1, n_threads=1):
    """(compiled, reference) extractors with the same templates."""
    compiled = FeatureExtractor(lines, min_freq=min_freq, n_threads=n_threads)
    reference = FeatureExtractor(lines, min_freq=min_freq)
    reference._compiled_templates = False
    return compiled, reference


def assert_same(f, g):
    """Two Features equal entry for entry (values compared as float64 arrays)."""
    check_csr_layout(f)
    for name in ("indptr", "indices", "offsets"):
        a, b = getattr(f, name), getattr(g, name)
        assert a.dtype == b.dtype and np.array_equal(a, b), name
    assert np.array_equal(np.asarray(f.values), np.asarray(g.values))
    assert f.n_attributes == g.n_attributes


# Values that collide with the pads, with the templates' separators (so that
# different tuples of values make one string), empty, non-ASCII and a lone
# surrogate (Python strs may hold one; its key is its surrogatepass bytes).
values = st.sampled_from(["a", "b", "a/b", "b/a", "_B-1", "_B+1", "", "é", "日本", "\udc80", "/"])
sentence = st.lists(st.lists(values, min_size=3, max_size=3), max_size=6)
cell = st.tuples(st.integers(-3, 3), st.integers(0, 2))
piece = st.one_of(cell, st.sampled_from(["/", "x", "", "é"]))
template_line = st.lists(piece, max_size=4).map(
    lambda ps: "".join(p if isinstance(p, str) else f"%x[{p[0]},{p[1]}]" for p in ps))
template_lines = st.lists(template_line, min_size=1, max_size=5).map(
    lambda lines: [f"U{k}:{line}" for k, line in enumerate(lines)])


@settings(max_examples=80, deadline=None)
@given(lines=template_lines, corpus=st.lists(sentence, max_size=5),
       other=st.lists(sentence, max_size=4), min_freq=st.integers(1, 2),
       n_threads=st.sampled_from([1, 2]))
def test_random_templates_and_corpora_match_the_reference(lines, corpus, other, min_freq,
                                                          n_threads):
    compiled, reference = extractors(lines, min_freq, n_threads)
    for f, g in zip(compiled.fit_transform(corpus, other), reference.fit_transform(corpus, other)):
        assert_same(f, g)
    assert compiled.attributes_ == reference.attributes_
    assert compiled.n_columns_ == reference.n_columns_
    # transform under a frozen vocabulary: unknown attributes dropped
    assert_same(compiled.transform(other + corpus), reference.transform(other + corpus))
    assert compiled.count(corpus, other) == reference.count(corpus, other)


@settings(max_examples=80, deadline=None)
@given(lines=template_lines, corpus=st.lists(sentence, max_size=6),
       min_freq=st.integers(1, 3), n_threads=st.sampled_from([1, 2]))
def test_a_fit_of_one_corpus_matches_the_reference(lines, corpus, min_freq, n_threads):
    # one corpus: the core numbers the attributes by frequency itself where
    # it can (Templates.fit_expand), else the extractor renumbers them
    compiled, reference = extractors(lines, min_freq, n_threads)
    (f,), (g,) = compiled.fit_transform(corpus), reference.fit_transform(corpus)
    assert_same(f, g)
    assert compiled.attributes_ == reference.attributes_
    assert compiled.n_columns_ == reference.n_columns_
    assert_same(compiled.transform(corpus[::-1]), reference.transform(corpus[::-1]))


def fit_expand(templates, corpus, min_freq=1, n_threads=1):
    columns, offsets, _ = _core.encode_columns(corpus, templates.columns)
    index = _core.AttributeIndex()
    return index, templates.fit_expand(columns, offsets, index, min_freq, n_threads)


def test_the_core_orders_a_fit_when_no_two_tuples_share_a_string():
    # every (template, tuple) its own string: the core gives final ids, and
    # with min_freq 2 drops the attributes of one token
    rng = np.random.default_rng(3)
    corpus = [[[str(w), str(t)] for w, t in zip(rng.choice(list("abcdefg"), n),
                                                rng.choice(list("XYZ"), n))]
              for n in rng.integers(1, 12, 40)]
    templates = default_templates(2)
    for min_freq in (1, 2):
        for n_threads in (1, 2):
            index, (indptr, indices, values, order, attributes) = fit_expand(
                templates, corpus, min_freq, n_threads)
            assert order is not None and values is None
            compiled, reference = extractors(templates, min_freq, n_threads)
            (g,) = reference.fit_transform(corpus)
            assert np.array_equal(indptr, g.indptr) and np.array_equal(indices, g.indices)
            # on two threads made while the index was filled; the index agrees
            assert (attributes is None) == (n_threads == 1)
            assert index.strings(order) == reference.attributes_
            assert attributes in (None, reference.attributes_)
            assert (len(order) < len(index)) == (min_freq == 2)
            assert_same(compiled.fit_transform(corpus)[0], g)


@pytest.mark.parametrize("lines, corpus, slice_entries", [
    # two tuples, one string: "U0:a" + "bc" and "U0:ab" + "c"
    (["U0:%x[0,0]%x[0,1]"], [[["a", "bc"], ["ab", "c"]]], 0),
    # two templates, one string
    (["U0:%x[0,0]", "U0:%x[0,0]"], [[["a", "b"]]], 0),
    # more than one slice
    (["U0:%x[0,0]", "U1:%x[-1,1]"], [[["a", "b"], ["c", "d"]], [["a", "d"]]], 2),
])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_the_core_leaves_the_order_to_the_extractor_otherwise(lines, corpus, slice_entries,
                                                               n_threads):
    templates = parse_templates(lines)
    columns, offsets, _ = _core.encode_columns(corpus, templates.columns)
    index = _core.AttributeIndex()
    got = index.fit_templates(templates._core_pieces, columns, offsets, n_threads, 1,
                              slice_entries)
    # on two threads the strs made while the index filled are dropped
    assert got[3] is None and got[4] is None
    want = _core.AttributeIndex().templates_to_csr(templates._core_pieces, columns, offsets,
                                                   True, 1, None, slice_entries)
    for x, y in zip(got[:3], want):
        assert (x is None and y is None) or np.array_equal(x, y)
    compiled, reference = extractors(lines)
    assert_same(compiled.fit_transform(corpus)[0], reference.fit_transform(corpus)[0])
    assert compiled.attributes_ == reference.attributes_


def test_fit_templates_refuses_a_filled_index_and_min_freq_below_one():
    columns, offsets, _ = _core.encode_columns([[["a", "b"]]], [0, 1])
    with pytest.raises(SscrfError, match="needs an empty index .it holds 1 attributes"):
        _core.AttributeIndex(["kept"]).fit_templates(PIECES, columns, offsets, 1, 1)
    with pytest.raises(SscrfError, match="min_freq must be >= 1, got 0"):
        _core.AttributeIndex().fit_templates(PIECES, columns, offsets, 1, 0)


@pytest.mark.parametrize("n_templates", [1, 2, 7, 16, 17, 19, 31, 32, 33, 45])
def test_many_templates_sorted_per_token_as_the_reference(n_templates):
    # each token's ids are sorted by a sorting network over 16 tokens at a
    # time for up to 32 templates, by std::sort above: sizes on both sides of
    # the powers of two, token counts that are not multiples of 16, repeats
    rng = np.random.default_rng(n_templates)
    words = [f"w{k}" for k in range(25)]
    corpus = [[[str(rng.choice(words)), str(rng.choice(["A", "B", "C"]))]
               for _ in range(int(rng.integers(1, 30)))] for _ in range(23)]
    lines = [f"U{k}:%x[{int(rng.integers(-3, 4))},{int(rng.integers(0, 2))}]"
             + ("" if k % 3 else f"/%x[{int(rng.integers(-1, 2))},1]")
             for k in range(n_templates)]
    if n_templates > 1:  # a repeat of the first template: one entry of value 2
        lines[-1] = lines[0]
    compiled, reference = extractors(lines)
    (f,), (g,) = compiled.fit_transform(corpus), reference.fit_transform(corpus)
    assert_same(f, g)
    assert (np.asarray(f.values) == 2.0).any() == (n_templates > 1)
    assert_same(compiled.transform(corpus[::-1]), reference.transform(corpus[::-1]))


@pytest.mark.parametrize("n_cells", [1, 2, 3, 4, 5, 6])
def test_templates_of_one_to_six_cells_match_the_reference(n_cells):
    # Tuples of a small space (3 tags: 3^6 = 729, under 4 x the 345 tokens)
    # are numbered through a direct table, a code path per cell count up to
    # 3; those of a large one (25 words, from 3 cells on) through a hash
    # table. Offsets -3..+3 reach the pads on both sides of a sentence.
    rng = np.random.default_rng(n_cells)
    words = [f"w{k}" for k in range(25)]
    corpus = [[[str(rng.choice(words)), str(rng.choice(["A", "B", "C"]))]
               for _ in range(int(rng.integers(1, 30)))] for _ in range(23)]
    offsets = [int(rng.integers(-3, 4)) for _ in range(n_cells)]
    lines = ["UT:" + "/".join(f"%x[{o},1]" for o in offsets),
             "UW:" + "/".join(f"%x[{o},0]" for o in offsets[::-1]),
             "UM:" + "/".join(f"%x[{o},{k % 2}]" for k, o in enumerate(offsets))]
    compiled, reference = extractors(lines)
    (f,), (g,) = compiled.fit_transform(corpus), reference.fit_transform(corpus)
    assert_same(f, g)
    assert compiled.attributes_ == reference.attributes_
    unseen = [[[str(rng.choice(words + ["new"])), str(rng.choice(["A", "B", "C", "D"]))]
               for _ in range(int(rng.integers(1, 30)))] for _ in range(9)]
    assert_same(compiled.transform(unseen + corpus), reference.transform(unseen + corpus))


@pytest.mark.parametrize("n_templates, n_sentences, n_threads", [
    (3, 23, 1), (19, 23, 1), (33, 23, 1), (45, 23, 1),
    # two threads, and corpora of one and of several blocks of 4,096 tokens
    (19, 23, 2), (19, 700, 2), (45, 700, 2)])
def test_a_fit_with_every_attribute_kept_sorts_straight_into_the_csr(n_templates, n_sentences,
                                                                     n_threads):
    # distinct templates, one corpus, min_freq 1: J ids a token, sorted into
    # the CSR by the network up to 32 templates, by std::sort above
    rng = np.random.default_rng(n_templates)
    corpus = [[[f"w{int(rng.integers(0, 30))}", str(rng.choice(["A", "B", "C"]))]
               for _ in range(int(rng.integers(1, 30)))] for _ in range(n_sentences)]
    lines = [f"U{k}:%x[{k % 7 - 3},{k % 2}]/%x[{(k // 7) % 3 - 1},{1 - k % 2}]"
             for k in range(n_templates)]
    templates = parse_templates(lines)
    _, (indptr, _, values, order, attributes) = fit_expand(templates, corpus, 1, n_threads)
    assert order is not None and values is None
    assert (attributes is None) == (n_threads == 1)
    assert np.array_equal(np.diff(indptr), np.full(len(indptr) - 1, n_templates))
    compiled, reference = extractors(lines, 1, n_threads)
    (f,), (g,) = compiled.fit_transform(corpus), reference.fit_transform(corpus)
    assert_same(f, g)
    assert compiled.attributes_ == reference.attributes_


def test_repeated_templates_count_and_reading_order():
    # two templates giving one string make one entry of value 2; new
    # attributes are numbered by token, then template
    lines = ["U0:%x[0,0]", "U1:%x[1,0]", "U0:%x[0,0]"]
    corpus = [[["b"], ["a"]], [["c"]]]
    compiled, reference = extractors(lines)
    counts = compiled.count(corpus)
    assert counts.strings == ["U0:b", "U1:a", "U0:a", "U1:_B+1", "U0:c"]
    assert counts == reference.count(corpus)
    f = compiled.fit_transform(corpus)[0]
    assert_same(f, reference.fit_transform(corpus)[0])
    assert sorted(np.asarray(f.values).tolist()) == [1.0, 1.0, 1.0, 2.0, 2.0, 2.0]


@pytest.mark.parametrize("slice_entries", [1, 7, 64])
def test_slices_and_threads_do_not_change_the_result(slice_entries):
    rng = np.random.default_rng(0)
    words = [f"w{k}" for k in range(40)] + ["_B-2", "é"]
    corpus = [[[words[i], words[j]] for i, j in rng.integers(0, len(words), (n, 2))]
              for n in rng.integers(0, 9, 60)]
    templates = default_templates(2)
    compiled, reference = extractors(templates)
    want = reference.fit_transform(corpus)[0]
    columns, offsets, _ = _core.encode_columns(corpus, templates.columns)
    assert offsets.tolist() == np.cumsum([0] + [len(s) for s in corpus]).tolist()
    results = []
    for n_threads in (1, 2):
        index, strings = _core.AttributeIndex(), []
        results.append((index.templates_to_csr(templates._core_pieces, columns, offsets, True,
                                               n_threads, strings, slice_entries), strings))
    (a, strings), (b, strings2) = results
    assert strings == strings2
    for x, y in zip(a, b):
        assert (x is None and y is None) or np.array_equal(x, y)
    compiled.fit_transform(corpus)
    default_index, default_strings = _core.AttributeIndex(), []
    default = default_index.templates_to_csr(templates._core_pieces, columns, offsets, True, 1,
                                             default_strings)
    assert strings == default_strings
    assert np.array_equal(a[0], default[0]) and np.array_equal(a[1], default[1])
    assert compiled.attributes_ == reference.attributes_
    assert_same(compiled.fit_transform(corpus)[0], want)


def test_empty_corpus_and_empty_sentences():
    compiled, reference = extractors(default_templates(2))
    for corpus in ([], [[], []], [[], [["a", "B"]], []]):
        for f, g in zip(compiled.fit_transform(corpus), reference.fit_transform(corpus)):
            assert_same(f, g)
        assert compiled.attributes_ == reference.attributes_


def test_tokens_the_compiled_reader_does_not_take_go_through_the_checks():
    class Row(list):
        pass
    corpus = [[Row(["a", "B"]), ("b", "C")]]
    compiled, reference = extractors(default_templates(2))
    assert_same(compiled.fit_transform(corpus)[0], reference.fit_transform(corpus)[0])
    with pytest.raises(SscrfError, match="sentence 0, token 1: column 1 is int"):
        compiled.fit([[["a", "B"], ["b", 3]]])
    with pytest.raises(SscrfError, match="token has 1 column"):
        compiled.fit([[["a", "B"], ["b"]]])


# ---------------------------------------------------------------------------
# Bad input to the core: refused before anything is interned
# ---------------------------------------------------------------------------

PIECES = parse_templates(["U0:%x[0,0]/%x[-1,1]"])._core_pieces


def column(values):
    return _core.encode_strings(values)


def call(columns, offsets, pieces=PIECES, n_threads=1):
    index = _core.AttributeIndex(["kept"])
    strings = []
    try:
        return index.templates_to_csr(pieces, columns, offsets, True, n_threads, strings)
    finally:
        assert len(index) == 1 and strings == []


GOOD = [column(["a", "b"]), column(["A", "B"])]


@pytest.mark.parametrize("columns, offsets, message", [
    (GOOD, np.array([0, 3], np.int64), "end at 3 tokens but the columns have 2"),
    (GOOD, np.array([0, 2, 1, 2], np.int64), "non-decreasing"),
    (GOOD, np.array([1, 2], np.int64), r"\[0\] must be 0"),
    (GOOD, np.array([0, 2], np.float64), "int64"),
    ([GOOD[0], column(["A"])], np.array([0, 2], np.int64), "has 1 values"),
    ([GOOD[0], (b"AB", np.array([0, 2, 1], np.int64))], np.array([0, 2], np.int64),
     "non-decreasing"),
    ([GOOD[0], (b"AB", np.array([0, 1, 3], np.int64))], np.array([0, 2], np.int64),
     "must end at the data's length"),
    ([GOOD[0], (b"A\xff", np.array([0, 1, 2], np.int64))], np.array([0, 2], np.int64),
     "value 1 is not UTF-8"),
    ([GOOD[0], (b"A\xc3", np.array([0, 1, 2], np.int64))], np.array([0, 2], np.int64),
     "value 1 is not UTF-8"),
    # valid UTF-8 as a whole ("é"), cut in two values
    ([GOOD[0], (b"\xc3\xa9", np.array([0, 1, 2], np.int64))], np.array([0, 2], np.int64),
     "value 0 is not UTF-8"),
    ([GOOD[0], ("AB", np.array([0, 1, 2], np.int64))], np.array([0, 2], np.int64),
     "bytes or a uint8 array"),
])
def test_bad_columns_and_offsets_are_refused(columns, offsets, message):
    with pytest.raises(SscrfError, match=message):
        call(columns, offsets)


@pytest.mark.parametrize("pieces, message", [
    ([["U", (0, 2)]], r"column slot 2 outside \[0, 2\)"),
    ([["U", (0, -1)]], "column slot -1"),
    ([["U", (1001, 0)]], "row offset 1001"),
    ([["U", 3]], "a piece must be"),
    ([[(0, 0)] * 33], "more than 32 cells"),
])
def test_bad_templates_are_refused(pieces, message):
    with pytest.raises(SscrfError, match=message):
        call(GOOD, np.array([0, 2], np.int64), pieces)


def test_bad_thread_count_is_refused():
    with pytest.raises(SscrfError, match="n_threads"):
        call(GOOD, np.array([0, 2], np.int64), n_threads=0)


def test_encode_strings_is_surrogatepass_utf8():
    strings = ["a", "", "é", "\udc80", "日本"]
    data, offsets = _core.encode_strings(strings)
    assert bytes(data) == "".join(strings).encode("utf-8", "surrogatepass")
    assert offsets.tolist() == np.cumsum([0] + [len(s.encode("utf-8", "surrogatepass"))
                                                for s in strings]).tolist()
    with pytest.raises(TypeError, match="item 1 is int"):
        _core.encode_strings(["a", 1])


def encoded_reference(sentences, columns):
    """encode_columns's result built in Python, or None where it takes no corpus."""
    tokens = [t for s in sentences for t in s]
    if (any(type(s) not in (list, tuple) for s in sentences)
            or any(type(t) not in (list, tuple) or len(t) <= max(columns, default=-1)
                   for t in tokens)
            or any(type(t[k]) is not str for t in tokens for k in columns)):
        return None
    out = []
    for k in columns:
        keys = [t[k].encode("utf-8", "surrogatepass") for t in tokens]
        out.append((b"".join(keys), np.cumsum([0] + [len(b) for b in keys]).tolist()))
    shortest = min(map(len, tokens)) if tokens else None
    return out, np.cumsum([0] + [len(s) for s in sentences]).tolist(), shortest


cell_text = st.sampled_from(["a", "bc", "", "é", "日本", "\udc80"])
token = st.one_of(st.lists(cell_text, min_size=3, max_size=4),
                  st.lists(cell_text, min_size=3, max_size=4).map(tuple))
corpus_of_tokens = st.lists(st.lists(token, max_size=5), max_size=8)
# what makes a corpus one encode_columns does not take: a cell that is no
# str, a token too short or of another type
misfit = st.sampled_from([["a", "b", 1], ["a", "b", None], ["a"], {"a": "b"}, "abc"])


def check_encoded(sentences, columns, n_threads, block_tokens):
    expected = encoded_reference(sentences, columns)
    got = _core.encode_columns(sentences, columns, n_threads, block_tokens)
    if expected is None:
        assert got is None
        return
    data, sentence_offsets, shortest = got
    assert [(bytes(d), o.tolist()) for d, o in data] == expected[0]
    assert sentence_offsets.tolist() == expected[1]
    assert shortest == expected[2]


@settings(max_examples=100, deadline=None)
@given(sentences=corpus_of_tokens, columns=st.lists(st.integers(0, 2), min_size=1, max_size=3),
       n_threads=st.sampled_from([1, 2]), block_tokens=st.sampled_from([1, 2, 3, 8192]))
def test_columns_read_on_threads_in_blocks_are_the_serial_reading(sentences, columns, n_threads,
                                                                  block_tokens):
    check_encoded(sentences, columns, n_threads, block_tokens)


@settings(max_examples=60, deadline=None)
@given(sentences=corpus_of_tokens.filter(lambda c: any(c)), bad=misfit,
       where=st.integers(0, 10**6), block_tokens=st.sampled_from([1, 2, 3]))
def test_a_misfit_token_in_any_block_gives_none(sentences, bad, where, block_tokens):
    s = where % len(sentences)
    while not sentences[s]:
        s = (s + 1) % len(sentences)
    sentences[s][where % len(sentences[s])] = bad
    check_encoded(sentences, [0, 2], 2, block_tokens)


def test_encode_columns_refuses_bad_thread_and_block_counts():
    with pytest.raises(SscrfError, match="n_threads must be >= 1, got 0"):
        _core.encode_columns([[["a"]]], [0], 0)
    with pytest.raises(SscrfError, match="block_tokens must be >= 1, got 0"):
        _core.encode_columns([[["a"]]], [0], 2, 0)
