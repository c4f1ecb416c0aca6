// Corpus-wide decoders, each sequence scored and decoded on its own, in
// parallel (their outputs are disjoint).
#include "objectives/decoding.hpp"

#include <algorithm>

#include "lattice/entropy_lattices.hpp"
#include "lattice/forward_backward.hpp"
#include "lattice/viterbi.hpp"
#include "objectives/chunked.hpp"

namespace sscrf {

namespace {

constexpr const char* kNoLabeling = "the allowed label sets leave no labeling for some sentence";

}  // namespace

void decode_viterbi(const Corpus& corpus, const Layout& layout, const double* theta,
                    int n_threads, int32_t* labels, double* scores) {
  std::fill(scores, scores + corpus.n_sequences, 0.0);  // empty sequences: the empty labeling
  try {
    for_each_sequence(corpus, layout, theta, n_threads, true,
                      [&](int64_t s, const Chain& c, Workspace& ws) {
                        scores[s] = viterbi(c, ws, labels + corpus.offsets[s]);
                      });
  } catch (const NoLabeling&) {
    throw NoLabeling(kNoLabeling);
  }
}

void decode_marginals(const Corpus& corpus, const Layout& layout, const double* theta,
                      int n_threads, double* node, double* log_z) {
  const int S = layout.S;
  std::fill(log_z, log_z + corpus.n_sequences, 0.0);  // empty sequences: log 1
  try {
    for_each_sequence(corpus, layout, theta, n_threads, true,
                      [&](int64_t s, const Chain& c, Workspace& ws) {
                        log_z[s] = forward_backward(c, ws, node + corpus.offsets[s] * S,
                                                    nullptr, nullptr);
                      });
  } catch (const NoLabeling&) {
    throw NoLabeling(kNoLabeling);
  }
}

void sequence_log_probabilities(const Corpus& corpus, const Layout& layout,
                                const double* theta, int n_threads, double* out) {
  std::fill(out, out + corpus.n_sequences, 0.0);  // empty sequences: log 1
  for_each_sequence(corpus, layout, theta, n_threads, false,
                    [&](int64_t s, const Chain& c, Workspace& ws) {
                      const int32_t* y = &corpus.labels[corpus.offsets[s]];
                      // log p <= 0; for a near-certain labeling, the rounding of two
                      // sums of n terms can put its score a few ulps above log Z
                      out[s] = std::min(0.0, labeling_score(c, y) - log_partition(c, ws));
                    });
}

void score_emissions(const Corpus& corpus, const Layout& layout, const double* theta,
                     int n_threads, double* out) {
  const int64_t S = layout.S;
  for_each_sequence(corpus, layout, theta, n_threads, false,
                    [&](int64_t s, const Chain& c, Workspace&) {
                      std::copy(c.emissions, c.emissions + c.n * S,
                                out + corpus.offsets[s] * S);
                    });
}

void decode_entropy(const Corpus& corpus, const Layout& layout, const double* theta,
                    int n_threads, double* sequence_entropy, double* token_entropy,
                    double* transition_entropy) {
  std::fill(sequence_entropy, sequence_entropy + corpus.n_sequences, 0.0);
  for_each_sequence(corpus, layout, theta, n_threads, false,
                    [&](int64_t s, const Chain& c, Workspace& ws) {
                      const int64_t tb = corpus.offsets[s];
                      sequence_entropy[s] = entropy_lattices(c, ws, token_entropy + tb,
                                                             transition_entropy + tb, nullptr, nullptr);
                    });
}

}  // namespace sscrf
