// Optimiser vector passes: fixed blocks, block sums added in block order.
#include "vector_passes.hpp"

#include <algorithm>

#include "dense_kernels.hpp"
#include "parallel.hpp"

namespace sscrf {

namespace {

// Entries of a block handled together while their vectors stay in L1.
constexpr int64_t kStripe = 512;

int64_t block_count(int64_t n) { return (n + kReductionBlock - 1) / kReductionBlock; }

// Adds the vec4 lanes and the scalar tail in a fixed order.
inline double lane_sum(vec4 v, double tail) { return ((v[0] + v[1]) + (v[2] + v[3])) + tail; }

// Σ a_i b_i over [0, len) into two accumulators (even and odd 4-lane groups)
// and a scalar tail, so the sum's order depends on len only.
__attribute__((always_inline)) inline void accumulate_dot(const double* a, const double* b,
                                                          int64_t len, vec4& even, vec4& odd,
                                                          double& tail) {
  int64_t i = 0;
  for (; i + 8 <= len; i += 8) {
    even += load4(a + i) * load4(b + i);
    odd += load4(a + i + 4) * load4(b + i + 4);
  }
  for (; i < len; ++i) tail += a[i] * b[i];
}

// The block bodies are cloned for wide SIMD; the OpenMP loops that call them
// are not (GCC outlines a parallel region of a target_clones function into
// one body that the clones share, which crashed with two threads).

SSCRF_SIMD_CLONES
void dot_products_block(const std::vector<const double*>& vectors,
                        const std::vector<std::pair<int, int>>& pairs, int64_t begin,
                        int64_t end, double* sums) {
  const size_t n_pairs = pairs.size();
  // Each pair's two 4-lane accumulators, kept as doubles between stripes
  // (a std::vector of vector types is not reliably 32-byte aligned).
  std::vector<double> lanes(8 * n_pairs, 0.0), tails(n_pairs, 0.0);
  // Stripe by stripe, every pair: each vector is read from memory once per
  // stripe and then from L1.
  for (int64_t s = begin; s < end; s += kStripe) {
    const int64_t len = std::min(end - s, kStripe);
    for (size_t p = 0; p < n_pairs; ++p) {
      double* lane = &lanes[8 * p];
      vec4 even = load4(lane), odd = load4(lane + 4);
      accumulate_dot(vectors[pairs[p].first] + s, vectors[pairs[p].second] + s, len, even, odd,
                     tails[p]);
      store4(lane, even);
      store4(lane + 4, odd);
    }
  }
  for (size_t p = 0; p < n_pairs; ++p)
    sums[p] = lane_sum(load4(&lanes[8 * p]) + load4(&lanes[8 * p + 4]), tails[p]);
}

SSCRF_SIMD_CLONES
double linear_combination_block(double* out, const std::vector<double>& coefficients,
                                const std::vector<const double*>& vectors,
                                const double* reference, bool confine, int64_t begin,
                                int64_t end) {
  alignas(32) double sum[kStripe];
  vec4 even = splat4(0.0), odd = even;
  double tail = 0.0;
  for (int64_t s = begin; s < end; s += kStripe) {
    const int64_t len = std::min(end - s, kStripe);
    if (vectors.empty()) std::fill(sum, sum + len, 0.0);
    for (size_t j = 0; j < vectors.size(); ++j) {
      const double c = coefficients[j];
      const double* v = vectors[j] + s;
      if (j == 0) {
#pragma omp simd
        for (int64_t i = 0; i < len; ++i) sum[i] = c * v[i];
      } else {
#pragma omp simd
        for (int64_t i = 0; i < len; ++i) sum[i] += c * v[i];
      }
    }
    const double* r = reference + s;
    if (confine) {
#pragma omp simd
      for (int64_t i = 0; i < len; ++i) sum[i] = sum[i] * r[i] >= 0.0 ? 0.0 : sum[i];
    }
    accumulate_dot(sum, r, len, even, odd, tail);  // reads r before out is written
    std::copy(sum, sum + len, out + s);
  }
  return lane_sum(even + odd, tail);
}

SSCRF_SIMD_CLONES
void step_along_block(double* out, const double* x, double alpha, const double* d,
                      int64_t begin, int64_t end) {
#pragma omp simd
  for (int64_t i = begin; i < end; ++i) out[i] = x[i] + alpha * d[i];
}

SSCRF_SIMD_CLONES
void secant_pair_block(double* x, const double* trial, const double* gradient,
                       double* previous_gradient, double* step, int64_t begin, int64_t end) {
#pragma omp simd
  for (int64_t i = begin; i < end; ++i) {
    const double t = trial[i];
    step[i] = t - x[i];
    x[i] = t;
    previous_gradient[i] = gradient[i] - previous_gradient[i];
  }
}

SSCRF_SIMD_CLONES
double add_l2_prior_block(const double* theta, double* grad, double twice_c2, int64_t begin,
                          int64_t end) {
  vec4 even = splat4(0.0), odd = even;
  double tail = 0.0;
  accumulate_dot(theta + begin, theta + begin, end - begin, even, odd, tail);
#pragma omp simd
  for (int64_t i = begin; i < end; ++i) grad[i] += twice_c2 * theta[i];
  return lane_sum(even + odd, tail);
}

// Runs body(begin, end) -> double over the blocks of [0, n) and returns
// the block results added in block order.
template <class Body>
double sum_over_blocks(int64_t n, int n_threads, Body&& body) {
  const int64_t n_blocks = block_count(n);
  std::vector<double> block_sums(static_cast<size_t>(n_blocks), 0.0);
#pragma omp parallel for schedule(static) num_threads(effective_threads(n_threads, n_blocks))
  for (int64_t blk = 0; blk < n_blocks; ++blk) {
    const int64_t begin = blk * kReductionBlock;
    block_sums[blk] = body(begin, std::min(n, begin + kReductionBlock));
  }
  double total = 0.0;
  for (double b : block_sums) total += b;
  return total;
}

}  // namespace

void dot_products(const std::vector<const double*>& vectors,
                  const std::vector<std::pair<int, int>>& pairs, int64_t n, double* out,
                  int n_threads) {
  const int64_t n_blocks = block_count(n);
  const size_t n_pairs = pairs.size();
  std::vector<double> block_sums(static_cast<size_t>(n_blocks) * n_pairs, 0.0);
#pragma omp parallel for schedule(static) num_threads(effective_threads(n_threads, n_blocks))
  for (int64_t blk = 0; blk < n_blocks; ++blk) {
    const int64_t begin = blk * kReductionBlock;
    dot_products_block(vectors, pairs, begin, std::min(n, begin + kReductionBlock),
                       &block_sums[blk * n_pairs]);
  }
  for (size_t p = 0; p < n_pairs; ++p) {
    double sum = 0.0;
    for (int64_t blk = 0; blk < n_blocks; ++blk) sum += block_sums[blk * n_pairs + p];
    out[p] = sum;
  }
}

double linear_combination(double* out, const std::vector<double>& coefficients,
                          const std::vector<const double*>& vectors, const double* reference,
                          bool confine, int64_t n, int n_threads) {
  return sum_over_blocks(n, n_threads, [&](int64_t begin, int64_t end) {
    return linear_combination_block(out, coefficients, vectors, reference, confine, begin, end);
  });
}

void step_along(double* out, const double* x, double alpha, const double* d, int64_t n,
                int n_threads) {
  sum_over_blocks(n, n_threads, [&](int64_t begin, int64_t end) {
    step_along_block(out, x, alpha, d, begin, end);
    return 0.0;
  });
}

void secant_pair(double* x, const double* trial, const double* gradient,
                 double* previous_gradient, double* step, int64_t n, int n_threads) {
  sum_over_blocks(n, n_threads, [&](int64_t begin, int64_t end) {
    secant_pair_block(x, trial, gradient, previous_gradient, step, begin, end);
    return 0.0;
  });
}

double add_l2_prior(const double* theta, double* grad, double c2, int64_t n, int n_threads) {
  return sum_over_blocks(n, n_threads, [&](int64_t begin, int64_t end) {
    return add_l2_prior_block(theta, grad, 2.0 * c2, begin, end);
  });
}

}  // namespace sscrf
