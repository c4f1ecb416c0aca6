// Scaled forward-backward over the states that can emit each token (Rabiner
// 1989, §V.A on scaling): α̂_t(j) = p(s_t = j | x_≤t), and
// β̂_t(j) = p(x_>t | s_t = j) / p(x_>t | x_≤t), so that α̂·β̂ is the posterior
// and log p(x) = Σ_t log c_t, c_t the forward step's normaliser.
#include "representations/hidden_markov.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "runtime/errors.hpp"
#include "runtime/parallel.hpp"
#include "runtime/scratch.hpp"

namespace sscrf {

namespace {

struct Workspace {
  std::vector<double> alpha, beta, scale, weighted;
  std::vector<int64_t> entry;  // [n + 1] the sentence's entries of token t
};

// The passes over one sentence x[0..n) (n >= 1); returns log p(x) and
// leaves α̂ and β̂ in ws, at the entries ws.entry[t] + q of token t's q-th
// state. With `transitions` [K][K], adds ξ_t(i, j) = p(s_t-1 = i, s_t = j | x)
// to it.
double forward_backward(const SparseHmm& hmm, const int32_t* x, int64_t n, Workspace& ws,
                        double* transitions) {
  const int64_t K = hmm.K;
  ws.entry.resize(static_cast<size_t>(n + 1));
  ws.entry[0] = 0;
  int64_t widest = 0;
  for (int64_t t = 0; t < n; ++t) {
    const int64_t k = hmm.support_ptr[x[t] + 1] - hmm.support_ptr[x[t]];
    ws.entry[t + 1] = ws.entry[t] + k;
    widest = std::max(widest, k);
  }
  ws.alpha.assign(static_cast<size_t>(ws.entry[n]), 0.0);
  ws.beta.resize(static_cast<size_t>(ws.entry[n]));
  ws.scale.resize(static_cast<size_t>(n));
  ws.weighted.resize(static_cast<size_t>(widest));
  double* alpha = ws.alpha.data();
  double* beta = ws.beta.data();
  const int64_t* entry = ws.entry.data();

  double log_p = 0.0;
  for (int64_t t = 0; t < n; ++t) {
    const int64_t e = hmm.support_ptr[x[t]], k = entry[t + 1] - entry[t];
    const int32_t* states = hmm.support.data() + e;
    const double* emission = hmm.emission.data() + e;
    double* a = alpha + entry[t];
    if (t == 0) {
      for (int64_t j = 0; j < k; ++j) a[j] = hmm.start[states[j]];
    } else {
      const int64_t ep = hmm.support_ptr[x[t - 1]], kp = entry[t] - entry[t - 1];
      const int32_t* previous = hmm.support.data() + ep;
      const double* ap = alpha + entry[t - 1];
      for (int64_t i = 0; i < kp; ++i) {
        const double* row = hmm.transitions.data() + previous[i] * K;
        for (int64_t j = 0; j < k; ++j) a[j] += ap[i] * row[states[j]];
      }
    }
    double c = 0.0;
    for (int64_t j = 0; j < k; ++j) {
      a[j] *= emission[j];
      c += a[j];
    }
    // below 1e-300 the scaling 1 / c would overflow
    if (!(c > 1e-300))
      throw InputError("the HMM gives a sentence probability 0 at its token " +
                       std::to_string(t) + " (symbol " + std::to_string(x[t]) +
                       "): no state sequence can emit it, or its probability underflows");
    const double inv = 1.0 / c;
    for (int64_t j = 0; j < k; ++j) a[j] *= inv;
    ws.scale[static_cast<size_t>(t)] = c;
    log_p += std::log(c);
  }

  std::fill(beta + entry[n - 1], beta + entry[n], 1.0);
  double* w = ws.weighted.data();
  for (int64_t t = n - 1; t >= 1; --t) {
    const int64_t e = hmm.support_ptr[x[t]], k = entry[t + 1] - entry[t];
    const int32_t* states = hmm.support.data() + e;
    const double* emission = hmm.emission.data() + e;
    const double inv = 1.0 / ws.scale[static_cast<size_t>(t)];
    for (int64_t j = 0; j < k; ++j) w[j] = emission[j] * beta[entry[t] + j] * inv;
    const int64_t kp = entry[t] - entry[t - 1];
    const int32_t* previous = hmm.support.data() + hmm.support_ptr[x[t - 1]];
    const double* ap = alpha + entry[t - 1];
    double* bp = beta + entry[t - 1];
    for (int64_t i = 0; i < kp; ++i) {
      const double* row = hmm.transitions.data() + previous[i] * K;
      double sum = 0.0;
      if (transitions) {
        double* counts = transitions + previous[i] * K;
        for (int64_t j = 0; j < k; ++j) {
          const double p = row[states[j]] * w[j];
          sum += p;
          counts[states[j]] += ap[i] * p;
        }
      } else {
        for (int64_t j = 0; j < k; ++j) sum += row[states[j]] * w[j];
      }
      bp[i] = sum;
    }
  }
  return log_p;
}

// Groups of sentences (of ids[i], i in [cut[g], cut[g+1])) of at least
// `group_tokens` tokens each (the last may hold fewer), cut by the corpus alone.
std::vector<int64_t> group_cuts(const int64_t* offsets, const int64_t* ids, int64_t n,
                                int64_t group_tokens) {
  std::vector<int64_t> cut{0};
  int64_t tokens = 0;
  for (int64_t i = 0; i < n; ++i) {
    tokens += offsets[ids[i] + 1] - offsets[ids[i]];
    if (tokens >= group_tokens) {
      cut.push_back(i + 1);
      tokens = 0;
    }
  }
  if (cut.back() != n) cut.push_back(n);
  return cut;
}

// The E-step over the sentences ids[0..n): returns their log p, writes the
// expected transitions [K][K] and starts [K], and adds the expected
// emissions to emission [support entries]. Groups of sentences run in
// parallel, their sums added in group order, and each symbol's emissions in
// the order of its tokens, so the result has the same bits at any thread
// count.
double e_step(const SparseHmm& hmm, const int32_t* symbols, const int64_t* offsets,
              const int64_t* ids, int64_t n, int n_threads, double* transitions, double* start,
              double* emission) {
  const int64_t K = hmm.K, KK = K * K, n_symbols = hmm.n_symbols();
  // A group's sums hold [log p | transitions (K×K) | start (K)]: groups of
  // at least K²/8 tokens keep them within a few times the tokens' posteriors.
  const int64_t width = 1 + KK + K;
  const std::vector<int64_t> cut = group_cuts(offsets, ids, n, std::max<int64_t>(1024, KK / 8));
  const int64_t n_groups = static_cast<int64_t>(cut.size()) - 1;
  std::vector<double> sums(static_cast<size_t>(n_groups * width), 0.0);

  // Each token's posteriors, token i of the sentences in order at
  // token_entry[i], summed into the symbols' counts after the passes.
  std::vector<int64_t> sentence_token(static_cast<size_t>(n + 1), 0);
  for (int64_t i = 0; i < n; ++i)
    sentence_token[i + 1] = sentence_token[i] + offsets[ids[i] + 1] - offsets[ids[i]];
  const int64_t n_tokens = sentence_token[n];
  std::vector<int32_t> text(static_cast<size_t>(n_tokens));
  std::vector<int64_t> token_entry(static_cast<size_t>(n_tokens + 1), 0);
  for (int64_t i = 0, t = 0; i < n; ++i)
    for (int64_t u = offsets[ids[i]]; u < offsets[ids[i] + 1]; ++u, ++t) {
      text[t] = symbols[u];
      token_entry[t + 1] = token_entry[t] + hmm.support_ptr[symbols[u] + 1] -
                           hmm.support_ptr[symbols[u]];
    }
  std::vector<double> posterior(static_cast<size_t>(token_entry[n_tokens]));

  const int T = effective_threads(n_threads, std::max<int64_t>(n_groups, 1));
  PerThread<Workspace> workspaces(T);
  ExceptionCarrier carrier;
#pragma omp parallel for num_threads(T) schedule(dynamic, 1) if (T > 1)
  for (int64_t g = 0; g < n_groups; ++g) {
    carrier.run([&] {
      Workspace& ws = workspaces.mine();
      double* group = sums.data() + g * width;
      for (int64_t i = cut[g]; i < cut[g + 1]; ++i) {
        const int64_t length = sentence_token[i + 1] - sentence_token[i];
        if (length == 0) continue;
        const int32_t* x = text.data() + sentence_token[i];
        group[0] += forward_backward(hmm, x, length, ws, group + 1);
        double* gamma = posterior.data() + token_entry[sentence_token[i]];
        for (int64_t e = 0; e < ws.entry[length]; ++e) gamma[e] = ws.alpha[e] * ws.beta[e];
        const int32_t* states = hmm.support.data() + hmm.support_ptr[x[0]];
        for (int64_t j = 0; j < ws.entry[1]; ++j) group[1 + KK + states[j]] += gamma[j];
      }
    });
  }
  carrier.rethrow();

  double log_p = 0.0;
  for (int64_t g = 0; g < n_groups; ++g) log_p += sums[g * width];
  std::fill(transitions, transitions + KK, 0.0);
  std::fill(start, start + K, 0.0);
  // Each thread sums the groups for a slice of the entries, and the
  // emissions of a range of symbols, scanning the tokens in order.
  const int64_t n_ranges = std::min<int64_t>(T, std::max<int64_t>(n_symbols, 1));
#pragma omp parallel for num_threads(T) schedule(static, 1) if (T > 1)
  for (int64_t r = 0; r < n_ranges; ++r) {
    for (int64_t e = KK * r / n_ranges; e < KK * (r + 1) / n_ranges; ++e)
      for (int64_t g = 0; g < n_groups; ++g) transitions[e] += sums[g * width + 1 + e];
    for (int64_t e = K * r / n_ranges; e < K * (r + 1) / n_ranges; ++e)
      for (int64_t g = 0; g < n_groups; ++g) start[e] += sums[g * width + 1 + KK + e];
    const int64_t lo = n_symbols * r / n_ranges, hi = n_symbols * (r + 1) / n_ranges;
    for (int64_t t = 0; t < n_tokens; ++t) {
      const int32_t x = text[t];
      if (x < lo || x >= hi) continue;
      const int64_t e = hmm.support_ptr[x], k = hmm.support_ptr[x + 1] - e;
      const double* gamma = posterior.data() + token_entry[t];
      for (int64_t q = 0; q < k; ++q) emission[e + q] += gamma[q];
    }
  }
  return log_p;
}

}  // namespace

void hmm_expected_counts(const SparseHmm& hmm, const int32_t* symbols, const int64_t* offsets,
                         int64_t n_sentences, int n_threads, HmmCounts& out) {
  std::vector<int64_t> ids(static_cast<size_t>(n_sentences));
  for (int64_t s = 0; s < n_sentences; ++s) ids[s] = s;
  out.transitions.resize(static_cast<size_t>(hmm.K) * hmm.K);
  out.start.resize(static_cast<size_t>(hmm.K));
  out.emission.assign(static_cast<size_t>(hmm.support_ptr.back()), 0.0);
  out.log_likelihood = e_step(hmm, symbols, offsets, ids.data(), n_sentences, n_threads,
                              out.transitions.data(), out.start.data(), out.emission.data());
}

StepwiseEm::StepwiseEm(SparseHmm initial, const std::vector<double>& emission_weights,
                       double n_tokens, double n_sentences, double step_exponent,
                       double emission_pseudo_count, double transition_pseudo_count)
    : hmm_(std::move(initial)),
      n_tokens_(n_tokens),
      step_exponent_(step_exponent),
      emission_pseudo_count_(emission_pseudo_count),
      transition_pseudo_count_(transition_pseudo_count) {
  const int64_t K = hmm_.K;
  const size_t n_entries = hmm_.support.size();
  double total = 0.0;
  for (double w : emission_weights) total += w;
  stored_.resize(n_entries);
  state_totals_.assign(static_cast<size_t>(K), 0.0);
  entries_per_state_.assign(static_cast<size_t>(K), 0.0);
  for (size_t e = 0; e < n_entries; ++e) {
    stored_[e] = emission_weights[e] * (n_tokens / total);
    state_totals_[hmm_.support[e]] += stored_[e];
    entries_per_state_[hmm_.support[e]] += 1.0;
  }
  transitions_.assign(static_cast<size_t>(K * K), n_tokens / static_cast<double>(K * K));
  start_.assign(static_cast<size_t>(K), n_sentences / static_cast<double>(K));
  batch_emission_.assign(n_entries, 0.0);
  touched_.assign(static_cast<size_t>(hmm_.n_symbols()), 0);
  reestimate_chain();
  for (int64_t s = 0; s < hmm_.n_symbols(); ++s) refresh(s);
}

// p(symbol | state) of the symbol's entries from the running counts:
// (μ_e + ε) / (Σ_state μ + ε · entries of the state), μ = scale · stored.
void StepwiseEm::refresh(int64_t symbol) {
  for (int64_t e = hmm_.support_ptr[symbol]; e < hmm_.support_ptr[symbol + 1]; ++e) {
    const int32_t k = hmm_.support[e];
    hmm_.emission[e] = (scale_ * stored_[e] + emission_pseudo_count_) /
                       (scale_ * state_totals_[k] + emission_pseudo_count_ * entries_per_state_[k]);
  }
}

void StepwiseEm::reestimate_chain() {
  const int64_t K = hmm_.K;
  double start_total = 0.0;
  for (int64_t k = 0; k < K; ++k) start_total += start_[k] + transition_pseudo_count_;
  for (int64_t k = 0; k < K; ++k)
    hmm_.start[k] = (start_[k] + transition_pseudo_count_) / start_total;
  for (int64_t a = 0; a < K; ++a) {
    double row = 0.0;
    for (int64_t b = 0; b < K; ++b) row += transitions_[a * K + b] + transition_pseudo_count_;
    for (int64_t b = 0; b < K; ++b)
      hmm_.transitions[a * K + b] = (transitions_[a * K + b] + transition_pseudo_count_) / row;
  }
}

double StepwiseEm::run(const int32_t* symbols, const int64_t* offsets, const int64_t* order,
                       const int64_t* batch_ptr, int64_t n_batches, int n_threads) {
  const int64_t K = hmm_.K;
  std::vector<double> transitions(static_cast<size_t>(K * K)), start(static_cast<size_t>(K));
  std::vector<int64_t> symbols_seen;
  double log_p = 0.0;
  for (int64_t b = 0; b < n_batches; ++b) {
    const int64_t* ids = order + batch_ptr[b];
    const int64_t n = batch_ptr[b + 1] - batch_ptr[b];
    // the batch's symbols, their emissions brought up to date
    symbols_seen.clear();
    int64_t batch_tokens = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t u = offsets[ids[i]]; u < offsets[ids[i] + 1]; ++u, ++batch_tokens)
        if (!touched_[symbols[u]]) {
          touched_[symbols[u]] = 1;
          symbols_seen.push_back(symbols[u]);
        }
    if (batch_tokens == 0) continue;
    for (int64_t s : symbols_seen) refresh(s);
    try {
      log_p += e_step(hmm_, symbols, offsets, ids, n, n_threads, transitions.data(),
                      start.data(), batch_emission_.data());
    } catch (...) {  // the counts stay as they were before the batch
      for (int64_t s : symbols_seen) {
        touched_[s] = 0;
        std::fill(batch_emission_.begin() + hmm_.support_ptr[s],
                  batch_emission_.begin() + hmm_.support_ptr[s + 1], 0.0);
      }
      throw;
    }
    // μ ← (1 - η) μ + η · (n_tokens / batch_tokens) · batch counts
    const double eta = std::pow(static_cast<double>(steps_) + 2.0, -step_exponent_);
    ++steps_;
    const double weight = eta * n_tokens_ / static_cast<double>(batch_tokens);
    scale_ *= 1.0 - eta;
    for (int64_t s : symbols_seen) {
      touched_[s] = 0;
      for (int64_t e = hmm_.support_ptr[s]; e < hmm_.support_ptr[s + 1]; ++e) {
        const double add = weight * batch_emission_[e] / scale_;
        stored_[e] += add;
        state_totals_[hmm_.support[e]] += add;
        batch_emission_[e] = 0.0;
      }
    }
    if (scale_ < 1e-200) {  // the stored counts would overflow: scaled back to 1
      for (double& x : stored_) x *= scale_;
      for (double& x : state_totals_) x *= scale_;
      scale_ = 1.0;
    }
    for (int64_t e = 0; e < K * K; ++e)
      transitions_[e] = (1.0 - eta) * transitions_[e] + weight * transitions[e];
    for (int64_t k = 0; k < K; ++k) start_[k] = (1.0 - eta) * start_[k] + weight * start[k];
    reestimate_chain();
  }
  return log_p;
}

const SparseHmm& StepwiseEm::model() {
  for (int64_t s = 0; s < hmm_.n_symbols(); ++s) refresh(s);
  return hmm_;
}

void hmm_posterior_states(const SparseHmm& hmm, const int32_t* symbols, const int64_t* offsets,
                          int64_t n_sentences, int n_threads, int32_t* states) {
  decode_sentences<Workspace>(
      symbols, offsets, n_sentences, n_threads, states,
      [&](const int32_t* x, int64_t n, Workspace& ws, int32_t* out) {
        forward_backward(hmm, x, n, ws, nullptr);
        for (int64_t t = 0; t < n; ++t) {
          const int64_t e = ws.entry[t], k = ws.entry[t + 1] - e;
          int64_t best = 0;
          double best_p = ws.alpha[e] * ws.beta[e];
          for (int64_t q = 1; q < k; ++q) {
            const double p = ws.alpha[e + q] * ws.beta[e + q];
            if (p > best_p) {
              best_p = p;
              best = q;
            }
          }
          out[t] = hmm.support[hmm.support_ptr[x[t]] + best];
        }
      });
}

}  // namespace sscrf
