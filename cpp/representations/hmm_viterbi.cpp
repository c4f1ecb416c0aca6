// Viterbi over the states that can emit each token, in probabilities: each
// step's scores are divided by their largest, which leaves every argmax as it
// was and keeps the best path's score at 1 (no underflow along it).
#include "representations/hmm_viterbi.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "runtime/errors.hpp"

namespace sscrf {

namespace {

struct Workspace {
  std::vector<double> score;   // [entries] each step's scores, divided by their largest
  std::vector<int64_t> entry;  // [n + 1]
};

// The predecessor (support position at t-1) of the state at position j of
// step t on its best path: the first of the largest products, which the
// forward pass took its maximum over (the same products, so the same bits).
int64_t predecessor(const SparseHmm& hmm, const int32_t* x, int64_t t, int64_t j,
                    const Workspace& ws) {
  const int64_t kp = ws.entry[t] - ws.entry[t - 1];
  const int32_t* previous = hmm.support.data() + hmm.support_ptr[x[t - 1]];
  const int32_t state = hmm.support[hmm.support_ptr[x[t]] + j];
  const double* score = ws.score.data() + ws.entry[t - 1];
  int64_t best = 0;
  double best_p = -1.0;
  for (int64_t i = 0; i < kp; ++i) {
    const double p = score[i] * hmm.transitions[previous[i] * hmm.K + state];
    if (p > best_p) {
      best_p = p;
      best = i;
    }
  }
  return best;
}

// Max-product forward without back-pointers (the branch of an argmax in the
// inner loop made it slower than forward-backward); the path is traced back
// afterwards at one state per token.
void viterbi(const SparseHmm& hmm, const int32_t* x, int64_t n, Workspace& ws, int32_t* out) {
  const int64_t K = hmm.K;
  ws.entry.resize(static_cast<size_t>(n + 1));
  ws.entry[0] = 0;
  for (int64_t t = 0; t < n; ++t)
    ws.entry[t + 1] = ws.entry[t] + hmm.support_ptr[x[t] + 1] - hmm.support_ptr[x[t]];
  ws.score.assign(static_cast<size_t>(ws.entry[n]), 0.0);
  for (int64_t t = 0; t < n; ++t) {
    const int64_t e = hmm.support_ptr[x[t]], k = ws.entry[t + 1] - ws.entry[t];
    const int32_t* states = hmm.support.data() + e;
    const double* emission = hmm.emission.data() + e;
    double* next = ws.score.data() + ws.entry[t];
    if (t == 0) {
      for (int64_t j = 0; j < k; ++j) next[j] = hmm.start[states[j]];
    } else {
      const int64_t kp = ws.entry[t] - ws.entry[t - 1];
      const int32_t* previous = hmm.support.data() + hmm.support_ptr[x[t - 1]];
      const double* score = ws.score.data() + ws.entry[t - 1];
      // four predecessors a sweep: next[j] and states[j] are loaded once per
      // four rows (one row a sweep took 1.5x as long)
      const double* A = hmm.transitions.data();
      int64_t i = 0;
      for (; i + 4 <= kp; i += 4) {
        const double* r0 = A + previous[i] * K;
        const double* r1 = A + previous[i + 1] * K;
        const double* r2 = A + previous[i + 2] * K;
        const double* r3 = A + previous[i + 3] * K;
        const double s0 = score[i], s1 = score[i + 1], s2 = score[i + 2], s3 = score[i + 3];
        for (int64_t j = 0; j < k; ++j) {
          const int32_t q = states[j];
          next[j] = std::max(std::max(next[j], std::max(s0 * r0[q], s1 * r1[q])),
                             std::max(s2 * r2[q], s3 * r3[q]));
        }
      }
      for (; i < kp; ++i) {
        const double* row = A + previous[i] * K;
        const double s = score[i];
        for (int64_t j = 0; j < k; ++j) next[j] = std::max(next[j], s * row[states[j]]);
      }
    }
    double best = 0.0;
    for (int64_t j = 0; j < k; ++j) {
      next[j] *= emission[j];
      best = std::max(best, next[j]);
    }
    if (!(best > 0.0))
      throw InputError("the HMM gives a sentence probability 0 at its token " +
                       std::to_string(t) + " (symbol " + std::to_string(x[t]) +
                       "): no state sequence can emit it");
    const double inv = 1.0 / best;
    for (int64_t j = 0; j < k; ++j) next[j] *= inv;
  }
  const double* last = ws.score.data() + ws.entry[n - 1];
  int64_t q = 0;
  for (int64_t j = 1; j < ws.entry[n] - ws.entry[n - 1]; ++j)
    if (last[j] > last[q]) q = j;
  for (int64_t t = n - 1; t >= 0; --t) {
    out[t] = hmm.support[hmm.support_ptr[x[t]] + q];
    if (t > 0) q = predecessor(hmm, x, t, q, ws);
  }
}

}  // namespace

void hmm_viterbi_states(const SparseHmm& hmm, const int32_t* symbols, const int64_t* offsets,
                        int64_t n_sentences, int n_threads, int32_t* states) {
  decode_sentences<Workspace>(symbols, offsets, n_sentences, n_threads, states,
                              [&](const int32_t* x, int64_t n, Workspace& ws, int32_t* out) {
                                viterbi(hmm, x, n, ws, out);
                              });
}

}  // namespace sscrf
