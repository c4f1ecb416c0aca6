"""``sscrf select``: rank the sentences of a pool by an active-learning strategy."""

from ..active import NgramModel, select
from ..active.ngram import check_order
from ..errors import SscrfError
from ..io import read_conll, read_conllu
from .reading import label_column, load_model, read_for_tagging, readable

__all__ = ["run"]


def run(args):
    """``sscrf select``: the exit status."""
    check_order(args.order, "--order")
    if args.model is None and args.strategy not in ("random", "quota_sampling"):
        raise SscrfError(f"--strategy {args.strategy} needs --model")
    if args.per_token and args.strategy not in ("sequence_entropy", "token_entropy"):
        raise SscrfError("--per-token is for --strategy sequence_entropy or token_entropy")
    model = None
    if args.model is not None:  # the model's token columns, without a gold column
        model = load_model(args.model, args.threads)
        tokens, lines = read_for_tagging(args.pool, model, args.model, args)
    else:
        pool = readable(args.pool)
        corpus = (read_conllu(pool, label_column=label_column(args), token_columns=("form",))
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
