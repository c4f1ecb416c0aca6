// Attribute vocabulary as a hash table, and feature-dict tokens to CSR in one pass.
#include "layer/attribute_index.hpp"

#include <pybind11/numpy.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "runtime/errors.hpp"
#include "runtime/sorting_network.hpp"

namespace py = pybind11;

namespace sscrf {

// ---- the hash table ---------------------------------------------------------

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

std::vector<std::string_view> AttributeIndex::keys_of(const int64_t* ids, int64_t n) const {
  std::vector<uint64_t> entry(static_cast<size_t>(size_));  // id -> arena offset
  for (uint64_t offset = 0; offset < arena_.size();) {
    int32_t id;
    uint32_t length;
    std::memcpy(&id, arena_.data() + offset, 4);
    std::memcpy(&length, arena_.data() + offset + 4, 4);
    entry[id] = offset;
    offset += 8 + length;
  }
  std::vector<std::string_view> keys(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    const uint64_t offset = entry[ids[k]];
    uint32_t length;
    std::memcpy(&length, arena_.data() + offset + 4, 4);
    keys[k] = {arena_.data() + offset + 8, length};
  }
  return keys;
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

// A growing array in one malloc'd buffer, handed to numpy without a copy.
// A large buffer grows by realloc, which glibc does by remapping its pages
// (mremap) rather than copying them: the peak is the result, not twice it,
// and the pages are touched once (first-touch page faults were 14% of
// tagging with word vectors when the result was built in blocks and copied).
template <class T>
class Grown {
 public:
  Grown() = default;
  Grown(const Grown&) = delete;
  Grown& operator=(const Grown&) = delete;
  ~Grown() { std::free(data_); }
  void push(T x) {
    if (size_ == capacity_) grow();
    data_[size_++] = x;
  }
  // `count` more entries, to be written through the pointer returned.
  T* extend(int64_t count) {
    while (capacity_ - size_ < count) grow();
    size_ += count;
    return data_ + (size_ - count);
  }
  int64_t size() const { return size_; }
  void truncate(int64_t n) { size_ = std::min(size_, n); }
  // Room for `capacity` entries in one allocation (pages are touched only
  // when written), instead of the doublings that a small buffer's realloc
  // copies. A hint: if the allocation fails, the buffer grows as before.
  void try_reserve(int64_t capacity) {
    if (capacity <= capacity_ || capacity > INT64_MAX / static_cast<int64_t>(sizeof(T))) return;
    T* grown = static_cast<T*>(std::realloc(data_, sizeof(T) * capacity));
    if (!grown) return;
    data_ = grown;
    capacity_ = capacity;
  }
  // The contents as a numpy array that owns the buffer; this is left empty.
  py::array_t<T> release() {
    const int64_t n = size_;
    T* data = data_;
    if (n < capacity_ || !data) {  // shrink to fit (numpy wants a buffer even when empty)
      T* fit = static_cast<T*>(std::realloc(data, sizeof(T) * std::max<int64_t>(n, 1)));
      if (!fit) throw std::bad_alloc();
      data = data_ = fit;
      capacity_ = std::max<int64_t>(n, 1);
    }
    py::capsule owner(data, [](void* p) { std::free(p); });
    data_ = nullptr;
    size_ = capacity_ = 0;
    return py::array_t<T>({static_cast<py::ssize_t>(n)}, {static_cast<py::ssize_t>(sizeof(T))},
                          data, owner);
  }

 private:
  void grow() {
    const int64_t capacity = capacity_ ? 2 * capacity_ : int64_t(1) << 16;
    T* grown = static_cast<T*>(std::realloc(data_, sizeof(T) * capacity));
    if (!grown) throw std::bad_alloc();
    data_ = grown;
    capacity_ = capacity;
  }
  T* data_ = nullptr;
  int64_t size_ = 0;
  int64_t capacity_ = 0;
};

// One (attribute, value) pair of a token before interning: the attribute is
// `name` alone, or name, separator, value when `joined` is set; or, with
// `array` set, a vector value: `length` attributes named by `name` and a
// position ("emb" and 3 make "emb3") with the values array[0..length)
// (borrowed references, read while no Python code runs). `id` is the
// attribute's id once known (kUnresolved before; not used for arrays).
constexpr int32_t kUnresolved = INT32_MIN;
struct Pair {
  PyObject* name;
  PyObject* joined;
  double value;
  int32_t id = kUnresolved;
  const double* array = nullptr;
  int64_t length = 0;
};

// The ids a call has found, by the str objects of an attribute's name and,
// for a str value, of its value: the same objects recur token after token (a
// dict literal's keys, a cluster id's str shared by every word of the
// cluster), and a hit skips encoding, hashing and probing. No reference is
// taken (an INCREF and a DECREF of each evicted object were a third of the
// writing): the token dicts keep their objects alive while no Python code
// runs, and `forget` is called before any does, so that a freed object's
// address cannot be found again.
class KeyCache {
 public:
  // 2^bits slots: a call of few tokens does not pay for a large table.
  explicit KeyCache(int bits) : bits_(bits), slots_(size_t(1) << bits) {}
  // The cached id of (name, joined) (-1: not in the index), or kUnresolved.
  int32_t find(PyObject* name, PyObject* joined) const {
    const Slot& s = slots_[at(name, joined)];
    return s.generation == generation_ && s.name == name && s.joined == joined ? s.id
                                                                              : kUnresolved;
  }
  void put(PyObject* name, PyObject* joined, int32_t id) {
    slots_[at(name, joined)] = {name, joined, id, generation_};
  }
  // Every entry dropped, before Python code may free or replace objects.
  void forget() { ++generation_; }

 private:
  struct Slot {
    PyObject* name = nullptr;
    PyObject* joined = nullptr;
    int32_t id = kUnresolved;
    uint32_t generation = 0;
  };
  size_t at(PyObject* name, PyObject* joined) const {
    const uint64_t a = reinterpret_cast<uintptr_t>(name) >> 4;
    const uint64_t b = reinterpret_cast<uintptr_t>(joined) >> 4;
    const uint64_t h = (a ^ (b * 0xC2B2AE3D27D4EB4FULL)) * 0x9E3779B97F4A7C15ULL;
    return static_cast<size_t>(h >> (64 - bits_));
  }
  int bits_;
  uint32_t generation_ = 1;
  std::vector<Slot> slots_;
};

// The ids of the positions of array values, by the str object of their key:
// a vector's attributes are looked up once a call, not once a token (tagging
// with 100-dimension word vectors took 3x the time without them when each
// dimension was a key of its own). Keys are held as in KeyCache; past
// kMaxKeys key objects (a key built anew for every token) it starts afresh.
class ArrayIds {
 public:
  // An array key's position ids: position j's at ids[j] (-1: not in the
  // index), and (id, j) of the positions in the index by id, which is the
  // order a row is written in.
  struct Key {
    std::vector<int32_t> ids;
    std::vector<std::pair<int32_t, int32_t>> by_id;
  };
  ArrayIds() = default;
  ArrayIds(const ArrayIds&) = delete;
  ArrayIds& operator=(const ArrayIds&) = delete;
  ~ArrayIds() { clear(); }
  // The ids found so far for key `name`, to extend (then `sort` it).
  Key& of(PyObject* name) {
    const auto found = ids_.find(name);
    if (found != ids_.end()) return found->second;
    if (ids_.size() >= kMaxKeys) clear();
    Py_INCREF(name);
    return ids_[name];
  }
  static void sort(Key& key) {
    key.by_id.clear();
    for (size_t j = 0; j < key.ids.size(); ++j)
      if (key.ids[j] >= 0) key.by_id.emplace_back(key.ids[j], static_cast<int32_t>(j));
    std::sort(key.by_id.begin(), key.by_id.end());
  }

 private:
  static constexpr size_t kMaxKeys = 1024;
  void clear() {
    for (auto& held : ids_) Py_DECREF(held.first);
    ids_.clear();
  }
  std::unordered_map<PyObject*, Key> ids_;
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
    } else if (py::detail::npy_api::get().PyArray_Check_(value)) {
      // a vector: one attribute per position; other dtypes and shapes, and
      // non-finite entries, go the Python way (which converts or names them)
      // read through numpy's struct, without a reference taken per token
      const auto* array = py::detail::array_proxy(value);
      const auto* descr = py::detail::array_descriptor_proxy(array->descr);
      const char order = descr->byteorder;
      const bool native = order == '=' || order == (PY_LITTLE_ENDIAN ? '<' : '>');
      if (array->nd != 1 || descr->type_num != py::detail::npy_api::NPY_DOUBLE_ || !native ||
          !(array->flags & py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_))
        return false;
      const double* x = reinterpret_cast<const double*>(array->data);
      const int64_t n = array->dimensions[0];
      for (int64_t j = 0; j < n; ++j)
        if (!std::isfinite(x[j])) return false;
      w.pairs.push_back({key, nullptr, 0.0, kUnresolved, x, n});
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

// The keys of the pairs and their hashes, their slots prefetched; or their
// ids, when the cache has them (their keys are then empty).
void make_keys(const AttributeIndex& index, const std::string& separator, const KeyCache& cache,
               TokenWork& w) {
  w.keys.clear();
  w.key_end.clear();
  w.hashes.clear();
  for (Pair& p : w.pairs) {
    const size_t begin = w.keys.size();
    p.id = p.array ? kUnresolved : cache.find(p.name, p.joined);
    if (p.id != kUnresolved || p.array) {  // an array's ids are found when written
      w.key_end.push_back(begin);
      w.hashes.push_back(0);
      continue;
    }
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
  RowWriter(AttributeIndex& index, bool grow, py::list new_strings, const std::string& separator,
            KeyCache& cache)
      : index_(index), grow_(grow), new_strings_(std::move(new_strings)), separator_(separator),
        cache_(cache) {}

  void write(const TokenWork& w) {
    // the ids in token order (insertions into a growing index happen in this
    // order, whatever path writes the row)
    entries_.clear();
    const ArrayIds::Key* array = nullptr;
    const Pair* array_pair = nullptr;
    size_t n_arrays = 0;
    for (size_t k = 0; k < w.pairs.size(); ++k) {
      const Pair& p = w.pairs[k];
      if (p.array) {
        array = &array_key(p);
        array_pair = &p;
        ++n_arrays;
        continue;
      }
      const int32_t id = scalar_id(w, k);
      if (id >= 0) entries_.emplace_back(id, p.value);
    }
    if (n_arrays == 0) {
      sort_segment(entries_.begin(), entries_.end());
      emit_sorted(entries_);
      return;
    }
    if (n_arrays == 1 && static_cast<int64_t>(array->ids.size()) == array_pair->length &&
        write_with_array(*array, array_pair->array))
      return;
    write_in_segments(w);
  }

  int64_t size() const { return ids_.size(); }

  // After the first tokens of `n_tokens`, room for the entries they project.
  void project(int64_t written, int64_t n_tokens) {
    const double expected = static_cast<double>(ids_.size()) * n_tokens / written * 1.25 + 1024;
    if (expected > 1e15) return;
    ids_.try_reserve(static_cast<int64_t>(expected));
    if (!all_ones_) values_.try_reserve(static_cast<int64_t>(expected));
  }

 private:
  using Entry = std::pair<int32_t, double>;

  const ArrayIds::Key& array_key(const Pair& p) {
    ArrayIds::Key& key = arrays_.of(p.name);
    if (static_cast<int64_t>(key.ids.size()) < p.length) {
      while (static_cast<int64_t>(key.ids.size()) < p.length)
        key.ids.push_back(position_id(p.name, static_cast<int64_t>(key.ids.size())));
      ArrayIds::sort(key);
    }
    return key;
  }

  // The id of scalar pair k (-1: not in the index), added when growing.
  int32_t scalar_id(const TokenWork& w, size_t k) {
    const Pair& p = w.pairs[k];
    if (p.id != kUnresolved) return p.id;
    const size_t begin = k ? w.key_end[k - 1] : 0;
    const std::string_view key(w.keys.data() + begin, w.key_end[k] - begin);
    int32_t id;
    if (grow_) {
      bool added;
      id = index_.insert(key, w.hashes[k], added);
      if (added) {
        PyObject* s = p.joined ? PyUnicode_FromFormat("%U%s%U", p.name, separator_.c_str(),
                                                      p.joined)
                               : (Py_INCREF(p.name), p.name);
        if (!s) throw py::error_already_set();
        new_strings_.append(py::reinterpret_steal<py::object>(s));
      }
    } else {
      id = index_.find(key, w.hashes[k]);
    }
    cache_.put(p.name, p.joined, id);
    return id;
  }

  // The row of a token with one array: its scalars (entries_, in token
  // order) sorted, merged with the array's positions in id order straight
  // into the output. An id both a scalar's and a position's is summed in
  // token order, which this merge does not know: the row is then taken back
  // and false returned.
  bool write_with_array(const ArrayIds::Key& array, const double* x) {
    sort_segment(entries_.begin(), entries_.end());
    const int64_t start = ids_.size();
    const auto& by_id = array.by_id;
    size_t i = 0;
    for (size_t a = 0; a < by_id.size();) {
      while (i < entries_.size() && entries_[i].first < by_id[a].first)
        i = emit_run(entries_, i);
      if (i < entries_.size() && entries_[i].first == by_id[a].first) {
        ids_.truncate(start);
        if (!all_ones_) values_.truncate(start);
        return false;
      }
      // the positions before the next scalar, in one run
      const int32_t next = i < entries_.size() ? entries_[i].first : INT32_MAX;
      size_t b = a + 1;
      while (b < by_id.size() && by_id[b].first < next) ++b;
      emit_positions(by_id.data() + a, b - a, x);
      a = b;
    }
    while (i < entries_.size()) i = emit_run(entries_, i);
    return true;
  }

  // The (id, position) entries run[0..count) of an array x, ids increasing.
  void emit_positions(const std::pair<int32_t, int32_t>* run, size_t count, const double* x) {
    if (all_ones_) {
      for (size_t k = 0; k < count; ++k) emit(run[k].first, x[run[k].second]);
      return;
    }
    int32_t* ids = ids_.extend(static_cast<int64_t>(count));
    double* values = values_.extend(static_cast<int64_t>(count));
    for (size_t k = 0; k < count; ++k) {
      ids[k] = run[k].first;
      values[k] = x[run[k].second];
    }
  }

  // Any token: an array's entries are a segment of their own, the pairs
  // between arrays another: each is sorted alone, then they are merged,
  // earlier segments winning ties.
  void write_in_segments(const TokenWork& w) {
    entries_.clear();
    segments_.clear();
    for (size_t k = 0; k < w.pairs.size(); ++k) {
      const Pair& p = w.pairs[k];
      if (k == 0 || p.array || w.pairs[k - 1].array) segments_.push_back(entries_.size());
      if (p.array) {
        const std::vector<int32_t>& ids = array_key(p).ids;
        for (int64_t j = 0; j < p.length; ++j)
          if (ids[j] >= 0) entries_.emplace_back(ids[j], p.array[j]);
        continue;
      }
      const int32_t id = scalar_id(w, k);  // resolved by write(): no insertion here
      if (id >= 0) entries_.emplace_back(id, p.value);
    }
    sort_entries();
    emit_sorted(entries_);
  }

  // Entries sorted by id, equal ids in token order, into the output:
  // repeated ids summed as numpy does.
  void emit_sorted(const std::vector<Entry>& sorted) {
    for (size_t k = 0; k < sorted.size();) k = emit_run(sorted, k);
  }

  // The run of entries of sorted[k]'s id as one output entry; returns its end.
  size_t emit_run(const std::vector<Entry>& sorted, size_t k) {
    size_t end = k + 1;
    while (end < sorted.size() && sorted[end].first == sorted[k].first) ++end;
    double v = sorted[k].second;
    if (end - k > 1) {
      run_.clear();
      for (size_t j = k + 1; j < end; ++j) run_.push_back(sorted[j].second);
      v += numpy_pairwise_sum(run_.data(), static_cast<int64_t>(run_.size()));
    }
    emit(sorted[k].first, v);
    return end;
  }

  void emit(int32_t id, double v) {
    if (all_ones_ && v != 1.0) {
      all_ones_ = false;
      values_.try_reserve(2 * ids_.size());
      for (int64_t j = 0; j < ids_.size(); ++j) values_.push(1.0);
    }
    ids_.push(id);
    if (!all_ones_) values_.push(v);
  }

  // The id of attribute name + position j (an array's entry), added when
  // growing.
  int32_t position_id(PyObject* name, int64_t j) {
    key_.clear();
    append_str_key(key_, name);
    key_ += std::to_string(j);
    const uint64_t h = AttributeIndex::hash(key_);
    if (!grow_) return index_.find(key_, h);
    bool added;
    const int32_t id = index_.insert(key_, h, added);
    if (added) {
      PyObject* s = PyUnicode_FromFormat("%U%lld", name, static_cast<long long>(j));
      if (!s) throw py::error_already_set();
      new_strings_.append(py::reinterpret_steal<py::object>(s));
    }
    return id;
  }

  // [begin, end) stably by id: insertion sort for the usual tens of
  // entries; an array's entries are mostly in id order already.
  template <class It>
  static void sort_segment(It begin, It end) {
    const auto by_id = [](const Entry& a, const Entry& b) { return a.first < b.first; };
    if (std::is_sorted(begin, end, by_id)) {
    } else if (end - begin <= 64) {
      for (auto k = begin + 1; k < end; ++k) {
        const Entry e = *k;
        auto j = k;
        for (; j > begin && (j - 1)->first > e.first; --j) *j = *(j - 1);
        *j = e;
      }
    } else {
      std::stable_sort(begin, end, by_id);
    }
  }

  // entries_ stably by id: each segment sorted, then merged into the
  // entries before it, which win ties.
  void sort_entries() {
    const auto by_id = [](const Entry& a, const Entry& b) { return a.first < b.first; };
    segments_.push_back(entries_.size());
    for (size_t g = 0; g + 1 < segments_.size(); ++g) {
      const auto begin = entries_.begin() + static_cast<std::ptrdiff_t>(segments_[g]);
      const auto end = entries_.begin() + static_cast<std::ptrdiff_t>(segments_[g + 1]);
      sort_segment(begin, end);
      if (g == 0) continue;
      merged_.clear();
      std::merge(entries_.begin(), begin, begin, end, std::back_inserter(merged_), by_id);
      std::copy(merged_.begin(), merged_.end(), entries_.begin());
    }
  }

 public:
  // (indices, values or None), the buffers handed over
  std::pair<py::array_t<int32_t>, py::object> finish() {
    py::array_t<int32_t> indices = ids_.release();
    if (all_ones_) return {indices, py::none()};
    return {indices, values_.release()};
  }

 private:
  AttributeIndex& index_;
  const bool grow_;
  py::list new_strings_;
  const std::string& separator_;
  KeyCache& cache_;
  ArrayIds arrays_;
  std::string key_;
  Grown<int32_t> ids_;
  Grown<double> values_;  // filled only once a summed value differs from 1.0
  bool all_ones_ = true;
  std::vector<Entry> entries_;   // (id, value) of one token
  std::vector<size_t> segments_;  // where each segment of entries_ starts
  std::vector<Entry> merged_;
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
  // 16 slots a token up to 2^14 (a cache of 393 KB for a large call)
  int bits = 8;
  while (bits < 14 && (int64_t(1) << bits) < 16 * static_cast<int64_t>(n)) ++bits;
  KeyCache cache(bits);  // before `out`, which refers to it
  RowWriter out(index, grow, new_strings, separator, cache);
  // A software pipeline over tokens, so that the cache misses of several
  // tokens overlap: while token i is classified and its keys are hashed
  // (their table slots prefetched), the values of token i+1 are on their
  // way, the entries that token i-1's slots point to are fetched, and token
  // i-2 is looked up and written. w[i % 4] holds token i.
  constexpr Py_ssize_t kDepth = 4;
  TokenWork w[kDepth];
  Py_ssize_t written = 0;  // tokens [0, written) are in `out`
  constexpr Py_ssize_t kProjectAfter = 256;
  auto write_until = [&](Py_ssize_t end) {
    for (; written < end; ++written) {
      TokenWork& t = w[written % kDepth];
      out.write(t);
      ip[written + 1] = out.size();
      if (written + 1 == kProjectAfter && n > 2 * kProjectAfter) out.project(kProjectAfter, n);
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
      cache.forget();
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
      cache.forget();
      slow_pairs(slow, i, cur);
      check_size(tokens, n);
      if (i + 1 < n) gather(tokens, i + 1, w[(i + 1) % kDepth]);
    }
    make_keys(index, separator, cache, cur);
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
  // binary features: 16 tokens of at most kSortWidth ids at a time through a
  // sorting network (an insertion sort per token mispredicted on every
  // other id: 31 ms of a 0.19 s fit_transform on CoNLL-2000)
  std::vector<std::vector<std::pair<int, int>>> networks(kSortWidth + 1);
  int32_t lanes[kSortWidth][kSortLanes];
  int64_t nnz = 0;
  out_indptr[0] = 0;
  for (int64_t t = 0; t < n_tokens; ++t) {
    if (!values && t % kSortLanes == 0 && t + kSortLanes <= n_tokens) {
      int64_t width = 0;
      for (int l = 0; l < kSortLanes; ++l)
        width = std::max(width, indptr[t + l + 1] - indptr[t + l]);
      if (width <= kSortWidth) {
        for (int64_t i = 0; i < width; ++i)
          for (int l = 0; l < kSortLanes; ++l) {
            const int64_t k = indptr[t + l] + i;
            const int64_t id = k < indptr[t + l + 1] ? new_id[indices[k]] : -1;
            lanes[i][l] = id >= 0 ? static_cast<int32_t>(id) : INT32_MAX;  // dropped: last
          }
        auto& network = networks[width];
        if (network.empty() && width > 1) network = sorting_network(static_cast<int>(width));
        sort_lanes(network, lanes);
        for (int l = 0; l < kSortLanes; ++l) {
          for (int64_t i = 0; i < width && lanes[i][l] != INT32_MAX; ++i)
            out_indices[nnz++] = lanes[i][l];
          out_indptr[t + l + 1] = nnz;
        }
        t += kSortLanes - 1;
        continue;
      }
    }
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
