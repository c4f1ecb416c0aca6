// exp for the scaled forward-backward: arguments are log-potentials minus
// their row maximum (<= 0), so a branch-free polynomial that the compiler
// can vectorise replaces a libm call per potential.
#pragma once

#include <cstdint>
#include <cstring>

namespace sscrf {

// exp(x) for x <= 0, relative error below 1e-15; 0 for x < -708 (those
// factors are below 1e-307 of the row maximum and cannot matter).
// exp(x) = 2^k · exp(r), k = round(x / ln 2), |r| <= ln2 / 2, exp(r) by its
// degree-12 Taylor polynomial (truncation error < 2e-16).
inline double exp_nonpositive(double x) {
  constexpr double kLog2e = 1.4426950408889634;
  constexpr double kLn2Hi = 6.93147180369123816490e-01;  // Cody-Waite split of ln 2
  constexpr double kLn2Lo = 1.90821492927058770002e-10;
  constexpr double kShifter = 6755399441055744.0;        // 1.5 * 2^52: rounds to integer
  const bool tiny = x < -708.0;
  const double xc = tiny ? -708.0 : x;
  const double kd = (xc * kLog2e + kShifter) - kShifter;
  const double r = (xc - kd * kLn2Hi) - kd * kLn2Lo;
  double p = 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  const int64_t k = static_cast<int64_t>(kd);
  const uint64_t bits = static_cast<uint64_t>(k + 1023) << 52;
  double scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return tiny ? 0.0 : p * scale;
}

}  // namespace sscrf
