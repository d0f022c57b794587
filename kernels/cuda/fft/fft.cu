// fft.cu - the fft family: batched real FFTs through cuFFT (CPU twin:
// kernels/cpu/fft.cpp, FFTW) and y[b,h,f] = x[b,h,f] * k[h,f] (CPU twin:
// kernels/cpu/spectral.cpp).
#include <cuComplex.h>
#include <cufft.h>

#include "../common.cuh"

namespace nk::cuda {

namespace {
__global__ void spectral_multiply_kernel(const cuFloatComplex* x, const cuFloatComplex* k, cuFloatComplex* y,
                                         long rows, long channels, long bins) {
  const long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
  if (i >= rows * bins) return;
  const long row = i / bins, f = i % bins;
  const long h = row % channels;
  y[i] = cuCmulf(x[i], k[h * bins + f]);
}
__global__ void scale_kernel(float* data, long count, float factor) {
  const long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x;
  if (i < count) data[i] *= factor;
}

}  // namespace

int spectral_multiply_c64(const float* x, const float* k, float* y, long batch, long channels, long bins,
                          char* error, size_t error_size) {
  const long rows = batch * channels;
  const size_t signal_bytes = sizeof(cuFloatComplex) * rows * bins;
  const size_t filter_bytes = sizeof(cuFloatComplex) * channels * bins;
  DeviceBuffer d_x, d_k;
  NK_CUDA_TRY(d_x.allocate(signal_bytes));
  NK_CUDA_TRY(d_k.allocate(filter_bytes));
  NK_CUDA_TRY(cudaMemcpy(d_x.get(), x, signal_bytes, cudaMemcpyHostToDevice));
  NK_CUDA_TRY(cudaMemcpy(d_k.get(), k, filter_bytes, cudaMemcpyHostToDevice));
  const long count = rows * bins;
  if (count > 0) {
    spectral_multiply_kernel<<<static_cast<unsigned>((count + 255) / 256), 256>>>(
        static_cast<const cuFloatComplex*>(d_x.get()), static_cast<const cuFloatComplex*>(d_k.get()),
        static_cast<cuFloatComplex*>(d_x.get()), rows, channels, bins);
    NK_CUDA_TRY(cudaGetLastError());
  }
  NK_CUDA_TRY(cudaMemcpy(y, d_x.get(), signal_bytes, cudaMemcpyDeviceToHost));
  return 0;
}

int rfft_f32(const float* in, float* out, long n, long batch, char* error, size_t error_size) {
  const size_t real_bytes = sizeof(float) * n * batch;
  const size_t complex_bytes = sizeof(cufftComplex) * (n / 2 + 1) * batch;
  DeviceBuffer d_in, d_out;
  NK_CUDA_TRY(d_in.allocate(real_bytes));
  NK_CUDA_TRY(d_out.allocate(complex_bytes));
  NK_CUDA_TRY(cudaMemcpy(d_in.get(), in, real_bytes, cudaMemcpyHostToDevice));
  cufftHandle plan;
  NK_CUFFT_TRY(cufftPlan1d(&plan, static_cast<int>(n), CUFFT_R2C, static_cast<int>(batch)));
  const cufftResult status = cufftExecR2C(plan, static_cast<cufftReal*>(d_in.get()), static_cast<cufftComplex*>(d_out.get()));
  cufftDestroy(plan);
  NK_CUFFT_TRY(status);
  NK_CUDA_TRY(cudaMemcpy(out, d_out.get(), complex_bytes, cudaMemcpyDeviceToHost));
  return 0;
}

int irfft_f32(const float* in, float* out, long n, long batch, char* error, size_t error_size) {
  const size_t real_bytes = sizeof(float) * n * batch;
  const size_t complex_bytes = sizeof(cufftComplex) * (n / 2 + 1) * batch;
  DeviceBuffer d_in, d_out;
  NK_CUDA_TRY(d_in.allocate(complex_bytes));
  NK_CUDA_TRY(d_out.allocate(real_bytes));
  NK_CUDA_TRY(cudaMemcpy(d_in.get(), in, complex_bytes, cudaMemcpyHostToDevice));
  cufftHandle plan;
  NK_CUFFT_TRY(cufftPlan1d(&plan, static_cast<int>(n), CUFFT_C2R, static_cast<int>(batch)));
  const cufftResult status = cufftExecC2R(plan, static_cast<cufftComplex*>(d_in.get()), static_cast<cufftReal*>(d_out.get()));
  cufftDestroy(plan);
  NK_CUFFT_TRY(status);
  const long count = n * batch;
  scale_kernel<<<static_cast<unsigned>((count + 255) / 256), 256>>>(static_cast<float*>(d_out.get()), count, 1.0f / n);
  NK_CUDA_TRY(cudaGetLastError());
  NK_CUDA_TRY(cudaMemcpy(out, d_out.get(), real_bytes, cudaMemcpyDeviceToHost));
  return 0;
}

}  // namespace nk::cuda

extern const nk_cuda_fft nk_cuda_fft_table = {
    .header = nk::cuda::family_header<nk_cuda_fft>(),
    .rfft_f32 = nk::cuda::rfft_f32,
    .irfft_f32 = nk::cuda::irfft_f32,
    .spectral_multiply_c64 = nk::cuda::spectral_multiply_c64,
};
