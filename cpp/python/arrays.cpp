// Conversion and checks of the shims' arguments (see arrays.hpp).
#include "python/arrays.hpp"

#include <cmath>

#include "runtime/dense_kernels.hpp"
#include "runtime/parallel.hpp"

namespace sscrf::python {

std::string shape_of(const py::array& a) {
  std::string s = "(";
  for (py::ssize_t i = 0; i < a.ndim(); ++i) s += (i ? ", " : "") + std::to_string(a.shape(i));
  return s + (a.ndim() == 1 ? ",)" : ")");
}

void require_shape(const py::array& a, std::initializer_list<py::ssize_t> shape,
                   const char* name) {
  bool ok = a.ndim() == static_cast<py::ssize_t>(shape.size());
  py::ssize_t i = 0;
  for (auto d : shape) ok = ok && a.shape(i++) == d;
  if (!ok) {
    std::string want = "(";
    i = 0;
    for (auto d : shape) want += (i++ ? ", " : "") + std::to_string(d);
    fail(std::string(name) + " must have shape " + want + (shape.size() == 1 ? ",)" : ")") +
         ", got " + shape_of(a));
  }
}

void require_finite(const double* p, py::ssize_t size, const char* name, int n_threads) {
  // theta can have millions of entries and is checked at every evaluation:
  // one vectorised pass (in parallel blocks: a serial pass over a dense
  // model's theta is a visible part of an evaluation on several threads),
  // then the loop below only names the fault.
  const int64_t block = 1 << 16, n_blocks = (size + block - 1) / block;
  int within = 1;
#pragma omp parallel for reduction(&& : within) num_threads(effective_threads(n_threads, n_blocks))
  for (int64_t i = 0; i < n_blocks; ++i)
    within = within && scores_within(p + i * block, std::min<int64_t>(block, size - i * block));
  if (within) return;
  for (py::ssize_t i = 0; i < size; ++i) {
    if (!std::isfinite(p[i])) fail(std::string(name) + " contains NaN or infinite values");
    if (std::fabs(p[i]) > kMaxScore)
      fail(std::string(name) + " has values too large (|value| > 1e250) for the lattice sums");
  }
}

void require_indptr(const int64_t* ip, int64_t n_rows, int64_t nnz) {
  if (ip[0] != 0 || ip[n_rows] != nnz) fail("indptr must start at 0 and end at len(indices)");
  for (int64_t t = 0; t < n_rows; ++t)
    if (ip[t + 1] < ip[t]) fail("indptr must be non-decreasing");
}

int checked_threads(int n_threads) {
  if (n_threads < 1 || n_threads > 1024)
    fail("n_threads must be an integer in [1, 1024], got " + std::to_string(n_threads));
  static bool warned = false;
  if (n_threads > 1 && forked_after_threads() && !warned) {
    warned = true;
    if (PyErr_WarnEx(PyExc_RuntimeWarning,
                     "sscrf runs on one thread in this process: it was forked after its "
                     "parent ran sscrf on several threads, and OpenMP cannot start threads "
                     "in such a child (results are the same; for threads in worker "
                     "processes, use multiprocessing's 'spawn' or 'forkserver' start "
                     "method)",
                     1) < 0)
      throw py::error_already_set();
  }
  return n_threads;
}

Bools checked_mask(const py::object& o, const char* name) {
  if (py::isinstance<py::array>(o)) {
    const char kind = py::reinterpret_borrow<py::array>(o).dtype().kind();
    if (kind != 'b' && kind != 'i' && kind != 'u')
      fail(std::string(name) + " must be a bool array, got dtype kind '" + std::string(1, kind) + "'");
  }
  auto mask = Bools::ensure(o);
  if (!mask) fail(std::string(name) + " must be a bool array");
  return mask;
}

ChainArrays make_chain(const py::object& emissions, const py::object& transitions,
                       const py::object& start, const py::object& end, const py::object& mask,
                       const py::object& edge_mask) {
  ChainArrays c;
  c.emissions = Doubles::ensure(emissions);
  if (!c.emissions || c.emissions.ndim() != 2)
    fail("emissions must be a 2-D float array (n, S)");
  const py::ssize_t n = c.emissions.shape(0), S = c.emissions.shape(1);
  if (S < 1) fail("emissions must have at least one label column, got shape " + shape_of(c.emissions));
  c.transitions = Doubles::ensure(transitions);
  if (!c.transitions) fail("transitions must be a float array (S, S)");
  require_shape(c.transitions, {S, S}, "transitions");
  require_finite(c.emissions.data(), c.emissions.size(), "emissions");
  require_finite(c.transitions.data(), c.transitions.size(), "transitions");
  const double* start_p = nullptr;
  const double* end_p = nullptr;
  if (!start.is_none()) {
    c.start = Doubles::ensure(start);
    if (!c.start) fail("start must be a float array (S,)");
    require_shape(c.start, {S}, "start");
    require_finite(c.start.data(), S, "start");
    start_p = c.start.data();
  }
  if (!end.is_none()) {
    c.end = Doubles::ensure(end);
    if (!c.end) fail("end must be a float array (S,)");
    require_shape(c.end, {S}, "end");
    require_finite(c.end.data(), S, "end");
    end_p = c.end.data();
  }
  const uint8_t* mask_p = nullptr;
  const uint8_t* edge_p = nullptr;
  if (!mask.is_none()) {
    c.mask = checked_mask(mask, "mask");
    require_shape(c.mask, {n, S}, "mask");
    mask_p = reinterpret_cast<const uint8_t*>(c.mask.data());
  }
  if (!edge_mask.is_none()) {
    c.edge_mask = checked_mask(edge_mask, "edge_mask");
    require_shape(c.edge_mask, {n > 0 ? n - 1 : 0, S, S}, "edge_mask");
    edge_p = reinterpret_cast<const uint8_t*>(c.edge_mask.data());
  }
  c.chain.n = n;
  c.chain.S = static_cast<int>(S);
  c.chain.emissions = c.emissions.data();
  c.chain.transitions = c.transitions.data();
  c.chain.start = start_p;
  c.chain.end = end_p;
  c.chain.node_mask = mask_p;
  c.chain.edge_mask = edge_p;
  return c;
}

Doubles checked_theta(const Corpus& corpus, const Layout& layout, const py::object& theta_o,
                      bool use_mask, int n_threads, int64_t finite_from) {
  checked_threads(n_threads);
  auto theta = Doubles::ensure(theta_o);
  if (!theta) fail("theta must be a 1-D float array");
  require_shape(theta, {layout.n_parameters()}, "theta");
  require_finite(theta.data() + finite_from, theta.size() - finite_from, "theta", n_threads);
  if (corpus.n_attributes > layout.n_attributes)
    fail("the corpus has more attributes than the model layout");
  if (use_mask && (!corpus.mask.empty() || !corpus.edge_mask.empty()) &&
      corpus.mask_labels != layout.S)
    fail("mask has " + std::to_string(corpus.mask_labels) + " label columns, the model has " + std::to_string(layout.S));
  return theta;
}

void require_labels(const Corpus& corpus, const Layout& layout) {
  if (corpus.labels.empty() && corpus.n_tokens > 0) fail("this corpus has no labels");
  for (int32_t y : corpus.labels)
    if (y >= layout.S) fail("label id " + std::to_string(y) + " out of range for " + std::to_string(layout.S) + " labels");
}

VectorRef any_vector(const py::handle& o, int64_t n, bool writable, const std::string& name,
                     bool allow_single) {
  if (!py::isinstance<py::array>(o)) fail(name + " must be a numpy array");
  auto a = py::reinterpret_borrow<py::array>(o);
  const bool single = allow_single && a.dtype().is(py::dtype::of<float>());
  if (!(single || a.dtype().is(py::dtype::of<double>())) || a.ndim() != 1 ||
      !(a.flags() & py::array::c_style))
    fail(name + " must be a 1-D C-contiguous float64" + (allow_single ? " or float32" : "") +
         " array");
  // Used in place, so not copied: one that starts off its element size is refused.
  if (!(a.flags() & py::detail::npy_api::NPY_ARRAY_ALIGNED_))
    fail(name + " must be an aligned array (numpy.require(a, requirements='A') copies it)");
  if (n >= 0 && a.shape(0) != n)
    fail(name + " must have " + std::to_string(n) + " entries, got " + std::to_string(a.shape(0)));
  if (writable && !a.writeable()) fail(name + " must be writable");
  return {a.data(), single};
}

double* parameter_vector(const py::handle& o, int64_t n, bool writable, const std::string& name) {
  return static_cast<double*>(const_cast<void*>(any_vector(o, n, writable, name, false).data));
}

std::vector<VectorRef> checked_vectors(const py::handle& vectors_o, int64_t& n) {
  if (!py::isinstance<py::sequence>(vectors_o)) fail("vectors must be a sequence of arrays");
  const auto seq = py::reinterpret_borrow<py::sequence>(vectors_o);
  std::vector<VectorRef> vectors;
  for (size_t j = 0; j < seq.size(); ++j) {
    vectors.push_back(any_vector(seq[j], n, false, "vectors[" + std::to_string(j) + "]"));
    n = py::reinterpret_borrow<py::array>(seq[j]).shape(0);
  }
  return vectors;
}

std::vector<std::pair<int, int>> checked_pairs(const py::handle& pairs_o, size_t n_vectors) {
  auto pairs_a = Array<int64_t>::ensure(pairs_o);
  if (!pairs_a || pairs_a.ndim() != 2 || pairs_a.shape(1) != 2)
    fail("pairs must be an int array of shape (n_pairs, 2)");
  std::vector<std::pair<int, int>> pairs;
  for (py::ssize_t p = 0; p < pairs_a.shape(0); ++p) {
    const int64_t i = pairs_a.at(p, 0), j = pairs_a.at(p, 1);
    if (i < 0 || j < 0 || i >= static_cast<int64_t>(n_vectors) ||
        j >= static_cast<int64_t>(n_vectors))
      fail("pairs[" + std::to_string(p) + "] names a vector out of range [0, " +
           std::to_string(n_vectors) + ")");
    pairs.emplace_back(static_cast<int>(i), static_cast<int>(j));
  }
  return pairs;
}

GradientOutput gradient_output(const py::object& out_o, const Layout& layout,
                               const Doubles& theta) {
  if (out_o.is_none()) {
    py::array_t<double> grad(layout.n_parameters());
    double* p = grad.mutable_data();
    return {grad, p};
  }
  double* p = parameter_vector(out_o, layout.n_parameters(), true, "out");
  const double* t = theta.data();
  if (p < t + theta.size() && t < p + layout.n_parameters())
    fail("out must not overlap theta");
  return {py::reinterpret_borrow<py::array>(out_o), p};
}

double* rows_buffer(const py::object& o, int64_t n_rows, int S, bool writable, const char* name) {
  if (o.is_none()) return nullptr;
  const auto e = py::reinterpret_borrow<py::array>(o);
  if (!py::isinstance<py::array>(o) || !e.dtype().is(py::dtype::of<double>()) || e.ndim() != 2 ||
      e.shape(0) != n_rows || e.shape(1) != S || !(e.flags() & py::array::c_style) ||
      !(e.flags() & py::detail::npy_api::NPY_ARRAY_ALIGNED_) ||
      (writable && !e.writeable()))
    fail(std::string(name) + " must be a " + (writable ? "writable " : "") +
         "aligned C-contiguous float64 array (n_tokens, S)");
  return static_cast<double*>(const_cast<void*>(e.data()));
}

}  // namespace sscrf::python
