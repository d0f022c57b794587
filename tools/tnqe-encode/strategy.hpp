// strategy.hpp - steps 2 and 3 of TNQE: unitary-aware cores (each core an
// isometry completed to a unitary) and the two core-to-circuit strategies.
//
// sequential: the MPS staircase. Site k's unitary acts on its physical
//   qubits and the next ceil(log2 r_k) qubits, which carry the bond to site
//   k + 1 and later become that site's physical qubits. n data qubits in all,
//   no ancilla, no measurement; depth grows with the number of cores.
// parallel: every core is prepared at once, as the normalised state |A_k>
//   of its left bond, physical and right bond qubits, on its own register;
//   each bond is then fused by a Bell measurement (CX + H on each pair of
//   bond qubits) post-selected on |00>, which contracts the bond. Depth is
//   that of the deepest single core plus 2; the data sits on the physical
//   qubits of the registers; the price is 2 sum_k ceil(log2 r_k) extra
//   qubits and a success probability that the encoder computes exactly.
#pragma once
#include <string>
#include <vector>

#include "tnqe-encode/circuit.hpp"
#include "tnqe-encode/qtt.hpp"

namespace tnqe {

struct Encoded {
  std::string strategy;
  Circuit circuit;               ///< the whole circuit, optimised
  std::vector<int> readout;      ///< data qubits, in amplitude bit order
  std::vector<int> postselect;   ///< qubits that must be measured 0 (parallel)
  std::vector<Circuit> registers;  ///< parallel: each core's register (optimised)
  std::vector<int> left_bits, right_bits;  ///< parallel: bond qubits per register
  /// The unitary-aware cores as compiled: each block's unitary (a site's
  /// isometry completed, a trained block) or, for parallel, the completion of
  /// each register's core state.
  std::vector<CMat> unitaries;
};

Encoded sequential(const Mps& mps, const Layout& layout);
Encoded parallel(const Mps& mps, const Layout& layout);

/// The data state the circuit prepares (amplitude order over the readout
/// qubits, normalised) and the probability of the post-selection (1 for
/// sequential). Sequential circuits are simulated whole; parallel ones
/// register by register, then the Bell projections are contracted.
struct Prepared {
  CVec state;
  double success = 1;
};
Prepared run_encoding(const Encoded& e, const Layout& layout);

/// Depolarising noise on a parallel encoding (register CNOTs and the Bell
/// layer's CNOTs): the fidelity of the post-selected mixture, sum_t
/// |<target|v_t>|^2 / sum_t ||v_t||^2 over trajectories t (v_t the accepted
/// branch), and the mean acceptance probability in NoisyFidelity::success.
NoisyFidelity noisy_parallel(const Encoded& e, const Layout& layout, const CVec& target, double p,
                             int64_t trajectories, uint64_t seed);

/// The isometry of site k (rows p + d * b, columns a) completed to a unitary
/// on phys + ceil(log2 right) qubits.
CMat site_unitary(const Core& core, int right_bits);

int bits_for(int64_t r);  ///< ceil(log2 r)

}  // namespace tnqe
