// Scoring E = X·W and back-projection Xᵀ·∂E over the attribute layout.
#include "layer/linear_layer.hpp"

#include <algorithm>

#include "runtime/dense_kernels.hpp"
#include "runtime/parallel.hpp"

namespace sscrf {

void Layout::index_rows() {
  const int ld = padded_width(S);
  rows.assign(n_attributes, AttributeRow{});
  n_padded_rows = 0;
  for (int32_t a = 0; a < n_attributes; ++a) {
    AttributeRow& r = rows[a];
    r.n_labels = static_cast<int32_t>(row_ptr[a + 1] - row_ptr[a]);
    r.offset = r.padded(S) ? static_cast<int64_t>(n_padded_rows++) * ld : row_ptr[a];
    if (r.n_labels == 1) r.label = label_ids[row_ptr[a]];
  }
}

LayerWeights::LayerWeights(const Layout& layout, const double* theta_, int64_t n_occurrences,
                           int n_threads)
    : theta(theta_) {
  const int S = layout.S;
  const int ld = padded_width(S);
  const int64_t n = layout.n_attributes;
  const bool dense = S >= 2 && layout.n_weights() == n * S;
  double* copy = nullptr;
  if (dense && ld <= kRowsInPlaceMaxLanes) {
    attribute_rows = theta;
    row_stride = S;
    return;
  }
  const size_t copy_doubles = static_cast<size_t>(n) * ld;
  if (S <= kRowCopyMaxLabels && n_occurrences >= n &&
      copy_doubles * sizeof(double) <= kRowCopyMaxBytes) {
    // The buffer starts on a cache line: a 4-lane row is one vec4 within one line.
    copy = row_copy.reserve(copy_doubles);
    attribute_rows = copy;
    row_stride = ld;
  }
  double* rows = copy ? nullptr : padded.reserve(static_cast<size_t>(layout.n_padded_rows) * ld);
  // Each row belongs to one attribute: disjoint writes.
#pragma omp parallel for schedule(static, 4096) num_threads(effective_threads(n_threads, n / 4096 + 1))
  for (int64_t a = 0; a < n; ++a) {
    const AttributeRow& r = layout.rows[a];
    double* row = copy ? copy + a * ld : (r.padded(S) ? rows + r.offset : nullptr);
    if (!row) continue;
    std::fill(row, row + ld, 0.0);
    for (int64_t j = layout.row_ptr[a]; j < layout.row_ptr[a + 1]; ++j)
      row[layout.label_ids[j]] = theta[j];
  }
}

namespace {

// The feature values of a run of occurrences: an array, or one constant
// (binary features). The test is loop-invariant, so loops are unswitched.
struct OccurrenceValues {
  const double* array;
  double constant;
  double operator[](int64_t k) const { return array ? array[k] : constant; }
};

// Lanes [b0, b0 + 4·kVecs) of one label row in registers: wide enough that
// the adds of consecutive entries do not wait on each other, narrow enough
// to stay in the 16 vector registers.
template <int kVecs>
struct LaneWindow {
  vec4 acc[kVecs];
  __attribute__((always_inline)) LaneWindow() {
    for (int j = 0; j < kVecs; ++j) acc[j] = splat4(0.0);
  }
  __attribute__((always_inline)) void add(double x, const double* row) {
    const vec4 xs = splat4(x);
    for (int j = 0; j < kVecs; ++j) acc[j] += xs * load4(row + 4 * j);
  }
  __attribute__((always_inline)) void store(double* lanes) const {
    for (int j = 0; j < kVecs; ++j) store4(lanes + 4 * j, acc[j]);
  }
};

// out[b] = lanes[b / 4][b % 4] for b < S (4·(kVecs - 1) < S <= 4·kVecs):
// whole vec4s, then the last lanes under a fixed bound: GCC turns a loop up
// to S into a memmove call per token.
template <int kVecs>
__attribute__((always_inline)) inline void store_lanes(const vec4* lanes, int S, double* out) {
  for (int j = 0; j + 1 < kVecs; ++j) store4(out + 4 * j, lanes[j]);
  double last[4];
  store4(last, lanes[kVecs - 1]);
  for (int b = 0; b < 4; ++b)
    if (4 * (kVecs - 1) + b < S) out[4 * (kVecs - 1) + b] = last[b];
}

constexpr int kWindowVecs = 6;
constexpr int kWindowLanes = 4 * kWindowVecs;

// out[b0 + b] += Σ_i x[i] · rows[i][b0 + b] for the window's lanes below S.
template <int kVecs>
__attribute__((always_inline)) inline void add_rows_to_window(const double* const* rows,
                                                              const double* x, int n, int b0,
                                                              int S, double* out) {
  LaneWindow<kVecs> w;
  for (int i = 0; i < n; ++i) w.add(x[i], rows[i] + b0);
  double lanes[4 * kVecs];
  w.store(lanes);
  const int end = std::min(4 * kVecs, S - b0);
  for (int b = 0; b < end; ++b) out[b0 + b] += lanes[b];
}

// out[b] += Σ_i x[i] · rows[i][b] for b < S; rows are padded to ld lanes.
SSCRF_SIMD_CLONES
void add_padded_rows(const double* const* rows, const double* x, int n, int S, int ld,
                     double* out) {
  for (int b0 = 0; b0 < ld; b0 += kWindowLanes) {
    with_vec_count(std::min(ld - b0, kWindowLanes) / 4, [&](auto n_vecs)
                   __attribute__((always_inline)) {
      add_rows_to_window<n_vecs>(rows, x, n, b0, S, out);
    });
  }
}

// g[j] += Σ_k val[k] · d_emissions[tok[k]][lab[j]] over occurrences k of
// the attribute and its labels lab[j] in lanes [b0, b0 + 4·kVecs); returns
// the index of its first label past the window.
template <int kVecs>
__attribute__((always_inline)) inline int64_t back_project_window(
    const int32_t* tok, OccurrenceValues val, int64_t k0, int64_t k1, const double* d_emissions,
    int S, int b0, const int32_t* lab, int64_t j, int64_t m, double* g) {
  LaneWindow<kVecs> w;
  constexpr int64_t kAhead = 8;
  for (int64_t k = k0; k < k1; ++k) {
    if (k + kAhead < k1) {
      // every line of the window: a row is not aligned to lines
      const double* ahead = d_emissions + static_cast<int64_t>(tok[k + kAhead]) * S + b0;
      for (int b = 0; b < 4 * kVecs; b += 8) __builtin_prefetch(ahead + b);
      __builtin_prefetch(ahead + 4 * kVecs - 1);
    }
    w.add(val[k], d_emissions + static_cast<int64_t>(tok[k]) * S + b0);
  }
  double lanes[4 * kVecs];
  w.store(lanes);
  if (m == S) {  // a full row: labels 0..S-1, lane b is label b0 + b
    const int end = std::min(4 * kVecs, S - b0);
    for (int b = 0; b < end; ++b) g[b0 + b] += lanes[b];
    return b0 + end;
  }
  for (; j < m && lab[j] < b0 + 4 * kVecs; ++j) g[j] += lanes[lab[j] - b0];
  return j;
}

// The padded-row case of back_project_attribute: the occurrences' residual
// rows are read whole, window by window, and only windows holding one of
// the attribute's labels are summed.
SSCRF_SIMD_CLONES
void back_project_padded(const int32_t* tok, OccurrenceValues val, int64_t k0, int64_t k1,
                         const double* d_emissions, int S, const int32_t* lab, int64_t m,
                         double* g) {
  const int ld = padded_width(S);
  int64_t j = 0;
  for (int b0 = 0; b0 < ld && j < m; b0 += kWindowLanes) {
    if (lab[j] >= b0 + kWindowLanes) continue;
    with_vec_count(std::min(ld - b0, kWindowLanes) / 4, [&](auto n_vecs)
                   __attribute__((always_inline)) {
      j = back_project_window<n_vecs>(tok, val, k0, k1, d_emissions, S, b0, lab, j, m, g);
    });
  }
}

// score_tokens over LayerWeights::attribute_rows, padded_width(S) =
// 4·kVecs: each occurrence adds its attribute's whole row to the token's
// window, in occurrence order; the lanes past S are dropped.
template <int kVecs>
__attribute__((always_inline)) inline void score_tokens_by_rows(const Corpus& corpus,
                                                                int64_t tok_begin,
                                                                int64_t tok_end, int S,
                                                                const double* attribute_rows,
                                                                int64_t stride, double* emissions) {
  const int32_t* attr = corpus.indices.data();
  const OccurrenceValues values{corpus.values.empty() ? nullptr : corpus.values.data(),
                                corpus.constant_value};
  const int64_t nnz = static_cast<int64_t>(corpus.indices.size());
  // The row of the occurrence kAhead on is prefetched (32 rather than 16:
  // 0.94x the time of a dense CoNLL-2000 likelihood call).
  constexpr int64_t kAhead = 32;
  constexpr int ld = 4 * kVecs;
  for (int64_t t = tok_begin; t < tok_end; ++t) {
    LaneWindow<kVecs> w;
    for (int64_t k = corpus.indptr[t]; k < corpus.indptr[t + 1]; ++k) {
      if (k + kAhead < nnz) {
        const double* p = attribute_rows + static_cast<int64_t>(attr[k + kAhead]) * stride;
        for (int b = 0; b < ld; b += 8) __builtin_prefetch(p + b);
        __builtin_prefetch(p + ld - 1);
      }
      w.add(values[k], attribute_rows + static_cast<int64_t>(attr[k]) * stride);
    }
    store_lanes<kVecs>(w.acc, S, emissions + (t - tok_begin) * S);
  }
}

// How score_tokens_mixed sums a token's whole rows. With kVecs = 0, any
// padded width: batched, then added window by window (add_padded_rows).
// With kVecs > 0, a padded width of 4·kVecs lanes (one window): added as they
// come into a window held in registers: the same sums in the same order
// (flushed every kWholeRowBatch rows too), without storing the batch and
// reading it back.
constexpr int kWholeRowBatch = 64;

template <int kVecs>
struct WholeRowSums {
  LaneWindow<kVecs> window;
  int n = 0;
  __attribute__((always_inline)) void add(const double* row, double v, int S, int ld,
                                          double* out) {
    if (n == kWholeRowBatch) flush(S, ld, out);
    window.add(v, row);
    ++n;
  }
  __attribute__((always_inline)) void flush(int S, int, double* out) {
    if (n == 0) return;
    double lanes[4 * kVecs];
    window.store(lanes);
    for (int b = 0; b < S; ++b) out[b] += lanes[b];
    window = LaneWindow<kVecs>();
    n = 0;
  }
};

template <>
struct WholeRowSums<0> {
  const double* rows[kWholeRowBatch];
  double values[kWholeRowBatch];
  int n = 0;
  __attribute__((always_inline)) void add(const double* row, double v, int S, int ld,
                                          double* out) {
    if (n == kWholeRowBatch) flush(S, ld, out);
    rows[n] = row;
    values[n++] = v;
  }
  __attribute__((always_inline)) void flush(int S, int ld, double* out) {
    if (n > 0) add_padded_rows(rows, values, n, S, ld, out);
    n = 0;
  }
};

// score_tokens without a row copy: rows[] says per attribute whether its
// row is summed whole (see WholeRowSums) or entry by entry.
template <int kVecs>
__attribute__((always_inline)) inline void score_tokens_mixed(const Corpus& corpus,
                                                              int64_t tok_begin,
                                                              int64_t tok_end,
                                                              const Layout& layout,
                                                              const LayerWeights& weights,
                                                              double* emissions) {
  const int S = layout.S, ld = padded_width(S);
  // A token's row is summed in a local row (in L1) and stored once, rather
  // than the sentence's rows zeroed first and added to in place (a chunk's
  // rows are not in L1 or L2); the same sums in the same order. Rows wider
  // than kLocalLanes are still zeroed in place.
  constexpr int kLocalLanes = kVecs > 0 ? 4 * kVecs : 256;
  const bool local_row = ld <= kLocalLanes;
  if (!local_row) std::fill(emissions, emissions + (tok_end - tok_begin) * S, 0.0);
  // Up to kRowCopyMaxLabels without the row copy: entry by entry, in the
  // copy's order (no padded rows exist then).
  const bool by_entry = S <= kRowCopyMaxLabels;
  const AttributeRow* rows = layout.rows.data();
  const int32_t* label_ids = layout.label_ids.data();
  const double* theta = weights.theta;
  const double* padded = weights.padded.data();
  const int32_t* attr = corpus.indices.data();
  const OccurrenceValues values{corpus.values.empty() ? nullptr : corpus.values.data(),
                                corpus.constant_value};
  const int64_t nnz = static_cast<int64_t>(corpus.indices.size());
  // W rows are visited in attribute order, i.e. at random: prefetch the
  // attribute entries 48 occurrences ahead and their weights 16 ahead, so
  // the loads of an occurrence are (mostly) in cache when it is reached
  // (the best of the distances tried, by 3-5% over 32 and 12).
  constexpr int64_t kFar = 48, kNear = 16;
  double local[kLocalLanes];
  for (int64_t t = tok_begin; t < tok_end; ++t) {
    double* const out = emissions + (t - tok_begin) * S;
    double* row = out;
    if (local_row) {
      if constexpr (kVecs > 0) {
        for (int j = 0; j < kVecs; ++j) store4(local + 4 * j, splat4(0.0));
      } else {
        for (int b = 0; b < ld; b += 4) store4(local + b, splat4(0.0));
      }
      row = local;
    }
    // A token's whole rows are summed apart and added to its row at the
    // end (and every kWholeRowBatch of them), after the entries before.
    WholeRowSums<kVecs> whole;
    for (int64_t k = corpus.indptr[t]; k < corpus.indptr[t + 1]; ++k) {
      if (k + kFar < nnz) __builtin_prefetch(rows + attr[k + kFar]);
      if (k + kNear < nnz) {
        const AttributeRow& near = rows[attr[k + kNear]];
        if (!by_entry && near.whole(S)) {
          const double* p = (near.padded(S) ? padded : theta) + near.offset;
          for (int b = 0; b < ld; b += 8) __builtin_prefetch(p + b);
          __builtin_prefetch(p + ld - 1);
        } else {
          __builtin_prefetch(theta + near.offset);
          if (near.n_labels > 1) __builtin_prefetch(label_ids + near.offset);
        }
      }
      const AttributeRow& r = rows[attr[k]];
      const double v = values[k];
      if (!by_entry && r.whole(S)) {
        // A full row is read in place: its ld - S lanes past S belong to
        // the next row (or to T, after the last one) and are dropped.
        whole.add((r.padded(S) ? padded : theta) + r.offset, v, S, ld, row);
      } else if (r.n_labels == 1) {
        row[r.label] += v * theta[r.offset];
      } else {
        const double* w = theta + r.offset;
        const int32_t* lab = label_ids + r.offset;
        for (int32_t j = 0; j < r.n_labels; ++j) row[lab[j]] += v * w[j];
      }
    }
    whole.flush(S, ld, row);
    if (local_row) {
      if constexpr (kVecs > 0) {
        vec4 lanes[kVecs];
        for (int j = 0; j < kVecs; ++j) lanes[j] = load4(local + 4 * j);
        store_lanes<kVecs>(lanes, S, out);
      } else {
        std::copy(local, local + S, out);
      }
    }
  }
}

}  // namespace

SSCRF_SIMD_CLONES
void score_tokens(const Corpus& corpus, int64_t tok_begin, int64_t tok_end,
                  const Layout& layout, const LayerWeights& weights, double* emissions) {
  const int S = layout.S, ld = padded_width(S);
  if (weights.attribute_rows) {
    with_vec_count(ld / 4, [&](auto n_vecs) __attribute__((always_inline)) {
      score_tokens_by_rows<n_vecs>(corpus, tok_begin, tok_end, S, weights.attribute_rows,
                                   weights.row_stride, emissions);
    });
    return;
  }
  if (S > kRowCopyMaxLabels && ld <= kWindowLanes) {
    with_vec_count(ld / 4, [&](auto n_vecs) __attribute__((always_inline)) {
      score_tokens_mixed<n_vecs>(corpus, tok_begin, tok_end, layout, weights, emissions);
    });
    return;
  }
  score_tokens_mixed<0>(corpus, tok_begin, tok_end, layout, weights, emissions);
}

SSCRF_SIMD_CLONES
void back_project_attribute(const Corpus& corpus, const ChunkIndex& chunk, size_t i,
                            const Layout& layout, const double* d_emissions,
                            double* grad_weights) {
  const int S = layout.S;
  const int32_t a = chunk.attributes[i];
  const int64_t r0 = layout.row_ptr[a], r1 = layout.row_ptr[a + 1];
  const int32_t* tok = chunk.token.data();
  // Rare attributes cost a few cache misses each before their first
  // occurrence (the gradient, the label ids, a residual row): ask for those
  // of the attribute kAhead slots on. With several labels, every line of its
  // gradient row and of the residual row (3-4 lines each with 22 labels;
  // the first line alone leaves the back-projection 1.3x slower).
  constexpr size_t kAhead = 8;
  if (i + kAhead < chunk.attributes.size()) {
    const int32_t ahead = chunk.attributes[i + kAhead];
    const int64_t r = layout.row_ptr[ahead], r_end = layout.row_ptr[ahead + 1];
    const double* e = d_emissions + static_cast<int64_t>(tok[chunk.attr_ptr[i + kAhead]]) * S;
    __builtin_prefetch(grad_weights + r, 1);
    __builtin_prefetch(&layout.label_ids[r]);
    __builtin_prefetch(e);
    if (r_end - r > 1) {
      for (int64_t q = r + 8; q < r_end; q += 8) __builtin_prefetch(grad_weights + q, 1);
      __builtin_prefetch(grad_weights + r_end - 1, 1);
      for (int b = 8; b < S; b += 8) __builtin_prefetch(e + b);
      __builtin_prefetch(e + S - 1);
    }
  }
  if (r1 == r0) return;
  double* g = grad_weights + r0;
  if (chunk.first[i]) std::fill(g, g + (r1 - r0), 0.0);
  const int32_t* lab = &layout.label_ids[r0];
  const int64_t k0 = chunk.attr_ptr[i], k1 = chunk.attr_ptr[i + 1];
  const OccurrenceValues val{chunk.value.empty() ? nullptr : chunk.value.data(),
                             corpus.constant_value};
  if (S <= kBlock) {
    // One vec4 per occurrence (a residual row is readable kBlock wide), even
    // and odd occurrences apart: for one label, the same sums as the column
    // loop below, and no case per kind of attribute.
    vec4 even = splat4(0.0), odd = splat4(0.0);
    int64_t k = k0;
    for (; k + 1 < k1; k += 2) {
      if (k + 8 < k1) __builtin_prefetch(d_emissions + static_cast<int64_t>(tok[k + 8]) * S);
      even += splat4(val[k]) * load4(d_emissions + static_cast<int64_t>(tok[k]) * S);
      odd += splat4(val[k + 1]) * load4(d_emissions + static_cast<int64_t>(tok[k + 1]) * S);
    }
    if (k < k1) even += splat4(val[k]) * load4(d_emissions + static_cast<int64_t>(tok[k]) * S);
    const vec4 sum = even + odd;
    for (int64_t j = 0; j < r1 - r0; ++j) g[j] += sum[lab[j]];
    return;
  }
  if (layout.rows[a].whole(S)) {
    back_project_padded(tok, val, k0, k1, d_emissions, S, lab, r1 - r0, g);
    return;
  }
  if (r1 - r0 > 1) {
    // Several labels: occurrences outer, so that each residual row (a cache
    // miss when the attribute is frequent) is read once for all of them, and
    // the sums run in g, which stays in L1.
    const int64_t m = r1 - r0;
    for (int64_t k = k0; k < k1; ++k) {
      if (k + 8 < k1) __builtin_prefetch(d_emissions + static_cast<int64_t>(tok[k + 8]) * S);
      const double* row = d_emissions + static_cast<int64_t>(tok[k]) * S;
      const double v = val[k];
      for (int64_t j = 0; j < m; ++j) g[j] += v * row[lab[j]];
    }
    return;
  }
  for (int64_t j = 0; j < r1 - r0; ++j) {
    const double* column = d_emissions + lab[j];
    double even = 0.0, odd = 0.0;
    int64_t k = k0;
    for (; k + 1 < k1; k += 2) {
      if (k + 16 < k1) __builtin_prefetch(column + static_cast<int64_t>(tok[k + 16]) * S);
      even += val[k] * column[static_cast<int64_t>(tok[k]) * S];
      odd += val[k + 1] * column[static_cast<int64_t>(tok[k + 1]) * S];
    }
    if (k < k1) even += val[k] * column[static_cast<int64_t>(tok[k]) * S];
    g[j] += even + odd;
  }
}

}  // namespace sscrf
