"""``sscrf eval``: conlleval's report, or per-label token scores as CRFsuite's ``tag -qt``.

Of a tagged file, or of MODEL on FILE.
"""

from __future__ import annotations

import argparse
import sys
from typing import Iterable, Sequence

from ..corpus_file import CompiledCorpus, is_compiled_corpus, labeled_input
from ..errors import SscrfError
from ..io import gc_paused, read_conll
from ..metrics import conlleval_report, format_label_report, label_scores
from .reading import (batches, file_name, label_column, load_model, readable,
                      refuse_compiled_corpus, sentences_to_tag)

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    """``sscrf eval``: the exit status."""
    if args.model is not None and is_compiled_corpus(args.file):
        gold, predicted = _tag_compiled(args)
    elif args.model is not None:
        model = load_model(args.model, args.threads, args.representations)
        gold, predicted = [], []
        sentences = sentences_to_tag(args.file, model, args.model, args, need_gold=True)
        with gc_paused():
            for batch in batches(sentences):
                predicted += model.predict([item.tokens for item in batch])
                gold += [item.gold for item in batch]
    else:
        refuse_compiled_corpus(args.file, "a tagged file", "with -m MODEL, one compiled "
                               "with its labels (sscrf compile --labeled) is scored")
        if args.conllu:
            raise SscrfError("a CoNLL-U file holds no predictions; use --conllu with -m MODEL")
        label_column(args)
        corpus = read_conll(readable(args.file), has_labels=False)
        if corpus.tokens and len(corpus.tokens[0][0]) < 2:
            raise SscrfError(f"{file_name(args.file)}:{corpus.lines[0]}: found 1 column; eval "
                             "needs the gold label and the prediction as the last two columns")
        gold = [[token[-2] for token in sentence] for sentence in corpus.tokens]
        predicted = [[token[-1] for token in sentence] for sentence in corpus.tokens]
    if not any(gold):
        raise SscrfError(f"{file_name(args.file)}: no tokens to evaluate")
    if args.model is None:
        _check_columns_are_labels(gold, predicted, file_name(args.file))
    # Tags such as POS tags are read as chunks too (conlleval splits -LRB- and
    # NN-TL at their first '-'), which gives chunk scores that mean nothing.
    prefixes = "BIES" if args.scheme == "iobes" else "BI"
    odd = sorted({label for sentence in gold for label in sentence if label != "O" and not (
        len(label) > 2 and label[0] in prefixes and label[1] == "-")})
    chunked = any(label != "O" and label not in odd for sentence in gold for label in sentence)
    tokens = args.tokens or (not args.chunks and not chunked)
    if tokens:
        sys.stdout.write(format_label_report(label_scores(gold, predicted)))
    else:
        sys.stdout.write(conlleval_report(gold, predicted, scheme=args.scheme))
    if odd:
        shown = ", ".join(map(repr, odd[:3])) + (", ..." if len(odd) > 3 else "")
        what = ("so the scores are per label; --chunks gives conlleval's report" if tokens
                else "so only the token accuracy is meaningful")
        print(f"(gold labels such as {shown} are not {args.scheme} chunk tags "
              f"({'/'.join(prefixes)}-X or O), {what})")
    return 0


def _tag_compiled(args: argparse.Namespace) -> tuple[list[list[str]], list[list[str]]]:
    """The gold labels a corpus compiled ``--labeled`` stores, and MODEL's predictions."""
    given = [option for option, on in (
        ("--conllu", args.conllu), ("--label-column", args.label_column is not None),
        ("--representations", args.representations is not None)) if on]
    if given:
        raise SscrfError(f"{args.file}: a compiled corpus brings its attributes and labels; "
                         f"{', '.join(given)} {'go' if len(given) > 1 else 'goes'} with a "
                         "CoNLL FILE")
    model = load_model(args.model, args.threads)
    corpus = CompiledCorpus.open(args.file)
    gold = labeled_input(corpus, None, "to score it")
    return gold, model.predict(corpus)


def _check_columns_are_labels(gold: Sequence[Sequence[str]],
                              predicted: Sequence[Sequence[str]], name: str) -> None:
    """Refuse a file whose last two columns share no label: an untagged file
    (a POS column scored against a chunk column) rather than predictions."""
    gold_labels: set[str] = set()
    predicted_labels: set[str] = set()
    for g, p in zip(gold, predicted):
        gold_labels.update(g)
        predicted_labels.update(p)
    if gold_labels.isdisjoint(predicted_labels):
        def some(labels: Iterable[str]) -> str:
            shown = sorted(labels)
            return ", ".join(map(repr, shown[:3])) + (", ..." if len(shown) > 3 else "")
        raise SscrfError(f"{name}: the gold column (next to last: {some(gold_labels)}) and the "
                         f"predicted column (last: {some(predicted_labels)}) share no label; "
                         "is the file tagged? Tag it first ('sscrf tag -m MODEL FILE -o OUT') "
                         "or score it with 'sscrf eval -m MODEL FILE'")
