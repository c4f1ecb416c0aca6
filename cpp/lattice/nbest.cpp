// Exact N-best (k-best Viterbi) decoding of one chain in log space.
//
// Order of labelings: higher score first; among exactly equal scores the
// lexicographically smaller labeling (label ids read from t = 0) first.
//
// Recursion. Keep, for every token t and label b, the list L_t(b) of the
// (at most k) best prefixes y_0..y_t with y_t = b, in the order above:
//   L_0(b)  = { node_0(b) }                                  (if allowed)
//   L_t(b)  = top_k { (s + T[a][b]) + node_t(b) : a allowed before b,
//                                                 s ∈ L_{t-1}(a) }
// and the answer is top_k ∪_b L_{n-1}(b) (end weights are in node_{n-1}).
// Exact: if a prefix p ending in b at t is not in L_t(b), k kept prefixes
// beat it, and each, completed with p's suffix, beats p completed with it
// (a higher prefix score stays at least as high after adding the same
// suffix; equal scores keep the lexicographic order, prefixes having the
// same length). Ties created only by rounding (two different prefix scores
// that round to the same sum after a suffix is added) are beyond this
// argument; with exactly representable sums (e.g. integer scores) the
// result is exactly the brute-force order.
//
// Lexicographic order of prefixes without storing them: every kept prefix
// of layer t gets a rank among all kept prefixes of layer t (all labels);
// prefix (parent, b) < (parent', b') iff rank(parent) < rank(parent') or
// parent = parent' and b < b'. Within L_t(b) the last label is b, so the
// parent's rank orders equal scores.
//
// Cost, with k first capped at S^n (the number of labelings): per (t, b) a
// heap merge of the S lists finds the k-th best score in O(S + k log S),
// the candidates scoring at least that are sorted, and per t the S k kept
// prefixes are ranked by a counting sort: O(n S (S + k log(S k))) time when few
// candidates tie with the k-th score, O(n S² k log(S k)) at worst (every
// candidate tied), and O(n S k) memory.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "lattice/nbest.hpp"

namespace sscrf {

namespace {

// One candidate prefix: its score, the rank of its parent (layer t-1), and
// the parent's slot b*K + r in layer t-1 (or its own slot in the last layer).
struct Candidate {
  double score;
  int64_t rank;
  int32_t slot;
};

// x before y: higher score, then lexicographically smaller prefix.
struct Before {
  bool operator()(const Candidate& x, const Candidate& y) const {
    return x.score > y.score || (x.score == y.score && x.rank < y.rank);
  }
};

// Keep the best min(m, |cand|) candidates, sorted; returns how many.
size_t select_top(std::vector<Candidate>& cand, size_t m) {
  m = std::min(m, cand.size());
  if (m < cand.size()) std::nth_element(cand.begin(), cand.begin() + m, cand.end(), Before());
  std::sort(cand.begin(), cand.begin() + m, Before());
  return m;
}

// Head of one list in the merge: its current score, position r, label a.
struct Head {
  double score;
  int32_t r;
  int a;
};

struct LowerScore {
  bool operator()(const Head& x, const Head& y) const { return x.score < y.score; }
};

}  // namespace

int nbest(const Chain& c, int k, Workspace& ws, int32_t* paths, double* scores) {
  const int64_t n = c.n;
  const int S = c.S;
  if (k < 1) throw InputError("k must be a positive integer, got " + std::to_string(k));
  if (n == 0) {  // one labeling, the empty one, scoring 0
    scores[0] = 0.0;
    return 1;
  }
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();
  // No list can hold more than S^n prefixes: K = min(k, S^n).
  int64_t K = 1;
  for (int64_t t = 0; t < n && K < k; ++t) K *= S;
  K = std::min<int64_t>(K, k);
  if (static_cast<int64_t>(S) * K > std::numeric_limits<int32_t>::max())
    throw InputError("k * S is too large for n-best decoding");
  const size_t layer = static_cast<size_t>(S) * K;

  // score[t][b][r], parent[t][b][r] = slot a*K + r' of its parent in layer
  // t-1, count[t][b] = |L_t(b)|, rank[b][r] = rank of that prefix in its layer.
  ws.alpha.resize(static_cast<size_t>(n) * layer);
  ws.backpointer.resize(static_cast<size_t>(n) * layer);
  double* score = ws.alpha.data();
  int32_t* parent = ws.backpointer.data();
  std::vector<int32_t> count(static_cast<size_t>(n) * S, 0);
  std::vector<int64_t> rank_prev(layer), rank_cur(layer);
  std::vector<std::pair<int64_t, int32_t>> order;  // (rank of parent, slot)
  std::vector<int64_t> bucket(layer + 1);            // counting sort of ranks
  std::vector<Candidate> cand;
  std::vector<Head> heap;
  order.reserve(layer);
  cand.reserve(layer);

  auto node = [&](int64_t t, int b) {
    if (c.node_mask && !c.node_mask[t * S + b]) return kNegInf;
    double v = c.emissions[t * S + b];
    if (t == 0 && c.start) v += c.start[b];
    if (t == n - 1 && c.end) v += c.end[b];
    return v;
  };

  for (int b = 0; b < S; ++b) {
    const double v = node(0, b);
    if (v == kNegInf) continue;
    score[b * K] = v;
    parent[b * K] = -1;
    count[b] = 1;
    rank_prev[b * K] = b;
  }
  for (int64_t t = 1; t < n; ++t) {
    const double* prev = score + (t - 1) * layer;
    const int32_t* prev_count = &count[(t - 1) * S];
    const uint8_t* em = c.edge_mask ? c.edge_mask + (t - 1) * S * S : nullptr;
    order.clear();
    for (int b = 0; b < S; ++b) {
      const double nb = node(t, b);
      if (nb == kNegInf) continue;
      // Candidates (s + T[a][b]) + node_t(b), the sum order of viterbi().
      // Each list L_{t-1}(a) is sorted by score, and rounding is monotone,
      // so its candidates' scores do not increase with r. A heap merge of
      // the S lists by score alone finds theta, the K-th largest candidate
      // score; the best K in the full order all score >= theta, and those
      // are a prefix of every list.
      heap.clear();
      for (int a = 0; a < S; ++a) {
        if (prev_count[a] == 0 || (em && !em[a * S + b])) continue;
        heap.push_back({(prev[a * K] + c.transitions[a * S + b]) + nb, 0, a});
      }
      std::make_heap(heap.begin(), heap.end(), LowerScore());
      double theta = kNegInf;
      for (int64_t popped = 0; popped < K && !heap.empty(); ++popped) {
        std::pop_heap(heap.begin(), heap.end(), LowerScore());
        Head& h = heap.back();
        theta = h.score;
        if (++h.r < prev_count[h.a]) {
          h.score = (prev[h.a * K + h.r] + c.transitions[h.a * S + b]) + nb;
          std::push_heap(heap.begin(), heap.end(), LowerScore());
        } else {
          heap.pop_back();
        }
      }
      cand.clear();
      for (int a = 0; a < S; ++a) {
        if (prev_count[a] == 0 || (em && !em[a * S + b])) continue;
        const double Tab = c.transitions[a * S + b];
        for (int32_t r = 0; r < prev_count[a]; ++r) {
          const int32_t slot = static_cast<int32_t>(a * K + r);
          const double v = (prev[slot] + Tab) + nb;
          if (v < theta) break;
          cand.push_back({v, rank_prev[slot], slot});
        }
      }
      const size_t m = select_top(cand, static_cast<size_t>(K));
      double* out = score + t * layer + b * K;
      int32_t* up = parent + t * layer + b * K;
      for (size_t i = 0; i < m; ++i) {
        out[i] = cand[i].score;
        up[i] = cand[i].slot;
        order.push_back({cand[i].rank, static_cast<int32_t>(b * K + i)});
      }
      count[t * S + b] = static_cast<int32_t>(m);
    }
    // Rank the new prefixes by (rank of parent, b): a counting sort on the
    // parent's rank, stable, and `order` lists them with b ascending (a
    // parent has at most one child per b).
    std::fill(bucket.begin(), bucket.end(), 0);
    for (const auto& e : order) ++bucket[e.first + 1];
    for (size_t i = 1; i < bucket.size(); ++i) bucket[i] += bucket[i - 1];
    for (const auto& e : order) rank_cur[e.second] = bucket[e.first]++;
    std::swap(rank_prev, rank_cur);
  }

  // The k best complete labelings among the last layer's lists.
  cand.clear();
  const double* last = score + (n - 1) * layer;
  for (int b = 0; b < S; ++b)
    for (int32_t r = 0; r < count[(n - 1) * S + b]; ++r) {
      const int32_t slot = static_cast<int32_t>(b * K + r);
      cand.push_back({last[slot], rank_prev[slot], slot});
    }
  if (cand.empty()) throw NoLabeling("the masks allow no labeling of this sequence");
  const size_t m = select_top(cand, static_cast<size_t>(k));
  for (size_t j = 0; j < m; ++j) {
    scores[j] = cand[j].score;
    int32_t slot = cand[j].slot;
    int32_t* path = paths + j * n;
    for (int64_t t = n - 1; t >= 0; --t) {
      path[t] = static_cast<int32_t>(slot / K);
      slot = parent[t * layer + slot];
    }
  }
  return static_cast<int>(m);
}

int64_t nbest_rows(int64_t k, int64_t n, int S) {
  if (k < 1) throw InputError("k must be a positive integer, got " + std::to_string(k));
  // room for min(k, S^n) labelings, never more than there can be
  const int64_t k_max = std::min<int64_t>(k, INT32_MAX);
  int64_t rows = 1;
  for (int64_t t = 0; t < n && rows < k_max; ++t) rows *= S;
  rows = std::min(rows, k_max);
  if (static_cast<double>(rows) * std::max<int64_t>(n, 1) * S > kMostNbestStates)
    throw InputError("k = " + std::to_string(k) + " is too large for a sentence of " +
                     std::to_string(n) + " tokens and " + std::to_string(S) +
                     " labels (k·n·S must stay below 1e8, about 1.3 GB of lattice state)");
  return rows;
}

}  // namespace sscrf
