// Forward-backward of a hidden Markov model whose every symbol is emitted
// by a few states only: EM's E-step, and each token's most probable state,
// for the HMM states that sscrf.hidden_states learns from unlabeled text.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "runtime/parallel.hpp"
#include "runtime/scratch.hpp"

namespace sscrf {

// An HMM of K states, in probabilities. Symbol s is emitted by the states
// support[support_ptr[s] : support_ptr[s+1]] (increasing) with the
// probabilities emission[...] alongside, and by no other state. A step of
// the chain then costs |support(previous)| · |support(next)| rather than
// K², and Baum-Welch keeps every zero emission zero, so EM started on a
// support stays on it.
struct SparseHmm {
  int32_t K = 0;
  std::vector<double> start;        // [K] π
  std::vector<double> transitions;  // [K][K] A[previous][next]
  std::vector<int64_t> support_ptr; // [n_symbols + 1]
  std::vector<int32_t> support;     // [support_ptr[n_symbols]]
  std::vector<double> emission;     // [support_ptr[n_symbols]] p(symbol | state)
  int64_t n_symbols() const { return static_cast<int64_t>(support_ptr.size()) - 1; }
};

// Baum-Welch's sufficient statistics of a text.
struct HmmCounts {
  double log_likelihood = 0.0;        // log p(text)
  std::vector<double> emission;       // [support_ptr[n_symbols]] aligned with support
  std::vector<double> transitions;    // [K][K]
  std::vector<double> start;          // [K]
};

// The E-step over the sentences symbols[offsets[i] : offsets[i+1]] (ids
// below hmm.n_symbols()). The result has the same bits at any thread count:
// sentences are cut into groups of tokens by the corpus alone, and the
// groups' sums are added in group order, each symbol's emissions in token
// order. Throws InputError when a sentence has probability 0 (its symbols'
// supports and the transitions allow no path, or the product underflows).
void hmm_expected_counts(const SparseHmm& hmm, const int32_t* symbols, const int64_t* offsets,
                         int64_t n_sentences, int n_threads, HmmCounts& out);

// Stepwise EM (Liang & Klein 2009): after each batch of sentences, the
// running expected counts μ move towards the batch's (scaled to the text)
// by η_k = (k + 2)^-α, and the model is re-estimated from μ and
// pseudo-counts. The emission counts are kept as scale · stored, so that a
// batch costs its own symbols' entries, not every entry.
class StepwiseEm {
 public:
  // Starts from `initial`'s supports, uniform start and transition counts,
  // and emission counts proportional to emission_weights (> 0, aligned
  // with the supports), all at the scale of a text of n_tokens tokens in
  // n_sentences sentences.
  StepwiseEm(SparseHmm initial, const std::vector<double>& emission_weights, double n_tokens,
             double n_sentences, double step_exponent, double emission_pseudo_count,
             double transition_pseudo_count);
  // EM over batches, batch b the sentences order[batch_ptr[b] : batch_ptr[b+1]]
  // of symbols/offsets; returns the sum of each batch's log p under the
  // model of its time. The same bits at any thread count.
  double run(const int32_t* symbols, const int64_t* offsets, const int64_t* order,
             const int64_t* batch_ptr, int64_t n_batches, int n_threads);
  // The model re-estimated from every count.
  const SparseHmm& model();
  int64_t n_symbols() const { return hmm_.n_symbols(); }

 private:
  void refresh(int64_t symbol);
  void reestimate_chain();

  SparseHmm hmm_;
  std::vector<double> stored_, state_totals_, entries_per_state_, transitions_, start_;
  std::vector<double> batch_emission_;  // zero between batches
  std::vector<uint8_t> touched_;        // per symbol, zero between batches
  double scale_ = 1.0, n_tokens_;
  double step_exponent_, emission_pseudo_count_, transition_pseudo_count_;
  int64_t steps_ = 0;
};

// Each token's state of largest posterior probability given its sentence
// (ties: the lower state), written to states[offsets[i] - offsets[0] + ...].
void hmm_posterior_states(const SparseHmm& hmm, const int32_t* symbols, const int64_t* offsets,
                          int64_t n_sentences, int n_threads, int32_t* states);

// decode(x, n, workspace, out) on every sentence x = symbols[offsets[i] :
// offsets[i+1]] of n >= 1 tokens, out = states + (offsets[i] - offsets[0]):
// the decoders' one loop over sentences, each thread with a Workspace of its
// own; the first exception is rethrown.
template <class Workspace, class Decode>
void decode_sentences(const int32_t* symbols, const int64_t* offsets, int64_t n_sentences,
                      int n_threads, int32_t* states, Decode decode) {
  const int T = effective_threads(n_threads, std::max<int64_t>(n_sentences, 1));
  PerThread<Workspace> workspaces(T);
  ExceptionCarrier carrier;
#pragma omp parallel for num_threads(T) schedule(dynamic, 64) if (T > 1)
  for (int64_t s = 0; s < n_sentences; ++s) {
    carrier.run([&] {
      const int64_t n = offsets[s + 1] - offsets[s];
      if (n > 0)
        decode(symbols + offsets[s], n, workspaces.mine(), states + (offsets[s] - offsets[0]));
    });
  }
  carrier.rethrow();
}

}  // namespace sscrf
