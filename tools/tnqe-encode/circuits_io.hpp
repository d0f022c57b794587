// circuits_io.hpp - inside tnqe-encode: the circuits file (what encode and
// baseline write, merge joins and simulate reads) and the item builder that
// reading an input and reading a circuit's target share.
#pragma once
#include <limits>
#include <string>
#include <vector>

#include "tnqe-encode/qtt.hpp"
#include "tnqe-encode/strategy.hpp"
#include "tnqe-encode/tnqe.hpp"

namespace tnqe {

/// The largest state the tool allocates (2^30 amplitudes); larger is refused first.
inline constexpr int kMaxQubits = 30;

int ceil_log2(int64_t v);
bool power_of_two(int64_t v);
/// "/items/000042": one item's group in a circuits file.
std::string item_group(int64_t index);
/// "0,1,2" and back (qubit lists in attributes).
std::string join(const std::vector<int>& v);
/// "1,2,3" -> {1, 2, 3}; anything else is exit 3 naming the file and where the text came from.
std::vector<int> split_ints(const std::string& s, const std::string& file, const std::string& where);

/// An item from values in the input's own shape: padded, laid out on qubits,
/// checked (square power-of-two images unless pad, at most kMaxQubits, not all zero).
Item make_item(int64_t index, bool image, int64_t h, int64_t w, int64_t c, std::vector<float> values, bool pad,
               const std::string& file, const std::string& dataset);

/// One encoded item: its circuit, the figures, and what the file keeps of it.
struct Record {
  int64_t index = 0;
  Counts counts;
  double fidelity = std::numeric_limits<double>::quiet_NaN();
  double psnr = std::numeric_limits<double>::quiet_NaN(), ssim = std::numeric_limits<double>::quiet_NaN();
  double success = 1, seconds = 0, norm = 1;
  int64_t bond = 1;
  std::vector<int64_t> bonds;
  Encoded enc;
  Mps mps;
  Item item;
  std::string qasm;
  std::vector<double> history;
  std::string synthesis;
};


/// Writes the QASM files (each atomically), then the circuits file.
void write_records(const std::string& path, bool no_clobber, const std::string& strategy,
                   const std::vector<Record>& recs, const std::string& input, double tol, int64_t bond,
                   const std::string& qasm_dir, bool trained = false, int layers = 1);

/// A circuit read back from a circuits file, with its target when stored.
struct Loaded {
  Item item;
  Encoded enc;
  bool has_item = false;
};

/// Item 'index' of a circuits file, every gate and attribute checked.
Loaded load_circuit(const nk::h5::File& f, int64_t index);

}  // namespace tnqe
