"""Resource bounds: no input makes sscrf read or allocate without limit.

The home of the defects where a small input asks for a huge resource: a
model file that declares more weights than the machine holds, templates
whose work grows far past their size, a line or a header that never ends, a
training run or an n-gram order whose memory or time cannot fit. Each must
end quickly in an ``SscrfError`` (``sscrf: error: ...`` on the command line)
that names the file and the bound, before the memory is allocated.

Whatever could allocate gigabytes or run without end runs in a child
interpreter under an address-space limit (RLIMIT_AS) and a timeout, so a
regression fails the test instead of taking the machine down.
"""

import json
import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import sscrf.cli.train
from sscrf import CRF, SscrfError
from sscrf import serialization as ser
from sscrf.active import NgramModel
from sscrf.active.ngram import MAX_ORDER
from sscrf.cli import main
from sscrf.features import parse_templates
from sscrf.features.templates import (MAX_DISTINCT_CELLS, MAX_TEMPLATE_CELLS,
                                      MAX_TEMPLATE_COLUMN, MAX_TEMPLATE_OFFSET,
                                      MAX_TEMPLATE_TEXT, MAX_TEMPLATES)
from sscrf.io import write_conll
from sscrf.model_file import LOAD_BYTES_PER_WEIGHT
from sscrf.resources import MAX_LINE_BYTES, available_memory

# The children import the sscrf this process imported (an installed copy in
# CI, the source tree with a built _core here).
PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(sscrf.__file__)))

#: Under AddressSanitizer (CI's sanitizer build preloads its runtime), which
#: reserves terabytes of address space: children run without RLIMIT_AS,
#: under ASan's own limit on resident memory instead.
ASAN = "asan" in os.environ.get("LD_PRELOAD", "")

#: The child's address space: room for the interpreter, numpy and the core's
#: threads, far less than any of the inputs below asks for.
LIMIT = 3 << 29  # 1.5 GiB

#: Resident memory a child may reach and still count as "nothing was
#: allocated" (ASan's allocator keeps up to 256 MiB of freed blocks).
SMALL_RSS = (400 << 20) + (ASAN << 30)

needs_address_limit = pytest.mark.skipif(
    ASAN, reason="ASan reserves terabytes of address space: no RLIMIT_AS below the machine")


def past_the_machine(bytes_per_unit):
    """Units (labels, attributes) whose square times ``bytes_per_unit`` is twice the
    memory available: past any machine, and so past the children's limits too."""
    return math.isqrt(2 * max(available_memory(), LIMIT) // bytes_per_unit) + 1


def run_limited(code, timeout=60, limit=LIMIT):
    """Run ``code`` in a fresh interpreter under RLIMIT_AS = ``limit`` (ASan's
    ``hard_rss_limit_mb`` under ASan); returns (return code, stdout, stderr)."""
    prologue = "" if ASAN else textwrap.dedent(f"""
        import resource
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, ({limit}, hard))
    """)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="2")
    if ASAN:
        env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS"),
                                                     f"hard_rss_limit_mb={2 * limit >> 20}"]))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PYTHON_DIR, env.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, "-c", prologue + textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=timeout, env=env)
    return proc.returncode, proc.stdout, proc.stderr


def child_outcome(code, timeout=60):
    """The JSON a child prints: ``{"error": type, "message": str, "rss": bytes}`` (its peak
    resident memory)."""
    wrapped = textwrap.dedent("""
        import json, resource
        try:
        {body}
            outcome = {{"error": None, "message": ""}}
        except Exception as e:
            outcome = {{"error": type(e).__name__, "message": str(e)}}
        # VmHWM is this process image's peak: ru_maxrss would keep the peak of
        # the pytest process it was forked from, which exec does not reset
        with open("/proc/self/status") as status:
            hwm = [line.split()[1] for line in status if line.startswith("VmHWM:")]
        outcome["rss"] = (int(hwm[0]) if hwm else
                          resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024
        print(json.dumps(outcome))
    """).format(body=textwrap.indent(textwrap.dedent(code), "    "))
    rc, out, err = run_limited(wrapped, timeout)
    assert rc == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def run_cli(*argv, timeout=60):
    """``python -m sscrf ARGV`` under the limits: (exit code, stderr)."""
    code = f"import sys\nfrom sscrf.cli import main\nsys.exit(main({[str(a) for a in argv]!r}))"
    rc, _, err = run_limited(code, timeout)
    return rc, err


# ---------------------------------------------------------------------------
# Model files: declared sizes are checked before anything is allocated
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dict_model_parts(tmp_path_factory):
    """The header and arrays of a small dense model trained on feature dicts."""
    path = tmp_path_factory.mktemp("dense") / "m.sscrf"
    X = [[{"w": "a"}, {"w": "b"}], [{"w": "b"}]]
    CRF(feature_set="dense", max_iterations=3, verbose=False, n_threads=1).fit(
        X, [["A", "B"], ["B"]]).save(path)
    return ser.load(path)


def forged_every_pair_file(path, parts, n_attributes, n_labels):
    """A compact model file of a few hundred KB that declares an every-pair layout of
    ``n_attributes`` × ``n_labels`` weights, one of them non-zero."""
    meta, _ = parts
    labels = [f"L{i}" for i in range(n_labels)]
    n_weights = n_attributes * n_labels + n_labels * n_labels + 2 * n_labels
    meta = dict(meta, labels=labels, layout="every pair", n_weights=n_weights,
                features=dict(meta["features"],
                              attributes=[f"w={i}" for i in range(n_attributes)]),
                params=dict(meta["params"], labels=None))
    ser.save(path, meta, {"coef_index": np.zeros(1, np.int64), "coef_values": np.ones(1)})
    return path


@pytest.mark.parametrize("size", [
    pytest.param("2 GiB", marks=needs_address_limit),
    "twice the machine",
])
def test_a_small_model_file_cannot_declare_more_than_memory_holds(tmp_path, dict_model_parts,
                                                                  size):
    # A = S: the fewest attributes and labels that declare the weights
    n = 11_000 if size == "2 GiB" else past_the_machine(LOAD_BYTES_PER_WEIGHT)
    path = forged_every_pair_file(tmp_path / "forged.sscrf", dict_model_parts, n, n)
    assert os.path.getsize(path) < 8 << 20
    got = child_outcome(f"from sscrf import CRF\nCRF.load({str(path)!r})")
    assert got["error"] == "NotEnoughMemory", got
    assert got["message"].startswith(f"{path}: loading this model would need about "), got
    assert "GiB available" in got["message"]
    assert got["rss"] < SMALL_RSS, got  # refused before the weights were allocated


def test_a_model_that_fits_still_loads_under_the_limit(tmp_path, dict_model_parts):
    path = forged_every_pair_file(tmp_path / "fits.sscrf", dict_model_parts, 2_000, 50)
    got = child_outcome(f"from sscrf import CRF\nm = CRF.load({str(path)!r})\n"
                        "assert len(m.coef_) == 2_000 * 50 + 50 * 50 + 100")
    assert got["error"] is None, got


def _templates_past(bound):
    """Template lines one step past ``bound``."""
    if bound == "templates":
        return [f"U{k}:%x[0,0]" for k in range(MAX_TEMPLATES + 1)]
    if bound == "cells":
        return ["U:" + "/".join(f"%x[{r},0]" for r in range(MAX_TEMPLATE_CELLS + 1))]
    if bound == "text":
        return ["U" + "x" * MAX_TEMPLATE_TEXT + "%x[0,0]"]
    if bound == "distinct cells":
        rows = list(range(-(MAX_DISTINCT_CELLS // 2), MAX_DISTINCT_CELLS // 2 + 1))
        return [f"U{k}:" + "/".join(f"%x[{r},0]" for r in rows[k:k + MAX_TEMPLATE_CELLS])
                for k in range(0, len(rows), MAX_TEMPLATE_CELLS)]
    if bound == "column":
        return [f"U:%x[0,{MAX_TEMPLATE_COLUMN + 1}]"]
    assert bound == "offset"
    return [f"U:%x[{MAX_TEMPLATE_OFFSET + 1},0]"]


BOUNDS = {"templates": MAX_TEMPLATES, "cells": MAX_TEMPLATE_CELLS, "text": MAX_TEMPLATE_TEXT,
          "distinct cells": MAX_DISTINCT_CELLS, "column": MAX_TEMPLATE_COLUMN,
          "offset": MAX_TEMPLATE_OFFSET}


@pytest.mark.parametrize("bound", list(BOUNDS))
def test_templates_past_a_bound_are_refused_naming_it(bound):
    lines = _templates_past(bound)
    with pytest.raises(SscrfError, match=str(BOUNDS[bound])):
        parse_templates(lines, source="big.tpl")


def test_templates_at_the_bounds_are_accepted():
    rows = list(range(-(MAX_DISTINCT_CELLS // 2), MAX_DISTINCT_CELLS // 2 - 1))  # and 1 below
    lines = ([f"U{k}:%x[0,0]" for k in range(MAX_TEMPLATES - 17)]
             + [f"U{k}:" + "/".join(f"%x[{r},0]" for r in rows[k:k + MAX_TEMPLATE_CELLS])
                for k in range(0, len(rows), MAX_TEMPLATE_CELLS)]
             + ["U" + "x" * (MAX_TEMPLATE_TEXT - 1) + f"%x[{MAX_TEMPLATE_OFFSET},"
                f"{MAX_TEMPLATE_COLUMN}]"])
    assert len(parse_templates(lines)) == MAX_TEMPLATES


@pytest.fixture(scope="module")
def template_model(tmp_path_factory):
    """A model trained with templates by `sscrf train`, and a file to tag."""
    from sscrf.demo import generate_hmm_corpus

    root = tmp_path_factory.mktemp("templates")
    X, y = generate_hmm_corpus(40, seed=3)
    write_conll(root / "train.txt", X, y)
    write_conll(root / "tag.txt", X)
    assert main(["train", str(root / "train.txt"), "-m", str(root / "m.model"),
                 "--max-iterations", "3", "--threads", "1", "--quiet"]) == 0
    return root


def test_a_model_with_templates_past_the_bounds_is_refused(template_model, capsys):
    # 100 KB of template text, copied into the attribute of every distinct
    # word: `sscrf tag` on a 240k-token file went past 6 GB.
    meta, arrays = ser.load(template_model / "m.model")
    long = "U00:" + "x" * 100_000 + "/%x[0,0]"
    meta["features"]["templates"] = [long] + meta["features"]["templates"][1:]
    forged = template_model / "long.model"
    ser.save(forged, meta, arrays)
    with pytest.raises(SscrfError, match=f"{forged}.*{MAX_TEMPLATE_TEXT}"):
        CRF.load(forged)
    assert main(["tag", "-m", str(forged), str(template_model / "tag.txt")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"sscrf: error: {forged}") and "Traceback" not in err


def test_tagging_with_templates_at_the_bounds_holds_one_template_at_a_time():
    # 1,000 templates of 250 characters on 32,768 distinct words: the
    # strings of every template at once took 5 GB.
    got = child_outcome(f"""
        from sscrf.features import FeatureExtractor
        templates = [f"U{{k:04d}}" + "x" * {MAX_TEMPLATE_TEXT - 6} + ":%x[0,0]"
                     for k in range({MAX_TEMPLATES})]
        extractor = FeatureExtractor(templates)
        extractor.fit([[["a"], ["b"]]])
        X = [[[f"w{{j}}.{{i}}"] for i in range(64)] for j in range(512)]
        features = extractor.transform(X)
        assert features.n_tokens == 32_768 and len(features.indices) == 0  # all unseen
    """, timeout=120)
    assert got["error"] is None, got
    assert got["rss"] < SMALL_RSS, got


# ---------------------------------------------------------------------------
# Unbounded reads: a line or a header that never ends
# ---------------------------------------------------------------------------

READERS = {
    "CRF.load": "from sscrf import CRF\nCRF.load('/dev/zero')",
    "read_conll": "from sscrf.io import read_conll\nread_conll('/dev/zero')",
    "read_conll, no labels": "from sscrf.io import read_conll\n"
                             "read_conll('/dev/zero', has_labels=False)",
    "read_conll, a stream": "from sscrf.io import read_conll\n"
                            "read_conll(open('/dev/zero', 'rb'))",
    "read_conllu": "from sscrf.io import read_conllu\nread_conllu('/dev/zero')",
    "read_templates": "from sscrf.features import read_templates\nread_templates('/dev/zero')",
    "read_constraints": "from sscrf.constraints import read_constraints\n"
                        "read_constraints('/dev/zero')",
}


@pytest.mark.parametrize("reader", list(READERS))
def test_reading_a_stream_without_line_ends_stops_with_an_error(reader):
    got = child_outcome(READERS[reader], timeout=60)
    assert got["error"] in ("SscrfError", "SscrfTypeError"), got
    assert got["message"].startswith("/dev/zero"), got
    if reader != "CRF.load":  # a model file is refused at its first bytes
        assert got["message"].startswith("/dev/zero:1: line longer than "
                                         f"{MAX_LINE_BYTES >> 20} MiB"), got
    assert got["rss"] < SMALL_RSS, got


LINE_READERS = {
    "read_conll": "from sscrf.io import read_conll as read",
    "read_templates": "from sscrf.features import read_templates as read",
    "read_constraints": "from sscrf.constraints import read_constraints as read",
}


@pytest.mark.parametrize("reader", list(LINE_READERS))
def test_a_line_past_the_bound_is_refused_at_its_number(tmp_path, reader):
    path = tmp_path / "long.txt"
    with open(path, "wb") as f:
        f.write(b"U00:%x[0,0] O\n\n" * 2 + b"x" * (MAX_LINE_BYTES + 1) + b" O\nz O\n")
    got = child_outcome(f"{LINE_READERS[reader]}\nread({str(path)!r})")
    assert got["message"].startswith(f"{path}:5: line longer than "
                                     f"{MAX_LINE_BYTES >> 20} MiB"), got


@pytest.mark.parametrize("start, message", [
    ("model", "goes on past the arrays its header declares"),
    ("huge header", "model header of 1,099,511,627,776 bytes is larger than the 1024 MiB"),
], ids=["model, then zeros", "1 TiB header, then zeros"])
def test_a_model_stream_is_read_no_further_than_its_header_declares(template_model, start,
                                                                   message):
    # A pipe that gives a valid model file (or a prefix that declares a
    # header of 1 TiB), then zeros without end.
    got = child_outcome(f"""
        import os, struct, threading
        from sscrf import CRF
        from sscrf.serialization import FORMAT_VERSION, MAGIC
        if {start!r} == "model":
            first = open({str(template_model / "m.model")!r}, "rb").read()
        else:
            first = MAGIC + struct.pack("<IQ", FORMAT_VERSION, 1 << 40)
        r, w = os.pipe()

        def feed():
            try:
                os.write(w, first)
                while True:
                    os.write(w, bytes(1 << 16))
            except OSError:  # the reader closed the pipe
                pass

        threading.Thread(target=feed, daemon=True).start()
        CRF.load(f"/dev/fd/{{r}}")
    """, timeout=60)
    assert got["error"] == "SscrfError", got
    assert message in got["message"], got
    assert got["rss"] < SMALL_RSS, got


def test_a_model_read_from_a_pipe_loads(template_model):
    path = template_model / "m.model"
    got = child_outcome(f"""
        import os, threading
        from sscrf import CRF
        data = open({str(path)!r}, "rb").read()
        r, w = os.pipe()
        threading.Thread(target=lambda: (os.write(w, data), os.close(w)), daemon=True).start()
        CRF.load(f"/dev/fd/{{r}}")
    """, timeout=60)
    assert got["error"] is None, got


@pytest.mark.parametrize("argv", [
    ["tag", "-m", "/dev/zero", "{tag}"],
    ["tag", "-m", "{model}", "/dev/zero"],
    ["train", "/dev/zero", "-m", "{out}"],
    ["train", "{train}", "--template", "/dev/zero", "-m", "{out}"],
    ["train", "{train}", "--unlabeled", "/dev/zero", "--entropy-weight", "0.1", "-m", "{out}"],
    ["train", "{train}", "--unlabeled", "{tag}", "--constraints", "/dev/zero", "--ge-weight",
     "1", "-m", "{out}"],
    ["eval", "-m", "{model}", "/dev/zero"],
], ids=["tag -m /dev/zero", "tag /dev/zero", "train /dev/zero", "train --template /dev/zero",
        "train --unlabeled /dev/zero", "train --constraints /dev/zero", "eval /dev/zero"])
def test_the_command_line_on_dev_zero_stops_with_an_error(template_model, argv):
    names = {"tag": template_model / "tag.txt", "model": template_model / "m.model",
             "out": template_model / "out.model", "train": template_model / "train.txt"}
    rc, err = run_cli(*[a.format(**names) for a in argv], timeout=60)
    assert rc == 2, err[-2000:]
    assert err.startswith("sscrf: error: /dev/zero"), err[-2000:]
    assert "Traceback" not in err


# ---------------------------------------------------------------------------
# Up-front size checks: a training run, select --order, MemoryError
# ---------------------------------------------------------------------------

#: One label per token: S² transition weights at 8m + 48 = 96 bytes each
#: (float32 history of 6 pairs). 30,000 labels (a 600 KB file) ask for 80 GiB.
MANY_LABELS = max(30_000, past_the_machine(96))


def test_training_that_cannot_fit_is_refused_with_the_estimate():
    got = child_outcome(f"""
        from sscrf import CRF
        X = [[{{"w": f"w{{i}}"}}] for i in range({MANY_LABELS})]
        y = [[f"L{{i}}"] for i in range({MANY_LABELS})]
        CRF(verbose=False, n_threads=1).fit(X, y)
    """, timeout=120)
    assert got["error"] == "NotEnoughMemory", got
    message = got["message"]
    assert message.startswith("training would need about "), got
    assert message.endswith(" GiB available"), got
    need = float(message.split("about ")[1].split(" GiB")[0].replace(",", ""))
    assert 0.9 < need / (MANY_LABELS ** 2 * 96 / 2 ** 30) < 1.1, message
    assert got["rss"] < SMALL_RSS, got


def test_sscrf_train_with_too_many_labels_is_an_error(tmp_path):
    train = tmp_path / "labels.txt"
    train.write_text("".join(f"w{i} L{i}\n\n" for i in range(MANY_LABELS)))
    rc, err = run_cli("train", train, "-m", tmp_path / "m.model", "--threads", "1",
                      timeout=120)
    assert rc == 2, err[-2000:]
    assert err.startswith("sscrf: error: training would need about "), err[-2000:]
    assert not (tmp_path / "m.model").exists()


def test_verbose_training_prints_the_memory_estimate(capsys):
    X = [[{"w": "a"}, {"w": "b"}], [{"w": "b"}]]
    CRF(max_iterations=2, verbose=True, n_threads=1).fit(X, [["A", "B"], ["B"]])
    line, = [l for l in capsys.readouterr().err.splitlines() if l.startswith("features:")]
    assert "parameters (observed feature set), training needs about " in line


def test_memory_is_known_on_this_machine():
    available = available_memory()
    assert available is not None and available > 0


def test_select_order_is_bounded(tmp_path):
    pool = tmp_path / "pool.txt"
    pool.write_text("a b c d\n\ne f\n\n".replace(" ", "\n"))
    rc, err = run_cli("select", "--strategy", "quota_sampling", "--order", 1_000_000, "-m", 1,
                      "--pool", pool, timeout=60)
    assert rc == 2, err[-2000:]
    assert err.startswith(f"sscrf: error: --order must be at most {MAX_ORDER}, not 1000000")
    with pytest.raises(SscrfError, match=f"at most {MAX_ORDER}"):
        NgramModel(n=10 ** 6)
    model = NgramModel(n=MAX_ORDER).fit([["a", "b"]])
    model.n = 10 ** 6
    with pytest.raises(SscrfError, match=f"at most {MAX_ORDER}"):
        model.fit([["a", "b"]])


def test_the_command_line_reports_memory_error_without_a_traceback(tmp_path, capsys,
                                                                  monkeypatch):
    def out_of_memory(args):
        raise MemoryError

    monkeypatch.setattr(sscrf.cli.train, "run", out_of_memory)
    assert main(["train", str(tmp_path / "t.txt"), "-m", str(tmp_path / "m.model")]) == 1
    err = capsys.readouterr().err
    assert err == "sscrf: error: out of memory\n"
