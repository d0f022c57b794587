// run.cpp - rubiconv apply / grad: read and check the input file, run the
// method, write the output file.

#include <algorithm>
#include <cmath>
#include <string>

#include "rubiconv/engine.hpp"
#include "nk/context.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk/shard.hpp"
#include "nk/timer.hpp"
#include "rubiconv/rubiconv.hpp"

namespace rubiconv {

namespace {

/// Accepts files without nk_schema (the user's own data), refuses other tools' files.
void check_schema(const nk::h5::File& file) {
  if (file.attr_string("/", "nk_schema")) file.require_schema("rubiconv.input/");
}

template <class Real>
struct Inputs {
  int64_t batch = 0, length = 0, channels = 0, filter_length = 0, first_row = 0;
  nk::h5::Array<Real> x, k, bias, dy;
  Packing packing;
  Problem<Real> problem() const {
    Problem<Real> p;
    p.packing = &packing;
    p.batch = batch;
    p.length = length;
    p.channels = channels;
    p.filter_length = filter_length;
    p.x = x.data.data();
    p.k = k.data.data();
    p.bias = bias.data.empty() ? nullptr : bias.data.data();
    return p;
  }
};

template <class Real>
Inputs<Real> load(const nk::h5::File& file, const RunOptions& o, const nk::Shard& shard, bool gradients) {
  const std::string& name = file.path();
  const nk::h5::DatasetInfo xi = file.info("/x");
  if (xi.shape.size() != 3) {
    throw nk::input_error(name, "/x", "expected rank 3 [B,L,H], found " + nk::h5::shape_text(xi.shape));
  }
  if (!nk::h5::is_float(xi.dtype)) throw nk::input_error(name, "/x", "expected float32 or float64, found " + xi.type_text);
  Inputs<Real> in;
  const int64_t batch = xi.shape[0];
  in.length = xi.shape[1];
  in.channels = xi.shape[2];
  if (batch < 1 || in.length < 1 || in.channels < 1) {
    throw nk::input_error(name, "/x", "is empty: shape " + nk::h5::shape_text(xi.shape));
  }
  const auto [first, last] = nk::shard_range(shard, batch);
  in.first_row = first;
  in.batch = last - first;

  const nk::h5::DatasetInfo ki = file.info("/k");
  if (ki.shape.size() != 2) throw nk::input_error(name, "/k", "expected rank 2 [H,Lk], found " + nk::h5::shape_text(ki.shape));
  if (ki.shape[0] != in.channels) {
    throw nk::input_error(name, "/k", "has H = " + std::to_string(ki.shape[0]) + " filters but /x has H = " +
                                          std::to_string(in.channels) + " channels");
  }
  in.filter_length = ki.shape[1];
  if (in.filter_length < 1 || in.filter_length > in.length) {
    throw nk::input_error(name, "/k", "filter length Lk = " + std::to_string(in.filter_length) + " must be in 1..L = " +
                                          std::to_string(in.length));
  }
  // Refuse absurd sizes before allocating: inputs, outputs, and a filter
  // spectrum of up to three times L (the largest FFT size of fullfft).
  const double element = sizeof(Real);
  const double arrays = gradients ? 4.0 + 3.0 : 2.0 + 3.0;
  const double needed = element * (static_cast<double>(in.batch) * in.length * in.channels * arrays +
                                   static_cast<double>(in.channels) * in.filter_length * 3.0);
  if (needed > nk::h5::available_memory_bytes()) {
    throw nk::input_error(name, "/x", nk::h5::shape_text(xi.shape) + " needs " + std::to_string(static_cast<int64_t>(needed / (1 << 20))) +
                                          " MiB, more than the memory available");
  }
  if (!file.has("/cu_seqlens")) throw nk::input_error(name, "/cu_seqlens", "missing (no such dataset in the file)");
  const nk::h5::DatasetInfo ci = file.info("/cu_seqlens");
  if (!nk::h5::is_integer(ci.dtype)) {
    throw nk::input_error(name, "/cu_seqlens", "expected integers, found " + ci.type_text);
  }
  if (ci.shape.empty() || ci.elements() > batch * (in.length + 1) + 1) {
    throw nk::input_error(name, "/cu_seqlens", "shape " + nk::h5::shape_text(ci.shape) + " does not fit L = " + std::to_string(in.length));
  }
  const nk::h5::Array<int64_t> cu = file.read<int64_t>("/cu_seqlens");
  Packing all = packing_from_cu_seqlens(cu.data, cu.shape, batch, in.length, name);
  in.packing = all;
  in.packing.batch = in.batch;
  in.packing.rows.assign(all.rows.begin() + first, all.rows.begin() + last);

  in.x = file.read_rows<Real>("/x", first, last);
  nk::h5::require_finite(name, "/x", in.x, first);
  in.k = file.read<Real>("/k");
  nk::h5::require_finite(name, "/k", in.k);
  if (o.skip) {
    in.bias = file.read<Real>("/bias", 1, "H");
    if (in.bias.shape[0] != in.channels) {
      throw nk::input_error(name, "/bias", "has " + std::to_string(in.bias.shape[0]) + " entries, expected H = " +
                                               std::to_string(in.channels));
    }
    nk::h5::require_finite(name, "/bias", in.bias);
  }
  if (gradients) {
    const nk::h5::DatasetInfo di = file.info("/dy");
    if (di.shape != xi.shape) {
      throw nk::input_error(name, "/dy", "shape " + nk::h5::shape_text(di.shape) + " differs from /x " + nk::h5::shape_text(xi.shape));
    }
    in.dy = file.read_rows<Real>("/dy", first, last);
    nk::h5::require_finite(name, "/dy", in.dy, first);
  }
  return in;
}

void describe(nk::h5::Writer& out, const Plan& plan, double seconds, bool cuda, const GpuTiming& gpu) {
  out.attr("/", "method", method_name(plan.method));
  out.attr("/", "plan", plan.summary());
  out.attr("/", "compute_seconds", seconds);
  out.attr("/", "device", cuda ? "cuda" : "cpu");
  if (cuda) nk::kernels::write_timing(out, gpu);
}

/// Finite inputs whose convolution overflows the precision (|x| |k| L, or
/// |dy| |k| L, beyond its range) are the input's fault: exit 3 naming the
/// input, before the writer's check of the results (exit 1).
template <class Real>
void require_representable(const nk::h5::File& file, const Inputs<Real>& in, const std::vector<Real>& result,
                           const std::string& name) {
  if (std::all_of(result.begin(), result.end(), [](Real v) { return std::isfinite(v); })) return;
  auto peak = [](const nk::h5::Array<Real>& a) {
    Real m = 0;
    for (Real v : a.data) m = std::max(m, std::abs(v));
    return static_cast<double>(m);
  };
  throw nk::input_error(file.path(), in.dy.data.empty() ? "/x" : "/x, /dy",
                        "the convolution overflows " + std::string(sizeof(Real) == 4 ? "float32" : "float64") + " in " +
                            name + " (max |x| " + std::to_string(peak(in.x)) + ", max |k| " + std::to_string(peak(in.k)) +
                            (in.dy.data.empty() ? "" : ", max |dy| " + std::to_string(peak(in.dy))) +
                            "): scale the inputs down");
}

template <class Real>
void apply_typed(const nk::h5::File& file, const RunOptions& o, const nk::RunEnv& env) {
  const Inputs<Real> in = load<Real>(file, o, env.shard, false);
  nk::h5::Writer out(o.output, kOutputSchema, o.no_clobber);
  std::vector<Real> y(static_cast<size_t>(in.batch * in.length * in.channels));
  const nk::Stopwatch watch;
  const Plan plan = make_plan(o.method, in.packing, in.filter_length, o.plan);
  const double plan_seconds = watch.seconds();
  double seconds = 0;
  GpuTiming gpu;
  if (env.cuda()) {
    gpu = apply_cuda(in.problem(), plan, y.data(), o.repeats);
    seconds = plan_seconds + gpu.compute;
  } else {
    seconds = plan_seconds + nk::best_seconds(o.repeats, [&] { apply(in.problem(), plan, y.data()); });
  }
  require_representable(file, in, y, "/y");
  out.write("/y", y.data(), {in.batch, in.length, in.channels}, "B,L,H");
  describe(out, plan, seconds, env.cuda(), gpu);
  out.commit();
  if (env.cuda()) {
    spdlog::info("{}; {:.4f} s on the GPU (+ {:.3f} s copies, {:.3f} s cuFFT set-up)", plan.summary(), seconds,
                 gpu.upload + gpu.download, gpu.setup);
  } else {
    spdlog::info("{}; {:.3f} s", plan.summary(), seconds);
  }
}

template <class Real>
void grad_typed(const nk::h5::File& file, const RunOptions& o, const nk::RunEnv& env) {
  const Inputs<Real> in = load<Real>(file, o, env.shard, true);
  nk::h5::Writer out(o.output, kGradSchema, o.no_clobber);
  std::vector<Real> dx(in.x.data.size()), dk(in.k.data.size()), dbias(static_cast<size_t>(in.channels));
  const nk::Stopwatch watch;
  const Plan plan = make_plan(o.method, in.packing, in.filter_length, o.plan);
  const double plan_seconds = watch.seconds();
  double seconds = 0;
  GpuTiming gpu;
  if (env.cuda()) {
    gpu = grad_cuda(in.problem(), plan, in.dy.data.data(), dx.data(), dk.data(), o.skip ? dbias.data() : nullptr,
                    o.repeats);
    seconds = plan_seconds + gpu.compute;
  } else {
    seconds = plan_seconds + nk::best_seconds(o.repeats, [&] {
      grad(in.problem(), plan, in.dy.data.data(), dx.data(), dk.data(), o.skip ? dbias.data() : nullptr);
    });
  }
  require_representable(file, in, dx, "/dx");
  require_representable(file, in, dk, "/dk");
  out.write("/dx", dx.data(), {in.batch, in.length, in.channels}, "B,L,H");
  out.write("/dk", dk.data(), {in.channels, in.filter_length}, "H,Lk");
  out.attr("/dk", "nk_merge", "sum");
  if (o.skip) {
    out.write("/dbias", dbias.data(), {in.channels}, "H");
    out.attr("/dbias", "nk_merge", "sum");
  }
  describe(out, plan, seconds, env.cuda(), gpu);
  out.commit();
  spdlog::info("{}; gradients in {:.4f} s{}", plan.summary(), seconds, env.cuda() ? " on the GPU" : "");
}

void warn_if_wrong(const RunOptions& o) {
  if (o.method == Method::fullfft) {
    spdlog::warn("--method fullfft ignores document boundaries: its output is WRONG wherever a document follows "
                 "another (it is the speed floor for benchmarks)");
  }
}

}  // namespace

void run_apply(const RunOptions& o, const nk::RunEnv& env) {
  warn_if_wrong(o);
  const nk::h5::File file = nk::h5::File::open(o.input);
  check_schema(file);
  if (file.info("/x").dtype == nk::h5::DType::f64) apply_typed<double>(file, o, env);
  else apply_typed<float>(file, o, env);
}

void run_grad(const RunOptions& o, const nk::RunEnv& env) {
  warn_if_wrong(o);
  const nk::h5::File file = nk::h5::File::open(o.input);
  check_schema(file);
  if (file.info("/x").dtype == nk::h5::DType::f64) grad_typed<double>(file, o, env);
  else grad_typed<float>(file, o, env);
}

}  // namespace rubiconv
