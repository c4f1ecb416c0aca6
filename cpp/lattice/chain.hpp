// What every lattice kernel takes: one chain's log-potentials and masks,
// the transitions' exponentials, and the lattice's per-thread buffers.
// The kernels know nothing of features.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/errors.hpp"
#include "runtime/parallel.hpp"
#include "runtime/scratch.hpp"

namespace sscrf {

// Raised when the masks leave no labeling with non-zero probability.
struct NoLabeling : InputError {
  using InputError::InputError;
};

// Scores whose magnitude exceeds kMaxScore could overflow the sums along a
// chain (or already did: E = X·W can be infinite for finite X and W), so
// they are refused rather than turned into NaN.
constexpr double kMaxScore = 1e250;

struct ScoreOverflow : InputError {
  using InputError::InputError;
};

// Whether every value is finite and within kMaxScore. Compared as integers:
// on the bit patterns of magnitudes integer order is numeric order, with inf
// and NaN above every finite value, and integer compares vectorise (floating
// compares that may trap on NaN do not). Compiled for AVX2 too (see
// forward_backward.cpp): the baseline has no 64-bit integer compare, and
// every emission score passes through here.
bool scores_within(const double* v, int64_t size);

// Throws ScoreOverflow unless every value is finite and within kMaxScore.
inline void check_scores(const double* v, int64_t size) {
  if (!scores_within(v, size))
    throw ScoreOverflow(
        "scores overflow: an emission score E = X·W is infinite or larger than 1e250 in "
        "magnitude (feature values or weights too large)");
}

// exp(T - column max) once per evaluation, shared by every sequence. Rows
// are padded to ld = padded_width(S) columns with zeros.
//   factor:   [S][ld], factor[a][b] = exp(T[a][b] - col_max[b])
//   factor_t: [S][ld], factor_t[b][a] = factor[a][b]
//   col_max:  [ld], the largest T[a][b] over a (0 in the padding)
//   scored, scored_t: T ∘ factor and its transpose, the edge part of the
//     covariance kernel when the score is the chain's own (entropy)
struct TransitionFactors {
  int S = 0, ld = 0;
  std::vector<double, CacheLineAligned<double>> factor, factor_t, col_max, scored, scored_t;
  std::vector<double, CacheLineAligned<double>> log_padded;  // [S][ld] the log transitions, zero pad
  double largest_magnitude = 0.0;  // max |T[a][b]|
  TransitionFactors() = default;
  TransitionFactors(const double* transitions, int S);
};

// One sequence of n tokens and S labels.
//   emissions:   [n][S], emissions[t][b] = E[t, b]
//   transitions: [S][S], transitions[a][b] = T[a, b] (previous a, next b)
//   start, end:  [S], added to the first / last token's labels
//   node_mask:   [n][S] or nullptr, non-zero = label allowed at that token
//   edge_mask:   [n-1][S][S] or nullptr, edge_mask[t-1][a][b] non-zero =
//                y_{t-1}=a, y_t=b allowed
//   factors:     exp of the transitions (TransitionFactors), or nullptr to
//                compute them per call
struct Chain {
  int64_t n = 0;
  int S = 0;
  const double* emissions = nullptr;
  const double* transitions = nullptr;
  const double* start = nullptr;
  const double* end = nullptr;
  const uint8_t* node_mask = nullptr;
  const uint8_t* edge_mask = nullptr;
  const TransitionFactors* factors = nullptr;
};

// The lattice kernels' buffers, reused across sequences by one thread, so
// the hot loop allocates nothing once they have grown to the longest
// sequence. Rows of the scaled pass have stride ld (the kernels write the
// padding lanes as zeros); log-space rows have stride S. An objective's own
// buffers live in its own per-thread scratch, not here. One per thread
// (PerThread), aligned to cache lines.
struct alignas(64) Workspace {
  Scratch node_potential;                   // [n][S] log-potential of each node, then kBlock spare
  Scratch psi, alpha, beta;                 // [n][ld] scaled pass
  Scratch g;                                // [n][ld] psi_t beta_t / scale_t
  Scratch row_max, scale;                   // [n]
  Scratch log_alpha, log_beta;              // [n][S] log-space pass
  Scratch tmp;                              // scratch, [ld] to [S][S]
  Scratch outer;                            // [S][ld] Σ_t alpha_{t-1} ⊗ g_t
  Scratch cov_forward, cov_backward, cov_h; // [n][ld] covariance kernel
  Scratch cov_edge, cov_edge_t;             // [S][ld]
  Scratch cov_node;                         // [n][ld] centred node scores
  Scratch cov_edge_forward;                 // [n-1][ld] alpha_{t-1} · G, t >= 1
  Scratch cov_edge_backward;                // [n-1][ld] G g_t, t >= 1
  std::vector<uint8_t> reachable;           // [2][S]
  std::vector<int64_t> allowed;             // [ld] lane mask of labels allowed at a token
  std::vector<int32_t> backpointer;         // [n][S]
  std::vector<int32_t> pinned;              // [n] the one label a node mask allows, or -1
  Scratch run_end;                          // [S] end potentials of a run of unpinned tokens
  Scratch viterbi_transitions;              // [S][ld] padded transitions, for chains without factors
  TransitionFactors own_factors;
};

}  // namespace sscrf
