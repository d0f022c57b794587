// simulate.cpp - the simulate verb: a circuits file or an OpenQASM file
// through the state-vector simulator (fidelity, PSNR, SSIM, success
// probability), with depolarising noise by trajectories and decoding to PNG.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "nk/error.hpp"
#include "nk/image.hpp"
#include "tnqe-encode/circuits_io.hpp"

namespace tnqe {

namespace {

/// What simulate reports of one circuit.
struct Row {
  int64_t index;
  Counts counts;
  double fidelity, noisy, noisy_se, psnr, ssim, success;
};

/// The circuits to simulate: one OpenQASM file (with its target item from
/// --target), or the items of a circuits file (--index K: one).
std::vector<Loaded> load_jobs(const SimulateOptions& o) {
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
    return jobs;
  }
  const nk::h5::File f = nk::h5::File::open(o.input);
  f.require_schema(kCircuitsSchema);
  f.require("/metrics/index");
  const auto idx = f.read<int64_t>("/metrics/index", 1, "N");
  for (int64_t i : idx.data)
    if (o.index < 0 || i == o.index) jobs.push_back(load_circuit(f, i));
  if (jobs.empty()) throw nk::usage_error("--index " + std::to_string(o.index) + " is not in " + o.input);
  return jobs;
}

/// One circuit through the simulator: exact state, then (with a target)
/// fidelity, PSNR/SSIM, the noisy fidelity and the decoded PNG.
Row simulate_job(const Loaded& l, const SimulateOptions& o, uint64_t seed) {
  const std::string source = o.qasm.empty() ? o.input : o.qasm;
  Row row{l.item.index, count(l.enc.circuit), NAN, NAN, NAN, NAN, NAN, 1};
  // A parallel circuit is simulated register by register: its width is not the state's.
  if (l.enc.strategy != "parallel" && l.enc.circuit.qubits > kMaxQubits) {
    throw nk::input_error(source, "",
                          std::to_string(l.enc.circuit.qubits) + " qubits: more than the " +
                              std::to_string(kMaxQubits) + " this simulator accepts (refused before allocating)");
  }
  if (!l.has_item) {
    if (!o.decode.empty() || o.noise > 0)
      throw nk::usage_error("--decode and --noise need a target: give --target FILE (with --index K) for a QASM file");
    (void)simulate(l.enc.circuit);  // runs the circuit (a malformed one fails here); nothing to compare with
    return row;
  }
  const Prepared p = run_encoding(l.enc, l.item.layout);
  row.success = p.success;
  const CVec target = target_state(l.item);
  if (p.state.size() != target.size())
    throw nk::input_error(source, "", "the circuit's data qubits do not match the target");
  row.fidelity = fidelity(target, p.state);
  if (!std::isfinite(row.fidelity) || !target.allFinite() || !p.state.allFinite()) {
    throw nk::input_error(source, "", "the simulated state or the target holds NaN or Inf (fidelity " + std::to_string(row.fidelity) +
                                          "): a gate angle or target value the simulator cannot use");
  }
  quality(l.item, p.state, row.psnr, row.ssim);
  if (o.noise > 0) {
    const NoisyFidelity nf = l.enc.strategy == "parallel"
                                 ? noisy_parallel(l.enc, l.item.layout, target, o.noise, o.trajectories, seed)
                                 : noisy_fidelity(l.enc.circuit, target, o.noise, o.trajectories, seed);
    row.noisy = nf.mean;
    row.noisy_se = nf.stderr_;
  }
  if (!o.decode.empty()) nk::save_png(o.decode, decode_image(l.item, p.state), o.no_clobber);
  return row;
}

void print_rows(const std::vector<Row>& rows) {
  std::printf("item\tqubits\tcnots\tdepth\tcnot_depth\tfidelity\tnoisy_fidelity\tnoisy_se\tpsnr_db\tssim\tsuccess\n");
  for (const Row& r : rows)
    std::printf("%lld\t%lld\t%lld\t%lld\t%lld\t%.10f\t%.6f\t%.6f\t%.3f\t%.5f\t%.6g\n", static_cast<long long>(r.index),
                static_cast<long long>(r.counts.qubits), static_cast<long long>(r.counts.cnots),
                static_cast<long long>(r.counts.depth), static_cast<long long>(r.counts.cnot_depth), r.fidelity,
                r.noisy, r.noisy_se, r.psnr, r.ssim, r.success);
}

void write_rows(const std::vector<Row>& rows, const SimulateOptions& o) {
  nk::h5::Writer out(o.output, kSimulationSchema, o.no_clobber);
  const int64_t n = static_cast<int64_t>(rows.size());
  std::vector<int64_t> idx(n);
  for (int64_t i = 0; i < n; ++i) idx[i] = rows[i].index;
  out.write("/index", idx.data(), {n}, "N");
  auto column = [&](const std::string& name, double Row::*field, const std::string& units = "") {
    std::vector<double> v(n);
    for (int64_t i = 0; i < n; ++i) v[i] = rows[i].*field;
    out.write(name, v.data(), {n}, "N", units);
  };
  // NaN without --noise (not measured); PSNR Inf for an exact state; SSIM NaN for vectors.
  for (const char* d : {"/noisy_fidelity", "/noisy_fidelity_stderr", "/psnr", "/ssim"}) out.allow_nonfinite(d);
  column("/fidelity", &Row::fidelity);
  column("/noisy_fidelity", &Row::noisy);
  column("/noisy_fidelity_stderr", &Row::noisy_se);
  column("/psnr", &Row::psnr, "dB");
  column("/ssim", &Row::ssim);
  column("/success_probability", &Row::success);
  out.attr("/", "noise", o.noise);
  out.attr("/", "trajectories", o.trajectories);
  out.commit();
}

}  // namespace

void simulate_verb(const SimulateOptions& o, const nk::RunEnv& env) {
  const std::vector<Loaded> jobs = load_jobs(o);
  if (!o.decode.empty() && jobs.size() != 1) throw nk::usage_error("--decode writes one image: pick an item with --index");
  std::vector<Row> rows;
  for (const Loaded& l : jobs) rows.push_back(simulate_job(l, o, env.seed));
  print_rows(rows);
  if (!o.output.empty()) write_rows(rows, o);
}

}  // namespace tnqe
