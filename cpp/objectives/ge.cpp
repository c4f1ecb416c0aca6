// Generalized expectation (Mann & McCallum 2008) on an unlabeled corpus, in
// two chunked passes: the model's label distribution at the positions where
// each constraint's attribute fires, then the gradient of any loss of those
// distributions through the covariance kernel (DESIGN.md kernel 3):
//   ∂loss/∂θ = Σ_x Cov_x[F, r_x],  r_x(y) = Σ_j Σ_{m fires at j} w_m(y_j),
//   w_m(l) = (∂loss/∂p̂_m(l)) / C_m,
// one O(n S²) pass for all constraints at once.
#include "objectives/ge.hpp"

#include <algorithm>
#include <climits>
#include <utility>
#include <string>
#include <vector>

#include "lattice/covariance.hpp"
#include "lattice/forward_backward.hpp"
#include "objectives/chunked.hpp"

namespace sscrf {

namespace {

// Throws InputError unless map [n_map] covers the corpus's attributes with
// constraint ids in [-1, n_constraints).
void check_constraint_map(const Corpus& corpus, const int64_t* map, int64_t n_map,
                                      int n_constraints) {
  if (n_map < corpus.n_attributes)
    throw InputError("constraint_of_attribute must be a 1-D int array with an entry per attribute");
  if (n_constraints < 0) throw InputError("n_constraints must be >= 0");
  for (int64_t a = 0; a < n_map; ++a)
    if (map[a] < -1 || map[a] >= n_constraints)
      throw InputError("constraint id " + std::to_string(map[a]) + " out of range [-1, " +
                       std::to_string(n_constraints) + ")");
}

// One thread's GE node scores.
struct alignas(64) GeScratch {
  Scratch node;  // [n][S] Σ over the constraints firing at token t of w_m
  Scratch rows;  // [n][S] with the entropy: the GE part of ∂/∂E, apart
};

}  // namespace

// The map is checked first, before any member is sized by n_constraints.
ConstraintFirings::ConstraintFirings(const Corpus& corpus, const int64_t* map, int64_t n_map,
                                     int n_constraints_)
    : n_constraints((check_constraint_map(corpus, map, n_map, n_constraints_), n_constraints_)),
      n_tokens(corpus.n_tokens),
      n_sequences(corpus.n_sequences),
      constraint_of(map, map + corpus.n_attributes),
      counts(static_cast<size_t>(n_constraints_), 0.0),
      active(static_cast<size_t>(corpus.n_sequences), 0),
      token_ptr() {
  // Sequences where nothing fires have r ≡ 0: they add nothing to the
  // expectations' sums nor to the gradient, so neither pass scores them.
  int64_t n_firings = 0;
  for (int64_t s = 0; s < corpus.n_sequences; ++s) {
    for (int64_t k = corpus.indptr[corpus.offsets[s]]; k < corpus.indptr[corpus.offsets[s + 1]];
         ++k) {
      const int32_t m = constraint_of[corpus.indices[k]];
      if (m < 0) continue;
      counts[m] += 1.0;
      active[s] = 1;
      ++n_firings;
    }
  }
  // Kept under the corpus's budget for chunk indices: finding them per
  // chunk costs a GE evaluation about a tenth more.
  const int64_t bytes = 8 * (corpus.n_tokens + 1) + 20 * n_firings +
                        8 * (static_cast<int64_t>(n_constraints) + 1) *
                            static_cast<int64_t>(corpus.chunks().size());
  const int64_t budget = corpus.kept_index_bytes >= 0 ? corpus.kept_index_bytes
                         : corpus.indices.viewed()    ? kViewedKeptIndexBytes
                                                      : INT64_MAX;
  if (bytes > budget) return;
  token_ptr.reserve(static_cast<size_t>(corpus.n_tokens) + 1);
  token_ptr.push_back(0);
  constraint.reserve(static_cast<size_t>(n_firings));
  for (int64_t t = 0; t < corpus.n_tokens; ++t) {
    for (int64_t k = corpus.indptr[t]; k < corpus.indptr[t + 1]; ++k) {
      const int32_t m = constraint_of[corpus.indices[k]];
      if (m >= 0) constraint.push_back(m);
    }
    token_ptr.push_back(static_cast<int64_t>(constraint.size()));
  }
  kept.resize(corpus.chunks().size());
  for (const Chunk& ch : corpus.chunks()) {
    kept[ch.id].build(corpus, *this, ch);
    std::vector<std::pair<int64_t, int32_t>>().swap(kept[ch.id].found);
  }
}

void ChunkFirings::build(const Corpus& corpus, const ConstraintFirings& firings,
                         const Chunk& ch) {
  const int M = firings.n_constraints;
  const int32_t* constraint_of = firings.constraint_of.data();
  const int32_t* indices = corpus.indices.data();
  const size_t n_entries = corpus.indptr[ch.tok_end] - corpus.indptr[ch.tok_begin];
  if (found.size() < n_entries) found.resize(n_entries);
  size_t n = 0;
  // Without a branch on whether an entry fires: the constraints are
  // frequent attributes, firing at random.
  for (int64_t t = ch.tok_begin; t < ch.tok_end; ++t) {
    for (int64_t k = corpus.indptr[t]; k < corpus.indptr[t + 1]; ++k) {
      const int32_t m = constraint_of[indices[k]];
      found[n] = {t, m};
      n += m >= 0;
    }
  }
  ptr.assign(static_cast<size_t>(M) + 1, 0);
  for (size_t i = 0; i < n; ++i) ++ptr[found[i].second + 1];
  for (int m = 0; m < M; ++m) ptr[m + 1] += ptr[m];
  token.resize(n);
  std::vector<int64_t> cursor(ptr.begin(), ptr.end() - 1);
  for (size_t i = 0; i < n; ++i) token[cursor[found[i].second]++] = found[i].first;
}

void ConstraintFirings::check_corpus(const Corpus& corpus) const {
  if (n_tokens != corpus.n_tokens || n_sequences != corpus.n_sequences ||
      static_cast<int64_t>(constraint_of.size()) != corpus.n_attributes)
    throw InputError("these constraint firings were built for another corpus");
}

void ge_expectations(const Corpus& corpus, const Layout& layout, const double* theta,
                     int n_threads, const ConstraintFirings& firings, double* sums,
                     double* emissions) {
  const int S = layout.S;
  std::fill(sums, sums + static_cast<int64_t>(firings.n_constraints) * S, 0.0);
  const double* T = theta + layout.transitions_offset();
  const TransitionFactors factors(T, S);
  const LayerWeights weights(layout, theta, static_cast<int64_t>(corpus.indices.size()),
                             n_threads);
  n_threads = effective_threads(n_threads, std::max<int64_t>(corpus.n_sequences, 1));
  PerThread<Workspace> workspaces(n_threads);
  // Rows of active sequences only are written, and only they are read.
  UninitializedBuffer marginal_rows;
  ChunkFirings fires;
  ExceptionCarrier errors;
  for (const Chunk& ch : corpus.chunks()) {
    double* const marginals = marginal_rows.reserve(static_cast<size_t>(ch.tok_end - ch.tok_begin) * S);
    const int64_t n_groups = static_cast<int64_t>(ch.group_bounds.size()) - 1;
    // The first work item finds the chunk's firings while the others
    // compute marginals.
#pragma omp parallel for schedule(dynamic, 1) num_threads(effective_threads(n_threads, n_groups + 1))
    for (int64_t item = 0; item <= n_groups; ++item) {
      errors.run([&] {
        if (item == 0) {
          if (firings.kept.empty()) fires.build(corpus, firings, ch);
          return;
        }
        Workspace& ws = workspaces.mine();
        for (int64_t s = ch.group_bounds[item - 1]; s < ch.group_bounds[item]; ++s) {
          const int64_t tb = corpus.offsets[s], te = corpus.offsets[s + 1];
          if (te == tb || !firings.active[s]) continue;
          double* rows = &marginals[(tb - ch.tok_begin) * S];
          double* scored = emissions ? emissions + tb * S : rows;
          const Chain c = scored_chain(corpus, layout, weights, factors, tb, te, scored);
          forward_backward(c, ws, rows, nullptr, nullptr);
        }
      });
    }
    errors.rethrow();
    // One constraint per work item, its tokens in token order, so the sums
    // do not depend on the thread count (only tokens of active sequences
    // have firings, and marginals).
#pragma omp parallel for schedule(dynamic, 1) num_threads(effective_threads(n_threads, firings.n_constraints))
    for (int m = 0; m < firings.n_constraints; ++m) {
      const ChunkFirings& f = firings.kept.empty() ? fires : firings.kept[ch.id];
      double* out = sums + static_cast<int64_t>(m) * S;
      for (int64_t i = f.ptr[m]; i < f.ptr[m + 1]; ++i) {
        const double* p = &marginals[(f.token[i] - ch.tok_begin) * S];
        for (int l = 0; l < S; ++l) out[l] += p[l];
      }
    }
  }
}

namespace {

// The node scores of sequence s: row t is Σ over the constraints firing at
// token t of score_weights[m], in the order of the token's entries.
void constraint_node_scores(const Corpus& corpus, const ConstraintFirings& firings,
                            const double* score_weights, int S, int64_t s, int64_t n,
                            Scratch& node) {
  const int64_t tb = corpus.offsets[s];
  node.assign(static_cast<size_t>(n) * S, 0.0);
  const auto add = [&](int64_t t, int32_t m) {
    const double* w = score_weights + static_cast<int64_t>(m) * S;
    for (int l = 0; l < S; ++l) node[t * S + l] += w[l];
  };
  for (int64_t t = 0; t < n; ++t) {
    if (!firings.token_ptr.empty()) {
      for (int64_t k = firings.token_ptr[tb + t]; k < firings.token_ptr[tb + t + 1]; ++k)
        add(t, firings.constraint[k]);
      continue;
    }
    for (int64_t k = corpus.indptr[tb + t]; k < corpus.indptr[tb + t + 1]; ++k) {
      const int32_t m = firings.constraint_of[corpus.indices[k]];
      if (m >= 0) add(t, m);
    }
  }
}

// True when every non-empty sequence has a firing: pass 1 then scored every row.
bool fires_in_every_sequence(const Corpus& corpus, const ConstraintFirings& firings) {
  for (int64_t s = 0; s < corpus.n_sequences; ++s)
    if (corpus.offsets[s + 1] > corpus.offsets[s] && !firings.active[s]) return false;
  return true;
}

}  // namespace

void ge_gradient(const Corpus& corpus, const Layout& layout, const double* theta,
                 double* grad, int n_threads, const ConstraintFirings& firings,
                 const double* score_weights, const double* emissions) {
  const int S = layout.S;
  PerThread<GeScratch> scratch(n_threads);
  evaluate_chunked(
      corpus, layout, theta, grad, n_threads,
      [&](int64_t s, const Chain& c, Workspace& ws, double* dE, double* dT) {
        Scratch& node = scratch.mine().node;
        constraint_node_scores(corpus, firings, score_weights, S, s, c.n, node);
        AdditiveScore r;
        r.node = node.data();
        expectation_gradient(c, ws, r, dE, dT, nullptr);
        return 0.0;  // the loss itself is a function of the expectations, computed by the caller
      },
      firings.active.data(), emissions);
}

double entropy_ge_gradient(const Corpus& corpus, const Layout& layout, const double* theta,
                           double* grad, int n_threads, const ConstraintFirings& firings,
                           const double* score_weights, double entropy_weight,
                           const double* emissions) {
  const int S = layout.S;
  PerThread<GeScratch> scratch(n_threads);
  // Pass 1 scored the rows of the sequences where a constraint fires; the
  // entropy needs every sequence's.
  if (emissions && !fires_in_every_sequence(corpus, firings)) emissions = nullptr;
  return evaluate_chunked(
      corpus, layout, theta, grad, n_threads,
      [&](int64_t s, const Chain& c, Workspace& ws, double* dE, double* dT) {
        GeScratch& mine = scratch.mine();
        const size_t rows = static_cast<size_t>(c.n) * S;
        const bool fires = firings.active[s] != 0;
        if (fires) {  // on a copy of the rows, which the entropy's kernel overwrites
          constraint_node_scores(corpus, firings, score_weights, S, s, c.n, mine.node);
          mine.rows.assign(c.emissions, c.emissions + rows);
          Chain copy = c;
          copy.emissions = mine.rows.data();
          AdditiveScore r;
          r.node = mine.node.data();
          expectation_gradient(copy, ws, r, mine.rows.data(), dT, nullptr);
        }
        const double scale = entropy_weight * corpus.weight(s);
        const double entropy = scale * entropy_gradient(c, ws, dE, dT, scale);
        if (fires)
          for (size_t i = 0; i < rows; ++i) dE[i] += mine.rows[i];
        return entropy;
      },
      nullptr, emissions);
}

}  // namespace sscrf
