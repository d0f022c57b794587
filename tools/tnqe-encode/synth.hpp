// synth.hpp - the one compiler that the method and the baseline share: exact
// synthesis of single-qubit gates (ZYZ as u3), uniformly controlled
// rotations (Gray-code CNOT ladders), two-qubit unitaries (KAK, 3 CNOTs),
// n-qubit unitaries and isometries (quantum Shannon decomposition over
// LAPACK's cosine-sine decomposition) and state preparation (Mottonen).
// Every routine appends gates to a Circuit; qubit lists give local bit j.
#pragma once
#include <Eigen/Core>
#include <vector>

#include "tnqe-encode/circuit.hpp"

namespace tnqe {

using Mat4 = Eigen::Matrix4cd;

/// Uniformly controlled rotation: for each control pattern i (bit j of i is
/// controls[j]) the target gets R_axis(angles[i]); axis 'y' or 'z'. Emits
/// 2^m CNOTs for m >= 1 controls, none when every angle is zero.
/// target_zero (Ry only): the target is promised to be |0> before it; the
/// ladder is then run backwards with CZs, whose first one acts trivially on
/// |0> and is left out: 2^m - 1 CNOTs (the saving of Iten et al.'s
/// gates-up-to-a-diagonal, here exact on the promised inputs).
void emit_multiplexed_rotation(Circuit& c, char axis, int target, const std::vector<int>& controls,
                               const std::vector<double>& angles, bool target_zero = false);

/// Two-qubit unitary on (q0, q1) with at most 3 CNOTs, by the KAK (Cartan)
/// decomposition in the magic basis; the canonical part exp(i(a XX + b YY +
/// c ZZ)) uses the circuit of Vatan and Williams (2004).
/// A real orthogonal u with determinant +1 (up to a global phase), as real
/// data gives, takes 2 CNOTs: u = M (A x B) M^H in the magic basis M.
void emit_two_qubit(Circuit& c, const Mat4& u, int q0, int q1);
/// The 2-CNOT circuit when u is in SO(4) up to a phase; false (nothing
/// emitted) otherwise.
bool emit_two_qubit_orthogonal(Circuit& c, const Mat4& u, int q0, int q1);

/// Any unitary on the qubit list by quantum Shannon decomposition (Shende,
/// Bullock, Markov 2006) down to two-qubit blocks (KAK). 'zero_inputs' top
/// qubits (the last entries of 'qubits') are promised to start in |0>: only
/// the first 2^(n - zero_inputs) columns of u are then reproduced, which
/// saves the right-hand factor at those levels (an isometry).
void emit_unitary(Circuit& c, const CMat& u, const std::vector<int>& qubits, int zero_inputs = 0);

/// Exact state preparation |0...0> -> |psi> (psi normalised) by Mottonen et
/// al. (2005): uniformly controlled Ry from the top qubit down, then Rz for the
/// phases. Each Ry multiplexor's target is still |0> when it starts, so each
/// saves one CNOT (target_zero). Real vectors (of any signs) need only the Ry
/// stage: 2^n - n - 1 CNOTs (Qiskit's isometry count); complex ones
/// 2^(n+1) - n - 3.
void emit_state(Circuit& c, const CVec& psi, const std::vector<int>& qubits);

/// Exact state preparation by recursive Schmidt decomposition (Plesch and
/// Brukner 2011): split the qubits into a low half A (floor(n/2)) and a high
/// half B, prepare the Schmidt coefficients on A (recursively), copy them to
/// B with CNOTs, then rotate A by its Schmidt basis (a unitary) and B by its
/// own (an isometry: B's top qubits start in |0>). Fewer CNOTs than
/// Mottonen for small n and for complex data; see schmidt_cnots.
void emit_state_schmidt(Circuit& c, const CVec& psi, const std::vector<int>& qubits);

/// Closed forms of the CNOT counts above for generic (dense) input.
int64_t state_cnots(int n, bool real);
int64_t unitary_cnots(int n);
/// CNOTs of emit_unitary on n qubits with z promised-|0> inputs (generic input).
int64_t isometry_cnots(int n, int z);
int64_t schmidt_cnots(int n);

/// Columns r.. of a unitary whose first columns are the orthonormal columns
/// of v (Householder QR of v).
CMat complete_isometry(const CMat& v);

/// Cosine-sine decomposition of a 2h x 2h unitary (LAPACK zuncsd):
/// u = diag(u1, u2) [[C, -S], [S, C]] diag(v1h, v2h), C = cos(theta), S = sin(theta).
struct CosineSine {
  CMat u1, u2, v1h, v2h;
  Eigen::VectorXd theta;
};
CosineSine cosine_sine(const CMat& u);

/// True when the circuit's unitary equals u up to a global phase (tests).
double phase_distance(const CMat& a, const CMat& b);

}  // namespace tnqe
