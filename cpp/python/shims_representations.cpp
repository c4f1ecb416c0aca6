// Shims of the word-representation kernels (cpp/representations/): they
// check shapes, ids and finiteness, release the GIL and call the core.
#include <cstdint>
#include <string>
#include <vector>

#include "python/arrays.hpp"
#include "python/shims.hpp"
#include "representations/cooccurrence.hpp"
#include "representations/hidden_markov.hpp"
#include "representations/hmm_viterbi.hpp"
#include "representations/jacobi_eigen.hpp"
#include "representations/products.hpp"

namespace sscrf::python {

namespace {

template <class T>
Array<T> checked_array(const py::object& o, int ndim, const char* name) {
  auto a = Array<T>::ensure(o);
  if (!a || a.ndim() != ndim)
    fail(std::string(name) + " must be a " + std::to_string(ndim) + "-D numeric array");
  return a;
}

Doubles checked_matrix(const py::object& o, const char* name, int n_threads) {
  auto a = checked_array<double>(o, 2, name);
  require_finite(a.data(), a.size(), name, n_threads);
  return a;
}

// Probabilities: finite and in [0, 1].
void require_probabilities(const Doubles& a, const char* name) {
  for (py::ssize_t i = 0; i < a.size(); ++i)
    if (!(a.data()[i] >= 0.0 && a.data()[i] <= 1.0))
      fail(std::string(name) + " must hold probabilities in [0, 1], got " +
           std::to_string(a.data()[i]) + " at " + std::to_string(i));
}

// Sentences of symbols below n_symbols.
void require_sentences(const Array<int32_t>& symbols, const Array<int64_t>& offsets,
                       int64_t n_symbols) {
  if (offsets.size() < 1) fail("offsets must hold at least one entry (0)");
  require_indptr(offsets.data(), offsets.size() - 1, symbols.size());
  for (py::ssize_t t = 0; t < symbols.size(); ++t)
    if (symbols.data()[t] < 0 || symbols.data()[t] >= n_symbols)
      fail("symbols must be in [0, " + std::to_string(n_symbols) + "), got " +
           std::to_string(symbols.data()[t]) + " at " + std::to_string(t));
}

}  // namespace

py::tuple cooccurrence_counts_shim(const py::object& ids_o, const py::object& offsets_o,
                                   int window, int64_t n_words, int n_threads) {
  checked_threads(n_threads);
  auto ids = checked_array<int32_t>(ids_o, 1, "ids");
  auto offsets = checked_array<int64_t>(offsets_o, 1, "offsets");
  if (window < 1 || window > 1000) fail("window must be in [1, 1000], got " + std::to_string(window));
  if (n_words < 1 || n_words > (int64_t{1} << 30))
    fail("n_words must be in [1, 2^30], got " + std::to_string(n_words));
  if (offsets.size() < 1) fail("offsets must hold at least one entry (0)");
  const int64_t n_sentences = offsets.size() - 1;
  require_indptr(offsets.data(), n_sentences, ids.size());
  const int32_t* p = ids.data();
  for (py::ssize_t t = 0; t < ids.size(); ++t)
    if (p[t] >= n_words) fail("ids must be below n_words (" + std::to_string(n_words) +
                              "), got " + std::to_string(p[t]) + " at " + std::to_string(t));
  std::vector<int64_t> keys, counts;
  {
    py::gil_scoped_release release;
    cooccurrence_counts(p, offsets.data(), n_sentences, window, n_words, n_threads, keys, counts);
  }
  return py::make_tuple(array_of<int64_t>(keys), array_of<int64_t>(counts));
}

py::tuple merge_counts_shim(const py::object& ka_o, const py::object& ca_o,
                            const py::object& kb_o, const py::object& cb_o) {
  auto ka = checked_array<int64_t>(ka_o, 1, "keys_a");
  auto ca = checked_array<int64_t>(ca_o, 1, "counts_a");
  auto kb = checked_array<int64_t>(kb_o, 1, "keys_b");
  auto cb = checked_array<int64_t>(cb_o, 1, "counts_b");
  if (ka.size() != ca.size() || kb.size() != cb.size())
    fail("keys and counts must have one length");
  for (const auto* k : {&ka, &kb})
    for (py::ssize_t i = 1; i < k->size(); ++i)
      if (k->data()[i] <= k->data()[i - 1]) fail("keys must increase strictly");
  std::vector<int64_t> keys, counts;
  {
    py::gil_scoped_release release;
    merge_counts(ka.data(), ca.data(), ka.size(), kb.data(), cb.data(), kb.size(), keys, counts);
  }
  return py::make_tuple(array_of<int64_t>(keys), array_of<int64_t>(counts));
}

py::array_t<double> csr_times_dense_shim(const py::object& indptr_o, const py::object& indices_o,
                                         const py::object& data_o, const py::object& B_o,
                                         int n_threads) {
  checked_threads(n_threads);
  auto indptr = checked_array<int64_t>(indptr_o, 1, "indptr");
  auto indices = checked_array<int32_t>(indices_o, 1, "indices");
  auto data = checked_array<double>(data_o, 1, "data");
  auto B = checked_matrix(B_o, "B", n_threads);
  if (indptr.size() < 1) fail("indptr must hold at least one entry (0)");
  if (indices.size() != data.size()) fail("indices and data must have one length");
  const int64_t n_rows = indptr.size() - 1;
  require_indptr(indptr.data(), n_rows, indices.size());
  require_finite(data.data(), data.size(), "data", n_threads);
  const int64_t n_cols = B.shape(0), l = B.shape(1);
  for (py::ssize_t p = 0; p < indices.size(); ++p)
    if (indices.data()[p] < 0 || indices.data()[p] >= n_cols)
      fail("indices must be in [0, B.shape[0]) = [0, " + std::to_string(n_cols) + ")");
  py::array_t<double> out({static_cast<py::ssize_t>(n_rows), static_cast<py::ssize_t>(l)});
  double* o = out.mutable_data();
  {
    py::gil_scoped_release release;
    csr_times_dense(indptr.data(), indices.data(), data.data(), n_rows, B.data(), l, o,
                    n_threads);
  }
  return out;
}

py::array_t<double> gram_matrix_shim(const py::object& A_o, int n_threads) {
  checked_threads(n_threads);
  auto A = checked_matrix(A_o, "A", n_threads);
  const int64_t n = A.shape(0), l = A.shape(1);
  if (l > 4096) fail("A has " + std::to_string(l) + " columns; at most 4096");
  py::array_t<double> out({static_cast<py::ssize_t>(l), static_cast<py::ssize_t>(l)});
  double* o = out.mutable_data();
  {
    py::gil_scoped_release release;
    gram_matrix(A.data(), n, l, o, n_threads);
  }
  return out;
}

py::array_t<double> times_small_shim(const py::object& A_o, const py::object& M_o,
                                     int n_threads) {
  checked_threads(n_threads);
  auto A = checked_matrix(A_o, "A", n_threads);
  auto M = checked_matrix(M_o, "M", n_threads);
  const int64_t n = A.shape(0), l = A.shape(1), m = M.shape(1);
  if (M.shape(0) != l) fail("A has shape " + shape_of(A) + ", M " + shape_of(M) + ": A.shape[1] must be M.shape[0]");
  py::array_t<double> out({static_cast<py::ssize_t>(n), static_cast<py::ssize_t>(m)});
  double* o = out.mutable_data();
  {
    py::gil_scoped_release release;
    times_small(A.data(), n, l, M.data(), m, o, n_threads);
  }
  return out;
}

py::array_t<int64_t> nearest_centroids_shim(const py::object& X_o, const py::object& C_o,
                                            const py::object& group_o,
                                            const py::object& group_ptr_o, int n_threads) {
  checked_threads(n_threads);
  auto X = checked_matrix(X_o, "X", n_threads);
  auto C = checked_matrix(C_o, "C", n_threads);
  auto group = checked_array<int64_t>(group_o, 1, "group");
  auto group_ptr = checked_array<int64_t>(group_ptr_o, 1, "group_ptr");
  const int64_t n = X.shape(0), d = X.shape(1);
  if (C.shape(1) != d) fail("X has shape " + shape_of(X) + ", C " + shape_of(C) + ": one width");
  if (group.size() != n) fail("group must have one entry per row of X");
  const int64_t n_groups = group_ptr.size() - 1;
  if (n_groups < 1) fail("group_ptr must have at least two entries");
  const int64_t* gp = group_ptr.data();
  if (gp[0] != 0 || gp[n_groups] != C.shape(0)) fail("group_ptr must run from 0 to len(C)");
  for (int64_t g = 0; g < n_groups; ++g)
    if (gp[g + 1] <= gp[g]) fail("group_ptr must increase strictly (no empty group)");
  for (int64_t i = 0; i < n; ++i)
    if (group.data()[i] < 0 || group.data()[i] >= n_groups)
      fail("group entries must be in [0, len(group_ptr) - 1)");
  py::array_t<int64_t> out(static_cast<py::ssize_t>(n));
  int64_t* o = out.mutable_data();
  {
    py::gil_scoped_release release;
    nearest_centroids(X.data(), n, d, C.data(), group.data(), gp, o, n_threads);
  }
  return out;
}

py::tuple symmetric_eigen_shim(const py::object& A_o) {
  auto A = checked_matrix(A_o, "A", 1);
  const int64_t n = A.shape(0);
  if (A.shape(1) != n) fail("A must be square, got shape " + shape_of(A));
  if (n > 2048) fail("A has " + std::to_string(n) + " rows; at most 2048");
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < i; ++j)
      if (A.data()[i * n + j] != A.data()[j * n + i]) fail("A must be symmetric");
  py::array_t<double> values(static_cast<py::ssize_t>(n));
  py::array_t<double> V({static_cast<py::ssize_t>(n), static_cast<py::ssize_t>(n)});
  double* pv = values.mutable_data();
  double* pV = V.mutable_data();
  {
    py::gil_scoped_release release;
    symmetric_eigen(A.data(), n, pv, pV);
  }
  return py::make_tuple(values, V);
}

std::shared_ptr<SparseHmm> make_sparse_hmm(const py::object& start_o,
                                           const py::object& transitions_o,
                                           const py::object& support_ptr_o,
                                           const py::object& support_o,
                                           const py::object& emission_o) {
  auto start = checked_array<double>(start_o, 1, "start");
  auto transitions = checked_array<double>(transitions_o, 2, "transitions");
  auto support_ptr = checked_array<int64_t>(support_ptr_o, 1, "support_ptr");
  auto support = checked_array<int32_t>(support_o, 1, "support");
  auto emission = checked_array<double>(emission_o, 1, "emission");
  const int64_t K = start.size();
  if (K < 1 || K > (int64_t{1} << 15))
    fail("start must hold one probability per state, 1 to 32768 states; got " +
         std::to_string(K));
  require_shape(transitions, {K, K}, "transitions");
  if (support_ptr.size() < 2) fail("support_ptr must have at least two entries");
  const int64_t n_symbols = support_ptr.size() - 1;
  require_indptr(support_ptr.data(), n_symbols, support.size());
  if (emission.size() != support.size())
    fail("emission must have one entry per entry of support");
  require_probabilities(start, "start");
  require_probabilities(transitions, "transitions");
  require_probabilities(emission, "emission");
  const int64_t* ptr = support_ptr.data();
  const int32_t* states = support.data();
  for (int64_t s = 0; s < n_symbols; ++s) {
    if (ptr[s + 1] == ptr[s]) fail("symbol " + std::to_string(s) + " has no state in its support");
    for (int64_t e = ptr[s]; e < ptr[s + 1]; ++e) {
      if (states[e] < 0 || states[e] >= K)
        fail("support must hold states in [0, " + std::to_string(K) + "), got " +
             std::to_string(states[e]));
      if (e > ptr[s] && states[e] <= states[e - 1])
        fail("the states of symbol " + std::to_string(s) + "'s support must increase");
    }
  }
  auto hmm = std::make_shared<SparseHmm>();
  hmm->K = static_cast<int32_t>(K);
  hmm->start.assign(start.data(), start.data() + K);
  hmm->transitions.assign(transitions.data(), transitions.data() + K * K);
  hmm->support_ptr.assign(ptr, ptr + n_symbols + 1);
  hmm->support.assign(states, states + support.size());
  hmm->emission.assign(emission.data(), emission.data() + emission.size());
  return hmm;
}

py::tuple hmm_expected_counts_shim(const SparseHmm& hmm, const py::object& symbols_o,
                              const py::object& offsets_o, int n_threads) {
  checked_threads(n_threads);
  auto symbols = checked_array<int32_t>(symbols_o, 1, "symbols");
  auto offsets = checked_array<int64_t>(offsets_o, 1, "offsets");
  require_sentences(symbols, offsets, hmm.n_symbols());
  HmmCounts counts;
  {
    py::gil_scoped_release release;
    hmm_expected_counts(hmm, symbols.data(), offsets.data(), offsets.size() - 1, n_threads,
                        counts);
  }
  const auto K = static_cast<py::ssize_t>(hmm.K);
  py::array_t<double> transition_counts({K, K});
  std::copy(counts.transitions.begin(), counts.transitions.end(),
            transition_counts.mutable_data());
  return py::make_tuple(counts.log_likelihood, array_of<double>(counts.emission),
                        transition_counts, array_of<double>(counts.start));
}

py::array_t<int32_t> hmm_posterior_states_shim(const SparseHmm& hmm, const py::object& symbols_o,
                                          const py::object& offsets_o, int n_threads) {
  checked_threads(n_threads);
  auto symbols = checked_array<int32_t>(symbols_o, 1, "symbols");
  auto offsets = checked_array<int64_t>(offsets_o, 1, "offsets");
  require_sentences(symbols, offsets, hmm.n_symbols());
  py::array_t<int32_t> states(symbols.size());
  int32_t* out = states.mutable_data();
  {
    py::gil_scoped_release release;
    hmm_posterior_states(hmm, symbols.data(), offsets.data(), offsets.size() - 1, n_threads,
                         out);
  }
  return states;
}

py::array_t<int32_t> hmm_viterbi_states_shim(const py::list& hmms_o, const py::object& symbols_o,
                                            const py::object& offsets_o, int n_threads) {
  checked_threads(n_threads);
  std::vector<std::shared_ptr<SparseHmm>> hmms;
  for (const py::handle h : hmms_o) {
    if (!py::isinstance<SparseHmm>(h)) fail("hmms must be a list of SparseHmm");
    hmms.push_back(h.cast<std::shared_ptr<SparseHmm>>());
  }
  auto symbols = checked_array<int32_t>(symbols_o, 1, "symbols");
  auto offsets = checked_array<int64_t>(offsets_o, 1, "offsets");
  for (const auto& hmm : hmms) require_sentences(symbols, offsets, hmm->n_symbols());
  const auto n = symbols.size();
  py::array_t<int32_t> states({static_cast<py::ssize_t>(hmms.size()), n});
  int32_t* out = states.mutable_data();
  {
    py::gil_scoped_release release;
    for (size_t m = 0; m < hmms.size(); ++m)
      hmm_viterbi_states(*hmms[m], symbols.data(), offsets.data(), offsets.size() - 1, n_threads,
                         out + static_cast<py::ssize_t>(m) * n);
  }
  return states;
}

std::shared_ptr<StepwiseEm> make_stepwise_em(const SparseHmm& initial,
                                             const py::object& emission_weights_o,
                                             double n_tokens, double n_sentences,
                                             double step_exponent,
                                             double emission_pseudo_count,
                                             double transition_pseudo_count) {
  auto weights = checked_array<double>(emission_weights_o, 1, "emission_weights");
  if (weights.size() != static_cast<py::ssize_t>(initial.support.size()))
    fail("emission_weights must have one entry per entry of the supports");
  for (py::ssize_t e = 0; e < weights.size(); ++e)
    if (!(weights.data()[e] > 0.0 && weights.data()[e] < 1e250))
      fail("emission_weights must be finite and above 0, got " +
           std::to_string(weights.data()[e]) + " at " + std::to_string(e));
  if (!(n_tokens >= 1.0 && n_tokens < 1e18)) fail("n_tokens must be at least 1");
  if (!(n_sentences >= 1.0 && n_sentences <= n_tokens))
    fail("n_sentences must be in [1, n_tokens]");
  if (!(step_exponent > 0.5 && step_exponent <= 1.0))
    fail("step_exponent must be in (0.5, 1], got " + std::to_string(step_exponent));
  if (!(emission_pseudo_count > 0.0 && emission_pseudo_count < 1e100) ||
      !(transition_pseudo_count > 0.0 && transition_pseudo_count < 1e100))
    fail("pseudo-counts must be finite and above 0");
  std::vector<double> w(weights.data(), weights.data() + weights.size());
  return std::make_shared<StepwiseEm>(initial, w, n_tokens, n_sentences, step_exponent,
                                      emission_pseudo_count, transition_pseudo_count);
}

double stepwise_em_run_shim(StepwiseEm& em, const py::object& symbols_o,
                            const py::object& offsets_o, const py::object& order_o,
                            const py::object& batch_ptr_o, int n_threads) {
  checked_threads(n_threads);
  auto symbols = checked_array<int32_t>(symbols_o, 1, "symbols");
  auto offsets = checked_array<int64_t>(offsets_o, 1, "offsets");
  auto order = checked_array<int64_t>(order_o, 1, "order");
  auto batch_ptr = checked_array<int64_t>(batch_ptr_o, 1, "batch_ptr");
  require_sentences(symbols, offsets, em.n_symbols());
  const int64_t n_sentences = offsets.size() - 1;
  for (py::ssize_t i = 0; i < order.size(); ++i)
    if (order.data()[i] < 0 || order.data()[i] >= n_sentences)
      fail("order must hold sentences in [0, " + std::to_string(n_sentences) + "), got " +
           std::to_string(order.data()[i]));
  if (batch_ptr.size() < 1) fail("batch_ptr must hold at least one entry (0)");
  require_indptr(batch_ptr.data(), batch_ptr.size() - 1, order.size());
  py::gil_scoped_release release;
  return em.run(symbols.data(), offsets.data(), order.data(), batch_ptr.data(),
                batch_ptr.size() - 1, n_threads);
}

py::tuple stepwise_em_model_shim(StepwiseEm& em) {
  const SparseHmm& hmm = em.model();
  const auto K = static_cast<py::ssize_t>(hmm.K);
  py::array_t<double> transitions({K, K});
  std::copy(hmm.transitions.begin(), hmm.transitions.end(), transitions.mutable_data());
  return py::make_tuple(array_of<double>(hmm.start), transitions,
                        array_of<double>(hmm.emission));
}

}  // namespace sscrf::python
