// Shared types of the lattice kernels: one chain's log-potentials, its masks,
// and reusable per-thread buffers. The kernels know nothing of features.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "parallel.hpp"

namespace sscrf {

// Raised when the masks leave no labeling with non-zero probability.
struct NoLabeling : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// Scores whose magnitude exceeds kMaxScore could overflow the sums along a
// chain (or already did: E = X·W can be infinite for finite X and W), so
// they are refused rather than turned into NaN.
constexpr double kMaxScore = 1e250;

struct ScoreOverflow : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// Whether every value is finite and within kMaxScore. Compared as integers:
// on the bit patterns of magnitudes integer order is numeric order, with inf
// and NaN above every finite value, and integer compares vectorise (floating
// compares that may trap on NaN do not). Compiled for AVX2 too (see
// forward_backward.cpp): the baseline has no 64-bit integer compare, and a
// scalar loop over every emission score cost 1.6% of an observed CoNLL-2000
// likelihood call.
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

// The allocator of Workspace's buffers: entries that resize() adds are left
// unset rather than zeroed. A buffer shrinks and grows with the sentences,
// and every kernel writes each entry it reads, so the zero-filling of each
// growth was pure cost (about 5% of the instructions of an entropy
// evaluation on CoNLL-2000). Built with SSCRF_POISON_SCRATCH (CI's second
// build) the added entries are NaN instead, so that the tests catch a read
// of an entry that nothing wrote. resize(n, value) and assign still fill.
// Buffers start on a cache line (CacheLineAligned).
template <class T>
struct UnsetOnGrowth : CacheLineAligned<T> {
  using value_type = T;
  template <class U>
  struct rebind {
    using other = UnsetOnGrowth<U>;
  };
  UnsetOnGrowth() = default;
  template <class U>
  UnsetOnGrowth(const UnsetOnGrowth<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept {
#ifdef SSCRF_POISON_SCRATCH
    ::new (static_cast<void*>(p)) U(std::numeric_limits<U>::quiet_NaN());
#else
    ::new (static_cast<void*>(p)) U;
#endif
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
using Scratch = std::vector<double, UnsetOnGrowth<double>>;

// Buffers reused across sequences by one thread, so the hot loop allocates
// nothing once they have grown to the longest sequence. Rows of the scaled
// pass have stride ld (the kernels write the padding lanes as zeros);
// log-space rows have stride S.
// One per thread, side by side in a vector: aligned to cache lines so that
// threads growing their buffers do not write each other's lines.
struct alignas(64) Workspace {
  Scratch node_potential;                   // [n][S] log-potential of each node, then kBlock spare
  Scratch psi, alpha, beta;                 // [n][ld] scaled pass
  Scratch g;                                // [n][ld] psi_t beta_t / scale_t
  Scratch row_max, scale;                   // [n]
  Scratch log_alpha, log_beta;              // [n][S] log-space pass
  Scratch tmp;                              // scratch, [ld] to [S][S]
  Scratch outer;                            // [S][ld] Σ_t alpha_{t-1} ⊗ g_t
  Scratch emissions;                        // [n][S] scores of the current sequence
  Scratch edge_scratch;                     // [S][S] for callers
  Scratch cov_forward, cov_backward, cov_h; // [n][ld] covariance kernel
  Scratch cov_edge, cov_edge_t;             // [S][ld]
  Scratch cov_node;                         // [n][ld] centred node scores
  Scratch cov_edge_forward;                 // [n-1][ld] alpha_{t-1} · G, t >= 1
  Scratch cov_edge_backward;                // [n-1][ld] G g_t, t >= 1
  Scratch partial_node, partial_edge;       // constrained marginals
  Scratch ge_node;                          // [n][S] GE score of each node
  Scratch alternative_weights;              // [K] q_k of a sequence's alternatives
  std::vector<uint8_t> reachable;           // [2][S]
  std::vector<int64_t> allowed;             // [ld] lane mask of labels allowed at a token
  std::vector<int32_t> backpointer;         // [n][S]
  std::vector<int32_t> pinned;              // [n] the one label a node mask allows, or -1
  Scratch run_end;                          // [S] end potentials of a run of unpinned tokens
  Scratch viterbi_transitions;              // [S][ld] padded transitions, for chains without factors
  TransitionFactors own_factors;
};

// Forward-backward. Returns log Z over the labelings the masks allow.
//   node:     [n][S] node marginals p(y_t = b), or nullptr
//   edge:     [n-1][S][S] edge marginals p(y_{t-1} = a, y_t = b), or nullptr
//   edge_sum: [S][S], Σ_t of the edge marginals is ADDED here, or nullptr
// The emissions are read before any output is written, so `node` may alias
// `chain.emissions`. Throws NoLabeling when the masks allow nothing. A node
// mask that pins tokens to one label splits the lattice there (see
// forward_backward.cpp): only the runs of other tokens take O(S²) per token.
double forward_backward(const Chain& chain, Workspace& ws, double* node,
                        double* edge, double* edge_sum);

// log Z only (a forward pass).
double log_partition(const Chain& chain, Workspace& ws);

// Best labeling into path [n]; returns its score. Ties go to the lower
// label index. Throws NoLabeling when the masks allow nothing.
double viterbi(const Chain& chain, Workspace& ws, int32_t* path);

// The k best allowed labelings (exact k-best Viterbi), best first; ties of
// exactly equal score go to the lexicographically smaller labeling.
//   paths:  [k][n], row j = the j-th best labeling (rows past the count are
//           not written)
//   scores: [k], scores[j] = its score (the sum order of viterbi())
// Returns how many were found: min(k, number of allowed labelings); 1 (the
// empty labeling, score 0) when n = 0. O(n S (S + k log(S k))) time, up to
// O(n S² k log(S k)) when many scores tie exactly; O(n S k) memory (k capped
// at S^n). Uses ws.alpha and ws.backpointer. Throws
// NoLabeling when the masks allow nothing, std::invalid_argument when k < 1.
int nbest(const Chain& chain, int k, Workspace& ws, int32_t* paths, double* scores);

// Score of the labeling y [n] (no masks are consulted).
double labeling_score(const Chain& chain, const int32_t* y);

}  // namespace sscrf
