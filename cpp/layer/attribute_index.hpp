// Attribute string -> id vocabulary, and the conversion of feature-dict tokens to CSR.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace sscrf {

// An open-addressing hash table from byte strings to consecutive ids
// 0, 1, ..., size()-1 (in insertion order, until renumber), the keys stored
// in one arena.
// A Python str is keyed by an injective byte encoding of its code points
// (UTF-8, lone surrogates included), so two strs share an id exactly when
// they are equal.
//
// Layout, for few cache misses per lookup: a slot holds 24 bits of the
// key's hash and the arena offset of its entry, and an entry is
// [int32 id][uint32 length][key bytes], so a hit reads one slot and one
// entry. At most half of the slots are used.
class AttributeIndex {
 public:
  int32_t size() const { return size_; }
  // A wyhash-style hash (Wang Yi's multiply-fold mix): most keys are under
  // 16 bytes and take two reads and two multiplies, 1.7 ns against
  // std::hash's 4.5 (murmur) with the same probe lengths.
  static uint64_t hash(std::string_view key) {
    constexpr uint64_t k0 = 0xa0761d6478bd642fULL, k1 = 0xe7037ed1a0b428dbULL;
    const auto* p = reinterpret_cast<const unsigned char*>(key.data());
    const size_t n = key.size();
    uint64_t a = 0, b = 0, seed = k0;
    if (n <= 16) {
      if (n >= 4) {
        const size_t q = (n >> 3) << 2;  // 0 or 4: the middle words overlap
        a = read32(p) << 32 | read32(p + q);
        b = read32(p + n - 4) << 32 | read32(p + n - 4 - q);
      } else if (n > 0) {
        a = uint64_t{p[0]} << 16 | uint64_t{p[n >> 1]} << 8 | p[n - 1];
      }
    } else {
      size_t i = n;
      for (; i > 16; i -= 16, p += 16) seed = mix(read64(p) ^ k1, read64(p + 8) ^ seed);
      a = read64(p + i - 16);
      b = read64(p + i - 8);
    }
    return mix(k1 ^ n, mix(a ^ k1, b ^ seed));
  }
  // The id of `key` (whose hash is `h`), or -1.
  int32_t find(std::string_view key, uint64_t h) const;
  // The id of `key` (whose hash is `h`), added with the next id when absent;
  // `added` tells which.
  int32_t insert(std::string_view key, uint64_t h, bool& added);
  // Hints that `key` with hash `h` will be looked up soon: fetches its first
  // slot (at most once per key, so callers hash all keys of a token, prefetch,
  // then look them up, and the cache misses overlap).
  void prefetch(uint64_t h) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[h & (slots_.size() - 1)]);
  }
  // The next step of the same: reads the first slot (prefetched earlier) and
  // fetches the entry it points to.
  void prefetch_entry(uint64_t h) const {
    if (slots_.empty()) return;
    const uint64_t slot = slots_[h & (slots_.size() - 1)];
    if (slot != 0)
      __builtin_prefetch(arena_.data() + ((slot & ((uint64_t(1) << kTagShift) - 1)) - 1));
  }
  // Room for `keys` more keys of `bytes` bytes in all, so that inserting
  // them neither rehashes nor moves the arena.
  void reserve(size_t keys, size_t bytes);
  // The keys of ids[0 .. n), each in [0, size()) (the caller checks), as
  // views of the index's own bytes (valid until it next changes).
  std::vector<std::string_view> keys_of(const int64_t* ids, int64_t n) const;
  // Gives the key of id i the id new_id[i]; new_id must be a permutation of
  // 0, ..., size()-1 (the binding checks).
  void renumber(const int64_t* new_id);
  // Bytes held (arena and slots).
  size_t bytes() const { return arena_.capacity() + sizeof(uint64_t) * slots_.capacity(); }

 private:
  static uint64_t mix(uint64_t a, uint64_t b) {
    const __uint128_t r = static_cast<__uint128_t>(a) * b;
    return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
  }
  static uint64_t read32(const unsigned char* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  static uint64_t read64(const unsigned char* p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }
  static constexpr int kTagShift = 40;  // slot = tag << 40 | (arena offset + 1); 0 = empty
  // Slot index where `key` is, or the empty slot where it would go.
  size_t probe(std::string_view key, uint64_t h) const;
  void grow();
  void rehash(size_t n_slots);
  std::vector<char> arena_;
  std::vector<uint64_t> slots_;  // [power of two]
  int32_t size_ = 0;
};

// Appends the byte encoding of Python str `s` to `out` (see AttributeIndex).
void append_str_key(std::string& out, PyObject* s);

// The CSR attribute matrix of feature-dict tokens under `index`.
//
// tokens: list of N tokens. A token that is an exact dict whose keys are
//   exact strs and whose values are exact str (attribute key + separator +
//   value, e.g. "key:value", value 1.0), float or int (attribute "key", that value; finite), or bool (True:
//   "key" with 1.0; False: nothing) is converted here; any other token goes
//   through `slow(i)`, which returns (names, values) -- a list of str and a
//   list of float, the token's pairs in order -- or raises.
// grow: add attributes missing from `index` (in order of first occurrence,
//   token by token, and within a token in dict order); new_strings receives
//   their strings. Without grow, attributes outside `index` are dropped.
// Within a token, entries are sorted by id and the values of a repeated id
//   summed exactly as numpy's add.reduceat sums a segment (first value plus
//   the pairwise sum of the rest), in their order in the token.
//
// Returns (indptr int64 [N+1], indices int32 [nnz], values float64 [nnz] or
// None when every summed value is exactly 1.0).
pybind11::tuple dict_tokens_to_csr(AttributeIndex& index, const pybind11::list& tokens,
                                   bool grow, const pybind11::object& slow,
                                   pybind11::list new_strings, const std::string& separator);

// The ids of the strs of `strings` under `index`, int64 [len(strings)]: with
// `grow`, strings not yet in `index` are added (in order of first occurrence)
// and appended to new_strings; without, they read as -1.
pybind11::array_t<int64_t> intern_strings(AttributeIndex& index, const pybind11::list& strings,
                                          bool grow, pybind11::list new_strings);

// Renumbers the attribute ids of a CSR matrix with n_tokens rows through
// new_id (-1: the attribute is dropped) and sorts each token's entries by
// their new id; values (null: none) follow their ids. new_id must be
// one-to-one on the ids it keeps, so that a token's ids stay unique and the
// order is fully determined. The outputs have room for every entry
// (out_indptr: n_tokens + 1); returns the entries kept.
int64_t renumber_csr(const int64_t* indptr, int64_t n_tokens, const int32_t* indices,
                     const double* values, const int64_t* new_id, int64_t* out_indptr,
                     int32_t* out_indices, double* out_values);

}  // namespace sscrf
