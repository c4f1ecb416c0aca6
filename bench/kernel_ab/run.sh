#!/usr/bin/env bash
# A/B timing of the lattice kernels of two builds, in one process.
#
#   bash bench/kernel_ab/run.sh REV_A [REV_B] [ROUNDS] [S]
#
# REV_A and REV_B are git revisions (REV_B defaults to the working tree's
# cpp/). Both builds' forward_backward.cpp and covariance.cpp are compiled
# into separate namespaces of one binary and alternated on 400 random chains
# of 5-45 tokens; whole-evaluation timings on a noisy machine cannot see
# the few-percent changes this can. Where each build lands in the binary
# may matter too: two builds of the same sources read up to 5% apart, the
# same way each time, while the buffers' alignment was left to malloc
# (before 8d0df7c), and 1.00-1.01 since. A second binary links the two
# builds the other way round, and each kernel's B/A is the geometric mean
# of its two readings (B/A in the first, A/B in the second), which cancels
# what remains of that.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
a_rev=${1:?usage: run.sh REV_A [REV_B] [ROUNDS] [S]}
b_rev=${2:-}
rounds=${3:-30}
S=${4:-22}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/A" "$work/B"
git -C "$root" archive "$a_rev" cpp | tar -x -C "$work/A"
if [ -n "$b_rev" ]; then
  git -C "$root" archive "$b_rev" cpp | tar -x -C "$work/B"
else
  cp -r "$root/cpp" "$work/B/cpp"
fi
flags="-O3 -fno-math-errno -fopenmp-simd -std=c++17 -w -Wno-psabi"
# link_pair OUT FIRST SECOND: a binary whose slot a runs build FIRST, b SECOND
link_pair() {
  local out=$1 objs=()
  for slot in a b; do
    local build=$2
    [ "$slot" = b ] && build=$3
    local src="$work/$build/cpp" lat="$work/$build/cpp" run="$work/$build/cpp"
    # sources by layer (cpp/lattice, cpp/runtime), or flat in cpp/ before that
    [ -d "$src/lattice" ] && lat="$src/lattice" && run="$src/runtime"
    local files=("$here/wrap.cpp" "$lat/covariance.cpp" "$lat/forward_backward.cpp")
    # the lattice buffers' allocator, from 8889cee on
    [ -f "$run/block_cache.cpp" ] && files+=("$run/block_cache.cpp")
    for f in "${files[@]}"; do
      local o="$work/$out-$slot-$(basename "$f" .cpp).o"
      g++ $flags -I"$src" -Dsscrf="kernel_ab_ns_$slot" -DKERNEL_AB_ENTRY="kernel_ab_$slot" \
        -c "$f" -o "$o"
      objs+=("$o")
    done
  done
  g++ $flags "$here/main.cpp" "${objs[@]}" -o "$work/$out"
}
link_pair ab A B
link_pair ba B A
for kernel in 1 0 2; do
  one=$("$work/ab" "$kernel" "$rounds" "$S")
  two=$("$work/ba" "$kernel" "$rounds" "$S")
  echo "$one"
  echo "$two (builds swapped)"
  python3 - "$one" "$two" <<'PY'
import math, re, sys
first, second = (float(re.search(r"median b/a ([0-9.]+)", s).group(1)) for s in sys.argv[1:])
name = sys.argv[1].split(",")[0]
print(f"  {name}: B/A {math.sqrt(first / second):.3f} (geometric mean of {first:.3f} and 1/{second:.3f})")
PY
done
