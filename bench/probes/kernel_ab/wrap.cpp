// One build's lattice kernels behind a plain function: compiled once per
// build with -Dsscrf=<namespace> -DKERNEL_AB_ENTRY=<name>, so that two
// builds of the same sources link into one binary (see run.sh).
#include <vector>

// Sources laid out by layer (cpp/lattice/...) or, before that, flat (cpp/).
#if __has_include("lattice/covariance.hpp")
#include "lattice/covariance.hpp"
#include "lattice/forward_backward.hpp"
#else
#include "covariance.hpp"
#include "lattice.hpp"
#endif

// Runs one kernel over every chain of a corpus of emission rows and returns
// a sum of its outputs (so that nothing is optimised away).
//   kernel 0: the entropy gradient (scaled forward + covariance kernel)
//   kernel 1: forward-backward with node marginals and edge sums (likelihood)
//   kernel 2: the gradient of E[r] for a node-only score r (GE's)
double KERNEL_AB_ENTRY(const double* E, const double* T, int S, const int64_t* offsets,
                       int n_chains, int kernel) {
  using namespace sscrf;
  static Workspace ws;
  const TransitionFactors factors(T, S);
  std::vector<double> dE, dT(static_cast<size_t>(S) * S, 0.0);
  double sum = 0.0;
  for (int s = 0; s < n_chains; ++s) {
    Chain c;
    c.n = offsets[s + 1] - offsets[s];
    c.S = S;
    c.emissions = E + offsets[s] * S;
    c.transitions = T;
    c.factors = &factors;
    dE.resize(static_cast<size_t>(c.n) * S);
    if (kernel == 0) {
      AdditiveScore own;
      own.log_potentials = true;
      double log_z;
      sum += expectation_gradient(c, ws, own, dE.data(), dT.data(), &log_z);
    } else if (kernel == 2) {
      AdditiveScore node_only;
      node_only.node = E + offsets[s] * S;  // any node score will do
      sum += expectation_gradient(c, ws, node_only, dE.data(), dT.data(), nullptr);
    } else {
      sum += forward_backward(c, ws, dE.data(), nullptr, dT.data());
    }
    sum += dE[0];
  }
  return sum + dT[0];
}
