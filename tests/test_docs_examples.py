"""The code blocks of README.md and of the guide under docs/ run.

Each Markdown file is one test: its ```python blocks run in order in one
namespace, in a temporary folder that holds the demo corpus as files (see
:func:`corpus_files`):

- ``train.txt``, ``test.txt``, ``dev.txt``, ``small.txt``, ``seed.txt``,
  ``conll2000/train.txt``, ``conll2000/test.txt``: ``word POS chunk``;
- ``raw.txt``, ``pool.txt``: ``word POS``, unlabeled;
- ``partial.txt``: ``word POS chunk`` with ``*`` (unknown) and ``A|B``
  (either) label cells;
- ``bc2gm.txt``: ``word label`` (a words-only file);
- ``feats.txt``: labeled features for the default templates (GE);
- ``my.template``: a CRF++ template file.

Markers (invisible on a rendered page):

- a block fenced ```python no-run is compiled, not run (a cluster, a
  download);
- ``<!-- docs-test: setup`` ... ``-->`` holds Python run before the file's
  blocks.

The ``sscrf ...`` lines of ```bash blocks run through ``sscrf.cli.main``
in the same folder, one after the other (``> file`` and ``2> file`` are
followed; ``python -m sscrf`` counts as ``sscrf``); lines with a pipe and
the lines of :data:`NOT_RUN` are only parsed.
"""

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from sscrf.cli import main
from sscrf.constraints import write_constraints
from sscrf.demo import generate_hmm_corpus
from sscrf.io import write_conll

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md"] + sorted(
    p for p in (ROOT / "docs").rglob("*.md") if "_build" not in p.parts)

#: Shell lines that cannot run here, each with the reason.
NOT_RUN = {
    # the next two follow a step done by hand (labeling chosen.txt)
    "sscrf train labeled1.txt --init r0.model -m r1.model":
        "needs chosen.txt labeled by hand",
    "sscrf eval -m r1.model test.txt": "follows the hand-labeled round",
}

FENCE = re.compile(r"^```(\S*)[ \t]*(.*)$")
SETUP = re.compile(r"<!--\s*docs-test:\s*setup\s*\n(.*?)-->", re.S)


def blocks(text):
    """(language, options, code, line number) of every fenced block."""
    found, lines, i = [], text.split("\n"), 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if match and match.group(1):
            start, body = i + 1, []
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            found.append((match.group(1), match.group(2).split(), "\n".join(body) + "\n", start))
        i += 1
    return found


def shell_lines(code):
    """The lines of a bash block, continuations joined, comments dropped."""
    joined = code.replace("\\\n", " ")
    for line in joined.split("\n"):
        line = re.sub(r"(^|\s)#.*$", "", line).strip()
        if line:
            yield re.sub(r"\s+", " ", line)


def corpus_files(folder):
    """Write the demo corpus files the examples read (the module docstring lists them)."""
    X, y = generate_hmm_corpus(120, seed=0)
    X_test, y_test = generate_hmm_corpus(40, seed=1)
    X_raw, _ = generate_hmm_corpus(80, seed=2)
    X_dev, y_dev = generate_hmm_corpus(40, seed=3)
    for name, tokens, labels in [("train.txt", X, y), ("test.txt", X_test, y_test),
                                 ("dev.txt", X_dev, y_dev),
                                 ("small.txt", X[:40], y[:40]), ("seed.txt", X[:20], y[:20]),
                                 ("conll2000/train.txt", X, y),
                                 ("conll2000/test.txt", X_test, y_test),
                                 ("raw.txt", X_raw, None), ("pool.txt", X_raw, None),
                                 ("bc2gm.txt", [[t[:1] for t in s] for s in X], y)]:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        write_conll(folder / name, tokens, labels)
    partial = [[label if t % 3 else ("*" if t % 2 else f"{label}|O") for t, label in
                enumerate(labels)] for labels in y[:60]]
    with open(folder / "partial.txt", "w") as f:
        for sentence, labels in zip(X[:60], partial):
            f.writelines(f"{' '.join(token)} {label}\n" for token, label in zip(sentence, labels))
            f.write("\n")
    write_constraints(folder / "feats.txt", {
        "U02:the": {"B-NP": 0.95, "I-NP": 0.01, "B-VP": 0.01, "I-VP": 0.01, "O": 0.02},
        "U02:said": {"B-NP": 0.01, "I-NP": 0.01, "B-VP": 0.95, "I-VP": 0.01, "O": 0.02},
        "U02:.": {"B-NP": 0.01, "I-NP": 0.01, "B-VP": 0.01, "I-VP": 0.01, "O": 0.96}})
    (folder / "my.template").write_text("U00:%x[-1,0]\nU01:%x[0,0]\nU02:%x[1,0]\n"
                                        "U03:%x[0,1]\nB\n")


def run_shell_line(line, where):
    words = shlex.split(line)
    if words[:3] == ["python", "-m", "sscrf"]:
        words = ["sscrf"] + words[3:]
    argv, redirects = [], {}
    iterator = iter(words[1:])
    for word in iterator:
        if word in (">", "2>"):
            redirects[word] = next(iterator)
        else:
            argv.append(word)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    for sign, text in ((">", out), ("2>", err)):
        if sign in redirects:
            Path(redirects[sign]).write_text(text.getvalue())
    assert code == 0, f"{where}: {line!r} exited {code}: {err.getvalue()[-2000:]}"


def ids(path):
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("page", PAGES, ids=ids)
def test_code_blocks_run(page, tmp_path, monkeypatch):
    text = page.read_text(encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    corpus_files(tmp_path)
    namespace = {"__name__": "__docs__"}
    for match in SETUP.finditer(text):
        line = text[:match.start()].count("\n") + 2
        exec(compile("\n" * (line - 1) + match.group(1), f"{page.name} (setup)", "exec"),
             namespace)
    ran = 0
    for language, options, code, line in blocks(text):
        where = f"{ids(page)}:{line}"
        if language == "python":
            compiled = compile("\n" * (line - 1) + code, str(page), "exec")
            if "no-run" not in options:
                with contextlib.redirect_stdout(io.StringIO()):
                    exec(compiled, namespace)
                ran += 1
        elif language == "bash" and "no-run" not in options:
            for command in shell_lines(code):
                if (command.startswith(("sscrf ", "python -m sscrf")) and "|" not in command
                        and command not in NOT_RUN):
                    run_shell_line(command, where)
                    ran += 1
    if page.parent.name == "guide" or page.name == "README.md":
        runnable = [b for b in blocks(text) if b[0] in ("python", "bash") and "no-run" not in b[1]]
        assert ran > 0 or not runnable, f"{ids(page)}: no block ran"


def test_not_run_lines_are_still_in_the_readme():
    shell = [line for language, _, code, _ in blocks((ROOT / "README.md").read_text())
             if language == "bash" for line in shell_lines(code)]
    assert set(NOT_RUN) <= set(shell)


@pytest.mark.parametrize("page", [p for p in PAGES if p.name != "architecture.md"], ids=ids)
def test_relative_links_name_files(page):
    # Sphinx leaves these to this test (docs/conf.py suppresses myst.xref_missing).
    text = page.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)\s#]+)(?:#[^)]*)?\)", text):
        if "://" in target:
            continue
        assert (page.parent / target).exists(), f"{ids(page)}: link to missing {target}"


def test_markers_are_seen():
    text = ("<!-- docs-test: setup\nx = 1\n-->\n```python no-run\nimport cluster\n```\n"
            "```bash\nsscrf train a.txt \\\n  -m b.model   # comment\n```\n")
    assert SETUP.search(text).group(1) == "x = 1\n"
    assert [(lang, opts) for lang, opts, _, _ in blocks(text)] == [("python", ["no-run"]),
                                                                   ("bash", [])]
    assert list(shell_lines(blocks(text)[1][2])) == ["sscrf train a.txt -m b.model"]
