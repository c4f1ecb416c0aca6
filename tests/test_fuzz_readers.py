"""Hostile files through the text readers (Hypothesis fuzz).

Readers: ``read_conll`` (plain, ``label_sets=True``, ``labels=``,
``has_labels=False``), ``read_conllu``, the template parser
(``parse_templates`` / ``read_templates``, and applying what it accepts) and,
when present, the constraint-file reader (``read_constraints`` /
``parse_constraints``). Inputs: random bytes, random text over each format's
own alphabet, plausible files, and those truncated or with flipped bytes.

Every input must give either a parsed result that keeps the reader's
documented invariants (and writes back to the same result where a writer
exists) or a ``ValueError`` — in practice ``SscrfError`` — naming the file;
a ``UnicodeDecodeError`` leaking out is a failure. Nothing may hang (a
``SIGALRM`` guard turns a hang into a failure) or allocate out of proportion
to the input (``tracemalloc`` peak within ``100 × size + 256 KiB``; applying
templates within ``2000 × template size × tokens + 1 MiB``).

The model-file loader has its own fuzz in ``test_serialization.py``.
"""

import contextlib
import importlib.util
import math
import re
import signal
import tracemalloc

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sscrf import SscrfError
from sscrf.features import FeatureExtractor, Templates, parse_templates, read_templates
from sscrf.io import read_conll, read_conllu, write_conll

HAS_CONSTRAINTS = importlib.util.find_spec("sscrf.constraints") is not None

FUZZ = settings(max_examples=60, deadline=5000,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])

#: Seconds one reader call may take before the test fails as a hang.
HANG_SECONDS = 10
#: Allowed tracemalloc peak per byte of input, and the constant on top.
PER_BYTE, CONSTANT = 100, 256 * 1024

# ---------------------------------------------------------------------------
# Guards
# ---------------------------------------------------------------------------


class _Hang(BaseException):
    pass


@contextlib.contextmanager
def no_hang(what, seconds=HANG_SECONDS):
    def on_alarm(signum, frame):
        raise _Hang(what)

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    except _Hang:
        pytest.fail(f"{what}: still running after {seconds} s")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def outcome(call, name, size, budget=None):
    """Run a reader: its result, or the ValueError it raised (checked).

    ``name`` must appear in an error message (the file, or the source name
    given to a parser); ``size`` bytes of input justify a peak of
    ``budget`` bytes (default ``PER_BYTE * size + CONSTANT``).
    """
    budget = PER_BYTE * size + CONSTANT if budget is None else budget
    # Traced only during the call: tracing Hypothesis itself is slow.
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    tracemalloc.reset_peak()
    before, _ = tracemalloc.get_traced_memory()
    result = error = None
    try:
        with no_hang(f"{name} ({size} bytes)"):
            try:
                result = call()
            except ValueError as e:
                error = e
        _, peak = tracemalloc.get_traced_memory()
    finally:
        if started:
            tracemalloc.stop()
    if error is not None:
        assert not isinstance(error, UnicodeError), f"undecoded bytes leaked out: {error!r}"
        assert isinstance(error, SscrfError), f"{type(error).__name__}: {error}"
        assert name in str(error), f"the message does not name {name!r}: {error}"
    assert peak - before <= budget, (
        f"{name}: peak {peak - before} bytes for {size} bytes of input (budget {budget})")
    return result, error


# ---------------------------------------------------------------------------
# Input strategies
# ---------------------------------------------------------------------------

# Characters that matter to the formats, a few troublemakers (NUL, BOM,
# Unicode line and space separators, a lone surrogate's replacement, C1
# NEL) and ordinary text.
SPECIAL = " \t\r\n\x0b\x0c\x00\x1c\x85\u00a0\u2028\u2029\ufeff#|*:-._%[],\\"
CELL = st.text(st.sampled_from(list("abAB01é中") + list("#|*:-.\\%[],_\u00a0\u2028\x85\x00")),
               min_size=1, max_size=5)
SEP = st.sampled_from([" ", "\t", "  ", " \t ", "\x0b", "\x0c"])
NEWLINE = st.sampled_from(["\n", "\r\n", "\r", "\n\n"])


def _mutate(data, draw):
    """Truncate, flip bytes, or leave alone."""
    how = draw(st.sampled_from(["none", "truncate", "flip", "both"]))
    if how in ("truncate", "both") and data:
        data = data[:draw(st.integers(0, len(data)))]
    if how in ("flip", "both") and data:
        data = bytearray(data)
        for _ in range(draw(st.integers(1, 4))):
            i = draw(st.integers(0, len(data) - 1))
            data[i] ^= draw(st.integers(1, 255))
        data = bytes(data)
    return data


def _encode(text, draw):
    kind = draw(st.sampled_from(["utf-8", "utf-8", "utf-8-sig", "latin-1", "utf-16"]))
    return text.encode(kind, errors="replace")


@st.composite
def conll_bytes(draw):
    """A CoNLL-like file: token lines of cells, blank lines, -DOCSTART-, odd widths."""
    width = draw(st.integers(1, 4))
    lines = []
    for _ in range(draw(st.integers(0, 25))):
        kind = draw(st.sampled_from(["token"] * 6 + ["blank", "docstart", "ragged", "noise"]))
        if kind == "blank":
            lines.append(draw(st.sampled_from(["", " ", "\t", "\x0c"])))
        elif kind == "docstart":
            lines.append("-DOCSTART- -X- O")
        elif kind == "noise":
            lines.append(draw(st.text(st.sampled_from(list(SPECIAL) + ["a", "é"]), max_size=8)))
        else:
            n = width if kind == "token" else draw(st.integers(1, 6))
            cells = draw(st.lists(CELL, min_size=n, max_size=n))
            seps = draw(st.lists(SEP, min_size=n, max_size=n))
            lead = draw(st.sampled_from(["", "", " ", "\t"]))
            lines.append(lead + "".join(c + s for c, s in zip(cells, seps)).rstrip(" \t\x0b\x0c"))
    text = "".join(line + draw(NEWLINE) for line in lines)
    return _mutate(_encode(text, draw), draw)


@st.composite
def conllu_bytes(draw):
    lines = []
    for _ in range(draw(st.integers(0, 20))):
        kind = draw(st.sampled_from(["word"] * 5 + ["range", "empty", "comment", "blank",
                                                    "bad"]))
        if kind == "blank":
            lines.append("")
        elif kind == "comment":
            lines.append("# " + draw(st.text(max_size=10)).replace("\n", " "))
        else:
            wid = {"word": draw(st.integers(0, 99)).__str__(),
                   "range": f"{draw(st.integers(1, 9))}-{draw(st.integers(1, 9))}",
                   "empty": f"{draw(st.integers(0, 9))}.{draw(st.integers(1, 9))}",
                   "bad": draw(st.text(st.sampled_from(list("0123456789.-ax ")), max_size=4))}[kind]
            n = 9 if kind != "bad" else draw(st.integers(0, 12))
            cols = draw(st.lists(st.text(st.sampled_from(list("ab _é#\u00a0\u2028")), max_size=4),
                                 min_size=n, max_size=n))
            lines.append("\t".join([wid] + cols))
    text = "".join(line + draw(NEWLINE) for line in lines)
    return _mutate(_encode(text, draw), draw)


# Macro numbers as text: small, large, past int64, and past Python's
# 4300-digit int() limit.
_OFFSET = st.one_of(st.integers(-3, 3), st.integers(-(2**70), 2**70),
                    st.sampled_from([10**6, -(10**9), 2**63])).map(str) | st.just("9" * 4400)
_COLUMN = st.one_of(st.integers(0, 3), st.integers(-5, 2**40)).map(str) | st.just("1" * 4400)


@st.composite
def template_text(draw):
    lines = []
    for _ in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["U"] * 5 + ["B", "comment", "blank", "noise"]))
        if kind == "U":
            pieces = [draw(st.sampled_from(["U", "U0", "U01:", "U%", "u"]))]
            for _ in range(draw(st.integers(0, 3))):
                if draw(st.booleans()):
                    pieces.append(f"%x[{draw(_OFFSET)},{draw(_COLUMN)}]")
                else:
                    pieces.append(draw(st.text(st.sampled_from(list("ab/:_%x[],-+0 é")),
                                               max_size=4)))
            lines.append("".join(pieces))
        elif kind == "B":
            lines.append(draw(st.sampled_from(["B", "B01", "B:%x[0,0]"])))
        elif kind == "comment":
            lines.append("# " + draw(st.text(max_size=6)))
        elif kind == "blank":
            lines.append(draw(st.sampled_from(["", "  ", "\t"])))
        else:
            lines.append(draw(st.text(max_size=10)))
    return "".join(line + draw(NEWLINE) for line in lines)


@st.composite
def constraint_bytes(draw):
    lines = []
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["ok"] * 4 + ["comment", "blank", "noise", "bad"]))
        if kind == "comment":
            lines.append("  # " + draw(st.text(max_size=6)))
        elif kind == "blank":
            lines.append("")
        elif kind == "noise":
            lines.append(draw(st.text(st.sampled_from(list(SPECIAL) + ["a", "1", "e"]),
                                      max_size=12)))
        else:
            attribute = draw(st.text(st.sampled_from(list("aw[0]=é#\\s:")), min_size=1,
                                     max_size=6))
            k = draw(st.integers(1, 3))
            labels = draw(st.lists(st.text(st.sampled_from(list("ABC:\\s")), min_size=1,
                                           max_size=3), min_size=k, max_size=k))
            if kind == "ok":
                probabilities = [repr(1.0 / k)] * k
            else:
                probabilities = [draw(st.sampled_from(["0.5", "1", "nan", "inf", "-0", "1e309",
                                                       "2", "x", "", "0x1", "1" * 5000]))
                                 for _ in range(k)]
            sep = draw(SEP)
            lines.append(attribute + sep + sep.join(f"{l}:{p}" for l, p in
                                                    zip(labels, probabilities)))
    text = "".join(line + draw(NEWLINE) for line in lines)
    return _mutate(_encode(text, draw), draw)


RANDOM_BYTES = st.binary(max_size=600)


def write(tmp_path, data, name):
    path = tmp_path / name
    path.write_bytes(data)
    return path


# ---------------------------------------------------------------------------
# CoNLL
# ---------------------------------------------------------------------------

_WHITESPACE = set(" \t\r\n\x0b\x0c")


def check_conll(corpus, has_labels, label_sets, labels):
    tokens, sentence_labels, lines = corpus
    assert len(tokens) == len(lines)
    assert lines == sorted(set(lines)) and all(line >= 1 for line in lines)
    widths = set()
    for s, sentence in enumerate(tokens):
        assert sentence, "an empty sentence came out"
        for columns in sentence:
            widths.add(len(columns))
            for cell in columns:
                assert cell and not (set(cell) & _WHITESPACE), repr(cell)
        assert sentence[0][0] != "-DOCSTART-"
    assert len(widths) <= 1, f"token lines of different widths: {widths}"
    if not has_labels:
        assert sentence_labels is None
        return
    assert len(sentence_labels) == len(tokens)
    for sentence, seq in zip(tokens, sentence_labels):
        assert len(seq) == len(sentence)
        for label in seq:
            if label is None:
                assert label_sets
                continue
            members = [label] if isinstance(label, str) else sorted(label)
            if not isinstance(label, str):
                assert label_sets and isinstance(label, frozenset) and len(label) >= 2
            for m in members:
                assert m and not (set(m) & _WHITESPACE)
                if label_sets:
                    assert m != "*" and ("|" not in m)
                if labels is not None:
                    assert m in labels


def read_and_check(tmp_path, data, **options):
    path = write(tmp_path, data, "fuzz.conll")
    corpus, error = outcome(lambda: read_conll(path, **options), str(path), len(data))
    if corpus is None:
        return None
    has_labels = options.get("has_labels", True)
    label_sets = options.get("label_sets", False)
    check_conll(corpus, has_labels, label_sets, options.get("labels"))
    # What was read writes back to the same corpus.
    again = write(tmp_path, b"", "again.conll")
    write_conll(again, corpus.tokens, corpus.labels if has_labels else None)
    reread = read_conll(again, **options)
    assert reread.tokens == corpus.tokens and reread.labels == corpus.labels
    return corpus


@FUZZ
@given(data=st.one_of(conll_bytes(), RANDOM_BYTES))
@example(data=b"a O\nb O\n\nc\xe9 O\n")
@example(data=b"\xef\xbb\xbfa O\r\nb\x85c O\r\n")
@example(data=b"-DOCSTART- -X- O\n\na\x0bO\n")
def test_read_conll(tmp_path, data):
    read_and_check(tmp_path, data)


@FUZZ
@given(data=st.one_of(conll_bytes(), RANDOM_BYTES))
@example(data=b"a A|B|A\nb *\nc |\n")
def test_read_conll_label_sets(tmp_path, data):
    read_and_check(tmp_path, data, label_sets=True)
    read_and_check(tmp_path, data, label_sets=True, labels=["a", "A", "B", "O", "#", "*"])


@FUZZ
@given(data=st.one_of(conll_bytes(), RANDOM_BYTES))
@example(data="a\u00a0b c\n\x1cd e\u3000f\n\n\u2028 \x85\n".encode())
def test_read_conll_without_labels(tmp_path, data):
    corpus = read_and_check(tmp_path, data, has_labels=False)
    if corpus is not None:
        assert corpus.tokens == reference_columns(data.decode("utf-8"))


def reference_columns(text):
    """The sentences of a decodable CoNLL file, by the documented rules
    spelled out one character at a time: lines end at "\\n" after any run of
    "\\r" (tools that write "\\r\\r\\n" mean one line end) or at a lone
    "\\r"; columns are separated by runs of the five ASCII spaces only
    (U+00A0, U+2028, U+0085, \\x1c... are characters of a cell, which
    str.split() would split on); a blank line or -DOCSTART- ends a sentence."""
    if text.startswith("\ufeff"):
        text = text[1:]
    sentences, sentence = [], []
    for line in re.sub("\r+\n", "\n", text).replace("\r", "\n").split("\n"):
        columns, cell = [], ""
        for ch in line:
            if ch in " \t\r\x0b\x0c":
                if cell:
                    columns.append(cell)
                cell = ""
            else:
                cell += ch
        if cell:
            columns.append(cell)
        if not columns or columns[0] == "-DOCSTART-":
            if sentence:
                sentences.append(sentence)
            sentence = []
        else:
            sentence.append(columns)
    if sentence:
        sentences.append(sentence)
    return sentences


def test_read_conll_memory_is_proportional_on_a_larger_file(tmp_path):
    # Tiny sentences are the worst case for per-byte overhead (a list per
    # sentence, per token and per label).
    for unit in (b"a\n\n", b"a b\n\n", "\u0100 \u0101\n\n".encode(), b"a b c d\n"):
        data = unit * (20_000 // len(unit))
        for options in ({"has_labels": False}, {}, {"label_sets": True}):
            if options.get("has_labels", True) and unit == b"a\n\n":
                continue
            path = write(tmp_path, data, "big.conll")
            corpus, error = outcome(lambda: read_conll(path, **options), str(path), len(data))
            assert error is None and corpus.tokens


# ---------------------------------------------------------------------------
# CoNLL-U
# ---------------------------------------------------------------------------


@FUZZ
@given(data=st.one_of(conllu_bytes(), RANDOM_BYTES),
       options=st.sampled_from([{}, {"label_column": None},
                                {"token_columns": ("form", "upos"), "label_column": "deprel"}]))
@example(data=b"1\ta\ta\tX\t_\t_\t0\troot\t_\t_\n1-2\t_\t_\t_\t_\t_\t_\t_\t_\t_\n\xff\n",
         options={})
def test_read_conllu(tmp_path, data, options):
    path = write(tmp_path, data, "fuzz.conllu")
    corpus, _ = outcome(lambda: read_conllu(path, **options), str(path), len(data))
    if corpus is None:
        return
    tokens, labels, lines = corpus
    assert len(tokens) == len(lines) and lines == sorted(set(lines))
    width = len(options.get("token_columns", ("form",)))
    for sentence in tokens:
        assert sentence and all(len(columns) == width for columns in sentence)
    if options.get("label_column", "upos") is None:
        assert labels is None
    else:
        assert [len(s) for s in labels] == [len(s) for s in tokens]


# ---------------------------------------------------------------------------
# Templates
# ---------------------------------------------------------------------------


def apply_templates(templates, text_size):
    """Extract with parsed templates from a short sentence, within a budget."""
    width = templates.max_column + 1
    if width > 64:
        sentence = [["c0"]] * 3  # too few columns: must be a clean error
    else:
        sentence = [[f"c{c}t{t}" for c in range(max(width, 1))] for t in range(3)]
    budget = 2000 * text_size * len(sentence) + 1024 * 1024
    fx = FeatureExtractor(templates)
    result, error = outcome(lambda: fx.fit_transform([sentence]), "column", text_size, budget)
    if error is None:
        (features,) = result
        assert features.n_tokens == 3 and features.nnz <= 3 * len(templates)


@FUZZ
@given(text=st.one_of(template_text(), st.text(max_size=200)))
@example(text="U00:%x[-1000000000,0]\n")
@example(text="U00:%x[0," + "1" * 5000 + "]\n")
@example(text="U00:%x[\u0663,0]/%x[0,\u0661]\n")
def test_parse_templates(text):
    templates, _ = outcome(lambda: parse_templates(text, source="<fuzz>"), "<fuzz>",
                           len(text.encode("utf-8", "surrogatepass")))
    if templates is None:
        return
    assert isinstance(templates, Templates) and len(templates) >= 1
    for pieces in templates.unigrams:
        for piece in pieces:
            assert type(piece) is str or (type(piece) is tuple and piece[1] >= 0)
    assert parse_templates(templates.text) == templates  # text round trip
    apply_templates(templates, len(text.encode("utf-8", "surrogatepass")))


@FUZZ
@given(data=st.one_of(template_text().map(lambda t: t.encode("utf-8")), RANDOM_BYTES)
       .flatmap(lambda d: st.sampled_from([d, d[:len(d) // 2], d + b"\xff"])))
@example(data=b"U00:%x[-1,0]\nU01:%x[0," + b"7" * 4400 + b"]\n")
@example(data=b"U00:%x[0,0]\n\xff\xfe\n")
def test_read_templates(tmp_path, data):
    path = write(tmp_path, data, "fuzz.tpl")
    outcome(lambda: read_templates(path), str(path), len(data))


# ---------------------------------------------------------------------------
# Constraint files
# ---------------------------------------------------------------------------

needs_constraints = pytest.mark.skipif(not HAS_CONSTRAINTS, reason="no sscrf.constraints")


@needs_constraints
@FUZZ
@given(data=st.one_of(constraint_bytes(), RANDOM_BYTES),
       labels=st.sampled_from([None, ["A", "B", "C"], ["A"]]))
@example(data=b"w[0]=john PERSON:0.95 ORG:0.05\n\xff\n", labels=None)
@example(data=b"\xef\xbb\xbf# c\r\n\\#a\\sb A:0.5\tB:0.5\r\n", labels=["A", "B"])
def test_read_constraints(tmp_path, data, labels):
    from sscrf.constraints import format_constraints, parse_constraints, read_constraints

    path = write(tmp_path, data, "fuzz.constraints")
    got, _ = outcome(lambda: read_constraints(path, labels=labels), str(path), len(data))
    if got is None:
        return
    for attribute, dist in got.items():
        assert isinstance(attribute, str) and attribute and dist
        for label, p in dist.items():
            assert isinstance(label, str) and label and 0.0 <= p <= 1.0
            assert labels is None or label in labels
        assert abs(math.fsum(dist.values()) - 1.0) <= 1e-6
    # what was read formats and parses back (probabilities renormalised)
    back = parse_constraints(format_constraints(got), labels=labels)
    assert list(back) == list(got)
    for attribute in got:
        assert back[attribute] == pytest.approx(got[attribute], abs=1e-9)


@needs_constraints
@FUZZ
@given(text=st.one_of(constraint_bytes().map(lambda d: d.decode("utf-8", "replace")),
                      st.text(max_size=200)))
def test_parse_constraints(text):
    from sscrf.constraints import parse_constraints

    outcome(lambda: parse_constraints(text, source="<fuzz>"), "<fuzz>",
            len(text.encode("utf-8", "surrogatepass")))
