"""``sscrf select``: rank the sentences of a pool by an active-learning strategy,
and write the chosen sentences and the rest of the pool for the next round."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ..active import NgramModel, select
from ..active.ngram import check_order
from ..errors import SscrfError
from ..inputs import check_not_an_input, check_writable
from ..io import read_conll, read_conllu, write_conll
from .options import PROG, counted
from .reading import (
    file_name,
    label_column,
    load_model,
    model_columns,
    model_tokens,
    no_spaces,
    readable,
)

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    """``sscrf select``: the exit status."""
    check_order(args.order, "--order")
    _check_model_is_not_a_count(args.model)
    if args.model is None and args.strategy not in ("random", "quota_sampling"):
        raise SscrfError(f"--strategy {args.strategy} needs --model")
    if args.per_token and args.strategy not in ("sequence_entropy", "token_entropy"):
        raise SscrfError("--per-token is for --strategy sequence_entropy or token_entropy")
    outputs = [path for path in (args.output, args.rest) if path is not None]
    if len(outputs) == 2 and os.path.abspath(args.output) == os.path.abspath(args.rest):
        raise SscrfError(f"-o and --rest are both {args.output}; give two files")
    for path in outputs:
        check_writable(path)
        check_not_an_input(path, (args.model, args.pool))
    model = load_model(args.model, args.threads, args.representations) if args.model is not None else None
    pool = readable(args.pool)
    if args.conllu:
        corpus = read_conllu(pool, label_column=label_column(args), token_columns=("form",))
        shown = [[[no_spaces(token[0])] for token in sentence] for sentence in corpus.tokens]
    else:
        label_column(args)
        corpus = read_conll(pool, has_labels=False)
        shown = corpus.tokens
    if not corpus.tokens:
        print(f"{PROG}: warning: {file_name(args.pool)}: no sentences in the pool; none is "
              "chosen", file=sys.stderr)
    tokens, lines = _model_tokens(corpus.tokens, corpus.lines, model, args), corpus.lines
    log_q = None
    if args.strategy == "quota_sampling" and tokens:
        first = [[token[0] for token in sentence] for sentence in tokens]
        log_q = NgramModel(n=args.order).fit(first).log_probs(first)
    tokens = model_tokens(model, tokens)
    options = {"width": args.width} if args.strategy == "most_uncertain_span" else {}
    if args.per_token:
        options = ({"normalize": True} if args.strategy == "sequence_entropy"
                   else {"aggregate": "mean"})
    indices, scores = select(model, tokens, args.strategy, args.m, log_q=log_q,
                             random_state=args.seed, **options)
    spans = args.strategy == "most_uncertain_span"
    out = ["sentence\tline\tbegin\tstop\tscore" if spans else "sentence\tline\tscore"]
    for item, score in zip(indices.tolist(), scores.tolist()):
        if spans:
            i, begin, stop = item
            out.append(f"{i}\t{lines[i]}\t{begin}\t{stop}\t{score:.10g}")
        else:
            out.append(f"{item}\t{lines[item]}\t{score:.10g}")
    chosen = [item[0] if spans else item for item in indices.tolist()]
    if corpus.tokens and len(chosen) < args.m:
        print(f"{PROG}: warning: --count {args.m}, but the pool has "
              f"{counted(len(corpus.tokens), 'sentence')}: "
              f"{'all are' if len(chosen) == len(corpus.tokens) else f'{len(chosen)} are'} "
              "chosen", file=sys.stderr)
    if args.output is not None:
        write_conll(args.output, [shown[i] for i in chosen])
    if args.rest is not None:
        taken = set(chosen)
        write_conll(args.rest, [sentence for i, sentence in enumerate(shown) if i not in taken])
    print("\n".join(out))
    return 0


def _check_model_is_not_a_count(model: Any) -> None:
    """'-m 20', the count in sscrf 0.1, now names the model: say so."""
    if model is not None and model.isdigit() and not os.path.exists(model):
        raise SscrfError(f"-m is the model (no file {model!r}); the number of sentences to "
                         f"choose is --count {model}")


def _model_tokens(sentences: list[Any], lines: Any, model: Any, args: argparse.Namespace
                  ) -> list[Any]:
    """The pool's sentences as the model reads them: a gold column after the
    model's token columns is dropped."""
    if model is None or not sentences or args.conllu:
        if model is not None and args.conllu and model_columns(model, args.model) != 1:
            raise SscrfError(f"{args.model}: the model reads "
                             f"{model_columns(model, args.model)} token columns, but CoNLL-U "
                             "input gives one (FORM)")
        return sentences
    expected = model_columns(model, args.model)
    found = len(sentences[0][0])
    if found == expected:
        return sentences
    if found == expected + 1:
        return [[token[:-1] for token in sentence] for sentence in sentences]
    raise SscrfError(f"{file_name(args.pool)}:{lines[0]}: found {found} columns, expected "
                     f"{expected} (the model's token columns) or {expected + 1} (a gold label "
                     "after them)")
