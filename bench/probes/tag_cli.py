#!/usr/bin/env python
"""``sscrf tag`` on a large file: time and whole-process peak memory.

CoNLL-2000 ``train.txt`` repeated ``--copies`` times (5: 1.06M tokens,
with its gold column) is tagged by a model trained on ``train.txt``
(``--max-iterations``, default 30), in two ways, each in its own process,
alternating over ``--repeats`` rounds:

- ``sscrf tag -m MODEL FILE -o OUT``: reads, tags and writes the file a
  batch of about 65,000 tokens at a time;
- at once: ``read_conll`` of the whole file, ``CRF.predict`` of all its
  sentences, ``write_conll`` of the result; what ``sscrf tag`` did before
  it streamed.

Both write the same bytes (checked). Reports medians of wall time (process
start to exit, imports and model loading included) and of peak RSS.

Usage::

    python bench/probes/tag_cli.py [--data DIR] [--copies 5] [--repeats 3]
"""

import argparse
import filecmp
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))  # the repository root, for bench.lib
from bench.lib import host  # noqa: E402
from bench.lib.host import machine_line  # noqa: E402
from bench.lib.tables import median  # noqa: E402
from bench.lib.timing import run_child  # noqa: E402

DEFAULT_DATA = os.path.join(host.DATA_ROOT, "conll2000")

AT_ONCE = """
import sys
import sscrf
from sscrf.io import read_conll, write_conll
model_path, path, out = sys.argv[1:]
model = sscrf.CRF.load(model_path)
corpus = read_conll(path, has_labels=False)
tokens = [[token[:-1] for token in sentence] for sentence in corpus.tokens]
gold = [[token[-1] for token in sentence] for sentence in corpus.tokens]
write_conll(out, tokens, gold, model.predict(tokens))
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=DEFAULT_DATA)
    parser.add_argument("--copies", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-iterations", type=int, default=30)
    args = parser.parse_args()
    train = os.path.join(args.data, "train.txt")
    with tempfile.TemporaryDirectory() as tmp:
        big, model = os.path.join(tmp, "big.txt"), os.path.join(tmp, "chunk.model")
        with open(train, "rb") as f:
            text = f.read()
        with open(big, "wb") as f:
            f.write(text * args.copies)
        n_tokens = sum(1 for line in text.splitlines() if line.strip()) * args.copies
        trained = run_child([sys.executable, "-m", "sscrf", "train", train, "-m", model,
                             "--max-iterations", str(args.max_iterations), "--quiet"])
        if trained.returncode:
            sys.exit(trained.stderr)
        commands = {
            "sscrf tag (batches)": [sys.executable, "-m", "sscrf", "tag", "-m", model, big,
                                    "-o", os.path.join(tmp, "streamed.txt")],
            "at once (read, predict, write)": [sys.executable, "-c", AT_ONCE, model, big,
                                               os.path.join(tmp, "at_once.txt")],
        }
        samples = {name: [] for name in commands}
        for _ in range(args.repeats):
            for name, command in commands.items():
                result = run_child(command)
                if result.returncode:
                    sys.exit(result.stderr)
                samples[name].append((result.wall_s, result.peak_rss_bytes))
        same = filecmp.cmp(os.path.join(tmp, "streamed.txt"), os.path.join(tmp, "at_once.txt"),
                           shallow=False)
    print(machine_line())
    print(f"{n_tokens:,} tokens (CoNLL-2000 train x {args.copies}), {args.repeats} rounds; "
          f"the same output: {'yes' if same else 'NO'}\n")
    print("| way | wall s (median) | tokens/s | peak MB (median) |")
    print("|:--|--:|--:|--:|")
    for name, values in samples.items():
        wall = median([w for w, _ in values])
        peak = median([p for _, p in values])
        print(f"| {name} | {wall:.2f} | {n_tokens / wall:,.0f} | {peak / 1e6:.0f} |")


if __name__ == "__main__":
    main()
