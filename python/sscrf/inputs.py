"""Validation of what users pass in, and label encoding: each check lives here once.

A bad value raises :class:`sscrf.errors.SscrfError`, a value of the wrong
type :class:`sscrf.errors.SscrfTypeError` (see :mod:`sscrf.errors`). The
helpers return the value in the form the caller uses (an ``int`` for an
integer, a list for sentences).

Imports numpy, :mod:`sscrf.errors` and :mod:`sscrf.annotations` (the
annotation types a label list may hold) only.
"""

from __future__ import annotations

import math
import numbers
import os
import stat
from collections.abc import Set
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence

import numpy as np

from .annotations import check_annotation, is_complete, sentence_masks
from .errors import SscrfError, SscrfTypeError

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = [
    "ENTROPY_METHODS",
    "MAX_SAMPLE_WEIGHT",
    "MAX_THREADS",
    "SUM_TOLERANCE",
    "available_cores",
    "check_choice",
    "check_integer",
    "check_label_list",
    "check_labeled",
    "check_not_an_input",
    "check_number",
    "check_positive_number",
    "check_real",
    "check_sample_weight",
    "check_sentences",
    "check_threads",
    "check_unlabeled",
    "check_writable",
    "encode_labels",
    "is_integer",
    "is_number",
    "random_generator",
]

#: How far a distribution (a constraint's target, a GE target row) may sum
#: from 1: hand-written thirds, 0.333333 each, sum to 0.999999.
SUM_TOLERANCE = 1e-4

#: The largest sample weight: weighted losses and gradients must stay finite
#: in float64 (up to 1.8e308), and 1e100 leaves 1e208 for a sentence's loss or
#: gradient entry (a count times a feature value) per unit of weight.
MAX_SAMPLE_WEIGHT = 1e100

#: More threads than cores is fine; far more exhausts the OS.
MAX_THREADS = 1024

#: The gradients of the entropy term: the O(n S²) covariance kernel, or Jiao
#: et al.'s O(n² S³) nested programme (a reference).
ENTROPY_METHODS = ("fast", "jiao")


# -- numbers ---------------------------------------------------------------------------


def is_integer(value: object) -> bool:
    """An integer (numpy's included), not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def is_number(value: object) -> bool:
    """A real number (numpy's included), not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _integer_rule(minimum: Optional[int], maximum: Optional[int]) -> str:
    if minimum == 1 and maximum is None:
        return "a positive integer"
    if maximum is None:
        return "an integer" if minimum is None else f"an integer ≥ {minimum}"
    if minimum is None:
        return f"an integer ≤ {maximum}"
    return f"an integer in [{minimum}, {maximum}]"


def check_integer(value: Any, name: str, minimum: Optional[int] = None,
                  maximum: Optional[int] = None) -> int:
    """``value`` as an ``int``: an integer (not a bool) within [minimum, maximum].

    Raises SscrfTypeError for another type, SscrfError out of range; both
    messages name ``name`` and the value given.
    """
    if not is_integer(value):
        raise SscrfTypeError(f"{name} must be {_integer_rule(minimum, maximum)}, not {value!r}")
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise SscrfError(f"{name} must be {_integer_rule(minimum, maximum)}, not {value!r}")
    return int(value)


def check_number(value: Any, name: str, minimum: Optional[float] = None,
                 maximum: Optional[float] = None) -> float:
    """``value`` as a ``float``: a finite real number (not a bool) within [minimum, maximum]."""
    rule = "a finite number" + (f" ≥ {minimum:g}" if minimum is not None else "") \
        + (f" ≤ {maximum:g}" if maximum is not None else "")
    if not is_number(value):
        raise SscrfTypeError(f"{name} must be {rule}, not {value!r}")
    if (not math.isfinite(value) or (minimum is not None and value < minimum)
            or (maximum is not None and value > maximum)):
        raise SscrfError(f"{name} must be {rule}, not {value!r}")
    return float(value)


def check_positive_number(value: Any, name: str) -> float:
    """``value`` as a ``float``: a finite real number > 0."""
    if not is_number(value):
        raise SscrfTypeError(f"{name} must be a finite number > 0, not {value!r}")
    if not (math.isfinite(value) and value > 0):
        raise SscrfError(f"{name} must be a finite number > 0, not {value!r}")
    return float(value)


def random_generator(random_state: Any, name: str = "random_state") -> np.random.Generator:
    """``numpy.random.default_rng(random_state)``, with a negative integer seed refused
    as SscrfError naming it (numpy says only "expected non-negative integer")."""
    if is_integer(random_state):
        random_state = check_integer(random_state, name, minimum=0)
    try:
        return np.random.default_rng(random_state)
    except (TypeError, ValueError) as e:
        error = SscrfTypeError if isinstance(e, TypeError) else SscrfError
        raise error(f"{name} must be None, an integer ≥ 0 or a numpy Generator, not "
                    f"{random_state!r} ({e})") from None


def check_real(value: Any, name: str) -> Any:
    """SscrfTypeError if ``value`` is a complex array or number, which numpy would cast
    to real with only a ComplexWarning, dropping the imaginary part; else ``value``."""
    try:
        complex_ = value is not None and np.iscomplexobj(value)
    except (TypeError, ValueError):  # ragged: the caller's conversion says what is wrong
        return value
    if complex_:
        raise SscrfTypeError(f"{name} is a complex array; give real values")
    return value


def check_choice(value: Any, name: str, choices: Sequence[str]) -> str:
    """``value`` if it is one of ``choices`` (strings), else SscrfError listing them."""
    if not isinstance(value, str) or value not in choices:
        listed = " or ".join(map(repr, choices)) if len(choices) == 2 else \
            f"one of {tuple(choices)}"
        raise SscrfError(f"{name} must be {listed}, not {value!r}")
    return value


def available_cores() -> int:
    """The CPUs this process may run on (a container or taskset may allow fewer)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return os.cpu_count() or 1


def check_threads(n_threads: Any, allow_none: bool = True) -> int:
    """A thread count as an ``int`` in [1, MAX_THREADS]; None (when allowed) is every core."""
    if n_threads is None and allow_none:
        return available_cores()
    rule = (f"a positive integer (at most {MAX_THREADS})" + (" or None" if allow_none else ""))
    if not is_integer(n_threads):
        raise SscrfTypeError(f"n_threads must be {rule}, not {n_threads!r}")
    if not 1 <= n_threads <= MAX_THREADS:
        raise SscrfError(f"n_threads must be {rule}, not {n_threads!r}")
    return int(n_threads)


# -- files -----------------------------------------------------------------------------


def check_writable(path: Any) -> None:
    """Raise SscrfError now if ``path`` could not be written later (before a long run).

    Refused: an empty name, a folder, a missing or unwritable folder, and a
    read-only file (no write permission bit, or none for this user): it is
    not replaced, as a rename over it would. A path that exists but is no
    regular file (``/dev/stdout``, a pipe) is written in place, so only its
    own permission counts.
    """
    path = os.fsdecode(os.fspath(path))
    if path == "":
        raise SscrfError("the output file name is empty")
    if os.path.isdir(path):
        raise SscrfError(f"{path}: is a directory")
    if os.path.exists(path) and not os.path.isfile(path):
        if not os.access(path, os.W_OK):
            raise SscrfError(f"{path}: cannot write, permission denied")
        return
    directory = os.path.dirname(os.path.realpath(path))
    if not os.path.isdir(directory):
        raise SscrfError(f"{path}: cannot write, folder {directory} does not exist")
    if not os.access(directory, os.W_OK):
        raise SscrfError(f"{path}: cannot write, folder {directory} is not writable")
    if os.path.isfile(path):
        mode = stat.S_IMODE(os.stat(path).st_mode)
        # root may write anything, so the permission bits are read as well
        if not mode & 0o222 or not os.access(path, os.W_OK):
            raise SscrfError(f"{path}: the file is read-only (mode {mode:04o}); it is not "
                             "replaced: make it writable (chmod u+w) or write elsewhere")


def starts_with(path: Any, magic: bytes) -> bool:
    """Whether ``path`` is a regular file that starts with ``magic``. A pipe is
    never one, and is not read: what a look at its first bytes took would be
    missing for the reader that follows."""
    if not os.path.isfile(path):
        return False
    try:
        with open(path, "rb") as f:
            return f.read(len(magic)) == magic
    except OSError:
        return False


def check_not_an_input(output: Any, inputs: Sequence[Any]) -> None:
    """Raise SscrfError if ``output`` is the same file as one of ``inputs`` (through
    symbolic and hard links: :func:`os.path.samefile`), which writing it would destroy.
    ``None`` and ``"-"`` (standard input or output) name no file and are skipped."""
    if output is None or output == "-":
        return
    for path in inputs:
        if path is None or path == "-":
            continue
        try:
            same = os.path.samefile(output, path)
        except (OSError, ValueError):  # either does not exist (yet)
            continue
        if same:
            raise SscrfError(f"{os.fsdecode(os.fspath(output))}: is the input "
                             f"{os.fsdecode(os.fspath(path))}; writing it would destroy the "
                             "input: give another output file")


# -- sentences and labels ----------------------------------------------------------------


def _is_sequence(value: object) -> bool:
    return not isinstance(value, (str, bytes, dict)) and hasattr(value, "__len__")


def check_sentences(X: Any, name: str) -> list[Any]:
    """``X`` as a list of sentences (anything sized but a string or a dict)."""
    if not _is_sequence(X):
        raise SscrfTypeError(f"{name} must be a list of sentences, not {type(X).__name__}")
    return list(X)


def check_unlabeled(X: Any, name: str = "X_unlabeled") -> list[Any]:
    """Unlabeled sentences for training: a list of non-empty token lists."""
    X = check_sentences(X, name)
    for s, sentence in enumerate(X):
        if not _is_sequence(sentence):
            raise SscrfTypeError(f"{name}[{s}] must be a list of tokens")
        if len(sentence) == 0:
            raise SscrfError(f"unlabeled sentence {s} is empty; sentences need at least one token")
    return X


def check_labeled(X: Any, y: Any, allow_empty_sentences: bool = False,
                  allow_empty_corpus: bool = False, partial: bool = False,
                  names: tuple[str, str] = ("X", "y")) -> tuple[list[Any], list[Any]]:
    """``(X, y)`` as lists, one label per token. With ``partial``, a label may also be a
    set of labels or None, and a sentence's labels an :class:`sscrf.annotations.Alternatives`.
    ``names``: what the caller calls X and y, for the messages (``("X_dev", "y_dev")``)."""
    x_name, y_name = names
    X = check_sentences(X, x_name)
    y = check_sentences(y, y_name)
    if len(X) != len(y):
        raise SscrfError(f"{x_name} has {len(X)} sentences but {y_name} has {len(y)}")
    where = "" if names == ("X", "y") else f"{x_name} "
    for s, (xs, ys) in enumerate(zip(X, y)):
        if isinstance(ys, (str, bytes)) or not hasattr(ys, "__len__"):
            raise SscrfTypeError(f"{y_name}[{s}] must be a list of labels, not "
                                 f"{type(ys).__name__}")
        if not hasattr(xs, "__len__") or len(xs) != len(ys):
            raise SscrfError(f"{where}sentence {s}: "
                             f"{len(xs) if hasattr(xs, '__len__') else '?'} tokens "
                             f"but {len(ys)} labels")
        if not allow_empty_sentences and len(xs) == 0:
            raise SscrfError(f"sentence {s} is empty; training sentences need at least one token")
        if is_complete(ys):
            continue
        if partial:
            check_annotation(ys, len(xs), s)
            continue
        for t, label in enumerate(ys):
            if not isinstance(label, str):
                raise SscrfTypeError(f"{where}sentence {s}, token {t}: a label must be a "
                                     f"string, not {type(label).__name__}")
    if not X and not (allow_empty_sentences or allow_empty_corpus):
        raise SscrfError("the training data is empty")
    return X, y


def check_label_list(labels: Any, name: str = "labels") -> list[str]:
    """A list of distinct label strings (a model's label set)."""
    if isinstance(labels, (str, bytes)):
        raise SscrfTypeError(f"{name}= must be a list of label strings, not one string")
    if not hasattr(labels, "__iter__"):
        raise SscrfTypeError(f"{name}= must be a list of label strings, not "
                             f"{type(labels).__name__}")
    if isinstance(labels, Set):  # its order varies from run to run (salted string hashes)
        raise SscrfTypeError(f"{name}= must be an ordered list of label strings, not a "
                             f"{type(labels).__name__}: its order, which would be the model's "
                             f"label order, varies from run to run; give e.g. sorted({name})")
    labels = list(labels)
    if not all(isinstance(label, str) for label in labels):
        raise SscrfTypeError(f"{name} must be distinct strings")
    if len(set(labels)) != len(labels):
        raise SscrfError(f"{name} must be distinct strings")
    return labels


def check_sample_weight(sample_weight: Any, n: int) -> Optional[NDArray[np.float64]]:
    """Per-sentence weights as a float64 array (n,), finite and ≥ 0; None stays None."""
    if sample_weight is None:
        return None
    if isinstance(sample_weight, (str, bytes, dict)):
        raise SscrfTypeError(f"sample_weight must be an array of {n} numbers, "
                             f"not {type(sample_weight).__name__}")
    check_real(sample_weight, "sample_weight")
    try:
        w = np.asarray(sample_weight, dtype=np.float64)
    except (TypeError, ValueError):
        raise SscrfTypeError(f"sample_weight must be an array of {n} numbers") from None
    if w.shape != (n,):
        raise SscrfError(f"sample_weight must have one weight per sentence ({n}), got shape {w.shape}")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise SscrfError("sample_weight must be finite and non-negative")
    if np.any(w > MAX_SAMPLE_WEIGHT):
        raise SscrfError(f"sample_weight {float(w.max()):g} is above {MAX_SAMPLE_WEIGHT:g}: a "
                         "weight multiplies a sentence's loss and gradient, whose squared "
                         "norm must stay finite (the optimum does not change when the weights, "
                         "c1 and c2 are divided by one factor)")
    return w


def encode_labels(y: Sequence[Sequence[Any]], label_index: Mapping[str, int],
                  unknown: str = "error") -> NDArray[np.int32]:
    """Label ids per token (int32, all sentences one after another); −1 where a partial
    annotation allows more than one label. A label outside ``label_index`` raises."""
    out = np.empty(sum(len(s) for s in y), dtype=np.int32)
    k = 0
    for s, seq in enumerate(y):
        if not is_complete(seq):
            singletons = sentence_masks(seq, label_index, f"sentence {s}").singleton_ids()
            out[k:k + len(singletons)] = singletons
            k += len(singletons)
            continue
        ids = [label_index.get(label, -1) for label in seq]
        if -1 in ids:
            t = ids.index(-1)
            raise SscrfError(f"sentence {s}, token {t}: label {seq[t]!r} is not one of the "
                             f"model's labels")
        out[k:k + len(ids)] = ids
        k += len(ids)
    return out


def check_crfsuite_options(algorithm: Any, linesearch: Any, feature_set: Any,
                           all_possible_states: Any, all_possible_transitions: Any) -> None:
    """sklearn-crfsuite's training options, as far as sscrf implements them."""
    if algorithm != "lbfgs":
        raise SscrfError(f"algorithm={algorithm!r} is not supported: sscrf trains "
                         f"by L-BFGS (algorithm='lbfgs'; OWL-QN when c1 > 0); CRFsuite's "
                         f"'l2sgd', 'ap', 'pa' and 'arow' are not implemented")
    if linesearch != "MoreThuente":
        raise SscrfError(f"linesearch={linesearch!r} is not supported: sscrf's line "
                         f"search meets the strong Wolfe conditions as CRFsuite's 'MoreThuente' "
                         f"does (the one accepted value); 'Backtracking' and "
                         f"'StrongBacktracking' are not implemented")
    for name, value in (("all_possible_states", all_possible_states),
                        ("all_possible_transitions", all_possible_transitions)):
        if value not in (None, True, False):
            raise SscrfTypeError(f"{name} must be True, False or None, not {value!r}")
    states = all_possible_states
    if states is not None and feature_set != "auto" \
            and feature_set != ("dense" if states else "observed"):
        raise SscrfError(f"all_possible_states={states} contradicts "
                         f"feature_set={feature_set!r}")
