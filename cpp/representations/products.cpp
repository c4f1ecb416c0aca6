// Row-parallel products with one fixed summation order per output entry.
#include "representations/products.hpp"

#include <algorithm>
#include <vector>

#include "runtime/parallel.hpp"

namespace sscrf {

void csr_times_dense(const int64_t* indptr, const int32_t* indices, const double* data,
                     int64_t n_rows, const double* B, int64_t l, double* out, int n_threads) {
  const int T = effective_threads(n_threads, n_rows / 256 + 1);
#pragma omp parallel for num_threads(T) schedule(dynamic, 256) if (T > 1)
  for (int64_t i = 0; i < n_rows; ++i) {
    double* o = out + i * l;
    std::fill(o, o + l, 0.0);
    for (int64_t p = indptr[i]; p < indptr[i + 1]; ++p) {
      const double v = data[p];
      const double* b = B + static_cast<int64_t>(indices[p]) * l;
#pragma omp simd
      for (int64_t k = 0; k < l; ++k) o[k] += v * b[k];
    }
  }
}

void gram_matrix(const double* A, int64_t n, int64_t l, double* out, int n_threads) {
  // 2048 rows a block: the block partition, hence the sums, depend on n only.
  constexpr int64_t kBlock = 2048;
  const int64_t n_blocks = (n + kBlock - 1) / kBlock;
  std::vector<double> partial(static_cast<size_t>(std::max<int64_t>(n_blocks, 1) * l * l), 0.0);
  const int T = effective_threads(n_threads, n_blocks);
#pragma omp parallel for num_threads(T) schedule(dynamic, 1) if (T > 1)
  for (int64_t b = 0; b < n_blocks; ++b) {
    double* g = partial.data() + b * l * l;
    for (int64_t i = b * kBlock; i < std::min(n, (b + 1) * kBlock); ++i) {
      const double* a = A + i * l;
      for (int64_t r = 0; r < l; ++r) {
        const double ar = a[r];
        double* gr = g + r * l;
#pragma omp simd
        for (int64_t c = r; c < l; ++c) gr[c] += ar * a[c];
      }
    }
  }
  std::fill(out, out + l * l, 0.0);
  for (int64_t b = 0; b < n_blocks; ++b) {
    const double* g = partial.data() + b * l * l;
    for (int64_t k = 0; k < l * l; ++k) out[k] += g[k];
  }
  for (int64_t r = 0; r < l; ++r)
    for (int64_t c = 0; c < r; ++c) out[r * l + c] = out[c * l + r];
}

void times_small(const double* A, int64_t n, int64_t l, const double* M, int64_t m, double* out,
                 int n_threads) {
  const int T = effective_threads(n_threads, n / 256 + 1);
#pragma omp parallel for num_threads(T) schedule(static, 256) if (T > 1)
  for (int64_t i = 0; i < n; ++i) {
    double* o = out + i * m;
    std::fill(o, o + m, 0.0);
    const double* a = A + i * l;
    for (int64_t k = 0; k < l; ++k) {
      const double v = a[k];
      const double* row = M + k * m;
#pragma omp simd
      for (int64_t j = 0; j < m; ++j) o[j] += v * row[j];
    }
  }
}

void nearest_centroids(const double* X, int64_t n, int64_t d, const double* C,
                       const int64_t* group, const int64_t* group_ptr, int64_t* out,
                       int n_threads) {
  const int T = effective_threads(n_threads, n / 64 + 1);
#pragma omp parallel for num_threads(T) schedule(dynamic, 64) if (T > 1)
  for (int64_t i = 0; i < n; ++i) {
    const double* x = X + i * d;
    const int64_t g = group[i];
    int64_t best = group_ptr[g];
    double best_dot = -1e300;
    for (int64_t c = group_ptr[g]; c < group_ptr[g + 1]; ++c) {
      const double* y = C + c * d;
      double s = 0.0;
#pragma omp simd reduction(+ : s)
      for (int64_t k = 0; k < d; ++k) s += x[k] * y[k];
      if (s > best_dot) {
        best_dot = s;
        best = c;
      }
    }
    out[i] = best;
  }
}

}  // namespace sscrf
