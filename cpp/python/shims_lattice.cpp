// Shims of the single-chain lattice kernels: dense arrays in, the kernel
// run without the GIL, arrays out.
#include <vector>

#include "lattice/covariance.hpp"
#include "lattice/entropy_jiao.hpp"
#include "lattice/entropy_lattices.hpp"
#include "lattice/forward_backward.hpp"
#include "lattice/nbest.hpp"
#include "lattice/viterbi.hpp"
#include "objectives/entropy.hpp"
#include "python/arrays.hpp"
#include "python/shims.hpp"

namespace sscrf::python {

double log_partition_shim(const py::object& E, const py::object& T, const py::object& start,
                          const py::object& end, const py::object& mask,
                          const py::object& edge_mask) {
  auto c = make_chain(E, T, start, end, mask, edge_mask);
  return run_chain([&] {
    Workspace ws;
    py::gil_scoped_release release;
    return log_partition(c.chain, ws);
  });
}

py::tuple marginals_shim(const py::object& E, const py::object& T, const py::object& start,
                         const py::object& end, const py::object& mask,
                         const py::object& edge_mask) {
  auto c = make_chain(E, T, start, end, mask, edge_mask);
  const py::ssize_t n = c.chain.n, S = c.chain.S;
  py::array_t<double> node({n, S});
  py::array_t<double> edge({n > 0 ? n - 1 : 0, S, S});
  double* node_p = node.mutable_data();
  double* edge_p = edge.mutable_data();
  run_chain([&] {
    Workspace ws;
    py::gil_scoped_release release;
    return forward_backward(c.chain, ws, node_p, edge_p, nullptr);
  });
  return py::make_tuple(node, edge);
}

py::tuple viterbi_shim(const py::object& E, const py::object& T, const py::object& start,
                       const py::object& end, const py::object& mask,
                       const py::object& edge_mask) {
  auto c = make_chain(E, T, start, end, mask, edge_mask);
  std::vector<int32_t> path(c.chain.n);
  const double score = run_chain([&] {
    Workspace ws;
    py::gil_scoped_release release;
    return viterbi(c.chain, ws, path.data());
  });
  return py::make_tuple(array_of<int64_t>(path), score);
}

py::tuple nbest_shim(const py::object& E, const py::object& T, int64_t k, const py::object& start,
                     const py::object& end, const py::object& mask, const py::object& edge_mask) {
  auto c = make_chain(E, T, start, end, mask, edge_mask);
  const int64_t n = c.chain.n;
  const int64_t rows = nbest_rows(k, n, c.chain.S);
  std::vector<int32_t> paths(static_cast<size_t>(rows * n));
  std::vector<double> scores(static_cast<size_t>(rows));
  const int found = run_chain([&] {
    Workspace ws;
    py::gil_scoped_release release;
    return nbest(c.chain, static_cast<int>(rows), ws, paths.data(), scores.data());
  });
  py::array_t<int64_t> out_paths({static_cast<py::ssize_t>(found), static_cast<py::ssize_t>(n)});
  py::array_t<double> out_scores(static_cast<py::ssize_t>(found));
  std::copy(paths.begin(), paths.begin() + found * n, out_paths.mutable_data());
  std::copy(scores.begin(), scores.begin() + found, out_scores.mutable_data());
  return py::make_tuple(out_paths, out_scores);
}

py::tuple entropy_lattices_shim(const py::object& E, const py::object& T, const py::object& start,
                                const py::object& end) {
  auto c = make_chain(E, T, start, end, py::none(), py::none());
  const py::ssize_t n = c.chain.n, S = c.chain.S;
  py::array_t<double> node(n), transition(n), h_alpha({n, S}), h_beta({n, S});
  double* np = node.mutable_data();
  double* tp = transition.mutable_data();
  double* ap = h_alpha.mutable_data();
  double* bp = h_beta.mutable_data();
  double h;
  {
    Workspace ws;
    py::gil_scoped_release release;
    h = entropy_lattices(c.chain, ws, np, tp, ap, bp);
  }
  return py::make_tuple(h, node, transition, h_alpha, h_beta);
}

py::tuple entropy_gradient_shim(const py::object& E, const py::object& T, const py::object& start,
                                const py::object& end, const std::string& method_name) {
  const EntropyMethod method = entropy_method(method_name);
  auto c = make_chain(E, T, start, end, py::none(), py::none());
  const py::ssize_t n = c.chain.n, S = c.chain.S;
  py::array_t<double> dE({n, S});
  py::array_t<double> dT({S, S});
  double* dEp = dE.mutable_data();
  double* dTp = dT.mutable_data();
  std::fill(dTp, dTp + S * S, 0.0);
  double h;
  {
    Workspace ws;
    py::gil_scoped_release release;
    h = method == EntropyMethod::jiao ? entropy_gradient_jiao(c.chain, ws, dEp, dTp)
                                      : entropy_gradient(c.chain, ws, dEp, dTp);
  }
  return py::make_tuple(h, dE, dT);
}

py::tuple expectation_gradient_shim(const py::object& E, const py::object& T,
                                    const py::object& node_scores, const py::object& edge_scores,
                                    const py::object& start, const py::object& end) {
  auto c = make_chain(E, T, start, end, py::none(), py::none());
  const py::ssize_t n = c.chain.n, S = c.chain.S;
  auto node = Doubles::ensure(node_scores);
  if (!node) fail("node_scores must be a float array (n, S)");
  require_shape(node, {n, S}, "node_scores");
  require_finite(node.data(), node.size(), "node_scores");
  AdditiveScore r;
  r.node = node.data();
  Doubles edge;  // None: a node-only score (GE's)
  if (!edge_scores.is_none()) {
    edge = Doubles::ensure(edge_scores);
    if (!edge) fail("edge_scores must be a float array (n-1, S, S) or None");
    require_shape(edge, {n > 0 ? n - 1 : 0, S, S}, "edge_scores");
    require_finite(edge.data(), edge.size(), "edge_scores");
    r.edge = edge.data();
    r.edge_stride = S * S;
  }
  py::array_t<double> dE({n, S});
  py::array_t<double> dT({S, S});
  double* dEp = dE.mutable_data();
  double* dTp = dT.mutable_data();
  std::fill(dTp, dTp + S * S, 0.0);
  double expected;
  {
    Workspace ws;
    py::gil_scoped_release release;
    expected = expectation_gradient(c.chain, ws, r, dEp, dTp, nullptr);
  }
  return py::make_tuple(expected, dE, dT);
}

py::array_t<double> jiao_pair_marginals_shim(const py::object& E, const py::object& T,
                                             const py::object& start, const py::object& end,
                                             int64_t u, int64_t v) {
  auto c = make_chain(E, T, start, end, py::none(), py::none());
  const py::ssize_t S = c.chain.S;
  if (!(1 <= u && u < v && v < c.chain.n)) fail("need 1 <= u < v < n");
  py::array_t<double> out({S, S, S, S});
  double* op = out.mutable_data();
  {
    Workspace ws;
    py::gil_scoped_release release;
    jiao_pair_marginals(c.chain, ws, u, v, op);
  }
  return out;
}

}  // namespace sscrf::python
