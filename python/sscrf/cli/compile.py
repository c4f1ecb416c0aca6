"""``sscrf compile``: a CoNLL file to a memory-mapped corpus file."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..corpus_file import CompiledCorpus, compile_corpus_file, is_compiled_corpus
from ..errors import SscrfError
from ..features import read_templates
from ..features.words import preset_columns
from ..inputs import check_not_an_input, check_writable
from ..model import CRF
from .options import PROG, program_warnings, warn_partial_like
from .reading import load_model, refuse_binary

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    """``sscrf compile``: the exit status."""
    if args.output == "-":
        raise SscrfError("-o -: a corpus file is memory-mapped, not streamed; give a file name")
    check_writable(args.output)
    check_not_an_input(args.output, (args.file, args.template, args.vocabulary))
    refuse_binary(args.file, "a CoNLL file")
    vocabulary = None
    if args.vocabulary is not None:
        if args.template is not None or args.min_freq != 1 or args.max_features is not None \
                or args.hash_features is not None:
            raise SscrfError("--vocabulary fixes the attributes; --template, --min-freq, "
                             "--max-features and --hash-features go with a vocabulary of "
                             "FILE's own")
        vocabulary = (CompiledCorpus.open(args.vocabulary, validate=False)
                      if is_compiled_corpus(args.vocabulary) else load_model(args.vocabulary))
        _check_columns_of(vocabulary, args.vocabulary)
    templates = "default" if args.template is None else read_templates(args.template)
    with program_warnings(_in_command_terms):
        info = compile_corpus_file(args.file, args.output, templates=templates,
                                   vocabulary=vocabulary, min_freq=args.min_freq,
                                   max_features=args.max_features,
                                   hash_features=args.hash_features, has_labels=args.labeled,
                                   buffer_tokens=args.buffer_tokens, verbose=not args.quiet)
    if args.labeled:
        warn_partial_like(args.file, info["labels"], "a compiled corpus stores each as a label "
                          "of its own: train on the CoNLL file with --partial")
    if info["n_tokens"] == 0:
        print(f"{PROG}: warning: {args.file}: no sentences; {args.output} is an empty corpus",
              file=sys.stderr)
    per_entry = (f" ({info['array_bytes'] / info['nnz']:.2f} per entry besides the vocabulary)"
                 if info["nnz"] else "")
    print(f"{args.output}: {info['n_sentences']:,} sentences, {info['n_tokens']:,} tokens, "
          f"{info['nnz']:,} entries, {info['n_attributes']:,} attributes, "
          f"{info['bytes']:,} bytes{per_entry}, {info['seconds']:.1f} s")
    return 0


def _check_columns_of(vocabulary: Any, path: str) -> None:
    """Refuse a model that reads more than FILE's own columns: those --features
    words derives from the word, or the cluster ids and vectors of
    --representations, which sscrf compile does not add."""
    if not isinstance(vocabulary, CRF):
        return
    adds = [what for what, given in (
        ("--features words", preset_columns(vocabulary.extractor_.templates) is not None),
        ("--representations", getattr(vocabulary, "representations_", None) is not None
         or vocabulary.extractor_.vector_spec_ is not None)) if given]
    if adds:
        raise SscrfError(f"{path}: the model was trained with {' and '.join(adds)}, whose "
                         "columns and features sscrf compile does not add to FILE's; give "
                         "such a model the CoNLL file itself (sscrf train --unlabeled FILE, "
                         "sscrf tag)")


def _in_command_terms(message: str) -> str:
    """The library's advice to Python callers, in the command's terms."""
    return message.replace("has_labels=True (sscrf compile --labeled)", "--labeled")
