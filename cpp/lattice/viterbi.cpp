// Viterbi decoding of one chain in log space; ties go to the lower label.
#include <algorithm>
#include <limits>

#include "lattice/viterbi.hpp"
#include "runtime/dense_kernels.hpp"

namespace sscrf {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// Lanes [b0, b0 + 4·kVecs) of best_b = max_a (prev[a] + T[a][b]) and its
// argmax, both held in registers across the scan of a. Scanning a upwards
// with a strict comparison keeps the lowest a among ties, lane by lane as
// the scalar loop would. T has row stride ld; lanes past S are ignored.
template <int kVecs>
__attribute__((always_inline)) inline void max_plus_tile(const double* prev, const double* T,
                                                         int S, int ld, int b0, double* best,
                                                         int32_t* from) {
  vec4 top[kVecs], arg[kVecs];
  for (int j = 0; j < kVecs; ++j) {
    top[j] = splat4(kNegInf);
    arg[j] = splat4(0.0);
  }
  for (int a = 0; a < S; ++a) {
    const vec4 pa = splat4(prev[a]), label = splat4(a);
    const double* row = T + static_cast<int64_t>(a) * ld + b0;
    for (int j = 0; j < kVecs; ++j) {
      const vec4 v = pa + load4(row + 4 * j);
      const ivec4 better = v > top[j];
      top[j] = better ? v : top[j];
      arg[j] = better ? label : arg[j];
    }
  }
  double label_of[4 * kVecs];
  for (int j = 0; j < kVecs; ++j) {
    store4(best + b0 + 4 * j, top[j]);
    store4(label_of + 4 * j, arg[j]);
  }
  for (int k = 0; k < 4 * kVecs && b0 + k < S; ++k)
    from[b0 + k] = static_cast<int32_t>(label_of[k]);
}

}  // namespace

SSCRF_SIMD_CLONES
double viterbi(const Chain& c, Workspace& ws, int32_t* path) {
  const int64_t n = c.n;
  const int S = c.S;
  if (n == 0) return 0.0;
  // delta[t][b]: best score of a labeling of tokens 0..t that ends in b.
  ws.alpha.resize(static_cast<size_t>(n) * S);
  ws.backpointer.resize(static_cast<size_t>(n) * S);
  const int ld = padded_width(S);
  ws.tmp.resize(ld);
  double* delta = ws.alpha.data();
  double* best = ws.tmp.data();
  // The transitions in rows padded to whole vec4s (the pad is never chosen:
  // its lanes are dropped)
  const double* T = nullptr;
  if (!c.edge_mask) {
    if (c.factors) {
      T = c.factors->log_padded.data();
    } else {
      ws.viterbi_transitions.assign(static_cast<size_t>(S) * ld, 0.0);
      for (int a = 0; a < S; ++a)
        std::copy(c.transitions + a * S, c.transitions + (a + 1) * S,
                  ws.viterbi_transitions.data() + a * ld);
      T = ws.viterbi_transitions.data();
    }
  }
  auto node = [&](int64_t t, int b) {
    if (c.node_mask && !c.node_mask[t * S + b]) return kNegInf;
    double v = c.emissions[t * S + b];
    if (t == 0 && c.start) v += c.start[b];
    if (t == n - 1 && c.end) v += c.end[b];
    return v;
  };
  for (int b = 0; b < S; ++b) delta[b] = node(0, b);
  for (int64_t t = 1; t < n; ++t) {
    // delta_t(b) = node_t(b) + max_a (delta_{t-1}(a) + T[a][b]); scanning a
    // upwards with a strict comparison keeps the lowest a among ties.
    const double* prev = &delta[(t - 1) * S];
    int32_t* bp = &ws.backpointer[t * S];
    const uint8_t* em = c.edge_mask ? c.edge_mask + (t - 1) * S * S : nullptr;
    if (em) {
      for (int b = 0; b < S; ++b) {
        best[b] = kNegInf;
        bp[b] = 0;
      }
      for (int a = 0; a < S; ++a) {
        const double* Ta = &c.transitions[a * S];
        for (int b = 0; b < S; ++b) {
          const double v = em[a * S + b] ? prev[a] + Ta[b] : kNegInf;
          if (v > best[b]) {
            best[b] = v;
            bp[b] = a;
          }
        }
      }
    } else {
      for (int b0 = 0; b0 < ld; b0 += 24)
        with_vec_count(std::min(ld - b0, 24) / 4, [&](auto k) __attribute__((always_inline)) {
          max_plus_tile<k>(prev, T, S, ld, b0, best, bp);
        });
    }
    for (int b = 0; b < S; ++b) delta[t * S + b] = best[b] + node(t, b);
  }
  int32_t last = 0;
  double score = kNegInf;
  for (int b = 0; b < S; ++b) {
    if (delta[(n - 1) * S + b] > score) {
      score = delta[(n - 1) * S + b];
      last = b;
    }
  }
  if (score == kNegInf) throw NoLabeling("the masks allow no labeling of this sequence");
  path[n - 1] = last;
  for (int64_t t = n - 1; t >= 1; --t) path[t - 1] = ws.backpointer[t * S + path[t]];
  return score;
}

}  // namespace sscrf
