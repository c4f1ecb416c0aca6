// Conversion of Python arguments for the shims: numpy arrays to the core's
// pointers and structs, with the checks that refuse a bad argument as an
// InputError (shapes, dtypes, ids, finiteness, thread counts).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "lattice/chain.hpp"
#include "layer/corpus.hpp"
#include "layer/linear_layer.hpp"
#include "optim/vector_passes.hpp"
#include "runtime/errors.hpp"

namespace sscrf::python {

namespace py = pybind11;

// Structs holding pybind11 objects share pybind11's hidden visibility.
#define SSCRF_HIDDEN __attribute__((visibility("hidden")))

// A C-contiguous, aligned array of T converted from any argument (a copy when
// the argument is not: numpy arrays unpickled from a buffer, as Dask's workers
// receive them, can start at any byte, and a misaligned load is undefined
// behaviour). ensure() returns a null array only when the argument cannot be
// read as such an array (the caller names it); any other failure of the
// conversion, a MemoryError above all, propagates as what it is instead of
// reading as a type mismatch.
constexpr int kArrayFlags =
    py::array::c_style | py::array::forcecast | py::detail::npy_api::NPY_ARRAY_ALIGNED_;
template <class T>
struct SSCRF_HIDDEN Array : py::array_t<T, kArrayFlags> {
  using Base = py::array_t<T, kArrayFlags>;
  using Base::Base;
  Array() = default;
  Array(Base b) : Base(std::move(b)) {}  // NOLINT: implicit, as the alias was

  static Array ensure(py::handle h) {
    auto result = py::reinterpret_steal<Base>(Base::raw_array_t(h.ptr()));
    if (!result) {
      if (!PyErr_ExceptionMatches(PyExc_TypeError) && !PyErr_ExceptionMatches(PyExc_ValueError))
        throw py::error_already_set();
      PyErr_Clear();
    }
    return result;
  }
};
using Doubles = Array<double>;
using Bools = Array<bool>;

// Refuses an argument: an InputError, which Python sees as SscrfError.
[[noreturn]] inline void fail(const std::string& msg) { throw InputError(msg); }

// A new 1-D array of Out holding v's elements.
template <class Out, class In>
py::array_t<Out> array_of(const std::vector<In>& v) {
  py::array_t<Out> out(static_cast<py::ssize_t>(v.size()));
  std::copy(v.begin(), v.end(), out.mutable_data());
  return out;
}

// "(2, 3)" or "(4,)".
std::string shape_of(const py::array& a);
void require_shape(const py::array& a, std::initializer_list<py::ssize_t> shape, const char* name);
// Every value finite and within kMaxScore (checked in parallel blocks with
// n_threads: theta is checked at every evaluation).
void require_finite(const double* p, py::ssize_t size, const char* name, int n_threads = 1);
// A CSR row pointer over n_rows rows and nnz entries.
void require_indptr(const int64_t* ip, int64_t n_rows, int64_t nnz);
// n_threads in [1, 1024]; warns once when a forked child must run on one.
int checked_threads(int n_threads);
// A bool or integer array (a cast from strings would read "False" as True).
Bools checked_mask(const py::object& o, const char* name);

// One chain from dense arrays; the arrays own the converted data.
struct SSCRF_HIDDEN ChainArrays {
  Doubles emissions, transitions, start, end;
  Bools mask, edge_mask;
  Chain chain;
};
ChainArrays make_chain(const py::object& emissions, const py::object& transitions,
                       const py::object& start, const py::object& end, const py::object& mask,
                       const py::object& edge_mask);

// f(), with NoLabeling from a single chain's masks named as such.
template <class F>
auto run_chain(F&& f) {
  try {
    return f();
  } catch (const NoLabeling&) {
    fail("mask and edge_mask allow no labeling of the sequence");
  }
}

// theta [n_parameters] of the layout, finite from entry finite_from on (a
// call that reads no weight of W checks only what it reads), for this
// corpus; with use_mask, the corpus masks must have the layout's label count.
Doubles checked_theta(const Corpus& corpus, const Layout& layout, const py::object& theta_o,
                      bool use_mask, int n_threads, int64_t finite_from = 0);
// The corpus has labels, all below the layout's label count.
void require_labels(const Corpus& corpus, const Layout& layout);

// A float64 (or, with allow_single, float32), 1-D, C-contiguous array of n
// entries (any n when n < 0), used in place: the optimiser's vectors are
// never copied, and a converted copy of an output would silently drop the
// result.
VectorRef any_vector(const py::handle& o, int64_t n, bool writable, const std::string& name,
                     bool allow_single = true);
double* parameter_vector(const py::handle& o, int64_t n, bool writable, const std::string& name);
// The vectors of an optimiser pass, all of length n (set from the first when
// n < 0 on entry), read-only.
std::vector<VectorRef> checked_vectors(const py::handle& vectors_o, int64_t& n);
// Rows (i, j) naming two of n_vectors vectors.
std::vector<std::pair<int, int>> checked_pairs(const py::handle& pairs_o, size_t n_vectors);

// The gradient output of an objective: a new array, or `out` (validated,
// written in place, so that the optimiser reuses one buffer).
struct SSCRF_HIDDEN GradientOutput {
  py::array array;
  double* data;
};
GradientOutput gradient_output(const py::object& out_o, const Layout& layout, const Doubles& theta);

// A writable (or read-only) C-contiguous float64 array of shape (n_rows, S),
// used in place, or nullptr for None.
double* rows_buffer(const py::object& o, int64_t n_rows, int S, bool writable, const char* name);

}  // namespace sscrf::python
