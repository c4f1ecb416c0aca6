"""``sscrf represent``: learn word representations from unlabeled text and save them."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Iterator, Optional

from ..errors import SscrfError
from ..inputs import check_not_an_input, check_writable
from ..io import conll_sentences, conllu_indices, conllu_sentences, text_sentences
from ..representations import WordRepresentations
from .options import PROG
from .reading import file_name, readable

__all__ = ["run"]


class _RawSentences:
    """Whitespace-separated words, one sentence a line (blank lines skipped),
    counting the lines of 1, 2 and 3 words: a CoNLL file read as text has
    hardly any others."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.lines = 0
        self.short = [0, 0, 0, 0]  # lines of 1, 2 and 3 words at [1], [2], [3]

    def __iter__(self) -> Iterator[list[str]]:
        for words in text_sentences(readable(self.path)):
            self.lines += 1
            if len(words) <= 3:
                self.short[len(words)] += 1
            yield words

    def conll_hint(self) -> Optional[str]:
        """What to say when 9 lines in 10 or more hold the same 1, 2 or 3 words, as
        a CoNLL file read as text does (None otherwise)."""
        n = max(range(1, 4), key=lambda k: self.short[k])
        if not self.lines or self.short[n] < 0.9 * self.lines:
            return None
        return (f"{self.short[n]} of its {self.lines} lines hold {n} word(s): a CoNLL file (a "
                "token a line) needs --conll, else each line is read as a sentence")


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
                              verbose=not args.quiet, hmm_states=args.hmm_states,
                              hmms=args.hmms, hmm_passes=args.hmm_passes,
                              hmm_support=args.hmm_support,
                              hmm_decoding=args.hmm_decoding)
    sentences = (_conll_sentences(args.text) if args.conll else
                 _conllu_sentences(args.text) if args.conllu else _RawSentences(args.text))
    raw = sentences if isinstance(sentences, _RawSentences) else None
    try:
        rep.fit(sentences)
    except SscrfError as error:
        hint = None if raw is None else raw.conll_hint()
        if hint is not None:
            raise SscrfError(f"{file_name(args.text)}: no word has a context; {hint}") from None
        message = str(error)  # the library names its input "sentences"; this one is a file
        if message.startswith("sentences: "):
            raise SscrfError(f"{file_name(args.text)}: {message[len('sentences: '):]}") from None
        raise
    hint = None if raw is None else raw.conll_hint()
    if hint is not None:
        print(f"{PROG}: warning: {file_name(args.text)}: {hint}", file=sys.stderr)
    rep.save(args.output)
    n_words = len(rep.vocabulary_)
    capped = f" (each at most {n_words}, the words)" if max(rep.clusters) > n_words else ""
    hmms = (f", {len(rep.hmms_)} HMM{'s' if len(rep.hmms_) > 1 else ''} of {rep.hmm_states} "
            f"states" if rep.hmms_ else "")
    print(f"{args.output}: {n_words} words from {rep.n_tokens_} tokens, "
          f"{rep.vectors_.shape[1]} dimensions, clusters at "
          f"{', '.join(map(str, rep.clusters))}{capped}{hmms}, "
          f"{time.perf_counter() - started:.1f} s")
    return 0
