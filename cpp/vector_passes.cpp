// Optimiser vector passes: fixed blocks, block sums added in block order.
#include "vector_passes.hpp"

#include <algorithm>
#include <cmath>

#include "dense_kernels.hpp"
#include "parallel.hpp"

namespace sscrf {

namespace {

int64_t block_count(int64_t n) { return (n + kReductionBlock - 1) / kReductionBlock; }

// How a block's dot products are taken: the vectors that are the first of
// some pair stay resident (in L2) through the block, and every other vector
// is streamed through once, against the residents it pairs with. Streaming
// one vector at a time keeps a single long read stream in flight: side by
// side, a dozen vectors read in short stripes are read at about half the
// memory bandwidth. The optimiser's residents are the new pair, the
// gradient and the iterate: 4 × 64 KiB per block.
struct DotPlan {
  // A streamed vector and up to four residents it pairs with; pair[k] is
  // the pair's position in the caller's list.
  struct Group {
    int streamed = 0, size = 0;
    int resident[4] = {0, 0, 0, 0};
    size_t pair[4] = {0, 0, 0, 0};
  };
  std::vector<int> residents;       // vector indices, in first-use order
  std::vector<int> resident_slot;   // vector index -> its residents position, or -1
  std::vector<Group> groups;        // in the order of their first pair
};

DotPlan plan_dots(const std::vector<VectorRef>& vectors,
                  const std::vector<std::pair<int, int>>& pairs) {
  DotPlan plan;
  plan.resident_slot.assign(vectors.size(), -1);
  for (const auto& p : pairs)
    if (plan.resident_slot[p.first] < 0) {
      plan.resident_slot[p.first] = static_cast<int>(plan.residents.size());
      plan.residents.push_back(p.first);
    }
  // Each pair is (resident first, second); group the pairs by their second
  // vector, so that it is read once per block.
  std::vector<bool> grouped(pairs.size(), false);
  for (size_t p = 0; p < pairs.size(); ++p) {
    if (grouped[p]) continue;
    DotPlan::Group g;
    g.streamed = pairs[p].second;
    for (size_t q = p; q < pairs.size() && g.size < 4; ++q) {
      if (grouped[q] || pairs[q].second != g.streamed) continue;
      g.resident[g.size] = pairs[q].first;
      g.pair[g.size++] = q;
      grouped[q] = true;
    }
    plan.groups.push_back(g);
  }
  return plan;
}

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

// Four floats as doubles.
__attribute__((always_inline)) inline vec4 load4_widened(const float* p) {
  float f[4];
  std::memcpy(f, p, sizeof f);
  return vec4{f[0], f[1], f[2], f[3]};
}

__attribute__((always_inline)) inline vec4 load4_any(const double* p) { return load4(p); }
__attribute__((always_inline)) inline vec4 load4_any(const float* p) { return load4_widened(p); }

// Dot products of the streamed vector b with NB residents a[k] over
// [0, len), each pair's sum in its own accumulators (even and odd 4-lane
// groups and a tail) in accumulate_dot's order: how pairs are grouped, and
// which side is streamed, never changes a bit. NB independent chains hide
// the multiply-add latency, and b is loaded once.
template <int NB, class T>
__attribute__((always_inline)) inline void dot_streamed(const T* b, const double* const* a,
                                                        int64_t len, double* const* sums) {
  vec4 even[NB], odd[NB];
  double tail[NB];
  for (int k = 0; k < NB; ++k) even[k] = odd[k] = splat4(0.0), tail[k] = 0.0;
  int64_t i = 0;
  for (; i + 8 <= len; i += 8) {
    const vec4 lo = load4_any(b + i), hi = load4_any(b + i + 4);
    for (int k = 0; k < NB; ++k) {
      even[k] += load4(a[k] + i) * lo;
      odd[k] += load4(a[k] + i + 4) * hi;
    }
  }
  // An explicit fma: left to the compiler, the tail was contracted for a
  // float b but not for a double one, so a product's bits depended on its
  // side.
  for (int k = 0; k < NB; ++k) {
    for (int64_t j = i; j < len; ++j)
      tail[k] = std::fma(a[k][j], static_cast<double>(b[j]), tail[k]);
    *sums[k] = lane_sum(even[k] + odd[k], tail[k]);
  }
}

template <class T>
__attribute__((always_inline)) inline void dot_group(const T* b, const double* const* a, int size,
                                                     int64_t len, double* const* sums) {
  switch (size) {
    case 4: dot_streamed<4>(b, a, len, sums); break;
    case 3: dot_streamed<3>(b, a, len, sums); break;
    case 2: dot_streamed<2>(b, a, len, sums); break;
    default: dot_streamed<1>(b, a, len, sums); break;
  }
}

// The block's dot products into sums[0, n_pairs). `widened` holds
// kReductionBlock doubles per resident: float residents are widened there.
SSCRF_SIMD_CLONES
void dot_products_block(const std::vector<VectorRef>& vectors, const DotPlan& plan,
                        int64_t begin, int64_t end, double* widened, double* sums) {
  const int64_t len = end - begin;
  for (size_t r = 0; r < plan.residents.size(); ++r) {
    const VectorRef v = vectors[plan.residents[r]];
    if (!v.single) continue;
    const float* f = static_cast<const float*>(v.data) + begin;
    double* w = widened + r * kReductionBlock;
#pragma omp simd
    for (int64_t i = 0; i < len; ++i) w[i] = static_cast<double>(f[i]);
  }
  // The block of resident r: in place, or widened above.
  const auto resident = [&](int r) -> const double* {
    const VectorRef v = vectors[plan.residents[r]];
    return v.single ? widened + r * kReductionBlock : static_cast<const double*>(v.data) + begin;
  };
  for (const DotPlan::Group& g : plan.groups) {
    const double* a[4];
    double* sum[4];
    for (int k = 0; k < g.size; ++k) {
      a[k] = resident(plan.resident_slot[g.resident[k]]);
      sum[k] = &sums[g.pair[k]];
    }
    const int slot = plan.resident_slot[g.streamed];
    const VectorRef b = vectors[g.streamed];
    if (slot >= 0)
      dot_group(resident(slot), a, g.size, len, sum);
    else if (b.single)
      dot_group(static_cast<const float*>(b.data) + begin, a, g.size, len, sum);
    else
      dot_group(static_cast<const double*>(b.data) + begin, a, g.size, len, sum);
  }
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

// One block of linear_combination, summed in `sum` (kReductionBlock
// doubles, in L2): each vector is streamed through once, in j order, so
// every entry's terms are added in j order.
SSCRF_SIMD_CLONES
double linear_combination_block(double* out, const std::vector<double>& coefficients,
                                const std::vector<VectorRef>& vectors,
                                const double* reference, bool confine, int64_t begin,
                                int64_t end, double* sum) {
  const int64_t len = end - begin;
  if (vectors.empty()) std::fill(sum, sum + len, 0.0);
  for (size_t j = 0; j < vectors.size(); ++j) {
    const VectorRef v = vectors[j];
    if (v.single)
      add_scaled(sum, coefficients[j], static_cast<const float*>(v.data) + begin, len, j == 0);
    else
      add_scaled(sum, coefficients[j], static_cast<const double*>(v.data) + begin, len, j == 0);
  }
  const double* r = reference + begin;
  if (confine) {
#pragma omp simd
    for (int64_t i = 0; i < len; ++i) sum[i] = sum[i] * r[i] >= 0.0 ? 0.0 : sum[i];
  }
  vec4 even = splat4(0.0), odd = even;
  double tail = 0.0;
  accumulate_dot(sum, r, len, even, odd, tail);  // reads r before out is written
  std::copy(sum, sum + len, out + begin);
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

// Runs body(begin, end, scratch) -> double over the blocks of [0, n) and
// returns the block results added in block order. scratch: the running
// thread's `scratch_size` doubles, allocated before the threads start.
template <class Body>
double sum_over_blocks(int64_t n, int n_threads, size_t scratch_size, Body&& body) {
  const int64_t n_blocks = block_count(n);
  const int threads = effective_threads(n_threads, n_blocks);
  std::vector<double> block_sums(static_cast<size_t>(n_blocks), 0.0);
  UninitializedBuffer scratch;
  scratch.reserve(std::max<size_t>(1, scratch_size * threads));
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t blk = 0; blk < n_blocks; ++blk) {
    const int64_t begin = blk * kReductionBlock;
    block_sums[blk] = body(begin, std::min(n, begin + kReductionBlock),
                           scratch.data() + scratch_size * thread_id());
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
  const DotPlan plan = plan_dots(vectors, pairs);
  std::vector<double> block_sums(static_cast<size_t>(n_blocks) * n_pairs, 0.0);
  sum_over_blocks(n, n_threads, plan.residents.size() * kReductionBlock,
                  [&](int64_t begin, int64_t end, double* widened) {
                    before(begin, end);
                    dot_products_block(vectors, plan, begin, end, widened,
                                       &block_sums[begin / kReductionBlock * n_pairs]);
                    return 0.0;
                  });
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
  return sum_over_blocks(n, n_threads, kReductionBlock,
                         [&](int64_t begin, int64_t end, double* sum) {
    return linear_combination_block(out, coefficients, vectors, reference, confine, begin, end,
                                    sum);
  });
}

void step_along(double* out, const double* x, double alpha, const double* d, int64_t n,
                int n_threads) {
  sum_over_blocks(n, n_threads, 0, [&](int64_t begin, int64_t end, double*) {
    step_along_block(out, x, alpha, d, begin, end);
    return 0.0;
  });
}

void secant_pair(const double* x, const double* trial, const double* gradient,
                 const double* previous_gradient, void* step, void* y, bool single, int64_t n,
                 int n_threads) {
  sum_over_blocks(n, n_threads, 0, [&](int64_t begin, int64_t end, double*) {
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
  return sum_over_blocks(n, n_threads, 0, [&](int64_t begin, int64_t end, double*) {
    return add_l2_prior_block(theta, grad, 2.0 * c2, begin, end);
  });
}

}  // namespace sscrf
