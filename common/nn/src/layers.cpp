// layers.cpp - forward and backward of every layer kind, over a batch.
// Products go through nk::kernels (float) or Eigen (double); the loops around
// them run OpenMP over the batch.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "nk/kernels/gemm.hpp"
#include "nk/kernels/vector.hpp"
#include "nk/nn/network.hpp"

namespace nk::nn {

namespace {

template <class T>
using RowMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// C [m,n] = A [m,k] B^T (B [n,k]).
template <class T>
void product_nt(const T* a, const T* b, T* c, int64_t m, int64_t n, int64_t k) {
  if constexpr (std::is_same_v<T, float>) {
    kernels::gemm_nt(a, b, c, m, n, k);
  } else {
    Eigen::Map<RowMatrix<T>>(c, m, n).noalias() =
        Eigen::Map<const RowMatrix<T>>(a, m, k) * Eigen::Map<const RowMatrix<T>>(b, n, k).transpose();
  }
}

// C [m,n] = A^T B for A [k,m], B [k,n].
template <class T>
void product_tn(const T* a, const T* b, T* c, int64_t m, int64_t n, int64_t k) {
  if constexpr (std::is_same_v<T, float>) {
    kernels::gemm_tn(a, b, c, m, n, k);
  } else {
    Eigen::Map<RowMatrix<T>>(c, m, n).noalias() =
        Eigen::Map<const RowMatrix<T>>(a, k, m).transpose() * Eigen::Map<const RowMatrix<T>>(b, k, n);
  }
}

// C [m,n] = A [m,k] B [k,n].
template <class T>
void product_nn(const T* a, const T* b, T* c, int64_t m, int64_t n, int64_t k) {
  if constexpr (std::is_same_v<T, float>) {
    kernels::gemm(a, b, c, m, n, k);
  } else {
    Eigen::Map<RowMatrix<T>>(c, m, n).noalias() =
        Eigen::Map<const RowMatrix<T>>(a, m, k) * Eigen::Map<const RowMatrix<T>>(b, k, n);
  }
}

constexpr double kNormEps = 1e-5;

// Column (ci, ky, kx) of output pixel (b, oy, ox): torch's weight order, so the
// weight [OUT, IN*K*K] multiplies the columns as stored.
template <class T>
void im2col(const Layer<T>& L, const T* x, int64_t batch, T* col) {
  const int64_t K = L.spec.k, S = L.spec.stride, P = L.spec.pad, C = L.in.c, H = L.in.h, W = L.in.w;
  const int64_t Ho = L.out.h, Wo = L.out.w, row = C * K * K;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t oy = 0; oy < Ho; ++oy) {
      for (int64_t ox = 0; ox < Wo; ++ox) {
        T* out = col + ((b * Ho + oy) * Wo + ox) * row;
        for (int64_t ky = 0; ky < K; ++ky) {
          const int64_t y = oy * S - P + ky;
          for (int64_t kx = 0; kx < K; ++kx) {
            const int64_t xx = ox * S - P + kx;
            const bool inside = y >= 0 && y < H && xx >= 0 && xx < W;
            const T* pixel = inside ? x + ((b * H + y) * W + xx) * C : nullptr;
            for (int64_t ci = 0; ci < C; ++ci) out[(ci * K + ky) * K + kx] = inside ? pixel[ci] : T(0);
          }
        }
      }
    }
  }
}

template <class T>
void col2im(const Layer<T>& L, const T* col, int64_t batch, T* dx) {
  const int64_t K = L.spec.k, S = L.spec.stride, P = L.spec.pad, C = L.in.c, H = L.in.h, W = L.in.w;
  const int64_t Ho = L.out.h, Wo = L.out.w, row = C * K * K;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < batch; ++b) {
    std::fill(dx + b * H * W * C, dx + (b + 1) * H * W * C, T(0));
    for (int64_t oy = 0; oy < Ho; ++oy) {
      for (int64_t ox = 0; ox < Wo; ++ox) {
        const T* in = col + ((b * Ho + oy) * Wo + ox) * row;
        for (int64_t ky = 0; ky < K; ++ky) {
          const int64_t y = oy * S - P + ky;
          if (y < 0 || y >= H) continue;
          for (int64_t kx = 0; kx < K; ++kx) {
            const int64_t xx = ox * S - P + kx;
            if (xx < 0 || xx >= W) continue;
            T* pixel = dx + ((b * H + y) * W + xx) * C;
            for (int64_t ci = 0; ci < C; ++ci) pixel[ci] += in[(ci * K + ky) * K + kx];
          }
        }
      }
    }
  }
}

// Layers with few taps per output (the small image networks of the tools)
// run as a direct convolution in float (nk/kernels/vector.hpp): no column
// matrix is written in the forward; the backward builds the columns.
template <class T>
bool direct_conv(const Layer<T>& L) {
  return std::is_same_v<T, float> && L.spec.in * L.spec.k * L.spec.k <= kernels::kDirectConvMaxTaps &&
         L.spec.out <= kernels::kDirectConvMaxOut;
}

void conv_direct(const Layer<float>& L, const float* x, int64_t batch, float* packed, float* y,
                 const kernels::ConvEpilogue& epilogue = {}) {
  const int64_t K = L.spec.k, C = L.in.c, O = L.spec.out;
  for (int64_t o = 0; o < O; ++o)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t ky = 0; ky < K; ++ky)
        for (int64_t kx = 0; kx < K; ++kx) packed[((ky * K + kx) * C + c) * O + o] = L.weight[((o * C + c) * K + ky) * K + kx];
  const kernels::ConvShape shape{batch, L.in.h, L.in.w, C, O, L.out.h, L.out.w, K, L.spec.stride, L.spec.pad};
  kernels::conv2d_direct(shape, x, packed, L.bias.data(), y, epilogue);
}

// The input gradient of a stride-1 convolution is itself a convolution: of
// dy (O channels) with the kernels transposed (O <-> C) and flipped, padded
// K - 1 - P. Where that convolution has few taps it runs directly, without
// the column matrix of dy W and its col2im scatter.
template <class T>
bool direct_conv_backward(const Layer<T>& L) {
  return std::is_same_v<T, float> && L.spec.stride == 1 && L.spec.pad <= L.spec.k - 1 &&
         L.spec.out * L.spec.k * L.spec.k <= kernels::kDirectConvMaxTaps && L.spec.in <= kernels::kDirectConvMaxOut;
}

void conv_direct_backward(const Layer<float>& L, const float* dy, int64_t batch, float* dx) {
  const int64_t K = L.spec.k, C = L.in.c, O = L.spec.out;
  thread_local std::vector<float> packed, zero;
  packed.resize(static_cast<size_t>(K * K * O * C));
  zero.assign(static_cast<size_t>(C), 0.0f);
  for (int64_t o = 0; o < O; ++o)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t ky = 0; ky < K; ++ky)
        for (int64_t kx = 0; kx < K; ++kx)
          packed[static_cast<size_t>(((ky * K + kx) * O + o) * C + c)] = L.weight[((o * C + c) * K + (K - 1 - ky)) * K + (K - 1 - kx)];
  const kernels::ConvShape shape{batch, L.out.h, L.out.w, O, C, L.in.h, L.in.w, K, 1, K - 1 - L.spec.pad};
  kernels::conv2d_direct(shape, dy, packed.data(), zero.data(), dx);
}

// How many layers from i run as one fused direct convolution in an inference
// pass: 3 for conv2d, relu, maxpool K (4 to 64 channels in steps of 2x), 2 for
// conv2d, relu; 0 for none.
template <class T>
size_t fusable(const Network<T>& net, size_t i) {
  const auto& layers = net.layers;
  if (layers[i].spec.op != Op::conv2d || !direct_conv(layers[i]) || i + 1 >= layers.size() ||
      layers[i + 1].spec.op != Op::relu) {
    return 0;
  }
  const int64_t o = layers[i].spec.out;
  const bool fixed = o == 4 || o == 8 || o == 16 || o == 32 || o == 64;
  return fixed && i + 2 < layers.size() && layers[i + 2].spec.op == Op::maxpool ? 3 : 2;
}

template <class T>
T gelu(T x) {
  return T(0.5) * x * (T(1) + std::erf(x * T(0.70710678118654752440)));
}

template <class T>
T gelu_slope(T x) {
  const T cdf = T(0.5) * (T(1) + std::erf(x * T(0.70710678118654752440)));
  const T pdf = std::exp(T(-0.5) * x * x) * T(0.39894228040143267794);
  return cdf + x * pdf;
}

template <class T>
T sigmoid(T x) {
  return T(1) / (T(1) + std::exp(-x));
}

// The channel of value v of an item, and the group it is normalised in:
// groupnorm/batchnorm act per channel of NHWC data; layernorm (flat) per value.
struct NormLayout {
  int64_t values, channels, groups;  // per item
  int64_t channel(int64_t v) const { return v % channels; }
  int64_t group(int64_t v) const { return channel(v) / (channels / groups); }
};

template <class T>
NormLayout norm_layout(const Layer<T>& L) {
  const int64_t values = L.in.size();
  if (L.spec.op == Op::groupnorm) return {values, L.in.c, L.spec.in};
  if (L.spec.op == Op::layernorm) return {values, values, 1};
  return {values, L.in.c, L.in.c};
}

// Group and layer norm over NHWC items: P positions of C contiguous channels
// (layernorm: one position of every value). Sums run per channel along the
// positions first (contiguous, vectorised, accumulated in double), then per
// group; the output and input gradient are then affine per channel, y = x a_c
// + b_c and dx = dy A_c + x B_c + C_c, one vectorised pass each.

template <class T>
void norm_forward(const Layer<T>& L, const T* x, int64_t batch, T* y, T* stats) {
  const NormLayout n = norm_layout(L);
  const int64_t C = n.channels, P = n.values / C, G = n.groups, per = C / G;
  const double per_group = static_cast<double>(n.values / G);
#pragma omp parallel
  {
    std::vector<double> acc(static_cast<size_t>(C)), mean_c(static_cast<size_t>(C)), mean(static_cast<size_t>(G)),
        inv(static_cast<size_t>(G));
    std::vector<T> a(static_cast<size_t>(C)), shift(static_cast<size_t>(C));
#pragma omp for schedule(static)
    for (int64_t b = 0; b < batch; ++b) {
      const T* xb = x + b * n.values;
      T* yb = y + b * n.values;
      T* st = stats + b * 2 * G;
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t p = 0; p < P; ++p) {
        const T* row = xb + p * C;
        for (int64_t c = 0; c < C; ++c) acc[c] += static_cast<double>(row[c]);
      }
      for (int64_t g = 0; g < G; ++g) {
        double sum = 0;
        for (int64_t c = g * per; c < (g + 1) * per; ++c) sum += acc[c];
        mean[g] = sum / per_group;
        for (int64_t c = g * per; c < (g + 1) * per; ++c) mean_c[c] = mean[g];
      }
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t p = 0; p < P; ++p) {
        const T* row = xb + p * C;
        for (int64_t c = 0; c < C; ++c) {
          const double d = static_cast<double>(row[c]) - mean_c[c];
          acc[c] += d * d;
        }
      }
      for (int64_t g = 0; g < G; ++g) {
        double sq = 0;
        for (int64_t c = g * per; c < (g + 1) * per; ++c) sq += acc[c];
        inv[g] = 1 / std::sqrt(sq / per_group + kNormEps);
        st[2 * g] = static_cast<T>(mean[g]);
        st[2 * g + 1] = static_cast<T>(inv[g]);
        for (int64_t c = g * per; c < (g + 1) * per; ++c) {
          a[c] = static_cast<T>(inv[g] * static_cast<double>(L.weight[c]));
          shift[c] = static_cast<T>(static_cast<double>(L.bias[c]) - mean[g] * inv[g] * static_cast<double>(L.weight[c]));
        }
      }
      for (int64_t p = 0; p < P; ++p) {
        const T* row = xb + p * C;
        T* out = yb + p * C;
        for (int64_t c = 0; c < C; ++c) out[c] = row[c] * a[c] + shift[c];
      }
    }
  }
}

template <class T>
void norm_backward(const Layer<T>& L, const T* x, const T* stats, const T* dy, int64_t batch, T* dw, T* db, T* dx) {
  const NormLayout n = norm_layout(L);
  const int64_t C = n.channels, P = n.values / C, G = n.groups, per = C / G;
  const double per_group = static_cast<double>(n.values / G);
  // Per item and channel: s1 = sum_p dy, s2 = sum_p dy (x - mean of its group).
  std::vector<double> s1(static_cast<size_t>(batch * C)), s2(static_cast<size_t>(batch * C));
#pragma omp parallel
  {
    std::vector<double> mean_c(static_cast<size_t>(C));
    std::vector<T> A(static_cast<size_t>(C)), B(static_cast<size_t>(C)), K(static_cast<size_t>(C));
#pragma omp for schedule(static)
    for (int64_t b = 0; b < batch; ++b) {
      const T* xb = x + b * n.values;
      const T* gb = dy + b * n.values;
      const T* st = stats + b * 2 * G;
      double* a1 = s1.data() + b * C;
      double* a2 = s2.data() + b * C;
      for (int64_t c = 0; c < C; ++c) mean_c[c] = static_cast<double>(st[2 * (c / per)]);
      for (int64_t p = 0; p < P; ++p) {
        const T* row = xb + p * C;
        const T* grow = gb + p * C;
        for (int64_t c = 0; c < C; ++c) {
          const double g = static_cast<double>(grow[c]);
          a1[c] += g;
          a2[c] += g * (static_cast<double>(row[c]) - mean_c[c]);
        }
      }
      if (!dx) continue;
      // dx = inv (w dy - mean(w dy) - xhat mean(w dy xhat)) over the group.
      for (int64_t g = 0; g < G; ++g) {
        const double mu = static_cast<double>(st[2 * g]), inv = static_cast<double>(st[2 * g + 1]);
        double m1 = 0, m2 = 0;
        for (int64_t c = g * per; c < (g + 1) * per; ++c) {
          const double w = static_cast<double>(L.weight[c]);
          m1 += w * a1[c];
          m2 += w * a2[c] * inv;
        }
        m1 /= per_group;
        m2 /= per_group;
        for (int64_t c = g * per; c < (g + 1) * per; ++c) {
          A[c] = static_cast<T>(inv * static_cast<double>(L.weight[c]));
          B[c] = static_cast<T>(-inv * inv * m2);
          K[c] = static_cast<T>(-inv * m1 + inv * inv * mu * m2);
        }
      }
      T* db_ = dx + b * n.values;
      for (int64_t p = 0; p < P; ++p) {
        const T* row = xb + p * C;
        const T* grow = gb + p * C;
        T* out = db_ + p * C;
        for (int64_t c = 0; c < C; ++c) out[c] = grow[c] * A[c] + row[c] * B[c] + K[c];
      }
    }
  }
  if (dw) {
    std::fill(dw, dw + L.weight.size(), T(0));
    std::fill(db, db + L.bias.size(), T(0));
    for (int64_t b = 0; b < batch; ++b) {
      const T* st = stats + b * 2 * G;
      for (int64_t c = 0; c < C; ++c) {
        dw[c] += static_cast<T>(static_cast<double>(st[2 * (c / per) + 1]) * s2[b * C + c]);
        db[c] += static_cast<T>(s1[b * C + c]);
      }
    }
  }
}

}  // namespace

template <class T>
void Workspace<T>::reserve(const Network<T>& net, int64_t capacity) {
  capacity_ = capacity;
  const size_t n = net.layers.size();
  act_.assign(n, {});
  aux_.assign(n, {});
  argmax_.assign(n, {});
  packed_.assign(n, {});
  int64_t widest = net.input().size(), widest_columns = 0;
  for (size_t i = 0; i < n; ++i) {
    const Layer<T>& L = net.layers[i];
    act_[i].assign(static_cast<size_t>(capacity * L.out.size()), T(0));
    widest = std::max(widest, L.out.size());
    if (L.spec.op == Op::conv2d) {
      const int64_t columns = capacity * L.out.h * L.out.w * L.spec.in * L.spec.k * L.spec.k;
      aux_[i].assign(static_cast<size_t>(columns), T(0));
      widest_columns = std::max(widest_columns, columns);
      packed_[i].assign(static_cast<size_t>(L.spec.out * L.spec.in * L.spec.k * L.spec.k), T(0));
    }
    if (L.spec.op == Op::groupnorm) aux_[i].assign(static_cast<size_t>(capacity * 2 * L.spec.in), T(0));
    if (L.spec.op == Op::layernorm) aux_[i].assign(static_cast<size_t>(capacity * 2), T(0));
    if (L.spec.op == Op::maxpool) argmax_[i].assign(static_cast<size_t>(capacity * L.out.size()), 0);
  }
  grad_a_.assign(static_cast<size_t>(capacity * widest), T(0));
  grad_b_.assign(static_cast<size_t>(capacity * widest), T(0));
  dcol_.assign(static_cast<size_t>(widest_columns), T(0));
}

template <class T>
void forward(const Network<T>& net, const T* x, int64_t batch, Workspace<T>& ws, Pass pass) {
  ws.input_ = x;
  const T* in = x;
  for (size_t i = 0; i < net.layers.size(); ++i) {
    if constexpr (std::is_same_v<T, float>) {
      const size_t fused = pass == Pass::inference ? fusable(net, i) : 0;
      if (fused > 0) {
        const Layer<float>& L = net.layers[i];
        kernels::ConvEpilogue epilogue;
        epilogue.relu = true;
        epilogue.pool = fused == 3 ? net.layers[i + 2].spec.k : 1;
        conv_direct(L, in, batch, ws.packed_[i].data(), ws.act_[i + fused - 1].data(), epilogue);
        i += fused - 1;
        in = ws.act_[i].data();
        continue;
      }
    }
    const Layer<T>& L = net.layers[i];
    T* y = ws.act_[i].data();
    const int64_t n_in = L.in.size(), n_out = L.out.size();
    switch (L.spec.op) {
      case Op::flatten: {
        const int64_t H = L.in.h, W = L.in.w, C = L.in.c;
#pragma omp parallel for schedule(static)
        for (int64_t b = 0; b < batch; ++b)
          for (int64_t c = 0; c < C; ++c) {
            T* to = y + b * n_out + c * H * W;
            const T* from = in + b * n_in + c;
            for (int64_t p = 0; p < H * W; ++p) to[p] = from[p * C];
          }
        break;
      }
      case Op::linear:
      case Op::conv2d: {
        const bool conv = L.spec.op == Op::conv2d;
        const int64_t rows = conv ? batch * L.out.h * L.out.w : batch;
        const int64_t depth = conv ? L.spec.in * L.spec.k * L.spec.k : L.spec.in;
        const T* a = in;
        if constexpr (std::is_same_v<T, float>) {
          if (conv && direct_conv(L)) {
            conv_direct(L, in, batch, ws.packed_[i].data(), y);
            break;
          }
        }
        if (conv) {
          im2col(L, in, batch, ws.aux_[i].data());
          a = ws.aux_[i].data();
        }
        product_nt(a, L.weight.data(), y, rows, L.spec.out, depth);
        const int64_t out = L.spec.out;
#pragma omp parallel for schedule(static)
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t o = 0; o < out; ++o) y[r * out + o] += L.bias[o];
        break;
      }
      case Op::relu:
      case Op::silu:
      case Op::gelu:
      case Op::tanh: {
        const int64_t total = batch * n_in;
        const Op op = L.spec.op;
        if constexpr (std::is_same_v<T, float>) {
          if (op == Op::silu) {
            kernels::silu(in, y, total);
            break;
          }
        }
#pragma omp parallel for simd schedule(static)
        for (int64_t j = 0; j < total; ++j) {
          const T v = in[j];
          y[j] = op == Op::relu   ? (v > T(0) ? v : T(0))
                 : op == Op::silu ? v * sigmoid(v)
                 : op == Op::gelu ? gelu(v)
                                  : std::tanh(v);
        }
        break;
      }
      case Op::maxpool:
      case Op::avgpool: {
        // Window positions outer, channels inner: the channel loops vectorise.
        const int64_t K = L.spec.k, W = L.in.w, C = L.in.c, Ho = L.out.h, Wo = L.out.w;
        const bool max = L.spec.op == Op::maxpool;
        int32_t* arg = max ? ws.argmax_[i].data() : nullptr;
        const T scale = T(1) / static_cast<T>(K * K);
#pragma omp parallel for collapse(2) schedule(static)
        for (int64_t b = 0; b < batch; ++b)
          for (int64_t oy = 0; oy < Ho; ++oy)
            for (int64_t ox = 0; ox < Wo; ++ox) {
              T* out = y + b * n_out + (oy * Wo + ox) * C;
              int32_t* at = max ? arg + b * n_out + (oy * Wo + ox) * C : nullptr;
              for (int64_t ky = 0; ky < K; ++ky)
                for (int64_t kx = 0; kx < K; ++kx) {
                  const int64_t base = ((oy * K + ky) * W + ox * K + kx) * C;
                  const T* v = in + b * n_in + base;
                  const bool first = ky == 0 && kx == 0;
                  if (max) {
#pragma omp simd
                    for (int64_t c = 0; c < C; ++c) {
                      const bool take = first || v[c] > out[c];
                      out[c] = take ? v[c] : out[c];
                      at[c] = take ? static_cast<int32_t>(base + c) : at[c];
                    }
                  } else {
#pragma omp simd
                    for (int64_t c = 0; c < C; ++c) out[c] = (first ? T(0) : out[c]) + v[c] * scale;
                  }
                }
            }
        break;
      }
      case Op::upsample: {
        const int64_t K = L.spec.k, W = L.in.w, C = L.in.c, Ho = L.out.h, Wo = L.out.w;
#pragma omp parallel for schedule(static)
        for (int64_t b = 0; b < batch; ++b)
          for (int64_t oy = 0; oy < Ho; ++oy)
            for (int64_t ox = 0; ox < Wo; ++ox)
              for (int64_t c = 0; c < C; ++c)
                y[b * n_out + (oy * Wo + ox) * C + c] = in[b * n_in + ((oy / K) * W + ox / K) * C + c];
        break;
      }
      case Op::groupnorm:
      case Op::layernorm: norm_forward(L, in, batch, y, ws.aux_[i].data()); break;
      case Op::batchnorm: {
        const int64_t C = L.in.c, total = batch * n_in;
#pragma omp parallel for schedule(static)
        for (int64_t j = 0; j < total; ++j) {
          const int64_t c = j % C;
          const T rstd = T(1) / std::sqrt(L.running_var[c] + static_cast<T>(kNormEps));
          y[j] = (in[j] - L.running_mean[c]) * rstd * L.weight[c] + L.bias[c];
        }
        break;
      }
    }
    in = y;
  }
}

template <class T>
void backward(const Network<T>& net, const T* output_grad, int64_t batch, Workspace<T>& ws, Gradients<T>* grads,
              T* input_grad) {
  const T* dy = output_grad;
  T* buffers[2] = {ws.grad_a_.data(), ws.grad_b_.data()};
  int which = 0;
  for (int64_t i = static_cast<int64_t>(net.layers.size()) - 1; i >= 0; --i) {
    const Layer<T>& L = net.layers[i];
    const T* x = ws.activation(i - 1);
    const T* y = ws.act_[i].data();
    const bool need_dx = i > 0 || input_grad;
    T* dx = i == 0 ? input_grad : buffers[which];
    const int64_t n_in = L.in.size(), n_out = L.out.size();
    T* dw = grads && !grads->weight[i].empty() ? grads->weight[i].data() : nullptr;
    T* db = grads && !grads->bias[i].empty() ? grads->bias[i].data() : nullptr;
    switch (L.spec.op) {
      case Op::flatten: {
        if (!need_dx) break;
        const int64_t H = L.in.h, W = L.in.w, C = L.in.c;
#pragma omp parallel for schedule(static)
        for (int64_t b = 0; b < batch; ++b)
          for (int64_t p = 0; p < H * W; ++p)
            for (int64_t c = 0; c < C; ++c) dx[b * n_in + p * C + c] = dy[b * n_out + c * H * W + p];
        break;
      }
      case Op::linear:
      case Op::conv2d: {
        const bool conv = L.spec.op == Op::conv2d;
        const int64_t rows = conv ? batch * L.out.h * L.out.w : batch;
        const int64_t depth = conv ? L.spec.in * L.spec.k * L.spec.k : L.spec.in, out = L.spec.out;
        if (conv && direct_conv(L) && dw) im2col(L, x, batch, ws.aux_[i].data());
        const T* a = conv ? ws.aux_[i].data() : x;
        if (dw) {
          product_tn(dy, a, dw, out, depth, rows);
          std::fill(db, db + out, T(0));
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t o = 0; o < out; ++o) db[o] += dy[r * out + o];
        }
        if (!need_dx) break;
        if constexpr (std::is_same_v<T, float>) {
          if (conv && direct_conv_backward(L)) {
            conv_direct_backward(L, dy, batch, dx);
            break;
          }
        }
        if (conv) {
          T* dcol = ws.dcol_.data();
          product_nn(dy, L.weight.data(), dcol, rows, depth, out);
          col2im(L, dcol, batch, dx);
        } else {
          product_nn(dy, L.weight.data(), dx, rows, depth, out);
        }
        break;
      }
      case Op::relu:
      case Op::silu:
      case Op::gelu:
      case Op::tanh: {
        if (!need_dx) break;
        const int64_t total = batch * n_in;
        const Op op = L.spec.op;
        if constexpr (std::is_same_v<T, float>) {
          if (op == Op::silu) {
            kernels::silu_backward(x, dy, dx, total);
            break;
          }
        }
#pragma omp parallel for simd schedule(static)
        for (int64_t j = 0; j < total; ++j) {
          const T v = x[j];
          T slope;
          if (op == Op::relu) {
            slope = v > T(0) ? T(1) : T(0);
          } else if (op == Op::silu) {
            const T s = sigmoid(v);
            slope = s * (T(1) + v * (T(1) - s));
          } else if (op == Op::gelu) {
            slope = gelu_slope(v);
          } else {
            slope = T(1) - y[j] * y[j];
          }
          dx[j] = dy[j] * slope;
        }
        break;
      }
      case Op::maxpool:
      case Op::avgpool: {
        if (!need_dx) break;
        const int64_t K = L.spec.k, W = L.in.w, C = L.in.c, Ho = L.out.h, Wo = L.out.w;
        const bool max = L.spec.op == Op::maxpool;
        const int32_t* arg = max ? ws.argmax_[i].data() : nullptr;
#pragma omp parallel for schedule(static)
        for (int64_t b = 0; b < batch; ++b) {
          std::fill(dx + b * n_in, dx + (b + 1) * n_in, T(0));
          for (int64_t oy = 0; oy < Ho; ++oy)
            for (int64_t ox = 0; ox < Wo; ++ox)
              for (int64_t c = 0; c < C; ++c) {
                const int64_t o = (oy * Wo + ox) * C + c;
                const T g = dy[b * n_out + o];
                if (max) {
                  dx[b * n_in + arg[b * n_out + o]] += g;
                } else {
                  for (int64_t ky = 0; ky < K; ++ky)
                    for (int64_t kx = 0; kx < K; ++kx)
                      dx[b * n_in + ((oy * K + ky) * W + ox * K + kx) * C + c] += g / static_cast<T>(K * K);
                }
              }
        }
        break;
      }
      case Op::upsample: {
        if (!need_dx) break;
        const int64_t K = L.spec.k, W = L.in.w, C = L.in.c, Ho = L.out.h, Wo = L.out.w;
#pragma omp parallel for schedule(static)
        for (int64_t b = 0; b < batch; ++b) {
          std::fill(dx + b * n_in, dx + (b + 1) * n_in, T(0));
          for (int64_t oy = 0; oy < Ho; ++oy)
            for (int64_t ox = 0; ox < Wo; ++ox)
              for (int64_t c = 0; c < C; ++c)
                dx[b * n_in + ((oy / K) * W + ox / K) * C + c] += dy[b * n_out + (oy * Wo + ox) * C + c];
        }
        break;
      }
      case Op::groupnorm:
      case Op::layernorm: norm_backward(L, x, ws.aux_[i].data(), dy, batch, dw, db, need_dx ? dx : nullptr); break;
      case Op::batchnorm: {
        const int64_t C = L.in.c, total = batch * n_in;
        if (dw) {
          std::fill(dw, dw + C, T(0));
          std::fill(db, db + C, T(0));
          for (int64_t j = 0; j < total; ++j) {
            const int64_t c = j % C;
            const T rstd = T(1) / std::sqrt(L.running_var[c] + static_cast<T>(kNormEps));
            dw[c] += dy[j] * (x[j] - L.running_mean[c]) * rstd;
            db[c] += dy[j];
          }
        }
        if (!need_dx) break;
#pragma omp parallel for schedule(static)
        for (int64_t j = 0; j < total; ++j) {
          const int64_t c = j % C;
          dx[j] = dy[j] * L.weight[c] / std::sqrt(L.running_var[c] + static_cast<T>(kNormEps));
        }
        break;
      }
    }
    if (!need_dx) break;
    dy = dx;
    which ^= 1;
  }
}

template class Workspace<float>;
template class Workspace<double>;
template void forward<float>(const Network<float>&, const float*, int64_t, Workspace<float>&, Pass);
template void forward<double>(const Network<double>&, const double*, int64_t, Workspace<double>&, Pass);
template void backward<float>(const Network<float>&, const float*, int64_t, Workspace<float>&, Gradients<float>*, float*);
template void backward<double>(const Network<double>&, const double*, int64_t, Workspace<double>&, Gradients<double>*,
                               double*);

}  // namespace nk::nn
