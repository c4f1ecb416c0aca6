"""``sscrf eval``: conlleval's chunk scores and token accuracy.

Of a tagged file, or of MODEL on FILE.
"""

import sys

from ..errors import SscrfError
from ..io import gc_paused, read_conll
from ..metrics import chunk_scores, format_chunk_report, token_accuracy
from .reading import batches, file_name, label_column, load_model, readable, sentences_to_tag

__all__ = ["run"]


def run(args):
    """``sscrf eval``: the exit status."""
    if args.model is not None:
        model = load_model(args.model, args.threads)
        gold, predicted = [], []
        sentences = sentences_to_tag(args.file, model, args.model, args, need_gold=True)
        with gc_paused():
            for batch in batches(sentences):
                predicted += model.predict([item.tokens for item in batch])
                gold += [item.gold for item in batch]
    else:
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
