"""What several commands share: the program name, argument types, common options, messages.

Imports argparse and the standard library only, so that building the parser
loads no numpy (see :func:`sscrf.cli.main`).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import warnings
from typing import Callable, Iterable, Iterator

PROG = "sscrf"

#: The strategies of ``sscrf select`` (the names of ``sscrf.active.SELECTORS``).
SELECT_STRATEGIES = ("least_confidence", "most_uncertain_span", "quota_sampling", "random",
                     "sequence_entropy", "token_entropy")


# -- argument types --------------------------------------------------------------

def _integer_at_least(minimum: int, what: str, name: str) -> Callable[[str], int]:
    """An argument type: an integer ≥ ``minimum``, refused as "must be ``what``"."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be {what}, not {value}")
        return value

    parse.__name__ = parse.__qualname__ = name
    return parse


positive_int = _integer_at_least(1, "a positive integer", "positive_int")
non_negative_int = _integer_at_least(0, "an integer ≥ 0", "non_negative_int")


def non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (value >= 0 and value != float("inf")):
        raise argparse.ArgumentTypeError(f"must be a finite number ≥ 0, not {text}")
    return value


def non_negative_floats(text: str) -> list[float]:
    """One number, or several separated by commas: the values of a search on --dev."""
    values = [non_negative_float(part.strip()) for part in text.split(",")]
    if len(set(values)) != len(values):
        raise argparse.ArgumentTypeError(f"a value is repeated in {text!r}")
    return values


def marginals_choice(text: str) -> str:
    """The value of ``sscrf tag --marginals``: ``predicted`` or ``all``. Its value is
    optional, so a FILE right after it is taken for the value: say where FILE goes."""
    if text in ("predicted", "all"):
        return text
    file = text == "-" or os.path.exists(text)
    raise argparse.ArgumentTypeError(
        f"invalid choice: {text!r} (choose from 'predicted', 'all')" + (
            "; FILE goes before --marginals, or after its value ('--marginals predicted "
            "FILE')" if file else ""))


def label_list(text: str) -> list[str]:
    labels = [label.strip() for label in text.split(",")]
    if not all(labels):
        raise argparse.ArgumentTypeError(f"empty label in {text!r}")
    if len(set(labels)) != len(labels):
        raise argparse.ArgumentTypeError(f"a label is repeated in {text!r}")
    return labels


# -- options of several commands --------------------------------------------------

def conllu_options(sub: argparse.ArgumentParser, what: str) -> None:
    """--conllu and --label-column; ``what`` names the file they describe."""
    sub.add_argument("--conllu", action="store_true",
                     help=f"{what} is CoNLL-U: FORM is the token, the label comes from "
                          "--label-column")
    sub.add_argument("--label-column", metavar="NAME", default=None,
                     help="CoNLL-U column holding the label (default: upos); "
                          "one of id form lemma upos xpos feats head deprel deps misc")


def model_threads_option(sub: argparse.ArgumentParser) -> None:
    """--threads for the commands that load a model."""
    sub.add_argument("--threads", type=positive_int, default=None, metavar="N",
                     help="threads (default: the model's setting, every core unless it "
                          "was trained with --threads); results do not depend on it")


def representations_option(sub: argparse.ArgumentParser) -> None:
    """--representations for the commands that load a model."""
    sub.add_argument("--representations", metavar="REP",
                     help="where the word representations the model was trained with are now "
                          "(default: where training read them; the file must be the same)")


def counted(n: int, noun: str) -> str:
    """``"1 sentence"``, ``"2 sentences"``: a count and its noun, plural but for one."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def error(message: object) -> None:
    """Print ``sscrf: error: message`` on stderr."""
    print(f"{PROG}: error: {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def program_warnings(rewrite: Callable[[str], str] = str) -> Iterator[None]:
    """Warnings raised inside, printed as ``sscrf: warning: message`` (each
    through ``rewrite``) on the way out, also when an error or an interrupt
    ends the block (they may explain it)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        finally:
            for w in caught:
                print(f"{PROG}: warning: {rewrite(str(w.message))}", file=sys.stderr)


def warn_partial_like(path: object, labels: Iterable[str], consequence: str) -> None:
    """Warn when ``labels`` (distinct or not) hold ``*`` or ``A|B``, the
    partial-annotation syntax of ``--partial``; ``consequence`` says what
    becomes of them here."""
    partial_like = sorted({label for label in labels if label == "*" or "|" in label})
    if partial_like:
        shown = ", ".join(map(repr, partial_like[:3])) + (", ..." if len(partial_like) > 3 else "")
        print(f"{PROG}: warning: {path}: labels {shown} look like partial annotations (* "
              f"unknown, A|B a set of labels); {consequence}", file=sys.stderr)
