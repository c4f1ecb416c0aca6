// Small dense kernels over label rows padded to a multiple of kBlock
// doubles (the padding holds zeros), written with GCC/Clang vector types so
// that the accumulators live in registers and every lane does useful work.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#pragma GCC diagnostic ignored "-Wpsabi"

// Hot kernels are compiled twice, for AVX2+FMA (x86-64-v3) and for the
// baseline, and the loader picks one per machine: wide SIMD without
// -march=native in a portable build. Every thread runs the same clone, so
// results still do not depend on the thread count.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(SSCRF_NATIVE)
#define SSCRF_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#define SSCRF_HAS_SIMD_CLONES 1
#else
#define SSCRF_SIMD_CLONES
#endif

namespace sscrf {

// Which compilation of the hot kernels runs on this CPU: "x86-64-v3" or
// "baseline" (the loader's choice between the clones above, asked the same
// way; GCC before 12 knows no ISA levels by name, so there AVX2, FMA and
// BMI2 stand for it), or "native" for a -DSSCRF_NATIVE=ON build.
inline const char* kernel_target() {
#if defined(SSCRF_NATIVE)
  return "native";
#elif defined(SSCRF_HAS_SIMD_CLONES) && __GNUC__ >= 12
  return __builtin_cpu_supports("x86-64-v3") ? "x86-64-v3" : "baseline";
#elif defined(SSCRF_HAS_SIMD_CLONES)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                 __builtin_cpu_supports("bmi2")
             ? "x86-64-v3"
             : "baseline";
#else
  return "baseline";
#endif
}

// Rows are padded to whole vec4s, not to pairs of them: 8-lane padding
// gives 3 labels 8 lanes and 17 labels 24, work spent on zeros.
constexpr int kBlock = 4;

inline int padded_width(int S) { return (S + kBlock - 1) / kBlock * kBlock; }

typedef double vec4 __attribute__((vector_size(32)));
typedef int64_t ivec4 __attribute__((vector_size(32)));

__attribute__((always_inline)) inline vec4 load4(const double* p) {
  vec4 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
__attribute__((always_inline)) inline void store4(double* p, vec4 v) { std::memcpy(p, &v, sizeof v); }
__attribute__((always_inline)) inline vec4 splat4(double x) { return vec4{x, x, x, x}; }

// (v[0] + v[1]) + (v[2] + v[3]): a vec4's lanes added in a fixed order.
__attribute__((always_inline)) inline double lanes_sum(vec4 v) {
  return (v[0] + v[1]) + (v[2] + v[3]);
}

// Σ_b x[b] · y[b] over rows padded to ld lanes (zeros past S in either), a
// vec4 at a time: a chain of ld/4 adds rather than S.
__attribute__((always_inline)) inline double padded_dot(const double* x, const double* y,
                                                        int ld) {
  vec4 acc = splat4(0.0);
  for (int b = 0; b < ld; b += 4) acc += load4(x + b) * load4(y + b);
  return lanes_sum(acc);
}

// Runs f(std::integral_constant<int, n>{}) for n in 1..6, the number of vec4
// in a tile, so that a tile's width is a template argument; 0 does nothing.
// f must be always_inline too: it is then compiled for the caller's clone.
template <class F>
__attribute__((always_inline)) inline void with_vec_count(int n, F&& f) {
  switch (n) {
    case 6: f(std::integral_constant<int, 6>{}); break;
    case 5: f(std::integral_constant<int, 5>{}); break;
    case 4: f(std::integral_constant<int, 4>{}); break;
    case 3: f(std::integral_constant<int, 3>{}); break;
    case 2: f(std::integral_constant<int, 2>{}); break;
    case 1: f(std::integral_constant<int, 1>{}); break;
    default: break;
  }
}

// Runs f(b0, std::integral_constant<int, n>{}) for tiles of n vec4s from lane
// b0 that cover a padded row of ld lanes, at most kMaxVecs vec4s each, their
// widths as equal as possible (the wider first).
template <int kMaxVecs, class F>
__attribute__((always_inline)) inline void for_each_tile(int ld, F&& f) {
  const int vecs = ld / 4;
  const int tiles = (vecs + kMaxVecs - 1) / kMaxVecs;
  int b0 = 0;
  for (int i = 0; i < tiles; ++i) {
    const int width = vecs / tiles + (i < vecs % tiles ? 1 : 0);
    with_vec_count(width, [&](auto n) __attribute__((always_inline)) { f(b0, n); });
    b0 += 4 * width;
  }
}

// Lanes [b0, b0 + 4·kVecs) of out = x·M: even and odd rows accumulate
// separately (half the dependency chain), each broadcast of x feeding
// kVecs multiply-adds.
template <int kVecs>
__attribute__((always_inline)) inline void vector_matrix_tile(const double* x, const double* M,
                                                              int rows, int ld, int b0,
                                                              double* out) {
  vec4 e[kVecs], o[kVecs];
  for (int j = 0; j < kVecs; ++j) e[j] = o[j] = splat4(0.0);
  int a = 0;
  for (; a + 1 < rows; a += 2) {
    const vec4 xe = splat4(x[a]), xo = splat4(x[a + 1]);
    const double* me = M + static_cast<int64_t>(a) * ld + b0;
    for (int j = 0; j < kVecs; ++j) {
      e[j] += xe * load4(me + 4 * j);
      o[j] += xo * load4(me + ld + 4 * j);
    }
  }
  if (a < rows) {
    const vec4 xe = splat4(x[a]);
    const double* me = M + static_cast<int64_t>(a) * ld + b0;
    for (int j = 0; j < kVecs; ++j) e[j] += xe * load4(me + 4 * j);
  }
  for (int j = 0; j < kVecs; ++j) store4(out + b0 + 4 * j, e[j] + o[j]);
}

// out[b] = Σ_{a < rows} x[a] · M[a][b] for b < ld; M has row stride ld.
__attribute__((always_inline)) inline void vector_matrix(const double* x, const double* M, int rows, int ld, double* out) {
  for (int b0 = 0; b0 < ld; b0 += 24)
    with_vec_count(std::min(ld - b0, 24) / 4, [&](auto n) __attribute__((always_inline)) {
      vector_matrix_tile<n>(x, M, rows, ld, b0, out);
    });
}

// Lanes [b0, b0 + 4·kVecs) of vector_matrix_sum.
template <int kVecs>
__attribute__((always_inline)) inline void vector_matrix_sum_tile(const double* x, const double* M,
                                                                  const double* y, const double* N,
                                                                  int rows, int ld, int b0,
                                                                  double* out) {
  vec4 e[kVecs], o[kVecs], f[kVecs], p[kVecs];
  for (int j = 0; j < kVecs; ++j) e[j] = o[j] = f[j] = p[j] = splat4(0.0);
  int a = 0;
  for (; a + 1 < rows; a += 2) {
    const int64_t row = static_cast<int64_t>(a) * ld + b0;
    const vec4 xe = splat4(x[a]), xo = splat4(x[a + 1]);
    const vec4 ye = splat4(y[a]), yo = splat4(y[a + 1]);
    for (int j = 0; j < kVecs; ++j) {
      e[j] += xe * load4(M + row + 4 * j);
      o[j] += xo * load4(M + row + ld + 4 * j);
      f[j] += ye * load4(N + row + 4 * j);
      p[j] += yo * load4(N + row + ld + 4 * j);
    }
  }
  if (a < rows) {
    const int64_t row = static_cast<int64_t>(a) * ld + b0;
    const vec4 xe = splat4(x[a]), ye = splat4(y[a]);
    for (int j = 0; j < kVecs; ++j) {
      e[j] += xe * load4(M + row + 4 * j);
      f[j] += ye * load4(N + row + 4 * j);
    }
  }
  for (int j = 0; j < kVecs; ++j) store4(out + b0 + 4 * j, (e[j] + o[j]) + (f[j] + p[j]));
}

// Lanes [b0, b0 + 4·kVecs) of vector_matrix_sum for wide rows: rows not
// split even/odd, as 2·kVecs >= 8 chains already hide the multiply-adds'
// latency, and then each broadcast of x and y feeds kVecs of them.
template <int kVecs>
__attribute__((always_inline)) inline void vector_matrix_sum_wide_tile(
    const double* x, const double* M, const double* y, const double* N, int rows, int ld, int b0,
    double* out) {
  vec4 e[kVecs], f[kVecs];
  for (int j = 0; j < kVecs; ++j) e[j] = f[j] = splat4(0.0);
  for (int a = 0; a < rows; ++a) {
    const int64_t row = static_cast<int64_t>(a) * ld + b0;
    const vec4 xa = splat4(x[a]), ya = splat4(y[a]);
    for (int j = 0; j < kVecs; ++j) {
      e[j] += xa * load4(M + row + 4 * j);
      f[j] += ya * load4(N + row + 4 * j);
    }
  }
  for (int j = 0; j < kVecs; ++j) store4(out + b0 + 4 * j, e[j] + f[j]);
}

// out[b] = Σ_{a < rows} x[a] · M[a][b] + y[a] · N[a][b] for b < ld: two
// vector-matrix products summed in one sweep (twice the independent
// accumulator chains of vector_matrix). M and N have row stride ld. Up to
// 24 lanes at a time from 16 on (fewer broadcasts and loads per
// multiply-add); narrower rows keep the even/odd split.
__attribute__((always_inline)) inline void vector_matrix_sum(const double* x, const double* M,
                                                             const double* y, const double* N,
                                                             int rows, int ld, double* out) {
  if (ld >= 16) {
    for (int b0 = 0; b0 < ld; b0 += 24)
      with_vec_count(std::min(ld - b0, 24) / 4, [&](auto n) __attribute__((always_inline)) {
        vector_matrix_sum_wide_tile<n>(x, M, y, N, rows, ld, b0, out);
      });
    return;
  }
  int b0 = 0;
  for (; b0 + 8 <= ld; b0 += 8) vector_matrix_sum_tile<2>(x, M, y, N, rows, ld, b0, out);
  if (b0 < ld) vector_matrix_sum_tile<1>(x, M, y, N, rows, ld, b0, out);
}

// Lanes [b0, b0 + 4·kVecs) of vector_pair_matrix_impl.
template <bool kWithN, int kVecs>
__attribute__((always_inline)) inline void vector_pair_matrix_tile(
    const double* x, const double* y, const double* M, const double* N, int rows, int ld, int b0,
    double* out_xm, double* out_ym, double* out_xn) {
  vec4 xm[kVecs], ym[kVecs], xn[kVecs];
  for (int j = 0; j < kVecs; ++j) xm[j] = ym[j] = xn[j] = splat4(0.0);
  for (int a = 0; a < rows; ++a) {
    const double* me = M + static_cast<int64_t>(a) * ld + b0;
    const vec4 xa = splat4(x[a]), ya = splat4(y[a]);
    for (int j = 0; j < kVecs; ++j) {
      const vec4 m = load4(me + 4 * j);
      xm[j] += xa * m;
      ym[j] += ya * m;
    }
    if (kWithN) {
      const double* ne = N + static_cast<int64_t>(a) * ld + b0;
      for (int j = 0; j < kVecs; ++j) xn[j] += xa * load4(ne + 4 * j);
    }
  }
  for (int j = 0; j < kVecs; ++j) {
    store4(out_xm + b0 + 4 * j, xm[j]);
    store4(out_ym + b0 + 4 * j, ym[j]);
    if (kWithN) store4(out_xn + b0 + 4 * j, xn[j]);
  }
}

// out_xm = x·M, out_ym = y·M and (kWithN) out_xn = x·N in one sweep over the
// rows of M and N (row stride ld): each row of M is loaded once for x and y,
// and the products' independent accumulator chains overlap where separate
// products would each wait on their own. Tiles of up to 12 lanes with N (9
// chains) and 24 without (12 chains: 6 chains of 4-cycle multiply-adds
// leave the units idle) keep the multiply-adds busy without splitting the
// rows even/odd as vector_matrix does (the split doubles the accumulators,
// narrowing the tiles). 24 lanes with N would take 18 accumulators, more
// than AVX2's 16 registers.
template <bool kWithN>
__attribute__((always_inline)) inline void vector_pair_matrix_impl(
    const double* x, const double* y, const double* M, const double* N, int rows, int ld,
    double* out_xm, double* out_ym, double* out_xn) {
  constexpr int kLanes = kWithN ? 12 : 24;
  for (int b0 = 0; b0 < ld; b0 += kLanes)
    with_vec_count(std::min(ld - b0, kLanes) / 4, [&](auto n) __attribute__((always_inline)) {
      vector_pair_matrix_tile<kWithN, n>(x, y, M, N, rows, ld, b0, out_xm, out_ym, out_xn);
    });
}

// out_x = x·M and out_y = y·M in one sweep over M.
__attribute__((always_inline)) inline void vector_pair_matrix(const double* x, const double* y,
                                                              const double* M, int rows, int ld,
                                                              double* out_x, double* out_y) {
  vector_pair_matrix_impl<false>(x, y, M, nullptr, rows, ld, out_x, out_y, nullptr);
}

// out_xm = x·M, out_ym = y·M and out_xn = x·N in one sweep.
__attribute__((always_inline)) inline void vector_pair_matrix_and_product(
    const double* x, const double* y, const double* M, const double* N, int rows, int ld,
    double* out_xm, double* out_ym, double* out_xn) {
  vector_pair_matrix_impl<true>(x, y, M, N, rows, ld, out_xm, out_ym, out_xn);
}

// Columns [b0, b0 + 4·kVecs) of rows a0 and a0 + 1 (when `two`) of O = AᵀB,
// summed over t in registers.
template <int kVecs>
__attribute__((always_inline)) inline void transposed_product_tile(const double* A,
                                                                   const double* B, int64_t n,
                                                                   int ld, int a0, bool two,
                                                                   int b0, double* O) {
  vec4 r0[kVecs], r1[kVecs];
  for (int j = 0; j < kVecs; ++j) r0[j] = r1[j] = splat4(0.0);
  for (int64_t t = 0; t < n; ++t) {
    const vec4 x0 = splat4(A[t * ld + a0]);
    const vec4 x1 = splat4(two ? A[t * ld + a0 + 1] : 0.0);
    const double* b = B + t * ld + b0;
    for (int j = 0; j < kVecs; ++j) {
      const vec4 v = load4(b + 4 * j);
      r0[j] += x0 * v;
      r1[j] += x1 * v;
    }
  }
  double* o = O + static_cast<int64_t>(a0) * ld + b0;
  for (int j = 0; j < kVecs; ++j) store4(o + 4 * j, r0[j]);
  if (two)
    for (int j = 0; j < kVecs; ++j) store4(o + ld + 4 * j, r1[j]);
}

// O[a][b] = Σ_{t < n} A[t][a] · B[t][b] for a < rows, b < ld: a sum of
// outer products (AᵀB), two rows of O by up to 24 columns at a time (12
// accumulators: each broadcast of A feeds six multiply-adds). A, B and O
// have row stride ld.
__attribute__((always_inline)) inline void transposed_product(const double* A, const double* B,
                                                              int64_t n, int rows, int ld,
                                                              double* O) {
  for (int a0 = 0; a0 < rows; a0 += 2) {
    const bool two = a0 + 1 < rows;
    for (int b0 = 0; b0 < ld; b0 += 24)
      with_vec_count(std::min(ld - b0, 24) / 4, [&](auto k) __attribute__((always_inline)) {
        transposed_product_tile<k>(A, B, n, ld, a0, two, b0, O);
      });
  }
}

// Rows [t0, t0 + kRows) and lanes [b0, b0 + 4·kVecs) of matrix_product.
template <int kRows, int kVecs>
__attribute__((always_inline)) inline void matrix_product_tile(const double* A, const double* M,
                                                               int rows, int ld, int64_t t0,
                                                               int b0, double* X) {
  vec4 acc[kRows][kVecs];
  for (int i = 0; i < kRows; ++i)
    for (int j = 0; j < kVecs; ++j) acc[i][j] = splat4(0.0);
  for (int a = 0; a < rows; ++a) {
    const double* m = M + static_cast<int64_t>(a) * ld + b0;
    vec4 row[kVecs];
    for (int j = 0; j < kVecs; ++j) row[j] = load4(m + 4 * j);
    for (int i = 0; i < kRows; ++i) {
      const vec4 x = splat4(A[(t0 + i) * ld + a]);
      for (int j = 0; j < kVecs; ++j) acc[i][j] += x * row[j];
    }
  }
  for (int i = 0; i < kRows; ++i)
    for (int j = 0; j < kVecs; ++j) store4(X + (t0 + i) * ld + b0 + 4 * j, acc[i][j]);
}

// X[t][b] = Σ_{a < rows} A[t][a] · M[a][b] for t < n, b < ld: n vector-matrix
// products with one matrix, four vectors at a time, so that each row of M
// loaded feeds four of them (12 accumulators: 4 rows by 3 vec4s). Where the
// vectors are known ahead, this replaces a product inside a sequential
// sweep, whose matrices overflow the L1 cache from about 45 labels on
// (two 49 x 52 matrices take 40 KB) and are then read from L2 at every
// position. Each entry sums over a in order, as vector_pair_matrix does.
// A, M and X have row stride ld.
__attribute__((always_inline)) inline void matrix_product(const double* A, const double* M,
                                                          int64_t n, int rows, int ld,
                                                          double* X) {
  for_each_tile<3>(ld, [&](int b0, auto k) __attribute__((always_inline)) {
    int64_t t0 = 0;
    for (; t0 + 4 <= n; t0 += 4) matrix_product_tile<4, k>(A, M, rows, ld, t0, b0, X);
    switch (n - t0) {
      case 3: matrix_product_tile<3, k>(A, M, rows, ld, t0, b0, X); break;
      case 2: matrix_product_tile<2, k>(A, M, rows, ld, t0, b0, X); break;
      case 1: matrix_product_tile<1, k>(A, M, rows, ld, t0, b0, X); break;
      default: break;
    }
  });
}

// exp(row[b] - m) for the kVecs vec4s at row (see exp_shifted_row). The
// polynomials of the vec4s are evaluated side by side: one row's Horner
// chain is 12 dependent multiply-adds, and with the vec4s one after the
// other the out-of-order window holds too few of them to hide that latency.
template <int kVecs>
__attribute__((always_inline)) inline void exp_shifted_tile(double* row, double m) {
  const vec4 log2e = splat4(1.4426950408889634);
  const vec4 ln2_hi = splat4(6.93147180369123816490e-01);  // Cody-Waite split of ln 2
  const vec4 ln2_lo = splat4(1.90821492927058770002e-10);
  const vec4 shifter = splat4(6755399441055744.0);  // 1.5 · 2^52: adding it rounds to an integer
  const vec4 floor_arg = splat4(-708.0);
  // Each coefficient stored four times: the multiply-adds read it from
  // memory as an operand (with 13 scalars the compiler broadcast each one
  // into a register at every use, two extra instructions per term).
#define SSCRF_C4(x) {x, x, x, x}
  alignas(32) static const double coef[13][4] = {
      SSCRF_C4(1.0 / 479001600.0), SSCRF_C4(1.0 / 39916800.0), SSCRF_C4(1.0 / 3628800.0),
      SSCRF_C4(1.0 / 362880.0),    SSCRF_C4(1.0 / 40320.0),    SSCRF_C4(1.0 / 5040.0),
      SSCRF_C4(1.0 / 720.0),       SSCRF_C4(1.0 / 120.0),      SSCRF_C4(1.0 / 24.0),
      SSCRF_C4(1.0 / 6.0),         SSCRF_C4(0.5),              SSCRF_C4(1.0),
      SSCRF_C4(1.0)};
#undef SSCRF_C4
  vec4 r[kVecs], p[kVecs], scale[kVecs];
  for (int j = 0; j < kVecs; ++j) {
    const vec4 x = load4(row + 4 * j) - splat4(m);
    const ivec4 tiny = x < floor_arg;
    const vec4 xc = tiny ? floor_arg : x;
    const vec4 shifted = xc * log2e + shifter;  // k sits in the low mantissa bits
    const vec4 kd = shifted - shifter;
    r[j] = (xc - kd * ln2_hi) - kd * ln2_lo;
    // 2^k from the bits of `shifted`: (bits + 1023) << 52 keeps (k + 1023) << 52;
    // 0 where the argument is below the floor (p is finite and positive, so
    // p · 0 is the +0 that lane is meant to get)
    const ivec4 bits = ((ivec4)shifted + 1023) << 52;  // vector casts reinterpret the bits
    scale[j] = tiny ? splat4(0.0) : (vec4)bits;
    p[j] = load4(coef[0]);
  }
  for (int i = 1; i < 13; ++i)
    for (int j = 0; j < kVecs; ++j) p[j] = p[j] * r[j] + load4(coef[i]);
  for (int j = 0; j < kVecs; ++j) store4(row + 4 * j, p[j] * scale[j]);
}

// row[b] = exp(row[b] - m) for b < ld, where row[b] <= m or row[b] = -inf
// (gives 0). Relative error below 1e-15; arguments below -708 give 0 (those
// factors are under 1e-307 of the row maximum). exp(x) = 2^k · exp(r) with
// k = round(x / ln 2), |r| <= ln2 / 2, exp(r) by its degree-12 Taylor
// polynomial (truncation error < 2e-16). Four vec4s at a time: their
// accumulators, reduced arguments and scales fill 12 of AVX2's 16 registers.
__attribute__((always_inline)) inline void exp_shifted_row(double* row, int ld, double m) {
  for (int b = 0; b < ld; b += 16)
    with_vec_count(std::min(ld - b, 16) / 4, [&](auto k) __attribute__((always_inline)) {
      exp_shifted_tile<k>(row + b, m);
    });
}

}  // namespace sscrf
