// tnqe.hpp - the verbs of tnqe-encode: encode (TNQE), baseline (exact
// amplitude encoding) and simulate (state-vector check, noise, decoding).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tnqe-encode/circuit.hpp"
#include "nk/dataset.hpp"
#include "nk/h5.hpp"
#include "nk/image.hpp"
#include "nk/run_env.hpp"
#include "tnqe-encode/qtt.hpp"

namespace tnqe {

inline constexpr const char* kCircuitsSchema = "tnqe-encode.circuits/1";
inline constexpr const char* kSimulationSchema = "tnqe-encode.simulation/1";

/// One item of the input: an image (H, W, C) or a vector (D), padded to the
/// power-of-two sizes the qubits need.
struct Item {
  int64_t index = 0;          ///< position in the input dataset
  bool image = true;
  int64_t height = 0, width = 0, channels = 0;  ///< as read (vectors: height 1, width D, channels 1)
  int side = 0;               ///< padded square side 2^m (images)
  int qubits = 0;
  Layout layout;
  CVec data;                  ///< data order, padded, unnormalised
  std::vector<float> original;  ///< the values as read, for PSNR/SSIM
};

/// The input dataset (/images [N,H,W,C] or [N,H,W], or /vectors [N,D]) of an
/// nk-data file, checked by nk::data (C in {1, 3}, labels ignored);
/// read_item adds the qubit bound, the power of two (or --pad) and finiteness.
using Source = nk::data::Source;
Source open_source(const std::string& path);
Item read_item(const Source& source, int64_t index, bool pad);

/// The items a run takes: --index K, or all (after --shard).
std::vector<int64_t> select_items(const Source& source, int64_t index, const nk::Shard& shard);

/// Decoded data from a prepared state (amplitude order): the global phase is
/// aligned with the target, the norm restored, images clipped to [0, 1].
nk::Image decode_image(const Item& item, const CVec& amplitudes);
/// PSNR and SSIM of the decoded state against the item (NaN for vectors).
void quality(const Item& item, const CVec& amplitudes, double& psnr, double& ssim);
/// The item's normalised amplitude vector (the target state).
CVec target_state(const Item& item);

struct EncodeOptions {
  std::string input, output = "-", qasm_dir, strategy = "sequential";
  bool no_clobber = false, pad = false, verify = true;
  int64_t index = -1, bond = 8;
  double tol = 0;
  bool train = false;
  int layers = 1, iterations = 200;
  double learning_rate = 0.01;
};
/// The items of env.shard (or --index).
void encode(const EncodeOptions& o, const nk::RunEnv& env);

struct BaselineOptions {
  std::string input, output = "-", qasm_dir;
  bool no_clobber = false, pad = false;
  int64_t index = -1;
  int verify_qubits = 16;
};
void baseline(const BaselineOptions& o, const nk::RunEnv& env);

/// The summary of one item through one configuration (what sweep tabulates).
struct Outcome {
  std::string strategy;
  Counts counts;
  double fidelity = 0, psnr = 0, ssim = 0, success = 1, seconds = 0;
  int64_t bond = 0;
};
/// One item through encode's pipeline with the options' configuration.
Outcome encode_item(const Item& item, const EncodeOptions& o);
/// One item by exact amplitude encoding, simulated up to verify_qubits.
Outcome baseline_item(const Item& item, int verify_qubits);

inline constexpr const char* kSweepSchema = "tnqe-encode.sweep/1";
struct SweepOptions {
  std::string input, output, plot;
  bool no_clobber = false, pad = false, parallel = true, train = false;
  int64_t index = 0;
  std::vector<int64_t> bonds = {2, 4, 8, 16};
  std::vector<int> layers;
  int iterations = 200, verify_qubits = 16;
  double learning_rate = 0.01;
};
/// Bond dimension (and layers) against depth, fidelity and PSNR for one item:
/// a table on standard output, optionally HDF5 and an SVG trade-off plot.
void sweep(const SweepOptions& o);

struct MergeOptions {
  std::vector<std::string> inputs;
  std::string output = "-";
  bool no_clobber = false;
};
/// Joins circuits files of one run (shards of --shard, in any order): the
/// metrics concatenated in item order and every item group copied.
void merge(const MergeOptions& o);

struct SimulateOptions {
  std::string input, qasm, target, output, decode;
  bool no_clobber = false;
  int64_t index = -1, trajectories = 100;
  double noise = 0;
};
void simulate_verb(const SimulateOptions& o, const nk::RunEnv& env);

}  // namespace tnqe
