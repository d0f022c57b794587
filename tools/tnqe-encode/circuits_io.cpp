// circuits_io.cpp - the circuits file: writing encode's and baseline's
// records, reading a circuit back (simulate), and the small formats they share.
#include "tnqe-encode/circuits_io.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "nk/atomic_file.hpp"
#include "nk/error.hpp"

namespace tnqe {

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

std::vector<int> split_ints(const std::string& s, const std::string& file, const std::string& where) {
  std::vector<int> out;
  std::stringstream ss(s);
  for (std::string t; std::getline(ss, t, ',');) {
    if (t.empty()) continue;
    size_t used = 0;
    int v = 0;
    try {
      v = std::stoi(t, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != t.size()) throw nk::input_error(file, where, "expected comma-separated integers, found '" + s + "'");
    out.push_back(v);
  }
  return out;
}

namespace {

/// The per-item table /metrics: one column per figure, rows in item order.
void write_metrics(nk::h5::Writer& out, const std::string& strategy, const std::vector<Record>& recs) {
  const int64_t n = static_cast<int64_t>(recs.size());
  out.allow_nonfinite("/metrics/psnr");  // Inf: an exact reproduction
  out.allow_nonfinite("/metrics/ssim");  // NaN: vectors have none
  out.allow_nonfinite("/metrics/fidelity");  // NaN: not simulated (--no-verify, above --verify-qubits)
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
}

/// One item's group: gates, attributes, target, QTT cores and block unitaries.
void write_item(nk::h5::Writer& out, const std::string& strategy, const Record& r) {
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

}  // namespace

void write_records(const std::string& path, bool no_clobber, const std::string& strategy,
                   const std::vector<Record>& recs, const std::string& input, double tol, int64_t bond,
                   const std::string& qasm_dir, bool trained, int layers) {
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
  write_metrics(out, strategy, recs);
  for (const Record& r : recs) write_item(out, strategy, r);
  out.commit();
}

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
    if ((row[0] != 0 && row[0] != 1) || row[1] != std::floor(row[1]) || row[2] != std::floor(row[2]) ||
        std::abs(row[1]) > 64 || std::abs(row[2]) > 64) {
      throw nk::input_error(f.path(), g + "/gates", "row " + std::to_string(i) + ": kind must be 0 (u3) or 1 (cx) and the qubits integers, found " +
                                                        std::to_string(row[0]) + ", " + std::to_string(row[1]) + ", " + std::to_string(row[2]));
    }
    const int q0 = static_cast<int>(row[1]), q1 = static_cast<int>(row[2]);
    const bool cx = row[0] == 1;
    if (q0 < 0 || q0 >= qubits || (cx && (q1 < 0 || q1 >= qubits || q1 == q0)))
      throw nk::input_error(f.path(), g + "/gates", "row " + std::to_string(i) + " names a qubit outside 0.." + std::to_string(qubits - 1));
    if (cx)
      l.enc.circuit.cx(q0, q1);
    else
      l.enc.circuit.u3(q0, row[3], row[4], row[5]);
  }
  l.enc.readout = split_ints(f.attr_string(g, "readout").value_or(""), f.path(), g + " attribute readout");
  l.enc.postselect = split_ints(f.attr_string(g, "postselect").value_or(""), f.path(), g + " attribute postselect");
  if (f.has(g + "/target")) {
    const auto shape = split_ints(f.attr_string(g, "shape").value_or("0,0,0"), f.path(), g + " attribute shape");
    auto target = f.read<float>(g + "/target");
    nk::h5::require_finite(f.path(), g + "/target", target);
    const bool image = f.attr_string(g, "kind").value_or("image") == "image";
    if (shape.size() != 3 || static_cast<int64_t>(target.data.size()) != int64_t{shape[0]} * shape[1] * shape[2])
      throw nk::input_error(f.path(), g + "/target", "does not match the item's 'shape' attribute");
    l.item = make_item(index, image, shape[0], shape[1], shape[2], std::move(target.data), true, f.path(), g + "/target");
    l.has_item = true;
  }
  if (l.enc.strategy == "parallel") {
    l.enc.left_bits = split_ints(f.attr_string(g, "left_bits").value_or(""), f.path(), g + " attribute left_bits");
    l.enc.right_bits = split_ints(f.attr_string(g, "right_bits").value_or(""), f.path(), g + " attribute right_bits");
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

}  // namespace tnqe
