// Exact N-best (k-best Viterbi) decoding of one chain.
#pragma once

#include <cstdint>

#include "lattice/chain.hpp"

namespace sscrf {

// The most k·n·S that nbest_rows accepts: k labelings of n tokens take
// about 13 bytes of lattice state per unit of k·n·S, so 1e8 is about 1.3 GB.
constexpr double kMostNbestStates = 1e8;

// The rows to allocate for the k best labelings of n tokens and S labels:
// min(k, S^n, 2^31 - 1). Throws InputError when k < 1, or when k·n·S
// exceeds kMostNbestStates, rather than failing in the allocation.
int64_t nbest_rows(int64_t k, int64_t n, int S);

// The k best allowed labelings (exact k-best Viterbi), best first; ties of
// exactly equal score go to the lexicographically smaller labeling.
//   paths:  [k][n], row j = the j-th best labeling (rows past the count are
//           not written)
//   scores: [k], scores[j] = its score (the sum order of viterbi())
// Returns how many were found: min(k, number of allowed labelings); 1 (the
// empty labeling, score 0) when n = 0. O(n S (S + k log(S k))) time, up to
// O(n S² k log(S k)) when many scores tie exactly; O(n S k) memory (k capped
// at S^n). Uses ws.alpha and ws.backpointer. Throws NoLabeling when the
// masks allow nothing, InputError when k < 1.
int nbest(const Chain& chain, int k, Workspace& ws, int32_t* paths, double* scores);

}  // namespace sscrf
