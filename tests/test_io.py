"""CoNLL and CoNLL-U reading and writing.

Expected values are written out by hand from the small files in each test.
"""

import gzip
import io
import os
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sscrf.errors import SscrfError
from sscrf.io import (ConllCorpus, label_inventory, read_conll, read_conllu, text_sentences,
                      write_conll)


def write_text(tmp_path, text, name="data.txt"):
    path = tmp_path / name
    # newline="" so that "\r\n" in `text` reaches the file unchanged.
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    return path


def raises_at(path, line, message):
    """pytest.raises for an SscrfError naming `path:line:` and `message`."""
    pattern = re.escape(f"{path}:{line}: ") + ".*" + re.escape(message)
    return pytest.raises(SscrfError, match=pattern)


# ---------------------------------------------------------------- read_conll


def test_two_sentences(tmp_path):
    path = write_text(
        tmp_path,
        "He PRP B-NP\nreckons VBZ B-VP\n\nthe DT B-NP\ncurrent JJ I-NP\n",
    )
    corpus = read_conll(path)
    assert isinstance(corpus, ConllCorpus)
    assert corpus.tokens == [
        [["He", "PRP"], ["reckons", "VBZ"]],
        [["the", "DT"], ["current", "JJ"]],
    ]
    assert corpus.labels == [["B-NP", "B-VP"], ["B-NP", "I-NP"]]
    assert corpus.lines == [1, 4]


def test_hash_is_a_token_not_a_comment(tmp_path):
    # CoNLL-2000 has the line "# # B-NP".
    path = write_text(tmp_path, "# # B-NP\n3 CD I-NP\n")
    corpus = read_conll(path)
    assert corpus.tokens == [[["#", "#"], ["3", "CD"]]]
    assert corpus.labels == [["B-NP", "I-NP"]]
    assert corpus.lines == [1]


def test_docstart_skipped_and_ends_sentence(tmp_path):
    text = (
        "-DOCSTART- -X- -X- O\n"  # 1
        "\n"  # 2
        "EU NNP B-NP B-ORG\n"  # 3
        "rejects VBZ B-VP O\n"  # 4
        "-DOCSTART- -X- -X- O\n"  # 5: no blank line before it, still a break
        "German JJ B-NP B-MISC\n"  # 6
    )
    corpus = read_conll(write_text(tmp_path, text))
    assert corpus.tokens == [
        [["EU", "NNP", "B-NP"], ["rejects", "VBZ", "B-VP"]],
        [["German", "JJ", "B-NP"]],
    ]
    assert corpus.labels == [["B-ORG", "O"], ["B-MISC"]]
    assert corpus.lines == [3, 6]


@pytest.mark.parametrize("end", ["\r\n", "\r"])
def test_windows_and_old_mac_line_endings(tmp_path, end):
    # A lone "\r" ends a line too, as in editors: such a file read as one
    # line (one sentence of one token with thousands of columns) before.
    path = write_text(tmp_path, f"a X O{end}b Y B-NP{end}{end}c Z O{end}")
    corpus = read_conll(path)
    assert corpus.tokens == [[["a", "X"], ["b", "Y"]], [["c", "Z"]]]
    # No "\r" left on the last column.
    assert corpus.labels == [["O", "B-NP"], ["O"]]
    assert corpus.lines == [1, 4]
    path = write_text(tmp_path, f"a X O{end}b Y{end}")
    with raises_at(path, 2, "expected 3 columns, found 2"):
        read_conll(path)


def test_byte_order_mark_is_not_text(tmp_path):
    # Windows editors start UTF-8 files with U+FEFF; it is not part of the first token
    path = tmp_path / "bom.txt"
    path.write_bytes("\ufeffa X O\nb Y B-NP\n".encode("utf-8"))
    assert read_conll(path).tokens == [[["a", "X"], ["b", "Y"]]]
    with open(path, encoding="utf-8") as f:
        assert read_conll(f).tokens == [[["a", "X"], ["b", "Y"]]]
    # elsewhere it is an ordinary character
    path.write_bytes("a X O\n\ufeffb Y O\n".encode("utf-8"))
    assert read_conll(path).tokens == [[["a", "X"], ["\ufeffb", "Y"]]]


def test_crlf_from_stream_opened_without_newline_translation(tmp_path):
    path = write_text(tmp_path, "a X O\r\n\r\nb Y O\r\n")
    with open(path, encoding="utf-8", newline="") as f:
        corpus = read_conll(f)
    assert corpus.labels == [["O"], ["O"]]
    assert corpus.tokens == [[["a", "X"]], [["b", "Y"]]]


def test_tabs_and_runs_of_whitespace(tmp_path):
    path = write_text(tmp_path, "a\tX\tO\n  b \t Y    I-NP  \n")
    corpus = read_conll(path)
    assert corpus.tokens == [[["a", "X"], ["b", "Y"]]]
    assert corpus.labels == [["O", "I-NP"]]


def test_non_ascii_space_stays_inside_token(tmp_path):
    # U+00A0 is not a column separator: tokens like "10\u00a0000" exist.
    path = write_text(tmp_path, "10\u00a0000 CD O\n")
    assert read_conll(path).tokens == [[["10\u00a0000", "CD"]]]


@pytest.mark.parametrize(
    "text",
    [
        "a X O\nb Y O",  # no final newline
        "a X O\nb Y O\n",  # final newline, no blank line
        "a X O\nb Y O\n\n\n\n",  # trailing blank lines
        "a X O\nb Y O\n \t\n",  # trailing whitespace-only line
    ],
)
def test_end_of_file_variants(tmp_path, text):
    corpus = read_conll(write_text(tmp_path, text))
    assert corpus == ([[["a", "X"], ["b", "Y"]]], [["O", "O"]], [1])


def test_leading_and_repeated_blank_lines(tmp_path):
    text = "\n\n" "a X O\n" "\n \n\t\n" "b Y O\n"  # lines 1-2 blank, 3 token, 4-6 blank, 7 token
    corpus = read_conll(write_text(tmp_path, text))
    assert corpus.tokens == [[["a", "X"]], [["b", "Y"]]]
    assert corpus.lines == [3, 7]


def test_empty_file_is_empty_corpus(tmp_path):
    assert read_conll(write_text(tmp_path, "")) == ([], [], [])
    assert read_conll(write_text(tmp_path, "\n\n-DOCSTART- O\n\n")) == ([], [], [])
    assert read_conll(write_text(tmp_path, ""), has_labels=False) == ([], None, [])


def test_column_count_mismatch_names_file_and_line(tmp_path):
    path = write_text(tmp_path, "a X O\nb Y O\n\nc Z O\nd O\n")
    with raises_at(path, 5, "expected 3 columns, found 2"):
        read_conll(path)


def test_column_count_fixed_by_first_token_line_not_docstart(tmp_path):
    # The DOCSTART line has 2 columns; it does not set the count.
    path = write_text(tmp_path, "-DOCSTART- O\n\na X O\nb Y Z O\n")
    with raises_at(path, 4, "expected 3 columns, found 4"):
        read_conll(path)


def test_label_only_line_is_an_error(tmp_path):
    path = write_text(tmp_path, "\nO\nO\n")
    with raises_at(path, 2, "found 1 column"):
        read_conll(path)
    # Without labels a one-column file is fine.
    assert read_conll(path, has_labels=False) == ([[["O"], ["O"]]], None, [2])


def test_without_labels_all_columns_are_token_columns(tmp_path):
    path = write_text(tmp_path, "a X\nb Y\n")
    assert read_conll(path, has_labels=False) == ([[["a", "X"], ["b", "Y"]]], None, [1])


def test_stream_names_in_messages(tmp_path):
    with pytest.raises(SscrfError, match=re.escape("<stream>:2: expected 2 columns, found 3")):
        read_conll(io.StringIO("a O\nb c O\n"))
    path = write_text(tmp_path, "a O\nb c O\n")
    with open(path, encoding="utf-8") as f, raises_at(path, 2, "expected 2 columns"):
        read_conll(f)


class _BytesLines:
    """A file-like object that is no io class and yields bytes."""

    def read(self):
        return b"a O\n"

    def __iter__(self):
        return iter([b"a O\n"])


def test_binary_streams_are_decoded_as_files_are(tmp_path):
    # sys.stdin.buffer, gzip.open(path): line ends, exact lines in errors, hints
    assert read_conll(io.BytesIO(b"a O\r\r\nb O\rc O\n")) == ([[["a"], ["b"], ["c"]]],
                                                            [["O"] * 3], [1])
    with pytest.raises(SscrfError, match=re.escape("<stream>:3: cannot decode as utf-8")):
        read_conll(io.BytesIO(b"a O\n\nb\xff O\n"))
    path = tmp_path / "corpus.txt.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write("a\u00a0b O\n\nc O\n")
    with gzip.open(path) as f:
        assert read_conll(f) == ([[["a\u00a0b"]], [["c"]]], [["O"], ["O"]], [1, 3])
    with open(path, "rb") as f, pytest.raises(SscrfError, match="gzip-compressed"):
        read_conll(f)
    stream = io.BytesIO("a O\r\nb O\n\nc O\n".encode("utf-16"))
    assert read_conll(stream, encoding="utf-16").lines == [1, 4]
    assert not stream.closed  # the caller's stream is left open
    with pytest.raises(SscrfError, match="text mode"):
        read_conll(_BytesLines())


def test_path_types(tmp_path):
    path = write_text(tmp_path, "a O\n")
    assert read_conll(str(path)) == read_conll(path) == ([[["a"]]], [["O"]], [1])


def test_undecodable_file(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes("caf\u00e9 O\n".encode("latin-1"))
    with pytest.raises(SscrfError, match=re.escape(str(path))):
        read_conll(path)
    assert read_conll(path, encoding="latin-1").tokens == [[["caf\u00e9"]]]
    # what a compressed or UTF-16 file looks like is said
    import gzip

    path = tmp_path / "train.txt.gz"
    path.write_bytes(gzip.compress(b"a X O\n" * 50))
    with pytest.raises(SscrfError, match="looks gzip-compressed: decompress it first"):
        read_conll(path)
    path = tmp_path / "utf16.txt"
    path.write_bytes("a X O\n".encode("utf-16"))
    with pytest.raises(SscrfError, match="UTF-16 byte-order mark: re-encode it as UTF-8"):
        read_conll(path)


# ------------------------------------------------------- partial annotations


def test_label_sets(tmp_path):
    text = "word1 VBG|JJ\nword2 *\nword3 NN|NN\nword4 NN\nword5 C|A|B|A\n"
    corpus = read_conll(write_text(tmp_path, text), label_sets=True)
    assert corpus.labels == [
        [frozenset({"VBG", "JJ"}), None, "NN", "NN", frozenset({"A", "B", "C"})]
    ]
    # The singleton set is normalised to the plain string.
    assert type(corpus.labels[0][2]) is str


def test_bar_and_star_are_ordinary_without_flag(tmp_path):
    corpus = read_conll(write_text(tmp_path, "a VBG|JJ\nb *\nc |\n"))
    assert corpus.labels == [["VBG|JJ", "*", "|"]]


@pytest.mark.parametrize("cell", ["A||B", "|", "A|", "|A", "A|*"])
def test_bad_label_sets(tmp_path, cell):
    path = write_text(tmp_path, f"a O\nb {cell}\n")
    with raises_at(path, 2, repr(cell)):
        read_conll(path, label_sets=True)


def test_unknown_label(tmp_path):
    path = write_text(tmp_path, "a B-NP\nb I-NP\n\nc B-XP\n")
    with raises_at(path, 4, "unknown label 'B-XP'"):
        read_conll(path, labels=["B-NP", "I-NP", "O"])
    assert read_conll(path, labels=["B-NP", "I-NP", "B-XP"]).labels == [["B-NP", "I-NP"], ["B-XP"]]


def test_unknown_label_inside_set(tmp_path):
    path = write_text(tmp_path, "a NN|VB\nb NN|XX\nc *\n")
    with raises_at(path, 2, "unknown label 'XX'"):
        read_conll(path, label_sets=True, labels=["NN", "VB"])
    # Without label_sets the whole cell is one label.
    with raises_at(path, 1, "unknown label 'NN|VB'"):
        read_conll(path, labels=["NN", "VB"])


def test_labels_argument_validated(tmp_path):
    path = write_text(tmp_path, "a O\n")
    with pytest.raises(SscrfError, match="single string"):
        read_conll(path, labels="O")


# ---------------------------------------------------------------- write_conll


def test_write_exact_text():
    buf = io.StringIO()
    write_conll(
        buf,
        [[["He", "PRP"], ["runs", "VBZ"]], [["#", "#"]]],
        labels=[["B-NP", {"B-VP", "I-VP"}], [None]],
        predicted=[["B-NP", "B-VP"], ["O"]],
    )
    assert buf.getvalue() == (
        "He PRP B-NP B-NP\nruns VBZ B-VP|I-VP B-VP\n\n# # * O\n\n"
    )


def test_write_tab_sep_and_string_tokens():
    buf = io.StringIO()
    write_conll(buf, [["a", "b"]], [["X", ("Z", "Y")]], sep="\t")
    assert buf.getvalue() == "a\tX\nb\tY|Z\n\n"


def test_write_then_read_round_trip(tmp_path):
    tokens = [[["He", "PRP"], ["reckons", "VBZ"]], [["#", "#"], ["x|y", "*"]]]
    labels = [[frozenset({"A", "B"}), None], ["O", "B-NP"]]
    path = tmp_path / "out.txt"
    write_conll(path, tokens, labels)
    assert read_conll(path, label_sets=True) == (tokens, labels, [1, 4])
    # Without the flag the set cell is read as the literal label "A|B".
    assert read_conll(path).labels == [["A|B", "*"], ["O", "B-NP"]]


def test_write_length_mismatch_names_sentence():
    tokens = [["a"], ["b", "c"]]
    with pytest.raises(SscrfError, match="sentence 1"):
        write_conll(io.StringIO(), tokens, labels=[["O"], ["O"]])
    with pytest.raises(SscrfError, match="sentence 1"):
        write_conll(io.StringIO(), tokens, predicted=[["O"], ["O", "O", "O"]])
    with pytest.raises(SscrfError, match="2 sentences"):
        write_conll(io.StringIO(), tokens, labels=[["O"]])


@pytest.mark.parametrize(
    "tokens, labels",
    [
        ([["a b"]], None),  # would read back as two columns
        ([[""]], None),
        ([["a"]], [["B NP"]]),
        ([["a"]], [[frozenset()]]),
        ([["a"]], [[{"A|B", "C"}]]),  # "|" inside a set member is ambiguous
        ([["a"]], [[3]]),
        (["a b"], None),  # a sentence given as a string
        ([[[]]], [["O"]]),  # a token without columns, its label alone on the line
        ([["a", ["b", "c\td"]]], None),
        ([["a", ["b", 3]]], [["O", "O"]]),
        ([["a", "b"], ["c", "d"]], [["O", "B\u00a0NP"], ["O", ""]]),
        ([["a b", None]], None),  # the first problem is reported, as str
    ],
)
def test_write_rejects_cells_that_would_not_read_back(tokens, labels):
    with pytest.raises(SscrfError, match=r"^sentence \d+: |sentences|must be"):
        write_conll(io.StringIO(), tokens, labels)


def test_write_numpy_strings_and_mixed_labels():
    buf = io.StringIO()
    write_conll(buf, [[np.str_("a"), ["b", np.str_("c")]]], [[np.str_("O"), None]],
                [["O", {"X"}]])
    assert buf.getvalue() == "a O O\nb c * X\n\n"


def test_write_bad_sep():
    with pytest.raises(SscrfError, match="sep"):
        write_conll(io.StringIO(), [["a"]], sep=",")


def test_write_is_atomic(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("old\n", encoding="utf-8")
    # The second sentence fails after the first was formatted.
    with pytest.raises(SscrfError):
        write_conll(path, [["a"], ["b c"]])
    assert path.read_text(encoding="utf-8") == "old\n"
    assert os.listdir(tmp_path) == ["out.txt"]  # no temporary file left
    write_conll(path, [["a"], ["b"]], [["X"], ["Y"]])
    assert path.read_text(encoding="utf-8") == "a X\n\nb Y\n\n"
    assert os.listdir(tmp_path) == ["out.txt"]


# cells from a small alphabet that includes the characters that mean something
# elsewhere ("#" comments in CoNLL-U, "|" and "*" in label sets, "-" in tags).
_cell = st.text(alphabet="ab#|*-", min_size=1, max_size=4)


@st.composite
def _corpora(draw):
    n_cols = draw(st.integers(1, 3))
    token = st.lists(_cell, min_size=n_cols, max_size=n_cols)
    sentences = draw(st.lists(st.lists(token, min_size=1, max_size=4), max_size=4))
    labels = [draw(st.lists(_cell, min_size=len(s), max_size=len(s))) for s in sentences]
    return sentences, labels


@settings(max_examples=50, deadline=None)
@given(corpus=_corpora(), sep=st.sampled_from([" ", "\t", " \t "]))
def test_round_trip_property(corpus, sep):
    tokens, labels = corpus
    # In memory: the path (atomic) branch of write_conll is tested above.
    buf = io.StringIO()
    write_conll(buf, tokens, labels, sep=sep)
    buf.seek(0)
    back = read_conll(buf)
    assert back.tokens == tokens
    assert back.labels == labels
    # Sentence i starts after i earlier sentences and their blank lines.
    starts, line = [], 1
    for s in tokens:
        starts.append(line)
        line += len(s) + 1
    assert back.lines == starts


# ------------------------------------------------------------ label_inventory


def test_label_inventory():
    seqs = [["O", "B-NP"], [frozenset({"I-NP", "B-VP"}), None], [("A",), {"O"}]]
    assert label_inventory(seqs) == ["A", "B-NP", "B-VP", "I-NP", "O"]
    assert label_inventory([]) == []
    # Given labels keep their order and may include unseen ones.
    assert label_inventory(seqs, labels=["O", "I-NP", "B-NP", "B-VP", "A", "Z"]) == [
        "O", "I-NP", "B-NP", "B-VP", "A", "Z",
    ]


def test_label_inventory_errors():
    with pytest.raises(SscrfError, match="twice"):
        label_inventory([], labels=["O", "O"])
    with pytest.raises(SscrfError, match="strings"):
        label_inventory([], labels=["O", 1])
    with pytest.raises(SscrfError, match=r"sentence 1, token 0: unknown label 'X'"):
        label_inventory([["O"], [{"O", "X"}]], labels=["O"])
    with pytest.raises(SscrfError, match="sentence 0, token 1"):
        label_inventory([["O", 3]])
    with pytest.raises(SscrfError, match="not a string"):
        label_inventory(["OOO"])


# ------------------------------------------------------------------- CoNLL-U

_CONLLU = (
    "# sent_id = 1\n"  # 1
    "# text = Vámonos al mar.\n"  # 2
    "1-2\tVámonos\t_\t_\t_\t_\t_\t_\t_\t_\n"  # 3: range, skipped
    "1\tVamos\tir\tVERB\tV\t_\t0\troot\t_\t_\n"  # 4
    "2\tnos\tnosotros\tPRON\tP\t_\t1\tobj\t_\t_\n"  # 5
    "3-4\tal\t_\t_\t_\t_\t_\t_\t_\t_\n"  # 6: range, skipped
    "3\ta\ta\tADP\tS\t_\t5\tcase\t_\t_\n"  # 7
    "4\tel\tel\tDET\tD\t_\t5\tdet\t_\t_\n"  # 8
    "4.1\tvoy\tir\tVERB\tV\t_\t_\t_\t5:orphan\t_\n"  # 9: empty node, skipped
    "5\tmar\tmar\tNOUN\tN\t_\t1\tobl\t_\tSpaceAfter=No\n"  # 10
    "\n"  # 11
    "# sent_id = 2\n"  # 12
    "1\t# 1\t#\tSYM\t_\t_\t0\troot\t_\t_\n"  # 13: a form with "#" and a space
)


def test_conllu(tmp_path):
    path = write_text(tmp_path, _CONLLU, "x.conllu")
    corpus = read_conllu(path)
    assert corpus.tokens == [[["Vamos"], ["nos"], ["a"], ["el"], ["mar"]], [["# 1"]]]
    assert corpus.labels == [["VERB", "PRON", "ADP", "DET", "NOUN"], ["SYM"]]
    assert corpus.lines == [4, 13]


def test_conllu_columns(tmp_path):
    path = write_text(tmp_path, _CONLLU, "x.conllu")
    corpus = read_conllu(path, label_column="deprel", token_columns=("form", "lemma", "upos"))
    assert corpus.tokens[1] == [["# 1", "#", "SYM"]]
    assert corpus.labels == [["root", "obj", "case", "det", "obl"], ["root"]]
    corpus = read_conllu(path, label_column=None)
    assert corpus.labels is None
    assert corpus.tokens[0][0] == ["Vamos"]
    with pytest.raises(SscrfError, match="unknown CoNLL-U column 'pos'"):
        read_conllu(path, label_column="pos")


def test_conllu_crlf_and_empty(tmp_path):
    path = write_text(tmp_path, _CONLLU.replace("\n", "\r\n"), "x.conllu")
    assert read_conllu(path).labels == [["VERB", "PRON", "ADP", "DET", "NOUN"], ["SYM"]]
    assert read_conllu(write_text(tmp_path, "# only a comment\n\n", "e.conllu")) == ([], [], [])


def test_conllu_sentences_without_blank_lines_between(tmp_path):
    # IDs starting again at 1 end a sentence whose blank line is missing
    # (the two sentences were read as one)
    path = write_text(tmp_path, _CONLLU.replace("\n\n", "\n"), "x.conllu")
    merged, separate = read_conllu(path), read_conllu(write_text(tmp_path, _CONLLU, "y.conllu"))
    assert (merged.tokens, merged.labels) == (separate.tokens, separate.labels)
    assert len(merged.tokens) == 2


def test_conllu_read_as_conll_is_pointed_to_read_conllu(tmp_path):
    path = write_text(tmp_path, _CONLLU, "x.conllu")
    with raises_at(path, 2, "expected 4 columns, found 6 (line 1 has 4); '#' lines are tokens "
                            "in CoNLL files: remove comment or header lines, or read a CoNLL-U "
                            "file with --conllu (read_conllu)"):
        read_conll(path)


def test_conllu_malformed_line(tmp_path):
    # Line 3 has 9 columns (spaces instead of the last tab).
    text = "# c\n1\ta\ta\tX\t_\t_\t0\troot\t_\t_\n2\tb\tb\tX\t_\t_\t1\tdep\t_ _\n"
    path = write_text(tmp_path, text, "bad.conllu")
    with raises_at(path, 3, "expected 10 tab-separated columns, found 9"):
        read_conllu(path)


def test_conllu_bad_id(tmp_path):
    path = write_text(tmp_path, "x\ta\ta\tX\t_\t_\t0\troot\t_\t_\n", "bad.conllu")
    with raises_at(path, 1, "bad ID 'x'"):
        read_conllu(path)


def test_a_first_cell_starting_with_a_byte_order_mark_reads_back(tmp_path):
    path = tmp_path / "bom.conll"
    write_conll(path, [[["\ufeff"], ["b"]]], [[":", "O"]])
    corpus = read_conll(path)
    assert corpus.tokens == [[["\ufeff"], ["b"]]] and corpus.labels == [[":", "O"]]


def test_text_sentences_one_a_line(tmp_path):
    path = tmp_path / "raw.txt"
    path.write_bytes("\ufeffThe cat  sat\n\n  \nOn\tthe mat .\r\nEnd".encode("utf-8"))
    assert list(text_sentences(str(path))) == [["The", "cat", "sat"], ["On", "the", "mat", "."],
                                               ["End"]]
    assert list(text_sentences(io.BytesIO(b"a b\n"))) == [["a", "b"]]
    path.write_bytes(b"fine\nbad \xff byte\n")
    with pytest.raises(SscrfError, match=r"raw.txt:2: cannot decode as utf-8"):
        list(text_sentences(str(path)))


def test_reading_reports_progress_when_verbose(tmp_path, capsys, monkeypatch):
    import sscrf.io
    monkeypatch.setattr(sscrf.io._Reading, "EVERY", 10)  # a report every 10 tokens
    path = tmp_path / "a.txt"
    path.write_text("".join("".join(f"w{i} X\n" for i in range(4)) + "\n" for _ in range(8)))
    read_conll(path)
    assert capsys.readouterr().err == ""  # quiet by default
    corpus = read_conll(path, verbose=True)
    assert sum(map(len, corpus.tokens)) == 32
    lines = capsys.readouterr().err.splitlines()
    # step 1, then (off a terminal) every 10th step, then the total
    assert [re.match(r"reading (.*): ([\d,]+) tokens, [\d,]+ tokens/s, [\d.]+ s$", line).groups()
            for line in lines] == [(str(path), "12"), (str(path), "32")]
    conllu = tmp_path / "a.conllu"
    conllu.write_text("".join("".join(f"{i + 1}\tw\t_\tX\t_\t_\t0\tdep\t_\t_\n"
                                      for i in range(6)) + "\n" for _ in range(3)))
    read_conllu(conllu, verbose=True)
    assert capsys.readouterr().err.splitlines()[-1].startswith(f"reading {conllu}: 18 tokens")
    with open(path, "rb") as f:  # a stream is named as the error messages name it
        read_conll(f, verbose=True)
    assert capsys.readouterr().err.startswith(f"reading {path}: 12 tokens")
