// Where the linear layer meets the lattice: chunked, deterministic
// evaluation of a per-sequence objective over a corpus (DESIGN.md "Chunks,
// determinism, bounded memory"), and the parallel pass the decoders share.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "lattice/chain.hpp"
#include "layer/corpus.hpp"
#include "layer/linear_layer.hpp"
#include "runtime/dense_kernels.hpp"
#include "runtime/parallel.hpp"
#include "runtime/scratch.hpp"

namespace sscrf {

// The chain of n tokens whose emission rows [n][S] are `rows`, without masks.
inline Chain chain_over(const Layout& layout, const double* theta,
                        const TransitionFactors& factors, int64_t n, double* rows) {
  Chain c;
  c.n = n;
  c.S = layout.S;
  c.emissions = rows;
  c.transitions = theta + layout.transitions_offset();
  c.start = theta + layout.start_offset();
  c.end = theta + layout.end_offset();
  c.factors = &factors;
  return c;
}

// Scores the tokens [tb, te) of one sequence into rows [te - tb][S] (checked
// for overflow) and returns its chain, without masks.
inline Chain scored_chain(const Corpus& corpus, const Layout& layout,
                          const LayerWeights& weights, const TransitionFactors& factors,
                          int64_t tb, int64_t te, double* rows) {
  score_tokens(corpus, tb, te, layout, weights, rows);
  check_scores(rows, (te - tb) * layout.S);
  return chain_over(layout, weights.theta, factors, te - tb, rows);
}

// Zeroes the gradient entries that no chunk's back-projection writes: the
// rows of attributes absent from the corpus (those past its n_attributes
// too), T, start and end. Each other row is zeroed by the first chunk where
// its attribute occurs, so the gradient is not streamed through once more
// only to be zeroed (a dense model's gradient is tens of MB).
inline void zero_rows_no_chunk_writes(const Corpus& corpus, const Layout& layout, double* grad,
                                      int n_threads) {
  const std::vector<int32_t>& absent = corpus.absent_attributes();
  const int64_t n_absent = static_cast<int64_t>(absent.size());
  const int64_t tail = layout.row_ptr[std::min(corpus.n_attributes, layout.n_attributes)];
  const int64_t n_tail = layout.n_parameters() - tail;
  constexpr int64_t kBlock = 1 << 14;
  const int64_t n_absent_blocks = (n_absent + kBlock - 1) / kBlock;
  const int64_t n_blocks = n_absent_blocks + (n_tail + kBlock - 1) / kBlock;
#pragma omp parallel for num_threads(effective_threads(n_threads, n_blocks))
  for (int64_t j = 0; j < n_blocks; ++j) {
    if (j < n_absent_blocks) {
      const int64_t end = std::min(n_absent, (j + 1) * kBlock);
      for (int64_t i = j * kBlock; i < end; ++i) {
        const int32_t a = absent[i];
        std::fill(grad + layout.row_ptr[a], grad + layout.row_ptr[a + 1], 0.0);
      }
    } else {
      const int64_t b = tail + (j - n_absent_blocks) * kBlock;
      std::fill(grad + b, grad + std::min(layout.n_parameters(), b + kBlock), 0.0);
    }
  }
}

// The most bytes of group sums a chunk holds at once (see evaluate_chunked).
constexpr size_t kGroupSumsBytes = size_t{16} << 20;

// Evaluates Σ_seq kernel(seq) and its gradient with respect to theta
// (layout of Layout), writing the gradient into grad [n_parameters].
//
// Per chunk, two parallel loops. First, work groups of sequences: each
// sequence's emissions are scored into the chunk's residual rows, and the
// kernel
//   double kernel(int64_t seq, const Chain& chain, Workspace& ws,
//                 double* d_emissions, double* d_transitions)
// returns the sequence's loss, overwrites its rows with ∂loss/∂E (they alias
// chain.emissions) and adds ∂loss/∂T into d_transitions [S][S]; the group
// also sums ∂start / ∂end off its sequences' first / last residual rows
// (the start and end weights enter the score as E[0] and E[n-1] do).
// Second, the group sums are reduced in group order, a slice of entries per
// work item, while the other items back-project the rows by attribute
// (the two write disjoint parts of the gradient). With many labels the
// groups run in waves, each wave's sums reduced before the next starts, so
// that the sums held at once stay under kGroupSumsBytes. Every sum runs in an
// order fixed by the corpus, so the result has the same bits for any
// thread count. With `active` [n_sequences], sequences whose flag is 0 are
// known to contribute nothing (loss 0, gradient 0) and are not scored. With
// `emissions` [n_tokens][S], the emission rows already scored at this theta
// (and checked) by an earlier pass, sequences are copied from it instead of
// scored.
template <class Kernel>
double evaluate_chunked(const Corpus& corpus, const Layout& layout, const double* theta,
                        double* grad, int n_threads, Kernel&& kernel,
                        const uint8_t* active = nullptr, const double* emissions = nullptr) {
  const int S = layout.S;
  const int64_t SS = static_cast<int64_t>(S) * S;
  const double* T = theta + layout.transitions_offset();
  zero_rows_no_chunk_writes(corpus, layout, grad, n_threads);
  double* grad_T = grad + layout.transitions_offset();
  double* grad_start = grad + layout.start_offset();
  double* grad_end = grad + layout.end_offset();

  const TransitionFactors factors(T, S);
  const LayerWeights weights(layout, theta, static_cast<int64_t>(corpus.indices.size()),
                             n_threads);
  n_threads = effective_threads(n_threads, std::max<int64_t>(corpus.n_sequences, 1));
  PerThread<Workspace> workspaces(n_threads);
  // A group's sums: [loss | ∂T (S×S) | ∂start (S) | ∂end (S)]
  const int64_t width = 1 + SS + 2 * static_cast<int64_t>(S);
  constexpr int64_t kSliceEntries = 64;  // entries of the group sums per reduction item
  const int64_t n_slices = (width + kSliceEntries - 1) / kSliceEntries;
  // Groups run in waves whose sums take at most kGroupSumsBytes (but at
  // least 8 groups per thread): a chunk's few hundred groups hold S² sums
  // each, 186 MB per chunk at 300 labels. Each entry of the chunk's sums is
  // added up group after group from 0 whatever the waves, so their number,
  // and with it the thread count, does not change a bit.
  const int64_t wave_groups = std::max<int64_t>(
      8 * static_cast<int64_t>(n_threads),
      static_cast<int64_t>(kGroupSumsBytes / sizeof(double)) / width);
  std::vector<double> chunk_sums(width);
  UninitializedBuffer residual, group_sums;
  ChunkIndexer indexer(corpus);
  ExceptionCarrier errors;
  double loss = 0.0;
  for (const Chunk& ch : corpus.chunks()) {
    const int64_t n_groups = static_cast<int64_t>(ch.group_bounds.size()) - 1;
    const int64_t n_rows = (ch.tok_end - ch.tok_begin) * S;
    // back_project_attribute reads padded rows whole, past the last row:
    // the pad is zeroed, the rows are all written below.
    double* const rows = residual.reserve(n_rows + padded_width(S) - S);
    std::fill(rows + n_rows, rows + n_rows + padded_width(S) - S, 0.0);
    const int64_t wave = std::max<int64_t>(1, std::min(n_groups, wave_groups));
    const int64_t n_waves = std::max<int64_t>(1, (n_groups + wave - 1) / wave);
    double* const sums_of = group_sums.reserve(wave * width);
    std::fill(chunk_sums.begin(), chunk_sums.end(), 0.0);
    // Adds the sums of groups [g0, g1) (stored from sums_of) to the slice's
    // entries of chunk_sums, in group order.
    const auto reduce_slice = [&](int64_t item, int64_t g0, int64_t g1) {
      // The groups are the outer loop so that the slice's entries are read
      // as one run per group (entry by entry, a group's sums are a stride
      // of width apart).
      const int64_t e0 = item * kSliceEntries, e1 = std::min(width, e0 + kSliceEntries);
      double total[kSliceEntries];
      std::copy(chunk_sums.data() + e0, chunk_sums.data() + e1, total);
      for (int64_t g = g0; g < g1; ++g) {
        const double* group = sums_of + (g - g0) * width;
        for (int64_t e = e0; e < e1; ++e) total[e - e0] += group[e];
      }
      std::copy(total, total + (e1 - e0), chunk_sums.data() + e0);
    };
    for (int64_t w = 0; w < n_waves; ++w) {
      const int64_t g0 = w * wave, g1 = std::min(n_groups, g0 + wave);
      // The last wave's first work item builds the chunk's index (unless
      // the corpus keeps it) while the other threads score groups: only
      // the back-projection after the wave reads it.
      const int64_t build = w + 1 == n_waves && !ch.kept ? 1 : 0;
#pragma omp parallel for schedule(dynamic, 1) num_threads(effective_threads(n_threads, g1 - g0 + build))
      for (int64_t item = 0; item < g1 - g0 + build; ++item) {
        errors.run([&] {
          if (item < build) {
            indexer.build(ch);
            return;
          }
          const int64_t g = g0 + item - build;
          Workspace& ws = workspaces.mine();
          double* sums = sums_of + (g - g0) * width;
          std::fill(sums, sums + width, 0.0);
          double* sum_start = sums + 1 + SS;
          double* sum_end = sum_start + S;
          for (int64_t s = ch.group_bounds[g]; s < ch.group_bounds[g + 1]; ++s) {
            const int64_t tb = corpus.offsets[s], te = corpus.offsets[s + 1];
            if (te == tb) continue;
            double* E = rows + (tb - ch.tok_begin) * S;
            if (active && !active[s]) {
              std::fill(E, E + (te - tb) * S, 0.0);
              continue;
            }
            Chain c;
            if (emissions) {
              std::copy(emissions + tb * S, emissions + te * S, E);
              c = chain_over(layout, theta, factors, te - tb, E);
            } else {
              c = scored_chain(corpus, layout, weights, factors, tb, te, E);
            }
            sums[0] += kernel(s, c, ws, E, sums + 1);
            const double* last = E + (te - tb - 1) * S;
            for (int b = 0; b < S; ++b) {
              sum_start[b] += E[b];
              sum_end[b] += last[b];
            }
          }
        });
      }
      errors.rethrow();
      if (w + 1 == n_waves) {
        // The last wave's sums are reduced while the other items
        // back-project the rows by attribute (the two write disjoint parts
        // of the gradient).
        const ChunkIndex& index = indexer.of(ch);
        const int64_t n_blocks = static_cast<int64_t>(index.slot_blocks.size()) - 1;
#pragma omp parallel for schedule(dynamic, 1) num_threads(effective_threads(n_threads, n_slices + n_blocks))
        for (int64_t item = 0; item < n_slices + n_blocks; ++item) {
          if (item < n_slices) {
            reduce_slice(item, g0, g1);
            continue;
          }
          const int64_t j = item - n_slices;
          for (int64_t i = index.slot_blocks[j]; i < index.slot_blocks[j + 1]; ++i)
            back_project_attribute(corpus, index, static_cast<size_t>(i), layout, rows, grad);
        }
      } else {
#pragma omp parallel for schedule(dynamic, 1) num_threads(effective_threads(n_threads, n_slices))
        for (int64_t item = 0; item < n_slices; ++item) reduce_slice(item, g0, g1);
      }
    }
    loss += chunk_sums[0];
    for (int64_t i = 0; i < SS; ++i) grad_T[i] += chunk_sums[1 + i];
    for (int b = 0; b < S; ++b) {
      grad_start[b] += chunk_sums[1 + SS + b];
      grad_end[b] += chunk_sums[1 + SS + S + b];
    }
  }
  return loss;
}

// The scores of one sequence, for the decoders (one per thread).
struct alignas(64) SequenceRows {
  Scratch emissions;  // [n][S]
};

// Runs f(seq, chain, ws) for every non-empty sequence in parallel, with the
// sequence's emissions scored into the thread's rows and the corpus mask
// (if any) on the chain. For decoders, whose outputs per sequence are
// disjoint.
template <class F>
void for_each_sequence(const Corpus& corpus, const Layout& layout, const double* theta,
                       int n_threads, bool use_mask, F&& f) {
  const int S = layout.S;
  const double* T = theta + layout.transitions_offset();
  const TransitionFactors factors(T, S);
  const LayerWeights weights(layout, theta, static_cast<int64_t>(corpus.indices.size()),
                             n_threads);
  n_threads = effective_threads(n_threads, corpus.n_sequences / 16 + 1);
  PerThread<Workspace> workspaces(n_threads);
  PerThread<SequenceRows> rows(n_threads);
  ExceptionCarrier errors;
#pragma omp parallel for schedule(dynamic, 16) num_threads(n_threads)
  for (int64_t s = 0; s < corpus.n_sequences; ++s) {
    errors.run([&] {
      const int64_t tb = corpus.offsets[s], te = corpus.offsets[s + 1];
      if (te == tb) return;
      Workspace& ws = workspaces.mine();
      Scratch& emissions = rows.mine().emissions;
      emissions.resize(static_cast<size_t>(te - tb) * S);
      Chain c = scored_chain(corpus, layout, weights, factors, tb, te, emissions.data());
      c.node_mask = use_mask ? corpus.mask_at(tb) : nullptr;
      c.edge_mask = use_mask && te - tb > 1 ? corpus.edge_mask_from(tb) : nullptr;
      f(s, c, ws);
    });
  }
  errors.rethrow();
}

}  // namespace sscrf
