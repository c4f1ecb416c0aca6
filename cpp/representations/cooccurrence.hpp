// Word x context co-occurrence counts over a corpus of word ids, for the
// word representations learned from unlabeled text (sscrf.representations).
#pragma once

#include <cstdint>
#include <vector>

namespace sscrf {

// The counts of (word, context) pairs within `window` tokens of each other
// in the same sentence. Sentence s is ids[offsets[s] : offsets[s+1]]; an id
// < 0 is a word outside the vocabulary: it holds its position but counts
// for nothing (ids must lie below n_words <= 2^30). A context is a word
// and its side (1: to the right), so that keys are
//   key = word << 32 | side << 31 | c,
// which do not change as a streamed vocabulary grows.
// `keys` comes out strictly increasing with `counts` (>= 1) alongside: the
// result is the same at any thread count (threads take blocks of sentences,
// sort their pairs, and the sorted runs are merged in block order).
void cooccurrence_counts(const int32_t* ids, const int64_t* offsets, int64_t n_sentences,
                         int window, int64_t n_words, int n_threads,
                         std::vector<int64_t>& keys, std::vector<int64_t>& counts);

// Adds two sorted count lists (keys strictly increasing): the union of the
// keys, counts summed. Merging one batch's counts into the running total.
void merge_counts(const int64_t* keys_a, const int64_t* counts_a, int64_t n_a,
                  const int64_t* keys_b, const int64_t* counts_b, int64_t n_b,
                  std::vector<int64_t>& keys, std::vector<int64_t>& counts);

}  // namespace sscrf
