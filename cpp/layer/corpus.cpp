// Chunking of a corpus and the per-chunk attribute -> token index.
#include "layer/corpus.hpp"

#include <algorithm>
#include <climits>

#include "runtime/errors.hpp"

namespace sscrf {

namespace {

// Sorts the distinct attributes `a` of a chunk, by a bitmap [n_attributes]
// (all zero, and again on return) where its words between the least and
// the greatest are fewer than the comparisons of a sort: a chunk of 32k
// tokens of 7 templates has 45k distinct attributes of 200k, and sorting
// them took most of the time of building its index.
void sort_attributes(std::vector<int32_t>& a, CachedVector<uint64_t>& bits) {
  if (a.size() < 2) return;
  const auto [lo, hi] = std::minmax_element(a.begin(), a.end());
  const int64_t w0 = *lo >> 6, w1 = (*hi >> 6) + 1;
  int64_t log2 = 1;
  while ((int64_t{1} << log2) < static_cast<int64_t>(a.size())) ++log2;
  if (w1 - w0 > static_cast<int64_t>(a.size()) * log2) {
    std::sort(a.begin(), a.end());
    return;
  }
  for (const int32_t x : a) bits[x >> 6] |= uint64_t{1} << (x & 63);
  size_t n = 0;
  for (int64_t w = w0; w < w1; ++w) {
    uint64_t word = bits[w];
    bits[w] = 0;
    while (word) {
      a[n++] = static_cast<int32_t>(w * 64 + __builtin_ctzll(word));
      word &= word - 1;
    }
  }
}

}  // namespace

void index_chunk(const Corpus& corpus, const Chunk& ch, ChunkIndexScratch& scratch,
                 ChunkIndex& out) {
  out.attributes.clear();
  out.slot_blocks.clear();
  // Counting sort of the chunk's (attribute, token) pairs by attribute.
  const int32_t* indices = corpus.indices.data();
  const int64_t k0 = corpus.indptr[ch.tok_begin], k1 = corpus.indptr[ch.tok_end];
  if (k1 - k0 > INT32_MAX)
    throw InputError("a chunk of more than 2^31 - 1 (token, attribute) entries: split its "
                     "sentence");
  // Without a branch on whether an attribute is new: a fifth of a chunk's
  // entries are, at random.
  if (scratch.seen.size() < static_cast<size_t>(k1 - k0)) scratch.seen.resize(k1 - k0);
  int32_t* seen = scratch.seen.data();
  size_t n_seen = 0;
  // Rare attributes' counters are cache misses, and the evaluation around
  // a build evicts them all: ask for those kAhead entries on.
  constexpr int64_t kAhead = 64;
  int32_t* pos = scratch.position.data();
  for (int64_t k = k0; k < k1; ++k) {
    if (k + kAhead < k1) __builtin_prefetch(pos + indices[k + kAhead], 1);
    const int32_t a = indices[k];
    seen[n_seen] = a;
    n_seen += pos[a]++ == 0;
  }
  out.attributes.assign(seen, seen + n_seen);
  sort_attributes(out.attributes, scratch.bits);
  const size_t n_slots = out.attributes.size();
  out.attr_ptr.resize(n_slots + 1);
  out.attr_ptr[0] = 0;
  for (size_t i = 0; i < n_slots; ++i) {
    const int32_t a = out.attributes[i];
    out.attr_ptr[i + 1] = out.attr_ptr[i] + pos[a];
    pos[a] = static_cast<int32_t>(out.attr_ptr[i]);  // now the write cursor
  }
  out.token.resize(k1 - k0);
  const bool has_values = !corpus.values.empty();
  out.value.resize(has_values ? k1 - k0 : 0);
  int32_t* token = out.token.data();
  for (int64_t t = ch.tok_begin; t < ch.tok_end; ++t) {
    const int32_t rel = static_cast<int32_t>(t - ch.tok_begin);
    const int64_t e0 = corpus.indptr[t], e1 = corpus.indptr[t + 1];
    for (int64_t k = e0; k < e1; ++k) {
      if (k + kAhead < k1) __builtin_prefetch(pos + indices[k + kAhead], 1);
      const int32_t slot = pos[indices[k]]++;
      token[slot] = rel;
      if (has_values) out.value[slot] = corpus.values[k];
    }
  }
  out.first.resize(n_slots);
  const int32_t* attributes = out.attributes.data();
  for (size_t i = 0; i < n_slots; ++i) {
    if (i + kAhead < n_slots) __builtin_prefetch(&corpus.first_chunk(attributes[i + kAhead]));
    const int32_t a = attributes[i];
    pos[a] = 0;
    out.first[i] = corpus.first_chunk(a) == ch.id;
  }

  const int64_t target =
      std::max(kMinBlockWork, ((k1 - k0) + kSlotWork * static_cast<int64_t>(n_slots)) /
                                  kBlocksPerChunk);
  out.slot_blocks.push_back(0);
  int64_t work = 0;
  for (size_t i = 0; i < n_slots; ++i) {
    work += out.attr_ptr[i + 1] - out.attr_ptr[i] + kSlotWork;
    if (work >= target || i + 1 == n_slots) {
      out.slot_blocks.push_back(static_cast<int64_t>(i) + 1);
      work = 0;
    }
  }
}

ChunkIndexScratch::ChunkIndexScratch(int32_t n_attributes)
    : position(static_cast<size_t>(n_attributes), 0),
      bits(static_cast<size_t>(n_attributes) / 64 + 1, 0) {}

void ChunkIndexer::build(const Chunk& ch) {
  if (ch.kept) return;
  if (!scratch_) scratch_ = std::make_unique<ChunkIndexScratch>(corpus_.n_attributes);
  index_chunk(corpus_, ch, *scratch_, own_);
}

void Corpus::build_chunks() const {
  chunks_.clear();
  first_chunk_.assign(static_cast<size_t>(n_attributes), -1);
  int64_t seq = 0;
  while (seq < n_sequences) {
    Chunk ch;
    ch.id = static_cast<int64_t>(chunks_.size());
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
    const int32_t id = static_cast<int32_t>(ch.id);
    for (int64_t k = indptr[ch.tok_begin]; k < indptr[ch.tok_end]; ++k)
      if (first_chunk_[indices[k]] < 0) first_chunk_[indices[k]] = id;
    chunks_.push_back(std::move(ch));
  }
  // The indices kept: the first chunks', while they fit the budget.
  const int64_t budget = kept_index_bytes >= 0 ? kept_index_bytes
                         : indices.viewed()    ? kViewedKeptIndexBytes
                                               : INT64_MAX;
  ChunkIndexScratch scratch(n_attributes);
  int64_t kept = 0;
  for (Chunk& ch : chunks_) {
    if (budget == 0) break;
    index_chunk(*this, ch, scratch, ch.index);
    kept += ch.index.bytes();
    if (kept > budget) {
      ch.index = ChunkIndex();
      break;
    }
    ch.index.attributes.shrink_to_fit();
    ch.index.slot_blocks.shrink_to_fit();
    ch.kept = true;
  }
  absent_attributes_.clear();
  for (int32_t a = 0; a < n_attributes; ++a)
    if (first_chunk_[a] < 0) absent_attributes_.push_back(a);
}

int64_t Corpus::n_back_projection_blocks() const {
  ChunkIndexer indexer(*this);
  int64_t n = 0;
  for (const Chunk& ch : chunks()) {
    indexer.build(ch);
    n += static_cast<int64_t>(indexer.of(ch).slot_blocks.size()) - 1;
  }
  return n;
}

int64_t Corpus::kept_index_size() const {
  int64_t n = 0;
  for (const Chunk& ch : chunks()) n += ch.kept ? ch.index.bytes() : 0;
  return n;
}

}  // namespace sscrf
