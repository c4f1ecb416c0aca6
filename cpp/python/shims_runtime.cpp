// Shims of the runtime (build facts, scratch, chunk sizes) and of the
// optimiser's vector passes over vectors used in place.
#include <string>
#include <vector>

#include "layer/corpus.hpp"
#include "optim/vector_passes.hpp"
#include "python/arrays.hpp"
#include "python/shims.hpp"
#include "runtime/block_cache.hpp"
#include "runtime/dense_kernels.hpp"
#include "runtime/parallel.hpp"

namespace sscrf::python {

py::dict build_info_shim() {
  py::dict d;
#ifdef _OPENMP
  d["openmp"] = true;
#else
  d["openmp"] = false;
#endif
  d["max_threads"] = max_threads();
#if defined(__clang__)
  d["compiler"] = "clang " + std::to_string(__clang_major__) + "." +
                  std::to_string(__clang_minor__) + "." + std::to_string(__clang_patchlevel__);
#elif defined(__GNUC__)
  d["compiler"] = std::string("gcc ") + __VERSION__;
#else
  d["compiler"] = "unknown";
#endif
  d["kernels"] = kernel_target();
  return d;
}

int64_t chunk_tokens_for_shim(int64_t n_labels) {
  if (n_labels < 1) fail("n_labels must be >= 1, got " + std::to_string(n_labels));
  return chunk_tokens_for_labels(n_labels);
}

size_t release_scratch_shim() { return release_cached_blocks(); }

size_t cached_scratch_bytes_shim() { return cached_block_bytes(); }

py::array_t<double> dot_products_shim(const py::sequence& vectors_o, const py::object& pairs_o,
                                      int n_threads) {
  checked_threads(n_threads);
  int64_t n = -1;
  const auto vectors = checked_vectors(vectors_o, n);
  const auto pairs = checked_pairs(pairs_o, vectors.size());
  py::array_t<double> out(static_cast<py::ssize_t>(pairs.size()));
  double* o = out.mutable_data();
  {
    py::gil_scoped_release release;
    dot_products(vectors, pairs, std::max<int64_t>(n, 0), o, n_threads);
  }
  return out;
}

double linear_combination_shim(const py::object& out_o, const py::object& coefficients_o,
                               const py::sequence& vectors_o, const py::object& reference_o,
                               bool confine, int n_threads) {
  checked_threads(n_threads);
  double* out = parameter_vector(out_o, -1, true, "out");
  const int64_t n = py::reinterpret_borrow<py::array>(out_o).shape(0);
  const double* reference = parameter_vector(reference_o, n, false, "reference");
  auto c = Doubles::ensure(coefficients_o);
  if (!c || c.ndim() != 1 || c.shape(0) != static_cast<py::ssize_t>(vectors_o.size()))
    fail("coefficients must be a 1-D float array with one entry per vector");
  require_finite(c.data(), c.size(), "coefficients");
  std::vector<double> coefficients(c.data(), c.data() + c.size());
  std::vector<VectorRef> vectors;
  for (size_t j = 0; j < vectors_o.size(); ++j)
    vectors.push_back(any_vector(vectors_o[j], n, false, "vectors[" + std::to_string(j) + "]"));
  py::gil_scoped_release release;
  return linear_combination(out, coefficients, vectors, reference, confine, n, n_threads);
}

void step_along_shim(const py::object& out_o, const py::object& x_o, double alpha,
                     const py::object& d_o, int n_threads) {
  checked_threads(n_threads);
  double* out = parameter_vector(out_o, -1, true, "out");
  const int64_t n = py::reinterpret_borrow<py::array>(out_o).shape(0);
  const double* x = parameter_vector(x_o, n, false, "x");
  const double* d = parameter_vector(d_o, n, false, "d");
  py::gil_scoped_release release;
  step_along(out, x, alpha, d, n, n_threads);
}

py::object secant_pair_shim(const py::object& x_o, const py::object& trial_o,
                            const py::object& gradient_o, const py::object& previous_o,
                            const py::object& step_o, const py::object& y_o, int n_threads,
                            const py::object& vectors_o, const py::object& pairs_o) {
  checked_threads(n_threads);
  const double* x = parameter_vector(x_o, -1, false, "x");
  const int64_t n = py::reinterpret_borrow<py::array>(x_o).shape(0);
  const double* trial = parameter_vector(trial_o, n, false, "trial");
  const double* gradient = parameter_vector(gradient_o, n, false, "gradient");
  const double* previous = parameter_vector(previous_o, n, false, "previous_gradient");
  const VectorRef step = any_vector(step_o, n, true, "step");
  const VectorRef y = any_vector(y_o, n, true, "y");
  if (step.single != y.single) fail("step and y must have the same dtype");
  if (vectors_o.is_none() != pairs_o.is_none()) fail("vectors and pairs go together");
  if (vectors_o.is_none()) {
    py::gil_scoped_release release;
    secant_pair(x, trial, gradient, previous, const_cast<void*>(step.data),
                const_cast<void*>(y.data), step.single, n, n_threads);
    return py::none();
  }
  int64_t length = n;
  const auto vectors = checked_vectors(vectors_o, length);
  const auto pairs = checked_pairs(pairs_o, vectors.size());
  py::array_t<double> out(static_cast<py::ssize_t>(pairs.size()));
  double* o = out.mutable_data();
  {
    py::gil_scoped_release release;
    secant_pair_and_dot_products(x, trial, gradient, previous, const_cast<void*>(step.data),
                                 const_cast<void*>(y.data), step.single, vectors, pairs, n, o,
                                 n_threads);
  }
  return std::move(out);
}

double add_l2_prior_shim(const py::object& theta_o, const py::object& grad_o, double c2,
                         int n_threads) {
  checked_threads(n_threads);
  const double* theta = parameter_vector(theta_o, -1, false, "theta");
  const int64_t n = py::reinterpret_borrow<py::array>(theta_o).shape(0);
  double* grad = parameter_vector(grad_o, n, true, "grad");
  py::gil_scoped_release release;
  return add_l2_prior(theta, grad, c2, n, n_threads);
}

}  // namespace sscrf::python
