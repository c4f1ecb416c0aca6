// Shims of compiled feature extraction: str lists to UTF-8 columns, and
// CRF++ templates over such columns to CSR.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "features/template_expansion.hpp"
#include "python/arrays.hpp"
#include "python/shims.hpp"

namespace sscrf::python {

namespace {

// A vector handed to numpy without a copy (the array owns it).
template <class T, class Allocator>
py::array_t<T> take_vector(std::vector<T, Allocator>&& v) {
  using Vector = std::vector<T, Allocator>;
  auto* owned = new Vector(std::move(v));
  py::capsule free(owned, [](void* p) { delete static_cast<Vector*>(p); });
  return py::array_t<T>(static_cast<py::ssize_t>(owned->size()), owned->data(), free);
}

// An int64 1-D array used as is (no cast: a float array is refused, not rounded).
Array<int64_t> int64_array(const py::handle& o, const std::string& name) {
  if (!py::isinstance<py::array>(o) ||
      !py::reinterpret_borrow<py::array>(o).dtype().is(py::dtype::of<int64_t>()))
    fail(name + " must be an int64 numpy array");
  auto a = Array<int64_t>::ensure(o);
  if (!a || a.ndim() != 1) fail(name + " must be a 1-D int64 array");
  return a;
}

// offsets [n + 1] starting at 0, non-decreasing, ending at `total`.
void require_offsets(const int64_t* o, int64_t n, int64_t total, const std::string& name,
                     const std::string& what) {
  if (o[0] != 0) fail(name + "[0] must be 0, not " + std::to_string(o[0]));
  for (int64_t i = 0; i < n; ++i)
    if (o[i + 1] < o[i])
      fail(name + " must be non-decreasing: entry " + std::to_string(i + 1) + " (" +
           std::to_string(o[i + 1]) + ") < entry " + std::to_string(i) + " (" +
           std::to_string(o[i]) + ")");
  if (o[n] != total)
    fail(name + " must end at " + what + " (" + std::to_string(total) + "), not " +
         std::to_string(o[n]));
}

struct SSCRF_HIDDEN CheckedColumn {
  py::object keep;  // the bytes or array that data points into
  Array<int64_t> offsets;
  ColumnBytes bytes;
  int64_t n_values;
};

CheckedColumn checked_column(const py::handle& item, size_t slot) {
  const std::string name = "columns[" + std::to_string(slot) + "]";
  if (!py::isinstance<py::tuple>(item) || py::len(item) != 2)
    fail(name + " must be a (data, offsets) pair");
  auto pair = py::reinterpret_borrow<py::tuple>(item);
  CheckedColumn c;
  int64_t size;
  if (PyBytes_CheckExact(pair[0].ptr())) {
    c.keep = pair[0];
    c.bytes.data = PyBytes_AS_STRING(pair[0].ptr());
    size = PyBytes_GET_SIZE(pair[0].ptr());
  } else if (py::isinstance<py::array>(pair[0]) &&
             py::reinterpret_borrow<py::array>(pair[0]).dtype().is(py::dtype::of<uint8_t>())) {
    auto a = Array<uint8_t>::ensure(pair[0]);
    if (!a || a.ndim() != 1) fail(name + ": data must be a 1-D uint8 array or bytes");
    c.keep = a;
    c.bytes.data = reinterpret_cast<const char*>(a.data());
    size = a.size();
  } else {
    fail(name + ": data must be bytes or a uint8 array (UTF-8 text)");
  }
  c.offsets = int64_array(pair[1], name + " offsets");
  if (c.offsets.size() < 1) fail(name + " offsets must have n_tokens + 1 entries");
  c.n_values = c.offsets.size() - 1;
  const int64_t* o = c.offsets.data();
  require_offsets(o, c.n_values, size, name + " offsets", "the data's length");
  c.bytes.offsets = o;
  // ASCII data holds valid values whatever the offsets; else each value is
  // checked apart (a sequence must not straddle two values).
  if (!is_ascii(c.bytes.data, size))
    for (int64_t i = 0; i < c.n_values; ++i)
      if (!is_utf8_with_surrogates(c.bytes.data + o[i], o[i + 1] - o[i]))
        fail(name + ": value " + std::to_string(i) + " is not UTF-8");
  return c;
}

}  // namespace

py::tuple encode_strings_shim(const py::list& strings) {
  const Py_ssize_t n = PyList_GET_SIZE(strings.ptr());
  std::string data;
  std::vector<int64_t> offsets(static_cast<size_t>(n) + 1, 0);
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* s = PyList_GET_ITEM(strings.ptr(), i);
    if (!PyUnicode_Check(s))
      throw py::type_error("encode_strings: item " + std::to_string(i) + " is " +
                           Py_TYPE(s)->tp_name + ", not str");
    append_str_key(data, s);
    offsets[i + 1] = static_cast<int64_t>(data.size());
  }
  py::array_t<uint8_t> bytes(static_cast<py::ssize_t>(data.size()));
  std::copy(data.begin(), data.end(), reinterpret_cast<char*>(bytes.mutable_data()));
  return py::make_tuple(bytes, take_vector(std::move(offsets)));
}

namespace {

// Whether a str's code points can be read as they are (a str made by the
// pre-3.3 API must first be readied, which allocates).
bool str_ready(PyObject* s) {
#if PY_VERSION_HEX < 0x030C0000
  return PyUnicode_IS_READY(s);
#else
  (void)s;
  return true;
#endif
}

// encode_columns one token at a time: what the parallel reading below falls
// back to for a corpus it does not take as it is.
py::object encode_columns_serial(const py::list& sentences, const std::vector<Py_ssize_t>& columns) {
  const Py_ssize_t needed =
      columns.empty() ? 0 : *std::max_element(columns.begin(), columns.end()) + 1;
  std::vector<std::string> data(columns.size());
  std::vector<std::vector<int64_t>> offsets(columns.size(), std::vector<int64_t>(1, 0));
  std::vector<int64_t> sentence_offsets(1, 0);
  Py_ssize_t shortest = PY_SSIZE_T_MAX;
  int64_t n_tokens = 0;
  for (Py_ssize_t s = 0; s < PyList_GET_SIZE(sentences.ptr()); ++s) {
    PyObject* sentence = PyList_GET_ITEM(sentences.ptr(), s);
    if (!PyList_CheckExact(sentence) && !PyTuple_CheckExact(sentence)) return py::none();
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(sentence);
    PyObject** tokens = PySequence_Fast_ITEMS(sentence);
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* token = tokens[i];
      if (!PyList_CheckExact(token) && !PyTuple_CheckExact(token)) return py::none();
      const Py_ssize_t width = PySequence_Fast_GET_SIZE(token);
      if (width < needed) return py::none();
      shortest = std::min(shortest, width);
      PyObject** items = PySequence_Fast_ITEMS(token);
      for (size_t k = 0; k < columns.size(); ++k) {
        PyObject* v = items[columns[k]];
        if (!PyUnicode_CheckExact(v)) return py::none();
        append_str_key(data[k], v);
        offsets[k].push_back(static_cast<int64_t>(data[k].size()));
      }
    }
    n_tokens += n;
    sentence_offsets.push_back(n_tokens);
  }
  py::list out;
  for (size_t k = 0; k < columns.size(); ++k) {
    py::array_t<uint8_t> bytes(static_cast<py::ssize_t>(data[k].size()));
    std::copy(data[k].begin(), data[k].end(), reinterpret_cast<char*>(bytes.mutable_data()));
    std::string().swap(data[k]);
    out.append(py::make_tuple(bytes, take_vector(std::move(offsets[k]))));
  }
  return py::make_tuple(out, take_vector(std::move(sentence_offsets)),
                        n_tokens ? py::object(py::int_(shortest)) : py::object(py::none()));
}

}  // namespace

py::object encode_columns_shim(const py::list& sentences, const py::list& columns_o,
                               int n_threads, int64_t block_tokens) {
  std::vector<Py_ssize_t> columns;
  for (py::handle c : columns_o) {
    const auto k = c.cast<int64_t>();
    if (k < 0) fail("encode_columns: column " + std::to_string(k) + " is negative");
    columns.push_back(static_cast<Py_ssize_t>(k));
  }
  if (n_threads < 1) fail("encode_columns: n_threads must be >= 1, got " + std::to_string(n_threads));
  if (block_tokens < 1)
    fail("encode_columns: block_tokens must be >= 1, got " + std::to_string(block_tokens));
  if (n_threads == 1) return encode_columns_serial(sentences, columns);
  const Py_ssize_t needed =
      columns.empty() ? 0 : *std::max_element(columns.begin(), columns.end()) + 1;
  const size_t K = columns.size();
  const Py_ssize_t n_sentences = PyList_GET_SIZE(sentences.ptr());
  std::vector<int64_t> sentence_offsets(static_cast<size_t>(n_sentences) + 1, 0);
  for (Py_ssize_t s = 0; s < n_sentences; ++s) {
    PyObject* sentence = PyList_GET_ITEM(sentences.ptr(), s);
    if (!PyList_CheckExact(sentence) && !PyTuple_CheckExact(sentence)) return py::none();
    sentence_offsets[s + 1] = sentence_offsets[s] + PySequence_Fast_GET_SIZE(sentence);
  }
  const int64_t N = sentence_offsets[n_sentences];
  const int nt = effective_threads(n_threads, N / block_tokens + 1);
  if (nt == 1) return encode_columns_serial(sentences, columns);
  // Blocks of whole sentences, about block_tokens tokens each, read by threads
  // while this thread holds the GIL: no Python code runs meanwhile, so the
  // lists and strs cannot change, and the threads only read their fields (no
  // reference counts, no Python allocation). Each block's bytes go to a
  // buffer of its own, then to their place in the column: each str is
  // visited once (reading the objects is most of the time: 5.8 ms for
  // CoNLL-2000's two columns on one thread, 4.1 on two).
  std::vector<Py_ssize_t> block_start(1, 0);
  for (Py_ssize_t s = 0; s < n_sentences; ++s)
    if (sentence_offsets[s + 1] - sentence_offsets[block_start.back()] >= block_tokens ||
        s + 1 == n_sentences)
      block_start.push_back(s + 1);
  const int64_t n_blocks = static_cast<int64_t>(block_start.size()) - 1;
  struct Block {
    std::vector<std::string> bytes;
    Py_ssize_t shortest = PY_SSIZE_T_MAX;
    bool taken = true;
  };
  std::vector<Block> blocks(static_cast<size_t>(n_blocks));
  // every entry past the first is written below
  std::vector<CsrArray<int64_t>> offsets(K, CsrArray<int64_t>(static_cast<size_t>(N) + 1));
  for (auto& o : offsets) o[0] = 0;
  ExceptionCarrier carrier;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
  for (int64_t b = 0; b < n_blocks; ++b) carrier.run([&] {
    Block& block = blocks[b];
    block.bytes.resize(K);
    const int64_t n_tokens = sentence_offsets[block_start[b + 1]] - sentence_offsets[block_start[b]];
    for (auto& bytes : block.bytes) bytes.reserve(8 * static_cast<size_t>(n_tokens));
    for (Py_ssize_t s = block_start[b]; s < block_start[b + 1] && block.taken; ++s) {
      PyObject* sentence = PyList_GET_ITEM(sentences.ptr(), s);
      PyObject** tokens = PySequence_Fast_ITEMS(sentence);
      for (int64_t i = 0, t = sentence_offsets[s]; t < sentence_offsets[s + 1]; ++i, ++t) {
        PyObject* token = tokens[i];
        // anything else: the serial reading decides (None, or a str to ready)
        if ((!PyList_CheckExact(token) && !PyTuple_CheckExact(token)) ||
            PySequence_Fast_GET_SIZE(token) < needed) {
          block.taken = false;
          break;
        }
        block.shortest = std::min(block.shortest, PySequence_Fast_GET_SIZE(token));
        PyObject** items = PySequence_Fast_ITEMS(token);
        for (size_t k = 0; k < K; ++k) {
          PyObject* v = items[columns[k]];
          if (!PyUnicode_CheckExact(v) || !str_ready(v)) {
            block.taken = false;
            break;
          }
          append_str_key(block.bytes[k], v);
          offsets[k][t + 1] = static_cast<int64_t>(block.bytes[k].size());
        }
        if (!block.taken) break;
      }
    }
  });
  carrier.rethrow();
  Py_ssize_t shortest = PY_SSIZE_T_MAX;
  for (const Block& block : blocks) {
    if (!block.taken) return encode_columns_serial(sentences, columns);
    shortest = std::min(shortest, block.shortest);
  }
  py::list out;
  for (size_t k = 0; k < K; ++k) {
    std::vector<int64_t> base(static_cast<size_t>(n_blocks) + 1, 0);
    for (int64_t b = 0; b < n_blocks; ++b)
      base[b + 1] = base[b] + static_cast<int64_t>(blocks[b].bytes[k].size());
    py::array_t<uint8_t> bytes(static_cast<py::ssize_t>(base[n_blocks]));
    char* data = reinterpret_cast<char*>(bytes.mutable_data());
    int64_t* o = offsets[k].data();
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
    for (int64_t b = 0; b < n_blocks; ++b) {
      std::string& piece = blocks[b].bytes[k];
      std::copy(piece.begin(), piece.end(), data + base[b]);
      for (int64_t t = sentence_offsets[block_start[b]]; t < sentence_offsets[block_start[b + 1]]; ++t)
        o[t + 1] += base[b];
      std::string().swap(piece);
    }
    out.append(py::make_tuple(bytes, take_vector(std::move(offsets[k]))));
  }
  return py::make_tuple(out, take_vector(std::move(sentence_offsets)),
                        N ? py::object(py::int_(shortest)) : py::object(py::none()));
}

namespace {

// The str of UTF-8 bytes (surrogates allowed): an ASCII key is copied into
// a new str rather than decoded (CoNLL-2000's 338k attribute strs in 18.5
// ms rather than 21, with the list filled in place).
PyObject* decoded(const char* p, int64_t n) {
  if (!is_ascii(p, n)) return PyUnicode_DecodeUTF8(p, n, "surrogatepass");
  PyObject* s = PyUnicode_New(n, 127);
  if (s) std::memcpy(PyUnicode_1BYTE_DATA(s), p, static_cast<size_t>(n));
  return s;
}

// Appends to `to` the strs of the UTF-8 (surrogates allowed) keys one after
// the other in `keys`, key k ending at ends[k].
void append_decoded(py::list to, const std::string& keys, const std::vector<int64_t>& ends) {
  int64_t begin = 0;
  for (const int64_t end : ends) {
    PyObject* s = decoded(keys.data() + begin, end - begin);
    if (!s) throw py::error_already_set();
    to.append(py::reinterpret_steal<py::object>(s));
    begin = end;
  }
}

// The strs of UTF-8 keys, in a list filled in place (appending regrows
// the list as it goes). The keys lie apart (final order over first-seen
// storage): each is fetched 8 keys ahead (338k keys in random order: 23 ->
// 18 ms).
py::list decoded_list(const std::vector<std::string_view>& keys) {
  py::list out(keys.size());
  for (size_t k = 0; k < keys.size(); ++k) {
    if (k + 8 < keys.size()) __builtin_prefetch(keys[k + 8].data());
    PyObject* s = decoded(keys[k].data(), static_cast<int64_t>(keys[k].size()));
    if (!s) throw py::error_already_set();
    PyList_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(k), s);
  }
  return out;
}

}  // namespace

py::list attribute_strings_shim(const AttributeIndex& index, const py::object& ids_o) {
  auto ids = int64_array(ids_o, "ids");
  if (ids.ndim() != 1) fail("ids must be a 1-D int array");
  const int64_t* id = ids.data();
  for (int64_t k = 0; k < ids.size(); ++k)
    if (id[k] < 0 || id[k] >= index.size())
      fail("ids[" + std::to_string(k) + "] = " + std::to_string(id[k]) + " is not an id of the "
           "index (" + std::to_string(index.size()) + " attributes)");
  return decoded_list(index.keys_of(id, ids.size()));
}

namespace {

// templates_to_csr and fit_templates: (indptr, indices, values or None),
// and with `fit` the order (None where it was not applied) and the
// attributes' strs in that order (None where the core made none).
py::tuple expand_checked(AttributeIndex& index, const py::list& templates_o,
                         const py::list& columns_o, const py::object& sentence_offsets_o,
                         bool grow, int n_threads, const py::object& new_strings,
                         int64_t slice_entries, FrequencyOrder* fit) {
  if (!new_strings.is_none() && !py::isinstance<py::list>(new_strings))
    fail("new_strings must be a list or None");
  checked_threads(n_threads);
  if (slice_entries < 0) fail("slice_entries must be >= 0");
  std::vector<CheckedColumn> columns;
  for (size_t slot = 0; slot < columns_o.size(); ++slot)
    columns.push_back(checked_column(columns_o[slot], slot));
  for (size_t slot = 1; slot < columns.size(); ++slot)
    if (columns[slot].n_values != columns[0].n_values)
      fail("columns[" + std::to_string(slot) + "] has " + std::to_string(columns[slot].n_values) +
           " values but columns[0] has " + std::to_string(columns[0].n_values));
  auto sentence_offsets = int64_array(sentence_offsets_o, "sentence_offsets");
  if (sentence_offsets.size() < 1) fail("sentence_offsets must have n_sentences + 1 entries");
  const int64_t n_sentences = sentence_offsets.size() - 1;
  const int64_t n_tokens = sentence_offsets.data()[n_sentences];
  if (!columns.empty() && n_tokens != columns[0].n_values)
    fail("sentence_offsets end at " + std::to_string(n_tokens) + " tokens but the columns have " +
         std::to_string(columns[0].n_values));
  require_offsets(sentence_offsets.data(), n_sentences, n_tokens, "sentence_offsets",
                  "the token count");

  std::vector<std::vector<TemplatePiece>> templates;
  for (size_t j = 0; j < templates_o.size(); ++j) {
    const std::string where = "templates[" + std::to_string(j) + "]";
    py::handle t = templates_o[j];
    if (!py::isinstance<py::list>(t)) fail(where + " must be a list of pieces");
    auto& pieces = templates.emplace_back();
    for (py::handle p : py::reinterpret_borrow<py::list>(t)) {
      TemplatePiece piece;
      if (PyUnicode_Check(p.ptr())) {
        append_str_key(piece.literal, p.ptr());
      } else if (py::isinstance<py::tuple>(p) && py::len(p) == 2) {
        auto cell = py::reinterpret_borrow<py::tuple>(p);
        const auto row = cell[0].cast<int64_t>(), slot = cell[1].cast<int64_t>();
        // the bound of templates.py's MAX_TEMPLATE_OFFSET
        if (row < -1000 || row > 1000)
          fail(where + ": row offset " + std::to_string(row) + " outside [-1000, 1000]");
        if (slot < 0 || slot >= static_cast<int64_t>(columns.size()))
          fail(where + ": column slot " + std::to_string(slot) + " outside [0, " +
               std::to_string(columns.size()) + ")");
        piece.row = static_cast<int32_t>(row);
        piece.slot = static_cast<int32_t>(slot);
      } else {
        fail(where + ": a piece must be a str or a (row, slot) pair of ints");
      }
      pieces.push_back(std::move(piece));
    }
    // the bound of templates.py's MAX_TEMPLATE_CELLS (the core's key buffer)
    if (std::count_if(pieces.begin(), pieces.end(), [](const TemplatePiece& p) { return p.slot >= 0; }) > 32)
      fail(where + ": more than 32 cells");
  }
  std::vector<ColumnBytes> bytes;
  for (const auto& c : columns) bytes.push_back(c.bytes);

  TemplateCsr out;
  py::object attributes = py::none();  // a fit's strings, final order
  if (fit)
    fit->final_keys = [&attributes](const std::vector<std::string_view>& keys) {
      py::gil_scoped_acquire acquire;
      attributes = decoded_list(keys);
    };
  {
    py::gil_scoped_release release;
    expand_templates(templates, bytes, sentence_offsets.data(), n_sentences, index, grow,
                     !new_strings.is_none(), n_threads, slice_entries, out, fit);
  }
  if (fit) fit->final_keys = nullptr;  // it refers to `attributes`
  if (!new_strings.is_none()) {  // None: the caller reads them later, in the order it needs
    append_decoded(py::reinterpret_borrow<py::list>(new_strings), out.new_keys, out.new_ends);
  }
  py::object values = out.values.empty() && !out.indices.empty()
                          ? py::object(py::none())
                          : py::object(take_vector(std::move(out.values)));
  if (out.indices.empty()) values = py::none();
  py::object indptr = take_vector(std::move(out.indptr));
  py::object indices = take_vector(std::move(out.indices));
  if (!fit) return py::make_tuple(indptr, indices, values);
  py::object order = fit->applied ? py::object(take_vector(std::move(fit->order)))
                                  : py::object(py::none());
  if (!fit->keys_given) attributes = py::none();
  return py::make_tuple(indptr, indices, values, order, attributes);
}

}  // namespace

py::tuple templates_to_csr_shim(AttributeIndex& index, const py::list& templates,
                                const py::list& columns, const py::object& sentence_offsets,
                                bool grow, int n_threads, const py::object& new_strings,
                                int64_t slice_entries) {
  return expand_checked(index, templates, columns, sentence_offsets, grow, n_threads,
                        new_strings, slice_entries, nullptr);
}

py::tuple fit_templates_shim(AttributeIndex& index, const py::list& templates,
                             const py::list& columns, const py::object& sentence_offsets,
                             int n_threads, int64_t min_freq, int64_t slice_entries) {
  if (index.size() != 0)
    fail("fit_templates needs an empty index (it holds " + std::to_string(index.size()) +
         " attributes)");
  if (min_freq < 1) fail("min_freq must be >= 1, got " + std::to_string(min_freq));
  FrequencyOrder fit;
  fit.min_freq = min_freq;
  return expand_checked(index, templates, columns, sentence_offsets, true, n_threads,
                        py::none(), slice_entries, &fit);
}

}  // namespace sscrf::python
