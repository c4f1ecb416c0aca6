"""Reading the files and models that commands take: training files, FILE to tag, MODEL."""

from __future__ import annotations

import argparse
import errno
import os
import re
import sys
import weakref
from typing import Any, Iterable, Iterator, NamedTuple, Optional, Sequence

from ..corpus_file import is_compiled_corpus
from ..errors import SscrfError
from ..inputs import starts_with
from ..io import (
    conll_sentences,
    conllu_indices,
    conllu_sentences,
    gc_paused,
    read_conll,
    read_conllu,
)
from ..features.words import add_word_columns, preset_columns
from ..model import CRF
from ..representations import WordRepresentations, file_digest
from ..serialization import MAGIC as SSCRF_MAGIC

__all__ = ["BATCH_TOKENS", "ToTag", "batches", "file_name", "label_column", "load_model",
           "load_representations", "model_columns", "model_tokens", "no_spaces",
           "read_for_tagging", "read_labeled", "readable", "refuse_binary",
           "refuse_compiled_corpus", "sentences_to_tag"]

# The word representations of each loaded model that reads them (load_model).
_REPRESENTATIONS: "weakref.WeakKeyDictionary[CRF, WordRepresentations]" = (
    weakref.WeakKeyDictionary())


def model_columns(model: CRF, path: str) -> int:
    """Number of token columns the model's templates were trained on."""
    extractor = model.extractor_
    if extractor.templates is None:
        raise SscrfError(f"{path}: the model reads feature dicts, not columns; the command "
                         "line needs a model trained with templates")
    preset = preset_columns(extractor.templates)
    if preset is not None:
        return preset
    record = getattr(model, "representations_", None)
    if record is not None:  # their columns follow the file's
        return record["column"]
    if extractor.n_columns_ is not None:
        return extractor.n_columns_
    return max(extractor.templates.max_column + 1, 1)


def model_tokens(model: Optional[CRF], sentences: list[Any]) -> list[Any]:
    """Sentences of a file's token columns as the model reads them: with the
    derived columns of the ``words`` preset (``--features words``) when the
    model was trained with it, then the cluster columns of its word
    representations (``--representations``)."""
    if model is None:
        return sentences
    if preset_columns(model.extractor_.templates) is not None:
        sentences = [add_word_columns(sentence) for sentence in sentences]
    rep = _REPRESENTATIONS.get(model)
    if rep is not None:
        sentences = [[list(token) + extra for token, extra in
                      zip(sentence, rep.columns([token[0] for token in sentence]))]
                     for sentence in sentences]
    return sentences


def label_column(args: argparse.Namespace) -> str:
    """The CoNLL-U label column of --label-column (refused without --conllu)."""
    if args.label_column is not None and not args.conllu:
        raise SscrfError("--label-column is for CoNLL-U input; add --conllu")
    return args.label_column or "upos"


def read_labeled(path: str, args: argparse.Namespace,
                 labels: Optional[Sequence[str]] = None) -> Any:
    """Tokens and labels of a training file ('-': standard input); returns the ConllCorpus."""
    if args.conllu:
        if getattr(args, "partial", False):
            raise SscrfError("--partial reads label sets from CoNLL column files, not CoNLL-U")
        corpus = read_conllu(readable(path), label_column=label_column(args),
                             token_columns=("form",), verbose=not getattr(args, "quiet", True))
        if labels is not None:
            known = set(labels)
            for s, sentence in enumerate(corpus.labels or []):
                for t, label in enumerate(sentence):
                    if label not in known:
                        raise SscrfError(f"{path}: sentence {s + 1} (from line "
                                         f"{corpus.lines[s]}), token {t + 1}: label {label!r} "
                                         "is not in --labels")
        return corpus
    label_column(args)
    return read_conll(readable(path), labels=labels, label_sets=getattr(args, "partial", False),
                      verbose=not getattr(args, "quiet", True))


# Sentences are tagged this many tokens at a time, so that the memory of
# 'sscrf tag' and 'sscrf eval -m' does not grow with FILE; a batch is still
# work enough for every thread.
BATCH_TOKENS = 1 << 16


def readable(path: str) -> Any:
    """FILE as the readers take it: '-' is standard input, whose bytes are
    read as a file's are (the same line ends, exact lines in decoding errors)."""
    if path == "-":
        if sys.stdin is None:
            raise SscrfError("standard input is closed")
        return getattr(sys.stdin, "buffer", sys.stdin)
    refuse_binary(path)
    return path


def refuse_binary(path: str, wanted: str = "a text file") -> None:
    """Raise SscrfError if ``path`` is one of sscrf's binary files (a compiled
    corpus, a model, word representations) where ``wanted`` is expected: read
    as text, each fails on its first bytes."""
    refuse_compiled_corpus(path, wanted)
    if starts_with(path, SSCRF_MAGIC):
        raise SscrfError(f"{path}: an sscrf model or word-representations file, not {wanted}; "
                         "give the CoNLL or text file")


def refuse_compiled_corpus(path: str, wanted: str = "a text file",
                           advice: str = "give the CoNLL file it was compiled from") -> None:
    """Raise SscrfError if ``path`` is a corpus ``sscrf compile`` wrote where
    ``wanted`` is expected (read as text, it fails on its first bytes)."""
    if is_compiled_corpus(path):
        raise SscrfError(f"{path}: a compiled corpus (sscrf compile), not {wanted}; {advice}")


def file_name(path: str) -> str:
    """FILE as messages name it."""
    return "<stdin>" if path == "-" else path


class ToTag(NamedTuple):
    """A sentence of FILE: what the model reads, what the output shows, and more."""

    tokens: list            # the model's token columns
    shown: list             # the columns written out
    gold: Optional[list]    # the gold labels, when FILE has them
    line: int               # the sentence's first line in FILE
    allowed: Optional[list] = None  # per token, the labels --constraints allows


def sentences_to_tag(path: str, model: CRF, model_path: str, args: argparse.Namespace,
                     need_gold: bool = False) -> Iterator[Any]:
    """FILE's sentences as they are read, as ToTag."""
    if is_compiled_corpus(path):
        raise SscrfError(f"{file_name(path)}: a compiled corpus holds attribute ids, not the "
                         "words this command prints: give the CoNLL file it was compiled from "
                         "(in Python, model.predict(sscrf.CompiledCorpus.open(path)) tags it)")
    expected = model_columns(model, model_path)
    if args.conllu:
        if expected != 1:
            raise SscrfError(f"{model_path}: the model reads {expected} token columns, but "
                             "CoNLL-U input gives one (FORM)")
        columns = conllu_indices(label_column(args), ("form",))
        for lineno, sentence, gold in conllu_sentences(readable(path), *columns, "utf-8"):
            yield ToTag(model_tokens(model, [sentence])[0],
                        [[no_spaces(token[0])] for token in sentence], gold, lineno)
        return
    label_column(args)
    with_gold = None
    for lineno, sentence, _ in conll_sentences(readable(path), False, False, None, "utf-8"):
        if with_gold is None:  # the reader holds every line to the first one's columns
            n_columns = len(sentence[0])
            if n_columns == expected + 1 or (n_columns == expected and not need_gold):
                with_gold = n_columns == expected + 1
            elif need_gold:
                raise SscrfError(f"{file_name(path)}:{lineno}: found {n_columns} columns, "
                                 f"expected {expected + 1} (the model's {expected} token "
                                 "column(s), then the gold label)")
            else:
                raise SscrfError(f"{file_name(path)}:{lineno}: found {n_columns} columns, "
                                 f"expected {expected} (the model's token columns) or "
                                 f"{expected + 1} (a gold label after them)")
        if with_gold:
            tokens = [token[:-1] for token in sentence]
            yield ToTag(model_tokens(model, [tokens])[0], tokens,
                        [token[-1] for token in sentence], lineno)
        else:
            yield ToTag(model_tokens(model, [sentence])[0], sentence, None, lineno)


def batches(items: Iterable[Any]) -> Iterator[list[Any]]:
    """Lists of consecutive ToTag of about BATCH_TOKENS tokens."""
    batch, size = [], 0
    for item in items:
        batch.append(item)
        size += len(item.tokens)
        if size >= BATCH_TOKENS:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def read_for_tagging(path: str, model: CRF, model_path: str, args: argparse.Namespace
                     ) -> tuple[list[Any], list[Any]]:
    """All of FILE's sentences to tag, as model tokens, and their first lines."""
    with gc_paused():
        sentences = list(sentences_to_tag(path, model, model_path, args))
    return [item.tokens for item in sentences], [item.line for item in sentences]


def no_spaces(form: str) -> str:
    """A CoNLL-U FORM as one CoNLL cell."""
    # read_conll splits on ASCII whitespace only, so U+00A0 keeps the cell whole.
    return re.sub(r"[ \t\r\n\f\v]", "\u00a0", form) if form else "_"


def load_model(path: str, threads: Optional[int] = None,
               representations: Optional[str] = None) -> CRF:
    """The model saved at ``path``, with ``threads`` threads when given, and
    the word representations it was trained with, if any (read from where
    training read them, or from ``representations``; their checksum must
    match the model's record)."""
    refuse_compiled_corpus(path, "a model", "give the file sscrf train -m wrote")
    model = CRF.load(path)
    if threads is not None:
        model.n_threads = threads
    record = getattr(model, "representations_", None)
    if record is not None:
        rep = _REPRESENTATIONS[model] = load_representations(
            representations or record["path"], record["sha256"], path,
            recorded=representations is None)
        spec = model.extractor_.vector_spec_
        if spec is not None:
            model.bind_word_vectors(rep.word_vectors(spec["column"], spec["scale"]))
    elif representations is not None:
        raise SscrfError(f"{path}: the model was trained without --representations; "
                         f"{representations} would not be used")
    return model


def load_representations(rep_path: str, sha256: Optional[str] = None,
                         model_path: Optional[str] = None,
                         recorded: bool = False) -> WordRepresentations:
    """The WordRepresentations at ``rep_path``; with ``sha256``, only if the
    file is the one a model (``model_path``) recorded. ``recorded``: the path
    is the one the model recorded, not one the user gave."""
    if sha256 is not None:
        if not os.path.isfile(rep_path):  # its checksum is checked on a regular file only
            if recorded:
                raise SscrfError(f"{model_path}: the model reads the word representations "
                                 f"{rep_path}, which is not there: give their file with "
                                 "--representations REP")
            what = "not a regular file" if os.path.exists(rep_path) else os.strerror(errno.ENOENT)
            raise SscrfError(f"{rep_path}: cannot read word-representations file: {what}")
        if file_digest(rep_path) != sha256:
            raise SscrfError(f"{model_path}: {rep_path} is not the word-representations file "
                             "the model was trained with (its checksum differs): give that "
                             "file with --representations REP, or train again with this one")
    return WordRepresentations.load(rep_path)
