"""``sscrf tag``: label FILE with MODEL (Viterbi, N-best, constrained, with probabilities),
batch by batch."""

from __future__ import annotations

import argparse
import math
import sys
from typing import IO, Any, Iterable, Iterator

from ..errors import SscrfError
from ..inputs import check_not_an_input, check_writable
from ..io import conll_sentences, gc_paused, write_conll
from ..serialization import replace_file
from .reading import batches, file_name, load_model, sentences_to_tag

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    """``sscrf tag``: the exit status."""
    if args.marginals is not None and args.nbest > 1:
        raise SscrfError("--marginals goes with the Viterbi labeling, not with -n K")
    if args.output is not None:
        check_writable(args.output)
        check_not_an_input(args.output, (args.model, args.file, args.constraints,
                                             args.representations))
    model = load_model(args.model, args.threads, args.representations)
    sentences = sentences_to_tag(args.file, model, args.model, args)
    if args.constraints is not None:
        sentences = _with_constraints(sentences, args.constraints, model,
                                      file_name(args.file))

    def write(f: IO[Any]) -> None:
        for batch in batches(sentences):
            tokens = [item.tokens for item in batch]
            shown = [item.shown for item in batch]
            gold = None if batch[0].gold is None else [item.gold for item in batch]
            allowed = None if args.constraints is None else [item.allowed for item in batch]
            if args.nbest > 1:
                nbest = model.predict_nbest(tokens, args.nbest, allowed=allowed)
                f.write(_nbest_text(nbest, shown, gold, args.probability, args.nbest))
            elif args.marginals is None and not args.probability:
                write_conll(f, shown, gold, model.predict(tokens, allowed=allowed))
            else:
                f.write(_scored_text(model, tokens, shown, gold, allowed, args))

    # Each batch is millions of small objects without cycles, freed by their
    # reference counts; the collector would only walk them.
    with gc_paused():
        if args.output is None:
            write(sys.stdout)
            sys.stdout.flush()
        else:
            replace_file(args.output, write, "w", "utf-8")
    return 0


def _with_constraints(sentences: Iterable[Any], path: str, model: Any, file: str
                      ) -> Iterator[Any]:
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


def _scored_text(model: Any, tokens: Any, shown: Any, gold: Any, allowed: Any,
                 args: argparse.Namespace) -> str:
    """Viterbi output with --probability and --marginals columns between the
    token columns and the gold label, so that the last two columns stay the
    gold label and the prediction, the ones 'sscrf eval' scores."""
    predicted = model.predict(tokens, allowed=allowed)
    extra: list[list[list[str]]] = [[[] for _ in sentence] for sentence in tokens]
    if args.probability:
        # log p(y | x) of the labeling written, under the unconstrained model
        for s, logp in enumerate(model.sequence_log_probability(tokens, predicted).tolist()):
            for cells in extra[s]:
                cells.append(f"{math.exp(logp):.6f}")
    if args.marginals is not None:
        for s, rows in enumerate(model.predict_marginals(tokens, allowed=allowed)):
            for t, row in enumerate(rows):
                if args.marginals == "all":
                    extra[s][t] += [f"{label}:{p:.6f}" for label, p in row.items()]
                else:
                    extra[s][t].append(f"{row[predicted[s][t]]:.6f}")
    lines = []
    for s, sentence in enumerate(shown):
        for t, columns in enumerate(sentence):
            cells = list(columns) + extra[s][t]
            cells += ([gold[s][t]] if gold is not None else []) + [predicted[s][t]]
            lines.append(" ".join(cells))
        lines.append("")
    return "\n".join(lines) + "\n" if lines else ""


def _nbest_text(nbest: Any, shown: Any, gold: Any, probability: bool, k: int) -> str:
    """Per token: its columns, [the K probabilities, best first], labelings 2..K,
    [gold], the best labeling last (the column 'sscrf eval' scores). No
    comment line: '#' is a token in CoNLL files. A sentence with fewer than K
    labelings has '_' in the missing columns, so every line has as many."""
    lines = []
    for s, candidates in enumerate(nbest):
        missing = ["_"] * (k - len(candidates))
        probabilities = ([f"{math.exp(logp):.6f}" for _, logp in candidates] + missing
                         if probability else [])
        best = candidates[0][0]
        for t, columns in enumerate(shown[s]):
            cells = list(columns) + probabilities
            cells += [labels[t] for labels, _ in candidates[1:]] + missing
            cells += ([gold[s][t]] if gold is not None else []) + [best[t]]
            lines.append(" ".join(cells))
        lines.append("")
    return "\n".join(lines) + "\n" if lines else ""
