// Optimiser vector passes: fixed blocks, block sums added in block order.
#include "optim/vector_passes.hpp"

#include <algorithm>
#include <cmath>

#include "runtime/dense_kernels.hpp"
#include "runtime/parallel.hpp"

namespace sscrf {

namespace {

int64_t block_count(int64_t n) { return (n + kReductionBlock - 1) / kReductionBlock; }

// How a work unit's dot products are taken: the vectors that are the first
// of some pair stay resident (in L2 or L3) through the unit, and the others
// are streamed through it, each against the residents it pairs with, up to four
// streamed vectors side by side (a bundle). One long read stream in flight
// at a time leaves most of the memory bandwidth unused; a dozen side by side
// with their accumulators in memory spend it on loads and stores; bundles
// of three or four read about 1.6x as fast as one stream.
// The optimiser's residents are the new pair, the gradient and the iterate:
// 4 × 64 KiB per block, up to eight blocks per unit.
struct DotPlan {
  // A streamed vector and up to four residents it pairs with; pair[k] is
  // the pair's position in the caller's list.
  struct Group {
    int streamed = 0, size = 0;
    int resident[4] = {0, 0, 0, 0};
    size_t pair[4] = {0, 0, 0, 0};
  };
  // Consecutive groups whose streamed vectors are read side by side: all
  // float (read from memory) or all double (from memory, or residents),
  // against the union of their residents. Every streamed vector is
  // multiplied by every resident of the bundle (each resident is loaded once
  // per step); the sums of the pairs that were not asked for are dropped.
  struct Bundle {
    size_t first = 0;
    int count = 0, width = 0;
    int resident[4] = {0, 0, 0, 0};  // positions in `residents`
    bool single = false;
  };
  std::vector<int> residents;       // vector indices, in first-use order
  std::vector<int> resident_slot;   // vector index -> its residents position, or -1
  std::vector<Group> groups;        // in the order of their first pair
  std::vector<Bundle> bundles;      // covering `groups` in order
};

// At most this many streamed vectors side by side, and this many pairs (one
// vec4 accumulator each, held in registers) in a bundle.
constexpr int kBundleVectors = 4;
constexpr int kBundlePairs = 12;

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
  // vector, so that it is read once per block. A pair asked for twice goes
  // to another group: a group's residents differ.
  std::vector<bool> grouped(pairs.size(), false);
  for (size_t p = 0; p < pairs.size(); ++p) {
    if (grouped[p]) continue;
    DotPlan::Group g;
    g.streamed = pairs[p].second;
    for (size_t q = p; q < pairs.size() && g.size < 4; ++q) {
      if (grouped[q] || pairs[q].second != g.streamed ||
          std::find(g.resident, g.resident + g.size, pairs[q].first) != g.resident + g.size)
        continue;
      g.resident[g.size] = pairs[q].first;
      g.pair[g.size++] = q;
      grouped[q] = true;
    }
    plan.groups.push_back(g);
  }
  // Adds group g's residents to bundle b; false when they do not fit.
  const auto take_residents = [&](DotPlan::Bundle& b, const DotPlan::Group& g) {
    for (int k = 0; k < g.size; ++k) {
      const int r = plan.resident_slot[g.resident[k]];
      if (std::find(b.resident, b.resident + b.width, r) != b.resident + b.width) continue;
      if (b.width == 4) return false;
      b.resident[b.width++] = r;
    }
    return (b.count + 1) * b.width <= kBundlePairs;
  };
  // A resident is read as double (in place, or widened), whatever its type.
  for (size_t i = 0; i < plan.groups.size(); ++i) {
    const DotPlan::Group& g = plan.groups[i];
    const bool single = plan.resident_slot[g.streamed] < 0 && vectors[g.streamed].single;
    if (!plan.bundles.empty()) {
      DotPlan::Bundle joined = plan.bundles.back();
      if (joined.single == single && joined.count < kBundleVectors &&
          take_residents(joined, g)) {
        joined.count += 1;
        plan.bundles.back() = joined;
        continue;
      }
    }
    DotPlan::Bundle b;
    b.first = i;
    b.single = single;
    take_residents(b, g);  // at most four residents: always fits
    b.count = 1;
    plan.bundles.push_back(b);
  }
  return plan;
}

// Adds the vec4 lanes and the scalar tail in a fixed order.
inline double lane_sum(vec4 v, double tail) { return lanes_sum(v) + tail; }

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

// The dot products of G streamed vectors b[g], read side by side, with R
// residents a[r], over [0, len), into sums[g·R + r]. Every pair has one vec4
// accumulator over the whole 4-lane groups and a scalar tail, added by
// lane_sum: a pair's bits depend on len only, not on its bundle or on which
// of its vectors is streamed.
template <int G, int R, class T>
__attribute__((always_inline)) inline void dot_bundle(const T* const* b, const double* const* a,
                                                      int64_t len, double* const* sums) {
  static_assert(G * R <= kBundlePairs, "a bundle's accumulators are held in registers");
  vec4 acc[G * R];
  for (int p = 0; p < G * R; ++p) acc[p] = splat4(0.0);
  int64_t i = 0;
  for (; i + 4 <= len; i += 4)
    for (int g = 0; g < G; ++g) {
      const vec4 v = load4_any(b[g] + i);
      for (int r = 0; r < R; ++r) acc[g * R + r] += load4(a[r] + i) * v;
    }
  // An explicit fma: left to the compiler, the tail is contracted for a
  // float b but not for a double one, so a product's bits would depend on its
  // side.
  for (int g = 0; g < G; ++g)
    for (int r = 0; r < R; ++r) {
      double tail = 0.0;
      for (int64_t j = i; j < len; ++j)
        tail = std::fma(a[r][j], static_cast<double>(b[g][j]), tail);
      *sums[g * R + r] = lane_sum(acc[g * R + r], tail);
    }
}

template <int G, class T>
__attribute__((always_inline)) inline void dot_bundle_of_width(int R, const T* const* b,
                                                               const double* const* a,
                                                               int64_t len, double* const* sums) {
  switch (R) {
    case 1: dot_bundle<G, 1>(b, a, len, sums); break;
    case 2: dot_bundle<G, 2>(b, a, len, sums); break;
    case 3: dot_bundle<G, 3>(b, a, len, sums); break;
    default:  // plan_dots keeps G·R <= kBundlePairs: never G = R = 4
      if constexpr (G * 4 <= kBundlePairs) dot_bundle<G, 4>(b, a, len, sums);
      break;
  }
}

template <class T>
__attribute__((always_inline)) inline void dot_bundle_of_shape(int G, int R, const T* const* b,
                                                               const double* const* a,
                                                               int64_t len, double* const* sums) {
  switch (G) {
    case 1: dot_bundle_of_width<1>(R, b, a, len, sums); break;
    case 2: dot_bundle_of_width<2>(R, b, a, len, sums); break;
    case 3: dot_bundle_of_width<3>(R, b, a, len, sums); break;
    default: dot_bundle_of_width<4>(R, b, a, len, sums); break;
  }
}

// The dot products of the blocks in [begin, end) (a work unit of whole
// blocks), block b's into sums[b·n_pairs, (b + 1)·n_pairs). `widened` holds
// end - begin doubles per resident: float residents are widened there.
// Every bundle streams its vectors through the whole unit, its sums stored
// and restarted at each block boundary: a block's sums are those it would
// have on its own, while each stream runs unbroken for several blocks
// (units of 8 blocks: 0.8x the time of single blocks, same bits).
SSCRF_SIMD_CLONES
void dot_products_unit(const std::vector<VectorRef>& vectors, const DotPlan& plan,
                       int64_t begin, int64_t end, double* widened, double* sums,
                       size_t n_pairs) {
  const int64_t len = end - begin;
  for (size_t r = 0; r < plan.residents.size(); ++r) {
    const VectorRef v = vectors[plan.residents[r]];
    if (!v.single) continue;
    const float* f = static_cast<const float*>(v.data) + begin;
    double* w = widened + r * len;
#pragma omp simd
    for (int64_t i = 0; i < len; ++i) w[i] = static_cast<double>(f[i]);
  }
  // The unit of resident r: in place, or widened above.
  const auto resident = [&](int r) -> const double* {
    const VectorRef v = vectors[plan.residents[r]];
    return v.single ? widened + r * len : static_cast<const double*>(v.data) + begin;
  };
  double dropped[kBundlePairs];  // the sums of pairs not asked for
  for (const DotPlan::Bundle& bundle : plan.bundles) {
    const void* b[kBundleVectors];
    const double* a[4];
    int pair_of[kBundlePairs];  // the caller's pair of each sum, or -1
    for (int r = 0; r < bundle.width; ++r) a[r] = resident(bundle.resident[r]);
    for (int g = 0; g < bundle.count; ++g) {
      const DotPlan::Group& group = plan.groups[bundle.first + g];
      const int slot = plan.resident_slot[group.streamed];
      b[g] = slot >= 0 ? static_cast<const void*>(resident(slot))
             : bundle.single ? static_cast<const void*>(
                                   static_cast<const float*>(vectors[group.streamed].data) + begin)
                             : static_cast<const void*>(
                                   static_cast<const double*>(vectors[group.streamed].data) +
                                   begin);
      for (int r = 0; r < bundle.width; ++r) pair_of[g * bundle.width + r] = -1;
      for (int k = 0; k < group.size; ++k) {
        const int r = static_cast<int>(
            std::find(bundle.resident, bundle.resident + bundle.width,
                      plan.resident_slot[group.resident[k]]) - bundle.resident);
        pair_of[g * bundle.width + r] = static_cast<int>(group.pair[k]);
      }
    }
    for (int64_t block = 0; block * kReductionBlock < len; ++block) {
      const int64_t offset = block * kReductionBlock;
      const int64_t block_len = std::min(kReductionBlock, len - offset);
      double* sum[kBundlePairs];
      for (int p = 0; p < bundle.count * bundle.width; ++p)
        sum[p] = pair_of[p] < 0 ? &dropped[p] : &sums[block * n_pairs + pair_of[p]];
      const double* a_block[4];
      for (int r = 0; r < bundle.width; ++r) a_block[r] = a[r] + offset;
      // The streamed vectors' block, read as the type T they are stored in.
      const auto run = [&](auto t) __attribute__((always_inline)) {
        using T = decltype(t);
        const T* b_block[kBundleVectors];
        for (int g = 0; g < bundle.count; ++g) b_block[g] = static_cast<const T*>(b[g]) + offset;
        dot_bundle_of_shape(bundle.count, bundle.width, b_block, a_block, block_len, sum);
      };
      if (bundle.single)
        run(float{});
      else
        run(double{});
    }
  }
}

// c · (entries [i, i + 4) of v).
__attribute__((always_inline)) inline vec4 scaled4(const VectorRef& v, double c, int64_t i) {
  return v.single ? splat4(c) * load4_widened(static_cast<const float*>(v.data) + i)
                  : splat4(c) * load4(static_cast<const double*>(v.data) + i);
}

__attribute__((always_inline)) inline double entry(const VectorRef& v, int64_t i) {
  return v.single ? static_cast<double>(static_cast<const float*>(v.data)[i])
                  : static_cast<const double*>(v.data)[i];
}

// One block of linear_combination. Every vector is read side by side, 8
// entries at a time (one stream at a time uses about half the memory
// bandwidth; see DotPlan), and each entry's terms are added in j order. The
// dot with `reference` has accumulate_dot's order. An entry of every input
// is read before out's entry is written.
SSCRF_SIMD_CLONES
double linear_combination_block(double* out, const std::vector<double>& coefficients,
                                const std::vector<VectorRef>& vectors,
                                const double* reference, bool confine, int64_t begin,
                                int64_t end) {
  const size_t J = vectors.size();
  const VectorRef* v = vectors.data();
  const double* c = coefficients.data();
  const auto confined = [&](vec4 sum, const vec4 r) {
    return confine ? (sum * r >= 0.0 ? splat4(0.0) : sum) : sum;
  };
  vec4 even = splat4(0.0), odd = even;
  int64_t i = begin;
  for (; i + 8 <= end; i += 8) {
    vec4 lo = splat4(0.0), hi = lo;
    if (J > 0) {
      lo = scaled4(v[0], c[0], i);
      hi = scaled4(v[0], c[0], i + 4);
    }
    for (size_t j = 1; j < J; ++j) {
      lo += scaled4(v[j], c[j], i);
      hi += scaled4(v[j], c[j], i + 4);
    }
    const vec4 r_lo = load4(reference + i), r_hi = load4(reference + i + 4);
    lo = confined(lo, r_lo);
    hi = confined(hi, r_hi);
    even += lo * r_lo;
    odd += hi * r_hi;
    store4(out + i, lo);
    store4(out + i + 4, hi);
  }
  double tail = 0.0;
  for (; i < end; ++i) {
    double sum = J > 0 ? c[0] * entry(v[0], i) : 0.0;
    for (size_t j = 1; j < J; ++j) sum += c[j] * entry(v[j], i);
    const double r = reference[i];
    if (confine && sum * r >= 0.0) sum = 0.0;
    tail += sum * r;
    out[i] = sum;
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

// Runs body(begin, end) -> double over the blocks of [0, n) and returns the
// block results added in block order.
template <class Body>
double sum_over_blocks(int64_t n, int n_threads, Body&& body) {
  const int64_t n_blocks = block_count(n);
  const int threads = effective_threads(n_threads, n_blocks);
  std::vector<double> block_sums(static_cast<size_t>(n_blocks), 0.0);
#pragma omp parallel for schedule(static) num_threads(threads)
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

// Blocks per work unit of dot_products_unit: up to `most`, while every
// thread still gets 16 units or more to balance. The unit sets no bits (each
// block's sums are its own), so it may follow the thread count.
int64_t blocks_per_unit(int64_t n_blocks, int threads, int64_t most) {
  return std::clamp<int64_t>(n_blocks / (16 * static_cast<int64_t>(threads)), 1, most);
}

// Units of the products alone, and of the secant pass fused with them, which
// writes the new pair just before the products read it. Fused units of
// several blocks lost more on some machines (1.22x) than they gained on
// others (0.9x), so fused units stay single blocks.
constexpr int64_t kMostUnitBlocks = 8;
constexpr int64_t kMostFusedUnitBlocks = 1;

// dot_products, with before(begin, end) run on each work unit of at most
// `most_unit_blocks` blocks just before the unit's products (by the thread
// that computes them).
template <class Before>
void dot_products_after(const std::vector<VectorRef>& vectors,
                        const std::vector<std::pair<int, int>>& pairs, int64_t n, double* out,
                        int n_threads, int64_t most_unit_blocks, Before&& before) {
  const int64_t n_blocks = block_count(n);
  const size_t n_pairs = pairs.size();
  const DotPlan plan = plan_dots(vectors, pairs);
  std::vector<double> block_sums(static_cast<size_t>(n_blocks) * n_pairs, 0.0);
  const int64_t unit_blocks =
      blocks_per_unit(n_blocks, effective_threads(n_threads, n_blocks), most_unit_blocks);
  const int64_t n_units = (n_blocks + unit_blocks - 1) / unit_blocks;
  const int threads = effective_threads(n_threads, n_units);
  const size_t scratch_size = plan.residents.size() * unit_blocks * kReductionBlock;
  UninitializedBuffer scratch;
  scratch.reserve(std::max<size_t>(1, scratch_size * threads));
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t unit = 0; unit < n_units; ++unit) {
    const int64_t begin = unit * unit_blocks * kReductionBlock;
    const int64_t end = std::min(n, begin + unit_blocks * kReductionBlock);
    before(begin, end);
    // (data() + offset: with no pairs block_sums is empty, and secant_pair
    // still needs its pass run by before)
    dot_products_unit(vectors, plan, begin, end, scratch.data() + scratch_size * thread_id(),
                      block_sums.data() + static_cast<size_t>(unit * unit_blocks) * n_pairs,
                      n_pairs);
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
  dot_products_after(vectors, pairs, n, out, n_threads, kMostUnitBlocks,
                     [](int64_t, int64_t) {});
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
  dot_products_after(vectors, pairs, n, out, n_threads, kMostFusedUnitBlocks,
                     [&](int64_t begin, int64_t end) {
                       secant_pair_block(x, trial, gradient, previous_gradient, step, y,
                                         single, begin, end);
                     });
}

double add_l2_prior(const double* theta, double* grad, double c2, int64_t n, int n_threads) {
  return sum_over_blocks(n, n_threads, [&](int64_t begin, int64_t end) {
    return add_l2_prior_block(theta, grad, 2.0 * c2, begin, end);
  });
}

}  // namespace sscrf
