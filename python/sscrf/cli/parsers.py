"""The ``sscrf`` argument parser, built one command at a time.

Help texts are the program's documentation; ``tests/test_cli.py`` pins
much of them.
"""

from __future__ import annotations

import argparse
from typing import Any

from .. import __version__
from .options import (
    PROG,
    SELECT_STRATEGIES,
    conllu_options,
    label_list,
    marginals_choice,
    model_threads_option,
    non_negative_float,
    non_negative_floats,
    non_negative_int,
    positive_int,
    representations_option,
)

__all__ = ["build_parser"]

DESCRIPTION = """\
Linear-chain CRFs on CoNLL column files.

A CoNLL file holds one token per line, columns separated by spaces or tabs,
the label in the last column, and a blank line between sentences; '#' is an
ordinary token. CoNLL-U files (--conllu) use FORM as the token and a chosen
column (default UPOS) as the label.
"""

EPILOG = """\
examples:
  sscrf train train.txt -m chunk.model
  sscrf train train.txt -m chunk.model --dev dev.txt --c2 1,0.1,0.01
  sscrf tag -m chunk.model test.txt -o tagged.txt
  sscrf eval tagged.txt
  sscrf eval -m chunk.model test.txt
  sscrf dump chunk.model --top 30
  sscrf demo
  sscrf select -m chunk.model --pool pool.txt --strategy least_confidence --count 20 \\
      -o chosen.txt --rest pool2.txt
  sscrf train chosen-labeled.txt --init chunk.model -m chunk2.model
  sscrf plot confusion tagged.txt -o confusion.png
"""


def build_parser() -> argparse.ArgumentParser:
    """The ``argparse`` parser of the ``sscrf`` program."""
    parser = argparse.ArgumentParser(
        prog=PROG, description=DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add in (add_train, add_tag, add_eval, add_dump, add_demo, add_select, add_represent,
                add_plot, add_compile):
        add(commands)
    return parser


def _command(commands: Any, name: str, help: str, description: str
             ) -> argparse.ArgumentParser:
    return commands.add_parser(name, help=help, description=description,
                               formatter_class=argparse.RawDescriptionHelpFormatter)


def add_train(commands: Any) -> None:
    """The parser of ``sscrf train``."""
    sub = _command(
        commands, "train", "train a CRF on a labeled file and save it",
        "Train a CRF on TRAIN (labels in the last column, token columns before it) and\n"
        "save it to MODEL. Attributes come from the --template file (CRF++ syntax:\n"
        "'U01:%x[-1,0]' lines and a bare 'B'), or from the default templates for the\n"
        "number of token columns: for 'word POS' columns, CRF++'s CoNLL-2000 set;\n"
        "--features words for words-only files. Label transitions are always\n"
        "trained: a template file without a 'B' line (where CRF++ would train none)\n"
        "gets a warning.\n"
        "Prints training progress on stderr (unless --quiet) and a one-line summary.\n"
        "Ctrl-C stops training: the best model so far is saved, and the exit status\n"
        "is 130 so that a script does not take it for a finished training.")
    sub.add_argument("train", metavar="TRAIN",
                     help="training file (CoNLL, CoNLL-U with --conllu, or a corpus that "
                          "sscrf compile --labeled wrote; '-': standard input)")
    sub.add_argument("-m", "--model", metavar="MODEL", required=True,
                     help="where to save the model")
    sub.add_argument("--template", metavar="FILE",
                     help="CRF++-style template file (default: built-in templates)")
    sub.add_argument("--features", choices=("columns", "words"), default="columns",
                     help="'columns' (default): the --template file or the default templates "
                          "of the token columns; 'words': for words-only files (and word + "
                          "POS...), the usual named-entity features of "
                          "sscrf.features.word_features: lower-cased word and neighbours, "
                          "shape, prefixes and suffixes of 1-4 letters, digits, capitals, as "
                          "derived columns that tag, eval and select add again")
    sub.add_argument("--init", metavar="OLD_MODEL",
                     help="start from OLD_MODEL's weights (attributes and labels it knows; the "
                          "rest from 0) and, without --template, use its templates: the next "
                          "round of active learning, or more data for a trained model")
    sub.add_argument("--c1", type=non_negative_floats, default=[0.0], metavar="C1[,C1...]",
                     help="L1 coefficient: the loss gains C1·‖θ‖₁, trained by OWL-QN; most "
                          "weights become exactly 0 (default: 0); with --dev, several values "
                          "separated by commas are searched")
    sub.add_argument("--c2", type=non_negative_floats, default=[1.0], metavar="C2[,C2...]",
                     help="L2 coefficient: loss = -log-likelihood + C2·‖θ‖² (default: 1.0); "
                          "with --dev, several values separated by commas are searched")
    sub.add_argument("--max-iterations", type=non_negative_int, default=100, metavar="N",
                     help="L-BFGS iteration limit (default: 100); with --unlabeled, of each "
                          "stage: the supervised warm start, then the full objective")
    sub.add_argument("--threads", type=positive_int, default=None, metavar="N",
                     help="threads (default: every core); results do not depend on it")
    sub.add_argument("--feature-set", choices=("auto", "observed", "dense"), default="auto",
                     help="'observed': the attribute-label pairs seen in training data "
                          "(CRFsuite's default; with --unlabeled, the unlabeled terms train those "
                          "pairs, a model that does not grow with FILE); 'dense': every pair; "
                          "'auto' (default): observed for supervised training, dense with "
                          "--unlabeled")
    sub.add_argument("--min-freq", type=positive_int, default=1, metavar="N",
                     help="drop attributes seen at fewer than N tokens (default: 1)")
    sub.add_argument("--max-features", type=positive_int, default=None, metavar="N",
                     help="keep at most N attributes, the most frequent (after --min-freq): "
                          "bounds the model however often the data repeats itself")
    sub.add_argument("--hash-features", type=positive_int, default=None, metavar="N",
                     help="hash attributes into N = 2**k buckets (FNV-1a 64 of the UTF-8 "
                          "string mod N) instead of counting a vocabulary")
    sub.add_argument("--labels", type=label_list, metavar="A,B,...",
                     help="the label set, in this order (default: every label in TRAIN); "
                          "another label in TRAIN is an error")
    sub.add_argument("--unlabeled", metavar="FILE",
                     help="unlabeled sentences (CoNLL, the token columns of TRAIN; extra "
                          "columns, e.g. labels, are ignored; '-': standard input, or a corpus "
                          "sscrf compile wrote) for entropy regularisation or GE; "
                          "training then weighs every attribute of TRAIN and FILE with every "
                          "label (the dense feature set, by default), so the model grows with FILE's "
                          "vocabulary: --min-freq bounds it, or --feature-set observed)")
    sub.add_argument("--entropy-weight", type=non_negative_floats, default=[0.0],
                     metavar="G[,G...]",
                     help="weight γ of the entropy of the unlabeled sentences (default: 0; "
                          "needs --unlabeled); the term sums over them, so start near "
                          "0.1 x labeled / unlabeled tokens and choose on --dev, where 0 "
                          "joins the values so that the supervised model can win")
    sub.add_argument("--proportion-weight", type=non_negative_floats, default=[0.0],
                     metavar="P[,P...]",
                     help="weight of the label-proportion term (default: 0; needs "
                          "--unlabeled): the unlabeled tokens' label distribution is held "
                          "to TRAIN's (Mann & McCallum 2007), which keeps --entropy-weight "
                          "from labeling every uncertain token with the commonest label; "
                          "start near 0.1 x labeled tokens")
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
    sub.add_argument("--ge-weight", type=non_negative_floats, default=[0.0], metavar="L[,L...]",
                     help="weight λ of the GE term (default: 0; needs --constraints and "
                          "--unlabeled)")
    sub.add_argument("--ge-penalty", choices=("kl", "l2"), default="kl",
                     help="GE distance: KL(target ‖ model) (default) or squared L2")
    conllu_options(sub, "TRAIN")
    sub.add_argument("--representations", metavar="REP",
                     help="word representations saved by 'sscrf represent': their cluster "
                          "ids (and HMM states, if REP has HMMs) become extra token columns "
                          "after the others (with --features "
                          "words or the default templates, templates over them at -1, 0, +1 "
                          "are added), and each word's vector becomes real-valued features "
                          "rep.v0, rep.v1, ... (see --vector-scale); the model records REP's "
                          "path and checksum, and tag, eval and select read the same file "
                          "again")
    sub.add_argument("--vector-scale", type=non_negative_float, default=None, metavar="S",
                     help="length of the --representations vector features (default: 6, "
                          "as WordRepresentations.features; 0: cluster ids only)")
    sub.add_argument("--dev", metavar="DEV",
                     help="held-out, completely labeled sentences in TRAIN's format ('-': "
                          "standard input; with a compiled TRAIN, also a corpus compiled "
                          "--labeled --vocabulary TRAIN): the "
                          "model keeps the iterate of the best DEV score (chunk F1 for B-/I- "
                          "labels, token accuracy otherwise), and of several values given to "
                          "--c1, --c2, --entropy-weight, --proportion-weight or --ge-weight, "
                          "every combination is trained (c2 from the largest down, each fit "
                          "starting from the last) and the best on DEV is saved; a table of "
                          "them is printed")
    sub.add_argument("--dev-period", type=positive_int, default=None, metavar="N",
                     help="score DEV every N iterations, and the last (default: 5)")
    sub.add_argument("--partial", action="store_true",
                     help="partial and ambiguous annotations: a label cell may be a set "
                          "'A|B|C' (any of these) or '*' (not annotated); such sentences are "
                          "trained by the marginalised likelihood (Tsuboi et al. 2008)")
    sub.add_argument("-q", "--quiet", action="store_true", help="no progress display")


def add_tag(commands: Any) -> None:
    """The parser of ``sscrf tag``."""
    sub = _command(
        commands, "tag", "label a file with a trained model",
        "Label the sentences of FILE with MODEL (Viterbi). Each output line is the\n"
        "input line's columns followed by the predicted label, as CRF++'s crf_test\n"
        "writes it. FILE has either the model's token columns, or one more: then the\n"
        "last column is taken as the gold label and kept before the prediction, so\n"
        "the output can go to 'sscrf eval'. With --conllu the output is CoNLL with\n"
        "three columns: FORM, the --label-column value (gold) and the prediction\n"
        "(spaces inside a FORM are written as U+00A0). -DOCSTART- lines are dropped.\n"
        "Whatever options add (--probability, --marginals, N-best labelings) goes\n"
        "between the token columns and the gold label: the last column is always the\n"
        "(best) prediction and the one before it the gold label, the two that\n"
        "'sscrf eval' scores.\n"
        "FILE is read, tagged and written about 65,000 tokens at a time, so memory\n"
        "does not grow with its length; on stdout, the batches before the one that\n"
        "holds a malformed line are written by the time it is reported (-o OUT is\n"
        "left as it was).")
    sub.add_argument("-m", "--model", metavar="MODEL", required=True,
                     help="a model saved by 'sscrf train'")
    sub.add_argument("file", metavar="FILE", help="file to tag ('-': standard input)")
    sub.add_argument("-o", "--output", metavar="OUT", type=lambda v: None if v == "-" else v,
                     help="write here instead of stdout ('-': stdout)")
    sub.add_argument("-n", "--nbest", type=positive_int, default=1, metavar="K",
                     help="the K most probable labelings of each sentence, one column each: "
                          "labelings 2..K after the token columns, then the gold label (when "
                          "FILE has one), then the best labeling last, the column that 'sscrf "
                          "eval' scores; no comment lines (default: 1, the Viterbi labeling)")
    sub.add_argument("--probability", action="store_true",
                     help="a column with the probability p(y|x) of the sentence's predicted "
                          "labeling, on each of its token lines (with -n K: K columns, best "
                          "first), after the token columns and before the gold label and the "
                          "prediction, which stay the last two columns, the ones eval scores")
    sub.add_argument("--marginals", nargs="?", const="predicted", type=marginals_choice,
                     metavar="{predicted,all}",
                     help="a column with the marginal probability of each token's predicted "
                          "label; '--marginals all': one 'LABEL:p' column per label of the "
                          "model; placed as --probability's (after it), before the gold label "
                          "and the prediction (write FILE before --marginals, or give its "
                          "value: '--marginals predicted FILE')")
    sub.add_argument("--constraints", metavar="CFILE",
                     help="constrained decoding: a CoNLL file of the same sentences whose last "
                          "column gives each token's allowed labels: a label, a set 'A|B' or "
                          "'*' (any label)")
    conllu_options(sub, "FILE")
    model_threads_option(sub)
    representations_option(sub)


def add_eval(commands: Any) -> None:
    """The parser of ``sscrf eval``."""
    sub = _command(
        commands, "eval", "conlleval's chunk report, or per-label token scores",
        "Score predictions the way conlleval (2004) does, with its report byte for byte:\n"
        "'processed N tokens with M phrases; found: F phrases; correct: C.', the\n"
        "token accuracy and chunk precision, recall and F1 overall, then per chunk\n"
        "type (a chunk is right when its type and both ends are). conlleval counts a\n"
        "-DOCSTART- line as a token; sscrf drops them, so on files that have them the\n"
        "token count and the accuracy differ by those lines (chunk counts do not).\n"
        "When no gold label is a chunk tag (B-X, I-X; POS tags, say), or with\n"
        "--tokens, it prints per-label token precision, recall and F1 and the item\n"
        "and sentence accuracies, as CRFsuite's 'tag -qt' does.\n\n"
        "  sscrf eval FILE            FILE's last column is the prediction, the one\n"
        "                             before it the gold label ('sscrf tag' output;\n"
        "                             with -n K, --probability or --marginals too: it\n"
        "                             scores the best labeling, still the last column)\n"
        "  sscrf eval -m MODEL TEST   tag TEST (gold label last) with MODEL, then score;\n"
        "                             TEST may be a corpus 'sscrf compile --labeled\n"
        "                             --vocabulary MODEL' wrote\n\n"
        "A FILE whose last two columns share no label (an untagged 'word POS chunk'\n"
        "file, say) is refused.")
    sub.add_argument("file", metavar="FILE",
                     help="tagged file, or the test file with -m (CoNLL, or a corpus compiled "
                          "--labeled; '-': standard input)")
    sub.add_argument("-m", "--model", metavar="MODEL", help="tag FILE with this model first")
    sub.add_argument("--scheme", choices=("iob2", "iob1", "iobes"), default="iob2",
                     help="chunk tagging scheme (default: iob2; iob1 and iob2 read the same)")
    report = sub.add_mutually_exclusive_group()
    report.add_argument("--tokens", action="store_true",
                        help="per-label token precision / recall / F1 and accuracy (automatic "
                             "when no gold label is a chunk tag)")
    report.add_argument("--chunks", action="store_true",
                        help="conlleval's chunk report even when no gold label is a chunk tag")
    conllu_options(sub, "FILE (with -m)")
    model_threads_option(sub)
    representations_option(sub)


def add_dump(commands: Any) -> None:
    """The parser of ``sscrf dump``."""
    sub = _command(
        commands, "dump", "show a model's labels and weights",
        "Print a model's labels, its number of parameters and of non-zero state\n"
        "features, the state features of largest |weight| (attribute, label,\n"
        "weight), the transition weights (row: previous label, column: next) and\n"
        "the start and end weights. --json prints all of it as one JSON object:\n"
        "labels, attributes (in id order), state_features ([attribute, label,\n"
        "weight] for every stored pair, zeros included), transitions (rows:\n"
        "previous label), start, end, templates (the template lines), parameters\n"
        "and the training record.")
    sub.add_argument("model", metavar="MODEL", help="a model saved by 'sscrf train'")
    sub.add_argument("--top", type=non_negative_int, default=20, metavar="K",
                     help="how many state features to show (default: 20)")
    sub.add_argument("--json", action="store_true",
                     help="every label, attribute, weight, transition, template and the "
                          "training record as JSON on stdout")


def add_demo(commands: Any) -> None:
    """The parser of ``sscrf demo``."""
    sub = _command(
        commands, "demo", "train and score a CRF on a built-in HMM corpus",
        "Sample a chunking corpus from a small built-in hidden Markov model (nothing\n"
        "is downloaded; see sscrf.demo), train a CRF with the default templates, tag\n"
        "a held-out sample and print chunk scores and a few tagged sentences; then,\n"
        "side by side, the chunk F1 of 50 of the training sentences alone and with\n"
        "word representations from unlabeled text, 50 more picked by active learning\n"
        "or at random, 100 more with half their tokens labeled, or 10 labeled words\n"
        "(generalized expectation on the rest, unlabeled).")
    sub.add_argument("--seed", type=non_negative_int, default=0, help="corpus seed (default: 0)")
    sub.add_argument("--threads", type=positive_int, default=None, metavar="N",
                     help="threads (default: every core)")
    sub.add_argument("--n-train", type=positive_int, default=800, metavar="N",
                     help="training sentences (default: 800)")
    sub.add_argument("--n-test", type=positive_int, default=300, metavar="N",
                     help="test sentences (default: 300)")
    sub.add_argument("-q", "--quiet", action="store_true", help="no training progress display")


def add_select(commands: Any) -> None:
    """The parser of ``sscrf select``."""
    sub = _command(
        commands, "select", "choose pool sentences to label next (active learning)",
        "Rank the sentences of the pool FILE (CoNLL: the model's token columns, a gold\n"
        "label column after them is allowed and ignored) by a selection strategy and\n"
        "print the best N (--count), best first, one per line: the sentence number in\n"
        "FILE (from 0), the line it starts on and the strategy's score; with\n"
        "most_uncertain_span also the span's first token and the token after it.\n"
        "-o CHOSEN writes the chosen sentences (best first) and --rest REST the rest\n"
        "of the pool (in pool order) as CoNLL files with the pool's columns (FORM\n"
        "with --conllu): label\n"
        "CHOSEN by hand (a label column after the tokens), then train on it with\n"
        "--init and select from REST next round.\n"
        "random and quota_sampling need no model; quota_sampling estimates q(x) with\n"
        "an n-gram model (--order) of the pool's first column and draws one sentence\n"
        "from each of N groups of equal size sorted by q(x) (see sscrf.active).\n\n"
        "-m is the model, as in every command; sscrf 0.1 read '-m N' as the count:\n"
        "use --count N ('-m 20' where no file 20 exists is refused with that hint).\n\n"
        "The loop:\n"
        "  sscrf train seed.txt -m r0.model\n"
        "  sscrf select -m r0.model --pool pool.txt --strategy least_confidence \\\n"
        "      --count 50 -o chosen.txt --rest pool1.txt\n"
        "  (label chosen.txt by hand: add the label column)\n"
        "  sscrf train chosen.txt --init r0.model -m r1.model\n"
        "  sscrf eval -m r1.model test.txt")
    sub.add_argument("-m", "--model", metavar="MODEL",
                     help="a model saved by 'sscrf train' (not needed for random and "
                          "quota_sampling)")
    sub.add_argument("--pool", metavar="FILE", required=True,
                     help="the unlabeled pool ('-': standard input)")
    sub.add_argument("--strategy", choices=SELECT_STRATEGIES, required=True)
    sub.add_argument("--count", "-n", type=positive_int, default=20, metavar="N", dest="m",
                     help="how many sentences to choose (default: 20)")
    sub.add_argument("-o", "--output", metavar="CHOSEN",
                     help="write the chosen sentences here, as CoNLL, best first")
    sub.add_argument("--rest", metavar="REST",
                     help="write the pool without the chosen sentences here, as CoNLL")
    sub.add_argument("--width", type=positive_int, default=3, metavar="W",
                     help="span width for most_uncertain_span (default: 3)")
    sub.add_argument("--per-token", action="store_true",
                     help="sequence_entropy and token_entropy: divide by the sentence length, "
                          "so that long sentences are not chosen for their length")
    sub.add_argument("--order", type=positive_int, default=4, metavar="N",
                     help="n-gram order of q(x) for quota_sampling (default: 4)")
    sub.add_argument("--seed", type=non_negative_int, default=None,
                     help="random seed for random and quota_sampling")
    conllu_options(sub, "FILE")
    model_threads_option(sub)
    representations_option(sub)


def add_plot(commands: Any) -> None:
    """The parser of ``sscrf plot``."""
    sub = _command(
        commands, "plot", "draw a training's loss or a tagged file's confusion matrix (PNG)",
        "Draw a PNG (needs matplotlib: pip install 'sscrf[plot]'; no display needed).\n\n"
        "  sscrf plot loss LOG -o loss.png       the loss after each reported\n"
        "                                        iteration, from what 'sscrf train'\n"
        "                                        writes on stderr (2> LOG); a model\n"
        "                                        file keeps no loss history\n"
        "  sscrf plot confusion FILE -o cm.png   gold (next to last column) against\n"
        "                                        predicted (last column) labels of a\n"
        "                                        file 'sscrf tag' wrote\n\n"
        "In Python, sscrf.plot also draws active-learning curves and dev scores\n"
        "against a hyperparameter.")
    sub.add_argument("what", choices=("loss", "confusion"), help="what to draw")
    sub.add_argument("file", metavar="FILE",
                     help="loss: a training log (or a model holding its history); "
                          "confusion: a tagged file ('-': standard input)")
    sub.add_argument("-o", "--output", metavar="PNG", required=True, help="where to write the PNG")
    sub.add_argument("--title", default=None, help="the figure's title")
    sub.add_argument("--log", action="store_true", help="loss: a logarithmic loss axis")
    sub.add_argument("--labels", type=label_list, default=None, metavar="A,B,...",
                     help="confusion: these labels, in this order (default: every label, sorted)")
    sub.add_argument("--counts", action="store_true",
                     help="confusion: colour by counts rather than by share of the gold label")


def _cluster_list(text: str) -> tuple[int, ...]:
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of integers") from None
    if any(v < 1 for v in values) or any(b <= a for a, b in zip(values, values[1:])):
        raise argparse.ArgumentTypeError(f"must increase strictly from 1 or more, not {text}")
    return tuple(values)


def add_represent(commands: Any) -> None:
    """The parser of ``sscrf represent``."""
    sub = _command(
        commands, "represent", "learn word representations from unlabeled text",
        "Learn word vectors and nested word clusters from TEXT (one sentence a line,\n"
        "words separated by spaces; or a CoNLL file with --conll, words in column 0;\n"
        "or a CoNLL-U file with --conllu, words in FORM), read once, and save them to\n"
        "REP for 'sscrf train --representations REP'\n"
        "(see sscrf.WordRepresentations). Example:\n"
        "  sscrf represent pubmed.txt -o bio.rep\n"
        "  sscrf train labeled.txt --features words --representations bio.rep -m ner.model")
    sub.add_argument("text", metavar="TEXT", help="unlabeled text ('-': standard input)")
    sub.add_argument("-o", "--output", metavar="REP", required=True,
                     help="where to save the representations")
    form = sub.add_mutually_exclusive_group()
    form.add_argument("--conll", action="store_true",
                      help="TEXT is a CoNLL column file (the word in column 0)")
    form.add_argument("--conllu", action="store_true",
                      help="TEXT is a CoNLL-U file (the word in FORM)")
    sub.add_argument("--dim", type=positive_int, default=100, metavar="D",
                     help="dimensions of the word vectors (default: 100)")
    sub.add_argument("--cluster-dim", type=positive_int, default=None, metavar="D",
                     help="dimensions of the space the clusters are found in (default: --dim)")
    sub.add_argument("--clusters", type=_cluster_list, default=(32, 128, 512, 2048),
                     metavar="K1,K2,...", help="cluster counts, increasing, each refining the "
                     "last (default: 32,128,512,2048)")
    sub.add_argument("--window", type=positive_int, default=2, metavar="N",
                     help="context words on each side (default: 2)")
    sub.add_argument("--min-count", type=positive_int, default=2, metavar="N",
                     help="words seen fewer times fall back to lower case, then word shape "
                     "(default: 2)")
    sub.add_argument("--max-vocabulary", type=positive_int, default=100_000, metavar="N",
                     help="the most frequent words kept (default: 100000)")
    sub.add_argument("--hmm-states", type=non_negative_int, default=80, metavar="K",
                     help="also train HMMs of K states on TEXT by EM, whose state of each "
                          "token on its sentence's Viterbi path is a feature (default: 80; "
                          "0: none; on "
                          "BC2GM gene mentions they added 0.4 to 1.5 F1 to the clusters and "
                          "vectors, for seconds of EM per million tokens)")
    sub.add_argument("--hmms", type=positive_int, default=3, metavar="M",
                     help="with --hmm-states: HMMs trained, each from its own k-means of the "
                          "vectors (default: 3)")
    sub.add_argument("--hmm-passes", type=positive_int, default=3, metavar="N",
                     help="with --hmm-states: passes of stepwise EM over TEXT for each HMM "
                          "(default: 3)")
    sub.add_argument("--hmm-support", type=positive_int, default=24, metavar="S",
                     help="with --hmm-states: states that may emit each word, those nearest "
                          "its vector; EM costs about S² a token (default: 24)")
    sub.add_argument("--hmm-decoding", choices=("viterbi", "posterior"), default="viterbi",
                     help="with --hmm-states: each token's state on its sentence's most "
                          "probable state sequence, or its state of largest posterior "
                          "probability (twice the decoding time; default: viterbi)")
    sub.add_argument("--seed", type=non_negative_int, default=0, help="random seed (default: 0)")
    sub.add_argument("--threads", type=positive_int, default=None, metavar="N",
                     help="threads (default: every core); results do not depend on it")
    sub.add_argument("-q", "--quiet", action="store_true", help="no progress display")


def add_compile(commands: Any) -> argparse.ArgumentParser:
    """The parser of ``sscrf compile``."""
    sub = _command(
        commands, "compile", "compile a CoNLL file into a memory-mapped corpus file",
        "Compile FILE's sentences into a corpus file (OUT, by convention FILE.corpus)\n"
        "that training and tagging read memory-mapped: from Python,\n"
        "sscrf.CompiledCorpus.open(OUT) as fit's X_unlabeled or predict's X. FILE is\n"
        "read twice as a stream (the vocabulary is counted, cut and frozen, then the\n"
        "sentences are interned under it), so it need not fit in memory, but it must\n"
        "be a regular file, not a pipe. The format is documented in sscrf.corpus_file.")
    sub.add_argument("file", metavar="FILE", help="CoNLL file (token columns; with --labeled, "
                                                  "the label last)")
    sub.add_argument("-o", "--output", metavar="OUT", required=True,
                     help="the corpus file to write")
    sub.add_argument("--vocabulary", metavar="MODEL_OR_CORPUS",
                     help="compile under this model's vocabulary and templates (to tag it "
                          "with the model in Python, or train the model further), or that of "
                          "another corpus file (the next shard of one corpus); without it the "
                          "vocabulary is FILE's own")
    sub.add_argument("--template", metavar="FILE",
                     help="CRF++-style template file (default: built-in templates for FILE's "
                          "token columns)")
    sub.add_argument("--min-freq", type=positive_int, default=1, metavar="N",
                     help="drop attributes seen at fewer than N tokens (default: 1)")
    sub.add_argument("--max-features", type=positive_int, default=None, metavar="N",
                     help="keep at most N attributes, the most frequent (after --min-freq)")
    sub.add_argument("--hash-features", type=positive_int, default=None, metavar="N",
                     help="hash attributes into N = 2**k buckets instead of counting a "
                          "vocabulary (one pass over FILE); train with the same "
                          "--hash-features")
    sub.add_argument("--labeled", action="store_true",
                     help="FILE's last column is the label: stored with the sentences")
    sub.add_argument("--buffer-tokens", type=positive_int, default=1 << 18, metavar="N",
                     help="tokens read into memory at a time (default: 262144)")
    sub.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    return sub
