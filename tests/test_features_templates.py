"""sscrf.features.templates: CRF++ template strings and pads, template files, the default set.

And bad template lines.
"""

import re
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sscrf.errors import SscrfError
from sscrf.features import (
    DEFAULT_TEMPLATES,
    FeatureExtractor,
    default_templates,
    parse_templates,
    read_templates,
)
from features_common import check_csr_layout, csr_rows, summed


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
