// Jiao et al.'s O(n² S³) entropy gradient of one chain (DESIGN.md kernel 5),
// kept as an independent reference and benchmark baseline.
#pragma once

#include <cstdint>

#include "lattice/chain.hpp"

namespace sscrf {

// Entropy H = log Z - E[s] and its gradient by Jiao et al. (2006) §3:
// -Cov[f, s] from quadratic feature expectations, computed with summary
// matrices M_{u+1, v-1} in a nested O(n² S³) programme. Reference only.
//   d_emissions: [n][S] (written), d_transitions: [S][S] (added)
double entropy_gradient_jiao(const Chain& c, Workspace& ws, double* d_emissions,
                             double* d_transitions);

// Jiao's pair marginals from the same summary matrices, for checking:
// out[a'][a][b'][b] = p(y_{u-1}=a', y_u=a, y_{v-1}=b', y_v=b), 1 ≤ u < v < n.
void jiao_pair_marginals(const Chain& c, Workspace& ws, int64_t u, int64_t v, double* out);

}  // namespace sscrf
