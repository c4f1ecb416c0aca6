// The sparse linear layer E = X·W and its back-projection ∂W = Xᵀ·∂E.
//
// W is stored by attribute: attribute a may score the labels
// label_ids[row_ptr[a] .. row_ptr[a+1]) (ascending) with the weights
// theta[row_ptr[a] .. row_ptr[a+1]). A dense model gives every attribute all
// S labels; an `observed` model only the labels seen with it. One layout,
// two ways through it: whole rows are summed in registers, a vector window
// at a time (full rows read in place, attributes with many but not all
// labels through a zero-padded copy of their rows), the rest entry by entry.
// With few labels (LayerWeights::attribute_rows) every row is summed whole.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "layer/corpus.hpp"
#include "runtime/dense_kernels.hpp"
#include "runtime/parallel.hpp"

namespace sscrf {

// Attributes with at least padded_row_min_labels(S) labels, but not all S,
// get a padded row: at least two, and at least one per 16 lanes of the
// padded width. Below it, the indexed adds of the few labels cost less than
// adding a whole padded row (and the padded copy would grow by a row per
// attribute); padding 1-label rows too took 1.14x the time at S = 22.
constexpr int kPaddedRowMinLabels = 2;
inline int padded_row_min_labels(int S) {
  return std::max(kPaddedRowMinLabels, (padded_width(S) + 15) / 16);
}

// Labels up to which an `observed` layout is scored from a zero-padded copy
// of every attribute's row (one to three vec4 per occurrence, summed in
// registers, no case per attribute): with few labels, telling 1-label,
// few-label and whole rows apart cost more than the zeros (up to 0.5x the
// likelihood's time at S = 3, but slower from S = 16 on). The copy takes 8·padded_width(S) bytes
// per attribute, and is built only for a corpus with at least as many
// attribute occurrences as attributes, and while it takes at most
// kRowCopyMaxBytes. Without it, every row is added entry by entry, which
// sums each lane in the same order: the same bits either way.
constexpr int kRowCopyMaxLabels = 12;
constexpr size_t kRowCopyMaxBytes = size_t{128} << 20;
// A dense layout is scored the same way from theta itself (rows at stride
// S, read padded_width(S) wide) up to this width: one register window.
constexpr int kRowsInPlaceMaxLanes = 24;

// Where E = X·W reads an attribute's weights, in one 16-byte entry: an
// occurrence of a rare attribute (a cache miss) then costs one line before
// its weights, not one per array (row_ptr, label_ids, padded-row index).
struct AttributeRow {
  // The first weight: in LayerWeights::padded for a padded row, else in theta
  int64_t offset = 0;
  int32_t n_labels = 0;
  int32_t label = -1;  // the label when n_labels == 1, else -1
  // Summed a whole row at a time (padded, or full and read in place), not
  // entry by entry. A full row is read padded_width(S) wide, into the next
  // row or past W into T, start and end: S >= 2 leaves enough of them.
  bool whole(int S) const {
    return n_labels >= padded_row_min_labels(S) || (n_labels == S && S >= 2);
  }
  bool padded(int S) const {
    return n_labels < S && n_labels >= padded_row_min_labels(S) && S > kRowCopyMaxLabels;
  }
};

struct Layout {
  int32_t n_attributes = 0;
  int S = 0;
  std::vector<int64_t> row_ptr;    // [n_attributes + 1]
  std::vector<int32_t> label_ids;  // [n_weights]
  std::vector<AttributeRow> rows;  // [n_attributes]
  int32_t n_padded_rows = 0;

  // The flat parameter vector is [W entries | T (S×S) | start (S) | end (S)].
  int64_t n_weights() const { return static_cast<int64_t>(label_ids.size()); }
  int64_t n_parameters() const { return n_weights() + static_cast<int64_t>(S) * S + 2 * S; }
  int64_t transitions_offset() const { return n_weights(); }
  int64_t start_offset() const { return n_weights() + static_cast<int64_t>(S) * S; }
  int64_t end_offset() const { return start_offset() + S; }

  // Fills rows; call once row_ptr and label_ids are filled and validated.
  void index_rows();
};

// The weights that E = X·W reads for one parameter vector: theta itself and
// the padded copy of the rows that have one, built once per evaluation.
//   padded: [n_padded_rows][padded_width(S)]; the row of a padded attribute
//           a starts at rows[a].offset: W[a, b], 0 for the labels a does not score
//   attribute_rows: when not null, attribute a's row (padded_width(S) wide,
//           lanes past S ignored) starts at attribute_rows + a·row_stride:
//           theta for a dense layout up to kRowsInPlaceMaxLanes, else
//           row_copy (on a cache line) up to kRowCopyMaxLabels
// n_occurrences: the attribute occurrences of the corpus to be scored.
struct LayerWeights {
  const double* theta = nullptr;
  UninitializedBuffer padded;  // every padded row is written whole
  const double* attribute_rows = nullptr;
  int64_t row_stride = 0;
  UninitializedBuffer row_copy;
  LayerWeights(const Layout& layout, const double* theta, int64_t n_occurrences,
               int n_threads = 1);
};

// E[t - tok_begin][b] = Σ_k X[t, a_k] W[a_k, b] for tokens [tok_begin, tok_end).
//   emissions: [(tok_end - tok_begin)][S], overwritten
void score_tokens(const Corpus& corpus, int64_t tok_begin, int64_t tok_end,
                  const Layout& layout, const LayerWeights& weights, double* emissions);

// grad_W[a, b] += Σ_{t in chunk} X[t, a] ∂E[t, b] for the chunk's attribute
// slot i (one attribute: threads on distinct slots write distinct entries),
// the row zeroed first where the chunk is the attribute's first.
//   d_emissions: [chunk tokens][S], the chunk's residual rows, readable for
//                padded_width(S) - S doubles past the last row (padded rows
//                are read whole; what lies past a row is ignored)
void back_project_attribute(const Corpus& corpus, const ChunkIndex& chunk, size_t i,
                            const Layout& layout, const double* d_emissions,
                            double* grad_weights);

}  // namespace sscrf
