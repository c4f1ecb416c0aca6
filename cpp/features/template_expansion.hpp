// CRF++-style column templates expanded to interned attribute ids, in parallel
// over sentences, from columns held as UTF-8 bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "layer/attribute_index.hpp"

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
struct TemplateCsr {
  std::vector<int64_t> indptr;   // [N + 1]
  std::vector<int32_t> indices;  // [nnz], ascending within a token
  std::vector<double> values;    // [nnz], empty when every value is 1.0
  std::string new_keys;          // keys of the added attributes, one after the other
  std::vector<int64_t> new_ends;  // end of each in new_keys
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
//   order of one sequential pass, whatever the thread count); their keys go
//   to out.new_keys. Without grow, attributes outside `index` are dropped.
// sentence_offsets [n_sentences + 1] cut the N tokens into sentences.
// slice_entries: (token, template) entries per slice of whole sentences
//   (0: the default, 2^22), the bound of the per-entry temporaries; the
//   result does not depend on it (the tests cut small slices).
// Inputs are validated by the caller (shims_features.cpp): offsets sorted,
// values UTF-8, cells' slots within `columns`, at most 32 cells a template.
void expand_templates(const std::vector<std::vector<TemplatePiece>>& templates,
                      const std::vector<ColumnBytes>& columns, const int64_t* sentence_offsets,
                      int64_t n_sentences, AttributeIndex& index, bool grow, int n_threads,
                      int64_t slice_entries, TemplateCsr& out);

// True when bytes [p, p + n) are UTF-8 with surrogate code points allowed
// (what a Python str encodes to with "surrogatepass").
bool is_utf8_with_surrogates(const char* p, int64_t n);

}  // namespace sscrf
