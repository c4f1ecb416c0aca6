// The compiled module sscrf._core (private; the package re-exports): a table
// of the shims (shims.hpp), and the translation of the core's InputError
// into sscrf.errors.SscrfError, registered once.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <exception>
#include <thread>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "layer/attribute_index.hpp"
#include "layer/corpus.hpp"
#include "layer/linear_layer.hpp"
#include "lattice/chain.hpp"
#include "objectives/ge.hpp"
#include "objectives/likelihood.hpp"
#include "python/arrays.hpp"
#include "python/shims.hpp"
#include "runtime/errors.hpp"
#include "runtime/interrupt.hpp"

namespace py = pybind11;
using namespace sscrf;
using namespace sscrf::python;

namespace {

// sscrf.errors.SscrfError, held for the life of the process.
PyObject* sscrf_error = nullptr;

void translate_input_error(std::exception_ptr p) {
  try {
    if (p) std::rethrow_exception(p);
  } catch (const InputError& e) {
    PyErr_SetString(sscrf_error, e.what());
  }
}

}  // namespace

namespace {

std::thread::id main_thread;

// Runs Python's signal handlers from a kernel that released the GIL, on the
// thread that may run them, outside any parallel region (an exception must
// not leave one); a handler's exception (KeyboardInterrupt) is thrown.
void poll_signals() {
#ifdef _OPENMP
  if (omp_get_level() > 0) return;
#endif
  if (std::this_thread::get_id() != main_thread) return;
  py::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  // sscrf.errors imports nothing from the package, so it can be imported
  // while sscrf/__init__ is still importing this module.
  py::object error_class = py::module_::import("sscrf.errors").attr("SscrfError");
  sscrf_error = error_class.release().ptr();
  py::register_local_exception_translator(&translate_input_error);
  main_thread = std::this_thread::get_id();
  interrupt_poll.store(&poll_signals);

  m.doc() = "sscrf compiled core (private): lattice kernels and chunked objectives";
  // the largest |value| of a score, feature value or weight the kernels take
  m.attr("MAX_SCORE") = kMaxScore;

  // ---- runtime ------------------------------------------------------------
  m.def("build_info", &build_info_shim);
  m.def("chunk_tokens_for", &chunk_tokens_for_shim, py::arg("n_labels"),
        "Token budget of a chunk in corpora for a model of n_labels labels (Corpus's "
        "chunk_tokens).");
  m.def("release_scratch", &release_scratch_shim,
        "Free the large scratch blocks kept between evaluations; returns their bytes.");
  m.def("cached_scratch_bytes", &cached_scratch_bytes_shim,
        "Bytes of scratch blocks kept for the next evaluation.");

  // ---- one chain ----------------------------------------------------------
  m.def("log_partition", &log_partition_shim, py::arg("emissions"), py::arg("transitions"),
        py::arg("start") = py::none(), py::arg("end") = py::none(), py::arg("mask") = py::none(),
        py::arg("edge_mask") = py::none());
  m.def("marginals", &marginals_shim, py::arg("emissions"), py::arg("transitions"),
        py::arg("start") = py::none(), py::arg("end") = py::none(), py::arg("mask") = py::none(),
        py::arg("edge_mask") = py::none());
  m.def("viterbi", &viterbi_shim, py::arg("emissions"), py::arg("transitions"),
        py::arg("start") = py::none(), py::arg("end") = py::none(), py::arg("mask") = py::none(),
        py::arg("edge_mask") = py::none());
  m.def("nbest", &nbest_shim, py::arg("emissions"), py::arg("transitions"), py::arg("k"),
        py::arg("start") = py::none(), py::arg("end") = py::none(), py::arg("mask") = py::none(),
        py::arg("edge_mask") = py::none());
  m.def("entropy_lattices", &entropy_lattices_shim, py::arg("emissions"),
        py::arg("transitions"), py::arg("start") = py::none(), py::arg("end") = py::none());
  m.def("entropy_gradient", &entropy_gradient_shim, py::arg("emissions"),
        py::arg("transitions"), py::arg("start") = py::none(), py::arg("end") = py::none(),
        py::arg("method") = "fast");
  m.def("expectation_gradient", &expectation_gradient_shim, py::arg("emissions"),
        py::arg("transitions"), py::arg("node_scores"), py::arg("edge_scores"),
        py::arg("start") = py::none(), py::arg("end") = py::none());
  m.def("jiao_pair_marginals", &jiao_pair_marginals_shim, py::arg("emissions"),
        py::arg("transitions"), py::arg("start"), py::arg("end"), py::arg("u"), py::arg("v"));

  // ---- the linear layer's inputs ------------------------------------------
  py::class_<Corpus, std::shared_ptr<Corpus>>(
      m, "Corpus", "Validated CSR attributes of a corpus, split into chunks.")
      .def(py::init(&make_corpus), py::arg("indptr"), py::arg("indices"), py::arg("values"),
           py::arg("offsets"), py::arg("n_attributes"), py::arg("labels") = py::none(),
           py::arg("weights") = py::none(), py::arg("mask") = py::none(), py::arg("edge_mask") = py::none(),
           py::arg("chunk_tokens") = kChunkTokens, py::arg("kept_index_bytes") = -1)
      .def_readonly("n_tokens", &Corpus::n_tokens)
      .def_readonly("n_sequences", &Corpus::n_sequences)
      .def_readonly("n_attributes", &Corpus::n_attributes)
      .def_property_readonly("n_chunks", [](const Corpus& c) { return c.chunks().size(); })
      .def_property_readonly("n_back_projection_blocks", &Corpus::n_back_projection_blocks,
                             "Work items of the gradient's back-projection Xᵀ·∂E, over all "
                             "chunks.")
      .def_property_readonly("kept_index_bytes", &Corpus::kept_index_size,
                             "Bytes of the chunk indices kept between evaluations (the others "
                             "are built per evaluation).")
      .def_property_readonly("has_labels", [](const Corpus& c) { return !c.labels.empty(); });

  py::class_<AttributeIndex, std::shared_ptr<AttributeIndex>>(
      m, "AttributeIndex", "Attribute string -> id: the vocabulary of feature-dict extraction.")
      .def(py::init(&make_attribute_index), py::arg("attributes") = py::list())
      .def("__len__", &AttributeIndex::size)
      .def_property_readonly("nbytes", &AttributeIndex::bytes)
      .def("dict_tokens_to_csr", &dict_tokens_to_csr, py::arg("tokens"), py::arg("grow"),
           py::arg("slow"), py::arg("new_strings"), py::arg("separator") = "=",
           "(indptr, indices, values or None) of feature-dict tokens; see attribute_index.hpp.")
      .def("renumber", &renumber_attributes, py::arg("new_id"),
           "Gives attribute i the id new_id[i] (a permutation).")
      .def("templates_to_csr", &templates_to_csr_shim, py::arg("templates"), py::arg("columns"),
           py::arg("sentence_offsets"), py::arg("grow"), py::arg("n_threads"), py::arg("new_strings"),
           py::arg("slice_entries") = 0,
           "(indptr, indices int32, values or None) of template attributes; see template_expansion.hpp.")
      .def("fit_templates", &fit_templates_shim, py::arg("templates"), py::arg("columns"),
           py::arg("sentence_offsets"), py::arg("n_threads"), py::arg("min_freq"),
           py::arg("slice_entries") = 0,
           "templates_to_csr with grow into an empty index: (indptr, indices, values or None, "
           "order or None, attributes or None); with an order, the ids are already final (see "
           "FrequencyOrder), and attributes, when given, are their strs in that order.")
      .def("intern", &intern_strings, py::arg("strings"), py::arg("grow"), py::arg("new_strings"),
           "int64 ids of a list of str (-1: absent); with grow, absent ones are added.")
      .def("strings", &attribute_strings_shim, py::arg("ids"),
           "The attribute strs of int ids, in their order.");
  m.def("encode_strings", &encode_strings_shim, py::arg("strings"),
        "(uint8 data, int64 offsets [n + 1]) of a list of str: the byte keys, one after the other.");
  m.def("encode_columns", &encode_columns_shim, py::arg("sentences"), py::arg("columns"),
        py::arg("n_threads") = 1, py::arg("block_tokens") = 8192,
        "([(uint8 data, int64 offsets)] per column, int64 sentence offsets, fewest columns of a "
        "token) of exact lists or tuples of such tokens of exact strs wide enough, else None; "
        "read on n_threads threads, blocks of about block_tokens tokens, while the GIL is held.");
  m.def("renumber_csr", &renumber_csr_shim, py::arg("indptr"), py::arg("indices"),
        py::arg("values"), py::arg("new_id"),
        "(indptr, indices int32, values or None) with ids mapped through new_id (-1: dropped) "
        "and each token's entries sorted by new id; see attribute_index.hpp.");

  py::class_<Layout, std::shared_ptr<Layout>>(
      m, "Layout", "Which labels each attribute scores (row-sparse W).")
      .def(py::init(&make_layout), py::arg("row_ptr"), py::arg("label_ids"), py::arg("n_labels"))
      .def_readonly("n_attributes", &Layout::n_attributes)
      .def_readonly("n_labels", &Layout::S)
      .def_property_readonly("n_weights", &Layout::n_weights)
      .def_property_readonly("n_parameters", &Layout::n_parameters);

  // ---- objectives and decoders over a corpus -------------------------------
  m.def("likelihood", &likelihood_shim, py::arg("corpus"), py::arg("layout"), py::arg("theta"),
        py::arg("n_threads"), py::arg("out") = py::none());
  m.def("partial_likelihood", &partial_likelihood_shim, py::arg("corpus"), py::arg("layout"),
        py::arg("theta"), py::arg("n_threads"), py::arg("out") = py::none());
  py::class_<AlternativeLabelings, std::shared_ptr<AlternativeLabelings>>(
      m, "AlternativeLabelings",
      "Explicit alternative labelings of each sequence of one corpus (validated).")
      .def(py::init(&make_alternatives), py::arg("corpus"), py::arg("labels"), py::arg("groups"))
      .def_property_readonly(
          "counts", [](const AlternativeLabelings& a) { return array_of<int64_t>(a.count); });
  m.def("alternatives_likelihood", &alternatives_likelihood_shim, py::arg("corpus"),
        py::arg("layout"), py::arg("theta"), py::arg("n_threads"), py::arg("alternatives"),
        py::arg("out") = py::none());
  m.def("entropy_objective", &entropy_objective_shim, py::arg("corpus"), py::arg("layout"),
        py::arg("theta"), py::arg("n_threads"), py::arg("method") = "fast",
        py::arg("out") = py::none());
  m.def("viterbi_corpus", &viterbi_corpus_shim, py::arg("corpus"), py::arg("layout"),
        py::arg("theta"), py::arg("n_threads"));
  m.def("marginals_corpus", &marginals_corpus_shim, py::arg("corpus"), py::arg("layout"),
        py::arg("theta"), py::arg("n_threads"));
  m.def("log_probability_corpus", &log_probability_corpus_shim, py::arg("corpus"),
        py::arg("layout"), py::arg("theta"), py::arg("n_threads"));
  m.def("emissions_corpus", &emissions_corpus_shim, py::arg("corpus"), py::arg("layout"),
        py::arg("theta"), py::arg("n_threads"));
  m.def("entropy_corpus", &entropy_corpus_shim, py::arg("corpus"), py::arg("layout"),
        py::arg("theta"), py::arg("n_threads"));

  // ---- generalized expectation: two passes at one theta ---------------------
  py::class_<ConstraintFirings, std::shared_ptr<ConstraintFirings>>(
      m, "ConstraintFirings", "Where each GE constraint fires in one corpus (validated).")
      .def(py::init(&make_firings), py::arg("corpus"), py::arg("constraint_of_attribute"),
           py::arg("n_constraints"))
      .def_readonly("n_constraints", &ConstraintFirings::n_constraints)
      .def_property_readonly(
          "counts", [](const ConstraintFirings& f) { return array_of<double>(f.counts); });
  m.def("ge_expectations", &ge_expectations_shim, py::arg("corpus"), py::arg("layout"),
        py::arg("theta"), py::arg("n_threads"), py::arg("firings"), py::arg("emissions") = py::none(),
        "Pass 1: sums (n_constraints, S) of the node marginals where each constraint fires; "
        "with emissions (n_tokens, S), the scored rows are also kept there for pass 2.");
  m.def("ge_gradient", &ge_gradient_shim, py::arg("corpus"), py::arg("layout"),
        py::arg("theta"), py::arg("n_threads"), py::arg("firings"), py::arg("score_weights"),
        py::arg("out") = py::none(), py::arg("emissions") = py::none(),
        "Pass 2: the gradient for score_weights (n_constraints, S); with emissions, the rows "
        "pass 1 kept at this same theta are read instead of scored again.");
  m.def("entropy_ge_gradient", &entropy_ge_gradient_shim, py::arg("corpus"), py::arg("layout"),
        py::arg("theta"), py::arg("n_threads"), py::arg("firings"), py::arg("score_weights"),
        py::arg("entropy_weight"), py::arg("out") = py::none(), py::arg("emissions") = py::none(),
        "Pass 2 with the entropy term on the same corpus: (entropy_weight * sum_x w_x H(Y|x), "
        "ge_gradient's gradient plus entropy_weight times the entropy's).");

  // ---- optimiser vector passes (deterministic for any thread count) -----------
  m.def("dot_products", &dot_products_shim, py::arg("vectors"), py::arg("pairs"),
        py::arg("n_threads"),
        "Dot products vectors[i]·vectors[j] for each row (i, j) of pairs, in one pass.");
  m.def("linear_combination", &linear_combination_shim, py::arg("out"), py::arg("coefficients"),
        py::arg("vectors"), py::arg("reference"), py::arg("confine"), py::arg("n_threads"),
        "out = Σ coefficients[j]·vectors[j] (entries with out·reference >= 0 set to 0 when "
        "confine); returns reference·out. out may be one of the inputs.");
  m.def("step_along", &step_along_shim, py::arg("out"), py::arg("x"), py::arg("alpha"),
        py::arg("d"), py::arg("n_threads"), "out = x + alpha·d.");
  m.def("secant_pair", &secant_pair_shim, py::arg("x"), py::arg("trial"), py::arg("gradient"),
        py::arg("previous_gradient"), py::arg("step"), py::arg("y"), py::arg("n_threads"),
        py::arg("vectors") = py::none(), py::arg("pairs") = py::none(),
        "step = trial − x; y = gradient − previous_gradient (step and y: float64 or "
        "float32; nothing else is written). With vectors and pairs, also returns "
        "dot_products(vectors, pairs) of the updated vectors, taken in the same pass.");
  m.def("add_l2_prior", &add_l2_prior_shim, py::arg("theta"), py::arg("grad"), py::arg("c2"),
        py::arg("n_threads"), "grad += 2·c2·theta; returns theta·theta.");
  // ---- word representations (deterministic for any thread count) ------------
  m.def("cooccurrence_counts", &cooccurrence_counts_shim, py::arg("ids"), py::arg("offsets"),
        py::arg("window"), py::arg("n_words"), py::arg("n_threads"),
        "(keys, counts) of (word, context) pairs within window tokens in a sentence; "
        "key = word << 32 | side << 31 | context (side 1: right); ids < 0 count for "
        "nothing. keys increase strictly.");
  m.def("merge_counts", &merge_counts_shim, py::arg("keys_a"), py::arg("counts_a"),
        py::arg("keys_b"), py::arg("counts_b"), "The union of two sorted count lists, summed.");
  m.def("csr_times_dense", &csr_times_dense_shim, py::arg("indptr"), py::arg("indices"),
        py::arg("data"), py::arg("B"), py::arg("n_threads"), "CSR matrix times dense B.");
  m.def("gram_matrix", &gram_matrix_shim, py::arg("A"), py::arg("n_threads"), "A^T A.");
  m.def("times_small", &times_small_shim, py::arg("A"), py::arg("M"), py::arg("n_threads"),
        "A M for a tall A and a small M.");
  m.def("nearest_centroids", &nearest_centroids_shim, py::arg("X"), py::arg("C"),
        py::arg("group"), py::arg("group_ptr"), py::arg("n_threads"),
        "Per row of X, the index of the centroid of its group with the largest dot product.");
  py::class_<SparseHmm, std::shared_ptr<SparseHmm>>(
      m, "SparseHmm",
      "A validated HMM in probabilities whose symbol s is emitted only by the states "
      "support[support_ptr[s]:support_ptr[s+1]] (increasing), with the probabilities "
      "emission[...] alongside.")
      .def(py::init(&make_sparse_hmm), py::arg("start"), py::arg("transitions"),
           py::arg("support_ptr"), py::arg("support"), py::arg("emission"))
      .def_readonly("n_states", &SparseHmm::K)
      .def_property_readonly("n_symbols", &SparseHmm::n_symbols)
      .def("expected_counts", &hmm_expected_counts_shim, py::arg("symbols"), py::arg("offsets"),
           py::arg("n_threads"),
           "EM's E-step over the sentences symbols[offsets[i]:offsets[i+1]]: (log p(text), "
           "expected emissions aligned with support, expected transitions (K, K), expected "
           "starts (K,)), the same bits at any thread count.")
      .def("posterior_states", &hmm_posterior_states_shim, py::arg("symbols"), py::arg("offsets"),
           py::arg("n_threads"),
           "Each token's state of largest posterior probability in its sentence (ties: the "
           "lower state), int32.");
  m.def("hmm_viterbi_states", &hmm_viterbi_states_shim, py::arg("hmms"), py::arg("symbols"),
        py::arg("offsets"), py::arg("n_threads"),
        "Each sentence symbols[offsets[i]:offsets[i+1]]'s most probable state sequence under "
        "each SparseHmm of hmms (ties: the lower last state, then the lower predecessor), "
        "int32 (len(hmms), len(symbols)).");
  py::class_<StepwiseEm, std::shared_ptr<StepwiseEm>>(
      m, "StepwiseEm",
      "Stepwise EM (Liang & Klein 2009) of a SparseHmm's probabilities on its supports.")
      .def(py::init(&make_stepwise_em), py::arg("initial"), py::arg("emission_weights"),
           py::arg("n_tokens"), py::arg("n_sentences"), py::arg("step_exponent"),
           py::arg("emission_pseudo_count"), py::arg("transition_pseudo_count"))
      .def("run", &stepwise_em_run_shim, py::arg("symbols"), py::arg("offsets"),
           py::arg("order"), py::arg("batch_ptr"), py::arg("n_threads"),
           "EM over the batches order[batch_ptr[b]:batch_ptr[b+1]] of sentences; returns the "
           "sum of the batches' log p, each under the model of its time.")
      .def("model", &stepwise_em_model_shim,
           "(start, transitions, emission aligned with the supports) re-estimated from every "
           "count.");
  m.def("symmetric_eigen", &symmetric_eigen_shim, py::arg("A"),
        "(values decreasing, eigenvectors as columns) of a small symmetric matrix (Jacobi).");
}
