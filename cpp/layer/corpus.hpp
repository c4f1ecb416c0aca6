// A corpus as the kernels see it: a CSR attribute matrix over tokens, the
// sequence boundaries, optional labels, weights and label masks, and the
// fixed partition into chunks that makes evaluation deterministic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/parallel.hpp"

namespace sscrf {

// A vector whose large blocks come from and go back to the block cache
// (block_cache.hpp): scratch made in each evaluation then reuses the last
// evaluation's pages instead of faulting in zeroed new ones. (Not for the
// indices a corpus keeps: freed with it, they would wait in the cache.)
template <class T>
using CachedVector = std::vector<T, CacheLineAligned<T>>;

// A read-only array that owns its elements or views memory owned elsewhere
// (a memory-mapped corpus file, kept alive by Corpus::keep_alive), so that
// a corpus of 10^8 entries on disk is not copied into the process's
// anonymous memory. Not copyable: data() may point into owned_.
template <class T>
class Column {
 public:
  Column() = default;
  Column(const Column&) = delete;
  Column& operator=(const Column&) = delete;
  template <class It>
  void assign(It first, It last) {
    owned_.assign(first, last);
    data_ = owned_.data();
    size_ = owned_.size();
  }
  void view(const T* data, std::size_t n) {
    std::vector<T>().swap(owned_);
    data_ = data;
    size_ = n;
  }
  const T* data() const { return data_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Whether the elements are memory owned elsewhere.
  bool viewed() const { return data_ != nullptr && data_ != owned_.data(); }
  const T& operator[](std::size_t i) const { return data_[i]; }

 private:
  std::vector<T> owned_;
  const T* data_ = nullptr;
  std::size_t size_ = 0;
};

// A chunk's attribute -> occurrence index, for the back-projection Xᵀ·∂E by
// attribute: attribute attributes[i] occurs at the tokens
// token[attr_ptr[i] .. attr_ptr[i+1]) (relative to the chunk's tok_begin)
// with value[...].
struct ChunkIndex {
  std::vector<int32_t> attributes;  // ascending
  std::vector<int64_t> attr_ptr;
  std::vector<int32_t> token;
  std::vector<double> value;  // or empty when the corpus values are constant
  // first[i] = 1 when attributes[i] occurs in no earlier chunk: its
  // gradient row is zeroed there, while in cache, rather than by a pass
  // over the whole gradient before the first chunk.
  std::vector<uint8_t> first;
  // The back-projection's work items: slot ranges [slot_blocks[j],
  // slot_blocks[j+1]) of about equal work. A few frequent attributes hold
  // much of a chunk's occurrences, and they come first in attribute order:
  // fixed-size ranges left one range with a tenth of the work on CoNLL-2000,
  // which held 16 threads back.
  std::vector<int64_t> slot_blocks;
  // Bytes of the arrays' elements.
  int64_t bytes() const {
    return static_cast<int64_t>(attributes.size() * sizeof(int32_t) +
                                attr_ptr.size() * sizeof(int64_t) + token.size() * sizeof(int32_t) +
                                value.size() * sizeof(double) + first.size() +
                                slot_blocks.size() * sizeof(int64_t));
  }
};

// A run of whole sequences of at most kChunkTokens tokens (or one longer
// sequence). Chunks depend on the corpus only, never on the thread count.
struct Chunk {
  int64_t id = 0;                      // its position in Corpus::chunks()
  int64_t seq_begin = 0, seq_end = 0;  // sequences [seq_begin, seq_end)
  int64_t tok_begin = 0, tok_end = 0;  // tokens [tok_begin, tok_end)
  // Sequence indices cutting the chunk into work groups of about
  // kGroupTokens tokens: group g is [group_bounds[g], group_bounds[g+1]).
  std::vector<int64_t> group_bounds;
  // The chunk's index when the corpus keeps it (see
  // Corpus::kept_index_bytes), else empty and built per evaluation by a
  // ChunkIndexer: the same arrays either way.
  bool kept = false;
  ChunkIndex index;
};

// Default token budget of a chunk (DESIGN.md: "say 32k tokens"): few
// enough chunks that the two fork-joins per chunk cost little even when the
// threads share their cores with other work, small enough that a chunk's
// residual rows stay in the last-level cache.
constexpr int64_t kChunkTokens = 32768;
// With many labels a chunk's residual rows (tokens x S doubles) outgrow any
// cache and become an evaluation's largest scratch (78 MB at 300 labels):
// corpora for a model
// of S labels take chunks of at most kChunkResidualDoubles / S tokens (the
// same 32k up to 128 labels), at least kMinChunkTokens.
constexpr int64_t kChunkResidualDoubles = int64_t{1} << 22;
constexpr int64_t kMinChunkTokens = 1024;
inline int64_t chunk_tokens_for_labels(int64_t S) {
  const int64_t n = kChunkResidualDoubles / (S < 1 ? 1 : S);
  return n > kChunkTokens ? kChunkTokens : n < kMinChunkTokens ? kMinChunkTokens : n;
}
// Work groups of about kGroupTokens tokens: a chunk has a few hundred, so
// that the last groups to finish keep few of 16 threads waiting.
constexpr int64_t kGroupTokens = 128;
// A back-projection block holds about 1/kBlocksPerChunk of its chunk's
// work (occurrences, plus kSlotWork per attribute for its gradient row),
// but at least kMinBlockWork of it, so that dispatching blocks costs little.
constexpr int64_t kBlocksPerChunk = 512;
constexpr int64_t kSlotWork = 4;
constexpr int64_t kMinBlockWork = 256;
// The most bytes of chunk indices a corpus that views its attribute ids
// (a memory-mapped corpus file) keeps between evaluations; the other
// chunks' indices are built per evaluation, one at a time. Kept whole, the
// index takes about 4 bytes per entry: 360 MB at 10M tokens of 7 templates,
// more than the rest of the training's memory.
constexpr int64_t kViewedKeptIndexBytes = int64_t{32} << 20;

struct Corpus {
  int64_t n_tokens = 0;
  int64_t n_sequences = 0;
  int32_t n_attributes = 0;
  Column<int64_t> indptr;   // [n_tokens + 1]
  Column<int32_t> indices;  // [nnz] attribute ids
  // [nnz] attribute values, or empty when every value is constant_value
  // (binary features: 8 bytes per entry less to store and to stream)
  Column<double> values;
  double constant_value = 1.0;
  Column<int64_t> offsets;  // [n_sequences + 1] token offsets
  // Owner of the memory the columns above view, when they view (released
  // with the corpus); null when they own their elements.
  std::shared_ptr<const void> keep_alive;
  std::vector<int32_t> labels;   // [n_tokens] gold label ids, or empty
  std::vector<double> weights;   // [n_sequences] sequence weights, or empty (all 1)
  std::vector<uint8_t> mask;     // [n_tokens][mask_labels] allowed labels, or empty
  int mask_labels = 0;
  // [n_tokens][mask_labels][mask_labels] allowed transitions into each token
  // (y_{t-1}, y_t), or empty; the row of a sequence's first token is unused.
  std::vector<uint8_t> edge_mask;
  int64_t chunk_tokens = kChunkTokens;  // token budget of a chunk, >= 1
  // The most bytes of chunk indices kept between evaluations (chunks in
  // order while they fit; the others' are built per evaluation), or -1:
  // all of them when the corpus holds its attribute ids in memory (the
  // index is about as large, and memory grows with the tokens anyway),
  // kViewedKeptIndexBytes when it views them.
  int64_t kept_index_bytes = -1;

  double weight(int64_t seq) const { return weights.empty() ? 1.0 : weights[seq]; }
  const uint8_t* mask_at(int64_t token) const {
    return mask.empty() ? nullptr : &mask[token * mask_labels];
  }
  // The edge mask of the sequence starting at `first_token`, as [n-1][S][S].
  const uint8_t* edge_mask_from(int64_t first_token) const {
    return edge_mask.empty()
               ? nullptr
               : &edge_mask[(first_token + 1) * static_cast<int64_t>(mask_labels) * mask_labels];
  }
  // The chunks (with the indices kept), and the attributes below
  // n_attributes that occur in no token (their gradient rows are zeroed
  // before the chunks, no chunk writes them). What the objectives need and
  // the decoders do not (building them costs about as much as a Viterbi
  // pass), so they are built on first use, once, by whichever thread asks
  // first; the arrays above must be filled and validated by then.
  const std::vector<Chunk>& chunks() const {
    std::call_once(chunks_built_, [this] { build_chunks(); });
    return chunks_;
  }
  const std::vector<int32_t>& absent_attributes() const {
    chunks();
    return absent_attributes_;
  }
  // The id of the first chunk where attribute a occurs (-1: none).
  const int32_t& first_chunk(int32_t a) const { return first_chunk_[a]; }
  // Work items of the gradient's back-projection Xᵀ·∂E, over all chunks.
  int64_t n_back_projection_blocks() const;
  // Bytes of the chunk indices kept.
  int64_t kept_index_size() const;

 private:
  void build_chunks() const;
  mutable std::once_flag chunks_built_;
  mutable std::vector<Chunk> chunks_;
  mutable std::vector<int32_t> absent_attributes_;
  mutable std::vector<int32_t> first_chunk_;  // [n_attributes]
};

// What building a chunk's index needs of n_attributes: all zero between
// builds.
struct ChunkIndexScratch {
  explicit ChunkIndexScratch(int32_t n_attributes);
  CachedVector<int32_t> position;  // [n_attributes] occurrences, then write cursors
  CachedVector<uint64_t> bits;     // [n_attributes / 64 + 1] for sorting attributes
  CachedVector<int32_t> seen;      // the distinct attributes of a chunk, as found
};

// Builds chunk ch's index into `out`, reusing its arrays' memory. Throws
// InputError for a chunk of more than 2^31 - 1 entries.
void index_chunk(const Corpus& corpus, const Chunk& ch, ChunkIndexScratch& scratch,
                 ChunkIndex& out);

// Builds the index of chunks the corpus does not keep, one at a time, into
// its own arrays (scratch of one evaluation, reused chunk after chunk).
class ChunkIndexer {
 public:
  explicit ChunkIndexer(const Corpus& corpus) : corpus_(corpus) {}
  // Builds chunk ch's index here unless the corpus keeps it.
  void build(const Chunk& ch);
  // Chunk ch's index: the kept one, or the one build(ch) made last.
  const ChunkIndex& of(const Chunk& ch) const { return ch.kept ? ch.index : own_; }

 private:
  const Corpus& corpus_;
  std::unique_ptr<ChunkIndexScratch> scratch_;  // made by the first build
  ChunkIndex own_;
};

}  // namespace sscrf
