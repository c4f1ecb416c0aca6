// pybind11 bindings of sscrf._core: convert numpy arrays, validate shapes,
// ids and finiteness, release the GIL, call the kernels. No logic lives here.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cmath>
#include <string>

#include "attribute_index.hpp"
#include "block_cache.hpp"
#include "corpus.hpp"
#include "covariance.hpp"
#include "dense_kernels.hpp"
#include "chain.hpp"
#include "linear_layer.hpp"
#include "chunked.hpp"
#include "parallel.hpp"
#include "vector_passes.hpp"

namespace py = pybind11;
using namespace sscrf;

namespace {

template <class T>
using Array = py::array_t<T, py::array::c_style | py::array::forcecast>;
using Doubles = Array<double>;
using Bools = Array<bool>;

[[noreturn]] void fail(const std::string& msg) { throw py::value_error(msg); }

// A new 1-D array of Out holding v's elements.
template <class Out, class In>
py::array_t<Out> array_of(const std::vector<In>& v) {
  py::array_t<Out> out(static_cast<py::ssize_t>(v.size()));
  std::copy(v.begin(), v.end(), out.mutable_data());
  return out;
}

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

void require_finite(const double* p, py::ssize_t size, const char* name, int n_threads = 1) {
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

// A CSR row pointer over n_rows rows and nnz entries.
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

// Masks must be bool or integer arrays: a cast from strings would read
// "False" as True and silently allow everything.
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

// One chain from dense arrays; the returned arrays own the converted data.
struct ChainArrays {
  Doubles emissions, transitions, start, end;
  Bools mask, edge_mask;
  bool has_mask = false, has_edge_mask = false;
  Chain chain;
};

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

template <class F>
auto run_chain(F&& f) {
  try {
    return f();
  } catch (const NoLabeling&) {
    fail("mask and edge_mask allow no labeling of the sequence");
  }
}

// ---- corpus and layout -----------------------------------------------------

// Per-sequence weights (finite, >= 0), or none (all 1).
void assign_weights(Corpus& c, const py::object& weights_o) {
  if (weights_o.is_none()) {
    c.weights.clear();
    return;
  }
  auto weights = Doubles::ensure(weights_o);
  if (!weights) fail("weights must be a float array");
  require_shape(weights, {c.n_sequences}, "weights");
  require_finite(weights.data(), c.n_sequences, "weights");
  for (int64_t s = 0; s < c.n_sequences; ++s)
    if (weights.data()[s] < 0) fail("weights must be non-negative");
  c.weights.assign(weights.data(), weights.data() + c.n_sequences);
}

std::shared_ptr<Corpus> make_corpus(const py::object& indptr_o, const py::object& indices_o,
                                    const py::object& values_o, const py::object& offsets_o,
                                    int64_t n_attributes, const py::object& labels_o,
                                    const py::object& weights_o, const py::object& mask_o,
                                    const py::object& edge_mask_o, int64_t chunk_tokens) {
  auto indptr = Array<int64_t>::ensure(indptr_o);
  // int32 ids are read in place; any other integer type arrives as int64 and
  // is range-checked before narrowing, so an id beyond int32 is refused
  // instead of wrapping onto a valid one
  const bool ids32 = py::isinstance<py::array>(indices_o) &&
                    py::reinterpret_borrow<py::array>(indices_o).dtype().is(py::dtype::of<int32_t>());
  Array<int32_t> indices32;  // (a default array_t is an empty array, not null)
  Array<int64_t> indices64;
  if (ids32) indices32 = Array<int32_t>::ensure(indices_o);
  else indices64 = Array<int64_t>::ensure(indices_o);
  const py::array indices = ids32 ? py::array(indices32) : py::array(indices64);
  // A constant 1-D float64 array (stride 0, e.g. np.broadcast_to(1.0, n)) is
  // read as its one value instead of being copied out to n doubles.
  Doubles values;
  bool constant_values = false;
  if (py::isinstance<py::array>(values_o)) {
    auto v = py::reinterpret_borrow<py::array>(values_o);
    constant_values = v.ndim() == 1 && v.size() > 0 && v.strides(0) == 0 &&
                      v.dtype().is(py::dtype::of<double>());
  }
  if (!constant_values) values = Doubles::ensure(values_o);
  auto offsets = Array<int64_t>::ensure(offsets_o);
  if (!indptr || indptr.ndim() != 1 || indptr.size() < 1) fail("indptr must be a 1-D int array of length n_tokens + 1");
  if (!indices || indices.ndim() != 1) fail("indices must be a 1-D int array");
  if (!constant_values && (!values || values.ndim() != 1)) fail("values must be a 1-D float array");
  if (!offsets || offsets.ndim() != 1 || offsets.size() < 1) fail("offsets must be a 1-D int array of length n_sequences + 1");
  if (n_attributes < 0 || n_attributes > INT32_MAX) fail("n_attributes out of range");
  if (chunk_tokens < 1) fail("chunk_tokens must be >= 1");
  auto c = std::make_shared<Corpus>();
  c->chunk_tokens = chunk_tokens;
  c->n_tokens = indptr.size() - 1;
  c->n_sequences = offsets.size() - 1;
  c->n_attributes = static_cast<int32_t>(n_attributes);
  const int64_t nnz = indices.size();
  const int64_t n_values = constant_values ? py::reinterpret_borrow<py::array>(values_o).size()
                                           : values.size();
  if (n_values != nnz) fail("values and indices must have the same length");
  const int64_t* ip = indptr.data();
  require_indptr(ip, c->n_tokens, nnz);
  auto check_ids = [&](const auto* ix) {
    for (int64_t k = 0; k < nnz; ++k)
      if (ix[k] < 0 || ix[k] >= n_attributes)
        fail("attribute id " + std::to_string(ix[k]) + " out of range [0, " + std::to_string(n_attributes) + ")");
  };
  if (ids32) check_ids(indices32.data());
  else check_ids(indices64.data());
  double constant = 0.0;
  if (constant_values) {
    constant = *static_cast<const double*>(py::reinterpret_borrow<py::array>(values_o).data());
    require_finite(&constant, 1, "feature values");
  } else {
    require_finite(values.data(), nnz, "feature values");
  }
  const int64_t* op = offsets.data();
  if (op[0] != 0 || op[c->n_sequences] != c->n_tokens) fail("offsets must start at 0 and end at n_tokens");
  for (int64_t s = 0; s < c->n_sequences; ++s)
    if (op[s + 1] < op[s]) fail("offsets must be non-decreasing");
  c->indptr.assign(ip, ip + c->n_tokens + 1);
  if (ids32) c->indices.assign(indices32.data(), indices32.data() + nnz);
  else c->indices.assign(indices64.data(), indices64.data() + nnz);
  if (constant_values) c->constant_value = constant;
  else c->values.assign(values.data(), values.data() + nnz);
  c->offsets.assign(op, op + c->n_sequences + 1);
  if (!labels_o.is_none()) {
    auto labels = Array<int64_t>::ensure(labels_o);
    if (!labels) fail("labels must be an int array");
    require_shape(labels, {c->n_tokens}, "labels");
    for (int64_t t = 0; t < c->n_tokens; ++t)
      if (labels.data()[t] < 0 || labels.data()[t] > INT32_MAX)
        fail(labels.data()[t] < 0 ? "labels must be non-negative label ids" : "label id " + std::to_string(labels.data()[t]) + " out of range (too large)");
    c->labels.assign(labels.data(), labels.data() + c->n_tokens);
  }
  assign_weights(*c, weights_o);
  if (!mask_o.is_none()) {
    auto mask = checked_mask(mask_o, "mask");
    if (mask.ndim() != 2 || mask.shape(0) != c->n_tokens)
      fail("mask must be a bool array (n_tokens, S)");
    c->mask_labels = static_cast<int>(mask.shape(1));
    const uint8_t* mp = reinterpret_cast<const uint8_t*>(mask.data());
    c->mask.assign(mp, mp + mask.size());
  }
  if (!edge_mask_o.is_none()) {
    auto em = checked_mask(edge_mask_o, "edge_mask");
    if (em.ndim() != 3 || em.shape(0) != c->n_tokens || em.shape(1) != em.shape(2))
      fail("edge_mask must be a bool array (n_tokens, S, S)");
    if (!c->mask.empty() && em.shape(1) != c->mask_labels)
      fail("edge_mask and mask disagree on the number of labels");
    c->mask_labels = static_cast<int>(em.shape(1));
    const uint8_t* ep = reinterpret_cast<const uint8_t*>(em.data());
    c->edge_mask.assign(ep, ep + em.size());
  }
  return c;
}

// The most k·n·S that nbest accepts (min(k, S^n) labelings of n tokens).
constexpr double kMostNbestStates = 1e8;

std::shared_ptr<Layout> make_layout(const py::object& row_ptr_o, const py::object& label_ids_o,
                                    int n_labels) {
  auto row_ptr = Array<int64_t>::ensure(row_ptr_o);
  auto label_ids = Array<int64_t>::ensure(label_ids_o);
  if (!row_ptr || row_ptr.ndim() != 1 || row_ptr.size() < 1) fail("row_ptr must be a 1-D int array of length n_attributes + 1");
  if (!label_ids || label_ids.ndim() != 1) fail("label_ids must be a 1-D int array");
  if (n_labels < 1) fail("n_labels must be at least 1");
  auto l = std::make_shared<Layout>();
  l->S = n_labels;
  l->n_attributes = static_cast<int32_t>(row_ptr.size() - 1);
  const int64_t* rp = row_ptr.data();
  const int64_t* li = label_ids.data();
  if (rp[0] != 0 || rp[l->n_attributes] != label_ids.size()) fail("row_ptr must start at 0 and end at len(label_ids)");
  // All of row_ptr first: an entry past len(label_ids) before a decrease
  // would otherwise be read as a row's end.
  for (int32_t a = 0; a < l->n_attributes; ++a)
    if (rp[a + 1] < rp[a]) fail("row_ptr must be non-decreasing");
  for (int32_t a = 0; a < l->n_attributes; ++a) {
    for (int64_t k = rp[a]; k < rp[a + 1]; ++k) {
      if (li[k] < 0 || li[k] >= n_labels) fail("label id " + std::to_string(li[k]) + " out of range");
      if (k > rp[a] && li[k] <= li[k - 1]) fail("label_ids must be strictly increasing within each attribute");
    }
  }
  l->row_ptr.assign(rp, rp + l->n_attributes + 1);
  l->label_ids.assign(li, li + label_ids.size());
  l->index_rows();
  return l;
}

Doubles checked_theta(const Corpus& corpus, const Layout& layout, const py::object& theta_o,
                      bool use_mask, int n_threads) {
  checked_threads(n_threads);
  auto theta = Doubles::ensure(theta_o);
  if (!theta) fail("theta must be a 1-D float array");
  require_shape(theta, {layout.n_parameters()}, "theta");
  require_finite(theta.data(), theta.size(), "theta", n_threads);
  if (corpus.n_attributes > layout.n_attributes)
    fail("the corpus has more attributes than the model layout");
  if (use_mask && (!corpus.mask.empty() || !corpus.edge_mask.empty()) &&
      corpus.mask_labels != layout.S)
    fail("mask has " + std::to_string(corpus.mask_labels) + " label columns, the model has " + std::to_string(layout.S));
  return theta;
}

// attribute -> constraint id (or -1), covering every attribute of the corpus.
std::vector<int32_t> checked_constraint_map(const py::object& map_o, const Corpus& corpus,
                                            int n_constraints) {
  auto map = Array<int64_t>::ensure(map_o);
  if (!map || map.ndim() != 1 || map.shape(0) < corpus.n_attributes)
    fail("constraint_of_attribute must be a 1-D int array with an entry per attribute");
  if (n_constraints < 0) fail("n_constraints must be >= 0");
  std::vector<int32_t> out(map.shape(0));
  for (py::ssize_t a = 0; a < map.shape(0); ++a) {
    const int64_t m = map.data()[a];
    if (m < -1 || m >= n_constraints)
      fail("constraint id " + std::to_string(m) + " out of range [-1, " + std::to_string(n_constraints) + ")");
    out[a] = static_cast<int32_t>(m);
  }
  return out;
}

void checked_firings(const ConstraintFirings& firings, const Corpus& corpus) {
  if (firings.n_tokens != corpus.n_tokens || firings.n_sequences != corpus.n_sequences)
    fail("these constraint firings were built for another corpus");
}

// score_weights [n_constraints][S], finite.
Doubles checked_score_weights(const py::object& o, const ConstraintFirings& firings,
                              const Layout& layout) {
  auto weights = Doubles::ensure(o);
  if (!weights || weights.ndim() != 2 || weights.shape(1) != layout.S ||
      weights.shape(0) != firings.n_constraints)
    fail("score_weights must be a float array (n_constraints, S)");
  require_finite(weights.data(), weights.size(), "score_weights");
  return weights;
}

// groups [n_alternatives]: the sequence of each alternative, non-decreasing
// from 0 with every sequence present; labels: the alternatives' labels one
// after another, each as long as its sequence.
std::shared_ptr<AlternativeLabelings> checked_alternatives(const Corpus& corpus,
                                                           const py::object& labels_o,
                                                           const py::object& groups_o) {
  auto groups = Array<int64_t>::ensure(groups_o);
  if (!groups || groups.ndim() != 1) fail("groups must be a 1-D int array");
  auto labels = Array<int64_t>::ensure(labels_o);
  if (!labels || labels.ndim() != 1) fail("labels must be a 1-D int array");
  auto a = std::make_shared<AlternativeLabelings>();
  a->n_tokens = corpus.n_tokens;
  a->n_sequences = corpus.n_sequences;
  a->count.assign(static_cast<size_t>(corpus.n_sequences), 0);
  a->first.assign(static_cast<size_t>(corpus.n_sequences), 0);
  const int64_t* g = groups.data();
  int64_t n_labels = 0;
  for (py::ssize_t k = 0; k < groups.shape(0); ++k) {
    const int64_t prev = k ? g[k - 1] : -1;
    if (k == 0 ? g[k] != 0 : g[k] != prev && g[k] != prev + 1)
      fail("groups must run 0, 1, 2, ... without gaps (non-decreasing, every sequence "
           "present), got " + std::to_string(g[k]) + " after " + std::to_string(prev));
    if (g[k] >= corpus.n_sequences)
      fail("groups names sequence " + std::to_string(g[k]) + " but the corpus has " +
           std::to_string(corpus.n_sequences));
    if (g[k] != prev) a->first[g[k]] = n_labels;
    ++a->count[g[k]];
    n_labels += corpus.offsets[g[k] + 1] - corpus.offsets[g[k]];
  }
  const py::ssize_t n_alternatives = groups.shape(0);
  if (corpus.n_sequences > 0 &&
      (n_alternatives == 0 || g[n_alternatives - 1] != corpus.n_sequences - 1))
    fail("groups must give every one of the corpus's " + std::to_string(corpus.n_sequences) +
         " sequences at least one alternative");
  if (labels.shape(0) != n_labels)
    fail("labels must hold " + std::to_string(n_labels) + " label ids (each alternative as long "
         "as its sequence), got " + std::to_string(labels.shape(0)));
  for (int64_t i = 0; i < n_labels; ++i) {
    const int64_t y = labels.data()[i];
    if (y < 0 || y > INT32_MAX) fail("label id " + std::to_string(y) + " out of range");
    a->largest_label = std::max(a->largest_label, static_cast<int32_t>(y));
  }
  a->labels.assign(labels.data(), labels.data() + n_labels);
  return a;
}

void require_labels(const Corpus& corpus, const Layout& layout) {
  if (corpus.labels.empty() && corpus.n_tokens > 0) fail("this corpus has no labels");
  for (int32_t y : corpus.labels)
    if (y >= layout.S) fail("label id " + std::to_string(y) + " out of range for " + std::to_string(layout.S) + " labels");
}

// A float64 (or, with allow_single, float32), 1-D, C-contiguous array of n
// entries (any n when n < 0), used in place: the optimiser's vectors are
// never copied, and a converted copy of an output would silently drop the
// result.
VectorRef any_vector(const py::handle& o, int64_t n, bool writable, const std::string& name,
                     bool allow_single = true) {
  if (!py::isinstance<py::array>(o)) fail(name + " must be a numpy array");
  auto a = py::reinterpret_borrow<py::array>(o);
  const bool single = allow_single && a.dtype().is(py::dtype::of<float>());
  if (!(single || a.dtype().is(py::dtype::of<double>())) || a.ndim() != 1 ||
      !(a.flags() & py::array::c_style))
    fail(name + " must be a 1-D C-contiguous float64" + (allow_single ? " or float32" : "") +
         " array");
  if (n >= 0 && a.shape(0) != n)
    fail(name + " must have " + std::to_string(n) + " entries, got " + std::to_string(a.shape(0)));
  if (writable && !a.writeable()) fail(name + " must be writable");
  return {a.data(), single};
}

double* parameter_vector(const py::handle& o, int64_t n, bool writable, const std::string& name) {
  return static_cast<double*>(const_cast<void*>(any_vector(o, n, writable, name, false).data));
}

// The vectors of an optimiser pass, all of length n (set from the first when
// n < 0 on entry), read-only.
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

// Rows (i, j) naming two of n_vectors vectors.
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

// The gradient output of an objective: a new array, or `out` (validated,
// written in place, so that the optimiser reuses one buffer).
struct GradientOutput {
  py::array array;
  double* data;
};

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

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "sscrf compiled core (private): lattice kernels and chunked objectives";
  // the largest |value| of a score, feature value or weight the kernels take
  m.attr("MAX_SCORE") = kMaxScore;

  m.def("build_info", [] {
    py::dict d;
#ifdef _OPENMP
    d["openmp"] = true;
#else
    d["openmp"] = false;
#endif
    d["max_threads"] = max_threads();
#if defined(__clang__)
    d["compiler"] = "clang " + std::to_string(__clang_major__) + "." +
                    std::to_string(__clang_minor__) + "." +
                    std::to_string(__clang_patchlevel__);
#elif defined(__GNUC__)
    d["compiler"] = std::string("gcc ") + __VERSION__;
#else
    d["compiler"] = "unknown";
#endif
    d["kernels"] = kernel_target();
    return d;
  });

  m.def("chunk_tokens_for",
        [](int64_t n_labels) {
          if (n_labels < 1) fail("n_labels must be >= 1, got " + std::to_string(n_labels));
          return chunk_tokens_for_labels(n_labels);
        },
        py::arg("n_labels"),
        "Token budget of a chunk in corpora for a model of n_labels labels (Corpus's "
        "chunk_tokens).");
  m.def("release_scratch", [] { return release_cached_blocks(); },
        "Free the large scratch blocks kept between evaluations; returns their bytes.");
  m.def("cached_scratch_bytes", [] { return cached_block_bytes(); },
        "Bytes of scratch blocks kept for the next evaluation.");

  m.def("log_partition",
        [](py::object E, py::object T, py::object start, py::object end, py::object mask,
           py::object edge_mask) {
          auto c = make_chain(E, T, start, end, mask, edge_mask);
          return run_chain([&] {
            Workspace ws;
            py::gil_scoped_release release;
            return log_partition(c.chain, ws);
          });
        },
        py::arg("emissions"), py::arg("transitions"), py::arg("start") = py::none(),
        py::arg("end") = py::none(), py::arg("mask") = py::none(),
        py::arg("edge_mask") = py::none());

  m.def("marginals",
        [](py::object E, py::object T, py::object start, py::object end, py::object mask,
           py::object edge_mask) {
          auto c = make_chain(E, T, start, end, mask, edge_mask);
          const py::ssize_t n = c.chain.n, S = c.chain.S;
          py::array_t<double> node({n, S});
          py::array_t<double> edge({n > 0 ? n - 1 : 0, S, S});
          double* node_p = node.mutable_data();
          double* edge_p = edge.mutable_data();
          run_chain([&] {
            Workspace ws;
            py::gil_scoped_release release;
            return forward_backward(c.chain, ws, node_p, edge_p, nullptr);
          });
          return py::make_tuple(node, edge);
        },
        py::arg("emissions"), py::arg("transitions"), py::arg("start") = py::none(),
        py::arg("end") = py::none(), py::arg("mask") = py::none(),
        py::arg("edge_mask") = py::none());

  m.def("viterbi",
        [](py::object E, py::object T, py::object start, py::object end, py::object mask,
           py::object edge_mask) {
          auto c = make_chain(E, T, start, end, mask, edge_mask);
          std::vector<int32_t> path(c.chain.n);
          const double score = run_chain([&] {
            Workspace ws;
            py::gil_scoped_release release;
            return viterbi(c.chain, ws, path.data());
          });
          return py::make_tuple(array_of<int64_t>(path), score);
        },
        py::arg("emissions"), py::arg("transitions"), py::arg("start") = py::none(),
        py::arg("end") = py::none(), py::arg("mask") = py::none(),
        py::arg("edge_mask") = py::none());

  m.def("nbest",
        [](py::object E, py::object T, int64_t k, py::object start, py::object end,
           py::object mask, py::object edge_mask) {
          if (k < 1) fail("k must be a positive integer, got " + std::to_string(k));
          auto c = make_chain(E, T, start, end, mask, edge_mask);
          const int64_t n = c.chain.n;
          // room for min(k, S^n) labelings, never more than there can be
          const int64_t k_max = std::min<int64_t>(k, INT32_MAX);
          int64_t rows = 1;
          for (int64_t t = 0; t < n && rows < k_max; ++t) rows *= c.chain.S;
          rows = std::min(rows, k_max);
          // k labelings of n tokens are k·n label ids plus O(n·S·k) lattice
          // state, about 13 bytes per unit of k·n·S (1.15 GB at k = 1e5, 40
          // tokens, 22 labels): refuse more than a laptop can give instead of
          // failing in the allocation or being killed for it
          if (static_cast<double>(rows) * std::max<int64_t>(n, 1) * c.chain.S > kMostNbestStates)
            fail("k = " + std::to_string(k) + " is too large for a sentence of " + std::to_string(n) +
                 " tokens and " + std::to_string(c.chain.S) +
                 " labels (k·n·S must stay below 1e8, about 1.3 GB of lattice state)");
          std::vector<int32_t> paths(static_cast<size_t>(rows * n));
          std::vector<double> scores(static_cast<size_t>(rows));
          const int found = run_chain([&] {
            Workspace ws;
            py::gil_scoped_release release;
            return nbest(c.chain, static_cast<int>(rows), ws, paths.data(), scores.data());
          });
          py::array_t<int64_t> out_paths({static_cast<py::ssize_t>(found), static_cast<py::ssize_t>(n)});
          py::array_t<double> out_scores(static_cast<py::ssize_t>(found));
          for (int64_t i = 0; i < found * n; ++i) out_paths.mutable_data()[i] = paths[i];
          for (int j = 0; j < found; ++j) out_scores.mutable_data()[j] = scores[j];
          return py::make_tuple(out_paths, out_scores);
        },
        py::arg("emissions"), py::arg("transitions"), py::arg("k"), py::arg("start") = py::none(),
        py::arg("end") = py::none(), py::arg("mask") = py::none(),
        py::arg("edge_mask") = py::none());

  py::class_<Corpus, std::shared_ptr<Corpus>>(m, "Corpus",
                                              "Validated CSR attributes of a corpus, split into chunks.")
      .def(py::init(&make_corpus), py::arg("indptr"), py::arg("indices"), py::arg("values"),
           py::arg("offsets"), py::arg("n_attributes"), py::arg("labels") = py::none(),
           py::arg("weights") = py::none(), py::arg("mask") = py::none(),
           py::arg("edge_mask") = py::none(), py::arg("chunk_tokens") = kChunkTokens)
      .def_readonly("n_tokens", &Corpus::n_tokens)
      .def_readonly("n_sequences", &Corpus::n_sequences)
      .def_readonly("n_attributes", &Corpus::n_attributes)
      .def_property_readonly("n_chunks", [](const Corpus& c) { return c.chunks().size(); })
      .def_property_readonly(
          "n_back_projection_blocks",
          [](const Corpus& c) {
            size_t n = 0;
            for (const Chunk& ch : c.chunks()) n += ch.slot_blocks.size() - 1;
            return n;
          },
          "Work items of the gradient's back-projection Xᵀ·∂E, over all chunks.")
      .def_property_readonly("has_labels", [](const Corpus& c) { return !c.labels.empty(); });

  py::class_<AttributeIndex, std::shared_ptr<AttributeIndex>>(
      m, "AttributeIndex", "Attribute string -> id: the vocabulary of feature-dict extraction.")
      .def(py::init([](const py::iterable& attributes) {
             auto index = std::make_shared<AttributeIndex>();
             std::string key;
             int64_t k = 0;
             for (const py::handle& a : attributes) {
               if (!PyUnicode_Check(a.ptr()))
                 fail("attribute " + std::to_string(k) + " is not a str");
               key.clear();
               append_str_key(key, a.ptr());
               bool added;
               index->insert(key, AttributeIndex::hash(key), added);
               if (!added) fail("attribute " + std::to_string(k) + " repeats an earlier one");
               ++k;
             }
             return index;
           }),
           py::arg("attributes") = py::list())
      .def("__len__", [](const AttributeIndex& index) { return index.size(); })
      .def_property_readonly("nbytes", &AttributeIndex::bytes)
      .def("dict_tokens_to_csr", &dict_tokens_to_csr, py::arg("tokens"), py::arg("grow"),
           py::arg("slow"), py::arg("new_strings"),
           "(indptr, indices, values or None) of feature-dict tokens; see attribute_index.hpp.")
      .def("renumber",
           [](AttributeIndex& index, py::object new_id_o) {
             auto new_id = Array<int64_t>::ensure(new_id_o);
             if (!new_id || new_id.ndim() != 1 || new_id.size() != index.size())
               fail("new_id must be a 1-D int array with one entry per attribute (" +
                    std::to_string(index.size()) + ")");
             std::vector<bool> taken(static_cast<size_t>(index.size()), false);
             for (int64_t a = 0; a < index.size(); ++a) {
               const int64_t id = new_id.data()[a];
               if (id < 0 || id >= index.size() || taken[id])
                 fail("new_id must be a permutation of 0.." + std::to_string(index.size() - 1));
               taken[id] = true;
             }
             index.renumber(new_id.data());
           },
           py::arg("new_id"), "Gives attribute i the id new_id[i] (a permutation).")
      .def("intern", &intern_strings, py::arg("strings"), py::arg("grow"), py::arg("new_strings"),
           "int64 ids of a list of str (-1: absent); with grow, absent ones are added.");

  m.def("renumber_csr",
        [](py::object indptr_o, py::object indices_o, py::object values_o, py::object new_id_o) {
          // int32 only: a cast from a wider type could wrap an id onto a valid one
          if (!py::isinstance<py::array>(indices_o) ||
              !py::reinterpret_borrow<py::array>(indices_o).dtype().is(py::dtype::of<int32_t>()))
            fail("indices must be an int32 array");
          auto indptr = Array<int64_t>::ensure(indptr_o);
          auto indices = Array<int32_t>::ensure(indices_o);
          auto new_id = Array<int64_t>::ensure(new_id_o);
          if (!indptr || indptr.ndim() != 1 || indptr.size() < 1)
            fail("indptr must be a 1-D int array of length n_tokens + 1");
          if (!indices || indices.ndim() != 1) fail("indices must be a 1-D int array");
          if (!new_id || new_id.ndim() != 1) fail("new_id must be a 1-D int array");
          const int64_t n_tokens = indptr.size() - 1, nnz = indices.size(), n_old = new_id.size();
          Doubles values;
          if (!values_o.is_none()) {
            values = Doubles::ensure(values_o);
            if (!values || values.ndim() != 1) fail("values must be a 1-D float array or None");
            require_shape(values, {nnz}, "values");
          }
          const int64_t* ip = indptr.data();
          require_indptr(ip, n_tokens, nnz);
          for (int64_t k = 0; k < nnz; ++k)
            if (indices.data()[k] < 0 || indices.data()[k] >= n_old)
              fail("attribute id " + std::to_string(indices.data()[k]) + " out of range [0, " +
                   std::to_string(n_old) + ")");
          std::vector<bool> taken(static_cast<size_t>(n_old), false);
          for (int64_t a = 0; a < n_old; ++a) {
            const int64_t id = new_id.data()[a];
            if (id < -1 || id >= n_old)
              fail("new_id[" + std::to_string(a) + "] = " + std::to_string(id) +
                   " out of range [-1, " + std::to_string(n_old) + ")");
            if (id >= 0 && taken[id]) fail("new_id gives id " + std::to_string(id) + " twice");
            if (id >= 0) taken[id] = true;
          }
          Array<int64_t> out_indptr(n_tokens + 1);
          Array<int32_t> out_indices(nnz);
          Doubles out_values(values_o.is_none() ? 0 : nnz);
          int64_t kept;
          {
            py::gil_scoped_release release;
            kept = renumber_csr(ip, n_tokens, indices.data(),
                                values_o.is_none() ? nullptr : values.data(), new_id.data(),
                                out_indptr.mutable_data(), out_indices.mutable_data(),
                                values_o.is_none() ? nullptr : out_values.mutable_data());
          }
          out_indices.resize({kept});
          py::object vals = py::none();
          if (!values_o.is_none()) {
            out_values.resize({kept});
            vals = out_values;
          }
          return py::make_tuple(out_indptr, out_indices, vals);
        },
        py::arg("indptr"), py::arg("indices"), py::arg("values"), py::arg("new_id"),
        "(indptr, indices int32, values or None) with ids mapped through new_id (-1: dropped) "
        "and each token's entries sorted by new id; see attribute_index.hpp.");

  py::class_<Layout, std::shared_ptr<Layout>>(m, "Layout",
                                              "Which labels each attribute scores (row-sparse W).")
      .def(py::init(&make_layout), py::arg("row_ptr"), py::arg("label_ids"), py::arg("n_labels"))
      .def_readonly("n_attributes", &Layout::n_attributes)
      .def_readonly("n_labels", &Layout::S)
      .def_property_readonly("n_weights", &Layout::n_weights)
      .def_property_readonly("n_parameters", &Layout::n_parameters);

  m.def("likelihood",
        [](const Corpus& corpus, const Layout& layout, py::object theta_o, int n_threads,
           py::object out_o) {
          auto theta = checked_theta(corpus, layout, theta_o, false, n_threads);
          require_labels(corpus, layout);
          checked_threads(n_threads);
          auto grad = gradient_output(out_o, layout, theta);
          double* g = grad.data;
          double loss;
          {
            py::gil_scoped_release release;
            loss = likelihood_objective(corpus, layout, theta.data(), g, n_threads);
          }
          return py::make_tuple(loss, grad.array);
        },
        py::arg("corpus"), py::arg("layout"), py::arg("theta"), py::arg("n_threads"),
        py::arg("out") = py::none());

  m.def("partial_likelihood",
        [](const Corpus& corpus, const Layout& layout, py::object theta_o, int n_threads,
           py::object out_o) {
          auto theta = checked_theta(corpus, layout, theta_o, true, n_threads);
          auto grad = gradient_output(out_o, layout, theta);
          double* g = grad.data;
          double loss;
          try {
            py::gil_scoped_release release;
            loss = partial_likelihood_objective(corpus, layout, theta.data(), g, n_threads);
          } catch (const NoLabeling&) {
            fail("the allowed label sets leave no labeling for some sentence");
          }
          return py::make_tuple(loss, grad.array);
        },
        py::arg("corpus"), py::arg("layout"), py::arg("theta"), py::arg("n_threads"),
        py::arg("out") = py::none());

  py::class_<AlternativeLabelings, std::shared_ptr<AlternativeLabelings>>(
      m, "AlternativeLabelings",
      "Explicit alternative labelings of each sequence of one corpus (validated).")
      .def(py::init(&checked_alternatives), py::arg("corpus"), py::arg("labels"),
           py::arg("groups"))
      .def_property_readonly("counts",
                             [](const AlternativeLabelings& a) { return array_of<int64_t>(a.count); });

  m.def("alternatives_likelihood",
        [](const Corpus& corpus, const Layout& layout, py::object theta_o, int n_threads,
           const AlternativeLabelings& alternatives, py::object out_o) {
          auto theta = checked_theta(corpus, layout, theta_o, false, n_threads);
          if (alternatives.n_tokens != corpus.n_tokens ||
              alternatives.n_sequences != corpus.n_sequences)
            fail("these alternatives were built for another corpus");
          if (alternatives.largest_label >= layout.S)
            fail("label id " + std::to_string(alternatives.largest_label) + " out of range for " +
                 std::to_string(layout.S) + " labels");
          auto grad = gradient_output(out_o, layout, theta);
          double* g = grad.data;
          double loss;
          {
            py::gil_scoped_release release;
            loss = alternatives_objective(corpus, layout, theta.data(), g, n_threads, alternatives);
          }
          return py::make_tuple(loss, grad.array);
        },
        py::arg("corpus"), py::arg("layout"), py::arg("theta"), py::arg("n_threads"),
        py::arg("alternatives"), py::arg("out") = py::none());

  m.def("viterbi_corpus",
        [](const Corpus& corpus, const Layout& layout, py::object theta_o, int n_threads) {
          auto theta = checked_theta(corpus, layout, theta_o, true, n_threads);
          py::array_t<int32_t> labels(corpus.n_tokens);
          py::array_t<double> scores(corpus.n_sequences);
          int32_t* lp = labels.mutable_data();
          double* sp = scores.mutable_data();
          std::fill(sp, sp + corpus.n_sequences, 0.0);
          try {
            py::gil_scoped_release release;
            decode_viterbi(corpus, layout, theta.data(), n_threads, lp, sp);
          } catch (const NoLabeling&) {
            fail("the allowed label sets leave no labeling for some sentence");
          }
          return py::make_tuple(labels, scores);
        },
        py::arg("corpus"), py::arg("layout"), py::arg("theta"), py::arg("n_threads"));

  m.def("marginals_corpus",
        [](const Corpus& corpus, const Layout& layout, py::object theta_o, int n_threads) {
          auto theta = checked_theta(corpus, layout, theta_o, true, n_threads);
          py::array_t<double> node({static_cast<py::ssize_t>(corpus.n_tokens),
                                    static_cast<py::ssize_t>(layout.S)});
          py::array_t<double> log_z(corpus.n_sequences);
          double* np = node.mutable_data();
          double* zp = log_z.mutable_data();
          std::fill(zp, zp + corpus.n_sequences, 0.0);
          try {
            py::gil_scoped_release release;
            decode_marginals(corpus, layout, theta.data(), n_threads, np, zp);
          } catch (const NoLabeling&) {
            fail("the allowed label sets leave no labeling for some sentence");
          }
          return py::make_tuple(node, log_z);
        },
        py::arg("corpus"), py::arg("layout"), py::arg("theta"), py::arg("n_threads"));

  m.def("log_probability_corpus",
        [](const Corpus& corpus, const Layout& layout, py::object theta_o, int n_threads) {
          auto theta = checked_theta(corpus, layout, theta_o, false, n_threads);
          require_labels(corpus, layout);
          checked_threads(n_threads);
          py::array_t<double> out(corpus.n_sequences);
          double* op = out.mutable_data();
          {
            py::gil_scoped_release release;
            sequence_log_probabilities(corpus, layout, theta.data(), n_threads, op);
          }
          return out;
        },
        py::arg("corpus"), py::arg("layout"), py::arg("theta"), py::arg("n_threads"));

  // ---- entropy and expectation kernels (one sequence, no masks) ----------

  m.def("entropy_lattices",
        [](py::object E, py::object T, py::object start, py::object end) {
          auto c = make_chain(E, T, start, end, py::none(), py::none());
          const py::ssize_t n = c.chain.n, S = c.chain.S;
          py::array_t<double> node(n), transition(n), h_alpha({n, S}), h_beta({n, S});
          double* np = node.mutable_data();
          double* tp = transition.mutable_data();
          double* ap = h_alpha.mutable_data();
          double* bp = h_beta.mutable_data();
          double h;
          {
            Workspace ws;
            py::gil_scoped_release release;
            h = entropy_lattices(c.chain, ws, np, tp, ap, bp);
          }
          return py::make_tuple(h, node, transition, h_alpha, h_beta);
        },
        py::arg("emissions"), py::arg("transitions"), py::arg("start") = py::none(),
        py::arg("end") = py::none());

  m.def("entropy_gradient",
        [](py::object E, py::object T, py::object start, py::object end, const std::string& method) {
          if (method != "fast" && method != "jiao")
            fail("method must be 'fast' or 'jiao', got '" + method + "'");
          auto c = make_chain(E, T, start, end, py::none(), py::none());
          const py::ssize_t n = c.chain.n, S = c.chain.S;
          py::array_t<double> dE({n, S});
          std::vector<double> dT(static_cast<size_t>(S) * S, 0.0);
          double* dEp = dE.mutable_data();
          double h = 0.0;
          {
            Workspace ws;
            py::gil_scoped_release release;
            if (method == "jiao") {
              h = entropy_gradient_jiao(c.chain, ws, dEp, dT.data());
            } else if (n > 0) {
              AdditiveScore score;
              score.log_potentials = true;
              double log_z;
              // ∂H/∂θ = -Cov[F, s]
              const double expected =
                  expectation_gradient(c.chain, ws, score, dEp, dT.data(), &log_z, -1.0);
              h = log_z - expected;
            }
          }
          py::array_t<double> dTa({S, S});
          std::copy(dT.begin(), dT.end(), dTa.mutable_data());
          return py::make_tuple(h, dE, dTa);
        },
        py::arg("emissions"), py::arg("transitions"), py::arg("start") = py::none(),
        py::arg("end") = py::none(), py::arg("method") = "fast");

  m.def("expectation_gradient",
        [](py::object E, py::object T, py::object node_scores, py::object edge_scores,
           py::object start, py::object end) {
          auto c = make_chain(E, T, start, end, py::none(), py::none());
          const py::ssize_t n = c.chain.n, S = c.chain.S;
          auto node = Doubles::ensure(node_scores);
          if (!node) fail("node_scores must be a float array (n, S)");
          require_shape(node, {n, S}, "node_scores");
          require_finite(node.data(), node.size(), "node_scores");
          AdditiveScore r;
          r.node = node.data();
          Doubles edge;  // None: a node-only score (GE's)
          if (!edge_scores.is_none()) {
            edge = Doubles::ensure(edge_scores);
            if (!edge) fail("edge_scores must be a float array (n-1, S, S) or None");
            require_shape(edge, {n > 0 ? n - 1 : 0, S, S}, "edge_scores");
            require_finite(edge.data(), edge.size(), "edge_scores");
            r.edge = edge.data();
            r.edge_stride = S * S;
          }
          py::array_t<double> dE({n, S});
          std::vector<double> dT(static_cast<size_t>(S) * S, 0.0);
          double* dEp = dE.mutable_data();
          double expected;
          {
            Workspace ws;
            py::gil_scoped_release release;
            expected = expectation_gradient(c.chain, ws, r, dEp, dT.data(), nullptr);
          }
          py::array_t<double> dTa({S, S});
          std::copy(dT.begin(), dT.end(), dTa.mutable_data());
          return py::make_tuple(expected, dE, dTa);
        },
        py::arg("emissions"), py::arg("transitions"), py::arg("node_scores"),
        py::arg("edge_scores"), py::arg("start") = py::none(), py::arg("end") = py::none());

  m.def("jiao_pair_marginals",
        [](py::object E, py::object T, py::object start, py::object end, int64_t u, int64_t v) {
          auto c = make_chain(E, T, start, end, py::none(), py::none());
          const py::ssize_t S = c.chain.S;
          if (!(1 <= u && u < v && v < c.chain.n)) fail("need 1 <= u < v < n");
          py::array_t<double> out({S, S, S, S});
          double* op = out.mutable_data();
          {
            Workspace ws;
            py::gil_scoped_release release;
            jiao_pair_marginals(c.chain, ws, u, v, op);
          }
          return out;
        },
        py::arg("emissions"), py::arg("transitions"), py::arg("start"), py::arg("end"),
        py::arg("u"), py::arg("v"));

  m.def("entropy_objective",
        [](const Corpus& corpus, const Layout& layout, py::object theta_o, int n_threads,
           const std::string& method, py::object out_o) {
          if (method != "fast" && method != "jiao")
            fail("method must be 'fast' or 'jiao', got '" + method + "'");
          auto theta = checked_theta(corpus, layout, theta_o, false, n_threads);
          auto grad = gradient_output(out_o, layout, theta);
          double* g = grad.data;
          double loss;
          {
            py::gil_scoped_release release;
            loss = entropy_objective(corpus, layout, theta.data(), g, n_threads, method == "jiao");
          }
          return py::make_tuple(loss, grad.array);
        },
        py::arg("corpus"), py::arg("layout"), py::arg("theta"), py::arg("n_threads"),
        py::arg("method") = "fast", py::arg("out") = py::none());

  m.def("entropy_corpus",
        [](const Corpus& corpus, const Layout& layout, py::object theta_o, int n_threads) {
          auto theta = checked_theta(corpus, layout, theta_o, false, n_threads);
          py::array_t<double> seq(corpus.n_sequences), tok(corpus.n_tokens), tr(corpus.n_tokens);
          double* sp = seq.mutable_data();
          double* tp = tok.mutable_data();
          double* rp = tr.mutable_data();
          {
            py::gil_scoped_release release;
            decode_entropy(corpus, layout, theta.data(), n_threads, sp, tp, rp);
          }
          return py::make_tuple(seq, tok, tr);
        },
        py::arg("corpus"), py::arg("layout"), py::arg("theta"), py::arg("n_threads"));

  // ---- generalized expectation ------------------------------------------------

  py::class_<ConstraintFirings, std::shared_ptr<ConstraintFirings>>(
      m, "ConstraintFirings", "Where each GE constraint fires in one corpus (validated).")
      .def(py::init([](const Corpus& corpus, py::object constraint_of_attribute_o,
                       int n_constraints) {
             auto cons = checked_constraint_map(constraint_of_attribute_o, corpus, n_constraints);
             return std::make_shared<ConstraintFirings>(corpus, cons.data(), n_constraints);
           }),
           py::arg("corpus"), py::arg("constraint_of_attribute"), py::arg("n_constraints"))
      .def_readonly("n_constraints", &ConstraintFirings::n_constraints)
      .def_property_readonly("counts",
                             [](const ConstraintFirings& f) { return array_of<double>(f.counts); });

  m.def("ge_expectations",
        [](const Corpus& corpus, const Layout& layout, py::object theta_o, int n_threads,
           const ConstraintFirings& firings) {
          auto theta = checked_theta(corpus, layout, theta_o, false, n_threads);
          checked_firings(firings, corpus);
          py::array_t<double> sums({static_cast<py::ssize_t>(firings.n_constraints),
                                    static_cast<py::ssize_t>(layout.S)});
          double* sp = sums.mutable_data();
          {
            py::gil_scoped_release release;
            ge_expectations(corpus, layout, theta.data(), n_threads, firings, sp);
          }
          return sums;
        },
        py::arg("corpus"), py::arg("layout"), py::arg("theta"), py::arg("n_threads"),
        py::arg("firings"));

  m.def("ge_gradient",
        [](const Corpus& corpus, const Layout& layout, py::object theta_o, int n_threads,
           const ConstraintFirings& firings, py::object score_weights_o, py::object out_o) {
          auto theta = checked_theta(corpus, layout, theta_o, false, n_threads);
          checked_firings(firings, corpus);
          auto weights = checked_score_weights(score_weights_o, firings, layout);
          auto grad = gradient_output(out_o, layout, theta);
          double* g = grad.data;
          {
            py::gil_scoped_release release;
            ge_gradient(corpus, layout, theta.data(), g, n_threads, firings, weights.data());
          }
          return grad.array;
        },
        py::arg("corpus"), py::arg("layout"), py::arg("theta"), py::arg("n_threads"),
        py::arg("firings"), py::arg("score_weights"), py::arg("out") = py::none());

  // Both passes in one call, so that the emissions kept between them are
  // certainly those of this theta.
  m.def("ge_objective",
        [](const Corpus& corpus, const Layout& layout, py::object theta_o, int n_threads,
           const ConstraintFirings& firings, py::function score_weights_of, py::object out_o,
           py::object emissions_o) {
          auto theta = checked_theta(corpus, layout, theta_o, false, n_threads);
          checked_firings(firings, corpus);
          double* emissions = nullptr;
          if (!emissions_o.is_none()) {
            auto e = py::reinterpret_borrow<py::array>(emissions_o);
            if (!py::isinstance<py::array>(emissions_o) ||
                !e.dtype().is(py::dtype::of<double>()) || e.ndim() != 2 ||
                e.shape(0) != corpus.n_tokens || e.shape(1) != layout.S ||
                !(e.flags() & py::array::c_style) || !e.writeable())
              fail("emissions must be a writable C-contiguous float64 array (n_tokens, S)");
            emissions = static_cast<double*>(e.mutable_data());
          }
          auto grad = gradient_output(out_o, layout, theta);
          py::array_t<double> sums({static_cast<py::ssize_t>(firings.n_constraints),
                                    static_cast<py::ssize_t>(layout.S)});
          double* sp = sums.mutable_data();
          {
            py::gil_scoped_release release;
            ge_expectations(corpus, layout, theta.data(), n_threads, firings, sp, emissions);
          }
          py::object weights_o = score_weights_of(sums);
          auto weights = checked_score_weights(weights_o, firings, layout);
          double* g = grad.data;
          {
            py::gil_scoped_release release;
            ge_gradient(corpus, layout, theta.data(), g, n_threads, firings, weights.data(),
                        emissions);
          }
          return grad.array;
        },
        py::arg("corpus"), py::arg("layout"), py::arg("theta"), py::arg("n_threads"),
        py::arg("firings"), py::arg("score_weights_of"), py::arg("out") = py::none(),
        py::arg("emissions") = py::none());

  // ---- optimiser vector passes (deterministic for any thread count) ---------------

  m.def("dot_products",
        [](py::sequence vectors_o, py::object pairs_o, int n_threads) {
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
        },
        py::arg("vectors"), py::arg("pairs"), py::arg("n_threads"),
        "Dot products vectors[i]·vectors[j] for each row (i, j) of pairs, in one pass.");

  m.def("linear_combination",
        [](py::object out_o, py::object coefficients_o, py::sequence vectors_o,
           py::object reference_o, bool confine, int n_threads) {
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
            vectors.push_back(any_vector(vectors_o[j], n, false,
                                         "vectors[" + std::to_string(j) + "]"));
          py::gil_scoped_release release;
          return linear_combination(out, coefficients, vectors, reference, confine, n, n_threads);
        },
        py::arg("out"), py::arg("coefficients"), py::arg("vectors"), py::arg("reference"),
        py::arg("confine"), py::arg("n_threads"),
        "out = Σ coefficients[j]·vectors[j] (entries with out·reference >= 0 set to 0 when "
        "confine); returns reference·out. out may be one of the inputs.");

  m.def("step_along",
        [](py::object out_o, py::object x_o, double alpha, py::object d_o, int n_threads) {
          checked_threads(n_threads);
          double* out = parameter_vector(out_o, -1, true, "out");
          const int64_t n = py::reinterpret_borrow<py::array>(out_o).shape(0);
          const double* x = parameter_vector(x_o, n, false, "x");
          const double* d = parameter_vector(d_o, n, false, "d");
          py::gil_scoped_release release;
          step_along(out, x, alpha, d, n, n_threads);
        },
        py::arg("out"), py::arg("x"), py::arg("alpha"), py::arg("d"), py::arg("n_threads"),
        "out = x + alpha·d.");

  m.def("secant_pair",
        [](py::object x_o, py::object trial_o, py::object gradient_o, py::object previous_o,
           py::object step_o, py::object y_o, int n_threads, py::object vectors_o,
           py::object pairs_o) -> py::object {
          checked_threads(n_threads);
          const double* x = parameter_vector(x_o, -1, false, "x");
          const int64_t n = py::reinterpret_borrow<py::array>(x_o).shape(0);
          const double* trial = parameter_vector(trial_o, n, false, "trial");
          const double* gradient = parameter_vector(gradient_o, n, false, "gradient");
          const double* previous = parameter_vector(previous_o, n, false, "previous_gradient");
          const VectorRef step = any_vector(step_o, n, true, "step");
          const VectorRef y = any_vector(y_o, n, true, "y");
          if (step.single != y.single) fail("step and y must have the same dtype");
          if (vectors_o.is_none() != pairs_o.is_none())
            fail("vectors and pairs go together");
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
            secant_pair_and_dot_products(x, trial, gradient, previous,
                                         const_cast<void*>(step.data), const_cast<void*>(y.data),
                                         step.single, vectors, pairs, n, o, n_threads);
          }
          return out;
        },
        py::arg("x"), py::arg("trial"), py::arg("gradient"), py::arg("previous_gradient"),
        py::arg("step"), py::arg("y"), py::arg("n_threads"), py::arg("vectors") = py::none(),
        py::arg("pairs") = py::none(),
        "step = trial − x; y = gradient − previous_gradient (step and y: float64 or "
        "float32; nothing else is written). With vectors and pairs, also returns "
        "dot_products(vectors, pairs) of the updated vectors, taken in the same pass.");

  m.def("add_l2_prior",
        [](py::object theta_o, py::object grad_o, double c2, int n_threads) {
          checked_threads(n_threads);
          const double* theta = parameter_vector(theta_o, -1, false, "theta");
          const int64_t n = py::reinterpret_borrow<py::array>(theta_o).shape(0);
          double* grad = parameter_vector(grad_o, n, true, "grad");
          py::gil_scoped_release release;
          return add_l2_prior(theta, grad, c2, n, n_threads);
        },
        py::arg("theta"), py::arg("grad"), py::arg("c2"), py::arg("n_threads"),
        "grad += 2·c2·theta; returns theta·theta.");
}
