"""``sscrf train``: read a labeled file (and unlabeled text, GE constraints), fit, save."""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Optional, Sequence

from ..constraints import read_constraints
from ..corpus_file import CompiledCorpus, is_compiled_corpus
from ..errors import SscrfError
from ..features import default_templates, parse_templates, read_templates
from ..features.words import WORD_COLUMNS, add_word_columns, preset_columns, word_templates
from ..fit_callbacks import scoring_text
from ..inputs import check_not_an_input, check_writable
from ..io import gc_paused, read_conll
from ..model import CRF
from ..optim import STOP_CALLBACK, STOP_INTERRUPTED
from .options import PROG, counted, error, program_warnings, warn_partial_like
from .reading import load_model, load_representations, read_labeled, readable
from ..representations import DEFAULT_VECTOR_SCALE, file_digest
from ..selection import select_hyperparameters

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    """``sscrf train``: the exit status."""
    started = time.perf_counter()
    if args.model == "-":
        raise SscrfError("-m -: a model is written to a file, not to standard output; give "
                         "a file name")
    check_writable(args.model)
    check_not_an_input(args.model, (args.train, args.template, args.unlabeled,
                                    args.constraints, args.representations, args.dev))
    piped = [name for name, path in (("TRAIN", args.train), ("--unlabeled", args.unlabeled),
                                     ("--dev", args.dev)) if path == "-"]
    if len(piped) > 1:
        raise SscrfError(f"{' and '.join(piped)} are both '-': standard input can be read once; "
                         "give a file name to all but one")
    grid = _search_grid(args)
    if is_compiled_corpus(args.train):
        return _train_compiled(args, grid, started)
    templates: Any = "default"
    if args.template is not None:
        templates = read_templates(args.template)
    if args.features == "words" and args.template is not None:
        raise SscrfError("--features words is a template set of its own; give it or "
                         "--template, not both")
    init = None
    if args.init is not None:  # the previous round's model: its weights, and its templates
        init = load_model(args.init)
        if args.template is None and init.extractor_.templates is not None:
            templates = init.extractor_.templates
    constraints = _read_ge_constraints(args)
    corpus = read_labeled(args.train, args, labels=args.labels)
    if not (args.partial or args.conllu):
        if corpus.tokens and all(len(t) == 9 and t[0] == str(i + 1)
                                 for i, t in enumerate(corpus.tokens[0][:3])):
            print(f"{PROG}: warning: {args.train}: the tokens look like CoNLL-U lines (ID and 8 "
                  "more columns before the label): read it with --conllu", file=sys.stderr)
        warn_partial_like(args.train, (label for sentence in corpus.labels for label in sentence),
                          "without --partial each is a label of its own")
    if not corpus.tokens and constraints is None:
        raise SscrfError(f"{args.train}: no sentences to train on")
    unlabeled = compiled = None
    _check_unlabeled_terms(args, constraints)
    if args.unlabeled is not None:
        if is_compiled_corpus(args.unlabeled):  # it brings its templates and vocabulary
            if args.template is not None or args.features == "words" or args.init is not None:
                raise SscrfError(f"{args.unlabeled}: a compiled corpus brings its templates and "
                                 "vocabulary; --template, --features words and --init go with "
                                 "a CoNLL --unlabeled file")
            compiled = CompiledCorpus.open(args.unlabeled)
        else:
            unlabeled = read_conll(readable(args.unlabeled), has_labels=False,
                                   verbose=not args.quiet).tokens
    columns_from = args.train if corpus.tokens else args.unlabeled
    if not (corpus.tokens or unlabeled or compiled):
        raise SscrfError(f"{args.train}: no sentences to train on, and {args.unlabeled} has "
                         "none either")
    n_columns = min((len(token) for sentence in corpus.tokens or unlabeled or []
                     for token in sentence), default=1)
    words = (args.features == "words" and args.template is None) or (
        not isinstance(templates, str) and preset_columns(templates) is not None)
    if words:  # the preset's derived columns after the file's token columns
        templates = word_templates(n_columns) if args.features == "words" else templates
        if preset_columns(templates) != n_columns:
            raise SscrfError(f"{args.init}: the model reads {preset_columns(templates)} token "
                             f"column(s), {columns_from} has {n_columns}")
    rep = None
    if args.representations is not None or getattr(init, "representations_", None):
        rep, templates, record = _representations(args, init, templates, n_columns, words)
    n_rep = 0 if rep is None else record["columns"]
    if args.template is not None and templates.max_column >= n_columns + n_rep:
        source = next(src for src, pieces in zip(templates.sources, templates.unigrams)
                      if any(type(p) is tuple and p[1] >= n_columns for p in pieces))
        raise SscrfError(f"{args.template}: template {source!r} reads column "
                         f"{templates.max_column}, but {columns_from} has {n_columns} token "
                         "column(s) (numbered from 0; the label column is not one)"
                         + (f" and --representations adds {n_rep}" if n_rep else ""))
    if unlabeled is not None:
        unlabeled = _token_columns(unlabeled, n_columns, args.unlabeled, "", args.train)
    if (args.labels is None and constraints is None
            and not any(label is not None for seq in corpus.labels for label in seq)):
        raise SscrfError(f"{args.train}: no token has a label; give the label set with "
                         "--labels A,B,...")
    if words:
        with gc_paused():
            corpus = corpus._replace(tokens=[add_word_columns([t[:n_columns] for t in s])
                                             for s in corpus.tokens])
            if unlabeled is not None:
                unlabeled = [add_word_columns(s) for s in unlabeled]
    if rep is not None:
        with gc_paused():
            corpus = corpus._replace(tokens=_with_columns(corpus.tokens, rep))
            if unlabeled is not None:
                unlabeled = _with_columns(unlabeled, rep)
    dev = _read_dev(args, n_columns, words, rep)
    if args.template is not None and not any(line.strip()[:1] == "B"
                                             for line in templates.lines):
        print(f"{PROG}: warning: {args.template}: no 'B' line; sscrf trains label "
              "transitions all the same (CRF++ would train none without one)", file=sys.stderr)
    vectors = _word_vectors(args, init, rep)
    model = CRF(c1=args.c1, c2=args.c2, max_iterations=args.max_iterations,
                n_threads=args.threads,
                feature_set=args.feature_set, labels=args.labels, templates=templates,
                min_freq=args.min_freq, max_features=args.max_features,
                hash_features=args.hash_features, entropy_weight=args.entropy_weight,
                entropy_method=args.entropy_method, ge_weight=args.ge_weight,
                ge_penalty=args.ge_penalty, proportion_weight=args.proportion_weight,
                dev_period=args.dev_period, word_vectors=vectors, verbose=not args.quiet)
    fitted = _fit(model, args, grid, dev, corpus.tokens, corpus.labels,
                  X_unlabeled=unlabeled if compiled is None else compiled,
                  constraints=constraints, init=init)
    if fitted is None:
        return 130
    if rep is not None:
        fitted.representations_ = record
    fitted.save(args.model)
    read = unlabeled if compiled is None else compiled
    return _report(args, fitted, len(corpus.tokens), sum(map(len, corpus.labels)),
                   None if read is None else len(read), constraints is not None, grid,
                   started)


def _report(args: argparse.Namespace, model: CRF, n_sentences: int, n_tokens: int,
            n_unlabeled: Optional[int], ge: bool, grid: dict[str, list[float]],
            started: float) -> int:
    """The one-line summary of a saved model's training; the exit status."""
    training = model.training_
    ge_note = f", {counted(len(model.constraints_), 'constraint')}" if ge else ""
    unlabeled_note = ("" if n_unlabeled is None
                      else f", {counted(n_unlabeled, 'unlabeled sentence')}")
    iterations = f"{counted(training['iterations'], 'iteration')} ({training['stop_reason']})"
    warm = training.get("stages", {}).get("supervised")
    if warm is not None and warm["stop_reason"] in (STOP_INTERRUPTED, STOP_CALLBACK):
        iterations = (f"{counted(warm['iterations'], 'iteration')} (supervised warm start, "
                      f"{warm['stop_reason']}; the second stage did not run)")
    elif warm is not None:  # two stages: the supervised warm start, then the full objective
        iterations = (f"{warm['iterations']} + {training['iterations']} iterations (supervised "
                      f"warm start, then {training['stop_reason']})")
    print(f"{args.model}: {counted(n_sentences, 'sentence')}, {counted(n_tokens, 'token')}"
          f"{unlabeled_note}, {counted(len(model.classes_), 'label')}{ge_note}, "
          f"{counted(model.n_parameters_, 'parameter')}"
          f"{f' ({model.n_active_features_} state weights not 0)' if model.c1 > 0 else ''}, "
          f"{iterations}{_dev_note(model, grid)}, {time.perf_counter() - started:.1f} s")
    if training["stop_reason"] == STOP_INTERRUPTED:
        error(f"interrupted: {args.model} holds the best model so far, not a finished training")
        return 130
    return 0


def _train_compiled(args: argparse.Namespace, grid: dict[str, list[float]], started: float
                    ) -> int:
    """``sscrf train`` on a corpus compiled with its labels (``sscrf compile
    --labeled``): the corpus brings its templates, vocabulary and labels."""
    fixed = [option for option, given in (
        ("--template", args.template is not None), ("--features words", args.features == "words"),
        ("--init", args.init is not None), ("--representations", args.representations is not None),
        ("--vector-scale", args.vector_scale is not None), ("--partial", args.partial),
        ("--conllu", args.conllu), ("--label-column", args.label_column is not None),
        ("--labels", args.labels is not None), ("--min-freq", args.min_freq != 1),
        ("--max-features", args.max_features is not None),
        ("--hash-features", args.hash_features is not None)) if given]
    if fixed:
        raise SscrfError(f"{args.train}: a compiled corpus brings its templates, vocabulary and "
                         f"labels; {', '.join(fixed)} {'go' if len(fixed) > 1 else 'goes'} "
                         "with a CoNLL TRAIN file")
    corpus = CompiledCorpus.open(args.train)
    if corpus.labels is None:
        raise SscrfError(f"{args.train}: the corpus was compiled without its labels: compile "
                         "the CoNLL file with --labeled to train on it")
    constraints = _read_ge_constraints(args)
    _check_unlabeled_terms(args, constraints)
    unlabeled = None
    if args.unlabeled is not None:
        if not is_compiled_corpus(args.unlabeled):
            raise SscrfError(f"{args.unlabeled}: with a compiled TRAIN, give the unlabeled "
                             "text compiled under its vocabulary (sscrf compile FILE "
                             f"--vocabulary {args.train})")
        unlabeled = CompiledCorpus.open(args.unlabeled)
    dev = _read_dev(args, corpus.extractor().n_columns_, False, None)
    model = CRF(c1=args.c1, c2=args.c2, max_iterations=args.max_iterations,
                n_threads=args.threads, feature_set=args.feature_set,
                hash_features=corpus.hash_features,  # a hashed corpus needs a hashed model
                entropy_weight=args.entropy_weight, entropy_method=args.entropy_method,
                ge_weight=args.ge_weight, ge_penalty=args.ge_penalty,
                proportion_weight=args.proportion_weight, dev_period=args.dev_period,
                verbose=not args.quiet)
    fitted = _fit(model, args, grid, dev, corpus, None, X_unlabeled=unlabeled,
                  constraints=constraints)
    if fitted is None:
        return 130
    fitted.save(args.model)
    return _report(args, fitted, len(corpus), corpus.n_tokens,
                   None if unlabeled is None else len(unlabeled), constraints is not None,
                   grid, started)


def _check_unlabeled_terms(args: argparse.Namespace, constraints: Any) -> None:
    """--unlabeled and the terms that read it go together."""
    for option, weight in (("--entropy-weight", args.entropy_weight),
                           ("--proportion-weight", args.proportion_weight)):
        if args.unlabeled is None and weight > 0:
            raise SscrfError(f"{option} needs --unlabeled FILE")
    if (args.unlabeled is not None and args.entropy_weight <= 0
            and args.proportion_weight <= 0 and constraints is None):
        raise SscrfError("--unlabeled needs --entropy-weight G with G > 0, --proportion-weight "
                         "P with P > 0, or --constraints FILE with --ge-weight L")


#: --dev-period's default: CRF's.
DEV_PERIOD = CRF().dev_period

#: The options whose several values --dev chooses among, with CRF's names.
SEARCHED = (("--c1", "c1"), ("--c2", "c2"), ("--entropy-weight", "entropy_weight"),
            ("--proportion-weight", "proportion_weight"), ("--ge-weight", "ge_weight"))


def _search_grid(args: argparse.Namespace) -> dict[str, list[float]]:
    """The grid of the options given several values (empty when none is), each
    option left on ``args`` as one number: its value, or its largest in a
    grid (so that checks such as "--entropy-weight needs --unlabeled" see
    that the search weighs the term); --dev-period gets its default."""
    if args.dev is None and args.dev_period is not None:
        raise SscrfError("--dev-period goes with --dev DEV")
    args.dev_period = DEV_PERIOD if args.dev_period is None else args.dev_period
    grid = {}
    for option, name in SEARCHED:
        values = getattr(args, name)
        if len(values) > 1:
            if args.dev is None:
                raise SscrfError(f"{option} {','.join(f'{v:g}' for v in values)}: several values "
                                 "need --dev DEV, held-out sentences to choose among them")
            grid[name] = values
        setattr(args, name, max(values))
    if grid and args.init is not None:
        raise SscrfError("--init starts one training from OLD_MODEL; a search over several "
                         "values starts each c2 path afresh: give one value to each option "
                         "with --init")
    return grid


def _read_dev(args: argparse.Namespace, n_columns: Optional[int], words: bool, rep: Any
              ) -> Optional[tuple[Any, Any]]:
    """(sentences, labels) of --dev, with the derived columns TRAIN has (the
    words preset's, the representations' cluster ids); (the corpus, None) for a
    compiled DEV; None without it."""
    if args.dev is None:
        return None
    if is_compiled_corpus(args.dev):
        if not is_compiled_corpus(args.train):
            raise SscrfError(f"{args.dev}: a compiled --dev goes with a compiled TRAIN, whose "
                             f"vocabulary it is compiled under; with {args.train}, give DEV as "
                             "a CoNLL file")
        return CompiledCorpus.open(args.dev), None
    # DEV is completely labeled: A|B and * are labels of their own there
    corpus = read_labeled(args.dev, argparse.Namespace(**dict(vars(args), partial=False)))
    if not corpus.tokens:
        raise SscrfError(f"{args.dev}: no sentences to score on")
    tokens: list[Any] = corpus.tokens
    if n_columns is not None:
        tokens = _token_columns(tokens, n_columns, args.dev, " before its label", args.train)
    with gc_paused():
        if words:
            tokens = [add_word_columns(sentence) for sentence in tokens]
        if rep is not None:
            tokens = _with_columns(tokens, rep)
    return tokens, corpus.labels


def _token_columns(sentences: list[Any], n_columns: int, path: str, where: str, train: str
                   ) -> list[Any]:
    """The first ``n_columns`` columns of each token, TRAIN's token columns; a token with
    fewer (``where`` they are counted) is refused."""
    short = next(((s, len(t)) for s, sentence in enumerate(sentences) for t in sentence
                  if len(t) < n_columns), None)
    if short is not None:
        raise SscrfError(f"{path}: sentence {short[0] + 1} has a token of {short[1]} column(s)"
                         f"{where}, {train} has {n_columns} token column(s)")
    with gc_paused():
        return [[token[:n_columns] for token in sentence] for sentence in sentences]


def _fit(model: CRF, args: argparse.Namespace, grid: dict[str, list[float]], dev: Any,
         X: Any, y: Any, **fit_params: Any) -> Optional[CRF]:
    """The fitted model (with a grid, the best on --dev), the library's
    warnings shown as the program's; None when interrupted before there is
    a model to save."""
    try:
        with program_warnings(lambda message: message.replace("y_dev has", f"{args.dev} has")):
            if grid:  # _search_grid refused --init
                fit_params.pop("init", None)
                selection = select_hyperparameters(model, grid, X, y, *dev, **fit_params)
                print(selection)
                return selection.model
            if dev is not None:
                fit_params.update(X_dev=dev[0], y_dev=dev[1])
            model.fit(X, y, **fit_params)
    except KeyboardInterrupt:  # a single fit keeps the best parameters so far, if any
        if grid:
            error(f"interrupted during the search on {args.dev}; {args.model} not written")
            return None
        if not hasattr(model, "coef_"):
            error(f"interrupted before the first iteration; {args.model} not written")
            return None
    return model


def _dev_note(model: CRF, grid: dict[str, list[float]]) -> str:
    """What the summary says of --dev: the kept iterate's score, and the setting a search
    chose."""
    dev = model.training_.get("dev")
    if dev is None:
        return ""
    chosen = "".join(f", {name}={getattr(model, name):g}" for name in grid)
    return (f", dev {scoring_text(dev['scoring'])} {dev['best_score']:.4f} at iteration "
            f"{dev['best_iteration']}{chosen}")


def _read_ge_constraints(args: argparse.Namespace) -> Optional[dict[str, Any]]:
    """The --constraints file, after checking the GE options go together; None without it."""
    if args.constraints is None:
        if args.ge_weight > 0:
            raise SscrfError("--ge-weight needs --constraints FILE (and --unlabeled FILE)")
        return None
    if args.ge_weight <= 0:
        raise SscrfError("--constraints needs --ge-weight L with L > 0")
    if args.unlabeled is None:
        raise SscrfError("--constraints needs --unlabeled FILE (GE matches label "
                         "distributions on unlabeled sentences)")
    constraints = read_constraints(args.constraints, labels=args.labels)
    if not constraints:
        raise SscrfError(f"{args.constraints}: no constraints")
    return constraints


def _representations(args: argparse.Namespace, init: Any, templates: Any, n_columns: int,
                     words: Any) -> tuple[Any, Any, Any]:
    """(representations, templates reading their columns, the model's record)
    for --representations: their cluster columns (then HMM state columns)
    follow the file's (and the words preset's); the preset and the default
    templates get their values at -1, 0 and +1, a --template file reads them
    itself."""
    path = args.representations
    if path is None:  # --init's model reads them: the same file again
        path = init.representations_["path"]
        rep = load_representations(path, init.representations_["sha256"], args.init,
                                   recorded=True)
    else:
        if os.path.exists(path) and not os.path.isfile(path):
            raise SscrfError(f"{path}: not a regular file: the model records the word "
                             "representations' path and checksum, so that tagging reads the "
                             "same file again; write them to a file first")
        rep = load_representations(path)
    digest = file_digest(path)
    column = n_columns + (len(WORD_COLUMNS) if words else 0)
    record = {"path": os.path.abspath(path), "sha256": digest,
              "column": column, "columns": len(rep.clusters) + len(rep.hmms_)}
    if init is not None:
        old = getattr(init, "representations_", None)
        if old is None or old["sha256"] != digest:
            raise SscrfError(f"{args.init}: the model was trained with other word "
                             "representations than --representations (or none): they must "
                             "be the same file")
        return rep, templates, record
    if args.template is not None:
        return rep, templates, record
    base = word_templates(n_columns) if words else default_templates(n_columns)
    lines = [line for line in base.lines if line.strip() != "B"]
    lines += [f"Urep{k}{d:+d}:%x[{d},{column + j}]" for j, k in enumerate(rep.clusters)
              for d in (-1, 0, 1)]
    lines += [f"Urep.h{m}{d:+d}:%x[{d},{column + len(rep.clusters) + m}]"
              for m in range(len(rep.hmms_)) for d in (-1, 0, 1)]
    return rep, parse_templates(lines + ["B"], source="--representations"), record


def _word_vectors(args: argparse.Namespace, init: Any, rep: Any) -> Any:
    """The WordVectors of --representations at --vector-scale (None: cluster ids
    only); a further round (--init) keeps the first round's scale."""
    if rep is None:
        if args.vector_scale is not None:
            raise SscrfError("--vector-scale goes with --representations")
        return None
    if init is not None:
        spec = init.extractor_.vector_spec_
        scale = 0.0 if spec is None else spec["scale"]
        if args.vector_scale not in (None, scale):
            raise SscrfError(f"{args.init}: the model was trained with --vector-scale "
                             f"{scale:g}; a further round keeps it")
    else:
        scale = DEFAULT_VECTOR_SCALE if args.vector_scale is None else args.vector_scale
    if scale == 0:
        return None
    if args.hash_features is not None:
        raise SscrfError("--representations adds word vectors, whose attributes need a "
                         "vocabulary: with --hash-features, add --vector-scale 0 (cluster "
                         "ids only)")
    return rep.word_vectors(0, scale)  # the word is the file's first column


def _with_columns(sentences: Sequence[Any], rep: Any) -> list[Any]:
    """Tokens with the cluster ids of their word (column 0) appended."""
    return [[list(token) + extra for token, extra in
             zip(sentence, rep.columns([token[0] for token in sentence]))]
            for sentence in sentences]
