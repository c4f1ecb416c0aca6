"""The ``sscrf`` command line: train, tag, eval, dump, demo.

Run ``sscrf --help`` or ``sscrf COMMAND --help``; ``python -m sscrf`` is the
same program. :func:`main` returns the exit status instead of exiting, so
tests and other programs can call it in-process: 0 on success, 2 on a usage
error or bad input (``sscrf: error: <message>`` on stderr, no traceback).
"""

import argparse
import os
import re
import sys
import time
import warnings
from typing import NamedTuple, Optional

from .errors import SscrfError

__all__ = ["main", "build_parser"]

_PROG = "sscrf"

_DESCRIPTION = """\
Linear-chain CRFs on CoNLL column files.

A CoNLL file holds one token per line, columns separated by spaces or tabs,
the label in the last column, and a blank line between sentences; '#' is an
ordinary token. CoNLL-U files (--conllu) use FORM as the token and a chosen
column (default UPOS) as the label.
"""

_EPILOG = """\
examples:
  sscrf train train.txt -m chunk.model
  sscrf tag -m chunk.model test.txt -o tagged.txt
  sscrf eval tagged.txt
  sscrf eval -m chunk.model test.txt
  sscrf dump chunk.model --top 30
  sscrf demo
  sscrf select --model chunk.model --pool pool.txt --strategy least_confidence -m 20
"""


# -- argument types --------------------------------------------------------------

def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {value}")
    return value


def _non_negative_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an integer ≥ 0, not {value}")
    return value


def _non_negative_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (value >= 0 and value != float("inf")):
        raise argparse.ArgumentTypeError(f"must be a finite number ≥ 0, not {text}")
    return value


def _label_list(text):
    labels = [label.strip() for label in text.split(",")]
    if not all(labels):
        raise argparse.ArgumentTypeError(f"empty label in {text!r}")
    if len(set(labels)) != len(labels):
        raise argparse.ArgumentTypeError(f"a label is repeated in {text!r}")
    return labels


# -- the parser ------------------------------------------------------------------

def build_parser():
    """The ``argparse`` parser of the ``sscrf`` program."""
    from . import __version__

    parser = argparse.ArgumentParser(
        prog=_PROG, description=_DESCRIPTION, epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def command(name, help, description):
        sub = commands.add_parser(name, help=help, description=description,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
        return sub

    def conllu_options(sub, what):
        sub.add_argument("--conllu", action="store_true",
                         help=f"{what} is CoNLL-U: FORM is the token, the label comes from "
                              "--label-column")
        sub.add_argument("--label-column", metavar="NAME", default=None,
                         help="CoNLL-U column holding the label (default: upos); "
                              "one of id form lemma upos xpos feats head deprel deps misc")

    def model_threads_option(sub):
        sub.add_argument("--threads", type=_positive_int, default=None, metavar="N",
                         help="threads (default: the model's setting, every core unless it "
                              "was trained with --threads); results do not depend on it")

    # train
    sub = command(
        "train", "train a CRF on a labeled file and save it",
        "Train a CRF on TRAIN (labels in the last column, token columns before it) and\n"
        "save it to MODEL. Attributes come from the --template file (CRF++ syntax:\n"
        "'U01:%x[-1,0]' lines and a bare 'B'), or from the default templates for the\n"
        "number of token columns: for 'word POS' columns, CRF++'s CoNLL-2000 set.\n"
        "Prints training progress on stderr (unless --quiet) and a one-line summary.\n"
        "Ctrl-C stops training: the best model so far is saved, and the exit status\n"
        "is 130 so that a script does not take it for a finished training.")
    sub.add_argument("train", metavar="TRAIN",
                     help="training file (CoNLL, or CoNLL-U with --conllu)")
    sub.add_argument("-m", "--model", metavar="MODEL", required=True,
                     help="where to save the model")
    sub.add_argument("--template", metavar="FILE",
                     help="CRF++-style template file (default: built-in templates)")
    sub.add_argument("--c1", type=_non_negative_float, default=0.0, metavar="C1",
                     help="L1 coefficient: the loss gains C1·‖θ‖₁, trained by OWL-QN; most "
                          "weights become exactly 0 (default: 0)")
    sub.add_argument("--c2", type=_non_negative_float, default=1.0, metavar="C2",
                     help="L2 coefficient: loss = -log-likelihood + C2·‖θ‖² (default: 1.0)")
    sub.add_argument("--max-iterations", type=_non_negative_int, default=100, metavar="N",
                     help="L-BFGS iteration limit (default: 100); with --unlabeled, of each "
                          "stage: the supervised warm start, then the full objective")
    sub.add_argument("--threads", type=_positive_int, default=None, metavar="N",
                     help="threads (default: every core); results do not depend on it")
    sub.add_argument("--feature-set", choices=("auto", "observed", "dense"), default="auto",
                     help="'observed': the attribute-label pairs seen in training data "
                          "(CRFsuite's default); 'dense': every pair; 'auto' (default): "
                          "observed for supervised training")
    sub.add_argument("--min-freq", type=_positive_int, default=1, metavar="N",
                     help="drop attributes seen at fewer than N tokens (default: 1)")
    sub.add_argument("--labels", type=_label_list, metavar="A,B,...",
                     help="the label set, in this order (default: every label in TRAIN); "
                          "another label in TRAIN is an error")
    sub.add_argument("--unlabeled", metavar="FILE",
                     help="unlabeled sentences (CoNLL, the token columns of TRAIN; extra "
                          "columns, e.g. labels, are ignored) for entropy regularisation or GE; "
                          "training then weighs every attribute of TRAIN and FILE with every "
                          "label (the dense feature set), so the model grows with FILE's "
                          "vocabulary: --min-freq bounds it")
    sub.add_argument("--entropy-weight", type=_non_negative_float, default=0.0, metavar="G",
                     help="weight γ of the entropy of the unlabeled sentences (default: 0; "
                          "needs --unlabeled); the term sums over them, so start near "
                          "0.1 x labeled / unlabeled tokens and tune on held-out data "
                          "against a supervised model with --feature-set dense")
    sub.add_argument("--entropy-method", choices=("fast", "jiao"), default="fast",
                     help="entropy gradient: fast O(n S^2) (default) or Jiao et al.'s "
                          "O(n^2 S^3) reference")
    sub.add_argument("--constraints", metavar="FILE",
                     help="labeled features for generalized expectation (GE) training on the "
                          "--unlabeled sentences: one attribute per line with its target "
                          "distribution, e.g. 'U02:john PERSON:0.95 ORG:0.05' (see "
                          "sscrf.constraints); TRAIN may then be an empty file (the token "
                          "columns are those of the unlabeled file, the labels --labels or "
                          "those the constraints name)")
    sub.add_argument("--ge-weight", type=_non_negative_float, default=0.0, metavar="L",
                     help="weight λ of the GE term (default: 0; needs --constraints and "
                          "--unlabeled)")
    sub.add_argument("--ge-penalty", choices=("kl", "l2"), default="kl",
                     help="GE distance: KL(target ‖ model) (default) or squared L2")
    conllu_options(sub, "TRAIN")
    sub.add_argument("--partial", action="store_true",
                     help="partial and ambiguous annotations: a label cell may be a set "
                          "'A|B|C' (any of these) or '*' (not annotated); such sentences are "
                          "trained by the marginalised likelihood (Tsuboi et al. 2008)")
    sub.add_argument("-q", "--quiet", action="store_true", help="no progress display")
    sub.set_defaults(func=_cmd_train)

    # tag
    sub = command(
        "tag", "label a file with a trained model",
        "Label the sentences of FILE with MODEL (Viterbi). Each output line is the\n"
        "input line's columns followed by the predicted label, as CRF++'s crf_test\n"
        "writes it. FILE has either the model's token columns, or one more: then the\n"
        "last column is taken as the gold label and kept before the prediction, so\n"
        "the output can go to 'sscrf eval'. With --conllu the output is CoNLL with\n"
        "three columns: FORM, the --label-column value (gold) and the prediction\n"
        "(spaces inside a FORM are written as U+00A0). -DOCSTART- lines are dropped.\n"
        "FILE is read, tagged and written about 65,000 tokens at a time, so memory\n"
        "does not grow with its length; on stdout, the batches before the one that\n"
        "holds a malformed line are written by the time it is reported (-o OUT is\n"
        "left as it was).")
    sub.add_argument("-m", "--model", metavar="MODEL", required=True,
                     help="a model saved by 'sscrf train'")
    sub.add_argument("file", metavar="FILE", help="file to tag ('-': standard input)")
    sub.add_argument("-o", "--output", metavar="OUT", type=lambda v: None if v == "-" else v,
                     help="write here instead of stdout ('-': stdout)")
    sub.add_argument("-n", "--nbest", type=_positive_int, default=1, metavar="K",
                     help="write the K most probable labelings of each sentence as K label "
                          "columns, best first, after a '# nbest' line with their "
                          "log-probabilities (default: 1, the Viterbi labeling)")
    sub.add_argument("--constraints", metavar="CFILE",
                     help="constrained decoding: a CoNLL file of the same sentences whose last "
                          "column gives each token's allowed labels: a label, a set 'A|B' or "
                          "'*' (any label)")
    conllu_options(sub, "FILE")
    model_threads_option(sub)
    sub.set_defaults(func=_cmd_tag)

    # eval
    sub = command(
        "eval", "chunk precision/recall/F1 and token accuracy",
        "Score predictions the way conlleval does: chunk precision, recall and F1\n"
        "(a chunk is right when its type and both ends are), overall and per chunk\n"
        "type, and token accuracy.\n\n"
        "  sscrf eval FILE            FILE's last column is the prediction, the one\n"
        "                             before it the gold label ('sscrf tag' output)\n"
        "  sscrf eval -m MODEL TEST   tag TEST (gold label last) with MODEL, then score")
    sub.add_argument("file", metavar="FILE",
                     help="tagged file, or the test file with -m ('-': standard input)")
    sub.add_argument("-m", "--model", metavar="MODEL", help="tag FILE with this model first")
    sub.add_argument("--scheme", choices=("iob2", "iob1", "iobes"), default="iob2",
                     help="chunk tagging scheme (default: iob2; iob1 and iob2 read the same)")
    conllu_options(sub, "FILE (with -m)")
    model_threads_option(sub)
    sub.set_defaults(func=_cmd_eval)

    # dump
    sub = command(
        "dump", "show a model's labels and weights",
        "Print a model's labels, its number of parameters and of non-zero state\n"
        "features, the state features of largest |weight| (attribute, label,\n"
        "weight), the transition weights (row: previous label, column: next) and\n"
        "the start and end weights.")
    sub.add_argument("model", metavar="MODEL", help="a model saved by 'sscrf train'")
    sub.add_argument("--top", type=_non_negative_int, default=20, metavar="K",
                     help="how many state features to show (default: 20)")
    sub.set_defaults(func=_cmd_dump)

    # demo
    sub = command(
        "demo", "train and score a CRF on a built-in HMM corpus",
        "Sample a chunking corpus from a small built-in hidden Markov model (nothing\n"
        "is downloaded; see sscrf.demo), train a CRF with the default templates, tag\n"
        "a held-out sample and print chunk scores and a few tagged sentences.")
    sub.add_argument("--seed", type=int, default=0, help="corpus seed (default: 0)")
    sub.add_argument("--threads", type=_positive_int, default=None, metavar="N",
                     help="threads (default: every core)")
    sub.add_argument("--n-train", type=_positive_int, default=800, metavar="N",
                     help="training sentences (default: 800)")
    sub.add_argument("--n-test", type=_positive_int, default=300, metavar="N",
                     help="test sentences (default: 300)")
    sub.add_argument("-q", "--quiet", action="store_true", help="no training progress display")
    sub.set_defaults(func=_cmd_demo)

    # select
    sub = command(
        "select", "choose pool sentences to label next (active learning)",
        "Rank the sentences of the pool FILE (CoNLL: the model's token columns, a gold\n"
        "label column after them is allowed and ignored) by a selection strategy and\n"
        "print the best M, best first, one per line: the sentence number in FILE\n"
        "(from 0), the line it starts on and the strategy's score; with\n"
        "most_uncertain_span also the span's first token and the token after it.\n"
        "random and quota_sampling need no model; quota_sampling estimates q(x) with\n"
        "an n-gram model (--order) of the pool's first column and draws one sentence\n"
        "from each of M groups of equal size sorted by q(x) (see sscrf.active).")
    sub.add_argument("--model", metavar="MODEL",
                     help="a model saved by 'sscrf train' (not needed for random and "
                          "quota_sampling)")
    sub.add_argument("--pool", metavar="FILE", required=True,
                     help="the unlabeled pool ('-': standard input)")
    sub.add_argument("--strategy", choices=SELECT_STRATEGIES, required=True)
    sub.add_argument("-m", type=_positive_int, default=20, metavar="M", dest="m",
                     help="how many sentences to choose (default: 20)")
    sub.add_argument("--width", type=_positive_int, default=3, metavar="W",
                     help="span width for most_uncertain_span (default: 3)")
    sub.add_argument("--per-token", action="store_true",
                     help="sequence_entropy and token_entropy: divide by the sentence length, "
                          "so that long sentences are not chosen for their length")
    sub.add_argument("--order", type=_positive_int, default=4, metavar="N",
                     help="n-gram order of q(x) for quota_sampling (default: 4)")
    sub.add_argument("--seed", type=int, default=None,
                     help="random seed for random and quota_sampling")
    conllu_options(sub, "FILE")
    model_threads_option(sub)
    sub.set_defaults(func=_cmd_select)
    return parser


# -- reading files ----------------------------------------------------------------

def _model_columns(model, path):
    """Number of token columns the model's templates were trained on."""
    extractor = model.extractor_
    if extractor.templates is None:
        raise SscrfError(f"{path}: the model reads feature dicts, not columns; the command "
                         "line needs a model trained with templates")
    if extractor.n_columns_ is not None:
        return extractor.n_columns_
    return max(extractor.templates.max_column + 1, 1)


def _label_column(args):
    if args.label_column is not None and not args.conllu:
        raise SscrfError("--label-column is for CoNLL-U input; add --conllu")
    return args.label_column or "upos"


def _read_labeled(path, args, labels=None):
    """Tokens and labels of a training file; returns the ConllCorpus."""
    from .io import read_conll, read_conllu

    if args.conllu:
        if getattr(args, "partial", False):
            raise SscrfError("--partial reads label sets from CoNLL column files, not CoNLL-U")
        corpus = read_conllu(path, label_column=_label_column(args), token_columns=("form",))
        if labels is not None:
            known = set(labels)
            for s, sentence in enumerate(corpus.labels):
                for t, label in enumerate(sentence):
                    if label not in known:
                        raise SscrfError(f"{path}: sentence {s + 1} (from line "
                                         f"{corpus.lines[s]}), token {t + 1}: label {label!r} "
                                         "is not in --labels")
        return corpus
    _label_column(args)
    return read_conll(path, labels=labels, label_sets=getattr(args, "partial", False))


# Sentences are tagged this many tokens at a time, so that the memory of
# 'sscrf tag' and 'sscrf eval -m' does not grow with FILE: tagging 1.06M
# tokens at once took 730 MB. A batch is still work enough for every thread.
_BATCH_TOKENS = 1 << 16


def _readable(path):
    """FILE as the readers take it: '-' is standard input, whose bytes are
    read as a file's are (the same line ends, exact lines in decoding errors)."""
    if path == "-":
        if sys.stdin is None:
            raise SscrfError("standard input is closed")
        return getattr(sys.stdin, "buffer", sys.stdin)
    return path


def _file_name(path):
    return "<stdin>" if path == "-" else path


class _ToTag(NamedTuple):
    """A sentence of FILE: what the model reads, what the output shows, and more."""

    tokens: list            # the model's token columns
    shown: list             # the columns written out
    gold: Optional[list]    # the gold labels, when FILE has them
    line: int               # the sentence's first line in FILE
    allowed: Optional[list] = None  # per token, the labels --constraints allows


def _sentences_to_tag(path, model, model_path, args, need_gold=False):
    """FILE's sentences as they are read, as _ToTag."""
    from .io import _conll_sentences, _conllu_indices, _conllu_sentences

    expected = _model_columns(model, model_path)
    if args.conllu:
        if expected != 1:
            raise SscrfError(f"{model_path}: the model reads {expected} token columns, but "
                             "CoNLL-U input gives one (FORM)")
        columns = _conllu_indices(_label_column(args), ("form",))
        for lineno, sentence, gold in _conllu_sentences(_readable(path), *columns, "utf-8"):
            yield _ToTag(sentence, [[_no_spaces(token[0])] for token in sentence], gold, lineno)
        return
    _label_column(args)
    with_gold = None
    for lineno, sentence, _ in _conll_sentences(_readable(path), False, False, None, "utf-8"):
        if with_gold is None:  # the reader holds every line to the first one's columns
            n_columns = len(sentence[0])
            if n_columns == expected + 1 or (n_columns == expected and not need_gold):
                with_gold = n_columns == expected + 1
            elif need_gold:
                raise SscrfError(f"{_file_name(path)}:{lineno}: found {n_columns} columns, "
                                 f"expected {expected + 1} (the model's {expected} token "
                                 "column(s), then the gold label)")
            else:
                raise SscrfError(f"{_file_name(path)}:{lineno}: found {n_columns} columns, "
                                 f"expected {expected} (the model's token columns) or "
                                 f"{expected + 1} (a gold label after them)")
        if with_gold:
            tokens = [token[:-1] for token in sentence]
            yield _ToTag(tokens, tokens, [token[-1] for token in sentence], lineno)
        else:
            yield _ToTag(sentence, sentence, None, lineno)


def _batches(items):
    """Lists of consecutive _ToTag of about _BATCH_TOKENS tokens."""
    batch, size = [], 0
    for item in items:
        batch.append(item)
        size += len(item.tokens)
        if size >= _BATCH_TOKENS:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def _read_for_tagging(path, model, model_path, args):
    """All of FILE's sentences to tag, as model tokens, and their first lines."""
    from .io import _gc_paused

    with _gc_paused():
        sentences = list(_sentences_to_tag(path, model, model_path, args))
    return [item.tokens for item in sentences], [item.line for item in sentences]


def _no_spaces(form):
    # read_conll splits on ASCII whitespace only, so U+00A0 keeps the cell whole.
    return re.sub(r"[ \t\r\n\f\v]", "\u00a0", form) if form else "_"


def _check_writable(path):
    """Fail early (before a long training run) when ``path`` cannot be written."""
    directory = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise SscrfError(f"{path}: is a directory")
    if not os.path.isdir(directory):
        raise SscrfError(f"{path}: directory {directory} does not exist")
    if not os.access(directory, os.W_OK):
        raise SscrfError(f"{path}: directory {directory} is not writable")


def _load_model(path, threads=None):
    from .model import CRF

    model = CRF.load(path)
    if threads is not None:
        model.n_threads = threads
    return model


# -- commands ---------------------------------------------------------------------

def _cmd_train(args):
    from .features import read_templates
    from .model import CRF
    from .optimize import STOP_CALLBACK, STOP_INTERRUPTED

    started = time.perf_counter()
    _check_writable(args.model)
    templates = "default"
    if args.template is not None:
        templates = read_templates(args.template)
    constraints = _read_ge_constraints(args)
    corpus = _read_labeled(args.train, args, labels=args.labels)
    if not (args.partial or args.conllu):
        if corpus.tokens and all(len(t) == 9 and t[0] == str(i + 1)
                                 for i, t in enumerate(corpus.tokens[0][:3])):
            print(f"{_PROG}: warning: {args.train}: the tokens look like CoNLL-U lines (ID and 8 "
                  "more columns before the label): read it with --conllu", file=sys.stderr)
        partial_like = sorted({label for sentence in corpus.labels for label in sentence
                               if label == "*" or "|" in label})
        if partial_like:
            shown = ", ".join(map(repr, partial_like[:3]))
            shown += ", ..." if len(partial_like) > 3 else ""
            print(f"{_PROG}: warning: {args.train}: labels {shown} look like partial annotations "
                  "(* unknown, A|B a set of labels); without --partial each is a label of its "
                  "own", file=sys.stderr)
    if not corpus.tokens and constraints is None:
        raise SscrfError(f"{args.train}: no sentences to train on")
    unlabeled = None
    if args.unlabeled is not None:
        if args.feature_set == "observed":
            raise SscrfError("--feature-set observed does not go with --unlabeled: the terms "
                             "on unlabeled sentences train every attribute with every label; "
                             "use dense or auto")
        if args.entropy_weight <= 0 and constraints is None:
            raise SscrfError("--unlabeled needs --entropy-weight G with G > 0, or --constraints "
                             "FILE with --ge-weight L")
        from .io import read_conll

        unlabeled = read_conll(args.unlabeled, has_labels=False).tokens
    columns_from = args.train if corpus.tokens else args.unlabeled
    if not (corpus.tokens or unlabeled):
        raise SscrfError(f"{args.train}: no sentences to train on, and {args.unlabeled} has "
                         "none either")
    n_columns = min(len(token) for sentence in corpus.tokens or unlabeled for token in sentence)
    if args.template is not None and templates.max_column >= n_columns:
        source = next(src for src, pieces in zip(templates.sources, templates.unigrams)
                      if any(type(p) is tuple and p[1] >= n_columns for p in pieces))
        raise SscrfError(f"{args.template}: template {source!r} reads column "
                         f"{templates.max_column}, but {columns_from} has {n_columns} token "
                         "column(s) (numbered from 0; the label column is not one)")
    if unlabeled is not None:
        from .io import _gc_paused

        with _gc_paused():
            unlabeled = [[token[:n_columns] for token in sentence] for sentence in unlabeled]
        short = next(((s, len(t)) for s, sentence in enumerate(unlabeled) for t in sentence
                      if len(t) < n_columns), None)
        if short is not None:
            raise SscrfError(f"{args.unlabeled}: sentence {short[0]} has {short[1]} column(s), "
                             f"{args.train} has {n_columns} token column(s)")
    elif args.entropy_weight > 0:
        raise SscrfError("--entropy-weight needs --unlabeled FILE")
    if (args.labels is None and constraints is None
            and not any(label is not None for seq in corpus.labels for label in seq)):
        raise SscrfError(f"{args.train}: no token has a label; give the label set with "
                         "--labels A,B,...")
    model = CRF(c1=args.c1, c2=args.c2, max_iterations=args.max_iterations,
                n_threads=args.threads,
                feature_set=args.feature_set, labels=args.labels, templates=templates,
                min_freq=args.min_freq, entropy_weight=args.entropy_weight,
                entropy_method=args.entropy_method, ge_weight=args.ge_weight,
                ge_penalty=args.ge_penalty, verbose=not args.quiet)
    caught = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")  # shown below as the program's warnings
            model.fit(corpus.tokens, corpus.labels, X_unlabeled=unlabeled,
                      constraints=constraints)
    finally:  # also before an error, which they may explain
        for w in caught:
            print(f"{_PROG}: warning: {w.message}", file=sys.stderr)
    training = model.training_
    if training["stop_reason"] == STOP_INTERRUPTED and training["iterations"] == 0:
        _error(f"interrupted before the first iteration; {args.model} not written")
        return 130
    model.save(args.model)
    n_tokens = sum(map(len, corpus.labels))
    ge_note = "" if constraints is None else f", {len(model.constraints_)} constraints"
    unlabeled_note = "" if unlabeled is None else f", {len(unlabeled)} unlabeled sentences"
    iterations = f"{training['iterations']} iterations ({training['stop_reason']})"
    warm = training.get("stages", {}).get("supervised")
    if warm is not None and warm["stop_reason"] in (STOP_INTERRUPTED, STOP_CALLBACK):
        iterations = (f"{warm['iterations']} iterations (supervised warm start, "
                      f"{warm['stop_reason']}; the second stage did not run)")
    elif warm is not None:  # two stages: the supervised warm start, then the full objective
        iterations = (f"{warm['iterations']} + {training['iterations']} iterations (supervised "
                      f"warm start, then {training['stop_reason']})")
    print(f"{args.model}: {len(corpus.tokens)} sentences, {n_tokens} tokens{unlabeled_note}, "
          f"{len(model.classes_)} labels{ge_note}, {model.n_parameters_} parameters"
          f"{f' ({model.n_active_features_} state weights not 0)' if args.c1 > 0 else ''}, "
          f"{iterations}, {time.perf_counter() - started:.1f} s")
    if training["stop_reason"] == STOP_INTERRUPTED:
        _error(f"interrupted: {args.model} holds the best model so far, not a finished training")
        return 130
    return 0


def _read_ge_constraints(args):
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
    from .constraints import read_constraints

    constraints = read_constraints(args.constraints, labels=args.labels)
    if not constraints:
        raise SscrfError(f"{args.constraints}: no constraints")
    return constraints


def _cmd_tag(args):
    from .io import _gc_paused, write_conll
    from .serialization import replace_file

    if args.output is not None:
        _check_writable(args.output)
    model = _load_model(args.model, args.threads)
    sentences = _sentences_to_tag(args.file, model, args.model, args)
    if args.constraints is not None:
        sentences = _with_constraints(sentences, args.constraints, model,
                                      _file_name(args.file))

    def write(f):
        for batch in _batches(sentences):
            tokens = [item.tokens for item in batch]
            shown = [item.shown for item in batch]
            gold = None if batch[0].gold is None else [item.gold for item in batch]
            allowed = None if args.constraints is None else [item.allowed for item in batch]
            if args.nbest > 1:
                nbest = model.predict_nbest(tokens, args.nbest, allowed=allowed)
                f.write(_nbest_text(nbest, shown, gold))
            else:
                write_conll(f, shown, gold, model.predict(tokens, allowed=allowed))

    # Each batch is millions of small objects without cycles, freed by their
    # reference counts; the collector only walked them (1 of 6.4 s for 1.06M tokens).
    with _gc_paused():
        if args.output is None:
            write(sys.stdout)
            sys.stdout.flush()
        else:
            replace_file(args.output, write, "w", "utf-8")
    return 0


def _with_constraints(sentences, path, model, file):
    """FILE's sentences, each with its tokens' allowed labels from the last
    column of ``path``, a CoNLL file of the same sentences."""
    from .io import _conll_sentences

    constraints = _conll_sentences(path, True, True, model.classes_, "utf-8")
    count = 0
    for item in sentences:
        found = next(constraints, None)
        if found is None:
            raise SscrfError(f"{path}: {count} sentences, but {file} has "
                             f"{count + 1 + sum(1 for _ in sentences)}")
        lineno, _, allowed = found
        if len(allowed) != len(item.tokens):
            raise SscrfError(f"{path}:{lineno}: sentence {count + 1} has {len(allowed)} "
                             f"tokens, but {len(item.tokens)} in {file}")
        count += 1
        yield item._replace(allowed=allowed)
    rest = sum(1 for _ in constraints)
    if rest:
        raise SscrfError(f"{path}: {count + rest} sentences, but {file} has {count}")


def _nbest_text(nbest, shown, gold):
    """Per sentence: '# nbest LOGP1 LOGP2 ...', then each token's columns, gold, K labels."""
    lines = []
    for s, candidates in enumerate(nbest):
        lines.append("# nbest " + " ".join(f"{logp:.6f}" for _, logp in candidates))
        for t, columns in enumerate(shown[s]):
            cells = list(columns) + ([gold[s][t]] if gold is not None else [])
            cells += [labels[t] for labels, _ in candidates]
            lines.append(" ".join(cells))
        lines.append("")
    return "\n".join(lines) + "\n"


def _cmd_eval(args):
    from .io import _gc_paused, read_conll
    from .metrics import chunk_scores, format_chunk_report, token_accuracy

    if args.model is not None:
        model = _load_model(args.model, args.threads)
        gold, predicted = [], []
        sentences = _sentences_to_tag(args.file, model, args.model, args, need_gold=True)
        with _gc_paused():
            for batch in _batches(sentences):
                predicted += model.predict([item.tokens for item in batch])
                gold += [item.gold for item in batch]
    else:
        if args.conllu:
            raise SscrfError("a CoNLL-U file holds no predictions; use --conllu with -m MODEL")
        _label_column(args)
        corpus = read_conll(_readable(args.file), has_labels=False)
        if corpus.tokens and len(corpus.tokens[0][0]) < 2:
            raise SscrfError(f"{_file_name(args.file)}:{corpus.lines[0]}: found 1 column; eval "
                             "needs the gold label and the prediction as the last two columns")
        gold = [[token[-2] for token in sentence] for sentence in corpus.tokens]
        predicted = [[token[-1] for token in sentence] for sentence in corpus.tokens]
    if not any(gold):
        raise SscrfError(f"{_file_name(args.file)}: no tokens to evaluate")
    scores = chunk_scores(gold, predicted, scheme=args.scheme)
    accuracy = token_accuracy(gold, predicted)
    sys.stdout.write(format_chunk_report(scores, accuracy))
    # Tags such as POS tags are read as chunks too (conlleval splits -LRB- and
    # NN-TL at their first '-'), which gives chunk scores that mean nothing.
    prefixes = "BIES" if args.scheme == "iobes" else "BI"
    odd = sorted({label for sentence in gold for label in sentence if label != "O" and not (
        len(label) > 2 and label[0] in prefixes and label[1] == "-")})
    if odd:
        shown = ", ".join(map(repr, odd[:3])) + (", ..." if len(odd) > 3 else "")
        print(f"(gold labels such as {shown} are not {args.scheme} chunk tags "
              f"({'/'.join(prefixes)}-X or O), so only the token accuracy is meaningful)")
    elif scores["n_true"] == 0 and scores["n_pred"] == 0:
        print("(no chunks found: the labels are not B-X/I-X chunk tags, so only the token "
              "accuracy is meaningful)")
    return 0


def _format_table(row_names, column_names, rows):
    """Right-aligned table of floats with row and column headers."""
    cells = [[f"{v:+.4f}" for v in row] for row in rows]
    first = max([len(n) for n in row_names] + [0])
    width = max([len(n) for n in column_names] + [len(c) for row in cells for c in row] + [1])
    lines = [" " * first + "".join(f"  {n:>{width}}" for n in column_names)]
    for name, row in zip(row_names, cells):
        lines.append(f"{name:<{first}}" + "".join(f"  {c:>{width}}" for c in row))
    return lines


def _cmd_dump(args):
    import heapq

    model = _load_model(args.model)
    labels = list(model.classes_)
    S = len(labels)
    state = model.state_features_
    n_state_parameters = model.n_parameters_ - S * S - 2 * S
    extractor = model.extractor_
    out = []
    out.append(f"model: {args.model}")
    out.append(f"labels ({S}): {' '.join(labels)}")
    if extractor.templates is not None:
        out.append(f"templates: {len(extractor.templates)} unigram templates over "
                   f"{_model_columns(model, args.model)} token column(s)")
    else:
        out.append("features: feature dicts")
    out.append(f"attributes: {len(extractor.attributes_ or [])}")
    out.append(f"parameters: {model.n_parameters_} ({n_state_parameters} state, {S * S} "
               f"transition, {2 * S} start/end); feature set: {model.feature_set_}")
    out.append(f"non-zero state features: {len(state)}")
    training = getattr(model, "training_", {}) or {}
    if "iterations" in training:
        out.append(f"training: {training['iterations']} iterations, loss "
                   f"{training.get('loss', float('nan')):.6g} ({training.get('stop_reason', '?')})")
    out.append("")
    top = heapq.nsmallest(args.top, state.items(), key=lambda kv: (-abs(kv[1]), kv[0]))
    out.append(f"top {len(top)} state features by |weight|:")
    if top:
        label_width = max(len("label"), *(len(label) for (_, label), _ in top))
        out.append(f"  {'weight':>10}  {'label':<{label_width}}  attribute")
        for (attribute, label), weight in top:
            out.append(f"  {weight:>+10.4f}  {label:<{label_width}}  {attribute}")
    out.append("")
    out.append("transitions (row: previous label, column: next label):")
    out.extend("  " + line for line in _format_table(labels, labels, model.transitions_.tolist()))
    out.append("")
    out.append("start and end weights:")
    out.extend("  " + line for line in _format_table(
        ["start", "end"], labels, [model.start_weights_.tolist(), model.end_weights_.tolist()]))
    print("\n".join(out))
    return 0


def _cmd_demo(args):
    from .demo import run_demo

    run_demo(n_train=args.n_train, n_test=args.n_test, seed=args.seed, n_threads=args.threads,
             verbose=not args.quiet, out=sys.stdout)
    return 0


#: The strategies of ``sscrf select`` (the names of ``sscrf.active.SELECTORS``).
SELECT_STRATEGIES = ("least_confidence", "most_uncertain_span", "quota_sampling", "random",
                     "sequence_entropy", "token_entropy")


def _cmd_select(args):
    from .active import NgramModel, select
    from .io import read_conll, read_conllu

    if args.model is None and args.strategy not in ("random", "quota_sampling"):
        raise SscrfError(f"--strategy {args.strategy} needs --model")
    if args.per_token and args.strategy not in ("sequence_entropy", "token_entropy"):
        raise SscrfError("--per-token is for --strategy sequence_entropy or token_entropy")
    model = None
    if args.model is not None:  # the model's token columns, without a gold column
        model = _load_model(args.model, args.threads)
        tokens, lines = _read_for_tagging(args.pool, model, args.model, args)
    else:
        pool = _readable(args.pool)
        corpus = (read_conllu(pool, label_column=_label_column(args), token_columns=("form",))
                  if args.conllu else read_conll(pool, has_labels=False))
        tokens, lines = corpus.tokens, corpus.lines
    log_q = None
    if args.strategy == "quota_sampling" and tokens:
        first = [[token[0] for token in sentence] for sentence in tokens]
        log_q = NgramModel(n=args.order).fit(first).log_probs(first)
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
    print("\n".join(out))
    return 0


# -- entry point --------------------------------------------------------------------

def _error(message):
    print(f"{_PROG}: error: {message}", file=sys.stderr, flush=True)


def _os_error_message(e):
    if e.filename is not None and e.strerror:
        return f"{os.fsdecode(e.filename)}: {e.strerror}"
    return str(e)


def main(argv=None):
    """Run the ``sscrf`` program.

    Parameters
    ----------
    argv : list of str or None
        The arguments after the program name; None reads ``sys.argv[1:]``.

    Returns
    -------
    int
        The exit status: 0 on success (also for ``--help`` and
        ``--version``), 2 for a usage error or bad input (malformed or
        missing file, invalid model, bad option value), 130 when
        interrupted.
    """
    # BLAS is only used for L-BFGS's vector operations, where its threads
    # contend with the core's OpenMP threads: on a busy 2-core machine the
    # demo trained in 9 s with OpenBLAS threads and 0.8 s without. Only
    # effective before numpy is first imported; a user's setting wins.
    if "numpy" not in sys.modules:
        for variable in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ.setdefault(variable, "1")
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, --version, usage errors
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    try:
        return args.func(args)
    except ValueError as e:  # SscrfError, and the core's ValueErrors on bad input
        _error(e)
        return 2
    except BrokenPipeError:
        # The reader went away (e.g. `sscrf tag ... | head`): stop quietly.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return 141
    except OSError as e:
        _error(_os_error_message(e))
        return 2
    except KeyboardInterrupt:
        _error("interrupted")
        return 130
