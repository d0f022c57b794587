// circuit.hpp - the gate-level circuit every strategy and the baseline compile
// to (CNOT + U3), a state-vector simulator (complex128, OpenMP) with optional
// depolarising noise, the peephole passes and the exact resource counter.
//
// Qubit order: qubit q is bit q of a basis-state index (little-endian, as in
// OpenQASM simulators and Qiskit). A k-qubit matrix acting on the qubit list
// (q_0, ..., q_{k-1}) is indexed by sum_j bit(q_j) 2^j.
#pragma once
#include <Eigen/Core>
#include <complex>
#include <numbers>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "nk/rng.hpp"

namespace tnqe {

inline constexpr double kPi = std::numbers::pi;

using cd = std::complex<double>;
using CMat = Eigen::MatrixXcd;
using CVec = Eigen::VectorXcd;
using Mat2 = Eigen::Matrix2cd;

/// u3(theta, phi, lambda) on q0, or cx with control q0 and target q1.
struct Gate {
  enum Kind : uint8_t { u3, cx } kind = u3;
  int q0 = 0, q1 = -1;
  double theta = 0, phi = 0, lambda = 0;
};

/// The OpenQASM u3 matrix [[c, -e^{i l} s], [e^{i p} s, e^{i (p + l)} c]].
Mat2 u3_matrix(double theta, double phi, double lambda);
/// (theta, phi, lambda) with u3_matrix(...) equal to m up to a global phase.
void u3_angles(const Mat2& m, double& theta, double& phi, double& lambda);

struct Circuit {
  int qubits = 0;
  std::vector<Gate> gates;
  void u3(int q, double theta, double phi, double lambda);
  void u3(int q, const Mat2& m);
  void cx(int control, int target);
  void ry(int q, double angle) { u3(q, angle, 0, 0); }
  void rz(int q, double angle);  ///< as u3(0, 0, angle): Rz up to a global phase
  void h(int q);
  /// Appends 'other' with its qubit i mapped to map[i].
  void append(const Circuit& other, const std::vector<int>& map);
};

/// Exact resource counts of a circuit as scheduled ASAP (each gate starts when
/// all its qubits are free; every gate takes one layer).
struct Counts {
  int64_t qubits = 0, cnots = 0, single = 0, depth = 0, cnot_depth = 0;
};
Counts count(const Circuit& c);

/// Peephole passes, used alike for the method and the baseline: consecutive
/// single-qubit gates on a qubit fuse into one u3 (dropped when it is the
/// identity up to phase), and two equal CNOTs with nothing between them on
/// either qubit cancel. Repeated until nothing changes. Preserves the unitary
/// up to a global phase.
Circuit optimise(const Circuit& c);

/// |psi> = C |initial> (|0...0> when 'initial' is empty). Runs of gates that
/// touch at most 'fuse' qubits are merged into one dense block first (qsim's
/// gate fusion), so a sequential encoding costs a few block applications.
CVec simulate(const Circuit& c, const CVec& initial = CVec(), int fuse = 5);
/// Fast Walsh-Hadamard transform in place (natural order, unnormalised):
/// v[i] <- sum_j (-1)^{popcount(i & j)} v[j].
void walsh_hadamard(std::vector<double>& v);

/// psi <- (m on the qubit list qs) psi, m of size 2^|qs|; local bit j = qs[j].
void apply_matrix(CVec& psi, const std::vector<int>& qs, const CMat& m);
/// C[a, b] = sum_r phi[r, a] conj(mu[r, b]) over the qubits outside qs: the
/// reduced outer product |phi><mu| on qs (training gradients).
CMat reduced_outer(const CVec& phi, const CVec& mu, const std::vector<int>& qs);

/// The unitary of a small circuit (column j = C |j>), for tests.
CMat unitary(const Circuit& c);

/// Depolarising noise after every CNOT: with probability p a uniformly drawn
/// non-identity two-qubit Pauli hits its two qubits. Returns the mean of
/// |<target|psi_t>|^2 over 'trajectories' Monte Carlo runs and its standard error.
struct NoisyFidelity {
  double mean = 0, stderr_ = 0;
  int64_t trajectories = 0;
  double success = 1;  ///< mean post-selection probability (parallel encodings)
};
/// A copy of c with, after every CNOT and with probability p, a uniformly
/// drawn non-identity two-qubit Pauli (as u3 gates) on its two qubits.
Circuit with_depolarising(const Circuit& c, double p, nk::Rng& rng);
/// A uniformly drawn non-identity two-qubit Pauli: (a, b) in {0 I, 1 X, 2 Y, 3 Z}^2 \ (0, 0).
std::pair<int, int> random_two_qubit_pauli(nk::Rng& rng);
NoisyFidelity noisy_fidelity(const Circuit& c, const CVec& target, double p, int64_t trajectories, uint64_t seed);

/// |<a|b>|^2 / (|a|^2 |b|^2).
double fidelity(const CVec& a, const CVec& b);

/// OpenQASM 2.0 text of a circuit (u3 and cx on one register q).
std::string to_qasm(const Circuit& c, const std::string& comment = "");
/// Parses OpenQASM 2.0 with the qelib1 gates U u u3 u2 u1 p id x y z h s sdg t
/// tdg sx sxdg rx ry rz CX cx cz cy swap (several qreg are laid out one after
/// the other); barrier, creg and measure are ignored (measurement is taken at
/// the end). Any other gate, a gate definition, reset, if, or a syntax error
/// throws exit 3 naming the line.
Circuit parse_qasm(const std::string& text, const std::string& name);

}  // namespace tnqe
