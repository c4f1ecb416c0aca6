"""``sscrf tag``: label FILE with MODEL (Viterbi, N-best, constrained), batch by batch."""

import sys

from ..errors import SscrfError
from ..inputs import check_not_an_input, check_writable
from ..io import conll_sentences, gc_paused, write_conll
from ..serialization import replace_file
from .reading import batches, file_name, load_model, sentences_to_tag

__all__ = ["run"]


def run(args):
    """``sscrf tag``: the exit status."""
    if args.output is not None:
        check_writable(args.output)
        check_not_an_input(args.output, (args.model, args.file, args.constraints))
    model = load_model(args.model, args.threads)
    sentences = sentences_to_tag(args.file, model, args.model, args)
    if args.constraints is not None:
        sentences = _with_constraints(sentences, args.constraints, model,
                                      file_name(args.file))

    def write(f):
        for batch in batches(sentences):
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
    # reference counts; the collector would only walk them.
    with gc_paused():
        if args.output is None:
            write(sys.stdout)
            sys.stdout.flush()
        else:
            replace_file(args.output, write, "w", "utf-8")
    return 0


def _with_constraints(sentences, path, model, file):
    """FILE's sentences, each with its tokens' allowed labels from the last
    column of ``path``, a CoNLL file of the same sentences."""
    constraints = conll_sentences(path, True, True, model.classes_, "utf-8")
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
