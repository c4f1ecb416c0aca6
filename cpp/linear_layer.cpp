// Scoring E = X·W and back-projection Xᵀ·∂E over the attribute layout.
#include "linear_layer.hpp"

#include <algorithm>

#include "dense_kernels.hpp"

namespace sscrf {

SSCRF_SIMD_CLONES
void score_tokens(const Corpus& corpus, int64_t tok_begin, int64_t tok_end,
                  const Layout& layout, const double* weights, double* emissions) {
  const int S = layout.S;
  std::fill(emissions, emissions + (tok_end - tok_begin) * S, 0.0);
  const int64_t* row_ptr = layout.row_ptr.data();
  const int32_t* label_ids = layout.label_ids.data();
  const int32_t* attr = corpus.indices.data();
  const int64_t nnz = static_cast<int64_t>(corpus.indices.size());
  // W rows are visited in attribute order, i.e. at random: prefetch the row
  // offsets 16 entries ahead and the rows themselves 8 ahead, so the loads
  // of an entry are (mostly) in cache when it is reached.
  constexpr int64_t kFar = 16, kNear = 8;
  for (int64_t t = tok_begin; t < tok_end; ++t) {
    double* row = emissions + (t - tok_begin) * S;
    for (int64_t k = corpus.indptr[t]; k < corpus.indptr[t + 1]; ++k) {
      if (k + kFar < nnz) __builtin_prefetch(row_ptr + attr[k + kFar]);
      if (k + kNear < nnz) {
        const int64_t r = row_ptr[attr[k + kNear]];
        __builtin_prefetch(weights + r);
        __builtin_prefetch(label_ids + r);
      }
      const int32_t a = attr[k];
      const double v = corpus.values[k];
      const int64_t r0 = row_ptr[a], r1 = row_ptr[a + 1];
      const double* w = weights + r0;
      if (r1 - r0 == S) {
#pragma omp simd
        for (int b = 0; b < S; ++b) row[b] += v * w[b];
      } else {
        const int32_t* lab = label_ids + r0;
        for (int64_t j = 0; j < r1 - r0; ++j) row[lab[j]] += v * w[j];
      }
    }
  }
}

SSCRF_SIMD_CLONES
void back_project_attribute(const Chunk& chunk, size_t i, const Layout& layout,
                            const double* d_emissions, double* grad_weights) {
  const int S = layout.S;
  const int32_t a = chunk.attributes[i];
  const int64_t r0 = layout.row_ptr[a], r1 = layout.row_ptr[a + 1];
  if (r1 == r0) return;
  double* g = grad_weights + r0;
  const int32_t* lab = &layout.label_ids[r0];
  const int64_t k0 = chunk.attr_ptr[i], k1 = chunk.attr_ptr[i + 1];
  const int32_t* tok = chunk.token.data();
  const double* val = chunk.value.data();
  // Sums over the attribute's occurrences run in registers (two chains
  // each), not through g in memory, where every occurrence would wait for
  // the previous store.
  if (r1 - r0 == S) {
    int b0 = 0;
    for (; b0 + 4 <= S; b0 += 4) {
      vec4 even = splat4(0.0), odd = even;
      int64_t k = k0;
      for (; k + 1 < k1; k += 2) {
        even += splat4(val[k]) * load4(d_emissions + static_cast<int64_t>(tok[k]) * S + b0);
        odd += splat4(val[k + 1]) * load4(d_emissions + static_cast<int64_t>(tok[k + 1]) * S + b0);
      }
      if (k < k1) even += splat4(val[k]) * load4(d_emissions + static_cast<int64_t>(tok[k]) * S + b0);
      store4(g + b0, load4(g + b0) + (even + odd));
    }
    for (; b0 < S; ++b0) {
      double sum = 0.0;
      for (int64_t k = k0; k < k1; ++k) sum += val[k] * d_emissions[static_cast<int64_t>(tok[k]) * S + b0];
      g[b0] += sum;
    }
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
