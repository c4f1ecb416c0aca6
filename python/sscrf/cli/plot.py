"""``sscrf plot``: a PNG of a training's loss or of a tagged file's confusions."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import SscrfError
from ..io import read_conll
from ..serialization import MAGIC
from ..plot import confusion_matrix, read_training_log, training_loss
from .reading import file_name, load_model, readable

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    """``sscrf plot``: the exit status."""
    if args.what == "loss":
        _loss(args)
    else:
        _confusion(args)
    print(f"wrote {args.output}")
    return 0


def _loss(args: argparse.Namespace) -> None:
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
            try:
                record = read_training_log(f)
            except SscrfError as e:
                raise SscrfError(f"{args.file}: neither a model nor a training log: {e}") from None
    training_loss(record, log=args.log, path=args.output, title=args.title)


def _confusion(args: argparse.Namespace) -> None:
    corpus = read_conll(readable(args.file), has_labels=False)
    if not corpus.tokens or len(corpus.tokens[0][0]) < 2:
        raise SscrfError(f"{file_name(args.file)}: a tagged file needs the gold label and the "
                         "prediction as its last two columns ('sscrf tag -m MODEL FILE')")
    gold = [[token[-2] for token in sentence] for sentence in corpus.tokens]
    predicted = [[token[-1] for token in sentence] for sentence in corpus.tokens]
    confusion_matrix(gold, predicted, labels=args.labels, normalize=not args.counts,
                     path=args.output, title=args.title)
