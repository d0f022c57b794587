// trace.cpp - opening and checking a capture file (trace.hpp).
#include "sparda-forecast/trace.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "nk/error.hpp"

namespace sparda {

std::string Trace::name(int64_t layer, const std::string& what) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "/capture/layer_%02lld/", static_cast<long long>(layer));
  return buf + what;
}

Trace Trace::open(const std::string& path) {
  Trace t(nk::h5::File::open(path));
  const nk::h5::File& f = t.file;
  if (auto schema = f.attr_string("/", "nk_schema");
      schema && schema->rfind("nk-lm.capture/", 0) != 0 && schema->rfind("sparda-forecast.trace/", 0) != 0)
    throw nk::input_error(path, "",
                          "nk_schema is '" + *schema + "'; expected an nk-lm capture or a sparda-forecast trace");
  while (f.has(name(t.layers, "q"))) ++t.layers;
  if (t.layers == 0)
    throw nk::input_error(path, name(0, "q"),
                          "missing (a trace holds /capture/layer_LL/{attn_in,q,k,v} for layers 0..L-1)");
  const auto theta = f.attr_number("/", "rope_theta");
  if (!theta)
    throw nk::input_error(path, "/", "root attribute rope_theta is missing (the RoPE base of the captured model)");
  if (!std::isfinite(*theta) || *theta <= 1.0)
    throw nk::input_error(path, "/", "rope_theta = " + std::to_string(*theta) + " is not a RoPE base above 1");
  t.rope_theta = *theta;

  const nk::h5::DatasetInfo q0 = f.info(name(0, "q"));
  if (q0.shape.size() != 3 && q0.shape.size() != 4)
    throw nk::input_error(path, q0.path, "expected [Hq,T,d] or [B,Hq,T,d], found " + nk::h5::shape_text(q0.shape));
  const size_t o = q0.shape.size() == 4 ? 1 : 0;
  const int64_t batch = o ? q0.shape[0] : 1, flat = q0.shape[o + 1];
  t.heads = q0.shape[o], t.head_dim = q0.shape[o + 2];
  if (batch < 1 || t.heads < 1 || flat < 1)
    throw nk::input_error(path, q0.path, "is empty: " + nk::h5::shape_text(q0.shape));
  t.layout = o ? Layout::batched : Layout::single;
  for (int64_t b = 0; b <= batch; ++b) t.offsets.push_back(b * flat);
  if (!o && f.has("/capture/offsets")) {
    std::vector<int64_t> offsets = f.read<int64_t>("/capture/offsets", 1, "R+1").data;
    nk::h5::require_offsets(path, "/capture/offsets", offsets, flat);
    if (offsets.size() > 2) t.layout = Layout::packed, t.offsets = std::move(offsets);
  }
  if (t.head_dim < 2 || t.head_dim % 2 || t.head_dim > 1024)
    throw nk::input_error(
        path, q0.path,
        "head dimension d = " + std::to_string(t.head_dim) + " is not even and in 2..1024 (RoPE turns pairs)");
  const nk::h5::DatasetInfo k0 = f.info(name(0, "k"));
  if (k0.shape.size() != q0.shape.size())
    throw nk::input_error(path, k0.path,
                          "shape " + nk::h5::shape_text(k0.shape) + " does not fit /q " + nk::h5::shape_text(q0.shape));
  t.kv_heads = k0.shape[o];
  if (t.kv_heads < 1 || t.heads % t.kv_heads != 0)
    throw nk::input_error(path, k0.path,
                          std::to_string(t.kv_heads) + " KV heads do not divide the " + std::to_string(t.heads) +
                              " query heads (layer 0)");
  const nk::h5::DatasetInfo a0 = f.info(name(0, "attn_in"));
  if (a0.shape.size() != o + 2)
    throw nk::input_error(path, a0.path, "expected [T,D] or [B,T,D], found " + nk::h5::shape_text(a0.shape));
  t.d_model = a0.shape[o + 1];
  if (t.d_model < 1 || t.d_model > (1 << 16))
    throw nk::input_error(path, a0.path, "d_model = " + std::to_string(t.d_model) + " is outside 1..65536");

  std::vector<int64_t> lead;
  if (o) lead.push_back(batch);
  const auto with = [&](std::vector<int64_t> rest) {
    std::vector<int64_t> s = lead;
    s.insert(s.end(), rest.begin(), rest.end());
    return s;
  };
  double bytes = 0;
  for (int64_t l = 0; l < t.layers; ++l) {
    const std::string layer = "layer " + std::to_string(l);
    const std::pair<const char*, std::vector<int64_t>> want[] = {{"attn_in", with({flat, t.d_model})},
                                                                 {"q", with({t.heads, flat, t.head_dim})},
                                                                 {"k", with({t.kv_heads, flat, t.head_dim})},
                                                                 {"v", with({t.kv_heads, flat, t.head_dim})}};
    for (const auto& [what, shape] : want) {
      const std::string n = name(l, what);
      if (!f.has(n)) {
        if (std::string(what) == "v") continue;  // only decoding reads values
        throw nk::input_error(path, n, std::string("missing (") + layer + " needs attn_in, q and k)");
      }
      const nk::h5::DatasetInfo info = f.info(n);
      if (info.shape != shape)
        throw nk::input_error(
            path, n,
            layer + " has shape " + nk::h5::shape_text(info.shape) + "; layer 0 makes it " + nk::h5::shape_text(shape));
      if (!nk::h5::is_float(info.dtype))
        throw nk::input_error(path, n, "is " + info.type_text + ", not floating point");
    }
    for (const auto& [what, heads] : {std::pair{"wq", t.heads}, std::pair{"wk", t.kv_heads}}) {
      const std::string n = name(l, what);
      if (!f.has(n)) continue;
      const std::vector<int64_t> shape{t.d_model, heads * t.head_dim};
      const nk::h5::DatasetInfo info = f.info(n);
      if (info.shape != shape)
        throw nk::input_error(path, n,
                              layer + " has shape " + nk::h5::shape_text(info.shape) +
                                  "; expected [D, heads*d] = " + nk::h5::shape_text(shape));
    }
    bytes = std::max(bytes, 4.0 * static_cast<double>(t.total()) *
                                (static_cast<double>(t.d_model) +
                                 static_cast<double>(t.heads + 2 * t.kv_heads) * static_cast<double>(t.head_dim)));
  }
  // A verb holds about two layers at once.
  if (2.5 * bytes > nk::h5::available_memory_bytes())
    throw nk::input_error(path, name(0, "q"),
                          "two layers of " + nk::h5::shape_text(q0.shape) + " need more memory than is available");
  return t;
}

std::vector<float> Trace::read(int64_t layer, const std::string& what) const {
  const std::string n = name(layer, what);
  nk::h5::Array<float> a = file.read<float>(n);
  nk::h5::require_finite(file.path(), n, a);
  if (layout != Layout::packed || (what != "q" && what != "k" && what != "v"))
    return std::move(a.data);  // already sequence-major
  // [H, total, d] -> [sequence][H][T_s][d]
  const int64_t H = a.shape[0], d = a.shape[2], N = total();
  std::vector<float> out(a.data.size());
  for (int64_t s = 0; s < sequences(); ++s)
    for (int64_t h = 0; h < H; ++h)
      std::copy_n(a.data.begin() + (h * N + offsets[s]) * d, length(s) * d,
                  out.begin() + (H * offsets[s] + h * length(s)) * d);
  return out;
}

int64_t Trace::longest() const {
  int64_t most = 0;
  for (int64_t s = 0; s < sequences(); ++s) most = std::max(most, length(s));
  return most;
}

std::vector<int64_t> Trace::output_shape(int64_t heads, int64_t per_token) const {
  switch (layout) {
    case Layout::single:
      return {heads, total(), per_token};
    case Layout::batched:
      return {sequences(), heads, length(0), per_token};
    case Layout::packed:
      return {heads, total(), per_token};
  }
  return {};
}

std::string Trace::output_dims(const std::string& per_token) const {
  return (layout == Layout::batched ? "B,Hkv,T," : "Hkv,T,") + per_token;
}

std::vector<int32_t> Trace::to_layout(const std::vector<int32_t>& x, int64_t heads, int64_t per_token) const {
  if (layout != Layout::packed) return x;
  const int64_t N = total(), w = per_token;
  std::vector<int32_t> out(x.size());
  for (int64_t s = 0; s < sequences(); ++s)
    for (int64_t h = 0; h < heads; ++h)
      std::copy_n(x.begin() + (heads * offsets[s] + h * length(s)) * w, length(s) * w,
                  out.begin() + (h * N + offsets[s]) * w);
  return out;
}

/// --positions A:B inside 0:T (either end may be left out).
std::pair<int64_t, int64_t> parse_positions(const std::string& text, int64_t T) {
  if (text.empty()) return {0, T};
  const size_t colon = text.find(':');
  if (colon == std::string::npos) throw nk::usage_error("--positions '" + text + "' is not A:B");
  const auto number = [&](const std::string& s, int64_t fallback) -> int64_t {
    if (s.empty()) return fallback;
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != s.size() || s.size() > 18)
      throw nk::usage_error("--positions '" + text + "': '" + s + "' is not a position");
    return v;
  };
  const int64_t a = number(text.substr(0, colon), 0), b = number(text.substr(colon + 1), T);
  if (a < 0 || b > T || a >= b)
    throw nk::usage_error("--positions " + text + " is not a non-empty range inside 0:" + std::to_string(T) +
                          " (the longest sequence)");
  return {a, b};
}

void require_selector(const Trace& trace, const nk::lm::BlockSelectorConfig& sel) {
  const int64_t T = trace.longest();
  if (T < sel.block)
    throw nk::input_error(
        trace.path(), Trace::name(0, "q"),
        "layer 0: T = " + std::to_string(T) + " tokens hold no complete block of " + std::to_string(sel.block));
  if (sel.topk > T / sel.block)
    throw nk::input_error(trace.path(), Trace::name(0, "k"),
                          "layer 0: --topk " + std::to_string(sel.topk) + " is above the " +
                              std::to_string(T / sel.block) + " complete blocks of " + std::to_string(sel.block) +
                              " tokens that T = " + std::to_string(T) + " holds");
}

}  // namespace sparda
