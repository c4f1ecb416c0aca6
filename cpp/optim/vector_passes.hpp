// Passes over parameter-sized vectors for the optimiser (python/sscrf/optimize.py)
// and the L2 prior: threaded, fused, and deterministic.
//
// With millions of parameters (a dense CoNLL-2000 model has 7.4M), L-BFGS's
// vector work is memory-bound and, as separate numpy passes, cost more than
// the loss and gradient themselves. Here every reduction is split into fixed
// blocks of kReductionBlock entries; one thread sums a block in index
// order and the block sums are added in block order, so every result has the
// same bits for any thread count. Sums and products run in double; the
// L-BFGS history may be stored in float (half the memory and traffic).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace sscrf {

constexpr int64_t kReductionBlock = 8192;

// A read-only vector of double, or of float when `single`.
struct VectorRef {
  const void* data;
  bool single;
};

// out[p] = vectors[pairs[p].first] · vectors[pairs[p].second] for every
// pair, in one pass that reads each vector once.
void dot_products(const std::vector<VectorRef>& vectors,
                  const std::vector<std::pair<int, int>>& pairs, int64_t n, double* out,
                  int n_threads);

// out = Σ_j coefficients[j] · vectors[j], summed in j order. With `confine`,
// entries that do not point against `reference` (out_i · reference_i >= 0)
// are set to 0 (OWL-QN's orthant constraint, Andrew & Gao 2007). Returns
// reference · out. `out` may be one of `vectors` or `reference`: each entry
// is read before it is written.
double linear_combination(double* out, const std::vector<double>& coefficients,
                          const std::vector<VectorRef>& vectors, const double* reference,
                          bool confine, int64_t n, int n_threads);

// out = x + alpha · d.
void step_along(double* out, const double* x, double alpha, const double* d, int64_t n,
                int n_threads);

// The secant pair of the step from x to the accepted trial point:
// step = trial − x and y = gradient − previous_gradient, stored as float when
// `single`, else as double. Nothing else is written: the caller makes the
// trial buffer its iterate (a swap, not a copy).
void secant_pair(const double* x, const double* trial, const double* gradient,
                 const double* previous_gradient, void* step, void* y, bool single, int64_t n,
                 int n_threads);

// secant_pair, then dot_products of `pairs` among `vectors` in the same pass:
// each block's products are taken right after the block's secant pair is
// written, while its entries are in cache. `vectors` may include step and y
// (their new values are read); the results have the bits of the two passes.
void secant_pair_and_dot_products(const double* x, const double* trial, const double* gradient,
                                  const double* previous_gradient, void* step, void* y,
                                  bool single, const std::vector<VectorRef>& vectors,
                                  const std::vector<std::pair<int, int>>& pairs, int64_t n,
                                  double* out, int n_threads);

// grad += 2·c2·theta, the gradient of the prior c2·‖θ‖²; returns θ·θ.
double add_l2_prior(const double* theta, double* grad, double c2, int64_t n, int n_threads);

}  // namespace sscrf
