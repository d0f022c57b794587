// committee.cu - the committee family: teacher-limits' loss and gradient over
// data kept on the device (CPU twin: tools/teacher-limits/committee.cpp).
// Per call: Z = X (W/sqrt d)^T by cuBLAS, one warp per row for sigma, the
// output, the residual and M = -r a sigma'(Z), per-row losses reduced in a
// fixed order by one block, then grad = M^T X / sqrt d by cuBLAS.
#include <cublas_v2.h>

#include <cmath>
#include <vector>

#include "../common.cuh"

namespace nk::cuda {

namespace {

struct CommitteeState {
  long n = 0, d = 0, k = 0;
  int activation = 3;
  float scale = 1;
  DeviceBuffer x, y, w, a, z, m, row_loss, loss, grad;
  cublasHandle_t blas = nullptr;
  std::vector<float> host_w, host_a, host_grad;
};

__device__ inline void activate(int activation, float scale, float z, float& s, float& ds) {
  switch (activation) {
    case 0: {
      const float t = tanhf(z);
      s = scale * t;
      ds = scale * (1 - t * t);
      return;
    }
    case 1:
      s = scale * (fmaxf(z, 0.0f) - 0.3989422804f);
      ds = z > 0 ? scale : 0.0f;
      return;
    case 2:
      s = (z * z - 1) * 0.7071067812f;
      ds = 1.4142135624f * z;
      return;
    case 3:
      s = 0.4082482905f * z * (z * z - 3);
      ds = 1.2247448714f * (z * z - 1);
      return;
    default:
      s = z;
      ds = 1;
  }
}

// One warp per row: f = sum_j a_j sigma(z_j), r = y - f, the row's loss r^2/2,
// and m_j = -r a_j sigma'(z_j) written over z.
__global__ void rows_kernel(const float* __restrict__ z, float* __restrict__ m, const double* __restrict__ y,
                            const float* __restrict__ a, double* __restrict__ row_loss, long n, long k,
                            int activation, float scale) {
  const long row = (static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (row >= n) return;
  const float* zr = z + row * k;
  float f = 0;
  for (long j = lane; j < k; j += 32) {
    float s, ds;
    activate(activation, scale, zr[j], s, ds);
    f += a[j] * s;
  }
  for (int off = 16; off > 0; off /= 2) f += __shfl_down_sync(0xffffffffu, f, off);
  f = __shfl_sync(0xffffffffu, f, 0);
  const double r = y[row] - static_cast<double>(f);
  if (lane == 0) row_loss[row] = 0.5 * r * r;
  const float rf = static_cast<float>(r);
  float* mr = m + row * k;
  for (long j = lane; j < k; j += 32) {
    float s, ds;
    activate(activation, scale, zr[j], s, ds);
    mr[j] = -rf * a[j] * ds;
  }
}

// The sum of row_loss by one block in a fixed order (the same bits every call).
__global__ void sum_kernel(const double* __restrict__ values, long n, double* __restrict__ out) {
  __shared__ double partial[1024];
  double s = 0;
  for (long i = threadIdx.x; i < n; i += blockDim.x) s += values[i];
  partial[threadIdx.x] = s;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (static_cast<int>(threadIdx.x) < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = partial[0];
}

int create(const float* x, const double* y, long n, long d, long k, int activation, double scale, void** state,
           char* error, size_t error_size) {
  auto* s = new CommitteeState;
  s->n = n, s->d = d, s->k = k, s->activation = activation, s->scale = static_cast<float>(scale);
  *state = s;
  auto fail = [&](const char* message) {
    set_error(error, error_size, message);
    if (s->blas) cublasDestroy(s->blas);
    delete s;
    *state = nullptr;
    cudaGetLastError();
    return -1;
  };
  if (upload(s->x, x, sizeof(float) * n * d) != cudaSuccess || upload(s->y, y, sizeof(double) * n) != cudaSuccess ||
      s->w.allocate(sizeof(float) * k * d) != cudaSuccess || s->a.allocate(sizeof(float) * k) != cudaSuccess ||
      s->z.allocate(sizeof(float) * n * k) != cudaSuccess || s->m.allocate(sizeof(float) * n * k) != cudaSuccess ||
      s->row_loss.allocate(sizeof(double) * n) != cudaSuccess || s->loss.allocate(sizeof(double)) != cudaSuccess ||
      s->grad.allocate(sizeof(float) * k * d) != cudaSuccess)
    return fail("committee: cannot allocate or upload the data on the device");
  if (cublasCreate(&s->blas) != CUBLAS_STATUS_SUCCESS) return fail("cublasCreate failed");
  s->host_w.resize(static_cast<size_t>(k * d));
  s->host_a.resize(static_cast<size_t>(k));
  s->host_grad.resize(static_cast<size_t>(k * d));
  return 0;
}

int half_sse(void* state, const double* w, const double* a, double* loss, double* grad_w, char* error,
             size_t error_size) {
  auto* s = static_cast<CommitteeState*>(state);
  const long n = s->n, d = s->d, k = s->k;
  const double inv_sqrt_d = 1 / std::sqrt(static_cast<double>(d));
  for (long i = 0; i < k * d; ++i) s->host_w[i] = static_cast<float>(w[i] * inv_sqrt_d);
  for (long j = 0; j < k; ++j) s->host_a[j] = static_cast<float>(a[j]);
  NK_CUDA_TRY(cudaMemcpy(s->w.get(), s->host_w.data(), sizeof(float) * k * d, cudaMemcpyHostToDevice));
  NK_CUDA_TRY(cudaMemcpy(s->a.get(), s->host_a.data(), sizeof(float) * k, cudaMemcpyHostToDevice));
  const float one = 1.0f, zero = 0.0f;
  // Row-major Z [n,k] = X Wf^T is column-major Z^T [k,n] = Wf X^T.
  if (cublasSgemm(s->blas, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(k), static_cast<int>(n), static_cast<int>(d), &one,
                  static_cast<const float*>(s->w.get()), static_cast<int>(d), static_cast<const float*>(s->x.get()),
                  static_cast<int>(d), &zero, static_cast<float*>(s->z.get()), static_cast<int>(k)) != CUBLAS_STATUS_SUCCESS) {
    set_error(error, error_size, "cublasSgemm (pre-activations) failed");
    return -1;
  }
  const int threads = 256;
  const long blocks = (n * 32 + threads - 1) / threads;
  rows_kernel<<<static_cast<unsigned>(blocks), threads>>>(static_cast<const float*>(s->z.get()),
                                                          static_cast<float*>(s->m.get()),
                                                          static_cast<const double*>(s->y.get()),
                                                          static_cast<const float*>(s->a.get()),
                                                          static_cast<double*>(s->row_loss.get()), n, k, s->activation,
                                                          s->scale);
  NK_CUDA_TRY(cudaGetLastError());
  sum_kernel<<<1, 1024>>>(static_cast<const double*>(s->row_loss.get()), n, static_cast<double*>(s->loss.get()));
  NK_CUDA_TRY(cudaGetLastError());
  // Row-major G [k,d] = M^T X is column-major G^T [d,k] = X^T M, M^T being M's column-major storage.
  if (cublasSgemm(s->blas, CUBLAS_OP_N, CUBLAS_OP_T, static_cast<int>(d), static_cast<int>(k), static_cast<int>(n), &one,
                  static_cast<const float*>(s->x.get()), static_cast<int>(d), static_cast<const float*>(s->m.get()),
                  static_cast<int>(k), &zero, static_cast<float*>(s->grad.get()), static_cast<int>(d)) != CUBLAS_STATUS_SUCCESS) {
    set_error(error, error_size, "cublasSgemm (gradient) failed");
    return -1;
  }
  NK_CUDA_TRY(cudaMemcpy(loss, s->loss.get(), sizeof(double), cudaMemcpyDeviceToHost));
  NK_CUDA_TRY(cudaMemcpy(s->host_grad.data(), s->grad.get(), sizeof(float) * k * d, cudaMemcpyDeviceToHost));
  for (long i = 0; i < k * d; ++i) grad_w[i] = static_cast<double>(s->host_grad[i]) * inv_sqrt_d;
  return 0;
}

int destroy(void* state, char* error, size_t error_size) {
  (void)error, (void)error_size;
  auto* s = static_cast<CommitteeState*>(state);
  if (!s) return 0;
  if (s->blas) cublasDestroy(s->blas);
  delete s;
  return 0;
}

}  // namespace

}  // namespace nk::cuda

extern const nk_cuda_committee nk_cuda_committee_table = {
    .header = nk::cuda::family_header<nk_cuda_committee>(),
    .create = nk::cuda::create,
    .half_sse = nk::cuda::half_sse,
    .destroy = nk::cuda::destroy,
};
