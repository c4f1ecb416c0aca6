#!/usr/bin/env bash
# A/B timing of the lattice kernels of two builds, in one process.
#
#   bash bench/kernel_ab/run.sh REV_A [REV_B] [ROUNDS] [S]
#
# REV_A and REV_B are git revisions (REV_B defaults to the working tree's
# cpp/). Both builds' forward_backward.cpp and covariance.cpp are compiled
# into separate namespaces of one binary and alternated on 400 random chains
# of 5-45 tokens; whole-evaluation timings on a noisy machine cannot see
# the few-percent changes this can. Two builds of the same sources read
# within about ±5% of each other (code placement), so trust larger ratios.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
a_rev=${1:?usage: run.sh REV_A [REV_B] [ROUNDS] [S]}
b_rev=${2:-}
rounds=${3:-30}
S=${4:-22}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/a" "$work/b"
git -C "$root" archive "$a_rev" cpp | tar -x -C "$work/a"
if [ -n "$b_rev" ]; then
  git -C "$root" archive "$b_rev" cpp | tar -x -C "$work/b"
else
  cp -r "$root/cpp" "$work/b/cpp"
fi
flags="-O3 -fno-math-errno -fopenmp-simd -std=c++17 -w -Wno-psabi"
for v in a b; do
  src="$work/$v/cpp"
  for f in "$here/wrap.cpp" "$src/covariance.cpp" "$src/forward_backward.cpp"; do
    g++ $flags -I"$src" -Dsscrf="kernel_ab_ns_$v" -DKERNEL_AB_ENTRY="kernel_ab_$v" \
      -c "$f" -o "$work/$v-$(basename "$f" .cpp).o"
  done
done
g++ $flags "$here/main.cpp" "$work"/*.o -o "$work/kernel_ab"
"$work/kernel_ab" 1 "$rounds" "$S"
"$work/kernel_ab" 0 "$rounds" "$S"
"$work/kernel_ab" 2 "$rounds" "$S"
