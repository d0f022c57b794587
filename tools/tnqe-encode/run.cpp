// run.cpp - reading items, the encode / baseline / simulate verbs and their files.
#include <omp.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "nk/atomic_file.hpp"
#include "nk/error.hpp"
#include "nk/log.hpp"
#include "nk/metrics.hpp"
#include "nk/progress.hpp"
#include "nk/shard.hpp"
#include "nk/timer.hpp"
#include "tnqe-encode/strategy.hpp"
#include "tnqe-encode/synth.hpp"
#include "tnqe-encode/tnqe.hpp"
#include "tnqe-encode/train.hpp"

namespace tnqe {
namespace {

constexpr int kMaxQubits = 30;

int ceil_log2(int64_t v) {
  int b = 0;
  while ((int64_t{1} << b) < v) ++b;
  return b;
}

bool power_of_two(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

std::string item_group(int64_t index) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "/items/%06lld", static_cast<long long>(index));
  return buf;
}

std::string join(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s.push_back(',');
    s.append(std::to_string(v[i]));
  }
  return s;
}

std::vector<int> split_ints(const std::string& s) {
  std::vector<int> out;
  std::stringstream ss(s);
  for (std::string t; std::getline(ss, t, ',');)
    if (!t.empty()) out.push_back(std::stoi(t));
  return out;
}

/// Builds an item from values in the input's own shape.
Item make_item(int64_t index, bool image, int64_t h, int64_t w, int64_t c, std::vector<float> values, bool pad,
               const std::string& file, const std::string& dataset) {
  Item it;
  it.index = index;
  it.image = image;
  it.height = h;
  it.width = w;
  it.channels = c;
  it.original = std::move(values);
  const std::string where = "item " + std::to_string(index);
  if (image) {
    if (!(power_of_two(h) && power_of_two(w) && h == w) && !pad)
      throw nk::input_error(file, dataset,
                            where + " is " + std::to_string(h) + "x" + std::to_string(w) +
                                ": TNQE needs a square image with a power-of-two side (use --pad to pad with zeros)");
    const int m = ceil_log2(std::max({h, w, int64_t{2}}));
    it.side = 1 << m;
    const bool rgb = c == 3;
    it.layout = image_layout(m, rgb);
    it.qubits = it.layout.qubits();
    if (it.qubits > kMaxQubits)
      throw nk::input_error(file, dataset, where + " needs " + std::to_string(it.qubits) + " qubits (more than " +
                                               std::to_string(kMaxQubits) + "): refused before allocating");
    const int cp = rgb ? 4 : 1;
    it.data = CVec::Zero(int64_t{1} << it.qubits);
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x)
        for (int64_t ch = 0; ch < c; ++ch)
          it.data[(y * it.side + x) * cp + ch] = it.original[(y * w + x) * c + ch];
  } else {
    const int n = std::max(1, ceil_log2(w));
    if (n > kMaxQubits)
      throw nk::input_error(file, dataset, where + " needs " + std::to_string(n) + " qubits (more than " +
                                               std::to_string(kMaxQubits) + "): refused before allocating");
    it.layout = vector_layout(n);
    it.qubits = n;
    it.data = CVec::Zero(int64_t{1} << n);
    for (int64_t x = 0; x < w; ++x) it.data[x] = it.original[x];
  }
  if (!(it.data.norm() > 0))
    throw nk::input_error(file, dataset, where + " is all zero: no normalised quantum state encodes it");
  return it;
}

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

void write_records(const std::string& path, bool no_clobber, const std::string& strategy,
                   const std::vector<Record>& recs, const std::string& input, double tol, int64_t bond,
                   const std::string& qasm_dir, bool trained = false, int layers = 1) {
  // QASM files first, each atomically; the HDF5 file is committed last.
  if (!qasm_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(qasm_dir, ec);
    if (ec) throw nk::io_error(qasm_dir, "cannot create the folder: " + ec.message());
    for (const Record& r : recs) {
      char name[48];
      std::snprintf(name, sizeof name, "/item_%06lld.qasm", static_cast<long long>(r.index));
      nk::write_output_bytes(qasm_dir + name, std::vector<unsigned char>(r.qasm.begin(), r.qasm.end()), no_clobber);
    }
  }
  nk::h5::Writer out(path, kCircuitsSchema, no_clobber);
  out.attr("/", "strategy", strategy);
  out.attr("/", "input", input);
  out.attr("/", "bond", bond);
  out.attr("/", "tol", tol);
  out.attr("/", "trained", static_cast<int64_t>(trained));
  out.attr("/", "layers", static_cast<int64_t>(layers));
  const int64_t n = static_cast<int64_t>(recs.size());
  auto column = [&](const std::string& name, auto get, const std::string& units = "") {
    std::vector<double> v(n);
    for (int64_t i = 0; i < n; ++i) v[i] = get(recs[i]);
    out.write("/metrics/" + name, v.data(), {n}, "N", units);
  };
  std::vector<int64_t> idx(n);
  for (int64_t i = 0; i < n; ++i) idx[i] = recs[i].index;
  out.write("/metrics/index", idx.data(), {n}, "N");
  column("qubits", [](const Record& r) { return static_cast<double>(r.counts.qubits); });
  column("cnots", [](const Record& r) { return static_cast<double>(r.counts.cnots); });
  column("single_qubit_gates", [](const Record& r) { return static_cast<double>(r.counts.single); });
  column("depth", [](const Record& r) { return static_cast<double>(r.counts.depth); });
  column("cnot_depth", [](const Record& r) { return static_cast<double>(r.counts.cnot_depth); });
  column("fidelity", [](const Record& r) { return r.fidelity; });
  column("psnr", [](const Record& r) { return r.psnr; }, "dB");
  column("ssim", [](const Record& r) { return r.ssim; });
  column("bond_dim", [](const Record& r) { return static_cast<double>(r.bond); });
  column("success_probability", [](const Record& r) { return r.success; });
  column("seconds", [](const Record& r) { return r.seconds; }, "s");
  out.attr("/metrics", "strategy", strategy);
  for (const Record& r : recs) {
    const std::string g = item_group(r.index);
    const Circuit& c = r.enc.circuit;
    std::vector<double> gates(c.gates.size() * 6);
    for (size_t i = 0; i < c.gates.size(); ++i) {
      const Gate& x = c.gates[i];
      double* row = &gates[i * 6];
      row[0] = x.kind == Gate::cx ? 1 : 0;
      row[1] = x.q0;
      row[2] = x.kind == Gate::cx ? x.q1 : -1;
      row[3] = x.theta;
      row[4] = x.phi;
      row[5] = x.lambda;
    }
    out.write(g + "/gates", gates.data(), {static_cast<int64_t>(c.gates.size()), 6}, "G,kind:q0:q1:theta:phi:lambda",
              "rad");
    out.attr(g, "strategy", strategy);
    if (!r.synthesis.empty()) out.attr(g, "synthesis", r.synthesis);
    out.attr(g, "qubits", static_cast<int64_t>(c.qubits));
    out.attr(g, "readout", join(r.enc.readout));
    out.attr(g, "postselect", join(r.enc.postselect));
    out.attr(g, "norm", r.norm);
    out.attr(g, "kind", r.item.image ? "image" : "vector");
    out.attr(g, "shape", std::to_string(r.item.height) + "," + std::to_string(r.item.width) + "," +
                             std::to_string(r.item.channels));
    if (!r.history.empty())
      out.write(g + "/train_loss", r.history.data(), {static_cast<int64_t>(r.history.size())}, "iteration");
    if (r.enc.strategy == "parallel") {
      int64_t reg_gates = 0;
      for (const Circuit& reg : r.enc.registers) reg_gates += static_cast<int64_t>(reg.gates.size());
      out.attr(g, "register_gates", reg_gates);
      out.attr(g, "left_bits", join(r.enc.left_bits));
      out.attr(g, "right_bits", join(r.enc.right_bits));
    }
    if (r.item.image)
      out.write(g + "/target", r.item.original.data(), {r.item.height, r.item.width, r.item.channels}, "H,W,C");
    else
      out.write(g + "/target", r.item.original.data(), {r.item.width}, "D");
    for (size_t k = 0; k < r.mps.cores.size(); ++k) {
      const Core& core = r.mps.cores[k];
      std::vector<std::complex<double>> v(static_cast<size_t>(core.left * core.phys * core.right));
      for (int64_t a = 0; a < core.left; ++a)
        for (int64_t p = 0; p < core.phys; ++p)
          for (int64_t b = 0; b < core.right; ++b) v[(a * core.phys + p) * core.right + b] = core.at(a, p, b);
      char name[32];
      std::snprintf(name, sizeof name, "%02zu", k);
      out.write(g + "/cores/" + name, v.data(), {core.left, core.phys, core.right}, "left,phys,right");
    }
    for (size_t k = 0; k < r.enc.unitaries.size(); ++k) {
      const CMat& rm = r.enc.unitaries[k];
      std::vector<std::complex<double>> v(static_cast<size_t>(rm.size()));
      for (Eigen::Index i = 0; i < rm.rows(); ++i)
        for (Eigen::Index j = 0; j < rm.cols(); ++j) v[i * rm.cols() + j] = rm(i, j);
      char name[32];
      std::snprintf(name, sizeof name, "%02zu", k);
      out.write(g + "/unitaries/" + name, v.data(), {rm.rows(), rm.cols()}, "out,in");
    }
  }
  out.commit();
}

void log_record(const Record& r, const std::string& strategy) {
  spdlog::info("item {} ({}): {} qubits, {} CNOTs, depth {} (CNOT depth {}), fidelity {:.6f}, PSNR {:.2f} dB, SSIM {:.4f}{}, {:.2f} s",
               r.index, strategy, r.counts.qubits, r.counts.cnots, r.counts.depth, r.counts.cnot_depth, r.fidelity,
               r.psnr, r.ssim,
               r.success < 1 ? fmt::format(", post-selection succeeds with p = {:.3e}", r.success) : std::string(),
               r.seconds);
}

template <class Body>
std::vector<Record> run_items(const Source& src, const std::vector<int64_t>& items, bool pad, const char* label,
                              Body body) {
  // Read serially (HDF5 is not thread-safe), compute in parallel over items.
  std::vector<Record> recs(items.size());
  for (size_t i = 0; i < items.size(); ++i) recs[i].item = read_item(src, items[i], pad);
  nk::Progress progress(label, static_cast<int64_t>(items.size()));
  std::exception_ptr failure;
  int64_t done = 0;
  const bool outer = items.size() > 1;
#pragma omp parallel for schedule(dynamic, 1) if (outer)
  for (int64_t i = 0; i < static_cast<int64_t>(items.size()); ++i) {
    try {
      const nk::Stopwatch watch;
      recs[i].index = items[i];
      body(recs[i]);
      recs[i].seconds = watch.seconds();
    } catch (...) {
#pragma omp critical
      if (!failure) failure = std::current_exception();
    }
#pragma omp critical
    progress.update(++done);
  }
  progress.finish();
  if (failure) std::rethrow_exception(failure);
  return recs;
}

}  // namespace

Source open_source(const std::string& path) {
  nk::data::Options options;
  options.image_files = false;
  options.channels = {1, 3};
  options.labels = nk::data::Labels::ignore;
  return Source::open(path, options);
}

Item read_item(const Source& s, int64_t index, bool pad) {
  // Refuse absurd sizes before reading.
  const int q = s.images() ? 2 * ceil_log2(std::max(s.height(), s.width())) + (s.channels() == 3 ? 2 : 0)
                           : ceil_log2(s.width());
  if (q > kMaxQubits)
    throw nk::input_error(s.path(), s.dataset(),
                          "items of " + std::to_string(s.item_values()) + " values need " + std::to_string(q) +
                              " qubits (more than " + std::to_string(kMaxQubits) + "): refused before allocating");
  nk::h5::Array<float> a = s.read_item(index);
  return make_item(index, s.images(), s.height(), s.width(), s.channels(), std::move(a.data), pad, s.path(),
                   s.dataset());
}

std::vector<int64_t> select_items(const Source& s, int64_t index, const nk::Shard& shard) {
  if (index >= 0) {
    if (index >= s.count())
      throw nk::usage_error("--index " + std::to_string(index) + " is outside " + s.dataset() + " (N = " +
                            std::to_string(s.count()) + ")");
    return {index};
  }
  const auto [begin, end] = nk::shard_range(shard, s.count());
  std::vector<int64_t> v;
  for (int64_t i = begin; i < end; ++i) v.push_back(i);
  return v;
}

CVec target_state(const Item& item) {
  const Layout& l = item.layout;
  CVec a(item.data.size());
  for (int64_t x = 0; x < item.data.size(); ++x) a[l.to_amplitude(x)] = item.data[x];
  return a / a.norm();
}

nk::Image decode_image(const Item& item, const CVec& amplitudes) {
  const CVec target = target_state(item);
  const cd overlap = target.dot(amplitudes);  // <target|psi>
  const cd align = std::abs(overlap) > 0 ? std::conj(overlap) / std::abs(overlap) : cd(1);
  const CVec data = amplitudes_to_data(item.layout, amplitudes * align) * item.data.norm();
  nk::Image img;
  if (item.image) {
    img.height = static_cast<int>(item.height);
    img.width = static_cast<int>(item.width);
    img.channels = static_cast<int>(item.channels);
    const int cp = item.channels == 3 ? 4 : 1;
    img.pixels.resize(static_cast<size_t>(item.height * item.width * item.channels));
    for (int64_t y = 0; y < item.height; ++y)
      for (int64_t x = 0; x < item.width; ++x)
        for (int64_t c = 0; c < item.channels; ++c)
          img.pixels[(y * item.width + x) * item.channels + c] =
              static_cast<float>(std::clamp(data[(y * item.side + x) * cp + c].real(), 0.0, 1.0));
  } else {
    img.height = 1;
    img.width = static_cast<int>(item.width);
    img.channels = 1;
    for (int64_t x = 0; x < item.width; ++x) img.pixels.push_back(static_cast<float>(data[x].real()));
  }
  return img;
}

void quality(const Item& item, const CVec& amplitudes, double& psnr, double& ssim) {
  psnr = ssim = std::numeric_limits<double>::quiet_NaN();
  if (!item.image) return;
  nk::Image ref;
  ref.height = static_cast<int>(item.height);
  ref.width = static_cast<int>(item.width);
  ref.channels = static_cast<int>(item.channels);
  ref.pixels = item.original;
  const nk::Image got = decode_image(item, amplitudes);
  psnr = nk::psnr(ref, got);
  ssim = nk::ssim(ref, got);
}

namespace {

// One item through the TNQE pipeline (QTT, unitary-aware cores, optional
// training, compilation, verification) into r.
void encode_record(Record& r, const EncodeOptions& o) {
  Truncation t;
  t.max_bond = o.bond;
  t.tol = o.tol;
  const Item& it = r.item;
  std::vector<int64_t> phys;
  for (int k = 0; k < it.layout.cores(); ++k) phys.push_back(it.layout.phys_dim(k));
  r.mps = decompose(data_to_tensor(it.layout, it.data), phys, t);
  r.norm = r.mps.norm;
  r.bonds = r.mps.bonds();
  r.bond = 1;
  for (int64_t b : r.bonds) r.bond = std::max(r.bond, b);
  if (o.layers > 1 || o.train) {
    // Trainable block unitaries: the staircase's site unitaries (layers = 1)
    // or L layers of two-qubit gates (Ran's SVD initialisation).
    const CVec target = target_state(it);
    std::vector<Block> blocks =
        o.layers > 1 ? layered_blocks(target, it.qubits, o.layers) : staircase_blocks(r.mps, it.layout);
    if (o.train) {
      TrainOptions to;
      to.iterations = o.iterations;
      to.learning_rate = o.learning_rate;
      r.history = train(blocks, it.qubits, target, to);
    }
    r.enc.strategy = o.layers > 1 ? "layered" : "sequential";
    r.enc.circuit = compile_blocks(blocks, it.qubits);
    for (int q = 0; q < it.qubits; ++q) r.enc.readout.push_back(q);
    for (const Block& b : blocks) r.enc.unitaries.push_back(b.u);
    if (o.layers > 1) r.mps.cores.clear();  // the layers are not the QTT cores
  } else {
    r.enc = o.strategy == "parallel" ? parallel(r.mps, it.layout) : sequential(r.mps, it.layout);
  }
  r.counts = count(r.enc.circuit);
  if (o.verify) {
    const Prepared p = run_encoding(r.enc, it.layout);
    r.success = p.success;
    r.fidelity = fidelity(target_state(it), p.state);
    quality(it, p.state, r.psnr, r.ssim);
  }
  std::string comment = "tnqe-encode encode: item " + std::to_string(r.index) + ", strategy " + r.enc.strategy +
                        (o.train ? " (trained)" : "") +
                        ", bond " + std::to_string(r.bond);
  if (!r.enc.postselect.empty())
    comment += "\npost-select qubits " + join(r.enc.postselect) + " on 0; data qubits " + join(r.enc.readout);
  r.qasm = to_qasm(r.enc.circuit, comment);
}

// One item by exact amplitude encoding (the best exact method for the data).
void baseline_record(Record& r, int verify_qubits) {
  const Item& it = r.item;
  const CVec target = target_state(it);
  Circuit c;
  c.qubits = it.qubits;
  std::vector<int> qs(it.qubits);
  for (int q = 0; q < it.qubits; ++q) qs[q] = q;
  emit_state(c, target, qs);
  r.enc.strategy = "amplitude";
  r.enc.circuit = optimise(c);
  r.synthesis = "mottonen";
  // The best exact method for the data at hand: Schmidt recursion when it
  // needs fewer CNOTs (small n, complex data), else Mottonen.
  bool real = true;
  for (const cd& v : target) real = real && v.imag() == 0;
  if (schmidt_cnots(it.qubits) < state_cnots(it.qubits, real)) {
    Circuit s;
    s.qubits = it.qubits;
    emit_state_schmidt(s, target, qs);
    s = optimise(s);
    if (count(s).cnots < count(r.enc.circuit).cnots) {
      r.enc.circuit = std::move(s);
      r.synthesis = "schmidt";
    }
  }
  r.enc.readout = qs;
  r.norm = it.data.norm();
  r.bond = 0;
  r.counts = count(r.enc.circuit);
  if (it.qubits <= verify_qubits) {
    const CVec psi = simulate(r.enc.circuit);
    r.fidelity = fidelity(target, psi);
    quality(it, psi, r.psnr, r.ssim);
  }
  r.qasm = to_qasm(r.enc.circuit, "tnqe-encode baseline: exact amplitude encoding (" + r.synthesis + "), item " +
                                      std::to_string(r.index));
}

Outcome outcome(const Record& r) {
  Outcome x;
  x.strategy = r.enc.strategy;
  x.counts = r.counts;
  x.fidelity = r.fidelity;
  x.psnr = r.psnr;
  x.ssim = r.ssim;
  x.success = r.success;
  x.bond = r.bond;
  x.seconds = r.seconds;
  return x;
}

template <class F>
Outcome timed(const Item& item, F f) {
  Record r;
  r.item = item;
  r.index = item.index;
  const nk::Stopwatch watch;
  f(r);
  r.seconds = watch.seconds();
  return outcome(r);
}

}  // namespace

Outcome encode_item(const Item& item, const EncodeOptions& o) {
  return timed(item, [&](Record& r) { encode_record(r, o); });
}

Outcome baseline_item(const Item& item, int verify_qubits) {
  return timed(item, [&](Record& r) { baseline_record(r, verify_qubits); });
}

void encode(const EncodeOptions& o, const nk::RunEnv& env) {
  const Source src = open_source(o.input);
  const std::vector<int64_t> items = select_items(src, o.index, env.shard);
  std::vector<Record> recs = run_items(src, items, o.pad, "encode", [&](Record& r) { encode_record(r, o); });
  const std::string name = o.layers > 1 ? "layered" : o.strategy;
  for (const Record& r : recs) log_record(r, name);
  write_records(o.output, o.no_clobber, name, recs, o.input, o.tol, o.bond, o.qasm_dir, o.train, o.layers);
}

void baseline(const BaselineOptions& o, const nk::RunEnv& env) {
  const Source src = open_source(o.input);
  const std::vector<int64_t> items = select_items(src, o.index, env.shard);
  std::vector<Record> recs =
      run_items(src, items, o.pad, "baseline", [&](Record& r) { baseline_record(r, o.verify_qubits); });
  for (const Record& r : recs) log_record(r, "amplitude");
  write_records(o.output, o.no_clobber, "amplitude", recs, o.input, 0, 0, o.qasm_dir);
}

namespace {

struct Loaded {
  Item item;
  Encoded enc;
  bool has_item = false;
};

Loaded load_circuit(const nk::h5::File& f, int64_t index) {
  Loaded l;
  const std::string g = item_group(index);
  if (!f.has(g + "/gates")) throw nk::input_error(f.path(), g + "/gates", "missing: the file holds no item " + std::to_string(index));
  const auto gates = f.read<double>(g + "/gates", 2, "G,6");
  if (gates.shape[1] != 6) throw nk::input_error(f.path(), g + "/gates", "expected 6 columns, found " + nk::h5::shape_text(gates.shape));
  l.enc.strategy = f.attr_string(g, "strategy").value_or("sequential");
  const int qubits = static_cast<int>(f.attr_number(g, "qubits").value_or(0));
  if (qubits <= 0 || qubits > 64) throw nk::input_error(f.path(), g, "attribute 'qubits' missing or outside 1..64");
  l.enc.circuit.qubits = qubits;
  for (int64_t i = 0; i < gates.shape[0]; ++i) {
    const double* row = &gates.data[i * 6];
    for (int k = 0; k < 6; ++k)
      if (!std::isfinite(row[k])) throw nk::input_error(f.path(), g + "/gates", "row " + std::to_string(i) + " is not finite");
    const int q0 = static_cast<int>(row[1]), q1 = static_cast<int>(row[2]);
    const bool cx = row[0] == 1;
    if (q0 < 0 || q0 >= qubits || (cx && (q1 < 0 || q1 >= qubits || q1 == q0)))
      throw nk::input_error(f.path(), g + "/gates", "row " + std::to_string(i) + " names a qubit outside 0.." + std::to_string(qubits - 1));
    if (cx)
      l.enc.circuit.cx(q0, q1);
    else
      l.enc.circuit.u3(q0, row[3], row[4], row[5]);
  }
  l.enc.readout = split_ints(f.attr_string(g, "readout").value_or(""));
  l.enc.postselect = split_ints(f.attr_string(g, "postselect").value_or(""));
  if (f.has(g + "/target")) {
    const auto shape = split_ints(f.attr_string(g, "shape").value_or("0,0,0"));
    auto target = f.read<float>(g + "/target");
    nk::h5::require_finite(f.path(), g + "/target", target);
    const bool image = f.attr_string(g, "kind").value_or("image") == "image";
    if (shape.size() != 3 || static_cast<int64_t>(target.data.size()) != int64_t{shape[0]} * shape[1] * shape[2])
      throw nk::input_error(f.path(), g + "/target", "does not match the item's 'shape' attribute");
    l.item = make_item(index, image, shape[0], shape[1], shape[2], std::move(target.data), true, f.path(), g + "/target");
    l.has_item = true;
  }
  if (l.enc.strategy == "parallel") {
    l.enc.left_bits = split_ints(f.attr_string(g, "left_bits").value_or(""));
    l.enc.right_bits = split_ints(f.attr_string(g, "right_bits").value_or(""));
    const int64_t reg_gates = static_cast<int64_t>(f.attr_number(g, "register_gates").value_or(-1));
    if (!l.has_item || l.enc.left_bits.size() != l.enc.right_bits.size() || reg_gates < 0 ||
        reg_gates > static_cast<int64_t>(l.enc.circuit.gates.size()))
      throw nk::input_error(f.path(), g, "parallel circuit without consistent register attributes");
    // Split the register part of the gate list by qubit range.
    int start = 0;
    for (size_t k = 0; k < l.enc.left_bits.size(); ++k) {
      const int n = l.enc.left_bits[k] + l.item.layout.phys_qubits(static_cast<int>(k)) + l.enc.right_bits[k];
      Circuit r;
      r.qubits = n;
      for (int64_t i = 0; i < reg_gates; ++i) {
        Gate gt = l.enc.circuit.gates[i];
        if (gt.q0 < start || gt.q0 >= start + n) continue;
        gt.q0 -= start;
        if (gt.kind == Gate::cx) gt.q1 -= start;
        r.gates.push_back(gt);
      }
      l.enc.registers.push_back(std::move(r));
      start += n;
    }
  }
  return l;
}

}  // namespace

void merge(const MergeOptions& o) {
  if (o.inputs.empty()) throw nk::usage_error("merge needs at least one input file");
  struct Source2 {
    nk::h5::File file;
    std::vector<int64_t> index;
  };
  std::vector<Source2> files;
  std::string strategy;
  std::map<int64_t, size_t> owner;  // item -> file
  for (const std::string& path : o.inputs) {
    nk::h5::File f = nk::h5::File::open(path);
    f.require_schema(kCircuitsSchema);
    f.require("/metrics/index");
    const std::string st = f.attr_string("/", "strategy").value_or("");
    if (files.empty()) strategy = st;
    if (st != strategy)
      throw nk::input_error(path, "", "strategy '" + st + "' differs from '" + strategy + "' of '" + o.inputs[0] + "'");
    auto idx = f.read<int64_t>("/metrics/index", 1, "N");
    for (int64_t i : idx.data) {
      if (owner.count(i))
        throw nk::input_error(path, "/metrics/index", "item " + std::to_string(i) + " is also in '" + o.inputs[owner[i]] + "'");
      owner[i] = files.size();
    }
    files.push_back({std::move(f), std::move(idx.data)});
  }
  static const char* columns[] = {"qubits", "cnots", "single_qubit_gates", "depth", "cnot_depth", "fidelity", "psnr",
                                  "ssim", "bond_dim", "success_probability", "seconds"};
  // Each file's columns, read once.
  std::vector<std::map<std::string, std::vector<double>>> per_file(files.size());
  for (size_t f = 0; f < files.size(); ++f)
    for (const char* col : columns) {
      auto a = files[f].file.read<double>(std::string("/metrics/") + col, 1, "N");
      if (a.data.size() != files[f].index.size())
        throw nk::input_error(files[f].file.path(), std::string("/metrics/") + col, "length differs from /metrics/index");
      per_file[f][col] = std::move(a.data);
    }
  std::vector<std::map<int64_t, size_t>> row_of(files.size());
  for (size_t f = 0; f < files.size(); ++f)
    for (size_t i = 0; i < files[f].index.size(); ++i) row_of[f][files[f].index[i]] = i;
  std::map<std::string, std::vector<double>> values;
  std::vector<int64_t> order;
  for (const auto& [item, which] : owner) {
    order.push_back(item);
    for (const char* col : columns) values[col].push_back(per_file[which][col][row_of[which][item]]);
  }
  nk::h5::Writer out(o.output, kCircuitsSchema, o.no_clobber);
  for (const nk::h5::AttrValue& a : files[0].file.attrs("/")) {
    if (a.name.rfind("nk_", 0) == 0) continue;
    if (a.numeric)
      out.attr("/", a.name, std::stod(a.text));
    else
      out.attr("/", a.name, a.text);
  }
  const int64_t n = static_cast<int64_t>(order.size());
  out.write("/metrics/index", order.data(), {n}, "N");
  for (const char* col : columns) {
    const std::string name = col;
    out.write("/metrics/" + name, values[name].data(), {n}, "N",
              name == "psnr" ? "dB" : name == "seconds" ? "s" : "");
  }
  out.attr("/metrics", "strategy", strategy);
  nk::h5::Handle lcpl(H5Pcreate(H5P_LINK_CREATE));
  H5Pset_create_intermediate_group(lcpl.get(), 1);
  for (const auto& [item, which] : owner) {
    const std::string g = item_group(item);
    if (H5Ocopy(files[which].file.id(), g.c_str(), out.id(), g.c_str(), H5P_DEFAULT, lcpl.get()) < 0)
      throw nk::input_error(files[which].file.path(), g, "cannot be copied (missing or damaged)");
  }
  out.commit();
  spdlog::info("merged {} items from {} files", n, files.size());
}

void simulate_verb(const SimulateOptions& o, const nk::RunEnv& env) {
  std::vector<Loaded> jobs;
  if (!o.qasm.empty()) {
    std::ifstream in(o.qasm, std::ios::binary);
    if (!in) throw nk::io_error(o.qasm, "cannot be read");
    std::stringstream ss;
    ss << in.rdbuf();
    Loaded l;
    l.enc.circuit = parse_qasm(ss.str(), o.qasm);
    l.enc.strategy = "qasm";
    if (!o.target.empty()) {
      const Source src = open_source(o.target);
      l.item = read_item(src, std::max<int64_t>(o.index, 0), true);
      l.has_item = true;
      if (l.item.qubits != l.enc.circuit.qubits)
        throw nk::input_error(o.qasm, "", "the circuit has " + std::to_string(l.enc.circuit.qubits) +
                                              " qubits, the target item needs " + std::to_string(l.item.qubits));
    }
    jobs.push_back(std::move(l));
  } else {
    const nk::h5::File f = nk::h5::File::open(o.input);
    f.require_schema(kCircuitsSchema);
    f.require("/metrics/index");
    const auto idx = f.read<int64_t>("/metrics/index", 1, "N");
    for (int64_t i : idx.data)
      if (o.index < 0 || i == o.index) jobs.push_back(load_circuit(f, i));
    if (jobs.empty()) throw nk::usage_error("--index " + std::to_string(o.index) + " is not in " + o.input);
  }
  if (!o.decode.empty() && jobs.size() != 1) throw nk::usage_error("--decode writes one image: pick an item with --index");
  struct Row {
    int64_t index;
    Counts counts;
    double fidelity, noisy, noisy_se, psnr, ssim, success;
  };
  std::vector<Row> rows;
  for (const Loaded& l : jobs) {
    Row row{l.item.index, count(l.enc.circuit), NAN, NAN, NAN, NAN, NAN, 1};
    if (l.enc.strategy == "parallel") {
      // simulated register by register
    } else if (l.enc.circuit.qubits > kMaxQubits) {
      throw nk::input_error(o.qasm.empty() ? o.input : o.qasm, "",
                            std::to_string(l.enc.circuit.qubits) + " qubits: more than the " +
                                std::to_string(kMaxQubits) + " this simulator accepts (refused before allocating)");
    }
    Prepared p;
    if (l.has_item) {
      p = run_encoding(l.enc, l.item.layout);
      row.success = p.success;
    } else {
      p.state = simulate(l.enc.circuit);
    }
    if (l.has_item) {
      const CVec target = target_state(l.item);
      if (p.state.size() != target.size())
        throw nk::input_error(o.qasm.empty() ? o.input : o.qasm, "", "the circuit's data qubits do not match the target");
      row.fidelity = fidelity(target, p.state);
      quality(l.item, p.state, row.psnr, row.ssim);
      if (o.noise > 0) {
        const NoisyFidelity nf = l.enc.strategy == "parallel"
                                     ? noisy_parallel(l.enc, l.item.layout, target, o.noise, o.trajectories, env.seed)
                                     : noisy_fidelity(l.enc.circuit, target, o.noise, o.trajectories, env.seed);
        row.noisy = nf.mean;
        row.noisy_se = nf.stderr_;
      }
      if (!o.decode.empty()) nk::save_png(o.decode, decode_image(l.item, p.state), o.no_clobber);
    } else if (!o.decode.empty() || o.noise > 0) {
      throw nk::usage_error("--decode and --noise need a target: give --target FILE (with --index K) for a QASM file");
    }
    rows.push_back(row);
  }
  std::printf("item\tqubits\tcnots\tdepth\tcnot_depth\tfidelity\tnoisy_fidelity\tnoisy_se\tpsnr_db\tssim\tsuccess\n");
  for (const Row& r : rows)
    std::printf("%lld\t%lld\t%lld\t%lld\t%lld\t%.10f\t%.6f\t%.6f\t%.3f\t%.5f\t%.6g\n", static_cast<long long>(r.index),
                static_cast<long long>(r.counts.qubits), static_cast<long long>(r.counts.cnots),
                static_cast<long long>(r.counts.depth), static_cast<long long>(r.counts.cnot_depth), r.fidelity,
                r.noisy, r.noisy_se, r.psnr, r.ssim, r.success);
  if (!o.output.empty()) {
    nk::h5::Writer out(o.output, kSimulationSchema, o.no_clobber);
    const int64_t n = static_cast<int64_t>(rows.size());
    std::vector<double> fid(n), noisy(n), se(n), psnr(n), ssim(n), succ(n);
    std::vector<int64_t> idx(n);
    for (int64_t i = 0; i < n; ++i) {
      idx[i] = rows[i].index;
      fid[i] = rows[i].fidelity;
      noisy[i] = rows[i].noisy;
      se[i] = rows[i].noisy_se;
      psnr[i] = rows[i].psnr;
      ssim[i] = rows[i].ssim;
      succ[i] = rows[i].success;
    }
    out.write("/index", idx.data(), {n}, "N");
    out.write("/fidelity", fid.data(), {n}, "N");
    out.write("/noisy_fidelity", noisy.data(), {n}, "N");
    out.write("/noisy_fidelity_stderr", se.data(), {n}, "N");
    out.write("/psnr", psnr.data(), {n}, "N", "dB");
    out.write("/ssim", ssim.data(), {n}, "N");
    out.write("/success_probability", succ.data(), {n}, "N");
    out.attr("/", "noise", o.noise);
    out.attr("/", "trajectories", o.trajectories);
    out.commit();
  }
}

}  // namespace tnqe
