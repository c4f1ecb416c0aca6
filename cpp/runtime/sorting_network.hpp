// Small sorts of many short rows at once: each token's attribute ids, 16
// tokens at a time, one per lane of a sorting network.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace sscrf {

// Tokens sorted together, one per lane.
constexpr int kSortLanes = 16;
// Longest row a network sorts; longer rows take std::sort.
constexpr int kSortWidth = 32;

// The comparators (i < j: min to i, max to j) of Batcher's odd-even merge
// sort of n <= kSortWidth values: the network for the next power of two,
// less the comparators that touch a position >= n (with +infinity there,
// such a comparator never moves a value).
std::vector<std::pair<int, int>> sorting_network(int n);

// Sorts every lane of rows[0 .. width) ascending (rows[i][l]: value i of
// lane l) with `network`, the sorting_network(width).
void sort_lanes(const std::vector<std::pair<int, int>>& network,
                int32_t (&rows)[kSortWidth][kSortLanes]);

}  // namespace sscrf
