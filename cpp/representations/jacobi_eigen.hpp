// The eigendecomposition of a small symmetric matrix by cyclic Jacobi
// rotations, so that the randomized SVD of sscrf.representations needs no
// LAPACK call (whose BLAS threads would make results depend on them, and
// contend with ours on a busy machine).
#pragma once

#include <cstdint>

namespace sscrf {

// A (n x n, row-major, symmetric) = V diag(values) V^T: values in decreasing
// order, eigenvectors in the columns of V (row-major, n x n). Sweeps rotate
// every pair (p, q), p < q, in order, until the off-diagonal mass is below
// 1e-30 of the total (or 100 sweeps): one fixed sequence of operations.
void symmetric_eigen(const double* A, int64_t n, double* values, double* V);

}  // namespace sscrf
