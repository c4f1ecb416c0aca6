// Scoring E = X·W and back-projection Xᵀ·∂E over the attribute layout.
#include "linear_layer.hpp"

#include <algorithm>

namespace sscrf {

void score_tokens(const Corpus& corpus, int64_t tok_begin, int64_t tok_end,
                  const Layout& layout, const double* weights, double* emissions) {
  const int S = layout.S;
  std::fill(emissions, emissions + (tok_end - tok_begin) * S, 0.0);
  for (int64_t t = tok_begin; t < tok_end; ++t) {
    double* row = emissions + (t - tok_begin) * S;
    for (int64_t k = corpus.indptr[t]; k < corpus.indptr[t + 1]; ++k) {
      const int32_t a = corpus.indices[k];
      const double v = corpus.values[k];
      const int64_t r0 = layout.row_ptr[a], r1 = layout.row_ptr[a + 1];
      const double* w = weights + r0;
      if (r1 - r0 == S) {
#pragma omp simd
        for (int b = 0; b < S; ++b) row[b] += v * w[b];
      } else {
        const int32_t* lab = &layout.label_ids[r0];
        for (int64_t j = 0; j < r1 - r0; ++j) row[lab[j]] += v * w[j];
      }
    }
  }
}

void back_project_attribute(const Chunk& chunk, size_t i, const Layout& layout,
                            const double* d_emissions, double* grad_weights) {
  const int S = layout.S;
  const int32_t a = chunk.attributes[i];
  const int64_t r0 = layout.row_ptr[a], r1 = layout.row_ptr[a + 1];
  if (r1 == r0) return;
  double* g = grad_weights + r0;
  const int32_t* lab = &layout.label_ids[r0];
  for (int64_t k = chunk.attr_ptr[i]; k < chunk.attr_ptr[i + 1]; ++k) {
    const double v = chunk.value[k];
    const double* d = d_emissions + static_cast<int64_t>(chunk.token[k]) * S;
    if (r1 - r0 == S) {
#pragma omp simd
      for (int b = 0; b < S; ++b) g[b] += v * d[b];
    } else {
      for (int64_t j = 0; j < r1 - r0; ++j) g[j] += v * d[lab[j]];
    }
  }
}

}  // namespace sscrf
