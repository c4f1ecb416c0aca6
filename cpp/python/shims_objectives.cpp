// Shims of the corpus-wide objectives and decoders: theta and the outputs
// checked, the chunked evaluation run without the GIL.
#include <cmath>

#include "objectives/decoding.hpp"
#include "objectives/entropy.hpp"
#include "objectives/ge.hpp"
#include "objectives/likelihood.hpp"
#include "objectives/partial.hpp"
#include "python/arrays.hpp"
#include "python/shims.hpp"

namespace sscrf::python {

py::tuple likelihood_shim(const Corpus& corpus, const Layout& layout, const py::object& theta_o,
                          int n_threads, const py::object& out_o) {
  auto theta = checked_theta(corpus, layout, theta_o, false, n_threads);
  require_labels(corpus, layout);
  auto grad = gradient_output(out_o, layout, theta);
  double* g = grad.data;
  double loss;
  {
    py::gil_scoped_release release;
    loss = likelihood_objective(corpus, layout, theta.data(), g, n_threads);
  }
  return py::make_tuple(loss, grad.array);
}

py::tuple partial_likelihood_shim(const Corpus& corpus, const Layout& layout,
                                  const py::object& theta_o, int n_threads,
                                  const py::object& out_o) {
  auto theta = checked_theta(corpus, layout, theta_o, true, n_threads);
  auto grad = gradient_output(out_o, layout, theta);
  double* g = grad.data;
  double loss;
  {
    py::gil_scoped_release release;
    loss = partial_likelihood_objective(corpus, layout, theta.data(), g, n_threads);
  }
  return py::make_tuple(loss, grad.array);
}

std::shared_ptr<AlternativeLabelings> make_alternatives(const Corpus& corpus,
                                                        const py::object& labels_o,
                                                        const py::object& groups_o) {
  auto groups = Array<int64_t>::ensure(groups_o);
  if (!groups || groups.ndim() != 1) fail("groups must be a 1-D int array");
  auto labels = Array<int64_t>::ensure(labels_o);
  if (!labels || labels.ndim() != 1) fail("labels must be a 1-D int array");
  return std::make_shared<AlternativeLabelings>(corpus, labels.data(), labels.shape(0),
                                                groups.data(), groups.shape(0));
}

py::tuple alternatives_likelihood_shim(const Corpus& corpus, const Layout& layout,
                                       const py::object& theta_o, int n_threads,
                                       const AlternativeLabelings& alternatives,
                                       const py::object& out_o) {
  auto theta = checked_theta(corpus, layout, theta_o, false, n_threads);
  auto grad = gradient_output(out_o, layout, theta);
  double* g = grad.data;
  double loss;
  {
    py::gil_scoped_release release;
    loss = alternatives_objective(corpus, layout, theta.data(), g, n_threads, alternatives);
  }
  return py::make_tuple(loss, grad.array);
}

py::tuple entropy_objective_shim(const Corpus& corpus, const Layout& layout,
                                 const py::object& theta_o, int n_threads,
                                 const std::string& method_name, const py::object& out_o) {
  const EntropyMethod method = entropy_method(method_name);
  auto theta = checked_theta(corpus, layout, theta_o, false, n_threads);
  auto grad = gradient_output(out_o, layout, theta);
  double* g = grad.data;
  double loss;
  {
    py::gil_scoped_release release;
    loss = entropy_objective(corpus, layout, theta.data(), g, n_threads, method);
  }
  return py::make_tuple(loss, grad.array);
}

py::tuple viterbi_corpus_shim(const Corpus& corpus, const Layout& layout,
                              const py::object& theta_o, int n_threads) {
  auto theta = checked_theta(corpus, layout, theta_o, true, n_threads);
  py::array_t<int32_t> labels(corpus.n_tokens);
  py::array_t<double> scores(corpus.n_sequences);
  int32_t* lp = labels.mutable_data();
  double* sp = scores.mutable_data();
  {
    py::gil_scoped_release release;
    decode_viterbi(corpus, layout, theta.data(), n_threads, lp, sp);
  }
  return py::make_tuple(labels, scores);
}

py::tuple marginals_corpus_shim(const Corpus& corpus, const Layout& layout,
                                const py::object& theta_o, int n_threads) {
  auto theta = checked_theta(corpus, layout, theta_o, true, n_threads);
  py::array_t<double> node({static_cast<py::ssize_t>(corpus.n_tokens),
                            static_cast<py::ssize_t>(layout.S)});
  py::array_t<double> log_z(corpus.n_sequences);
  double* np = node.mutable_data();
  double* zp = log_z.mutable_data();
  {
    py::gil_scoped_release release;
    decode_marginals(corpus, layout, theta.data(), n_threads, np, zp);
  }
  return py::make_tuple(node, log_z);
}

py::array_t<double> log_probability_corpus_shim(const Corpus& corpus, const Layout& layout,
                                                const py::object& theta_o, int n_threads) {
  auto theta = checked_theta(corpus, layout, theta_o, false, n_threads);
  require_labels(corpus, layout);
  py::array_t<double> out(corpus.n_sequences);
  double* op = out.mutable_data();
  {
    py::gil_scoped_release release;
    sequence_log_probabilities(corpus, layout, theta.data(), n_threads, op);
  }
  return out;
}

py::array_t<double> emissions_corpus_shim(const Corpus& corpus, const Layout& layout,
                                          const py::object& theta_o, int n_threads) {
  auto theta = checked_theta(corpus, layout, theta_o, false, n_threads);
  py::array_t<double> out({static_cast<py::ssize_t>(corpus.n_tokens),
                           static_cast<py::ssize_t>(layout.S)});
  double* op = out.mutable_data();
  {
    py::gil_scoped_release release;
    score_emissions(corpus, layout, theta.data(), n_threads, op);
  }
  return out;
}

py::tuple entropy_corpus_shim(const Corpus& corpus, const Layout& layout,
                              const py::object& theta_o, int n_threads) {
  auto theta = checked_theta(corpus, layout, theta_o, false, n_threads);
  py::array_t<double> seq(corpus.n_sequences), tok(corpus.n_tokens), tr(corpus.n_tokens);
  double* sp = seq.mutable_data();
  double* tp = tok.mutable_data();
  double* rp = tr.mutable_data();
  {
    py::gil_scoped_release release;
    decode_entropy(corpus, layout, theta.data(), n_threads, sp, tp, rp);
  }
  return py::make_tuple(seq, tok, tr);
}

std::shared_ptr<ConstraintFirings> make_firings(const Corpus& corpus,
                                                const py::object& constraint_of_attribute_o,
                                                int n_constraints) {
  auto map = Array<int64_t>::ensure(constraint_of_attribute_o);
  if (!map || map.ndim() != 1)
    fail("constraint_of_attribute must be a 1-D int array with an entry per attribute");
  return std::make_shared<ConstraintFirings>(corpus, map.data(), map.shape(0), n_constraints);
}

py::array_t<double> ge_expectations_shim(const Corpus& corpus, const Layout& layout,
                                         const py::object& theta_o, int n_threads,
                                         const ConstraintFirings& firings,
                                         const py::object& emissions_o) {
  auto theta = checked_theta(corpus, layout, theta_o, false, n_threads);
  firings.check_corpus(corpus);
  double* emissions = rows_buffer(emissions_o, corpus.n_tokens, layout.S, true, "emissions");
  py::array_t<double> sums({static_cast<py::ssize_t>(firings.n_constraints),
                            static_cast<py::ssize_t>(layout.S)});
  double* sp = sums.mutable_data();
  {
    py::gil_scoped_release release;
    ge_expectations(corpus, layout, theta.data(), n_threads, firings, sp, emissions);
  }
  return sums;
}

namespace {

// GE's pass-2 weights (n_constraints, S), finite, for firings built on `corpus`.
Doubles checked_score_weights(const Corpus& corpus, const Layout& layout,
                              const ConstraintFirings& firings, const py::object& score_weights_o) {
  firings.check_corpus(corpus);
  auto weights = Doubles::ensure(score_weights_o);
  if (!weights || weights.ndim() != 2 || weights.shape(1) != layout.S ||
      weights.shape(0) != firings.n_constraints)
    fail("score_weights must be a float array (n_constraints, S)");
  require_finite(weights.data(), weights.size(), "score_weights");
  return weights;
}

}  // namespace

py::array ge_gradient_shim(const Corpus& corpus, const Layout& layout, const py::object& theta_o,
                           int n_threads, const ConstraintFirings& firings,
                           const py::object& score_weights_o, const py::object& out_o,
                           const py::object& emissions_o) {
  const double* emissions =
      rows_buffer(emissions_o, corpus.n_tokens, layout.S, false, "emissions");
  // Pass 1 checked W at this theta; reading its rows, pass 2 reads only T,
  // start and end (the check of a dense W is 0.3% of an evaluation).
  auto theta = checked_theta(corpus, layout, theta_o, false, n_threads,
                             emissions ? layout.transitions_offset() : 0);
  auto weights = checked_score_weights(corpus, layout, firings, score_weights_o);
  auto grad = gradient_output(out_o, layout, theta);
  double* g = grad.data;
  {
    py::gil_scoped_release release;
    ge_gradient(corpus, layout, theta.data(), g, n_threads, firings, weights.data(), emissions);
  }
  return grad.array;
}

py::tuple entropy_ge_gradient_shim(const Corpus& corpus, const Layout& layout,
                                   const py::object& theta_o, int n_threads,
                                   const ConstraintFirings& firings,
                                   const py::object& score_weights_o, double entropy_weight,
                                   const py::object& out_o, const py::object& emissions_o) {
  const double* emissions =
      rows_buffer(emissions_o, corpus.n_tokens, layout.S, false, "emissions");
  auto theta = checked_theta(corpus, layout, theta_o, false, n_threads);
  auto weights = checked_score_weights(corpus, layout, firings, score_weights_o);
  if (!std::isfinite(entropy_weight) || entropy_weight < 0)
    fail("entropy_weight must be finite and >= 0");
  auto grad = gradient_output(out_o, layout, theta);
  double* g = grad.data;
  double value;
  {
    py::gil_scoped_release release;
    value = entropy_ge_gradient(corpus, layout, theta.data(), g, n_threads, firings,
                                weights.data(), entropy_weight, emissions);
  }
  return py::make_tuple(value, grad.array);
}

}  // namespace sscrf::python
