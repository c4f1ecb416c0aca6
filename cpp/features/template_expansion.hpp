// CRF++-style column templates expanded to interned attribute ids, in parallel
// over sentences, from columns held as UTF-8 bytes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "layer/attribute_index.hpp"
#include "runtime/scratch.hpp"

namespace sscrf {

// One piece of a template: a literal (slot < 0) or the value of column
// `slot` (a position in the list of columns given) of the token at offset
// `row` from the current one.
struct TemplatePiece {
  int32_t row = 0;
  int32_t slot = -1;
  std::string literal;
};

// A column of N tokens: value i is bytes [offsets[i], offsets[i + 1]) of data
// (the byte key of AttributeIndex: UTF-8, lone surrogates included).
struct ColumnBytes {
  const char* data = nullptr;
  const int64_t* offsets = nullptr;
};

// The CSR result and the attributes a counting pass added to the index.
// indices and values grow unset (the expansion writes every entry), so that
// their pages are first touched by the threads that fill them: a serial
// zero-fill of CoNLL-2000's 16 MB of indices cost a fit 3-4 ms of 89 on
// two threads.
template <class T>
using CsrArray = std::vector<T, UnsetOnGrowth<T, std::allocator>>;
struct TemplateCsr {
  std::vector<int64_t> indptr;  // [N + 1]
  CsrArray<int32_t> indices;    // [nnz], ascending within a token
  CsrArray<double> values;      // [nnz], empty when every value is 1.0
  std::string new_keys;          // keys of the added attributes, one after the other
  std::vector<int64_t> new_ends;  // end of each in new_keys
};

// What a fit asks of the expansion: ids in the extractor's final order,
// most tokens first, ties in order of first occurrence, attributes in fewer
// than min_freq tokens dropped (FeatureExtractor's frequency order). The
// expansion gives them where the counts are known before the CSR is built
// (see expand_templates); else the caller renumbers the first-occurrence
// ids.
struct FrequencyOrder {
  int64_t min_freq = 1;
  bool applied = false;        // out: the CSR holds final ids
  std::vector<int64_t> order;  // out, when applied: final id -> id in the index
  // Optional: given the kept attributes' keys in final order, on the calling
  // thread, while another thread inserts them into the index (a binding
  // makes its strings meanwhile). Called where the order can be known
  // before the index is filled (a fresh fit of one slice); keys_given says
  // whether it held (no string made twice), else what the call made is to
  // be dropped.
  std::function<void(const std::vector<std::string_view>&)> final_keys;
  bool keys_given = false;  // out
};

// The attribute of every (token, template) under `index`, as a CSR matrix.
//
// The attribute of template j at token t is its pieces joined, a cell
// reading CRF++'s pad "_B-k" k positions before the sentence start and
// "_B+k" k positions after its end. Within a token, ids are sorted and a
// repeated id (two templates giving one string) is one entry whose value is
// the number of repeats.
//
// grow: attributes missing from `index` are added in order of first
//   occurrence, token by token and within a token in template order (the
//   order of one sequential pass, whatever the thread count); with
//   new_keys, their keys go to out.new_keys too. Without grow, attributes
//   outside `index` are dropped.
// fit: with grow, into an empty index, the final order is applied when the
//   corpus is one slice and no two (template, tuple) pairs share an
//   attribute string (then a tuple's tokens are its attribute's tokens):
//   the counts come from the tuples, and the CSR is built once, in final
//   ids, rather than renumbered and sorted again. The index keeps
//   first-occurrence ids.
// sentence_offsets [n_sentences + 1] cut the N tokens into sentences.
// slice_entries: (token, template) entries per slice of whole sentences
//   (0: the default, 2^22), the bound of the per-entry temporaries; the
//   result does not depend on it (the tests cut small slices).
// Inputs are validated by the caller (shims_features.cpp): offsets sorted,
// values UTF-8, cells' slots within `columns`, at most 32 cells a template.
void expand_templates(const std::vector<std::vector<TemplatePiece>>& templates,
                      const std::vector<ColumnBytes>& columns, const int64_t* sentence_offsets,
                      int64_t n_sentences, AttributeIndex& index, bool grow, bool new_keys,
                      int n_threads, int64_t slice_entries, TemplateCsr& out,
                      FrequencyOrder* fit = nullptr);

// True when bytes [p, p + n) are UTF-8 with surrogate code points allowed
// (what a Python str encodes to with "surrogatepass").
bool is_utf8_with_surrogates(const char* p, int64_t n);

// Whether bytes p[0 .. n) are all ASCII (below 0x80), 8 at a time.
bool is_ascii(const char* p, int64_t n);

}  // namespace sscrf
