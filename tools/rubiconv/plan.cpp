// plan.cpp - bucketing documents by FFT size, and the baselines' plans.
#include "rubiconv/plan.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <iomanip>
#include <sstream>

#include "nk/error.hpp"
#include "nk/kernels/fft.hpp"

namespace rubiconv {

Method parse_method(const std::string& name) {
  if (name == "rubiconv") return Method::rubiconv;
  if (name == "perdoc") return Method::perdoc;
  if (name == "padded") return Method::padded;
  if (name == "fullfft") return Method::fullfft;
  if (name == "direct") return Method::direct;
  throw nk::usage_error("--method: unknown method '" + name + "'");
}

std::string method_name(Method method) {
  switch (method) {
    case Method::rubiconv: return "rubiconv";
    case Method::perdoc: return "perdoc";
    case Method::padded: return "padded";
    case Method::fullfft: return "fullfft";
    case Method::direct: return "direct";
  }
  return "?";
}

int64_t bucket_taps(int64_t fft_size, int64_t filter_length) {
  return std::min(filter_length, (fft_size + 1) / 2);
}

// Circular convolution of size n is exact for a document of 'length' when all
// taps it needs are in the spectrum (min(length, Lk) <= taps) and no tap wraps
// an input onto an output (taps - 1 <= n - length).
bool fits_whole(int64_t length, int64_t fft_size, int64_t filter_length) {
  const int64_t taps = bucket_taps(fft_size, filter_length);
  return std::min(length, filter_length) <= taps && length <= fft_size - taps + 1;
}

int64_t whole_bucket_size(int64_t length, int64_t filter_length) {
  for (int64_t power = 2;; power *= 2) {
    for (int64_t size : {power, 3 * power / 2}) {
      if (size >= 2 && fits_whole(length, size, filter_length)) return size;
    }
  }
}

double Plan::fft_cost() const {
  double cost = 0;
  for (const Bucket& b : buckets) {
    const double per_item = static_cast<double>(b.fft_size) * std::log2(static_cast<double>(std::max<int64_t>(b.fft_size, 2)));
    cost += per_item * static_cast<double>(b.items.size());
  }
  return cost;
}

std::string Plan::summary() const {
  std::ostringstream text;
  int64_t items = 0;
  for (const Bucket& b : buckets) items += static_cast<int64_t>(b.items.size());
  text << method_name(method) << ": " << buckets.size() << " FFT size(s), " << items << " FFT item(s), "
       << direct.size() << " direct document(s), FFT work " << std::setprecision(3) << fft_cost() / 1e6
       << "M N log2 N per channel";
  return text.str();
}

namespace {

Item whole_item(int64_t row, const Document& d) { return {row, d.begin, d.end, d.begin, d.begin, d.end}; }

/// Overlap-save tiles of a long document: each yields fft_size - taps + 1 outputs.
void add_tiles(Bucket& bucket, int64_t row, const Document& d) {
  const int64_t hop = bucket.fft_size - bucket.taps + 1;
  for (int64_t start = d.begin; start < d.end; start += hop) {
    const int64_t stop = std::min(start + hop, d.end);
    bucket.items.push_back({row, d.begin, d.end, start - (bucket.taps - 1), start, stop});
    bucket.anticausal.push_back({row, d.begin, d.end, start, start, stop});
  }
}

Plan bucketed(const Packing& packing, int64_t filter_length, const PlanOptions& options) {
  Plan plan;
  plan.method = Method::rubiconv;
  std::map<int64_t, Bucket> by_size;
  const int64_t tile = options.tile;
  const bool tiles_pay = filter_length <= tile / 4;
  for (int64_t row = 0; row < packing.batch; ++row) {
    for (const Document& d : packing.rows[static_cast<size_t>(row)]) {
      if (d.length() <= options.direct_max) {
        plan.direct.push_back(whole_item(row, d));
        continue;
      }
      if (tiles_pay && d.length() > tile) {
        Bucket& bucket = by_size[-tile];  // tiled buckets keyed apart from whole-document ones
        bucket.fft_size = tile;
        bucket.taps = filter_length;
        bucket.tiled = true;
        add_tiles(bucket, row, d);
        continue;
      }
      const int64_t size = whole_bucket_size(d.length(), filter_length);
      Bucket& bucket = by_size[size];
      bucket.fft_size = size;
      bucket.taps = bucket_taps(size, filter_length);
      bucket.items.push_back(whole_item(row, d));
    }
  }
  for (auto& [key, bucket] : by_size) plan.buckets.push_back(std::move(bucket));
  // Largest first: the big transforms start while small ones fill the tail.
  std::sort(plan.buckets.begin(), plan.buckets.end(),
            [](const Bucket& a, const Bucket& b) { return a.fft_size > b.fft_size; });
  plan.task_bytes = options.task_bytes;
  return plan;
}

}  // namespace

Plan make_plan(Method method, const Packing& packing, int64_t filter_length, const PlanOptions& options) {
  if (method == Method::rubiconv) return bucketed(packing, filter_length, options);
  Plan plan;
  plan.method = method;
  plan.task_bytes = options.task_bytes;
  if (method == Method::direct) {
    for (int64_t row = 0; row < packing.batch; ++row)
      for (const Document& d : packing.rows[static_cast<size_t>(row)]) plan.direct.push_back(whole_item(row, d));
    return plan;
  }
  if (method == Method::fullfft) {
    // One document per row: the boundary-blind speed floor.
    Bucket bucket;
    bucket.fft_size = whole_bucket_size(packing.length, filter_length);
    bucket.taps = bucket_taps(bucket.fft_size, filter_length);
    for (int64_t row = 0; row < packing.batch; ++row) bucket.items.push_back(whole_item(row, {0, packing.length}));
    plan.buckets.push_back(std::move(bucket));
    return plan;
  }
  if (method == Method::padded) {
    // Every document padded to the longest: one FFT size, batched.
    Bucket bucket;
    bucket.fft_size = whole_bucket_size(packing.longest(), filter_length);
    bucket.taps = bucket_taps(bucket.fft_size, filter_length);
    for (int64_t row = 0; row < packing.batch; ++row)
      for (const Document& d : packing.rows[static_cast<size_t>(row)]) bucket.items.push_back(whole_item(row, d));
    plan.buckets.push_back(std::move(bucket));
    return plan;
  }
  // perdoc: each document its own 7-smooth FFT size and its own transform call.
  std::map<int64_t, Bucket> by_size;
  for (int64_t row = 0; row < packing.batch; ++row) {
    for (const Document& d : packing.rows[static_cast<size_t>(row)]) {
      int64_t size = nk::fft::good_size(d.length() + std::min(d.length(), filter_length) - 1);
      while (!fits_whole(d.length(), size, filter_length)) size = nk::fft::good_size(size + 1);
      Bucket& bucket = by_size[size];
      bucket.fft_size = size;
      bucket.taps = bucket_taps(size, filter_length);
      bucket.items.push_back(whole_item(row, d));
    }
  }
  for (auto& [size, bucket] : by_size) plan.buckets.push_back(std::move(bucket));
  return plan;
}

}  // namespace rubiconv
