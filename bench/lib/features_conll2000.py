"""CoNLL-2000 chunking features: the attributes of CRFsuite's chunking example.

The same attribute strings reach sscrf (as feature dicts, :func:`sscrf_tokens`)
and CRFsuite (as attribute lists, :func:`crfsuite_tokens`), so that both tools
train on identical inputs. Tokens are CoNLL-2000 rows without the label:
``(word, pos)``.
"""

__all__ = ["TEMPLATES", "FIELDS", "sentence_attributes", "sscrf_tokens", "crfsuite_tokens",
           "distinct_attributes", "crfpp_templates", "template_names"]

#: CRFsuite example/chunking.py, in its order: (field, offset) tuples.
TEMPLATES = (
    (("w", -2),),
    (("w", -1),),
    (("w", 0),),
    (("w", 1),),
    (("w", 2),),
    (("w", -1), ("w", 0)),
    (("w", 0), ("w", 1)),
    (("pos", -2),),
    (("pos", -1),),
    (("pos", 0),),
    (("pos", 1),),
    (("pos", 2),),
    (("pos", -2), ("pos", -1)),
    (("pos", -1), ("pos", 0)),
    (("pos", 0), ("pos", 1)),
    (("pos", 1), ("pos", 2)),
    (("pos", -2), ("pos", -1), ("pos", 0)),
    (("pos", -1), ("pos", 0), ("pos", 1)),
    (("pos", 0), ("pos", 1), ("pos", 2)),
)
#: Column of each field in a CoNLL-2000 token (the label column removed).
FIELDS = {"w": 0, "pos": 1}

_COMPILED = [("|".join(f"{f}[{o}]" for f, o in t), [(FIELDS[f], o) for f, o in t])
             for t in TEMPLATES]


def template_names():
    """The attribute name of each template (``w[-1]|w[0]``, ...), in order."""
    return [name for name, _ in _COMPILED]


def sentence_attributes(tokens):
    """Per token, the ``(name, value)`` pairs of the chunking templates.

    Exactly CRFsuite's ``crfutils.apply_templates``: a template whose offsets
    leave the sentence gives nothing at that token; values of several
    offsets are joined with ``|``. ``value`` is None for ``__BOS__`` (first
    token) and ``__EOS__`` (last token).
    """
    n = len(tokens)
    out = [[] for _ in range(n)]
    for name, parts in _COMPILED:
        lo = -min(o for _, o in parts)
        hi = n - max(o for _, o in parts)
        for t in range(max(lo, 0), min(hi, n)):
            out[t].append((name, "|".join([tokens[t + o][c] for c, o in parts])))
    if n:
        out[0].append(("__BOS__", None))
        out[-1].append(("__EOS__", None))
    return out


def sscrf_tokens(tokens):
    """Feature dicts: str values (→ ``name=value`` attributes), True for BOS/EOS."""
    return [{k: (True if v is None else v) for k, v in pairs}
            for pairs in sentence_attributes(tokens)]


def crfsuite_tokens(tokens):
    """Lists of attribute strings, the same strings sscrf forms from the dicts."""
    return [[k if v is None else f"{k}={v}" for k, v in pairs]
            for pairs in sentence_attributes(tokens)]


def distinct_attributes(sentences):
    """Number of distinct attribute strings (tool-independent count)."""
    seen = set()
    for sentence in sentences:
        for pairs in sentence_attributes(sentence):
            seen.update(k if v is None else f"{k}={v}" for k, v in pairs)
    return len(seen)


def crfpp_templates():
    """:data:`TEMPLATES` as CRF++-style template lines (``U00:%x[-2,0]``, ...)."""
    lines = []
    for i, parts in enumerate(TEMPLATES):
        body = "|".join(f"%x[{o},{FIELDS[f]}]" for f, o in parts)
        lines.append(f"U{i:02d}:{body}")
    return lines
