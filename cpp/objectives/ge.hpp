// Generalized expectation criteria: where the constraints fire, and the two
// chunked passes (expectations, then the gradient of any loss of them).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "layer/corpus.hpp"
#include "layer/linear_layer.hpp"

namespace sscrf {

struct ConstraintFirings;

// A chunk's firings by constraint: m fires at the chunk's tokens
// token[ptr[m] .. ptr[m+1]) (absolute ids), ascending, a token once per
// occurrence, so that each constraint's sums can run on their own thread
// in token order.
struct ChunkFirings {
  std::vector<int64_t> ptr;  // [n_constraints + 1]
  std::vector<int64_t> token;
  std::vector<std::pair<int64_t, int32_t>> found;  // (token, constraint) in entry order
  void build(const Corpus& corpus, const ConstraintFirings& firings, const Chunk& ch);
};

// Where the constraints of generalized expectation fire in a corpus, found
// once per term (the corpus and the constraints are fixed while training):
// constraint_of[a] is attribute a's constraint or -1, counts[m] = C_m, and
// active[s] = 1 when some constraint fires in sequence s. Which tokens
// each constraint fires at is kept too while it fits the corpus's budget
// for chunk indices (Corpus::kept_index_bytes); past it, it is found again
// chunk by chunk in each pass, so that what is kept grows with the
// attributes, not the tokens (a pointer per token took 80 MB at 10M).
struct ConstraintFirings {
  int n_constraints = 0;
  int64_t n_tokens = 0, n_sequences = 0;
  std::vector<int32_t> constraint_of;  // [corpus.n_attributes]
  std::vector<double> counts;          // [n_constraints]
  std::vector<uint8_t> active;         // [n_sequences]
  // Kept, or empty (see above): constraint[token_ptr[t] .. token_ptr[t+1])
  // fire at token t, in entry order; kept[c]: chunk c's firings.
  std::vector<int64_t> token_ptr;  // [n_tokens + 1]
  std::vector<int32_t> constraint;
  std::vector<ChunkFirings> kept;
  // constraint_of_attribute [n_map >= corpus.n_attributes]: attribute ->
  // constraint m in [0, n_constraints) or -1. Throws InputError otherwise.
  ConstraintFirings(const Corpus& corpus, const int64_t* constraint_of_attribute, int64_t n_map,
                    int n_constraints);
  // Throws InputError unless these firings were built for `corpus`.
  void check_corpus(const Corpus& corpus) const;
};

// Generalized expectation, pass 1: for each constraint m, the sum of the
// model's node marginals over the C_m tokens where it fires: sums [M][S].
// With `emissions` [n_tokens][S], the emission rows of the sequences where
// some constraint fires are also written there, for pass 2 at the same theta.
void ge_expectations(const Corpus& corpus, const Layout& layout, const double* theta,
                     int n_threads, const ConstraintFirings& firings, double* sums,
                     double* emissions = nullptr);

// Pass 2: grad = Σ_x Cov_x[F, r_x] with r_x(y) = Σ_j Σ_{m fires at j}
// score_weights[m][y_j] (score_weights [M][S] = ∂loss/∂p̂_m / C_m). With
// `emissions`, pass 1's rows are read instead of rescoring: the caller
// guarantees that pass 1 wrote them at this same theta.
void ge_gradient(const Corpus& corpus, const Layout& layout, const double* theta,
                 double* grad, int n_threads, const ConstraintFirings& firings,
                 const double* score_weights, const double* emissions = nullptr);

// Pass 2 with the entropy term on the same corpus: grad = ge_gradient's plus
// entropy_weight · Σ_x w_x ∂H(Y|x)/∂θ; returns entropy_weight · Σ_x w_x H(Y|x).
// One scoring of the rows and one back-projection serve both terms. With
// `emissions`, pass 1's rows are read when it scored every non-empty
// sequence (some constraint fires in each); otherwise the rows are scored.
double entropy_ge_gradient(const Corpus& corpus, const Layout& layout, const double* theta,
                           double* grad, int n_threads, const ConstraintFirings& firings,
                           const double* score_weights, double entropy_weight,
                           const double* emissions = nullptr);

}  // namespace sscrf
