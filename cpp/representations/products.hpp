// The dense products of the randomized SVD and of k-means over word vectors
// (sscrf.representations). Each output entry is one sum in a fixed order,
// so that results do not depend on the thread count; numpy/LAPACK then
// only see matrices of a few hundred rows, which OpenBLAS runs on one thread.
#pragma once

#include <cstdint>

namespace sscrf {

// out (n_rows x l) = A (CSR, n_rows rows) * B (n_cols x l, row-major).
void csr_times_dense(const int64_t* indptr, const int32_t* indices, const double* data,
                     int64_t n_rows, const double* B, int64_t l, double* out, int n_threads);

// out (l x l) = A^T A for A (n x l, row-major): partial sums over fixed
// blocks of rows, added in block order.
void gram_matrix(const double* A, int64_t n, int64_t l, double* out, int n_threads);

// out (n x m) = A (n x l) * M (l x m).
void times_small(const double* A, int64_t n, int64_t l, const double* M, int64_t m, double* out,
                 int n_threads);

// For each row i of X (n x d), the centroid among group_ptr[g[i]] ..
// group_ptr[g[i]+1]-1 of C (rows of d) with the largest dot product (the
// lowest index on ties): k-means on unit vectors, flat (one group) or
// within each parent cluster.
void nearest_centroids(const double* X, int64_t n, int64_t d, const double* C,
                       const int64_t* group, const int64_t* group_ptr, int64_t* out,
                       int n_threads);

}  // namespace sscrf
