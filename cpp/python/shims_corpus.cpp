// Shims of the linear layer's inputs: compiled corpora, the weight layout,
// the attribute vocabulary and CSR renumbering.
#include <cstring>
#include <string>
#include <vector>

#include "layer/attribute_index.hpp"
#include "python/arrays.hpp"
#include "python/shims.hpp"

namespace sscrf::python {

// Per-sequence weights (finite, >= 0), or none (all 1).
namespace {

// A read-only array passed in unconverted (np.memmap of a corpus file opened
// "r"): its memory cannot change under the corpus, so the corpus views it
// instead of copying it. A writable array is copied, as callers may reuse it.
template <class T>
bool viewable(const py::object& original, const Array<T>& ensured) {
  if (!py::isinstance<py::array>(original)) return false;
  auto a = py::reinterpret_borrow<py::array>(original);
  return !a.writeable() && a.data() == static_cast<const void*>(ensured.data());
}

template <class T>
void fill(Column<T>& column, const py::object& original, const Array<T>& ensured, int64_t n,
          py::list& held) {
  if (viewable(original, ensured)) {
    column.view(ensured.data(), static_cast<std::size_t>(n));
    held.append(ensured);
  } else {
    column.assign(ensured.data(), ensured.data() + n);
  }
}

// Keeps the viewed arrays alive as long as the corpus; the last reference
// may go in a thread without the GIL, which the decref needs.
std::shared_ptr<const void> hold(py::list held) {
  if (held.empty()) return nullptr;
  auto* p = new py::object(std::move(held));
  return std::shared_ptr<const void>(p, [](const void* q) {
    py::gil_scoped_acquire gil;
    delete static_cast<const py::object*>(q);
  });
}

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

}  // namespace

std::shared_ptr<Corpus> make_corpus(const py::object& indptr_o, const py::object& indices_o,
                                    const py::object& values_o, const py::object& offsets_o,
                                    int64_t n_attributes, const py::object& labels_o,
                                    const py::object& weights_o, const py::object& mask_o,
                                    const py::object& edge_mask_o, int64_t chunk_tokens,
                                    int64_t kept_index_bytes) {
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
  if (kept_index_bytes < -1) fail("kept_index_bytes must be >= 0, or -1 for the default");
  auto c = std::make_shared<Corpus>();
  c->chunk_tokens = chunk_tokens;
  c->kept_index_bytes = kept_index_bytes;
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
    // memcpy: the one value may sit at any byte of an unpickled buffer
    std::memcpy(&constant, py::reinterpret_borrow<py::array>(values_o).data(), sizeof constant);
    require_finite(&constant, 1, "feature values");
  } else {
    require_finite(values.data(), nnz, "feature values");
  }
  const int64_t* op = offsets.data();
  if (op[0] != 0 || op[c->n_sequences] != c->n_tokens) fail("offsets must start at 0 and end at n_tokens");
  for (int64_t s = 0; s < c->n_sequences; ++s)
    if (op[s + 1] < op[s]) fail("offsets must be non-decreasing");
  py::list held;
  fill(c->indptr, indptr_o, indptr, c->n_tokens + 1, held);
  if (ids32) fill(c->indices, indices_o, indices32, nnz, held);
  else c->indices.assign(indices64.data(), indices64.data() + nnz);  // narrowed, in range
  if (constant_values) c->constant_value = constant;
  else fill(c->values, values_o, values, nnz, held);
  fill(c->offsets, offsets_o, offsets, c->n_sequences + 1, held);
  c->keep_alive = hold(std::move(held));
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

std::shared_ptr<AttributeIndex> make_attribute_index(const py::iterable& attributes) {
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
}

void renumber_attributes(AttributeIndex& index, const py::object& new_id_o) {
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
}

py::tuple renumber_csr_shim(const py::object& indptr_o, const py::object& indices_o,
                            const py::object& values_o, const py::object& new_id_o) {
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
}

}  // namespace sscrf::python
