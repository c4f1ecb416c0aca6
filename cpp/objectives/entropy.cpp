// The entropy-regularisation term over an unlabeled corpus (Jiao et al. 2006
// eq. 2, minimised as Σ_x H(Y | x)), by either gradient, and the corpus
// entropy decoder used by uncertainty queries.
#include <algorithm>

#include "covariance.hpp"
#include "chunked.hpp"

namespace sscrf {

double entropy_objective(const Corpus& corpus, const Layout& layout, const double* theta,
                         double* grad, int n_threads, bool jiao) {
  const int S = layout.S;
  return evaluate_chunked(
      corpus, layout, theta, grad, n_threads,
      [&](int64_t s, const Chain& c, Workspace& ws, double* dE, double* dT) {
        const double w = corpus.weight(s);
        if (jiao) {
          ws.edge_scratch.assign(static_cast<size_t>(S) * S, 0.0);
          const double entropy = entropy_gradient_jiao(c, ws, dE, ws.edge_scratch.data());
          for (int64_t i = 0; i < c.n * S; ++i) dE[i] *= w;
          for (int i = 0; i < S * S; ++i) dT[i] += w * ws.edge_scratch[i];
          return w * entropy;
        }
        // H = log Z - E[s] and ∂H/∂θ = -Cov[F, s] (E[F] cancels)
        AdditiveScore score;
        score.log_potentials = true;
        double log_z;
        const double expected = expectation_gradient(c, ws, score, dE, dT, &log_z, -w);
        const double entropy = log_z - expected;
        return w * entropy;
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
