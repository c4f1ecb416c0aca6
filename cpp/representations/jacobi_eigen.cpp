// Cyclic Jacobi (Golub & Van Loan, algorithm 8.5.3) with Rutishauser's
// stable rotation formulas.
#include "representations/jacobi_eigen.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace sscrf {

void symmetric_eigen(const double* A_in, int64_t n, double* values, double* V_out) {
  std::vector<double> A(A_in, A_in + n * n), V(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i) V[i * n + i] = 1.0;
  auto at = [&](int64_t i, int64_t j) -> double& { return A[i * n + j]; };
  double total = 0.0;
  for (double a : A) total += a * a;
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0.0;
    for (int64_t p = 0; p < n; ++p)
      for (int64_t q = p + 1; q < n; ++q) off += 2 * at(p, q) * at(p, q);
    if (off <= 1e-30 * total || off == 0.0) break;
    for (int64_t p = 0; p < n; ++p) {
      for (int64_t q = p + 1; q < n; ++q) {
        const double apq = at(p, q);
        if (apq == 0.0) continue;
        const double theta = (at(q, q) - at(p, p)) / (2 * apq);
        const double t = (theta >= 0 ? 1.0 : -1.0) / (std::fabs(theta) + std::sqrt(theta * theta + 1));
        const double c = 1 / std::sqrt(t * t + 1), s = t * c;
        // A = J^T A J on rows and columns p, q
        for (int64_t k = 0; k < n; ++k) {
          const double akp = at(k, p), akq = at(k, q);
          at(k, p) = c * akp - s * akq;
          at(k, q) = s * akp + c * akq;
        }
        for (int64_t k = 0; k < n; ++k) {
          const double apk = at(p, k), aqk = at(q, k);
          at(p, k) = c * apk - s * aqk;
          at(q, k) = s * apk + c * aqk;
        }
        at(p, q) = at(q, p) = 0.0;
        for (int64_t k = 0; k < n; ++k) {
          const double vkp = V[k * n + p], vkq = V[k * n + q];
          V[k * n + p] = c * vkp - s * vkq;
          V[k * n + q] = s * vkp + c * vkq;
        }
      }
    }
  }
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return at(a, a) > at(b, b); });
  for (int64_t j = 0; j < n; ++j) {
    values[j] = at(order[j], order[j]);
    for (int64_t k = 0; k < n; ++k) V_out[k * n + j] = V[k * n + order[j]];
  }
}

}  // namespace sscrf
