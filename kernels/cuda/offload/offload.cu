// offload.cu - the offload family: sparda-forecast's engine on a GPU. A
// device pool of KV blocks filled from page-locked host memory by
// cudaMemcpyAsync on a copy stream (one event per transfer), resident
// buffers, the selector's block scoring and block-sparse decode attention on
// a compute stream. CPU twins: sparda::sparse_attend (engine.cpp),
// nk::lm::group_scores_at and the Forecast's scores (forecast.cpp).
//
// attend: one warp per (row, query head); each lane holds dims/32 (rounded
// up) of q and of the output accumulator; a key's score is the warp's
// shuffle sum of the lanes' partial products, folded into an online softmax
// (running maximum and normaliser), so any number of blocks of any length
// is read once, coalesced (a row's floats across the lanes).
// score: one thread block per (row, group); the group's heads one after
// another: their logits over the blocks in shared memory (a warp per block),
// the block maximum and sum, then each thread adds its blocks'
// probabilities to the output in a fixed order (no atomics: the same bits
// every call).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <initializer_list>
#include <map>
#include <memory>
#include <vector>

#include "../common.cuh"

namespace nk::cuda {

namespace {

constexpr int kMaxDims = 256;

// Grows a scratch buffer to at least 'need' bytes, doubling (cudaMalloc and
// cudaFree synchronise the whole device, copy stream included: rarely).
cudaError_t ensure(DeviceBuffer& buffer, size_t& have, size_t need) {
  if (need <= have) return cudaSuccess;
  need = std::max(need, 2 * have);
  buffer.release();
  have = 0;
  const cudaError_t status = buffer.allocate(need);
  if (status == cudaSuccess) have = need;
  return status;
}

// Page-locked host staging, grown the same way: copies from and to it are
// DMA transfers (pageable memory would be staged through a driver buffer).
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() {
    if (pointer_) cudaFreeHost(pointer_);
  }
  cudaError_t ensure(size_t need) {
    if (need <= have_) return cudaSuccess;
    need = std::max(need, 2 * have_);
    if (pointer_) cudaFreeHost(pointer_);
    pointer_ = nullptr, have_ = 0;
    const cudaError_t status = cudaMallocHost(&pointer_, need);
    if (status == cudaSuccess) have_ = need;
    return status;
  }
  void* get() const { return pointer_; }

 private:
  void* pointer_ = nullptr;
  size_t have_ = 0;
};

struct OffloadState {
  long dims = 0, block = 0, slots = 0;
  DeviceBuffer pool;
  cudaStream_t compute = nullptr, copy = nullptr;
  std::deque<std::pair<unsigned long long, cudaEvent_t>> events;  // transfers not yet waited for
  unsigned long long next_transfer = 1;
  std::vector<const void*> pinned;
  std::map<long, std::unique_ptr<DeviceBuffer>> resident;
  std::map<long, long> resident_floats;
  // Scratch on the device, grown as calls need it.
  DeviceBuffer q, out, lists, offsets, scratch_kv, scratch_index, scores, table;
  size_t q_bytes = 0, out_bytes = 0, lists_bytes = 0, offsets_bytes = 0, kv_bytes = 0, index_bytes = 0,
         scores_bytes = 0, table_bytes = 0;
  PinnedBuffer staging;  // host side of every small upload and download
  int shared_optin = 48 * 1024;  // the largest dynamic shared memory a block may ask for
};

// Copies the host arrays (pointer, bytes) into the pinned staging buffer
// back to back, 256-byte aligned ('at' receives each one's offset); a null
// pointer only reserves its bytes (room for a download).
cudaError_t stage(OffloadState* s, std::initializer_list<std::pair<const void*, size_t>> parts, size_t* at) {
  size_t total = 0, i = 0;
  for (const auto& part : parts) total += (part.second + 255) / 256 * 256;
  const cudaError_t status = s->staging.ensure(total);
  if (status != cudaSuccess) return status;
  size_t offset = 0;
  for (const auto& part : parts) {
    at[i++] = offset;
    if (part.first && part.second) std::memcpy(static_cast<char*>(s->staging.get()) + offset, part.first, part.second);
    offset += (part.second + 255) / 256 * 256;
  }
  return cudaSuccess;
}

__device__ inline float warp_sum(float x) {
  for (int off = 16; off > 0; off /= 2) x += __shfl_xor_sync(0xffffffffu, x, off);
  return x;
}

__device__ inline float warp_max(float x) {
  for (int off = 16; off > 0; off /= 2) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, off));
  return x;
}

__global__ void attend_kernel(const float* __restrict__ q, long rows, long heads, long kv_heads, long dims,
                              const long* __restrict__ offsets, const long* __restrict__ blocks,
                              const float* const* __restrict__ base, float scale, float* __restrict__ out) {
  const long warp = (static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (warp >= rows * heads) return;
  const long r = warp / heads, h = warp % heads, g = h / (heads / kv_heads);
  constexpr int kPer = kMaxDims / 32;
  float qv[kPer], acc[kPer];
  const float* qr = q + (r * heads + h) * dims;
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    const long c = lane + 32L * i;
    qv[i] = c < dims ? qr[c] * scale : 0.0f;
    acc[i] = 0;
  }
  float most = -INFINITY, sum = 0;
  const long b0 = offsets[r * kv_heads + g], b1 = offsets[r * kv_heads + g + 1];
  for (long b = b0; b < b1; ++b) {
    const long* ref = blocks + 4 * b;
    const float* kb = base[ref[0]] + ref[1];
    const float* vb = base[ref[0]] + ref[2];
    const long n = ref[3];
    for (long t = 0; t < n; ++t) {
      const float* kt = kb + t * dims;
      float part = 0;
#pragma unroll
      for (int i = 0; i < kPer; ++i) {
        const long c = lane + 32L * i;
        if (c < dims) part += qv[i] * kt[c];
      }
      const float s = warp_sum(part);
      const float next = fmaxf(most, s);
      const float fade = __expf(most - next), p = __expf(s - next);
      sum = sum * fade + p;
      const float* vt = vb + t * dims;
#pragma unroll
      for (int i = 0; i < kPer; ++i) {
        const long c = lane + 32L * i;
        acc[i] = acc[i] * fade + (c < dims ? p * vt[c] : 0.0f);
      }
      most = next;
    }
  }
  float* o = out + (r * heads + h) * dims;
  const float inv = sum > 0 ? 1.0f / sum : 0.0f;
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    const long c = lane + 32L * i;
    if (c < dims) o[c] = acc[i] * inv;
  }
}

// Block-wide reduction of one float per thread (blockDim.x a multiple of 32, <= 1024).
template <bool kMax>
__device__ float block_reduce(float x, float* shared) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  x = kMax ? warp_max(x) : warp_sum(x);
  if (lane == 0) shared[warp] = x;
  __syncthreads();
  float y = kMax ? -INFINITY : 0.0f;
  for (int w = 0; w < warps; ++w) y = kMax ? fmaxf(y, shared[w]) : y + shared[w];
  __syncthreads();
  return y;
}

__global__ void score_kernel(const float* __restrict__ q, long heads, long kv_heads, long dims,
                             const long* __restrict__ table, const float* const* __restrict__ base, int softmax,
                             float scale, long max_nc, float* __restrict__ scores) {
  extern __shared__ float logits[];
  __shared__ float reduce[32];
  const long r = blockIdx.x / kv_heads, g = blockIdx.x % kv_heads;
  // table row r: buffer, float offset, nb, nc
  const long* row = table + 4 * r;
  const long nb = row[2], nc = row[3];
  const float* pooled = base[row[0]] + row[1] + g * nb * dims;
  float* out = scores + (r * kv_heads + g) * max_nc;
  const long group = softmax ? heads / kv_heads : 1;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  for (long j = threadIdx.x; j < max_nc; j += blockDim.x) out[j] = 0;  // 0 past nc too (defined bytes)
  for (long k = 0; k < group; ++k) {
    const long h = softmax ? g * group + k : g;
    const float* qh = q + (r * heads + h) * dims;
    for (long j = warp; j < nc; j += warps) {
      const float* kj = pooled + j * dims;
      float part = 0;
      for (long c = lane; c < dims; c += 32) part += qh[c] * kj[c];
      part = warp_sum(part);
      if (lane == 0) logits[j] = part * scale;
    }
    __syncthreads();
    if (!softmax) {
      for (long j = threadIdx.x; j < nc; j += blockDim.x) out[j] = logits[j];
      return;
    }
    float m = -INFINITY;
    for (long j = threadIdx.x; j < nc; j += blockDim.x) m = fmaxf(m, logits[j]);
    m = block_reduce<true>(m, reduce);
    float s = 0;
    for (long j = threadIdx.x; j < nc; j += blockDim.x) s += __expf(logits[j] - m);
    s = block_reduce<false>(s, reduce);
    const float inv = 1.0f / s;
    for (long j = threadIdx.x; j < nc; j += blockDim.x) out[j] += __expf(logits[j] - m) * inv;
    __syncthreads();  // the next head rewrites logits
  }
}

// kv [count][2][dims] scattered to row[i] of slot slots[i] in the pool.
__global__ void append_kernel(const float* __restrict__ kv, const long* __restrict__ index, long count, long dims,
                              long block, float* __restrict__ pool) {
  const long i = blockIdx.x;
  if (i >= count) return;
  const long slot = index[2 * i], row = index[2 * i + 1];
  float* k = pool + slot * 2 * block * dims + row * dims;
  float* v = k + block * dims;
  for (long c = threadIdx.x; c < dims; c += blockDim.x) {
    k[c] = kv[(2 * i) * dims + c];
    v[c] = kv[(2 * i + 1) * dims + c];
  }
}

int destroy(void* state, char* error, size_t error_size);

int create(long dims, long block, long slots, void** state, char* error, size_t error_size) {
  *state = nullptr;
  if (dims < 1 || dims > kMaxDims || block < 1 || slots < 0) {
    set_error(error, error_size, "offload: dims must be 1..256, block >= 1, slots >= 0");
    return -1;
  }
  auto* s = new OffloadState;
  s->dims = dims, s->block = block, s->slots = slots;
  int device = 0, optin = 0;
  cudaError_t status = s->pool.allocate(sizeof(float) * 2 * block * dims * static_cast<size_t>(slots > 0 ? slots : 1));
  if (status == cudaSuccess) status = cudaStreamCreateWithFlags(&s->compute, cudaStreamNonBlocking);
  if (status == cudaSuccess) status = cudaStreamCreateWithFlags(&s->copy, cudaStreamNonBlocking);
  if (status == cudaSuccess) status = cudaGetDevice(&device);
  if (status == cudaSuccess) status = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  if (status == cudaSuccess && optin > 48 * 1024)
    status = cudaFuncSetAttribute(score_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, optin - 1024);
  if (status != cudaSuccess) {
    char ignored[8];
    destroy(s, ignored, sizeof ignored);
    NK_CUDA_TRY(status);
  }
  s->shared_optin = std::max(48 * 1024, optin) - 1024;  // room for the kernel's static shared memory
  *state = s;
  return 0;
}

int destroy(void* state, char* error, size_t error_size) {
  auto* s = static_cast<OffloadState*>(state);
  if (!s) return 0;
  cudaError_t status = cudaSuccess;
  if (s->copy) status = cudaStreamSynchronize(s->copy);
  if (s->compute && status == cudaSuccess) status = cudaStreamSynchronize(s->compute);
  for (auto& e : s->events) cudaEventDestroy(e.second);
  for (const void* p : s->pinned) cudaHostUnregister(const_cast<void*>(p));
  if (s->copy) cudaStreamDestroy(s->copy);
  if (s->compute) cudaStreamDestroy(s->compute);
  delete s;
  if (status != cudaSuccess) {
    set_error(error, error_size, cudaGetErrorString(status));
    cudaGetLastError();
    return -1;
  }
  return 0;
}

int pin(void* state, const void* host, size_t bytes, char* error, size_t error_size) {
  auto* s = static_cast<OffloadState*>(state);
  if (!host || bytes == 0) return 0;
  const cudaError_t status = cudaHostRegister(const_cast<void*>(host), bytes, cudaHostRegisterDefault);
  if (status == cudaErrorHostMemoryAlreadyRegistered) {  // another range of the same pages: already page-locked
    cudaGetLastError();
    return 0;
  }
  NK_CUDA_TRY(status);
  s->pinned.push_back(host);
  return 0;
}

int copy(void* state, long count, const long* slots, const float* const* k_src, const float* const* v_src,
         const long* rows, unsigned long long* transfer, char* error, size_t error_size) {
  auto* s = static_cast<OffloadState*>(state);
  const size_t row_bytes = sizeof(float) * static_cast<size_t>(s->dims);
  float* pool = static_cast<float*>(s->pool.get());
  for (long i = 0; i < count; ++i) {
    if (slots[i] < 0 || slots[i] >= s->slots || rows[i] < 0 || rows[i] > s->block) {
      set_error(error, error_size, "offload copy: a slot or row count out of range");
      return -1;
    }
    float* k = pool + slots[i] * 2 * s->block * s->dims;
    NK_CUDA_TRY(cudaMemcpyAsync(k, k_src[i], row_bytes * rows[i], cudaMemcpyHostToDevice, s->copy));
    NK_CUDA_TRY(cudaMemcpyAsync(k + s->block * s->dims, v_src[i], row_bytes * rows[i], cudaMemcpyHostToDevice, s->copy));
  }
  cudaEvent_t event;
  NK_CUDA_TRY(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  const cudaError_t status = cudaEventRecord(event, s->copy);
  if (status != cudaSuccess) {
    cudaEventDestroy(event);
    NK_CUDA_TRY(status);
  }
  *transfer = s->next_transfer++;
  s->events.push_back({*transfer, event});
  return 0;
}

int wait(void* state, unsigned long long transfer, char* error, size_t error_size) {
  auto* s = static_cast<OffloadState*>(state);
  // The newest event at or before 'transfer' covers every earlier one (one in-order stream).
  cudaEvent_t last = nullptr;
  for (const auto& e : s->events)
    if (e.first <= transfer) last = e.second;
  const cudaError_t status = last ? cudaEventSynchronize(last) : cudaSuccess;
  while (!s->events.empty() && s->events.front().first <= transfer) {
    cudaEventDestroy(s->events.front().second);
    s->events.pop_front();
  }
  NK_CUDA_TRY(status);
  return 0;
}

int append(void* state, long count, const long* slots, const long* row, const float* kv, char* error,
           size_t error_size) {
  auto* s = static_cast<OffloadState*>(state);
  if (count == 0) return 0;
  std::vector<long> index(static_cast<size_t>(2 * count));
  for (long i = 0; i < count; ++i) {
    if (slots[i] < 0 || slots[i] >= s->slots || row[i] < 0 || row[i] >= s->block) {
      set_error(error, error_size, "offload append: a slot or row out of range");
      return -1;
    }
    index[2 * i] = slots[i], index[2 * i + 1] = row[i];
  }
  const size_t kv_bytes = sizeof(float) * 2 * count * s->dims, index_bytes = sizeof(long) * 2 * count;
  NK_CUDA_TRY(ensure(s->scratch_kv, s->kv_bytes, kv_bytes));
  NK_CUDA_TRY(ensure(s->scratch_index, s->index_bytes, index_bytes));
  size_t at[2];
  NK_CUDA_TRY(stage(s, {{kv, kv_bytes}, {index.data(), index_bytes}}, at));
  const char* host = static_cast<const char*>(s->staging.get());
  NK_CUDA_TRY(cudaMemcpyAsync(s->scratch_kv.get(), host + at[0], kv_bytes, cudaMemcpyHostToDevice, s->compute));
  NK_CUDA_TRY(cudaMemcpyAsync(s->scratch_index.get(), host + at[1], index_bytes, cudaMemcpyHostToDevice, s->compute));
  append_kernel<<<static_cast<unsigned>(count), 128, 0, s->compute>>>(
      static_cast<const float*>(s->scratch_kv.get()), static_cast<const long*>(s->scratch_index.get()), count, s->dims,
      s->block, static_cast<float*>(s->pool.get()));
  NK_CUDA_TRY(cudaGetLastError());
  // The staging buffer is reused by the next call.
  NK_CUDA_TRY(cudaStreamSynchronize(s->compute));
  return 0;
}

int resident(void* state, long id, const float* host, long floats, char* error, size_t error_size) {
  auto* s = static_cast<OffloadState*>(state);
  if (id < 1 || floats < 0) {
    set_error(error, error_size, "offload resident: ids start at 1");
    return -1;
  }
  auto buffer = std::make_unique<DeviceBuffer>();
  NK_CUDA_TRY(upload(*buffer, host, sizeof(float) * static_cast<size_t>(floats)));
  s->resident[id] = std::move(buffer);
  s->resident_floats[id] = floats;
  return 0;
}

// The device bases of the pool (id 0) and resident buffers 1..max_id: the table the kernels index by buffer id.
std::vector<const float*> bases(const OffloadState* s, long max_id) {
  std::vector<const float*> host(static_cast<size_t>(max_id + 1), nullptr);
  host[0] = static_cast<const float*>(s->pool.get());
  for (const auto& [id, buffer] : s->resident)
    if (id <= max_id) host[static_cast<size_t>(id)] = static_cast<const float*>(buffer->get());
  return host;
}

// Whether buffer 'id' holds [offset, offset + floats).
bool holds(const OffloadState* s, long id, long offset, long floats) {
  if (offset < 0 || floats < 0) return false;
  if (id == 0) return offset + floats <= s->slots * 2 * s->block * s->dims;
  const auto it = s->resident_floats.find(id);
  return it != s->resident_floats.end() && offset + floats <= it->second;
}

int score(void* state, const float* q, long rows, long heads, long kv_heads, const long* pooled, const long* nb,
          const long* nc, long max_nc, int softmax, float scale, float* scores, nk_cuda_timing* timing, char* error,
          size_t error_size) {
  auto* s = static_cast<OffloadState*>(state);
  if (timing) *timing = {};
  if (rows == 0 || max_nc == 0) return 0;
  if (kv_heads < 1 || heads % kv_heads != 0 || (!softmax && heads != kv_heads) ||
      max_nc > static_cast<long>(s->shared_optin / sizeof(float))) {
    char message[192];
    std::snprintf(message, sizeof message,
                  "offload score: heads must be a multiple of kv_heads (equal without softmax), at most %ld blocks "
                  "(this GPU's shared memory)",
                  static_cast<long>(s->shared_optin / sizeof(float)));
    set_error(error, error_size, message);
    return -1;
  }
  std::vector<long> table(static_cast<size_t>(4 * rows));
  long max_id = 0;
  for (long r = 0; r < rows; ++r) {
    if (nc[r] < 0 || nc[r] > nb[r] || nc[r] > max_nc || pooled[2 * r] < 1 ||
        !holds(s, pooled[2 * r], pooled[2 * r + 1], kv_heads * nb[r] * s->dims)) {
      set_error(error, error_size, "offload score: a row's pooled keys are not in its resident buffer");
      return -1;
    }
    table[4 * r] = pooled[2 * r], table[4 * r + 1] = pooled[2 * r + 1], table[4 * r + 2] = nb[r],
              table[4 * r + 3] = nc[r];
    max_id = std::max(max_id, pooled[2 * r]);
  }
  const auto t0 = std::chrono::steady_clock::now();
  const size_t q_bytes = sizeof(float) * rows * heads * s->dims, out_bytes = sizeof(float) * rows * kv_heads * max_nc;
  NK_CUDA_TRY(ensure(s->q, s->q_bytes, q_bytes));
  NK_CUDA_TRY(ensure(s->scores, s->scores_bytes, out_bytes));
  const size_t table_bytes = sizeof(long) * table.size();
  const std::vector<const float*> base = bases(s, max_id);
  const size_t base_bytes = sizeof(const float*) * base.size();
  NK_CUDA_TRY(ensure(s->lists, s->lists_bytes, table_bytes));
  NK_CUDA_TRY(ensure(s->table, s->table_bytes, base_bytes));
  size_t at[4];
  NK_CUDA_TRY(stage(s, {{q, q_bytes}, {table.data(), table_bytes}, {base.data(), base_bytes}, {nullptr, out_bytes}}, at));
  char* host = static_cast<char*>(s->staging.get());
  NK_CUDA_TRY(cudaMemcpyAsync(s->q.get(), host + at[0], q_bytes, cudaMemcpyHostToDevice, s->compute));
  NK_CUDA_TRY(cudaMemcpyAsync(s->lists.get(), host + at[1], table_bytes, cudaMemcpyHostToDevice, s->compute));
  NK_CUDA_TRY(cudaMemcpyAsync(s->table.get(), host + at[2], base_bytes, cudaMemcpyHostToDevice, s->compute));
  score_kernel<<<static_cast<unsigned>(rows * kv_heads), 256, sizeof(float) * max_nc, s->compute>>>(
      static_cast<const float*>(s->q.get()), heads, kv_heads, s->dims, static_cast<const long*>(s->lists.get()),
      static_cast<const float* const*>(s->table.get()), softmax, scale, max_nc, static_cast<float*>(s->scores.get()));
  NK_CUDA_TRY(cudaGetLastError());
  NK_CUDA_TRY(cudaMemcpyAsync(host + at[3], s->scores.get(), out_bytes, cudaMemcpyDeviceToHost, s->compute));
  NK_CUDA_TRY(cudaStreamSynchronize(s->compute));
  std::memcpy(scores, host + at[3], out_bytes);
  if (timing) timing->compute_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return 0;
}

int attend(void* state, const float* q, long rows, long heads, long kv_heads, const long* offsets, const long* blocks,
           float scale, float* out, nk_cuda_timing* timing, char* error, size_t error_size) {
  auto* s = static_cast<OffloadState*>(state);
  if (timing) *timing = {};
  if (rows == 0) return 0;
  if (kv_heads < 1 || heads % kv_heads != 0) {
    set_error(error, error_size, "offload attend: heads must be a multiple of kv_heads");
    return -1;
  }
  const long lists = rows * kv_heads, count = offsets[lists];
  long max_id = 0;
  for (long i = 0; i < lists; ++i)
    if (offsets[i] < 0 || offsets[i] > offsets[i + 1]) {
      set_error(error, error_size, "offload attend: block offsets must not decrease");
      return -1;
    }
  for (long b = 0; b < count; ++b) {
    const long* ref = blocks + 4 * b;
    if (ref[0] < 0 || !holds(s, ref[0], ref[1], ref[3] * s->dims) || !holds(s, ref[0], ref[2], ref[3] * s->dims)) {
      set_error(error, error_size, "offload attend: a block reference lies outside its buffer");
      return -1;
    }
    max_id = std::max(max_id, ref[0]);
  }
  const auto t0 = std::chrono::steady_clock::now();
  const size_t q_bytes = sizeof(float) * rows * heads * s->dims;
  const size_t offsets_bytes = sizeof(long) * (lists + 1), blocks_bytes = sizeof(long) * 4 * (count > 0 ? count : 1);
  NK_CUDA_TRY(ensure(s->q, s->q_bytes, q_bytes));
  NK_CUDA_TRY(ensure(s->out, s->out_bytes, q_bytes));
  NK_CUDA_TRY(ensure(s->offsets, s->offsets_bytes, offsets_bytes));
  NK_CUDA_TRY(ensure(s->lists, s->lists_bytes, blocks_bytes));
  const std::vector<const float*> base = bases(s, max_id);
  const size_t base_bytes = sizeof(const float*) * base.size(), list_bytes = sizeof(long) * 4 * count;
  NK_CUDA_TRY(ensure(s->table, s->table_bytes, base_bytes));
  size_t at[5];
  NK_CUDA_TRY(stage(s, {{q, q_bytes}, {offsets, offsets_bytes}, {blocks, list_bytes}, {base.data(), base_bytes},
                        {nullptr, q_bytes}},
                    at));
  char* host = static_cast<char*>(s->staging.get());
  NK_CUDA_TRY(cudaMemcpyAsync(s->q.get(), host + at[0], q_bytes, cudaMemcpyHostToDevice, s->compute));
  NK_CUDA_TRY(cudaMemcpyAsync(s->offsets.get(), host + at[1], offsets_bytes, cudaMemcpyHostToDevice, s->compute));
  if (count > 0)
    NK_CUDA_TRY(cudaMemcpyAsync(s->lists.get(), host + at[2], list_bytes, cudaMemcpyHostToDevice, s->compute));
  NK_CUDA_TRY(cudaMemcpyAsync(s->table.get(), host + at[3], base_bytes, cudaMemcpyHostToDevice, s->compute));
  const int threads = 128;
  const long warps = rows * heads, grid = (warps * 32 + threads - 1) / threads;
  attend_kernel<<<static_cast<unsigned>(grid), threads, 0, s->compute>>>(
      static_cast<const float*>(s->q.get()), rows, heads, kv_heads, s->dims, static_cast<const long*>(s->offsets.get()),
      static_cast<const long*>(s->lists.get()), static_cast<const float* const*>(s->table.get()), scale,
      static_cast<float*>(s->out.get()));
  NK_CUDA_TRY(cudaGetLastError());
  NK_CUDA_TRY(cudaMemcpyAsync(host + at[4], s->out.get(), q_bytes, cudaMemcpyDeviceToHost, s->compute));
  NK_CUDA_TRY(cudaStreamSynchronize(s->compute));
  std::memcpy(out, host + at[4], q_bytes);
  if (timing) timing->compute_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return 0;
}

}  // namespace

}  // namespace nk::cuda

extern const nk_cuda_offload nk_cuda_offload_table = {
    .header = nk::cuda::family_header<nk_cuda_offload>(),
    .create = nk::cuda::create,
    .pin = nk::cuda::pin,
    .copy = nk::cuda::copy,
    .wait = nk::cuda::wait,
    .append = nk::cuda::append,
    .resident = nk::cuda::resident,
    .score = nk::cuda::score,
    .attend = nk::cuda::attend,
    .destroy = nk::cuda::destroy,
};
