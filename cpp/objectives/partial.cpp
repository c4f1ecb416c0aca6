// The marginalised likelihood of partial and ambiguous annotations: two
// forward-backward passes per sentence, with and without its masks.
#include "objectives/partial.hpp"

#include "lattice/forward_backward.hpp"
#include "objectives/chunked.hpp"

namespace sscrf {

namespace {

// One thread's buffers for the constrained pass.
struct alignas(64) PartialScratch {
  Scratch node;          // [n][S] constrained node marginals p_L
  Scratch edge_allowed;  // [S][S] Σ_t of the constrained edge marginals
  Scratch edge;          // [S][S] Σ_t of the free edge marginals, before the weight
};

}  // namespace

double partial_likelihood_objective(const Corpus& corpus, const Layout& layout,
                                    const double* theta, double* grad, int n_threads) {
  const int S = layout.S;
  PerThread<PartialScratch> scratch(n_threads);
  try {
    return evaluate_chunked(
        corpus, layout, theta, grad, n_threads,
        [&](int64_t s, const Chain& c, Workspace& ws, double* dE, double* dT) {
          const int64_t tb = corpus.offsets[s];
          const double w = corpus.weight(s);
          // Constrained pass first: the unconstrained one overwrites the emissions.
          Chain constrained = c;
          constrained.node_mask = corpus.mask_at(tb);
          constrained.edge_mask = c.n > 1 ? corpus.edge_mask_from(tb) : nullptr;
          PartialScratch& own = scratch.mine();
          Scratch& p_allowed = own.node;
          p_allowed.resize(static_cast<size_t>(c.n) * S);
          own.edge_allowed.assign(static_cast<size_t>(S) * S, 0.0);
          const double log_z_allowed =
              forward_backward(constrained, ws, p_allowed.data(), nullptr, own.edge_allowed.data());
          // ∂(log Z - log Z_L) = p - p_L, for nodes and for edges; with unit
          // weight the free pass adds its edge sums to dT itself
          const bool unit = w == 1.0;
          if (!unit) own.edge.assign(static_cast<size_t>(S) * S, 0.0);
          const double log_z = forward_backward(c, ws, dE, nullptr, unit ? dT : own.edge.data());
          for (int64_t i = 0; i < c.n * S; ++i) dE[i] = w * (dE[i] - p_allowed[i]);
          if (unit)
            for (int i = 0; i < S * S; ++i) dT[i] -= own.edge_allowed[i];
          else
            for (int i = 0; i < S * S; ++i) dT[i] += w * (own.edge[i] - own.edge_allowed[i]);
          return w * (log_z - log_z_allowed);
        });
  } catch (const NoLabeling&) {
    throw NoLabeling("the allowed label sets leave no labeling for some sentence");
  }
}

}  // namespace sscrf
