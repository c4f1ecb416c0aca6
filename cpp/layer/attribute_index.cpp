// Attribute vocabulary as a hash table, and feature-dict tokens to CSR in one pass.
#include "layer/attribute_index.hpp"

#include <pybind11/numpy.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>

#include "runtime/errors.hpp"

namespace py = pybind11;

namespace sscrf {

// ---- the hash table ---------------------------------------------------------

uint64_t AttributeIndex::hash(std::string_view key) {
  return static_cast<uint64_t>(std::hash<std::string_view>{}(key));
}

size_t AttributeIndex::probe(std::string_view key, uint64_t h) const {
  const size_t mask = slots_.size() - 1;
  const uint64_t tag = h >> kTagShift;
  for (size_t s = h & mask;; s = (s + 1) & mask) {
    const uint64_t slot = slots_[s];
    if (slot == 0) return s;
    if ((slot >> kTagShift) != tag) continue;
    const char* entry = arena_.data() + ((slot & ((uint64_t(1) << kTagShift) - 1)) - 1);
    uint32_t length;
    std::memcpy(&length, entry + 4, 4);
    if (length == key.size() && std::memcmp(entry + 8, key.data(), length) == 0) return s;
  }
}

int32_t AttributeIndex::find(std::string_view key, uint64_t h) const {
  if (slots_.empty()) return -1;
  const uint64_t slot = slots_[probe(key, h)];
  if (slot == 0) return -1;
  int32_t id;
  std::memcpy(&id, arena_.data() + ((slot & ((uint64_t(1) << kTagShift) - 1)) - 1), 4);
  return id;
}

int32_t AttributeIndex::insert(std::string_view key, uint64_t h, bool& added) {
  added = false;
  if (2 * (static_cast<size_t>(size_) + 1) > slots_.size()) grow();
  const size_t s = probe(key, h);
  if (slots_[s] != 0) {
    int32_t id;
    std::memcpy(&id, arena_.data() + ((slots_[s] & ((uint64_t(1) << kTagShift) - 1)) - 1), 4);
    return id;
  }
  if (size_ == INT32_MAX) throw InputError("more than 2^31 - 1 distinct attributes");
  if (key.size() > UINT32_MAX || arena_.size() + 8 + key.size() >= (uint64_t(1) << kTagShift) - 1)
    throw InputError("attribute strings too long in total");
  const uint64_t offset = arena_.size();
  const int32_t id = size_;
  const uint32_t length = static_cast<uint32_t>(key.size());
  arena_.resize(offset + 8 + length);
  std::memcpy(arena_.data() + offset, &id, 4);
  std::memcpy(arena_.data() + offset + 4, &length, 4);
  std::memcpy(arena_.data() + offset + 8, key.data(), length);
  slots_[s] = (h >> kTagShift) << kTagShift | (offset + 1);
  ++size_;
  added = true;
  return id;
}

void AttributeIndex::renumber(const int64_t* new_id) {
  for (uint64_t offset = 0; offset < arena_.size();) {
    int32_t id;
    uint32_t length;
    std::memcpy(&id, arena_.data() + offset, 4);
    std::memcpy(&length, arena_.data() + offset + 4, 4);
    id = static_cast<int32_t>(new_id[id]);
    std::memcpy(arena_.data() + offset, &id, 4);
    offset += 8 + length;
  }
}

void AttributeIndex::reserve(size_t keys, size_t bytes) {
  arena_.reserve(arena_.size() + bytes + 8 * keys);
  size_t n_slots = std::max<size_t>(16, slots_.size());
  while (2 * (static_cast<size_t>(size_) + keys + 1) > n_slots) n_slots *= 2;
  if (n_slots > slots_.size()) rehash(n_slots);
}

void AttributeIndex::grow() { rehash(std::max<size_t>(16, 2 * slots_.size())); }

void AttributeIndex::rehash(size_t n_slots) {
  std::vector<uint64_t> slots(n_slots, 0);
  const size_t mask = slots.size() - 1;
  // entries lie one after the other in the arena
  for (uint64_t offset = 0; offset < arena_.size();) {
    uint32_t length;
    std::memcpy(&length, arena_.data() + offset + 4, 4);
    const uint64_t h = hash({arena_.data() + offset + 8, length});
    size_t s = h & mask;
    while (slots[s] != 0) s = (s + 1) & mask;
    slots[s] = (h >> kTagShift) << kTagShift | (offset + 1);
    offset += 8 + length;
  }
  slots_.swap(slots);
}

// ---- keys of Python strs ----------------------------------------------------

void append_str_key(std::string& out, PyObject* s) {
#if PY_VERSION_HEX < 0x030C0000
  if (PyUnicode_READY(s) < 0) throw py::error_already_set();
#endif
  const Py_ssize_t n = PyUnicode_GET_LENGTH(s);
  if (PyUnicode_IS_ASCII(s)) {
    out.append(reinterpret_cast<const char*>(PyUnicode_1BYTE_DATA(s)), n);
    return;
  }
  const int kind = PyUnicode_KIND(s);
  const void* data = PyUnicode_DATA(s);
  for (Py_ssize_t i = 0; i < n; ++i) {
    const Py_UCS4 c = PyUnicode_READ(kind, data, i);
    // UTF-8 of the code point; surrogates are encoded like any other
    // three-byte code point, so the encoding stays injective on every str
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else if (c < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (c >> 6)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (c >> 12)));
      out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (c >> 18)));
      out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
  }
}

namespace {

// numpy's pairwise sum of a[0..n) (loops_utils.h: below 8 terms a running
// sum from -0.0, up to 128 eight accumulators, beyond that halves).
double numpy_pairwise_sum(const double* a, int64_t n) {
  if (n < 8) {
    double res = -0.0;
    for (int64_t i = 0; i < n; ++i) res += a[i];
    return res;
  }
  if (n <= 128) {
    double r[8];
    for (int j = 0; j < 8; ++j) r[j] = a[j];
    int64_t i = 8;
    for (; i < n - (n % 8); i += 8)
      for (int j = 0; j < 8; ++j) r[j] += a[i + j];
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i];
    return res;
  }
  int64_t n2 = n / 2;
  n2 -= n2 % 8;
  return numpy_pairwise_sum(a, n2) + numpy_pairwise_sum(a + n2, n - n2);
}

// Growable array in fixed-size blocks: no reallocation, so the final copy
// to numpy needs the result plus one block, not twice the result.
template <class T>
class Blocks {
 public:
  void push(T x) {
    if (blocks_.empty() || blocks_.back().size() == kBlock) {
      blocks_.emplace_back();
      blocks_.back().reserve(kBlock);
    }
    blocks_.back().push_back(x);
    ++size_;
  }
  int64_t size() const { return size_; }
  // Moves the contents into `out` (size() elements), freeing blocks as it goes.
  void drain(T* out) {
    for (auto& b : blocks_) {
      std::copy(b.begin(), b.end(), out);
      out += b.size();
      std::vector<T>().swap(b);
    }
    blocks_.clear();
    size_ = 0;
  }

 private:
  static constexpr size_t kBlock = size_t(1) << 16;
  std::vector<std::vector<T>> blocks_;
  int64_t size_ = 0;
};

// One (attribute, value) pair of a token before interning: the attribute is
// `name` alone, or name, separator, value when `joined` is set (a borrowed
// reference).
struct Pair {
  PyObject* name;
  PyObject* joined;
  double value;
};

// One token on its way through the pipeline of dict_tokens_to_csr.
struct TokenWork {
  bool is_dict = false;
  std::vector<std::pair<PyObject*, PyObject*>> items;  // (key, value) of an exact dict
  std::vector<Pair> pairs;
  std::string keys;             // the keys of the pairs, one after the other
  std::vector<size_t> key_end;  // [pairs] end of each key in `keys`
  std::vector<uint64_t> hashes;  // [pairs]
  py::object slow_names, slow_values;  // what the slow path returned, kept alive
};

// The (key, value) items of token `i` when it is an exact dict, their values
// prefetched; and the next token's dict object prefetched.
void gather(const py::list& tokens, Py_ssize_t i, TokenWork& w) {
  PyObject* token = PyList_GET_ITEM(tokens.ptr(), i);
  w.items.clear();
  w.is_dict = PyDict_CheckExact(token);
  if (i + 1 < PyList_GET_SIZE(tokens.ptr()))
    __builtin_prefetch(PyList_GET_ITEM(tokens.ptr(), i + 1));
  if (!w.is_dict) return;
  Py_ssize_t pos = 0;
  PyObject *key, *value;
  while (PyDict_Next(token, &pos, &key, &value)) {
    __builtin_prefetch(value);
    w.items.emplace_back(key, value);
  }
}

// The pairs of a gathered token of the fast kinds; false if anything needs
// the slow path.
bool fast_pairs(TokenWork& w) {
  w.pairs.clear();
  if (!w.is_dict) return false;
  for (const auto& [key, value] : w.items) {
    if (!PyUnicode_CheckExact(key)) return false;
    if (PyUnicode_CheckExact(value)) {
      w.pairs.push_back({key, value, 1.0});
    } else if (value == Py_True) {
      w.pairs.push_back({key, nullptr, 1.0});
    } else if (value == Py_False) {
      continue;  // absent, as in the Python path
    } else if (PyFloat_CheckExact(value)) {
      const double v = PyFloat_AS_DOUBLE(value);
      if (!std::isfinite(v)) return false;  // the slow path names the problem
      w.pairs.push_back({key, nullptr, v});
    } else if (PyLong_CheckExact(value)) {
      const double v = PyLong_AsDouble(value);  // what float(int) computes
      if (v == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return false;
      }
      w.pairs.push_back({key, nullptr, v});
    } else {
      return false;
    }
  }
  return true;
}

// Python code run in the middle (a signal handler, the slow path) must not
// have resized the list whose items are read without bounds checks.
void check_size(const py::list& tokens, Py_ssize_t n) {
  if (PyList_GET_SIZE(tokens.ptr()) != n)
    throw sscrf::InputError("the token list changed size while it was compiled");
}

// The pairs of token `i` from the Python path (which names any problem).
void slow_pairs(const py::object& slow, Py_ssize_t i, TokenWork& w) {
  py::tuple got = slow(i);
  w.slow_names = got[0];
  w.slow_values = got[1];
  const py::list names = w.slow_names.cast<py::list>();
  const py::list values = w.slow_values.cast<py::list>();
  w.pairs.clear();
  for (size_t k = 0; k < names.size(); ++k) {
    // a str subclass key whose __add__/__radd__ returns another type gives a
    // name that is not a str; the key bytes are read as a str's below
    PyObject* name = PyList_GET_ITEM(names.ptr(), static_cast<Py_ssize_t>(k));
    if (!PyUnicode_Check(name))
      throw sscrf::InputError("token " + std::to_string(i) + ": feature name " +
                              std::to_string(k) + " is a " + Py_TYPE(name)->tp_name +
                              ", not a str (a str subclass key whose + returns another type?)");
    w.pairs.push_back({name, nullptr, values[k].cast<double>()});
  }
}

// The keys of the pairs and their hashes; their slots prefetched.
void make_keys(const AttributeIndex& index, const std::string& separator, TokenWork& w) {
  w.keys.clear();
  w.key_end.clear();
  w.hashes.clear();
  for (const Pair& p : w.pairs) {
    const size_t begin = w.keys.size();
    append_str_key(w.keys, p.name);
    if (p.joined) {
      w.keys += separator;
      append_str_key(w.keys, p.joined);
    }
    w.key_end.push_back(w.keys.size());
    w.hashes.push_back(AttributeIndex::hash({w.keys.data() + begin, w.keys.size() - begin}));
    index.prefetch(w.hashes.back());
  }
}

// Appends the CSR row of a token (ids and, once one differs from 1.0, values).
class RowWriter {
 public:
  RowWriter(AttributeIndex& index, bool grow, py::list new_strings, const std::string& separator)
      : index_(index), grow_(grow), new_strings_(std::move(new_strings)), separator_(separator) {}

  void write(const TokenWork& w) {
    entries_.clear();
    for (size_t k = 0; k < w.pairs.size(); ++k) {
      const Pair& p = w.pairs[k];
      const size_t begin = k ? w.key_end[k - 1] : 0;
      const std::string_view key(w.keys.data() + begin, w.key_end[k] - begin);
      int32_t id;
      if (grow_) {
        bool added;
        id = index_.insert(key, w.hashes[k], added);
        if (added) {
          PyObject* s = p.joined ? PyUnicode_FromFormat("%U%s%U", p.name, separator_.c_str(), p.joined)
                                 : (Py_INCREF(p.name), p.name);
          if (!s) throw py::error_already_set();
          new_strings_.append(py::reinterpret_steal<py::object>(s));
        }
      } else {
        id = index_.find(key, w.hashes[k]);
        if (id < 0) continue;
      }
      entries_.emplace_back(id, p.value);
    }
    // by id, equal ids in token order (stable; insertion sort for the usual
    // tens of entries); repeated ids summed as numpy does
    if (entries_.size() <= 64) {
      for (size_t k = 1; k < entries_.size(); ++k) {
        const auto e = entries_[k];
        size_t j = k;
        for (; j > 0 && entries_[j - 1].first > e.first; --j) entries_[j] = entries_[j - 1];
        entries_[j] = e;
      }
    } else {
      std::stable_sort(entries_.begin(), entries_.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
    }
    for (size_t k = 0; k < entries_.size();) {
      size_t end = k + 1;
      while (end < entries_.size() && entries_[end].first == entries_[k].first) ++end;
      double v = entries_[k].second;
      if (end - k > 1) {
        run_.clear();
        for (size_t j = k + 1; j < end; ++j) run_.push_back(entries_[j].second);
        v += numpy_pairwise_sum(run_.data(), static_cast<int64_t>(run_.size()));
      }
      if (all_ones_ && v != 1.0) {
        all_ones_ = false;
        for (int64_t j = 0; j < ids_.size(); ++j) values_.push(1.0);
      }
      ids_.push(entries_[k].first);
      if (!all_ones_) values_.push(v);
      k = end;
    }
  }

  int64_t size() const { return ids_.size(); }

  // (indices, values or None), the buffers handed over
  std::pair<py::array_t<int32_t>, py::object> finish() {
    py::array_t<int32_t> indices(ids_.size());
    ids_.drain(indices.mutable_data());
    if (all_ones_) return {indices, py::none()};
    py::array_t<double> values(values_.size());
    values_.drain(values.mutable_data());
    return {indices, values};
  }

 private:
  AttributeIndex& index_;
  const bool grow_;
  py::list new_strings_;
  const std::string& separator_;
  Blocks<int32_t> ids_;
  Blocks<double> values_;  // filled only once a summed value differs from 1.0
  bool all_ones_ = true;
  std::vector<std::pair<int32_t, double>> entries_;  // (id, value) of one token
  std::vector<double> run_;
};

}  // namespace

py::tuple dict_tokens_to_csr(AttributeIndex& index, const py::list& tokens, bool grow,
                             const py::object& slow, py::list new_strings,
                             const std::string& separator) {
  if (separator.empty() || separator.find('\0') != std::string::npos)
    throw sscrf::InputError("dict_tokens_to_csr: separator must be a non-empty str without NUL");
  const Py_ssize_t n = PyList_GET_SIZE(tokens.ptr());
  py::array_t<int64_t> indptr(n + 1);
  int64_t* ip = indptr.mutable_data();
  ip[0] = 0;
  RowWriter out(index, grow, new_strings, separator);
  // A software pipeline over tokens, so that the cache misses of several
  // tokens overlap: while token i is classified and its keys are hashed
  // (their table slots prefetched), the values of token i+1 are on their
  // way, the entries that token i-1's slots point to are fetched, and token
  // i-2 is looked up and written. w[i % 4] holds token i.
  constexpr Py_ssize_t kDepth = 4;
  TokenWork w[kDepth];
  Py_ssize_t written = 0;  // tokens [0, written) are in `out`
  auto write_until = [&](Py_ssize_t end) {
    for (; written < end; ++written) {
      TokenWork& t = w[written % kDepth];
      out.write(t);
      ip[written + 1] = out.size();
      t.slow_names = py::object();
      t.slow_values = py::object();
    }
  };
  if (n > 0) gather(tokens, 0, w[0]);
  for (Py_ssize_t i = 0; i < n; ++i) {
    // Ctrl-C (and other signal handlers) are honoured during long corpora
    if ((i & 0xFFFF) == 0xFFFF) {
      // A signal handler is Python code: it may empty the dicts the pending
      // tokens borrow from, so they are written first and token i gathered
      // again after it.
      write_until(i);
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
      check_size(tokens, n);
      gather(tokens, i, w[i % kDepth]);
    }
    TokenWork& cur = w[i % kDepth];
    if (i + 1 < n) gather(tokens, i + 1, w[(i + 1) % kDepth]);
    if (!fast_pairs(cur)) {
      // Python code runs: the tokens before i are written first (their
      // borrowed references must not outlive anything that code could do),
      // and token i+1 is gathered again after it.
      write_until(i);
      slow_pairs(slow, i, cur);
      check_size(tokens, n);
      if (i + 1 < n) gather(tokens, i + 1, w[(i + 1) % kDepth]);
    }
    make_keys(index, separator, cur);
    if (i >= 1 && written <= i - 1)
      for (uint64_t h : w[(i - 1) % kDepth].hashes) index.prefetch_entry(h);
    write_until(i - 1);
  }
  write_until(n);
  auto [indices, values] = out.finish();
  return py::make_tuple(indptr, indices, values);
}

py::array_t<int64_t> intern_strings(AttributeIndex& index, const py::list& strings, bool grow,
                                    py::list new_strings) {
  const Py_ssize_t n = PyList_GET_SIZE(strings.ptr());
  for (Py_ssize_t i = 0; i < n; ++i)
    if (!PyUnicode_Check(PyList_GET_ITEM(strings.ptr(), i)))
      throw py::type_error("intern: item " + std::to_string(i) + " is not a str");
  py::array_t<int64_t> out(n);
  int64_t* ids = out.mutable_data();
  // batches: keys hashed and slots prefetched, then looked up
  constexpr Py_ssize_t kBatch = 32;
  std::string keys;
  size_t key_end[kBatch];
  uint64_t hashes[kBatch];
  for (Py_ssize_t b = 0; b < n; b += kBatch) {
    if ((b & 0xFFFF) == 0 && b > 0) {
      // a signal handler may have resized the list or replaced its items
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
      check_size(strings, n);
    }
    const Py_ssize_t m = std::min(kBatch, n - b);
    keys.clear();
    for (Py_ssize_t k = 0; k < m; ++k) {
      const size_t begin = keys.size();
      PyObject* s = PyList_GET_ITEM(strings.ptr(), b + k);
      if (!PyUnicode_Check(s))
        throw py::type_error("intern: item " + std::to_string(b + k) + " is not a str");
      append_str_key(keys, s);
      key_end[k] = keys.size();
      hashes[k] = AttributeIndex::hash({keys.data() + begin, keys.size() - begin});
      index.prefetch(hashes[k]);
    }
    for (Py_ssize_t k = 0; k < m; ++k) {
      const size_t begin = k ? key_end[k - 1] : 0;
      const std::string_view key(keys.data() + begin, key_end[k] - begin);
      if (grow) {
        bool added;
        ids[b + k] = index.insert(key, hashes[k], added);
        if (added) new_strings.append(PyList_GET_ITEM(strings.ptr(), b + k));
      } else {
        ids[b + k] = index.find(key, hashes[k]);
      }
    }
  }
  return out;
}

int64_t renumber_csr(const int64_t* indptr, int64_t n_tokens, const int32_t* indices,
                     const double* values, const int64_t* new_id, int64_t* out_indptr,
                     int32_t* out_indices, double* out_values) {
  // Ids are unique within a token, so any sort gives the same order.
  constexpr int64_t kInsertionSortMax = 64;
  std::vector<std::pair<int32_t, double>> long_token;
  int64_t nnz = 0;
  out_indptr[0] = 0;
  for (int64_t t = 0; t < n_tokens; ++t) {
    const int64_t begin = nnz;
    if (indptr[t + 1] - indptr[t] > kInsertionSortMax) {
      long_token.clear();
      for (int64_t k = indptr[t]; k < indptr[t + 1]; ++k) {
        const int64_t id = new_id[indices[k]];
        if (id >= 0) long_token.emplace_back(static_cast<int32_t>(id), values ? values[k] : 1.0);
      }
      std::sort(long_token.begin(), long_token.end(),
                [](const auto& a, const auto& b) { return a.first < b.first; });
      for (const auto& e : long_token) {
        out_indices[nnz] = e.first;
        if (out_values) out_values[nnz] = e.second;
        ++nnz;
      }
    } else {
      for (int64_t k = indptr[t]; k < indptr[t + 1]; ++k) {
        const int64_t id = new_id[indices[k]];
        if (id < 0) continue;
        // insertion sort as the entries arrive
        int64_t j = nnz++;
        for (; j > begin && out_indices[j - 1] > id; --j) {
          out_indices[j] = out_indices[j - 1];
          if (out_values) out_values[j] = out_values[j - 1];
        }
        out_indices[j] = static_cast<int32_t>(id);
        if (out_values) out_values[j] = values ? values[k] : 1.0;
      }
    }
    out_indptr[t + 1] = nnz;
  }
  return nnz;
}

}  // namespace sscrf
