// The entropy-regularisation term over an unlabeled corpus (Jiao et al. 2006
// eq. 2, minimised as Σ_x H(Y | x)), by either gradient.
#include "objectives/entropy.hpp"

#include "lattice/covariance.hpp"
#include "lattice/entropy_jiao.hpp"
#include "objectives/chunked.hpp"

namespace sscrf {

namespace {

// One thread's buffer for the jiao gradient.
struct alignas(64) JiaoScratch {
  Scratch edge;  // [S][S] ∂H/∂T of a sequence, before the weight
};

}  // namespace

EntropyMethod entropy_method(const std::string& name) {
  if (name == "fast") return EntropyMethod::fast;
  if (name == "jiao") return EntropyMethod::jiao;
  throw InputError("method must be 'fast' or 'jiao', got '" + name + "'");
}

double entropy_objective(const Corpus& corpus, const Layout& layout, const double* theta,
                         double* grad, int n_threads, EntropyMethod method) {
  const int S = layout.S;
  if (method == EntropyMethod::jiao) {
    PerThread<JiaoScratch> scratch(n_threads);
    return evaluate_chunked(
        corpus, layout, theta, grad, n_threads,
        [&](int64_t s, const Chain& c, Workspace& ws, double* dE, double* dT) {
          const double w = corpus.weight(s);
          Scratch& edge = scratch.mine().edge;
          edge.assign(static_cast<size_t>(S) * S, 0.0);
          const double entropy = entropy_gradient_jiao(c, ws, dE, edge.data());
          for (int64_t i = 0; i < c.n * S; ++i) dE[i] *= w;
          for (int i = 0; i < S * S; ++i) dT[i] += w * edge[i];
          return w * entropy;
        });
  }
  return evaluate_chunked(
      corpus, layout, theta, grad, n_threads,
      [&](int64_t s, const Chain& c, Workspace& ws, double* dE, double* dT) {
        const double w = corpus.weight(s);
        return w * entropy_gradient(c, ws, dE, dT, w);
      });
}

}  // namespace sscrf
