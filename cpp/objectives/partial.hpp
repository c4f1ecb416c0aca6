// The marginalised likelihood of partial and ambiguous annotations.
#pragma once

#include "layer/corpus.hpp"
#include "layer/linear_layer.hpp"

namespace sscrf {

// Marginalised likelihood of partial / ambiguous annotations (Tsuboi et al.
// 2008 eq. 3-4): Σ_x w_x (log Z(x) - log Z_L(x)), Z_L summing over the
// labelings the corpus masks allow; gradient p - p_L by two forward-backward
// passes. Throws NoLabeling when the masks leave some sentence no labeling.
double partial_likelihood_objective(const Corpus& corpus, const Layout& layout,
                                    const double* theta, double* grad, int n_threads);

}  // namespace sscrf
