// The entropy-regularisation term over an unlabeled corpus.
#pragma once

#include <string>

#include "layer/corpus.hpp"
#include "layer/linear_layer.hpp"

namespace sscrf {

// The two gradients of the entropy: Mann & McCallum's O(n S²) covariance
// kernel (fast) and Jiao et al.'s O(n² S³) nested programme (jiao).
enum class EntropyMethod { fast, jiao };

// "fast" or "jiao"; throws InputError for any other name.
EntropyMethod entropy_method(const std::string& name);

// Σ_x w_x H(Y | x) and its gradient by the given method.
double entropy_objective(const Corpus& corpus, const Layout& layout, const double* theta,
                         double* grad, int n_threads, EntropyMethod method);

}  // namespace sscrf
