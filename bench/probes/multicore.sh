#!/usr/bin/env bash
# Thread scaling on a many-core machine: the suite's scaling item at
# 1, 2, 4, ... up to every usable CPU, the parts of a dense likelihood
# evaluation and of L-BFGS at the same thread counts (thread_phases.py), then
# the per-evaluation comparison with CRFsuite, both feature sets. sscrf and
# python-crfsuite must be importable.
#
#   bash bench/probes/multicore.sh OUT_DIR [CONLL2000_DIR]
#
# Writes OUT_DIR/machine.txt, OUT_DIR/scaling/suite.{json,md},
# OUT_DIR/phases.{md,json}, OUT_DIR/eval_time.md and, where pytest and
# hypothesis are importable, OUT_DIR/tests.txt: the test suite on that
# machine's compiler and CPU (GCC 13.3 on a Xeon once found bits that GCC 12
# here did not). About 7 minutes on 16 cores.
set -u -o pipefail
out=${1:?usage: bash bench/probes/multicore.sh OUT_DIR [CONLL2000_DIR]}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
data=${2:-$root/../shared/data/conll2000}
py=${PYTHON:-python3}
mkdir -p "$out"
{
  date -u
  lscpu
  grep -H . /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null
  "$py" -c "import sscrf; print('sscrf build:', sscrf.build_info())"
} > "$out/machine.txt" 2>&1
cat "$out/machine.txt"
threads=$("$py" -c "import sys; sys.path.insert(0, '$root'); from bench.lib import host
print(','.join(map(str, host.default_threads())))")
status=0
"$py" "$root/bench/suite/run.py" --items scaling --threads "$threads" --data "$data" \
  --out "$out/scaling" > "$out/scaling.log" 2>&1 || status=1
tail -n 40 "$out/scaling/suite.md" 2>/dev/null || tail -n 20 "$out/scaling.log"
"$py" "$here/thread_phases.py" --data "$data" --threads "$threads" \
  --json "$out/phases.json" > "$out/phases.md" || status=1
cat "$out/phases.md"
"$py" "$here/eval_time_conll2000.py" --data "$data" --feature-sets observed,dense \
  --threads "$threads" 2>&1 | tee "$out/eval_time.md" || status=1
if "$py" -c "import pytest, hypothesis" 2>/dev/null; then
  "$py" -m pytest -q -p no:cacheprovider "$root/tests" > "$out/tests.txt" 2>&1 || status=1
  tail -n 3 "$out/tests.txt"
fi
exit $status
