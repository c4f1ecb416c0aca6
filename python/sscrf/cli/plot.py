"""``sscrf plot``: a PNG of a training's loss or of a tagged file's confusions."""

from __future__ import annotations

import argparse
import re
from typing import Any, Optional

from ..errors import SscrfError
from ..io import read_conll
from ..serialization import MAGIC
from ..plot import confusion_matrix, read_training_log, training_loss
from .reading import file_name, load_model, readable, refuse_compiled_corpus

__all__ = ["run"]

#: The line ``sscrf train --dev`` writes after each setting of a search.
_SETTING_LINE = re.compile(r"^setting \d+/\d+: (.*): dev \S+\s*$")


def run(args: argparse.Namespace) -> int:
    """``sscrf plot``: the exit status."""
    if args.what == "loss":
        _loss(args)
    else:
        _confusion(args)
    print(f"wrote {args.output}")
    return 0


def training_names(lines: list[str], record: list[tuple[int, float]]) -> Optional[list[str]]:
    """The setting of each training of a search on --dev (``c2=0.1``), from the
    lines its log reports them on after each training, for the legend; None
    for a log of one training, or whose reports do not match its trainings."""
    settings = [m.group(1) for line in lines for part in line.split("\r")
                for m in [_SETTING_LINE.match(part)] if m]
    runs = 1 + sum(b[0] <= a[0] for a, b in zip(record, record[1:]))
    if runs == 1 or len(settings) not in (runs, runs - 1):
        return None
    # an interrupted search's last training has no report
    return settings + ["(interrupted)"] * (runs - len(settings))


def _loss(args: argparse.Namespace) -> None:
    names = None
    refuse_compiled_corpus(args.file, "a model or a training log",
                           "give a model, or the progress sscrf train wrote on stderr")
    with open(args.file, "rb") as f:
        is_model = f.read(len(MAGIC)) == MAGIC
    if is_model:
        model = load_model(args.file)
        if model.training_.get("history") is None:
            raise SscrfError(
                f"{args.file}: a model file keeps no loss history; plot the progress sscrf "
                f"train writes on stderr instead: 'sscrf train ... 2> train.log', then "
                f"'sscrf plot loss train.log -o {args.output}'")
        record: Any = model
    else:
        with open(args.file, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
        try:
            record = read_training_log(lines)
        except SscrfError as e:
            raise SscrfError(f"{args.file}: neither a model nor a training log: {e}") from None
        names = training_names(lines, record)
    training_loss(record, log=args.log, path=args.output, title=args.title, names=names)


def _confusion(args: argparse.Namespace) -> None:
    corpus = read_conll(readable(args.file), has_labels=False)
    if not corpus.tokens or len(corpus.tokens[0][0]) < 2:
        raise SscrfError(f"{file_name(args.file)}: a tagged file needs the gold label and the "
                         "prediction as its last two columns ('sscrf tag -m MODEL FILE')")
    gold = [[token[-2] for token in sentence] for sentence in corpus.tokens]
    predicted = [[token[-1] for token in sentence] for sentence in corpus.tokens]
    confusion_matrix(gold, predicted, labels=args.labels, normalize=not args.counts,
                     path=args.output, title=args.title)
