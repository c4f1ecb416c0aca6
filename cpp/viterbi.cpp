// Viterbi decoding of one chain in log space; ties go to the lower label.
#include <limits>

#include "dense_kernels.hpp"
#include "lattice.hpp"

namespace sscrf {

SSCRF_SIMD_CLONES
double viterbi(const Chain& c, Workspace& ws, int32_t* path) {
  const int64_t n = c.n;
  const int S = c.S;
  if (n == 0) return 0.0;
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();
  // delta[t][b]: best score of a labeling of tokens 0..t that ends in b.
  ws.alpha.resize(static_cast<size_t>(n) * S);
  ws.backpointer.resize(static_cast<size_t>(n) * S);
  ws.tmp.resize(S);
  double* delta = ws.alpha.data();
  double* best = ws.tmp.data();
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
    for (int b = 0; b < S; ++b) {
      best[b] = kNegInf;
      bp[b] = 0;
    }
    for (int a = 0; a < S; ++a) {
      const double* Ta = &c.transitions[a * S];
      for (int b = 0; b < S; ++b) {
        const double v = (em && !em[a * S + b]) ? kNegInf : prev[a] + Ta[b];
        if (v > best[b]) {
          best[b] = v;
          bp[b] = a;
        }
      }
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
