// io.cpp - reading one step's Q, K, V (from a qkv file or a trajectory step)
// with every check the tools need, and listing a trajectory's layers and steps.
#include <algorithm>
#include <cmath>
#include <set>

#include "dllm-sparse/dllm_io.hpp"
#include "nk/error.hpp"

namespace dllm {

namespace {

std::string dims_text(int64_t a, int64_t b, int64_t c) {
  return "[" + std::to_string(a) + "," + std::to_string(b) + "," + std::to_string(c) + "]";
}

}  // namespace

Qkv read_qkv(const nk::h5::File& file, const std::string& prefix) {
  Qkv x;
  const std::string qn = prefix + "/q", kn = prefix + "/k", vn = prefix + "/v";
  for (const std::string& n : {qn, kn, vn}) {
    if (!file.has(n)) throw nk::input_error(file.path(), n, "missing (need /q [H,L,d], /k and /v [Hkv,L,d])");
  }
  const nk::h5::DatasetInfo qi = file.info(qn), ki = file.info(kn), vi = file.info(vn);
  for (const nk::h5::DatasetInfo* i : {&qi, &ki, &vi}) {
    if (i->shape.size() != 3) {
      throw nk::input_error(file.path(), i->path, "expected rank 3 [H,L,d], found shape " + nk::h5::shape_text(i->shape));
    }
  }
  x.heads = qi.shape[0], x.length = qi.shape[1], x.dims = qi.shape[2];
  x.kv_heads = ki.shape[0];
  if (x.length == 0) throw nk::input_error(file.path(), qn, "L = 0: no positions");
  if (x.heads == 0 || x.kv_heads == 0) throw nk::input_error(file.path(), qn, "no heads");
  if (x.dims < 1 || x.dims > kMaxDims) {
    throw nk::input_error(file.path(), qn, "head dimension d = " + std::to_string(x.dims) + " is outside 1..256");
  }
  if (ki.shape[1] != x.length || ki.shape[2] != x.dims) {
    throw nk::input_error(file.path(), kn, "shape " + nk::h5::shape_text(ki.shape) + " does not fit /q " +
                                                nk::h5::shape_text(qi.shape) + ": expected [Hkv," + std::to_string(x.length) +
                                                "," + std::to_string(x.dims) + "]");
  }
  if (vi.shape != ki.shape) {
    throw nk::input_error(file.path(), vn, "shape " + nk::h5::shape_text(vi.shape) + " differs from /k " + nk::h5::shape_text(ki.shape));
  }
  const std::string map_name = prefix + "/head_map";
  x.kv_of.resize(static_cast<size_t>(x.heads));
  if (file.has(map_name)) {
    const nk::h5::Array<int64_t> map = file.read<int64_t>(map_name, 1, "H");
    if (map.size() != x.heads) {
      throw nk::input_error(file.path(), map_name, "has " + std::to_string(map.size()) + " entries for " + std::to_string(x.heads) + " query heads");
    }
    for (int64_t h = 0; h < x.heads; ++h) {
      if (map.data[h] < 0 || map.data[h] >= x.kv_heads) {
        throw nk::input_error(file.path(), map_name, "entry " + std::to_string(h) + " = " + std::to_string(map.data[h]) +
                                                          " is not a KV head (0.." + std::to_string(x.kv_heads - 1) + ")");
      }
      x.kv_of[h] = static_cast<int32_t>(map.data[h]);
    }
  } else {
    if (x.heads % x.kv_heads != 0) {
      throw nk::input_error(file.path(), kn, std::to_string(x.kv_heads) + " KV heads do not divide " + std::to_string(x.heads) +
                                                 " query heads; give /head_map");
    }
    for (int64_t h = 0; h < x.heads; ++h) x.kv_of[h] = static_cast<int32_t>(h / (x.heads / x.kv_heads));
  }
  const double bytes = 4.0 * (static_cast<double>(x.heads) + 2.0 * x.kv_heads) * x.length * x.dims;
  if (bytes * 2 > nk::h5::available_memory_bytes()) {
    throw nk::input_error(file.path(), qn, "Q, K and V of " + dims_text(x.heads, x.length, x.dims) + " need more memory than is available");
  }
  auto load = [&](const std::string& n, std::vector<float>& into) {
    nk::h5::Array<float> a = file.read<float>(n);
    nk::h5::require_finite(file.path(), n, a);
    into = std::move(a.data);
  };
  load(qn, x.q), load(kn, x.k), load(vn, x.v);
  return x;
}

std::vector<StepRef> trajectory_steps(const nk::h5::File& file) {
  std::set<std::pair<std::string, std::string>> found;  // (layer prefix, step name)
  for (const std::string& ds : file.datasets()) {
    const size_t at = ds.find("/steps/");
    if (at == std::string::npos) continue;
    const std::string layer = ds.substr(0, at);
    if (!layer.empty() && layer.rfind("/layers/", 0) != 0) continue;
    const std::string rest = ds.substr(at + 7);
    const size_t slash = rest.find('/');
    if (slash == std::string::npos) continue;
    found.insert({layer, rest.substr(0, slash)});
  }
  std::vector<StepRef> out;
  for (const auto& [layer, step] : found) out.push_back({layer, step, layer + "/steps/" + step});
  if (out.empty()) {
    throw nk::input_error(file.path(), "/steps", "no denoising steps (groups /steps/NNN or /layers/LL/steps/NNN with q, k, v)");
  }
  // Every step of a layer has the shapes of its first (H, L, d of q, k and v):
  // checked from the metadata, before any verb reads a step.
  size_t first = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i].layer != out[first].layer) first = i;
    for (const char* part : {"/q", "/k", "/v"}) {
      const std::string name = out[i].group + part;
      if (!file.has(name)) throw nk::input_error(file.path(), name, "missing (a step needs q, k and v)");
      if (i == first) continue;
      const std::vector<int64_t> shape = file.info(name).shape, want = file.info(out[first].group + part).shape;
      if (shape != want) {
        throw nk::input_error(file.path(), name, "shape " + nk::h5::shape_text(shape) + " differs from " +
                                                     nk::h5::shape_text(want) + " in the first step of its layer (" +
                                                     out[first].group + part + ")");
      }
    }
  }
  return out;
}

}  // namespace dllm
