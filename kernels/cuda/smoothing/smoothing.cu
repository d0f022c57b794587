// smoothing.cu - the smoothing family: class counts of a network under
// Gaussian noise (CPU twin: tools/proxy-certify/smoothing.cpp). Per batch of
// noisy copies: one thread per copy replays its xoshiro256** stream and
// writes the copy (the CPU's Box-Muller blocks), the network runs layer by
// layer (im2col + cuBLAS SGEMM for conv2d, SGEMM for linear, elementwise
// kernels), and one thread per copy adds its arg-max to the item's counts.
#include <cublas_v2.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "../common.cuh"

namespace nk::cuda {

namespace {

struct DeviceLayer {
  nk_nn_layer shape;
  DeviceBuffer weight, bias;
};

struct SmoothingState {
  std::unique_ptr<DeviceLayer[]> layers;
  long layer_count = 0;
  long batch = 0, classes = 0, values = 0, widest = 0, columns = 0;
  DeviceBuffer act_a, act_b, cols, counts;
  std::unique_ptr<DeviceBuffer> x;
  long x_capacity = 0;
  cublasHandle_t blas = nullptr;
};

// The CPU's nk::Rng, bit for bit: SplitMix64 seeding, split, xoshiro256**.
__host__ __device__ inline unsigned long long mix64(unsigned long long x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

__host__ __device__ inline unsigned long long split_seed(unsigned long long seed, unsigned long long stream) {
  return mix64(seed ^ mix64(stream + 0x632be59bd9b4e019ULL));
}

struct Xoshiro {
  unsigned long long s[4];
  __device__ explicit Xoshiro(unsigned long long seed) {
    unsigned long long x = seed;
    for (int i = 0; i < 4; ++i) {
      x += 0x9e3779b97f4a7c15ULL;
      s[i] = mix64(x);
    }
  }
  __device__ unsigned long long next() {
    auto rotl = [](unsigned long long x, int k) { return (x << k) | (x >> (64 - k)); };
    const unsigned long long result = rotl(s[1] * 5, 7) * 9;
    const unsigned long long t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
  }
};

// The polynomials of kernels/cpu/vector_isa.cpp.
__device__ inline float log_unit(float u) {
  const unsigned int bits = __float_as_uint(u);
  int e = static_cast<int>(bits >> 23) - 127;
  float m = __uint_as_float((bits & 0x7fffffu) | 0x3f800000u);
  if (m > 1.41421356f) m *= 0.5f, e += 1;
  const float t = (m - 1.0f) / (m + 1.0f), t2 = t * t;
  const float series = t * (2.0f + t2 * (2.0f / 3 + t2 * (2.0f / 5 + t2 * (2.0f / 7 + t2 * (2.0f / 9)))));
  return series + static_cast<float>(e) * 0.69314718056f;
}

__device__ inline void cos_sin_turn(float v, float& c, float& s) {
  const int quadrant = static_cast<int>(v * 4.0f + 0.5f);
  const float a = (v - static_cast<float>(quadrant) * 0.25f) * 6.28318530717958647692f, a2 = a * a;
  const float ca = 1.0f + a2 * (-0.5f + a2 * (1.0f / 24 + a2 * (-1.0f / 720 + a2 * (1.0f / 40320))));
  const float sa = a * (1.0f + a2 * (-1.0f / 6 + a2 * (1.0f / 120 + a2 * (-1.0f / 5040))));
  const int q = quadrant & 3;
  c = q == 0 ? ca : q == 1 ? -sa : q == 2 ? -ca : sa;
  s = q == 0 ? sa : q == 1 ? ca : q == 2 ? -sa : -ca;
}

__global__ void noise_kernel(const float* __restrict__ x, float* __restrict__ out, long rows, long values, float sigma,
                             unsigned long long phase_seed, long first) {
  const long r = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  Xoshiro rng(split_seed(phase_seed, static_cast<unsigned long long>(first + r)));
  float* o = out + r * values;
  for (long v = 0; v < values; v += 2) {
    const unsigned long long d = rng.next();
    const float u = (static_cast<float>(static_cast<int>(d >> 40)) + 1.0f) * 0x1.0p-24f;
    const float w = static_cast<float>(static_cast<int>((d >> 8) & 0xffffffu)) * 0x1.0p-24f;
    const float radius = sigma * sqrtf(-2.0f * log_unit(u));
    float c, s;
    cos_sin_turn(w, c, s);
    o[v] = x[v] + radius * c;
    if (v + 1 < values) o[v + 1] = x[v + 1] + radius * s;
  }
}

__global__ void im2col_kernel(const float* __restrict__ x, float* __restrict__ col, nk_nn_layer l, long rows) {
  const long depth = l.in_c * l.kernel * l.kernel;
  const long total = rows * l.out_h * l.out_w * depth;
  for (long idx = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += static_cast<long>(gridDim.x) * blockDim.x) {
    const long j = idx % depth, pixel = idx / depth;
    const long kx = j % l.kernel, ky = (j / l.kernel) % l.kernel, ci = j / (l.kernel * l.kernel);
    const long ox = pixel % l.out_w, oy = (pixel / l.out_w) % l.out_h, b = pixel / (l.out_w * l.out_h);
    const long yy = oy * l.stride - l.pad + ky, xx = ox * l.stride - l.pad + kx;
    const bool inside = yy >= 0 && yy < l.in_h && xx >= 0 && xx < l.in_w;
    col[idx] = inside ? x[((b * l.in_h + yy) * l.in_w + xx) * l.in_c + ci] : 0.0f;
  }
}

__global__ void bias_kernel(float* __restrict__ y, const float* __restrict__ bias, long total, long out) {
  for (long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += static_cast<long>(gridDim.x) * blockDim.x)
    y[i] += bias[i % out];
}

__global__ void relu_kernel(float* __restrict__ y, long total) {
  for (long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += static_cast<long>(gridDim.x) * blockDim.x)
    y[i] = fmaxf(y[i], 0.0f);
}

__global__ void maxpool_kernel(const float* __restrict__ x, float* __restrict__ y, nk_nn_layer l, long rows) {
  const long total = rows * l.out_h * l.out_w * l.out_c;
  for (long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += static_cast<long>(gridDim.x) * blockDim.x) {
    const long c = i % l.out_c, ox = (i / l.out_c) % l.out_w, oy = (i / (l.out_c * l.out_w)) % l.out_h;
    const long b = i / (l.out_c * l.out_w * l.out_h);
    float best = __int_as_float(0xff800000);  // -inf
    for (long ky = 0; ky < l.kernel; ++ky)
      for (long kx = 0; kx < l.kernel; ++kx)
        best = fmaxf(best, x[((b * l.in_h + oy * l.kernel + ky) * l.in_w + ox * l.kernel + kx) * l.in_c + c]);
    y[i] = best;
  }
}

__global__ void flatten_kernel(const float* __restrict__ x, float* __restrict__ y, nk_nn_layer l, long rows) {
  const long hw = l.in_h * l.in_w, n = hw * l.in_c, total = rows * n;
  for (long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += static_cast<long>(gridDim.x) * blockDim.x) {
    const long b = i / n, j = i % n, c = j / hw, p = j % hw;
    y[i] = x[b * n + p * l.in_c + c];
  }
}

__global__ void count_kernel(const float* __restrict__ logits, long rows, long classes, unsigned long long* counts) {
  const long r = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* z = logits + r * classes;
  long best = 0;
  for (long c = 1; c < classes; ++c)
    if (z[c] > z[best]) best = c;
  atomicAdd(counts + best, 1ULL);
}

inline unsigned blocks_for(long total) { return static_cast<unsigned>(std::min<long>((total + 255) / 256, 65535)); }

int create(const nk_nn_layer* layers, long count, long batch, void** state, char* error, size_t error_size) {
  *state = nullptr;
  if (count < 1 || batch < 1) {
    set_error(error, error_size, "smoothing: no layers or batch 0");
    return -1;
  }
  auto owned = std::make_unique<SmoothingState>();
  SmoothingState* s = owned.get();
  auto fail = [&](const char* why) {
    set_error(error, error_size, why);
    if (s->blas) cublasDestroy(s->blas);
    return -1;
  };
  s->batch = batch;
  s->layers.reset(new DeviceLayer[static_cast<size_t>(count)]);
  s->layer_count = count;
  s->values = layers[0].in_h * layers[0].in_w * layers[0].in_c;
  s->widest = s->values;
  for (long i = 0; i < count; ++i) {
    const nk_nn_layer& l = layers[i];
    if (l.op < 0 || l.op > 4) return fail("smoothing: a layer the device path does not run (it has flatten, linear, conv2d, relu, maxpool)");
    DeviceLayer& d = s->layers[i];
    d.shape = l;
    s->widest = std::max(s->widest, l.out_h * l.out_w * l.out_c);
    if (l.op == 1 || l.op == 2) {
      const long depth = l.op == 2 ? l.in_c * l.kernel * l.kernel : l.in_h * l.in_w * l.in_c;
      if (upload(d.weight, l.weight, sizeof(float) * static_cast<size_t>(l.out_c * depth)) != cudaSuccess ||
          upload(d.bias, l.bias, sizeof(float) * static_cast<size_t>(l.out_c)) != cudaSuccess)
        return fail("smoothing: cannot upload the weights");
      if (l.op == 2) s->columns = std::max(s->columns, l.out_h * l.out_w * depth);
    }
    d.shape.weight = static_cast<const float*>(d.weight.get());
    d.shape.bias = static_cast<const float*>(d.bias.get());
  }
  const nk_nn_layer& last = layers[count - 1];
  s->classes = last.out_h * last.out_w * last.out_c;
  if (s->act_a.allocate(sizeof(float) * static_cast<size_t>(batch * s->widest)) != cudaSuccess ||
      s->act_b.allocate(sizeof(float) * static_cast<size_t>(batch * s->widest)) != cudaSuccess ||
      s->cols.allocate(sizeof(float) * static_cast<size_t>(batch * std::max(1L, s->columns))) != cudaSuccess ||
      s->counts.allocate(sizeof(unsigned long long) * static_cast<size_t>(s->classes)) != cudaSuccess)
    return fail("smoothing: cannot allocate the batch buffers on the device");
  if (cublasCreate(&s->blas) != CUBLAS_STATUS_SUCCESS) {
    s->blas = nullptr;
    return fail("smoothing: cublasCreate failed");
  }
  *state = owned.release();
  return 0;
}

// y [rows, out] = a [rows, depth] w^T (w [out, depth], torch's layout), + bias.
int dense(SmoothingState* s, const float* a, const DeviceLayer& d, long rows, long depth, float* y, char* error,
          size_t error_size) {
  const float one = 1, zero = 0;
  const long out = d.shape.out_c;
  if (cublasSgemm(s->blas, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(out), static_cast<int>(rows), static_cast<int>(depth),
                  &one, d.shape.weight, static_cast<int>(depth), a, static_cast<int>(depth), &zero, y,
                  static_cast<int>(out)) != CUBLAS_STATUS_SUCCESS) {
    set_error(error, error_size, "smoothing: cublasSgemm failed");
    return -1;
  }
  bias_kernel<<<blocks_for(rows * out), 256>>>(y, d.shape.bias, rows * out, out);
  return 0;
}

int counts(void* state, const float* x, const long* index, long items, long values, float sigma, unsigned long long seed,
           unsigned long long phase, long n, long long* counts_out, nk_cuda_timing* timing, char* error,
           size_t error_size) {
  auto* s = static_cast<SmoothingState*>(state);
  if (values != s->values) {
    set_error(error, error_size, "smoothing: items of another size than the network's input");
    return -1;
  }
  Timer clock;
  clock.start();
  if (items * values > s->x_capacity) {
    s->x = std::make_unique<DeviceBuffer>();
    NK_CUDA_TRY(s->x->allocate(sizeof(float) * static_cast<size_t>(items * values)));
    s->x_capacity = items * values;
  }
  NK_CUDA_TRY(cudaMemcpy(s->x->get(), x, sizeof(float) * static_cast<size_t>(items * values), cudaMemcpyHostToDevice));
  const double upload_ms = clock.stop();
  clock.start();
  auto* device_counts = static_cast<unsigned long long*>(s->counts.get());
  std::vector<unsigned long long> host(static_cast<size_t>(s->classes));
  for (long i = 0; i < items; ++i) {
    NK_CUDA_TRY(cudaMemset(device_counts, 0, sizeof(unsigned long long) * static_cast<size_t>(s->classes)));
    const unsigned long long phase_seed = split_seed(split_seed(seed, static_cast<unsigned long long>(index[i])), phase);
    for (long first = 0; first < n; first += s->batch) {
      const long rows = std::min(s->batch, n - first);
      float* in = static_cast<float*>(s->act_a.get());
      float* other = static_cast<float*>(s->act_b.get());
      noise_kernel<<<static_cast<unsigned>((rows + 127) / 128), 128>>>(static_cast<const float*>(s->x->get()) + i * values, in,
                                                                        rows, values, sigma, phase_seed, first);
      for (long li = 0; li < s->layer_count; ++li) {
        const DeviceLayer& d = s->layers[li];
        const nk_nn_layer& l = d.shape;
        const long out_total = rows * l.out_h * l.out_w * l.out_c;
        switch (l.op) {
          case 0: flatten_kernel<<<blocks_for(out_total), 256>>>(in, other, l, rows); std::swap(in, other); break;
          case 1:
            if (dense(s, in, d, rows, l.in_h * l.in_w * l.in_c, other, error, error_size) != 0) return -1;
            std::swap(in, other);
            break;
          case 2: {
            const long depth = l.in_c * l.kernel * l.kernel;
            float* cols = static_cast<float*>(s->cols.get());
            im2col_kernel<<<blocks_for(rows * l.out_h * l.out_w * depth), 256>>>(in, cols, l, rows);
            if (dense(s, cols, d, rows * l.out_h * l.out_w, depth, other, error, error_size) != 0) return -1;
            std::swap(in, other);
            break;
          }
          case 3: relu_kernel<<<blocks_for(out_total), 256>>>(in, out_total); break;
          default: maxpool_kernel<<<blocks_for(out_total), 256>>>(in, other, l, rows); std::swap(in, other); break;
        }
      }
      count_kernel<<<static_cast<unsigned>((rows + 255) / 256), 256>>>(in, rows, s->classes, device_counts);
    }
    NK_CUDA_TRY(cudaGetLastError());
    NK_CUDA_TRY(cudaMemcpy(host.data(), device_counts, sizeof(unsigned long long) * host.size(), cudaMemcpyDeviceToHost));
    for (long c = 0; c < s->classes; ++c) counts_out[i * s->classes + c] = static_cast<long long>(host[static_cast<size_t>(c)]);
  }
  if (timing) *timing = {upload_ms, 0.0, clock.stop(), 0.0};
  return 0;
}

int destroy(void* state, char* error, size_t error_size) {
  auto* s = static_cast<SmoothingState*>(state);
  if (s && s->blas) cublasDestroy(s->blas);
  delete s;
  return 0;
}

}  // namespace

}  // namespace nk::cuda

extern const nk_cuda_smoothing nk_cuda_smoothing_table = {
    .header = nk::cuda::family_header<nk_cuda_smoothing>(),
    .create = nk::cuda::create,
    .counts = nk::cuda::counts,
    .destroy = nk::cuda::destroy,
};
