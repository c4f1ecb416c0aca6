// Template expansion, factorised: column values interned to small ints, each
// template's cells combined into an integer tuple per token, and an attribute
// string built and looked up once per distinct tuple of a template, not once
// per token (CoNLL-2000 train: 4.0M (token, template) entries, 0.34M
// distinct attributes).
#include "features/template_expansion.hpp"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "runtime/errors.hpp"
#include "runtime/parallel.hpp"
#include "runtime/sorting_network.hpp"

namespace sscrf {

namespace {

// Tokens per slice times templates: the per-entry arrays of a slice
// (8 bytes an entry) stay near 32 MB whatever the template count.
constexpr int64_t kSliceEntries = int64_t(1) << 22;
// Cells a template may have (the binding refuses more).
constexpr int kMaxCells = 32;
// Tokens per work item of the per-token passes.
constexpr int64_t kBlockTokens = 4096;

inline uint64_t mix(uint64_t h) {
  // splitmix64's finaliser: every input bit moves every output bit
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  h ^= h >> 31;
  return h;
}

// Sorts the ids of tokens [a, a + lanes) of a slice (entry: [J][n], J <=
// kSortWidth) and writes each token's J ids, ascending, to rows[(a + l) * J ...].
void sort_token_ids(const std::vector<std::pair<int, int>>& network, const int32_t* entry,
                    int64_t n, int64_t J, int64_t a, int lanes, int32_t* rows) {
  int32_t v[kSortWidth][kSortLanes];
  for (int64_t j = 0; j < J; ++j) {
    const int32_t* from = entry + j * n + a;
    for (int l = 0; l < kSortLanes; ++l) v[j][l] = l < lanes ? from[l] : 0;
  }
  sort_lanes(network, v);
  for (int l = 0; l < lanes; ++l) {
    int32_t* row = rows + (a + l) * J;
    for (int64_t j = 0; j < J; ++j) row[j] = v[j][l];
  }
}

// Distinct tuples of m value ids, numbered 0, 1, ... in insertion order:
// through a direct table indexed by the tuple's mixed-radix number when the
// tuple space is small (every one-cell template; POS n-grams: 48^3 tuples
// for CoNLL-2000's POS trigrams), else an open-addressing hash table.
class TupleMap {
 public:
  // Tuples whose space is at most this are numbered through a direct table
  // (4 bytes a tuple: 1 MB, about an L2 cache).
  static constexpr int64_t kDirectMax = int64_t(1) << 18;

  // Direct when the tuple space is at most min(kDirectMax, direct_limit).
  void reset(const std::vector<int64_t>& radices, int64_t direct_limit) {
    const int64_t most = std::min(kDirectMax, direct_limit);
    m_ = static_cast<int>(radices.size());
    size_ = 0;
    keys_.clear();
    slots_.clear();
    stride_.assign(m_, 0);
    int64_t space = 1;
    for (int i = m_ - 1; i >= 0 && space <= most; --i) {
      stride_[i] = space;
      space *= std::max<int64_t>(radices[i], 1);
    }
    direct_.assign(space <= most ? static_cast<size_t>(space) : 0, -1);
  }
  bool direct() const { return !direct_.empty(); }
  int32_t size() const { return size_; }
  const uint32_t* key(int32_t e) const { return keys_.data() + static_cast<int64_t>(e) * m_; }

  uint64_t hash(const uint32_t* key) const {
    uint64_t h = 0x9E3779B97F4A7C15ULL;
    int i = 0;
    for (; i + 1 < m_; i += 2) h = mix(h ^ (uint64_t(key[i]) << 32 | key[i + 1]));
    if (i < m_) h = mix(h ^ key[i]);
    return h;
  }
  void prefetch(uint64_t h) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[h & (slots_.size() - 1)]);
  }

  // A hashed map: the number of `key` (whose hash is h), added at the end
  // when absent (`added`).
  int32_t insert(const uint32_t* key, uint64_t h, bool& added) {
    added = false;
    if (2 * (static_cast<size_t>(size_) + 1) > slots_.size()) grow();
    const size_t mask = slots_.size() - 1;
    const uint64_t tag = h >> 32;
    for (size_t s = h & mask;; s = (s + 1) & mask) {
      const uint64_t slot = slots_[s];
      if (slot == 0) {
        slots_[s] = tag << 32 | static_cast<uint64_t>(size_ + 1);
        added = true;
        return add(key);
      }
      if ((slot >> 32) == tag) {
        const int32_t e = static_cast<int32_t>((slot & 0xFFFFFFFFu) - 1);
        if (std::equal(key, key + m_, this->key(e))) return e;
      }
    }
  }

  // A direct map: the number of the tuple whose mixed-radix number is `at`,
  // -1 until set to add(key); the weight of each cell in that number.
  int32_t& direct_entry(int64_t at) { return direct_[at]; }
  const int64_t* strides() const { return stride_.data(); }
  int32_t add(const uint32_t* key) {
    if (size_ == INT32_MAX) throw InputError("more than 2^31 - 1 distinct attributes");
    keys_.insert(keys_.end(), key, key + m_);
    return size_++;
  }

 private:
  void grow() {
    std::vector<uint64_t> slots(std::max<size_t>(16, 2 * slots_.size()), 0);
    const size_t mask = slots.size() - 1;
    for (int32_t e = 0; e < size_; ++e) {
      const uint64_t h = hash(key(e));
      size_t s = h & mask;
      while (slots[s] != 0) s = (s + 1) & mask;
      slots[s] = (h >> 32) << 32 | static_cast<uint64_t>(e + 1);
    }
    slots_.swap(slots);
  }
  int m_ = 0;
  int32_t size_ = 0;
  std::vector<uint32_t> keys_;
  std::vector<uint64_t> slots_;  // tag << 32 | (entry + 1); 0 = empty
  std::vector<int64_t> stride_;  // [m] direct: the mixed radix
  std::vector<int32_t> direct_;  // direct: tuple number -> entry, -1 = absent
};

// A column's distinct values: ids 0 .. n_pads - 1 are CRF++'s pads (a real
// value spelled like a pad shares its id, as it shares its string).
struct alignas(64) ColumnValues {
  std::vector<uint32_t> id;      // [N] value id of each token
  std::vector<int64_t> first;    // [values] a token holding the value; -1 - k for pad k
};

// One template's state over the whole call.
// One template's state in a slice. Each is written by one thread while its
// neighbours are written by others: on a cache line of its own (two threads
// were slower than one while the states shared lines).
struct alignas(64) TemplateState {
  std::vector<std::pair<int32_t, int32_t>> cells;  // (row, slot) in piece order
  std::vector<int64_t> radices;    // [cells] value count of each cell's column
  TupleMap map;                    // the slice's distinct tuples
  std::vector<int64_t> first;      // [tuples] first token (in the slice)
  std::vector<int64_t> tokens;     // [tuples] tokens holding the tuple (a fit's counts)
  std::vector<int32_t> gid;        // [tuples] attribute id, -1 absent
  // grow: the tuples whose attribute the index lacks: tuple, key, hash
  std::vector<int32_t> fresh;
  std::string fresh_keys;
  std::vector<int64_t> fresh_ends;
  std::vector<uint64_t> fresh_hash;
  std::string_view fresh_key(size_t k) const {
    const int64_t begin = k ? fresh_ends[k - 1] : 0;
    return {fresh_keys.data() + begin, static_cast<size_t>(fresh_ends[k] - begin)};
  }
};

// The per-entry arrays of a slice (see expand_templates).
struct SliceScratch {
  std::vector<int32_t> entry;
  std::vector<int32_t> rows;
};

void intern_column(const ColumnBytes& c, int64_t N, const std::vector<std::string>& pads,
                   ColumnValues& out) {
  AttributeIndex table;
  bool added;
  for (size_t k = 0; k < pads.size(); ++k) {
    table.insert(pads[k], AttributeIndex::hash(pads[k]), added);
    out.first.push_back(-1 - static_cast<int64_t>(k));
  }
  out.id.resize(N);
  for (int64_t t = 0; t < N; ++t) {
    const std::string_view v(c.data + c.offsets[t], static_cast<size_t>(c.offsets[t + 1] - c.offsets[t]));
    const int32_t id = table.insert(v, AttributeIndex::hash(v), added);
    if (added) out.first.push_back(t);
    out.id[t] = static_cast<uint32_t>(id);
  }
}

// Ids with count[id] >= min_freq, the largest counts first, ties by
// ascending id (numpy's stable argsort of -count), by a counting sort.
std::vector<int64_t> frequency_order(const std::vector<int64_t>& count, int64_t min_freq) {
  int64_t top = 0;
  for (const int64_t c : count) top = std::max(top, c);
  const int64_t low = std::max<int64_t>(min_freq, 0);
  // at[c]: where the next id of count c goes; larger counts first
  std::vector<int64_t> at(static_cast<size_t>(std::max<int64_t>(top + 1, 1)), 0);
  for (const int64_t c : count)
    if (c >= low) ++at[c];
  int64_t kept = 0;
  for (int64_t c = top; c >= low; --c) {
    const int64_t ids = at[c];
    at[c] = kept;
    kept += ids;
  }
  std::vector<int64_t> order(static_cast<size_t>(kept));
  for (size_t id = 0; id < count.size(); ++id)
    if (count[id] >= low) order[at[count[id]]++] = static_cast<int64_t>(id);
  return order;
}

// The value id at token u of a column (`ids`) for the sentence [s0, s1):
// past the sentence, CRF++'s pad there ("_B-k" before it: id k - 1; "_B+k"
// after it: id before + k - 1, `before` pads coming first).
inline uint32_t cell_value(const uint32_t* ids, int before, int64_t u, int64_t s0, int64_t s1) {
  if (u < s0) return static_cast<uint32_t>(s0 - u - 1);
  if (u >= s1) return static_cast<uint32_t>(before + (u - s1));
  return ids[u];
}

// Numbers a template's tuples through its direct map (in cache), a token
// at a time as they come, its cell count a constant (M cells; 0: any):
// the numbers and first tokens that inserting them in token order gives,
// without the hashed path's batches (CoNLL-2000's 19 default templates are
// numbered in 16 ms rather than 26).
//   entry: [slice tokens] the tuple number of each token of the slice
template <int M>
void number_direct(TemplateState& st, const std::vector<ColumnValues>& values, int before,
                   const int64_t* sentence_offsets, int64_t s_begin, int64_t s_end,
                   int32_t* entry) {
  const int m = M > 0 ? M : static_cast<int>(st.cells.size());
  const int64_t* stride = st.map.strides();
  const uint32_t* column[kMaxCells];
  int32_t row[kMaxCells];
  for (int i = 0; i < m; ++i) {
    column[i] = values[st.cells[i].second].id.data();
    row[i] = st.cells[i].first;
  }
  const int64_t t0 = sentence_offsets[s_begin];
  uint32_t key[kMaxCells];
  for (int64_t s = s_begin; s < s_end; ++s) {
    const int64_t s0 = sentence_offsets[s], s1 = sentence_offsets[s + 1];
    for (int64_t t = s0; t < s1; ++t) {
      int64_t at = 0;
      for (int i = 0; i < m; ++i) {
        key[i] = cell_value(column[i], before, t + row[i], s0, s1);
        at += stride[i] * key[i];
      }
      int32_t& number = st.map.direct_entry(at);
      if (number < 0) {
        number = st.map.add(key);
        st.first.push_back(t - t0);
      }
      entry[t - t0] = number;
    }
  }
}

// Inserts the new tuples' keys into the index in `order`; their ids go to
// gid, and with new_keys the keys added to out. Returns whether a key was
// there already (a string made by two (template, tuple) pairs).
bool insert_in_order(const std::vector<std::pair<int32_t, int32_t>>& order, bool new_keys,
                     AttributeIndex& index, std::vector<TemplateState>& state, TemplateCsr& out) {
  bool shared = false;
  for (size_t i = 0; i < order.size(); ++i) {
    if (i + 8 < order.size()) index.prefetch(state[order[i + 8].first].fresh_hash[order[i + 8].second]);
    const auto [j, k] = order[i];
    TemplateState& st = state[j];
    const std::string_view key = st.fresh_key(k);
    bool added;
    st.gid[st.fresh[k]] = index.insert(key, st.fresh_hash[k], added);
    shared |= !added;
    if (added && new_keys) {
      out.new_keys.append(key);
      out.new_ends.push_back(static_cast<int64_t>(out.new_keys.size()));
    }
  }
  return shared;
}

}  // namespace

void expand_templates(const std::vector<std::vector<TemplatePiece>>& templates,
                      const std::vector<ColumnBytes>& columns, const int64_t* sentence_offsets,
                      int64_t n_sentences, AttributeIndex& index, bool grow, bool new_keys,
                      int n_threads, int64_t slice_entries, TemplateCsr& out,
                      FrequencyOrder* fit) {
  const int64_t J = static_cast<int64_t>(templates.size());
  const int64_t N = sentence_offsets[n_sentences];
  out.indptr.assign(N + 1, 0);
  out.indices.clear();
  out.values.clear();
  out.new_keys.clear();
  out.new_ends.clear();
  if (fit) {
    fit->applied = false;
    fit->order.clear();
  }
  // a fit counts tuples unless the index already holds attributes
  const bool fresh_fit = fit && grow && index.size() == 0;
  if (N == 0 || J == 0) {
    if (fresh_fit) fit->applied = true;  // no attributes: nothing to order
    return;
  }

  int before = 0, after = 0;
  for (const auto& pieces : templates)
    for (const auto& p : pieces)
      if (p.slot >= 0) {
        before = std::max(before, -p.row);
        after = std::max(after, p.row);
      }
  std::vector<std::string> pads;
  for (int k = 1; k <= before; ++k) pads.push_back("_B-" + std::to_string(k));
  for (int k = 1; k <= after; ++k) pads.push_back("_B+" + std::to_string(k));

  ExceptionCarrier carrier;
  const int64_t n_columns = static_cast<int64_t>(columns.size());
  std::vector<ColumnValues> values(n_columns);
  int nt = effective_threads(n_threads, n_columns);
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
  for (int64_t c = 0; c < n_columns; ++c)
    carrier.run([&] { intern_column(columns[c], N, pads, values[c]); });
  carrier.rethrow();

  std::vector<TemplateState> state(J);
  for (int64_t j = 0; j < J; ++j) {
    for (const auto& p : templates[j])
      if (p.slot >= 0) state[j].cells.emplace_back(p.row, p.slot);
    for (const auto& cell : state[j].cells)
      state[j].radices.push_back(static_cast<int64_t>(values[cell.second].first.size()));
  }

  // appends the string of value v of column `slot`
  auto append_value = [&](std::string& s, int32_t slot, uint32_t v) {
    const int64_t f = values[slot].first[v];
    if (f < 0) {
      s += pads[-1 - f];
      return;
    }
    const ColumnBytes& c = columns[slot];
    s.append(c.data + c.offsets[f], static_cast<size_t>(c.offsets[f + 1] - c.offsets[f]));
  };

  const int64_t slice_target =
      std::max<int64_t>(1, (slice_entries > 0 ? slice_entries : kSliceEntries) / J);
  // A slice's per-entry arrays are kept by the calling thread between calls
  // (2 x 4 bytes x kSliceEntries at most, 32 MB): a 16 MB buffer that malloc
  // maps afresh is 4,096 page faults when first written, 20 ms of a 148 ms
  // fit of CoNLL-2000.
  thread_local SliceScratch scratch;
  std::vector<int32_t>& entry = scratch.entry;  // [J][slice tokens] tuple number of (template, token)
  std::vector<int32_t>& rows = scratch.rows;    // [slice tokens][J] sorted attribute ids
  std::vector<int32_t> row_nnz;
  std::vector<int64_t> bucket;     // counting sort of new attributes by first token
  std::vector<std::pair<int32_t, int32_t>> order;
  const std::vector<std::pair<int, int>> network =
      sorting_network(static_cast<int>(std::min<int64_t>(J, kSortWidth)));
  bool any_repeats = false;
  for (int64_t s_begin = 0; s_begin < n_sentences;) {
    // a slice of whole sentences
    int64_t s_end = s_begin + 1;
    while (s_end < n_sentences && sentence_offsets[s_end] - sentence_offsets[s_begin] < slice_target)
      ++s_end;
    const int64_t t0 = sentence_offsets[s_begin], t1 = sentence_offsets[s_end];
    const int64_t n = t1 - t0;
    entry.resize(J * n);

    // tuples of each template at each token, and the strings of new tuples
    nt = effective_threads(n_threads, J);
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
    for (int64_t j = 0; j < J; ++j)
      carrier.run([&] {
        TemplateState& st = state[j];
        const int m = static_cast<int>(st.cells.size());
        // a hashed map's keys go a batch at a time: hashed and their slots
        // prefetched, then inserted in order, so that the misses overlap
        constexpr int kBatch = 16;
        uint32_t keys[kBatch][kMaxCells];
        uint64_t hashes[kBatch];
        int64_t batch_token[kBatch];
        int batched = 0;
        // Tuples are numbered afresh in every slice, so that what a slice
        // holds is bounded by its entries (1,000 templates over 32,768
        // distinct words would otherwise keep 32M tuples); a direct table
        // stays within a few times the slice's tokens.
        st.map.reset(st.radices, 4 * n);
        st.first.clear();
        const bool direct = st.map.direct();
        int32_t* ej = entry.data() + j * n;
        auto flush = [&] {
          for (int b = 0; b < batched; ++b) {
            bool added;
            ej[batch_token[b]] = st.map.insert(keys[b], hashes[b], added);
            if (added) st.first.push_back(batch_token[b]);
          }
          batched = 0;
        };
        // A direct map is in cache: no batches, and 1-3 cells (every
        // default template) unrolled.
        if (direct && m == 1) {
          number_direct<1>(st, values, before, sentence_offsets, s_begin, s_end, ej);
        } else if (direct && m == 2) {
          number_direct<2>(st, values, before, sentence_offsets, s_begin, s_end, ej);
        } else if (direct && m == 3) {
          number_direct<3>(st, values, before, sentence_offsets, s_begin, s_end, ej);
        } else if (direct) {
          number_direct<0>(st, values, before, sentence_offsets, s_begin, s_end, ej);
        } else {
          for (int64_t s = s_begin; s < s_end; ++s) {
            const int64_t s0 = sentence_offsets[s], s1 = sentence_offsets[s + 1];
            for (int64_t t = s0; t < s1; ++t) {
              uint32_t* key = keys[batched];
              for (int i = 0; i < m; ++i)
                key[i] = cell_value(values[st.cells[i].second].id.data(), before,
                                    t + st.cells[i].first, s0, s1);
              batch_token[batched] = t - t0;
              hashes[batched] = st.map.hash(key);
              st.map.prefetch(hashes[batched]);
              if (++batched == kBatch) flush();
            }
          }
          flush();
        }
        if (fresh_fit) {
          // a fit's counts, in a pass of their own: the numbering loop above
          // is a transform's too
          st.tokens.assign(static_cast<size_t>(st.map.size()), 0);
          for (int64_t a = 0; a < n; ++a) ++st.tokens[ej[a]];
        }
        // Each tuple's attribute string, looked up a batch at a time (the
        // strings of a batch only, unless the index lacks them and grows).
        const int32_t n_tuples = st.map.size();
        st.gid.resize(n_tuples);
        st.fresh.clear();
        st.fresh_keys.clear();
        st.fresh_ends.clear();
        st.fresh_hash.clear();
        constexpr int32_t kStrings = 1024;
        std::string batch_keys;
        std::vector<int64_t> batch_ends(kStrings);
        std::vector<uint64_t> batch_hash(kStrings);
        for (int32_t k0 = 0; k0 < n_tuples; k0 += kStrings) {
          const int32_t nb = std::min(kStrings, n_tuples - k0);
          batch_keys.clear();
          for (int32_t k = 0; k < nb; ++k) {
            const uint32_t* tuple = st.map.key(k0 + k);
            const size_t begin = batch_keys.size();
            int i = 0;
            for (const auto& p : templates[j]) {
              if (p.slot < 0) batch_keys += p.literal;
              else append_value(batch_keys, p.slot, tuple[i++]);
            }
            batch_ends[k] = static_cast<int64_t>(batch_keys.size());
            batch_hash[k] = AttributeIndex::hash({batch_keys.data() + begin, batch_keys.size() - begin});
          }
          // No thread writes the index now. Each lookup misses the cache
          // twice (slot, then entry): both are fetched some keys ahead.
          for (int32_t k = 0; k < nb; ++k) {
            if (k + 16 < nb) index.prefetch(batch_hash[k + 16]);
            if (k + 8 < nb) index.prefetch_entry(batch_hash[k + 8]);
            const int64_t begin = k ? batch_ends[k - 1] : 0;
            const std::string_view key(batch_keys.data() + begin,
                                       static_cast<size_t>(batch_ends[k] - begin));
            const int32_t id = index.find(key, batch_hash[k]);
            st.gid[k0 + k] = id;
            if (id < 0 && grow) {
              st.fresh.push_back(k0 + k);
              st.fresh_keys.append(key);
              st.fresh_ends.push_back(static_cast<int64_t>(st.fresh_keys.size()));
              st.fresh_hash.push_back(batch_hash[k]);
            }
          }
        }
      });
    carrier.rethrow();

    bool shared = false;  // a new attribute string made by two (template, tuple) pairs
    // A fit of the whole corpus into an empty index: every tuple is new, and
    // is its own attribute unless two make one string (found as they go in).
    const bool whole_fit = fresh_fit && s_begin == 0 && s_end == n_sentences;
    // The fit's order if no string is made twice (positions in `order` below)
    std::vector<int64_t> predicted;
    if (grow) {
      // Attributes new to the index get ids in order of first occurrence:
      // by token, then template (a counting sort on the token).
      bucket.assign(n + 1, 0);
      size_t new_bytes = 0;
      for (int64_t j = 0; j < J; ++j) {
        const TemplateState& st = state[j];
        for (const int32_t e : st.fresh) ++bucket[st.first[e] + 1];
        new_bytes += st.fresh_keys.size();
      }
      for (int64_t t = 0; t < n; ++t) bucket[t + 1] += bucket[t];
      order.resize(bucket[n]);
      for (int64_t j = 0; j < J; ++j) {
        const TemplateState& st = state[j];
        for (size_t k = 0; k < st.fresh.size(); ++k)
          order[bucket[st.first[st.fresh[k]]]++] = {static_cast<int32_t>(j), static_cast<int32_t>(k)};
      }
      index.reserve(order.size(), new_bytes);
      auto insert_all = [&] {
        shared = insert_in_order(order, new_keys, index, state, out);
      };
      const int pair = effective_threads(n_threads, 2);
      if (whole_fit && fit->final_keys && pair == 2) {
        // Attribute i will be tuple order[i], its tokens the tuple's, unless a
        // string is made twice (found as the keys go in): the final keys are
        // known now, and given to the caller on this thread while another
        // fills the index (a fit of CoNLL-2000 on two threads: 86 -> 72 ms).
        // One thread counts through the ids afterwards instead, which is
        // 10 ms cheaper than through `order` first.
        std::vector<int64_t> count(order.size());
        for (size_t i = 0; i < order.size(); ++i) {
          const TemplateState& st = state[order[i].first];
          count[i] = st.tokens[st.fresh[order[i].second]];
        }
        predicted = frequency_order(count, fit->min_freq);
        std::vector<std::string_view> keys(predicted.size());
        for (size_t r = 0; r < predicted.size(); ++r)
          keys[r] = state[order[predicted[r]].first].fresh_key(order[predicted[r]].second);
        ExceptionCarrier both;
#pragma omp parallel num_threads(pair)
        {
          if (team_size() == 1) {  // the runtime gave one thread
            both.run(insert_all);
            both.run([&] { fit->final_keys(keys); });
          } else if (thread_id() == 0) {
            both.run([&] { fit->final_keys(keys); });
          } else {
            both.run(insert_all);
          }
        }
        both.rethrow();
        fit->keys_given = !shared;
      } else {
        insert_all();
      }
      for (auto& st : state) {
        std::string().swap(st.fresh_keys);
        std::vector<int64_t>().swap(st.fresh_ends);
        std::vector<uint64_t>().swap(st.fresh_hash);
      }
    }

    if (whole_fit && !shared) {
      if (!fit->keys_given) {
        // Each attribute is one tuple's: its tokens are the tuple's.
        std::vector<int64_t> count(static_cast<size_t>(index.size()), 0);
        for (const auto& st : state)
          for (size_t e = 0; e < st.gid.size(); ++e) count[st.gid[e]] += st.tokens[e];
        predicted = frequency_order(count, fit->min_freq);
      }
      // without a shared string, tuple order[i] got index id i
      fit->order = std::move(predicted);
      std::vector<int32_t> final_id(static_cast<size_t>(index.size()), -1);
      for (size_t i = 0; i < fit->order.size(); ++i)
        final_id[fit->order[i]] = static_cast<int32_t>(i);
      for (auto& st : state)
        for (auto& g : st.gid) g = final_id[g];
      fit->applied = true;
    }

    // tuple numbers to attribute ids, a template at a time (its ids stay in cache)
    nt = effective_threads(n_threads, J);
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
    for (int64_t j = 0; j < J; ++j) {
      int32_t* ej = entry.data() + j * n;
      const int32_t* gid = state[j].gid.data();
      for (int64_t a = 0; a < n; ++a) ej[a] = gid[ej[a]];
    }

    // each token's ids, sorted, repeats counted
    const int64_t n_blocks = (n + kBlockTokens - 1) / kBlockTokens;
    if (fit && fit->applied && fit->order.size() == static_cast<size_t>(index.size())) {
      // A fit in frequency order that kept every attribute: J distinct ids
      // a token (no string made twice), sorted straight into the CSR.
      out.indices.resize(J * n);
      for (int64_t a = 0; a <= n; ++a) out.indptr[a] = a * J;
      nt = effective_threads(n_threads, n_blocks);
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
      for (int64_t b = 0; b < n_blocks; ++b) {
        const int64_t a0 = b * kBlockTokens, a1 = std::min(n, a0 + kBlockTokens);
        if (J <= kSortWidth) {
          for (int64_t a = a0; a < a1; a += kSortLanes)
            sort_token_ids(network, entry.data(), n, J, a,
                           static_cast<int>(std::min<int64_t>(kSortLanes, a1 - a)),
                           out.indices.data());
          continue;
        }
        for (int64_t a = a0; a < a1; ++a) {
          int32_t* row = out.indices.data() + a * J;
          for (int64_t j = 0; j < J; ++j) row[j] = entry[j * n + a];
          std::sort(row, row + J);
        }
      }
      s_begin = s_end;
      continue;
    }
    rows.resize(J * n);
    row_nnz.resize(n);
    std::vector<char> block_repeats(n_blocks, 0);
    nt = effective_threads(n_threads, n_blocks);
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
    for (int64_t b = 0; b < n_blocks; ++b) {
      const int64_t a0 = b * kBlockTokens, a1 = std::min(n, a0 + kBlockTokens);
      if (J <= kSortWidth)
        for (int64_t a = a0; a < a1; a += kSortLanes)
          sort_token_ids(network, entry.data(), n, J, a,
                         static_cast<int>(std::min<int64_t>(kSortLanes, a1 - a)), rows.data());
      for (int64_t a = a0; a < a1; ++a) {
        int32_t* row = rows.data() + a * J;
        if (J > kSortWidth) {
          for (int64_t j = 0; j < J; ++j) row[j] = entry[j * n + a];
          std::sort(row, row + J);
        }
        int32_t count = 0;
        for (int64_t i = 0; i < J; ++i) {
          if (row[i] < 0) continue;
          if (i > 0 && row[i] == row[i - 1]) {
            block_repeats[b] = 1;
            continue;
          }
          ++count;
        }
        row_nnz[a] = count;
      }
    }
    const int64_t nnz0 = static_cast<int64_t>(out.indices.size());
    for (int64_t a = 0; a < n; ++a) out.indptr[t0 + a + 1] = out.indptr[t0 + a] + row_nnz[a];
    const bool repeats = std::find(block_repeats.begin(), block_repeats.end(), 1) != block_repeats.end();
    if (repeats && !any_repeats) {
      any_repeats = true;
      out.values.assign(nnz0, 1.0);
    }
    out.indices.resize(out.indptr[t1]);
    if (any_repeats) out.values.resize(out.indptr[t1]);
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
    for (int64_t b = 0; b < n_blocks; ++b) {
      const int64_t a0 = b * kBlockTokens, a1 = std::min(n, a0 + kBlockTokens);
      for (int64_t a = a0; a < a1; ++a) {
        const int32_t* row = rows.data() + a * J;
        int64_t k = out.indptr[t0 + a];
        for (int64_t i = 0; i < J; ++i) {
          if (row[i] < 0) continue;
          if (i > 0 && row[i] == row[i - 1]) {
            out.values[k - 1] += 1.0;
            continue;
          }
          out.indices[k] = row[i];
          if (any_repeats) out.values[k] = 1.0;
          ++k;
        }
      }
    }
    s_begin = s_end;
  }
}

bool is_ascii(const char* p, int64_t n) {
  uint64_t high = 0;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t word;
    std::memcpy(&word, p + i, 8);
    high |= word;
  }
  for (; i < n; ++i) high |= static_cast<unsigned char>(p[i]);
  return (high & 0x8080808080808080ULL) == 0;
}

bool is_utf8_with_surrogates(const char* p, int64_t n) {
  const auto* s = reinterpret_cast<const unsigned char*>(p);
  int64_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    int len;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
      cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > n) return false;
    for (int m = 1; m < len; ++m) {
      if ((s[i + m] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (s[i + m] & 0x3F);
    }
    // overlong forms and code points past U+10FFFF (surrogates are allowed)
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF))) return false;
    i += len;
  }
  return true;
}

}  // namespace sscrf
