// align.hpp - permutation alignment of the hidden neurons of two networks of
// one architecture (weight matching): LIF neurons of a layer share their
// parameters, so permuting a hidden layer's neurons (rows of its incoming
// weights and bias, columns of the next layer's weights) leaves the
// network's function unchanged; the permutation that makes one network's
// weights most similar to another's lets their weights be merged entry by entry.
#pragma once
#include <vector>

#include "nk/snn/snn.hpp"

// spike-sft's code names the shared spiking network library snn::.
namespace snn = nk::snn;

namespace spike {

struct Alignment {
  /// perm[h][i]: the neuron of the aligned network that goes to position i
  /// of hidden layer h.
  std::vector<std::vector<int>> perm;
  std::vector<int64_t> moved;        ///< per hidden layer: neurons not left in place
  std::vector<double> before, after;  ///< per hidden layer: summed weight similarity before and after
  bool identity() const;
};

/// The permutation of b's hidden neurons that maximises the similarity of its
/// weights to a's: layer by layer from the input (incoming weights and
/// bias, the Hungarian algorithm per layer), then coordinate-descent sweeps
/// that add the outgoing weights, until nothing changes (at most 'sweeps').
Alignment match_neurons(const snn::Network& a, const snn::Network& b, int sweeps = 5);

/// Applies an alignment to a network of the same architecture.
void permute_neurons(snn::Network& net, const Alignment& alignment);

}  // namespace spike
