// The most probable state sequence of each sentence under a SparseHmm.
#pragma once

#include <cstdint>

#include "representations/hidden_markov.hpp"

namespace sscrf {

// Each sentence's Viterbi path, written to states[offsets[i] - offsets[0] + t]
// (ties: the lower last state, then the lower predecessor of each state). The
// same result at any thread count. Throws InputError when a sentence has no
// path (its symbols' supports and the transitions allow none).
void hmm_viterbi_states(const SparseHmm& hmm, const int32_t* symbols, const int64_t* offsets,
                        int64_t n_sentences, int n_threads, int32_t* states);

}  // namespace sscrf
