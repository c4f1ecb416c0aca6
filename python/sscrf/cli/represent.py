"""``sscrf represent``: learn word representations from unlabeled text and save them."""

from __future__ import annotations

import argparse
import time
from typing import Iterator

from ..errors import SscrfError
from ..inputs import check_not_an_input, check_writable
from ..io import conll_sentences, conllu_indices, conllu_sentences, text_sentences
from ..representations import WordRepresentations
from .reading import file_name, readable

__all__ = ["run"]


def _raw_sentences(path: str) -> Iterator[list[str]]:
    """Whitespace-separated words, one sentence a line (blank lines skipped)."""
    return text_sentences(readable(path))


def _conll_sentences(path: str) -> Iterator[list[str]]:
    """Column 0 of each sentence of a CoNLL file."""
    for _, tokens, _ in conll_sentences(readable(path), False, False, None, "utf-8"):
        yield [token[0] for token in tokens]


def _conllu_sentences(path: str) -> Iterator[list[str]]:
    """The FORM column of each sentence of a CoNLL-U file."""
    form, _ = conllu_indices(None, ("form",))
    for _, tokens, _ in conllu_sentences(readable(path), form, None, "utf-8"):
        yield [token[0] for token in tokens]


def run(args: argparse.Namespace) -> int:
    """``sscrf represent``: the exit status."""
    started = time.perf_counter()
    if args.output == "-":
        raise SscrfError("-o -: representations are written to a file; give a file name")
    check_writable(args.output)
    check_not_an_input(args.output, (args.text,))
    rep = WordRepresentations(dim=args.dim, cluster_dim=args.cluster_dim,
                              clusters=args.clusters, window=args.window,
                              min_count=args.min_count, max_vocabulary=args.max_vocabulary,
                              random_state=args.seed, n_threads=args.threads,
                              verbose=not args.quiet)
    read = (_conll_sentences if args.conll else _conllu_sentences if args.conllu
            else _raw_sentences)
    sentences = read(args.text)
    rep.fit(sentences)
    rep.save(args.output)
    print(f"{args.output}: {len(rep.vocabulary_)} words from {rep.n_tokens_} tokens, "
          f"{rep.vectors_.shape[1]} dimensions, clusters at "
          f"{', '.join(map(str, rep.clusters))}, {time.perf_counter() - started:.1f} s")
    return 0
