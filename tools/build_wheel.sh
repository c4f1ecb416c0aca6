#!/usr/bin/env bash
# Build a manylinux wheel of sscrf and prove it installs and runs without a
# compiler.
#
#   tools/build_wheel.sh [OUTDIR]      (default: build/wheelhouse)
#
# 1. `pip wheel .` builds a linux_x86_64 wheel linked to this machine's libgomp;
# 2. `auditwheel repair` vendors libgomp (and anything else outside the
#    manylinux policy) into sscrf.libs/ and retags the wheel with the oldest
#    manylinux_2_X policy this build satisfies;
# 3. a fresh virtual environment installs the repaired wheel with
#    --only-binary=:all: (numpy and scipy come from the index as wheels) and
#    CC=/bin/false CXX=/bin/false, then runs `sscrf demo` outside the source
#    tree, so a compiler or the checkout being used would fail it.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-build/wheelhouse}")
python=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== building the wheel"
"$python" -m pip wheel --no-deps -q -w "$work/raw" .
raw=$(ls "$work"/raw/sscrf-*.whl)
echo "built $(basename "$raw") ($(du -k "$raw" | cut -f1) KB)"

echo "== auditwheel show (before)"
"$python" -m auditwheel show "$raw"

echo "== auditwheel repair"
mkdir -p "$out"
"$python" -m auditwheel repair -w "$work/repaired" "$raw"
wheel=$(ls "$work"/repaired/sscrf-*.whl)
cp "$wheel" "$out/"
wheel="$out/$(basename "$wheel")"
echo "repaired: $(basename "$wheel") ($(du -k "$wheel" | cut -f1) KB)"
"$python" -m zipfile -l "$wheel" | grep -E "sscrf\.libs/|_core|py\.typed|LICENSE" || true

echo "== fresh venv, binary-only install, no compiler"
"$python" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q --upgrade pip
CC=/bin/false CXX=/bin/false "$work/venv/bin/python" -m pip install -q --only-binary=:all: "$wheel"
cd "$work"
CC=/bin/false CXX=/bin/false "$work/venv/bin/python" - <<'PY'
import importlib.metadata as m
import pathlib

import sscrf

assert sscrf.__version__ == m.version("sscrf"), (sscrf.__version__, m.version("sscrf"))
pkg = pathlib.Path(sscrf.__file__).parent
assert (pkg / "py.typed").is_file(), "py.typed missing"
licenses = [f for f in m.files("sscrf") if f.name == "LICENSE"]
assert licenses, "LICENSE missing from the installed distribution"
print("sscrf", sscrf.__version__, "from", pkg)
print("license file:", licenses[0])
print("build_info:", sscrf.build_info())
PY
echo "== sscrf demo (in $PWD, outside the source tree)"
CC=/bin/false CXX=/bin/false "$work/venv/bin/sscrf" demo
echo "== ok: $wheel"
