"""Labeled features for generalized expectation (GE) training (Mann & McCallum 2008).

A *constraint* is an input attribute, named as the feature extractor names it
(``w[0]:john`` for a dict token ``{"w[0]": "john"}``, python-crfsuite's
naming; ``U02:john`` for the default templates), with a target distribution over labels: the model's label
distribution, averaged over the unlabeled tokens where the attribute is
present ("fires"; its value is ignored), should match it. A set of
constraints is a plain dict ``{attribute: {label: probability}}``;
:meth:`sscrf.CRF.fit` takes it as ``constraints=``.

Sources of constraints
----------------------
- a dict written by hand, checked by :func:`check_constraints`;
- :func:`majority_constraints`: the paper's heuristic (§5.1) for features
  annotated with their majority label only: 0.99 on the majority label and
  the remaining 0.01 spread uniformly over the other labels;
- :func:`estimate_constraints`: from a few labeled tokens per feature (the
  paper's §5.3 simulation of an annotator who labels isolated occurrences):
  sample up to ``k`` tokens where the attribute fires, without replacement,
  count their labels and smooth the counts additively,
  ``p(l) = (count(l) + α) / (k' + S·α)`` with ``k'`` the tokens sampled and
  ``α = smoothing`` (default 0.1: one sampled token then gives 0.41 to its
  label among 17, ten tokens of one label give 0.86);
- :func:`propose_features`: candidate features per label from labeled data,
  chosen the way the paper's Table 1 was (Haghighi & Klein 2006): for each
  label, the attributes most frequent with that label among those whose
  majority label it is ("top frequency for that label and not higher
  frequency for any other label");
- a plain-text file, :func:`read_constraints` / :func:`write_constraints`.

File format
-----------
UTF-8 text, one constraint per line::

    # comment
    w[0]:john PERSON:0.95 ORG:0.05

The attribute, then one ``LABEL:PROBABILITY`` pair per label with a non-zero
target (absent labels get 0), separated by spaces or tabs. A label ends at its
*last* colon, so labels may contain colons. Blank lines and lines whose
first non-blank character is ``#`` are skipped. Inside attributes and labels
a backslash escapes: ``\\\\`` (backslash), ``\\s`` (space), ``\\t`` (tab),
``\\n``, ``\\r`` and, at the start of an attribute, ``\\#``, so any string
round-trips. Probabilities must be finite numbers in [0, 1] summing to 1
within 1e-4 (TOLERANCE); an attribute may appear once, a label once per line. Errors name
the file and line.

Attributes in the old spelling
------------------------------
Dict features were once named ``w[0]=john``. A constraint, a prototype
prefix or an attribute asked of :func:`attribute_occurrences` written that
way still matches ``w[0]:john`` when no attribute is named ``w[0]=john``
itself (:func:`sscrf.features.dicts.spellings`), so constraint files
written then keep working.

Attributes that never occur in the data
---------------------------------------
They are not an error here (a constraint file is written before the data it
is used with may be known). :meth:`sscrf.CRF.fit` drops a constraint whose
attribute is not in the model's vocabulary, or never fires in the unlabeled
data (no positions, so no model expectation), with a ``UserWarning`` naming
it, and raises only when no constraint is left.
"""

from __future__ import annotations

import math
import os
import re
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional, Union, cast

import numpy as np

from .errors import SscrfError, SscrfTypeError
from .features import FeatureExtractor, default_templates
from .features.dicts import spellings
from .inputs import SUM_TOLERANCE, check_integer, check_label_list, check_number, is_number
from .serialization import replace_file
from .resources import read_bounded

if TYPE_CHECKING:
    from collections.abc import Set as AbstractSet

    from numpy.typing import ArrayLike, NDArray

    from .features.csr import Features

#: ``{attribute: {label: probability}}``.
Constraints = dict[str, dict[str, float]]

__all__ = [
    "TOLERANCE",
    "MAJORITY_PROBABILITY",
    "check_constraints",
    "target_matrix",
    "majority_constraints",
    "estimate_constraints",
    "propose_features",
    "attribute_occurrences",
    "read_constraints",
    "write_constraints",
    "format_constraints",
    "parse_constraints",
]

#: How far a target distribution's sum may be from 1 (rows are then divided
#: by their sum): :data:`sscrf.inputs.SUM_TOLERANCE`.
TOLERANCE = SUM_TOLERANCE

#: The paper's heuristic probability of the majority label (§5.1).
MAJORITY_PROBABILITY = 0.99


# -- validation ---------------------------------------------------------------


def _check_probability(value: Any, where: str) -> float:
    if not is_number(value):
        raise SscrfTypeError(f"{where}: a probability must be a number, not "
                             f"{type(value).__name__}")
    value = float(value)
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise SscrfError(f"{where}: probability {value!r} is not in [0, 1]")
    return value


def _check_distribution(attribute: str, dist: object, known: Optional[AbstractSet[str]],
                        where: str) -> dict[str, float]:
    """A validated copy of one target distribution (values as given)."""
    if not isinstance(dist, Mapping):
        raise SscrfTypeError(f"{where}: the target of {attribute!r} must be a dict "
                             f"{{label: probability}}, not {type(dist).__name__}")
    if not dist:
        raise SscrfError(f"{where}: the target of {attribute!r} is empty")
    out = {}
    for label, p in dist.items():
        if not isinstance(label, str) or not label:
            raise SscrfError(f"{where}: labels must be non-empty strings, not {label!r}")
        if known is not None and label not in known:
            raise SscrfError(f"{where}: label {label!r} of {attribute!r} is not one of the "
                             f"labels ({', '.join(map(repr, known))})")
        out[label] = _check_probability(p, f"{where}, {attribute!r}, label {label!r}")
    total = math.fsum(out.values())
    if abs(total - 1.0) > TOLERANCE:
        raise SscrfError(f"{where}: the target of {attribute!r} sums to {total!r}, not 1 "
                         f"(tolerance {TOLERANCE:g})")
    return out


def check_constraints(constraints: Mapping[str, Mapping[str, float]],
                      labels: Optional[Iterable[str]] = None) -> Constraints:
    """Validate constraints and return a normalised copy.

    Parameters
    ----------
    constraints : dict
        ``{attribute (str): {label (str): probability}}``; labels left out
        have target 0.
    labels : sequence of str or None
        The known labels; None accepts any label.

    Returns
    -------
    dict
        A new dict of new dicts with the same probabilities (as floats),
        labels in the order of ``labels`` when given; :func:`target_matrix`
        divides each row by its sum (within :data:`TOLERANCE` of 1).

    Raises
    ------
    SscrfError
        Not a dict, a non-string attribute or label, an empty distribution,
        a probability that is not a finite number in [0, 1], a sum further
        than TOLERANCE (1e-4) from 1, or a label outside ``labels``.
    """
    if not isinstance(constraints, Mapping):
        raise SscrfTypeError(f"constraints must be a dict {{attribute: {{label: probability}}}}, "
                             f"not {type(constraints).__name__}")
    known = None if labels is None else list(labels)
    known_set = None if known is None else set(known)
    out = {}
    for attribute, dist in constraints.items():
        if not isinstance(attribute, str) or not attribute:
            raise SscrfError(f"constraint attributes must be non-empty strings, not {attribute!r}")
        checked = _check_distribution(attribute, dist, known_set, "constraints")
        if known_set is not None and known is not None:
            checked = {l: checked[l] for l in known if l in checked}  # label order
        out[attribute] = checked
    return out


def target_matrix(constraints: Mapping[str, Mapping[str, float]], labels: Sequence[str]
                  ) -> tuple[list[str], NDArray[np.float64]]:
    """Constraint attributes and their targets as an (M, S) array.

    Parameters
    ----------
    constraints : dict
        Validated by :func:`check_constraints` against ``labels``.
    labels : sequence of str
        Column order.

    Returns
    -------
    attributes : list of str, length M
    targets : ndarray (M, S), rows summing to 1
    """
    constraints = check_constraints(constraints, labels)
    index = {label: i for i, label in enumerate(labels)}
    attributes = list(constraints)
    targets = np.zeros((len(attributes), len(index)))
    for m, attribute in enumerate(attributes):
        for label, p in constraints[attribute].items():
            targets[m, index[label]] = p
    if len(attributes):
        targets /= targets.sum(axis=1, keepdims=True)
    return attributes, targets


def constraint_labels(constraints: Mapping[str, Mapping[str, float]]) -> list[str]:
    """The labels named by constraints, sorted (for a label set without labeled data)."""
    constraints = check_constraints(constraints)
    return sorted({label for dist in constraints.values() for label in dist})


# -- sources ------------------------------------------------------------------


def majority_constraints(majority: Mapping[str, str], labels: Sequence[str],
                         probability: float = MAJORITY_PROBABILITY) -> Constraints:
    """Targets from majority labels by the paper's heuristic (Mann & McCallum 2008, §5.1).

    Parameters
    ----------
    majority : dict
        ``{attribute: label}``.
    labels : sequence of str
        Every label; the remaining ``1 − probability`` is spread uniformly
        over the labels other than the majority one.
    probability : float
        Target of the majority label, in (0, 1]; default 0.99.

    Returns
    -------
    dict
        ``{attribute: {label: probability}}`` over all labels.
    """
    labels = _label_list(labels, ())
    probability = _check_probability(probability, "majority_constraints")
    if probability <= 0:
        raise SscrfError("majority_constraints: probability must be > 0")
    if not isinstance(majority, Mapping):
        raise SscrfTypeError(f"majority must be a dict {{attribute: label}}, not "
                             f"{type(majority).__name__}")
    rest = (1.0 - probability) / (len(labels) - 1) if len(labels) > 1 else 0.0
    out = {}
    for attribute, label in majority.items():
        if not isinstance(attribute, str) or not attribute:
            raise SscrfError(f"constraint attributes must be non-empty strings, not {attribute!r}")
        if label not in labels:
            raise SscrfError(f"majority label {label!r} of {attribute!r} is not one of the labels")
        if len(labels) == 1:
            out[attribute] = {label: 1.0}
        else:
            out[attribute] = {l: (probability if l == label else rest) for l in labels}
    return out


def attribute_occurrences(X: Iterable[Sequence[Any]], attributes: Optional[Iterable[str]] = None,
                          templates: Any = None) -> dict[str, NDArray[np.int64]]:
    """Where attributes fire in a corpus.

    Parameters
    ----------
    X : list of sentences
        Feature-dict tokens (``templates=None``) or column lists.
    attributes : iterable of str or None
        The attributes wanted; None: all.
    templates : None, "default", template text or lines
        As :class:`sscrf.CRF`'s ``templates``.

    Returns
    -------
    dict
        ``{attribute: ndarray of token indices}`` (flat, in corpus order,
        ascending), keyed as ``attributes`` spells them (an old spelling
        such as ``w=john`` finds ``w:john``); an attribute that never fires
        maps to an empty array.
    """
    features, extractor = _extract(X, templates)
    names = cast("list[str]", extractor.attributes_)
    tokens = np.repeat(np.arange(features.n_tokens, dtype=np.int64), np.diff(features.indptr))
    order = np.argsort(features.indices, kind="stable")
    ids_sorted = features.indices[order]
    starts = np.searchsorted(ids_sorted, np.arange(len(names) + 1))
    index = extractor.attribute_index()
    wanted = names if attributes is None else list(attributes)
    out = {}
    for attribute in wanted:
        i = index.get(attribute)
        if i is None:
            out[attribute] = np.zeros(0, dtype=np.int64)
        else:
            out[attribute] = tokens[order[starts[i]:starts[i + 1]]]
    return out


def _extract(X: Iterable[Sequence[Any]], templates: Any) -> tuple[Features, FeatureExtractor]:
    X = list(X)
    if isinstance(templates, str) and templates.strip() == "default":
        n = next((len(token) for sentence in X for token in sentence), 1)
        templates = default_templates(n)
    extractor = FeatureExtractor(templates)
    (features,) = extractor.fit_transform(X)
    return features, extractor


def _flat_labels(X: Iterable[Sequence[Any]], y: Iterable[Sequence[str]]
                 ) -> tuple[list[Sequence[Any]], list[str]]:
    X, y = list(X), list(y)
    if len(X) != len(y):
        raise SscrfError(f"X has {len(X)} sentences but y has {len(y)}")
    flat: list[str] = []
    for s, (xs, ys) in enumerate(zip(X, y)):
        if len(xs) != len(ys):
            raise SscrfError(f"sentence {s}: {len(xs)} tokens but {len(ys)} labels")
        for t, label in enumerate(ys):
            if not isinstance(label, str):
                raise SscrfTypeError(f"sentence {s}, token {t}: a label must be a string")
        flat.extend(ys)
    return X, flat


def _label_list(labels: Optional[Iterable[str]], flat: Iterable[str]) -> list[str]:
    if labels is None:
        labels = sorted(set(flat))
    checked: list[str] = check_label_list(labels)
    if not checked:
        raise SscrfError("labels must be a non-empty list of distinct strings")
    return checked


def estimate_constraints(X: Iterable[Sequence[Any]], y: Iterable[Sequence[str]],
                         attributes: Iterable[str], n_per_feature: int, *,
                         labels: Optional[Sequence[str]] = None, templates: Any = None,
                         smoothing: float = 0.1,
                         seed: Union[int, np.random.Generator, None] = 0,
                         occurrences: Optional[Mapping[str, ArrayLike]] = None) -> Constraints:
    """Targets estimated from a few labeled tokens per feature (Mann & McCallum 2008, §5.3).

    For each attribute, up to ``n_per_feature`` tokens where it fires are
    drawn at random without replacement (all of them when it fires less
    often), their gold labels counted, and the counts smoothed additively:
    ``p(l) = (count(l) + α) / (k + S·α)``, ``k`` the tokens drawn, ``S`` the
    number of labels, ``α = smoothing``.

    Parameters
    ----------
    X, y : labeled sentences (the annotator's source)
    attributes : iterable of str
    n_per_feature : int ≥ 1
    labels : sequence of str or None
        The label set (default: every label in ``y``).
    templates : as :class:`sscrf.CRF`'s ``templates``
    smoothing : float ≥ 0
        α; with 0 a label never sampled gets target 0.
    seed : int or numpy Generator
    occurrences : dict or None
        :func:`attribute_occurrences` of ``X`` for these attributes, to skip
        extracting features again (e.g. for several ``n_per_feature``).

    Returns
    -------
    constraints : dict
        ``{attribute: {label: probability}}`` for the attributes that fire
        at least once in ``X``; the others are left out with a warning.
    """
    check_integer(n_per_feature, "n_per_feature", minimum=1)
    check_number(smoothing, "smoothing", minimum=0)
    X, flat = _flat_labels(X, y)
    labels = _label_list(labels, flat)
    index = {label: i for i, label in enumerate(labels)}
    unknown = sorted(set(flat) - set(index))
    if unknown:
        raise SscrfError(f"labels {unknown} of y are not in labels=")
    gold = np.array([index[l] for l in flat], dtype=np.int64)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    attributes = list(attributes)
    where = (attribute_occurrences(X, attributes, templates) if occurrences is None
             else occurrences)
    out, missing = {}, []
    S = len(labels)
    for attribute in attributes:
        tokens = np.asarray(where.get(attribute, ()), dtype=np.int64)
        if len(tokens) and (tokens.min() < 0 or tokens.max() >= len(gold)):
            raise SscrfError(f"occurrences of {attribute!r} are out of range for X")
        if len(tokens) == 0:
            missing.append(attribute)
            continue
        k = min(int(n_per_feature), len(tokens))
        chosen = rng.choice(tokens, size=k, replace=False) if k < len(tokens) else tokens
        counts = np.bincount(gold[chosen], minlength=S).astype(np.float64)
        p = (counts + smoothing) / (k + S * smoothing)
        out[attribute] = {labels[i]: float(p[i]) for i in range(S) if p[i] > 0}
    if missing:
        warnings.warn(f"{len(missing)} attribute(s) never fire in the labeled data and get no "
                      f"estimate: {', '.join(map(repr, missing[:10]))}"
                      f"{' ...' if len(missing) > 10 else ''}", UserWarning, stacklevel=2)
    return out


def propose_features(X: Iterable[Sequence[Any]], y: Iterable[Sequence[str]], n_per_label: int,
                     *, labels: Optional[Sequence[str]] = None, templates: Any = None,
                     prefix: Optional[str] = None, min_count: int = 1,
                     exclude: Optional[Callable[[str], bool]] = None
                     ) -> dict[str, list[tuple[str, int, int]]]:
    """Candidate labeled features per label, chosen as for the paper's Table 1.

    For each label, the attributes whose majority label (the most frequent
    label at the tokens where the attribute fires; ties go to the label that
    comes first in ``labels``) is that label, ranked by how often they fire
    with it (then by the attribute string), the first ``n_per_label``.

    Parameters
    ----------
    X, y : labeled sentences
    n_per_label : int ≥ 1
    labels : sequence of str or None
        Labels to propose for and tie order (default: sorted labels of ``y``).
    templates : as :class:`sscrf.CRF`'s ``templates``
    prefix : str or None
        Only attributes starting with it (e.g. ``"w[0]:"`` or ``"U02:"``
        for prototype words; the old spelling ``"w[0]="`` also matches
        ``w[0]:`` in dict mode).
    min_count : int
        Only attributes firing at least this often with their majority label.
    exclude : callable or None
        ``exclude(attribute) -> bool`` leaves attributes out (e.g.
        punctuation).

    Returns
    -------
    dict
        ``{label: [(attribute, count with label, count overall), ...]}``,
        best first; a label may get fewer than ``n_per_label`` candidates.
        :func:`majority_constraints` turns ``{a: label}`` into targets.
    """
    check_integer(n_per_label, "n_per_label", minimum=1)
    X, flat = _flat_labels(X, y)
    labels = _label_list(labels, flat)
    index = {label: i for i, label in enumerate(labels)}
    S = len(labels)
    features, extractor = _extract(X, templates)
    names = cast("list[str]", extractor.attributes_)
    gold = np.array([index.get(l, -1) for l in flat], dtype=np.int64)
    token_of_entry = np.repeat(np.arange(features.n_tokens, dtype=np.int64),
                               np.diff(features.indptr))
    entry_label = gold[token_of_entry]
    keep = entry_label >= 0
    A = len(names)
    counts = np.bincount(features.indices[keep].astype(np.int64) * S + entry_label[keep],
                         minlength=A * S).reshape(A, S)
    total = counts.sum(axis=1)
    majority = np.argmax(counts, axis=1)  # first maximum: ties go to the earlier label
    best = counts[np.arange(A), majority]
    ok = best >= max(int(min_count), 1)
    if prefix is not None:
        starts = (tuple(spellings(prefix, extractor.value_separator))
                  if extractor.templates is None else prefix)
        ok &= np.array([a.startswith(starts) for a in names], dtype=bool)
    if exclude is not None:
        ok &= np.array([not exclude(a) for a in names], dtype=bool)
    out = {}
    for l, label in enumerate(labels):
        ids = np.flatnonzero(ok & (majority == l))
        ranked = sorted(ids.tolist(), key=lambda a: (-int(best[a]), names[a]))[:n_per_label]
        out[label] = [(names[a], int(best[a]), int(total[a])) for a in ranked]
    return out


# -- file format --------------------------------------------------------------

_ESCAPES = {"\\": "\\\\", " ": "\\s", "\t": "\\t", "\n": "\\n", "\r": "\\r"}
_UNESCAPES = {"\\": "\\", "s": " ", "t": "\t", "n": "\n", "r": "\r", "#": "#"}
_ESCAPE_RE = re.compile(r"[\\ \t\n\r]")
_FIELD_SEP = re.compile(r"[ \t]+")


def _escape(text: str, leading_hash: bool = False) -> str:
    out = _ESCAPE_RE.sub(lambda m: _ESCAPES[m.group()], text)
    if leading_hash and out.startswith("#"):
        out = "\\" + out
    return out


def _unescape(text: str, where: str) -> str:
    if "\\" not in text:
        return text
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "\\":
            if i + 1 >= len(text) or text[i + 1] not in _UNESCAPES:
                bad = text[i:i + 2]
                raise SscrfError(f"{where}: bad escape {bad!r} (use \\\\, \\s, \\t, \\n, \\r "
                                 "or \\#)")
            out.append(_UNESCAPES[text[i + 1]])
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def format_constraints(constraints: Mapping[str, Mapping[str, float]]) -> str:
    """The file text of constraints (see the module docstring), one line each.

    Probabilities are written with ``repr``, so reading gives the same floats.
    """
    constraints = check_constraints(constraints)
    lines = []
    for attribute, dist in constraints.items():
        pairs = " ".join(f"{_escape(label)}:{p!r}" for label, p in dist.items())
        lines.append(f"{_escape(attribute, leading_hash=True)} {pairs}\n")
    return "".join(lines)


def write_constraints(path: Union[str, os.PathLike[str]],
                      constraints: Mapping[str, Mapping[str, float]]) -> None:
    """Write constraints to a file (UTF-8, the format of the module docstring), through
    :func:`sscrf.serialization.replace_file` (atomic; a read-only file is refused)."""
    text = format_constraints(constraints)
    replace_file(path, lambda f: f.write(text), "w", "utf-8")


def parse_constraints(text: str, labels: Optional[Iterable[str]] = None,
                      source: str = "<constraints>") -> Constraints:
    """Parse the text of a constraint file.

    Parameters
    ----------
    text : str
    labels : sequence of str or None
        Known labels; None accepts any.
    source : str
        Name used in error messages (``source:line: ...``).

    Returns
    -------
    dict
        ``{attribute: {label: probability}}`` in file order.
    """
    known = None if labels is None else set(labels)
    out: Constraints = {}
    first_line: dict[str, int] = {}
    if text.startswith("\ufeff"):
        text = text[1:]  # a byte-order mark (Windows editors write one) is no text
    for lineno, line in enumerate(_lines(text), 1):
        _parse_line(line, lineno, source, known, out, first_line)
    return out


def _lines(text: str) -> list[str]:
    """The lines of ``text``: "\\n", "\\r\\n" and a lone "\\r" (old Mac files) each end one."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _parse_line(line: str, lineno: int, source: str, known: Optional[AbstractSet[str]],
                out: Constraints, first_line: dict[str, int]) -> None:
    where = f"{source}:{lineno}"
    stripped = line.strip(" \t")
    if not stripped or stripped.startswith("#"):
        return
    fields = _FIELD_SEP.split(stripped)
    attribute = _unescape(fields[0], where)
    if len(fields) < 2:
        raise SscrfError(f"{where}: expected 'ATTRIBUTE LABEL:PROBABILITY ...', found only "
                         f"the attribute {attribute!r}")
    if attribute in first_line:
        raise SscrfError(f"{where}: attribute {attribute!r} repeated (first on line "
                         f"{first_line[attribute]})")
    dist = {}
    for field in fields[1:]:
        label_text, colon, number = field.rpartition(":")
        if not colon or not label_text:
            raise SscrfError(f"{where}: expected LABEL:PROBABILITY, found {field!r}")
        label = _unescape(label_text, where)
        try:
            p = float(number)
        except ValueError:
            raise SscrfError(f"{where}: bad probability {number!r} for label {label!r}") from None
        if not math.isfinite(p) or not 0.0 <= p <= 1.0:
            raise SscrfError(f"{where}: probability {number!r} of label {label!r} is not in "
                             "[0, 1]")
        if label in dist:
            raise SscrfError(f"{where}: label {label!r} repeated")
        if known is not None and label not in known:
            raise SscrfError(f"{where}: label {label!r} is not one of the labels")
        dist[label] = p
    total = math.fsum(dist.values())
    if abs(total - 1.0) > TOLERANCE:
        raise SscrfError(f"{where}: probabilities of {attribute!r} sum to {total!r}, not 1 "
                         f"(tolerance {TOLERANCE:g})")
    out[attribute] = dist
    first_line[attribute] = lineno


def read_constraints(path: Union[str, os.PathLike[str]],
                     labels: Optional[Iterable[str]] = None) -> Constraints:
    """Read a constraint file (format in the module docstring).

    Parameters
    ----------
    path : str or os.PathLike
    labels : sequence of str or None
        Known labels; None accepts any.

    Returns
    -------
    dict
        ``{attribute: {label: probability}}`` in file order.

    Raises
    ------
    SscrfError
        ``FILE:LINE: ...`` for a malformed line, a bad escape, a probability
        that is not a number in [0, 1], sums off 1 by more than TOLERANCE, an
        unknown or repeated label, a repeated attribute, or bytes that are
        not UTF-8. OSError when the file cannot be read.
    """
    name = os.fsdecode(path)
    with open(path, "rb") as f:
        data = read_bounded(f, name)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        before = _lines(data[:e.start].decode("utf-8"))  # the text up to the bad byte
        raise SscrfError(f"{name}:{len(before)}: not valid UTF-8 ({e.reason} at byte "
                         f"{len(before[-1].encode('utf-8'))} of the line)") from None
    return parse_constraints(text, labels, source=name)
