// The named shim functions that module.cpp binds: each converts and checks
// its Python arguments (arrays.hpp), releases the GIL and calls the core.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <string>

#include "layer/attribute_index.hpp"
#include "layer/corpus.hpp"
#include "layer/linear_layer.hpp"
#include "objectives/ge.hpp"
#include "objectives/likelihood.hpp"
#include "representations/hidden_markov.hpp"

namespace sscrf::python {

namespace py = pybind11;

// runtime and optimiser passes (shims_runtime.cpp)
py::dict build_info_shim();
int64_t chunk_tokens_for_shim(int64_t n_labels);
size_t release_scratch_shim();
size_t cached_scratch_bytes_shim();
py::array_t<double> dot_products_shim(const py::sequence& vectors, const py::object& pairs,
                                      int n_threads);
double linear_combination_shim(const py::object& out, const py::object& coefficients,
                               const py::sequence& vectors, const py::object& reference,
                               bool confine, int n_threads);
void step_along_shim(const py::object& out, const py::object& x, double alpha,
                     const py::object& d, int n_threads);
py::object secant_pair_shim(const py::object& x, const py::object& trial,
                            const py::object& gradient, const py::object& previous_gradient,
                            const py::object& step, const py::object& y, int n_threads,
                            const py::object& vectors, const py::object& pairs);
double add_l2_prior_shim(const py::object& theta, const py::object& grad, double c2,
                         int n_threads);

// single-chain lattice kernels (shims_lattice.cpp)
double log_partition_shim(const py::object& emissions, const py::object& transitions,
                          const py::object& start, const py::object& end, const py::object& mask,
                          const py::object& edge_mask);
py::tuple marginals_shim(const py::object& emissions, const py::object& transitions,
                         const py::object& start, const py::object& end, const py::object& mask,
                         const py::object& edge_mask);
py::tuple viterbi_shim(const py::object& emissions, const py::object& transitions,
                       const py::object& start, const py::object& end, const py::object& mask,
                       const py::object& edge_mask);
py::tuple nbest_shim(const py::object& emissions, const py::object& transitions, int64_t k,
                     const py::object& start, const py::object& end, const py::object& mask,
                     const py::object& edge_mask);
py::tuple entropy_lattices_shim(const py::object& emissions, const py::object& transitions,
                                const py::object& start, const py::object& end);
py::tuple entropy_gradient_shim(const py::object& emissions, const py::object& transitions,
                                const py::object& start, const py::object& end,
                                const std::string& method);
py::tuple expectation_gradient_shim(const py::object& emissions, const py::object& transitions,
                                    const py::object& node_scores, const py::object& edge_scores,
                                    const py::object& start, const py::object& end);
py::array_t<double> jiao_pair_marginals_shim(const py::object& emissions,
                                             const py::object& transitions,
                                             const py::object& start, const py::object& end,
                                             int64_t u, int64_t v);

// corpora, layouts, the attribute vocabulary (shims_corpus.cpp)
std::shared_ptr<Corpus> make_corpus(const py::object& indptr, const py::object& indices,
                                    const py::object& values, const py::object& offsets,
                                    int64_t n_attributes, const py::object& labels,
                                    const py::object& weights, const py::object& mask,
                                    const py::object& edge_mask, int64_t chunk_tokens,
                                    int64_t kept_index_bytes);
std::shared_ptr<Layout> make_layout(const py::object& row_ptr, const py::object& label_ids,
                                    int n_labels);
std::shared_ptr<AttributeIndex> make_attribute_index(const py::iterable& attributes);
void renumber_attributes(AttributeIndex& index, const py::object& new_id);
py::tuple renumber_csr_shim(const py::object& indptr, const py::object& indices,
                            const py::object& values, const py::object& new_id);

// objectives and decoders over a corpus (shims_objectives.cpp)
py::tuple likelihood_shim(const Corpus& corpus, const Layout& layout, const py::object& theta,
                          int n_threads, const py::object& out);
py::tuple partial_likelihood_shim(const Corpus& corpus, const Layout& layout,
                                  const py::object& theta, int n_threads, const py::object& out);
std::shared_ptr<AlternativeLabelings> make_alternatives(const Corpus& corpus,
                                                        const py::object& labels,
                                                        const py::object& groups);
py::tuple alternatives_likelihood_shim(const Corpus& corpus, const Layout& layout,
                                       const py::object& theta, int n_threads,
                                       const AlternativeLabelings& alternatives,
                                       const py::object& out);
py::tuple entropy_objective_shim(const Corpus& corpus, const Layout& layout,
                                 const py::object& theta, int n_threads,
                                 const std::string& method, const py::object& out);
py::tuple viterbi_corpus_shim(const Corpus& corpus, const Layout& layout,
                              const py::object& theta, int n_threads);
py::tuple marginals_corpus_shim(const Corpus& corpus, const Layout& layout,
                                const py::object& theta, int n_threads);
py::array_t<double> emissions_corpus_shim(const Corpus& corpus, const Layout& layout,
                                          const py::object& theta_o, int n_threads);
py::array_t<double> log_probability_corpus_shim(const Corpus& corpus, const Layout& layout,
                                                const py::object& theta, int n_threads);
py::tuple entropy_corpus_shim(const Corpus& corpus, const Layout& layout,
                              const py::object& theta, int n_threads);
std::shared_ptr<ConstraintFirings> make_firings(const Corpus& corpus,
                                                const py::object& constraint_of_attribute,
                                                int n_constraints);
py::array_t<double> ge_expectations_shim(const Corpus& corpus, const Layout& layout,
                                         const py::object& theta, int n_threads,
                                         const ConstraintFirings& firings,
                                         const py::object& emissions);
py::array ge_gradient_shim(const Corpus& corpus, const Layout& layout, const py::object& theta,
                           int n_threads, const ConstraintFirings& firings,
                           const py::object& score_weights, const py::object& out,
                           const py::object& emissions);
py::tuple entropy_ge_gradient_shim(const Corpus& corpus, const Layout& layout,
                                   const py::object& theta, int n_threads,
                                   const ConstraintFirings& firings,
                                   const py::object& score_weights, double entropy_weight,
                                   const py::object& out, const py::object& emissions);

// word representations: co-occurrence counts, dense products and the HMMs
// (shims_representations.cpp)
std::shared_ptr<SparseHmm> make_sparse_hmm(const py::object& start,
                                           const py::object& transitions,
                                           const py::object& support_ptr,
                                           const py::object& support,
                                           const py::object& emission);
py::tuple hmm_expected_counts_shim(const SparseHmm& hmm, const py::object& symbols,
                              const py::object& offsets, int n_threads);
py::array_t<int32_t> hmm_posterior_states_shim(const SparseHmm& hmm, const py::object& symbols,
                                          const py::object& offsets, int n_threads);
// Each sentence's Viterbi path under each HMM of a list: (len(hmms), len(symbols)).
py::array_t<int32_t> hmm_viterbi_states_shim(const py::list& hmms, const py::object& symbols,
                                            const py::object& offsets, int n_threads);
std::shared_ptr<StepwiseEm> make_stepwise_em(const SparseHmm& initial,
                                             const py::object& emission_weights,
                                             double n_tokens, double n_sentences,
                                             double step_exponent,
                                             double emission_pseudo_count,
                                             double transition_pseudo_count);
double stepwise_em_run_shim(StepwiseEm& em, const py::object& symbols,
                            const py::object& offsets, const py::object& order,
                            const py::object& batch_ptr, int n_threads);
py::tuple stepwise_em_model_shim(StepwiseEm& em);
py::tuple cooccurrence_counts_shim(const py::object& ids, const py::object& offsets, int window,
                                   int64_t n_words, int n_threads);
py::tuple merge_counts_shim(const py::object& keys_a, const py::object& counts_a,
                            const py::object& keys_b, const py::object& counts_b);
py::array_t<double> csr_times_dense_shim(const py::object& indptr, const py::object& indices,
                                         const py::object& data, const py::object& B,
                                         int n_threads);
py::array_t<double> gram_matrix_shim(const py::object& A, int n_threads);
py::array_t<double> times_small_shim(const py::object& A, const py::object& M, int n_threads);
py::array_t<int64_t> nearest_centroids_shim(const py::object& X, const py::object& C,
                                            const py::object& group,
                                            const py::object& group_ptr, int n_threads);
py::tuple symmetric_eigen_shim(const py::object& A);
// compiled feature extraction (shims_features.cpp)
py::tuple encode_strings_shim(const py::list& strings);
py::object encode_columns_shim(const py::list& sentences, const py::list& columns,
                               int n_threads, int64_t block_tokens);
py::tuple templates_to_csr_shim(AttributeIndex& index, const py::list& templates,
                                const py::list& columns, const py::object& sentence_offsets,
                                bool grow, int n_threads, const py::object& new_strings,
                                int64_t slice_entries);
// templates_to_csr with grow into an empty index, ids in the extractor's
// frequency order where the core can give them: (indptr, indices, values or
// None, order or None, attributes or None), order[i] the index's id of final
// id i, attributes their strs when made while the index filled.
py::tuple fit_templates_shim(AttributeIndex& index, const py::list& templates,
                             const py::list& columns, const py::object& sentence_offsets,
                             int n_threads, int64_t min_freq, int64_t slice_entries);
py::list attribute_strings_shim(const AttributeIndex& index, const py::object& ids);

}  // namespace sscrf::python
