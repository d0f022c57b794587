// unet.cpp - the U-Net's parts, program, forward and backward (unet.hpp).
#include "nk/nn/unet.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <stdexcept>

#include "nk/error.hpp"
#include "nk/nn/model_file.hpp"

namespace nk::nn {

namespace {

LayerSpec spec(const std::string& line) { return LayerSpec::parse(line); }

std::string conv(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t pad) {
  return "conv2d " + std::to_string(in) + " " + std::to_string(out) + " " + std::to_string(k) + " " +
         std::to_string(stride) + " " + std::to_string(pad);
}

std::string groupnorm(int64_t groups, int64_t c) { return "groupnorm " + std::to_string(groups) + " " + std::to_string(c); }

std::string linear(int64_t in, int64_t out) { return "linear " + std::to_string(in) + " " + std::to_string(out); }

template <class T>
Network<T> chain(const std::vector<std::string>& lines, Shape input) {
  std::vector<LayerSpec> specs;
  for (const auto& line : lines) specs.push_back(spec(line));
  return Network<T>::build(specs, input);
}

Shape at_level(Shape image, int64_t level, int64_t c) { return {image.h >> level, image.w >> level, c}; }

// dst[b, p, :] += v[b, :] for every pixel p of an item of 'pixels' pixels and c channels.
template <class T>
void add_per_channel(T* dst, const T* v, int64_t batch, int64_t pixels, int64_t c) {
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t p = 0; p < pixels; ++p)
      for (int64_t k = 0; k < c; ++k) dst[(b * pixels + p) * c + k] += v[b * c + k];
}

}  // namespace

std::string UNetConfig::text() const {
  std::string s = "channels=";
  for (size_t i = 0; i < channels.size(); ++i) s += (i ? "," : "") + std::to_string(channels[i]);
  return s + " groups=" + std::to_string(groups) + " time_dim=" + std::to_string(time_dim) +
         " cond_dim=" + std::to_string(cond_dim);
}

UNetConfig UNetConfig::parse(const std::string& text, Shape image) {
  UNetConfig config;
  config.image = image;
  std::istringstream in(text);
  std::string item;
  bool seen[4] = {false, false, false, false};
  while (in >> item) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) throw std::invalid_argument("'" + item + "' is not KEY=VALUE");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    auto number = [&](const std::string& v) {
      size_t used = 0;
      long long n = 0;
      try {
        n = std::stoll(v, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != v.size() || n < 0 || n > (int64_t{1} << 20)) {
        throw std::invalid_argument(key + ": '" + v + "' is not an integer in [0, 2^20]");
      }
      return static_cast<int64_t>(n);
    };
    if (key == "channels") {
      config.channels.clear();
      std::istringstream list(value);
      std::string c;
      while (std::getline(list, c, ',')) config.channels.push_back(number(c));
      seen[0] = true;
    } else if (key == "groups") {
      config.groups = number(value), seen[1] = true;
    } else if (key == "time_dim") {
      config.time_dim = number(value), seen[2] = true;
    } else if (key == "cond_dim") {
      config.cond_dim = number(value), seen[3] = true;
    } else {
      throw std::invalid_argument("unknown key '" + key + "'");
    }
  }
  for (bool s : seen)
    if (!s) throw std::invalid_argument("expected channels=, groups=, time_dim= and cond_dim=");
  return config;
}

template <class T>
void time_embedding(const T* t, int64_t batch, int64_t dim, T* out) {
  const int64_t half = dim / 2;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t j = 0; j < dim; ++j) {
      const int64_t k = j < half ? j : j - half;
      const double w = std::pow(10000.0, -static_cast<double>(k) / static_cast<double>(std::max<int64_t>(half, 1)));
      const double a = 1000.0 * static_cast<double>(t[b]) * w;
      out[b * dim + j] = static_cast<T>(j < half ? std::sin(a) : std::cos(a));
    }
}

template <class T>
UNet<T> UNet<T>::build(const UNetConfig& config) {
  const int64_t L = static_cast<int64_t>(config.channels.size());
  if (L < 1 || L > 6) throw std::invalid_argument("U-Net: 1 to 6 levels, found " + std::to_string(L));
  if (config.groups < 1) throw std::invalid_argument("U-Net: groups must be positive");
  for (int64_t c : config.channels)
    if (c < 1 || c % config.groups != 0) {
      throw std::invalid_argument("U-Net: width " + std::to_string(c) + " is not a positive multiple of groups=" +
                                  std::to_string(config.groups));
    }
  const int64_t scale = int64_t{1} << (L - 1);
  if (config.image.h % scale != 0 || config.image.w % scale != 0) {
    throw std::invalid_argument("U-Net: image " + config.image.text() + " sides must be divisible by 2^(levels - 1) = " +
                                std::to_string(scale));
  }
  if (config.time_dim < 2 || config.channels[0] < 2 || config.channels[0] % 2 != 0) {
    throw std::invalid_argument("U-Net: time_dim >= 2 and an even channels[0] (the sinusoid's width) are required");
  }
  UNet net;
  net.config_ = config;
  const int64_t E = config.time_dim, G = config.groups, C = config.image.c;
  auto add = [&](const std::string& name, Network<T> part) {
    net.parts.push_back(std::move(part));
    net.names.push_back(name);
    return static_cast<int64_t>(net.parts.size()) - 1;
  };
  auto res = [&](const std::string& name, int64_t level, int64_t cin, int64_t cout) {
    Res r;
    const Shape in = at_level(config.image, level, cin), mid = at_level(config.image, level, cout);
    if (cin % G != 0) throw std::invalid_argument("U-Net: block input width " + std::to_string(cin) + " not divisible by groups");
    r.a = add(name + ".a", chain<T>({groupnorm(G, cin), "silu", conv(cin, cout, 3, 1, 1)}, in));
    r.emb = add(name + ".emb", chain<T>({"silu", linear(E, cout)}, {1, 1, E}));
    r.b = add(name + ".b", chain<T>({groupnorm(G, cout), "silu", conv(cout, cout, 3, 1, 1)}, mid));
    if (cin != cout) r.skip = add(name + ".skip", chain<T>({conv(cin, cout, 1, 1, 0)}, in));
    return r;
  };
  const auto& ch = config.channels;
  net.time_mlp = add("time.mlp", chain<T>({linear(ch[0], E), "silu", linear(E, E)}, {1, 1, ch[0]}));
  if (config.cond_dim > 0) {
    net.cond_mlp = add("cond.mlp", chain<T>({linear(config.cond_dim, E), "silu", linear(E, E)}, {1, 1, config.cond_dim}));
  }
  net.conv_in = add("in", chain<T>({conv(C, ch[0], 3, 1, 1)}, config.image));
  net.res_down.resize(L);
  net.res_up.resize(L);
  net.down.assign(L, -1);
  net.up.assign(L, -1);
  for (int64_t l = 0; l < L; ++l) {
    const int64_t cin = l == 0 ? ch[0] : ch[l - 1];
    net.res_down[l] = res("down" + std::to_string(l) + ".res", l, cin, ch[l]);
    if (l + 1 < L) net.down[l] = add("down" + std::to_string(l) + ".down", chain<T>({conv(ch[l], ch[l], 3, 2, 1)}, at_level(config.image, l, ch[l])));
  }
  net.mid = res("mid", L - 1, ch[L - 1], ch[L - 1]);
  for (int64_t l = L - 1; l >= 0; --l) {
    net.res_up[l] = res("up" + std::to_string(l) + ".res", l, 2 * ch[l], ch[l]);
    if (l > 0) {
      net.up[l] = add("up" + std::to_string(l) + ".up",
                      chain<T>({"upsample 2", conv(ch[l], ch[l - 1], 3, 1, 1)}, at_level(config.image, l, ch[l])));
    }
  }
  net.out = add("out", chain<T>({groupnorm(G, ch[0]), "silu", conv(ch[0], C, 3, 1, 1)}, at_level(config.image, 0, ch[0])));
  return net;
}

template <class T>
void UNet<T>::init(uint64_t seed, double out_scale) {
  for (size_t i = 0; i < parts.size(); ++i) parts[i].init(seed * 1000003 + i);
  for (auto& w : parts[out].layers.back().weight) w = static_cast<T>(w * out_scale);
  for (auto& b : parts[out].layers.back().bias) b = static_cast<T>(b * out_scale);
}

template <class T>
template <class U>
UNet<U> UNet<T>::cast() const {
  UNet<U> net;
  net.config_ = config_;
  for (const auto& part : parts) net.parts.push_back(part.template cast<U>());
  net.names = names;
  net.time_mlp = time_mlp, net.cond_mlp = cond_mlp, net.conv_in = conv_in, net.out = out;
  auto res = [](const Res& r) {
    typename UNet<U>::Res s;
    s.a = r.a, s.b = r.b, s.emb = r.emb, s.skip = r.skip;
    return s;
  };
  for (const auto& r : res_down) net.res_down.push_back(res(r));
  for (const auto& r : res_up) net.res_up.push_back(res(r));
  net.mid = res(mid);
  net.down = down, net.up = up;
  return net;
}

template <class T>
int64_t UNet<T>::parameter_count() const {
  int64_t n = 0;
  for (const auto& part : parts) n += part.parameter_count();
  return n;
}

template <class T>
double UNet<T>::forward_macs() const {
  double macs = 0;
  for (const auto& part : parts) macs += part.forward_macs();
  return macs;
}

template <class T>
void UNetGradients<T>::resize(const UNet<T>& net) {
  parts.resize(net.parts.size());
  for (size_t i = 0; i < net.parts.size(); ++i) parts[i].resize(net.parts[i]);
}

template <class T>
void UNetWorkspace<T>::reserve(const UNet<T>& net, int64_t capacity) {
  capacity_ = capacity;
  part.clear();
  for (const auto& p : net.parts) part.emplace_back(p, capacity);
  const auto& cfg = net.config();
  const int64_t L = net.levels(), E = cfg.time_dim;
  sinusoid.assign(static_cast<size_t>(capacity * cfg.channels[0]), T(0));
  emb.assign(static_cast<size_t>(capacity * E), T(0));
  demb.assign(static_cast<size_t>(capacity * E), T(0));
  res.assign(static_cast<size_t>(2 * L + 1), {});
  int64_t widest = std::max(cfg.image.size(), E);
  auto size_res = [&](ResBuffers& r, const typename UNet<T>::Res& idx) {
    const Shape in = net.parts[idx.a].input(), o = net.parts[idx.a].output();
    const auto n_out = static_cast<size_t>(capacity * o.size()), n_in = static_cast<size_t>(capacity * in.size());
    r.sum.assign(n_out, T(0)), r.out.assign(n_out, T(0)), r.dsum.assign(n_out, T(0));
    r.dx.assign(n_in, T(0));
    r.de.assign(static_cast<size_t>(capacity * o.c), T(0));
    widest = std::max({widest, in.size(), o.size()});
  };
  for (int64_t l = 0; l < L; ++l) size_res(res[l], net.res_down[l]);
  size_res(res[L], net.mid);
  for (int64_t l = 0; l < L; ++l) size_res(res[L + 1 + l], net.res_up[l]);
  concat.assign(L, {}), dconcat.assign(L, {}), dskip.assign(L, {});
  for (int64_t l = 0; l < L; ++l) {
    const auto n = static_cast<size_t>(capacity * net.parts[net.res_up[l].a].input().size());
    concat[l].assign(n, T(0)), dconcat[l].assign(n, T(0));
    dskip[l].assign(n / 2, T(0));
  }
  dh_a.assign(static_cast<size_t>(capacity * widest), T(0));
  dh_b.assign(static_cast<size_t>(capacity * widest), T(0));
}

template <class T>
const T* UNetWorkspace<T>::output() const {
  return part.back().output();
}

namespace {

// out = b(a(x) + emb(e)) + skip(x).
template <class T>
void res_forward(const UNet<T>& net, const typename UNet<T>::Res& r, const T* x, const T* e, int64_t batch,
                 UNetWorkspace<T>& ws, typename UNetWorkspace<T>::ResBuffers& buf) {
  const Shape o = net.parts[r.a].output();
  forward(net.parts[r.a], x, batch, ws.part[r.a]);
  forward(net.parts[r.emb], e, batch, ws.part[r.emb]);
  const int64_t n = batch * o.size();
  std::copy(ws.part[r.a].output(), ws.part[r.a].output() + n, buf.sum.begin());
  add_per_channel(buf.sum.data(), ws.part[r.emb].output(), batch, o.h * o.w, o.c);
  forward(net.parts[r.b], buf.sum.data(), batch, ws.part[r.b]);
  const T* hb = ws.part[r.b].output();
  const T* skip = x;
  if (r.skip >= 0) {
    forward(net.parts[r.skip], x, batch, ws.part[r.skip]);
    skip = ws.part[r.skip].output();
  }
#pragma omp parallel for simd schedule(static)
  for (int64_t j = 0; j < n; ++j) buf.out[j] = hb[j] + skip[j];
}

// From d(out): d(x) into buf.dx, d(e) added into demb; parameter gradients when given.
template <class T>
void res_backward(const UNet<T>& net, const typename UNet<T>::Res& r, const T* dout, int64_t batch, UNetWorkspace<T>& ws,
                  typename UNetWorkspace<T>::ResBuffers& buf, UNetGradients<T>* grads) {
  const Shape o = net.parts[r.a].output(), in = net.parts[r.a].input();
  auto g = [&](int64_t part) { return grads ? &grads->parts[part] : nullptr; };
  backward(net.parts[r.b], dout, batch, ws.part[r.b], g(r.b), buf.dsum.data());
  const int64_t pixels = o.h * o.w, c = o.c;
  std::fill(buf.de.begin(), buf.de.begin() + batch * c, T(0));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t p = 0; p < pixels; ++p)
      for (int64_t k = 0; k < c; ++k) buf.de[b * c + k] += buf.dsum[(b * pixels + p) * c + k];
  // The embedding's input gradient is added to demb by the caller's buffer: run
  // its backward into dh_b (free here) and accumulate.
  const int64_t E = net.config().time_dim;
  backward(net.parts[r.emb], buf.de.data(), batch, ws.part[r.emb], g(r.emb), ws.dh_b.data());
  for (int64_t j = 0; j < batch * E; ++j) ws.demb[j] += ws.dh_b[j];
  backward(net.parts[r.a], buf.dsum.data(), batch, ws.part[r.a], g(r.a), buf.dx.data());
  const int64_t n_in = batch * in.size();
  if (r.skip >= 0) {
    backward(net.parts[r.skip], dout, batch, ws.part[r.skip], g(r.skip), ws.dh_b.data());
#pragma omp parallel for simd schedule(static)
    for (int64_t j = 0; j < n_in; ++j) buf.dx[j] += ws.dh_b[j];
  } else {
#pragma omp parallel for simd schedule(static)
    for (int64_t j = 0; j < n_in; ++j) buf.dx[j] += dout[j];
  }
}

// concat[b, p, :] = (h[b, p, :c1], s[b, p, :c2]) and its inverse split.
template <class T>
void concat_channels(const T* h, const T* s, int64_t batch, int64_t pixels, int64_t c1, int64_t c2, T* out) {
#pragma omp parallel for schedule(static)
  for (int64_t q = 0; q < batch * pixels; ++q) {
    std::copy(h + q * c1, h + (q + 1) * c1, out + q * (c1 + c2));
    std::copy(s + q * c2, s + (q + 1) * c2, out + q * (c1 + c2) + c1);
  }
}

template <class T>
void split_channels(const T* d, int64_t batch, int64_t pixels, int64_t c1, int64_t c2, T* dh, T* ds) {
#pragma omp parallel for schedule(static)
  for (int64_t q = 0; q < batch * pixels; ++q) {
    std::copy(d + q * (c1 + c2), d + q * (c1 + c2) + c1, dh + q * c1);
    std::copy(d + q * (c1 + c2) + c1, d + (q + 1) * (c1 + c2), ds + q * c2);
  }
}

}  // namespace

template <class T>
void forward(const UNet<T>& net, const T* x, const T* t, const T* cond, int64_t batch, UNetWorkspace<T>& ws) {
  if (batch > ws.capacity()) throw std::invalid_argument("U-Net: batch above the workspace's capacity");
  if (net.cond_mlp >= 0 && !cond) throw std::invalid_argument("U-Net: a conditional net needs its conditioning vector");
  const auto& cfg = net.config();
  const int64_t L = net.levels(), E = cfg.time_dim;
  ws.x = x;
  ws.batch = batch;
  time_embedding(t, batch, cfg.channels[0], ws.sinusoid.data());
  forward(net.parts[net.time_mlp], ws.sinusoid.data(), batch, ws.part[net.time_mlp]);
  std::copy(ws.part[net.time_mlp].output(), ws.part[net.time_mlp].output() + batch * E, ws.emb.begin());
  if (net.cond_mlp >= 0) {
    forward(net.parts[net.cond_mlp], cond, batch, ws.part[net.cond_mlp]);
    const T* c = ws.part[net.cond_mlp].output();
    for (int64_t j = 0; j < batch * E; ++j) ws.emb[j] += c[j];
  }
  forward(net.parts[net.conv_in], x, batch, ws.part[net.conv_in]);
  const T* h = ws.part[net.conv_in].output();
  for (int64_t l = 0; l < L; ++l) {
    res_forward(net, net.res_down[l], h, ws.emb.data(), batch, ws, ws.res[l]);
    h = ws.res[l].out.data();
    if (net.down[l] >= 0) {
      forward(net.parts[net.down[l]], h, batch, ws.part[net.down[l]]);
      h = ws.part[net.down[l]].output();
    }
  }
  res_forward(net, net.mid, h, ws.emb.data(), batch, ws, ws.res[L]);
  h = ws.res[L].out.data();
  for (int64_t l = L - 1; l >= 0; --l) {
    const int64_t c = cfg.channels[l], pixels = (cfg.image.h >> l) * (cfg.image.w >> l);
    concat_channels(h, ws.res[l].out.data(), batch, pixels, c, c, ws.concat[l].data());
    res_forward(net, net.res_up[l], ws.concat[l].data(), ws.emb.data(), batch, ws, ws.res[L + 1 + l]);
    h = ws.res[L + 1 + l].out.data();
    if (net.up[l] >= 0) {
      forward(net.parts[net.up[l]], h, batch, ws.part[net.up[l]]);
      h = ws.part[net.up[l]].output();
    }
  }
  forward(net.parts[net.out], h, batch, ws.part[net.out]);
}

template <class T>
void backward(const UNet<T>& net, const T* dv, UNetWorkspace<T>& ws, UNetGradients<T>* grads, T* input_grad,
              T* cond_grad) {
  const auto& cfg = net.config();
  const int64_t L = net.levels(), E = cfg.time_dim, batch = ws.batch;
  auto g = [&](int64_t part) { return grads ? &grads->parts[part] : nullptr; };
  std::fill(ws.demb.begin(), ws.demb.begin() + batch * E, T(0));
  // dh_a carries the trunk's gradient between parts.
  backward(net.parts[net.out], dv, batch, ws.part[net.out], g(net.out), ws.dh_a.data());
  const T* dh = ws.dh_a.data();
  for (int64_t l = 0; l < L; ++l) {
    if (net.up[l] >= 0) {
      // dconcat[l] is free until the down path: scratch for d(res_up[l] output).
      backward(net.parts[net.up[l]], dh, batch, ws.part[net.up[l]], g(net.up[l]), ws.dconcat[l].data());
      dh = ws.dconcat[l].data();
    }
    auto& buf = ws.res[L + 1 + l];
    res_backward(net, net.res_up[l], dh, batch, ws, buf, grads);
    const int64_t c = cfg.channels[l], pixels = (cfg.image.h >> l) * (cfg.image.w >> l);
    split_channels(buf.dx.data(), batch, pixels, c, c, ws.dh_a.data(), ws.dskip[l].data());
    dh = ws.dh_a.data();
  }
  // dh: gradient of the mid block's output.
  res_backward(net, net.mid, dh, batch, ws, ws.res[L], grads);
  dh = ws.res[L].dx.data();
  for (int64_t l = L - 1; l >= 0; --l) {
    const int64_t n = batch * net.parts[net.res_down[l].a].output().size();
    T* dout = ws.dconcat[l].data();  // free again: holds d(res_down[l] output)
    if (net.down[l] >= 0) {
      backward(net.parts[net.down[l]], dh, batch, ws.part[net.down[l]], g(net.down[l]), dout);
    } else {
      std::copy(dh, dh + n, dout);
    }
    for (int64_t j = 0; j < n; ++j) dout[j] += ws.dskip[l][j];
    res_backward(net, net.res_down[l], dout, batch, ws, ws.res[l], grads);
    dh = ws.res[l].dx.data();
  }
  backward(net.parts[net.conv_in], dh, batch, ws.part[net.conv_in], g(net.conv_in), input_grad);
  // The embedding: time MLP (its input, the sinusoid, needs no gradient) and the condition's MLP.
  backward(net.parts[net.time_mlp], ws.demb.data(), batch, ws.part[net.time_mlp], g(net.time_mlp), static_cast<T*>(nullptr));
  if (net.cond_mlp >= 0 && (grads || cond_grad)) {
    backward(net.parts[net.cond_mlp], ws.demb.data(), batch, ws.part[net.cond_mlp], g(net.cond_mlp), cond_grad);
  }
}

void write_unet(h5::Writer& out, const UNet<float>& net, const std::string& group) {
  for (size_t i = 0; i < net.parts.size(); ++i) write_network(out, net.parts[i], group + "/parts/" + net.names[i]);
  out.attr(group, "unet", net.config().text());
  out.attr(group, "image", net.config().image.text());
}

UNet<float> read_unet(const h5::File& file, const std::string& group) {
  const std::string& path = file.path();
  const auto text = file.attr_string(group, "unet");
  const auto image_text = file.attr_string(group, "image");
  if (!text || !image_text) throw input_error(path, group, "attributes unet and image are required");
  Shape image;
  char tail = 0;
  long long h = 0, w = 0, c = 0;
  if (std::sscanf(image_text->c_str(), "%lld,%lld,%lld%c", &h, &w, &c, &tail) != 3 || h <= 0 || w <= 0 || c <= 0 ||
      h > 4096 || w > 4096 || c > 64) {
    throw input_error(path, group, "attribute image is '" + *image_text + "', expected \"H,W,C\" (sides <= 4096, C <= 64)");
  }
  image = {h, w, c};
  UNet<float> net;
  try {
    net = UNet<float>::build(UNetConfig::parse(*text, image));
  } catch (const std::invalid_argument& e) {
    throw input_error(path, group, std::string("attribute unet: ") + e.what());
  }
  for (size_t i = 0; i < net.parts.size(); ++i) {
    const std::string at = group + "/parts/" + net.names[i];
    Network<float> part = read_network(file, at);
    if (part.arch() != net.parts[i].arch() || !(part.input() == net.parts[i].input())) {
      throw input_error(path, at + "/arch", "does not match the U-Net's configuration (" + text.value() + ")");
    }
    net.parts[i] = std::move(part);
  }
  return net;
}

template class UNet<float>;
template class UNet<double>;
template UNet<double> UNet<float>::cast<double>() const;
template UNet<float> UNet<double>::cast<float>() const;
template struct UNetGradients<float>;
template struct UNetGradients<double>;
template class UNetWorkspace<float>;
template class UNetWorkspace<double>;
template void time_embedding<float>(const float*, int64_t, int64_t, float*);
template void time_embedding<double>(const double*, int64_t, int64_t, double*);
template void forward<float>(const UNet<float>&, const float*, const float*, const float*, int64_t, UNetWorkspace<float>&);
template void forward<double>(const UNet<double>&, const double*, const double*, const double*, int64_t,
                              UNetWorkspace<double>&);
template void backward<float>(const UNet<float>&, const float*, UNetWorkspace<float>&, UNetGradients<float>*, float*, float*);
template void backward<double>(const UNet<double>&, const double*, UNetWorkspace<double>&, UNetGradients<double>*,
                               double*, double*);

}  // namespace nk::nn
