// qtt.hpp - step 1 of TNQE: the quantised tensor-train (QTT / MPS) form of
// an image or vector, and the map between data, tensor and qubit order.
//
// An s x s image (s = 2^m) has pixel (i, j) with row bits i_1..i_m and column
// bits j_1..j_m (i_1 the most significant). Core k carries scale k: its
// physical index is p_k = 2 i_k + j_k (dimension 4, two qubits). An RGB image
// adds a colour core last (3 channels padded to 4). A vector of length D is
// padded to 2^n and split into cores of two bits each (most significant
// first; one bit in the last core when n is odd).
//
// Qubits: core k's physical qubits are o_k, o_k + 1, ... with o_1 = 0, so the
// amplitude index is sum_k p_k 2^{o_k}; bit b of p_k sits on qubit o_k + b.
#pragma once
#include <cstdint>
#include <vector>

#include "tnqe-encode/circuit.hpp"

namespace tnqe {

/// Which data-index bits each core's physical index carries (bit b of p_k is
/// data bit bits[k][b]).
struct Layout {
  std::vector<std::vector<int>> bits;
  int cores() const { return static_cast<int>(bits.size()); }
  int qubits() const;
  int phys_qubits(int k) const { return static_cast<int>(bits[k].size()); }
  int64_t phys_dim(int k) const { return int64_t{1} << bits[k].size(); }
  int offset(int k) const;  ///< o_k
  int64_t to_amplitude(int64_t data_index) const;
  int64_t to_tensor(int64_t data_index) const;  ///< p_1 slowest
};
/// Data index of a pixel: ((i * s) + j) * C + c, C = 1 (gray) or 4 (RGB padded).
Layout image_layout(int m, bool rgb);
Layout vector_layout(int n);

/// One MPS core A[a, p, b] as a matrix of left x (phys * right), column p * right + b.
struct Core {
  int64_t left = 1, phys = 4, right = 1;
  CMat m;
  cd at(int64_t a, int64_t p, int64_t b) const { return m(a, p * right + b); }
};

struct Mps {
  std::vector<Core> cores;
  double norm = 1;  ///< ||data||; the cores hold the normalised state
  std::vector<int64_t> bonds() const;  ///< r_1..r_{K-1}
};

struct Truncation {
  int64_t max_bond = 0;  ///< 0: no cap
  double tol = 0;        ///< relative Frobenius error of the whole train (Oseledets' split)
};

/// Left-to-right TT-SVD of 'tensor' (tensor order, length prod phys) with the
/// truncation, then a right-to-left LQ sweep to right-canonical form (rows of
/// every core but the first orthonormal); the norm goes to Mps::norm.
Mps decompose(const CVec& tensor, const std::vector<int64_t>& phys, const Truncation& t);

/// The state the MPS describes, in tensor order (p_1 slowest).
CVec contract(const Mps& mps);

/// Data (length 2^n in data order) -> tensor order, and tensor order -> amplitudes.
CVec data_to_tensor(const Layout& layout, const CVec& data);
CVec tensor_to_amplitudes(const Layout& layout, const CVec& tensor);
CVec amplitudes_to_data(const Layout& layout, const CVec& amplitudes);

}  // namespace tnqe
