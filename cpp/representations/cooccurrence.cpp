// Co-occurrence counting: each thread sorts and run-length codes the pairs
// of its block of sentences; the runs are merged pairwise in block order.
#include "representations/cooccurrence.hpp"

#include <algorithm>
#include <utility>

#include "runtime/parallel.hpp"

namespace sscrf {

namespace {

// Sorted keys with duplicates collapsed into counts.
void run_length(std::vector<int64_t>& pairs, std::vector<int64_t>& keys,
                std::vector<int64_t>& counts) {
  std::sort(pairs.begin(), pairs.end());
  keys.clear();
  counts.clear();
  for (size_t i = 0; i < pairs.size();) {
    size_t j = i + 1;
    while (j < pairs.size() && pairs[j] == pairs[i]) ++j;
    keys.push_back(pairs[i]);
    counts.push_back(static_cast<int64_t>(j - i));
    i = j;
  }
  std::vector<int64_t>().swap(pairs);
}

}  // namespace

void merge_counts(const int64_t* ka, const int64_t* ca, int64_t na, const int64_t* kb,
                  const int64_t* cb, int64_t nb, std::vector<int64_t>& keys,
                  std::vector<int64_t>& counts) {
  keys.clear();
  counts.clear();
  keys.reserve(static_cast<size_t>(na + nb));
  counts.reserve(static_cast<size_t>(na + nb));
  int64_t i = 0, j = 0;
  while (i < na || j < nb) {
    if (j == nb || (i < na && ka[i] < kb[j])) {
      keys.push_back(ka[i]);
      counts.push_back(ca[i++]);
    } else if (i == na || kb[j] < ka[i]) {
      keys.push_back(kb[j]);
      counts.push_back(cb[j++]);
    } else {
      keys.push_back(ka[i]);
      counts.push_back(ca[i++] + cb[j++]);
    }
  }
}

void cooccurrence_counts(const int32_t* ids, const int64_t* offsets, int64_t n_sentences,
                         int window, int64_t n_words, int n_threads,
                         std::vector<int64_t>& keys, std::vector<int64_t>& counts) {
  const int64_t n_tokens = n_sentences > 0 ? offsets[n_sentences] - offsets[0] : 0;
  const int T = effective_threads(n_threads, std::max<int64_t>(1, n_sentences));
  // Blocks of about equal tokens, cut by the corpus and T; the merged
  // result does not depend on the cut.
  std::vector<int64_t> cut(T + 1, n_sentences);
  cut[0] = 0;
  for (int b = 1, s = 0; b < T; ++b) {
    const int64_t target = offsets[0] + n_tokens * b / T;
    while (s < n_sentences && offsets[s] < target) ++s;
    cut[b] = s;
  }
  std::vector<std::vector<int64_t>> block_keys(T), block_counts(T);
  ExceptionCarrier carrier;
#pragma omp parallel for num_threads(T) schedule(static, 1) if (T > 1)
  for (int b = 0; b < T; ++b) {
    carrier.run([&] {
      std::vector<int64_t> pairs;
      for (int64_t s = cut[b]; s < cut[b + 1]; ++s) {
        const int64_t lo = offsets[s], hi = offsets[s + 1];
        for (int64_t t = lo; t < hi; ++t) {
          const int64_t w = ids[t];
          if (w < 0) continue;
          const int64_t base = w << 32;
          for (int64_t u = std::max(lo, t - window); u < std::min(hi, t + window + 1); ++u) {
            const int64_t c = ids[u];
            if (u == t || c < 0) continue;
            pairs.push_back(base | (u > t ? int64_t{1} << 31 : 0) | c);
          }
        }
      }
      run_length(pairs, block_keys[b], block_counts[b]);
    });
  }
  carrier.rethrow();
  // pairwise merges in block order
  keys = std::move(block_keys[0]);
  counts = std::move(block_counts[0]);
  std::vector<int64_t> k2, c2;
  for (int b = 1; b < T; ++b) {
    merge_counts(keys.data(), counts.data(), static_cast<int64_t>(keys.size()),
                 block_keys[b].data(), block_counts[b].data(),
                 static_cast<int64_t>(block_keys[b].size()), k2, c2);
    std::vector<int64_t>().swap(block_keys[b]);
    std::vector<int64_t>().swap(block_counts[b]);
    std::swap(keys, k2);
    std::swap(counts, c2);
  }
}

}  // namespace sscrf
