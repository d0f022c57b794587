// encode.cpp - the encode verb (TNQE: QTT, unitary-aware cores, optional
// training, compilation, verification) and its baseline, exact amplitude
// encoding; both run items in parallel and write a circuits file.
#include <omp.h>

#include <cmath>
#include <exception>

#include "nk/error.hpp"
#include "nk/log.hpp"
#include "nk/progress.hpp"
#include "nk/timer.hpp"
#include "tnqe-encode/circuits_io.hpp"
#include "tnqe-encode/synth.hpp"
#include "tnqe-encode/train.hpp"

namespace tnqe {
namespace {

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

}  // namespace tnqe
