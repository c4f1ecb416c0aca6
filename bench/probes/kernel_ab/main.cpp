// Times build a against build b of the lattice kernels, alternating them in
// one process (the machine's drift hits both alike): median ns per token of
// each and the median of per-round ratios b / a.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

double kernel_ab_a(const double*, const double*, int, const int64_t*, int, int);
double kernel_ab_b(const double*, const double*, int, const int64_t*, int, int);

int main(int argc, char** argv) {
  const int kernel = argc > 1 ? std::atoi(argv[1]) : 0;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 30;
  const int S = argc > 3 ? std::atoi(argv[3]) : 22;
  const int n_chains = 400;
  std::mt19937_64 rng(1);
  std::normal_distribution<double> normal;
  std::uniform_int_distribution<int> length(5, 45);
  std::vector<int64_t> offsets{0};
  for (int s = 0; s < n_chains; ++s) offsets.push_back(offsets.back() + length(rng));
  std::vector<double> E(offsets.back() * S), T(static_cast<size_t>(S) * S);
  for (double& v : E) v = 2.0 * normal(rng);
  for (double& v : T) v = 0.5 * normal(rng);
  auto ns_per_token = [&](auto entry) {
    const auto t0 = std::chrono::steady_clock::now();
    volatile double keep = entry(E.data(), T.data(), S, offsets.data(), n_chains, kernel);
    (void)keep;
    const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
    return dt.count() * 1e9 / static_cast<double>(offsets.back());
  };
  for (int r = 0; r < 5; ++r) ns_per_token(kernel_ab_a), ns_per_token(kernel_ab_b);
  std::vector<double> a, b, ratio;
  for (int r = 0; r < rounds; ++r) {
    const bool a_first = r % 2 == 0;  // alternate the order too
    const double first = ns_per_token(a_first ? kernel_ab_a : kernel_ab_b);
    const double second = ns_per_token(a_first ? kernel_ab_b : kernel_ab_a);
    a.push_back(a_first ? first : second);
    b.push_back(a_first ? second : first);
    ratio.push_back(b.back() / a.back());
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::printf("%s, S = %d, %d rounds: a %.1f ns/token, b %.1f ns/token, median b/a %.3f\n",
              kernel == 0 ? "entropy gradient" : kernel == 1 ? "forward-backward" : "GE gradient", S, rounds, median(a),
              median(b), median(ratio));
}
