// train.hpp - step 4 of TNQE: the unitary-aware constraint as a trainable
// model. Each block (a site unitary of the staircase, or a two-qubit gate of
// a layered circuit) is a unitary U, updated on the unitary manifold as
// U <- U cay(A) with A skew-Hermitian (Cayley retraction); Adam runs on the
// Riemannian gradient of 1 - |<target|psi>|^2 in that Lie algebra.
#pragma once
#include <vector>

#include "tnqe-encode/circuit.hpp"
#include "tnqe-encode/qtt.hpp"

namespace tnqe {

struct Block {
  std::vector<int> qubits;  ///< local bit j = qubits[j]
  CMat u;
  int zero_inputs = 0;      ///< top qubits promised |0> on input (only the first block of a staircase)
};

/// psi = B_last ... B_1 |0...0>.
CVec apply_blocks(const std::vector<Block>& blocks, int n);
/// Riemannian gradients G_b (skew-Hermitian) of L = 1 - |<t|psi>|^2, with L;
/// a step U_b <- U_b exp(-eps G_b) lowers L at rate ||G_b||^2.
std::vector<CMat> gradients(const std::vector<Block>& blocks, int n, const CVec& target, double& loss);

struct TrainOptions {
  int iterations = 200;
  double learning_rate = 0.01;
};
/// Adam on the manifold with a cosine learning-rate decay; leaves the best
/// iterate in 'blocks' and returns the loss before each step (and the final one).
std::vector<double> train(std::vector<Block>& blocks, int n, const CVec& target, const TrainOptions& o);

/// The SVD staircase as blocks: site unitaries of a right-canonical MPS.
std::vector<Block> staircase_blocks(const Mps& mps, const Layout& layout);
/// L layers of two-qubit staircases initialised as Ran (2020) does: layer l
/// is the bond-2 MPS (qubit-level) of the target disentangled by layers
/// 1..l-1; psi = U_1 ... U_L |0>.
std::vector<Block> layered_blocks(const CVec& target, int n, int layers);
/// Compiles blocks to CNOT + U3 (state preparation for a block whose inputs
/// are all |0>, QSD/KAK otherwise) and optimises.
Circuit compile_blocks(const std::vector<Block>& blocks, int n);

}  // namespace tnqe
