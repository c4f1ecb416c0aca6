// Chunking of a corpus and the per-chunk attribute -> token index.
#include "layer/corpus.hpp"

#include <algorithm>

namespace sscrf {

void Corpus::build_chunks() const {
  chunks_.clear();
  std::vector<int64_t> position(n_attributes, -1);  // attribute -> slot, reset per chunk
  std::vector<uint8_t> seen(n_attributes, 0);         // in an earlier chunk
  int64_t seq = 0;
  while (seq < n_sequences) {
    Chunk ch;
    ch.seq_begin = seq;
    ch.tok_begin = offsets[seq];
    ch.group_bounds.push_back(seq);
    int64_t group_start_tok = offsets[seq];
    do {
      ++seq;
      if (offsets[seq] - group_start_tok >= kGroupTokens) {
        ch.group_bounds.push_back(seq);
        group_start_tok = offsets[seq];
      }
    } while (seq < n_sequences && offsets[seq + 1] - ch.tok_begin <= chunk_tokens);
    if (ch.group_bounds.back() != seq) ch.group_bounds.push_back(seq);
    ch.seq_end = seq;
    ch.tok_end = offsets[seq];

    // Counting sort of the chunk's (attribute, token) pairs by attribute.
    const int64_t k0 = indptr[ch.tok_begin], k1 = indptr[ch.tok_end];
    for (int64_t k = k0; k < k1; ++k) {
      const int32_t a = indices[k];
      if (position[a] < 0) {
        position[a] = 0;
        ch.attributes.push_back(a);
      }
      ++position[a];
    }
    std::sort(ch.attributes.begin(), ch.attributes.end());
    ch.attr_ptr.resize(ch.attributes.size() + 1);
    ch.attr_ptr[0] = 0;
    for (size_t i = 0; i < ch.attributes.size(); ++i) {
      const int32_t a = ch.attributes[i];
      ch.attr_ptr[i + 1] = ch.attr_ptr[i] + position[a];
      position[a] = ch.attr_ptr[i];  // now the write cursor
    }
    ch.token.resize(k1 - k0);
    if (!values.empty()) ch.value.resize(k1 - k0);
    for (int64_t t = ch.tok_begin; t < ch.tok_end; ++t) {
      for (int64_t k = indptr[t]; k < indptr[t + 1]; ++k) {
        const int64_t slot = position[indices[k]]++;
        ch.token[slot] = static_cast<int32_t>(t - ch.tok_begin);
        if (!values.empty()) ch.value[slot] = values[k];
      }
    }
    ch.first.resize(ch.attributes.size());
    for (size_t i = 0; i < ch.attributes.size(); ++i) {
      const int32_t a = ch.attributes[i];
      position[a] = -1;
      ch.first[i] = !seen[a];
      seen[a] = 1;
    }

    const int64_t n_slots = static_cast<int64_t>(ch.attributes.size());
    const int64_t target =
        std::max(kMinBlockWork, ((k1 - k0) + kSlotWork * n_slots) / kBlocksPerChunk);
    ch.slot_blocks.push_back(0);
    int64_t work = 0;
    for (int64_t i = 0; i < n_slots; ++i) {
      work += ch.attr_ptr[i + 1] - ch.attr_ptr[i] + kSlotWork;
      if (work >= target || i + 1 == n_slots) {
        ch.slot_blocks.push_back(i + 1);
        work = 0;
      }
    }
    chunks_.push_back(std::move(ch));
  }
  absent_attributes_.clear();
  for (int32_t a = 0; a < n_attributes; ++a)
    if (!seen[a]) absent_attributes_.push_back(a);
}

}  // namespace sscrf
