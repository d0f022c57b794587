// engine_cuda.cpp - a Plan run on the GPU by the CUDA module
// (kernels/cuda/packed_conv.cu): the plan's windows are handed over as
// integer tables; cuFFT and the module's kernels do the rest.
#include <type_traits>

#include "rubiconv/engine.hpp"
#include "nk/kernels/cuda_call.hpp"

namespace rubiconv {

namespace {

void append_window(std::vector<long>& table, const Item& item) {
  table.insert(table.end(), {static_cast<long>(item.row), static_cast<long>(item.doc_begin),
                             static_cast<long>(item.doc_end), static_cast<long>(item.window_begin),
                             static_cast<long>(item.out_begin), static_cast<long>(item.out_end)});
}

}  // namespace

template <class Real>
GpuTiming apply_cuda(const Problem<Real>& p, const Plan& plan, Real* y, int repeats) {
  std::vector<std::vector<long>> tables;
  std::vector<nk_conv_bucket> buckets;
  for (const Bucket& bucket : plan.buckets) {
    std::vector<long> table;
    for (const Item& item : bucket.items) append_window(table, item);
    tables.push_back(std::move(table));
  }
  for (size_t b = 0; b < plan.buckets.size(); ++b) {
    const Bucket& bucket = plan.buckets[b];
    buckets.push_back({static_cast<long>(bucket.fft_size), static_cast<long>(bucket.taps),
                       static_cast<long>(bucket.items.size()), tables[b].data()});
  }
  std::vector<long> direct;
  for (const Item& item : plan.direct) append_window(direct, item);
  const nk_cuda_conv& api = nk::kernels::cuda_family<nk_cuda_conv>("rubiconv apply");
  nk_cuda_timing t{};
  auto entry = [&] {
    if constexpr (std::is_same_v<Real, float>) return api.packed_conv_f32;
    else return api.packed_conv_f64;
  }();
  nk::kernels::cuda_call("rubiconv apply", entry, p.x, p.k, p.bias, y, static_cast<long>(p.batch),
                         static_cast<long>(p.length), static_cast<long>(p.channels),
                         static_cast<long>(p.filter_length), buckets.data(), static_cast<long>(buckets.size()),
                         direct.data(), static_cast<long>(plan.direct.size()), repeats, &t);
  return GpuTiming::from(t);
}

template <class Real>
GpuTiming grad_cuda(const Problem<Real>& p, const Plan& plan, const Real* dy, Real* dx, Real* dk, Real* dbias,
                    int repeats) {
  std::vector<std::vector<long>> causal_tables, anti_tables;
  for (const Bucket& bucket : plan.buckets) {
    std::vector<long> causal, anti;
    for (const Item& item : bucket.items) append_window(causal, item);
    for (const Item& item : bucket.anticausal) append_window(anti, item);
    causal_tables.push_back(std::move(causal));
    anti_tables.push_back(std::move(anti));
  }
  std::vector<nk_conv_bucket> causal, anti;
  for (size_t b = 0; b < plan.buckets.size(); ++b) {
    const Bucket& bucket = plan.buckets[b];
    causal.push_back({static_cast<long>(bucket.fft_size), static_cast<long>(bucket.taps),
                      static_cast<long>(bucket.items.size()), causal_tables[b].data()});
    anti.push_back({static_cast<long>(bucket.fft_size), static_cast<long>(bucket.taps),
                    static_cast<long>(bucket.anticausal.size()), anti_tables[b].data()});
  }
  std::vector<long> direct;
  for (const Item& item : plan.direct) append_window(direct, item);
  const nk_cuda_conv& api = nk::kernels::cuda_family<nk_cuda_conv>("rubiconv grad");
  nk_cuda_timing t{};
  auto entry = [&] {
    if constexpr (std::is_same_v<Real, float>) return api.packed_conv_grad_f32;
    else return api.packed_conv_grad_f64;
  }();
  nk::kernels::cuda_call("rubiconv grad", entry, p.x, p.k, p.bias, dy, dx, dk, dbias, static_cast<long>(p.batch),
                         static_cast<long>(p.length), static_cast<long>(p.channels),
                         static_cast<long>(p.filter_length), causal.data(), anti.data(),
                         static_cast<long>(causal.size()), direct.data(), static_cast<long>(plan.direct.size()),
                         repeats, &t);
  return GpuTiming::from(t);
}

template GpuTiming grad_cuda<float>(const Problem<float>&, const Plan&, const float*, float*, float*, float*, int);
template GpuTiming grad_cuda<double>(const Problem<double>&, const Plan&, const double*, double*, double*, double*, int);
template GpuTiming apply_cuda<float>(const Problem<float>&, const Plan&, float*, int);
template GpuTiming apply_cuda<double>(const Problem<double>&, const Plan&, double*, int);

}  // namespace rubiconv
