// Optimiser vector passes: fixed blocks, block sums added in block order.
#include "vector_passes.hpp"

#include <algorithm>

#include "dense_kernels.hpp"
#include "parallel.hpp"

namespace sscrf {

namespace {

// Entries of a block handled together while their vectors stay in L1/L2.
constexpr int64_t kStripe = 1024;

int64_t block_count(int64_t n) { return (n + kReductionBlock - 1) / kReductionBlock; }

// Up to four pairs (first, second[k]) sharing their first vector; pair[k]
// is the pair's position in the caller's list.
struct PairGroup {
  int first = 0, size = 0;
  int second[4] = {0, 0, 0, 0};
  size_t pair[4] = {0, 0, 0, 0};
};

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

// Asks for entries [s, s + len) of v ahead of their use: the passes read a
// dozen vectors side by side, too many streams for the hardware prefetcher
// to follow on its own.
__attribute__((always_inline)) inline void prefetch_stripe(VectorRef v, int64_t s, int64_t len) {
  const size_t width = v.single ? sizeof(float) : sizeof(double);
  const char* p = static_cast<const char*>(v.data) + s * width;
  const size_t bytes = static_cast<size_t>(len) * width;
  for (size_t off = 0; off < bytes; off += 64) __builtin_prefetch(p + off);
}

VectorRef offset(VectorRef v, int64_t s) {
  return {v.single ? static_cast<const void*>(static_cast<const float*>(v.data) + s)
                   : static_cast<const void*>(static_cast<const double*>(v.data) + s),
          v.single};
}

template <class T>
__attribute__((always_inline)) inline void add_scaled(double* sum, double c, const T* v,
                                                      int64_t len, bool first) {
  if (first) {
#pragma omp simd
    for (int64_t i = 0; i < len; ++i) sum[i] = c * static_cast<double>(v[i]);
  } else {
#pragma omp simd
    for (int64_t i = 0; i < len; ++i) sum[i] += c * static_cast<double>(v[i]);
  }
}

// The block bodies are cloned for wide SIMD; the OpenMP loops that call
// them are plain code.

// Dot products of one stripe of a with NB vectors b[k], each pair's sum in
// its own accumulators (lanes[k]: even and odd 4-lane groups, tails[k]) in
// the order accumulate_dot uses: how pairs are grouped never changes a bit.
// NB independent chains hide the multiply-add latency, and a is loaded once.
template <int NB>
__attribute__((always_inline)) inline void dot_stripe(const double* a, const double* const* b,
                                                      int64_t len, double* const* lanes,
                                                      double* const* tails) {
  vec4 even[NB], odd[NB];
  for (int k = 0; k < NB; ++k) {
    even[k] = load4(lanes[k]);
    odd[k] = load4(lanes[k] + 4);
  }
  int64_t i = 0;
  for (; i + 8 <= len; i += 8) {
    const vec4 lo = load4(a + i), hi = load4(a + i + 4);
    for (int k = 0; k < NB; ++k) {
      even[k] += lo * load4(b[k] + i);
      odd[k] += hi * load4(b[k] + i + 4);
    }
  }
  for (int k = 0; k < NB; ++k) {
    for (int64_t j = i; j < len; ++j) *tails[k] += a[j] * b[k][j];
    store4(lanes[k], even[k]);
    store4(lanes[k] + 4, odd[k]);
  }
}

SSCRF_SIMD_CLONES
void dot_products_block(const std::vector<VectorRef>& vectors, const std::vector<PairGroup>& groups,
                        size_t n_pairs, int64_t begin, int64_t end, double* sums) {
  std::vector<double> lanes(8 * n_pairs, 0.0), tails(n_pairs, 0.0);
  // float vectors are widened stripe by stripe into this buffer
  std::vector<double> widened(vectors.size() * kStripe);
  std::vector<const double*> stripe(vectors.size());
  for (int64_t s = begin; s < end; s += kStripe) {
    const int64_t len = std::min(end - s, kStripe);
    if (s + kStripe < end)
      for (const VectorRef& v : vectors)
        prefetch_stripe(v, s + kStripe, std::min(end - s - kStripe, kStripe));
    for (size_t v = 0; v < vectors.size(); ++v) {
      if (vectors[v].single) {
        const float* f = static_cast<const float*>(vectors[v].data) + s;
        double* w = &widened[v * kStripe];
#pragma omp simd
        for (int64_t i = 0; i < len; ++i) w[i] = static_cast<double>(f[i]);
        stripe[v] = w;
      } else {
        stripe[v] = static_cast<const double*>(vectors[v].data) + s;
      }
    }
    // Every pair of the stripe while its vectors are in cache.
    for (const PairGroup& g : groups) {
      const double* b[4];
      double* lane[4];
      double* tail[4];
      for (int k = 0; k < g.size; ++k) {
        b[k] = stripe[g.second[k]];
        lane[k] = &lanes[8 * g.pair[k]];
        tail[k] = &tails[g.pair[k]];
      }
      const double* a = stripe[g.first];
      switch (g.size) {
        case 4: dot_stripe<4>(a, b, len, lane, tail); break;
        case 3: dot_stripe<3>(a, b, len, lane, tail); break;
        case 2: dot_stripe<2>(a, b, len, lane, tail); break;
        default: dot_stripe<1>(a, b, len, lane, tail); break;
      }
    }
  }
  for (size_t p = 0; p < n_pairs; ++p)
    sums[p] = lane_sum(load4(&lanes[8 * p]) + load4(&lanes[8 * p + 4]), tails[p]);
}

SSCRF_SIMD_CLONES
double linear_combination_block(double* out, const std::vector<double>& coefficients,
                                const std::vector<VectorRef>& vectors,
                                const double* reference, bool confine, int64_t begin,
                                int64_t end) {
  alignas(32) double sum[kStripe];
  vec4 even = splat4(0.0), odd = even;
  double tail = 0.0;
  for (int64_t s = begin; s < end; s += kStripe) {
    const int64_t len = std::min(end - s, kStripe);
    if (s + kStripe < end)
      for (const VectorRef& v : vectors)
        prefetch_stripe(v, s + kStripe, std::min(end - s - kStripe, kStripe));
    if (vectors.empty()) std::fill(sum, sum + len, 0.0);
    for (size_t j = 0; j < vectors.size(); ++j) {
      const VectorRef v = offset(vectors[j], s);
      if (v.single)
        add_scaled(sum, coefficients[j], static_cast<const float*>(v.data), len, j == 0);
      else
        add_scaled(sum, coefficients[j], static_cast<const double*>(v.data), len, j == 0);
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

template <class T>
__attribute__((always_inline)) inline void secant_pair_impl(const double* x, const double* trial,
                                                            const double* gradient,
                                                            const double* previous_gradient,
                                                            T* step, T* y, int64_t begin,
                                                            int64_t end) {
#pragma omp simd
  for (int64_t i = begin; i < end; ++i) {
    step[i] = static_cast<T>(trial[i] - x[i]);
    y[i] = static_cast<T>(gradient[i] - previous_gradient[i]);
  }
}

SSCRF_SIMD_CLONES
void secant_pair_block(const double* x, const double* trial, const double* gradient,
                       const double* previous_gradient, void* step, void* y, bool single,
                       int64_t begin, int64_t end) {
  if (single)
    secant_pair_impl(x, trial, gradient, previous_gradient, static_cast<float*>(step),
                     static_cast<float*>(y), begin, end);
  else
    secant_pair_impl(x, trial, gradient, previous_gradient, static_cast<double*>(step),
                     static_cast<double*>(y), begin, end);
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

namespace {

// dot_products, with before(begin, end) run on each block just before the
// block's products (by the thread that computes them).
template <class Before>
void dot_products_after(const std::vector<VectorRef>& vectors,
                        const std::vector<std::pair<int, int>>& pairs, int64_t n, double* out,
                        int n_threads, Before&& before) {
  const int64_t n_blocks = block_count(n);
  const size_t n_pairs = pairs.size();
  std::vector<PairGroup> groups;
  std::vector<bool> grouped(n_pairs, false);
  for (size_t p = 0; p < n_pairs; ++p) {
    if (grouped[p]) continue;
    PairGroup g;
    g.first = pairs[p].first;
    for (size_t q = p; q < n_pairs && g.size < 4; ++q) {
      if (grouped[q] || pairs[q].first != g.first) continue;
      g.second[g.size] = pairs[q].second;
      g.pair[g.size++] = q;
      grouped[q] = true;
    }
    groups.push_back(g);
  }
  std::vector<double> block_sums(static_cast<size_t>(n_blocks) * n_pairs, 0.0);
#pragma omp parallel for schedule(static) num_threads(effective_threads(n_threads, n_blocks))
  for (int64_t blk = 0; blk < n_blocks; ++blk) {
    const int64_t begin = blk * kReductionBlock, end = std::min(n, begin + kReductionBlock);
    before(begin, end);
    dot_products_block(vectors, groups, n_pairs, begin, end, &block_sums[blk * n_pairs]);
  }
  for (size_t p = 0; p < n_pairs; ++p) {
    double sum = 0.0;
    for (int64_t blk = 0; blk < n_blocks; ++blk) sum += block_sums[blk * n_pairs + p];
    out[p] = sum;
  }
}

}  // namespace

void dot_products(const std::vector<VectorRef>& vectors,
                  const std::vector<std::pair<int, int>>& pairs, int64_t n, double* out,
                  int n_threads) {
  dot_products_after(vectors, pairs, n, out, n_threads, [](int64_t, int64_t) {});
}

double linear_combination(double* out, const std::vector<double>& coefficients,
                          const std::vector<VectorRef>& vectors, const double* reference,
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

void secant_pair(const double* x, const double* trial, const double* gradient,
                 const double* previous_gradient, void* step, void* y, bool single, int64_t n,
                 int n_threads) {
  sum_over_blocks(n, n_threads, [&](int64_t begin, int64_t end) {
    secant_pair_block(x, trial, gradient, previous_gradient, step, y, single, begin, end);
    return 0.0;
  });
}

void secant_pair_and_dot_products(const double* x, const double* trial, const double* gradient,
                                  const double* previous_gradient, void* step, void* y,
                                  bool single, const std::vector<VectorRef>& vectors,
                                  const std::vector<std::pair<int, int>>& pairs, int64_t n,
                                  double* out, int n_threads) {
  dot_products_after(vectors, pairs, n, out, n_threads, [&](int64_t begin, int64_t end) {
    secant_pair_block(x, trial, gradient, previous_gradient, step, y, single, begin, end);
  });
}

double add_l2_prior(const double* theta, double* grad, double c2, int64_t n, int n_threads) {
  return sum_over_blocks(n, n_threads, [&](int64_t begin, int64_t end) {
    return add_l2_prior_block(theta, grad, 2.0 * c2, begin, end);
  });
}

}  // namespace sscrf
