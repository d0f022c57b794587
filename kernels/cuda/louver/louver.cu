// louver.cu - the Louver halfspace search (louver-index) on the GPU. CPU
// twin: kernels/cpu/louver_search.cpp, search() and dense_scan(); the
// comparison test is in tests/unit/louver-index.cpp.
//
// One thread per (query, key): blocks of 256 consecutive keys along x,
// queries along y (a block steps through the queries gridDim.y apart). The
// per-query tables, norms, cut and float error unit come from the CPU
// (louver::prepare_query), and the key pass repeats every float operation of
// the CPU's in the same order, with __fmul_rn / __fadd_rn so that nothing is
// contracted into a fused multiply-add: each key is skipped or scanned
// exactly as on the CPU. A scanned key gets the float32 score in the CPU's
// eight interleaved lanes (the buffer's keys skip it, as on the CPU), then,
// unless that settles it, the float64 exact score in the same eight lanes
// and the same final left-to-right sum: the same score, bit for bit. Hits go
// to a global buffer through a warp-aggregated atomic counter; when the buffer
// overflows, the search runs again with a buffer of the counted size.
#include <algorithm>
#include <cmath>
#include <memory>
#include <new>
#include <vector>

#include "../common.cuh"

namespace nk::cuda {

namespace {

constexpr int kThreads = 256;
/// Per-query tables of at most this many floats (16 KiB) are staged in
/// shared memory; larger ones are read through the read-only cache.
constexpr long kSharedTableFloats = 4096;

struct LouverArgs {
  const float* keys;               // [n, d]
  const float* key_norm;           // [n]
  const unsigned short* code16;    // [S][coded]
  const unsigned short* residual16;  // [S][coded]
  const float* queries;            // [M, d]
  const float* tables;             // [M][table_size]
  const int* table_offset;         // [S + 1]
  const float* q_norm;             // [M][S]
  const double* cut;               // [M]
  const double* prune_cut;         // [M]
  const float* q_rest;             // [M]
  const float* rest_norm;          // [coded]
  const double* unit;              // [M]
  const double* threshold;         // [M]
  unsigned long long* hit_key;     // [capacity]: query << 32 | key
  double* hit_score;               // [capacity]
  unsigned long long* hit_count;   // hits found (may exceed capacity)
  unsigned long long capacity;
  unsigned long long* scanned;     // [M]
  int n, dims, coded, subspaces, warm, query_count, table_size;
  bool dense;
};

/// p[0..4); 16-byte aligned when kVec4.
template <bool kVec4>
__device__ __forceinline__ void load4(const float* __restrict__ p, float (&v)[4]) {
  if constexpr (kVec4) {
    const float4 x = __ldg(reinterpret_cast<const float4*>(p));
    v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w;
  } else {
#pragma unroll
    for (int l = 0; l < 4; ++l) v[l] = __ldg(p + l);
  }
}

/// louver's fast_score: float32 products and sums, element j in lane j % 8,
/// then the lanes summed left to right from 0.
template <bool kVec4>
__device__ __forceinline__ float fast_score(const float* __restrict__ q, const float* __restrict__ k, int dims) {
  float lane[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
  int j = 0;
#pragma unroll 1  // unrolled further, ptxas spills at the 64 registers of four blocks per SM
  for (; j + 8 <= dims; j += 8) {
#pragma unroll
    for (int half = 0; half < 8; half += 4) {
      float qv[4], kv[4];
      load4<kVec4>(q + j + half, qv);
      load4<kVec4>(k + j + half, kv);
#pragma unroll
      for (int l = 0; l < 4; ++l) lane[half + l] = __fadd_rn(lane[half + l], __fmul_rn(qv[l], kv[l]));
    }
  }
#pragma unroll
  for (int l = 0; l < 8; ++l) {
    if (j + l < dims) lane[l] = __fadd_rn(lane[l], __fmul_rn(__ldg(q + j + l), __ldg(k + j + l)));
  }
  float sum = 0.f;
#pragma unroll
  for (int l = 0; l < 8; ++l) sum = __fadd_rn(sum, lane[l]);
  return sum;
}

/// louver::exact_score: the same lanes in float64 (the products are exact).
template <bool kVec4>
__device__ __forceinline__ double exact_score(const float* __restrict__ q, const float* __restrict__ k, int dims) {
  double lane[8] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
  int j = 0;
#pragma unroll 1  // unrolled further, ptxas spills at the 64 registers of four blocks per SM
  for (; j + 8 <= dims; j += 8) {
#pragma unroll
    for (int half = 0; half < 8; half += 4) {
      float qv[4], kv[4];
      load4<kVec4>(q + j + half, qv);
      load4<kVec4>(k + j + half, kv);
#pragma unroll
      for (int l = 0; l < 4; ++l) {
        lane[half + l] = __dadd_rn(lane[half + l], __dmul_rn(static_cast<double>(qv[l]), static_cast<double>(kv[l])));
      }
    }
  }
#pragma unroll
  for (int l = 0; l < 8; ++l) {
    if (j + l < dims) {
      lane[l] = __dadd_rn(lane[l], __dmul_rn(static_cast<double>(__ldg(q + j + l)), static_cast<double>(__ldg(k + j + l))));
    }
  }
  double sum = 0.0;
#pragma unroll
  for (int l = 0; l < 8; ++l) sum = __dadd_rn(sum, lane[l]);
  return sum;
}

template <bool kSharedTables, bool kVec4>
__global__ void __launch_bounds__(kThreads, 4) louver_search_kernel(LouverArgs a) {
  extern __shared__ float shared_tables[];
  __shared__ unsigned int block_scanned;
  constexpr unsigned kAll = 0xffffffffu;
  const int lane_id = static_cast<int>(threadIdx.x & 31);
  const int key = static_cast<int>(blockIdx.x) * kThreads + static_cast<int>(threadIdx.x);
  const bool valid = key < a.n;
  // Every thread of the block runs every iteration: the ballots and barriers
  // below are reached by all of them.
  for (int m = static_cast<int>(blockIdx.y); m < a.query_count; m += static_cast<int>(gridDim.y)) {
    const float* tables = a.tables + static_cast<long>(m) * a.table_size;
    if (threadIdx.x == 0) block_scanned = 0;
    if constexpr (kSharedTables) {
      for (int e = static_cast<int>(threadIdx.x); e < a.table_size; e += kThreads) shared_tables[e] = __ldg(tables + e);
    }
    __syncthreads();

    // The bound pass, in the CPU's order: for each subspace, + |q_s| rho_s, then + table[s][code].
    bool scan = false;
    if (valid) {
      if (a.dense || key >= a.coded) {
        scan = true;
      } else {
        const float* norm = a.q_norm + static_cast<long>(m) * a.subspaces;
        float bound = 0.f, partial = 0.f;
        for (int s = 0; s < a.subspaces; ++s) {
          const long at = static_cast<long>(s) * a.coded + key;
          const float residual = __uint_as_float(static_cast<unsigned>(__ldg(a.residual16 + at)) << 16);
          bound = __fadd_rn(bound, __fmul_rn(__ldg(norm + s), residual));
          const int entry = __ldg(a.table_offset + s) + static_cast<int>(__ldg(a.code16 + at));
          float term;
          if constexpr (kSharedTables) {
            term = shared_tables[entry];
          } else {
            term = __ldg(tables + entry);
          }
          bound = __fadd_rn(bound, term);
          if (s + 1 == a.warm) partial = bound;
        }
        // The CPU skips when bound < cut, or when the norm test fails: the
        // product of the two floats is exact in double, so fused or not it
        // gives the CPU's sum.
        const double norm_bound = __dadd_rn(static_cast<double>(partial),
                                            __dmul_rn(static_cast<double>(__ldg(a.q_rest + m)), static_cast<double>(__ldg(a.rest_norm + key))));
        scan = !(static_cast<double>(bound) < __ldg(a.cut + m)) && !(norm_bound < __ldg(a.prune_cut + m));
      }
    }
    const unsigned scanning = __ballot_sync(kAll, scan);
    if (lane_id == 0 && scanning) atomicAdd(&block_scanned, static_cast<unsigned>(__popc(scanning)));

    bool hit = false;
    double score = 0.0;
    if (scan) {
      const float* q = a.queries + static_cast<long>(m) * a.dims;
      const float* k = a.keys + static_cast<long>(key) * a.dims;
      const double threshold = __ldg(a.threshold + m);
      bool settled = false;
      if (a.dense || key < a.coded) {  // the buffer's keys go straight to the exact score, as on the CPU
        const float fast = fast_score<kVec4>(q, k, a.dims);
        const double slack = __dmul_rn(__ldg(a.unit + m), static_cast<double>(__ldg(a.key_norm + key)));
        settled = __dadd_rn(static_cast<double>(fast), slack) < threshold;
      }
      if (!settled) {
        score = exact_score<kVec4>(q, k, a.dims);
        hit = score >= threshold;
      }
    }
    // One atomic per warp for its hits; each hit takes the slot of its rank.
    const unsigned hits = __ballot_sync(kAll, hit);
    if (hits) {
      unsigned long long base = 0;
      if (lane_id == 0) base = atomicAdd(a.hit_count, static_cast<unsigned long long>(__popc(hits)));
      base = __shfl_sync(kAll, base, 0);
      if (hit) {
        const unsigned long long slot = base + static_cast<unsigned long long>(__popc(hits & ((1u << lane_id) - 1u)));
        if (slot < a.capacity) {
          a.hit_key[slot] = (static_cast<unsigned long long>(m) << 32) | static_cast<unsigned long long>(key);
          a.hit_score[slot] = score;
        }
      }
    }
    __syncthreads();  // block_scanned is complete, and the shared tables are no longer read
    if (threadIdx.x == 0 && block_scanned) atomicAdd(a.scanned + m, static_cast<unsigned long long>(block_scanned));
  }
}

using Kernel = void (*)(LouverArgs);

Kernel pick_kernel(bool shared_tables, bool vec4) {
  if (shared_tables) return vec4 ? louver_search_kernel<true, true> : louver_search_kernel<true, false>;
  return vec4 ? louver_search_kernel<false, true> : louver_search_kernel<false, false>;
}


}  // namespace

int louver_search_f32(const float* keys, const float* key_norm, long n, long dims, long coded, long subspaces,
                      const unsigned short* code16, const unsigned short* residual16, const float* queries,
                      long query_count, const float* tables, const long* table_offset, const float* q_norm,
                      const double* cut, const double* prune_cut, const float* q_rest, const float* rest_norm,
                      long warm, const double* unit, const double* threshold, int dense, int repeats,
                      long* scanned, nk_hit_sink sink, void* sink_context, nk_cuda_timing* timing, char* error,
                      size_t error_size) {
  constexpr long kLimit = 1L << 31;
  if (n < 0 || n >= kLimit || dims < 1 || dims >= kLimit || n * dims >= (1L << 40) || query_count < 0 ||
      query_count >= kLimit || coded < 0 || coded > n || !sink || (query_count && !scanned)) {
    set_error(error, error_size, "louver_search: unsupported shape (n and M below 2^31, 0 <= coded <= n)");
    return -1;
  }
  if (n && query_count && (!keys || !key_norm || !queries || !unit || !threshold)) {
    set_error(error, error_size, "louver_search: missing keys, queries or thresholds");
    return -1;
  }
  const bool bound_pass = !dense && coded > 0;
  long table_size = 0;
  std::vector<int> offsets;
  if (bound_pass && query_count) {
    if (subspaces < 1 || subspaces >= kLimit || !code16 || !residual16 || !tables || !table_offset || !q_norm || !cut ||
        !prune_cut || !q_rest || !rest_norm || warm < 1 || warm > subspaces) {
      set_error(error, error_size, "louver_search: missing codes, residuals, norms or per-query tables");
      return -1;
    }
    table_size = table_offset[subspaces];
    if (table_offset[0] != 0 || table_size < 1 || table_size >= kLimit || subspaces * coded >= (1L << 40)) {
      set_error(error, error_size, "louver_search: table offsets out of range");
      return -1;
    }
    for (long s = 0; s <= subspaces; ++s) {
      if (s && table_offset[s] < table_offset[s - 1]) {
        set_error(error, error_size, "louver_search: table offsets must not decrease");
        return -1;
      }
      offsets.push_back(static_cast<int>(table_offset[s]));
    }
  }
  nk_cuda_timing local{};
  if (n == 0 || query_count == 0) {
    for (long m = 0; m < query_count; ++m) scanned[m] = 0;
    if (sink(sink_context, 0, nullptr, nullptr) != 0) {
      set_error(error, error_size, "louver_search: the caller could not take the hits");
      return -1;
    }
    if (timing) *timing = local;
    return 0;
  }

  Timer timer;
  float ms = 0;
  const size_t row_floats = static_cast<size_t>(dims);
  DeviceBuffer d_keys, d_norm, d_queries, d_unit, d_threshold, d_code, d_residual, d_tables, d_offset, d_qnorm, d_cut;
  DeviceBuffer d_prune_cut, d_q_rest, d_rest_norm;
  NK_CUDA_TRY(timer.start());
  NK_CUDA_TRY(upload(d_keys, keys, sizeof(float) * row_floats * static_cast<size_t>(n)));
  NK_CUDA_TRY(upload(d_norm, key_norm, sizeof(float) * static_cast<size_t>(n)));
  NK_CUDA_TRY(upload(d_queries, queries, sizeof(float) * row_floats * static_cast<size_t>(query_count)));
  NK_CUDA_TRY(upload(d_unit, unit, sizeof(double) * static_cast<size_t>(query_count)));
  NK_CUDA_TRY(upload(d_threshold, threshold, sizeof(double) * static_cast<size_t>(query_count)));
  if (bound_pass) {
    const size_t codes = static_cast<size_t>(subspaces) * static_cast<size_t>(coded);
    NK_CUDA_TRY(upload(d_code, code16, sizeof(unsigned short) * codes));
    NK_CUDA_TRY(upload(d_residual, residual16, sizeof(unsigned short) * codes));
    NK_CUDA_TRY(upload(d_tables, tables, sizeof(float) * static_cast<size_t>(table_size) * static_cast<size_t>(query_count)));
    NK_CUDA_TRY(upload(d_offset, offsets.data(), sizeof(int) * offsets.size()));
    NK_CUDA_TRY(upload(d_qnorm, q_norm, sizeof(float) * static_cast<size_t>(subspaces) * static_cast<size_t>(query_count)));
    NK_CUDA_TRY(upload(d_cut, cut, sizeof(double) * static_cast<size_t>(query_count)));
    NK_CUDA_TRY(upload(d_prune_cut, prune_cut, sizeof(double) * static_cast<size_t>(query_count)));
    NK_CUDA_TRY(upload(d_q_rest, q_rest, sizeof(float) * static_cast<size_t>(query_count)));
    NK_CUDA_TRY(upload(d_rest_norm, rest_norm, sizeof(float) * static_cast<size_t>(coded)));
  }
  NK_CUDA_TRY(timer.stop(&ms));
  local.upload_ms = ms;

  // Set-up: the hit buffer (a guess; grown to the counted size if it overflows),
  // the counters, and the kernel itself (loaded now rather than inside the timed run).
  const bool shared_tables = bound_pass && table_size <= kSharedTableFloats;
  const bool vec4 = dims % 4 == 0;
  const Kernel kernel = pick_kernel(shared_tables, vec4);
  const size_t shared_bytes = shared_tables ? sizeof(float) * static_cast<size_t>(table_size) : 0;
  const unsigned long long pairs = static_cast<unsigned long long>(n) * static_cast<unsigned long long>(query_count);
  unsigned long long capacity = std::min(pairs, std::min(1ull << 24, std::max(1ull << 16, pairs / 32)));
  auto d_hit_key = std::make_unique<DeviceBuffer>();
  auto d_hit_score = std::make_unique<DeviceBuffer>();
  DeviceBuffer d_count, d_scanned;
  NK_CUDA_TRY(timer.start());
  NK_CUDA_TRY(d_hit_key->allocate(sizeof(unsigned long long) * capacity));
  NK_CUDA_TRY(d_hit_score->allocate(sizeof(double) * capacity));
  NK_CUDA_TRY(d_count.allocate(sizeof(unsigned long long)));
  NK_CUDA_TRY(d_scanned.allocate(sizeof(unsigned long long) * static_cast<size_t>(query_count)));
  cudaFuncAttributes attributes{};
  NK_CUDA_TRY(cudaFuncGetAttributes(&attributes, kernel));
  NK_CUDA_TRY(timer.stop(&ms));
  local.setup_ms = ms;

  LouverArgs a{};
  a.keys = static_cast<const float*>(d_keys.get());
  a.key_norm = static_cast<const float*>(d_norm.get());
  a.queries = static_cast<const float*>(d_queries.get());
  a.unit = static_cast<const double*>(d_unit.get());
  a.threshold = static_cast<const double*>(d_threshold.get());
  if (bound_pass) {
    a.code16 = static_cast<const unsigned short*>(d_code.get());
    a.residual16 = static_cast<const unsigned short*>(d_residual.get());
    a.tables = static_cast<const float*>(d_tables.get());
    a.table_offset = static_cast<const int*>(d_offset.get());
    a.q_norm = static_cast<const float*>(d_qnorm.get());
    a.cut = static_cast<const double*>(d_cut.get());
    a.prune_cut = static_cast<const double*>(d_prune_cut.get());
    a.q_rest = static_cast<const float*>(d_q_rest.get());
    a.rest_norm = static_cast<const float*>(d_rest_norm.get());
  }
  a.hit_key = static_cast<unsigned long long*>(d_hit_key->get());
  a.hit_score = static_cast<double*>(d_hit_score->get());
  a.hit_count = static_cast<unsigned long long*>(d_count.get());
  a.capacity = capacity;
  a.scanned = static_cast<unsigned long long*>(d_scanned.get());
  a.n = static_cast<int>(n), a.dims = static_cast<int>(dims), a.coded = static_cast<int>(coded);
  a.subspaces = bound_pass ? static_cast<int>(subspaces) : 0;
  a.warm = bound_pass ? static_cast<int>(warm) : 0;
  a.query_count = static_cast<int>(query_count), a.table_size = static_cast<int>(table_size);
  a.dense = dense != 0;

  const dim3 grid(static_cast<unsigned>((n + kThreads - 1) / kThreads), static_cast<unsigned>(std::min(query_count, 65535L)));
  double best = INFINITY;
  unsigned long long found = 0;
  int grown = 0;
  for (int r = 0; r < std::max(1, repeats); ++r) {
    NK_CUDA_TRY(timer.start());
    NK_CUDA_TRY(cudaMemsetAsync(d_count.get(), 0, sizeof(unsigned long long), nullptr));
    NK_CUDA_TRY(cudaMemsetAsync(d_scanned.get(), 0, sizeof(unsigned long long) * static_cast<size_t>(query_count), nullptr));
    kernel<<<grid, kThreads, shared_bytes>>>(a);
    NK_CUDA_TRY(cudaGetLastError());
    NK_CUDA_TRY(timer.stop(&ms));
    NK_CUDA_TRY(cudaMemcpy(&found, d_count.get(), sizeof found, cudaMemcpyDeviceToHost));
    if (found > a.capacity) {  // the buffer overflowed: run again with room for every hit (not timed)
      if (++grown > 2) {
        set_error(error, error_size, "louver_search: the number of hits changed between runs");
        return -1;
      }
      d_hit_key = std::make_unique<DeviceBuffer>();
      d_hit_score = std::make_unique<DeviceBuffer>();
      NK_CUDA_TRY(d_hit_key->allocate(sizeof(unsigned long long) * found));
      NK_CUDA_TRY(d_hit_score->allocate(sizeof(double) * found));
      a.hit_key = static_cast<unsigned long long*>(d_hit_key->get());
      a.hit_score = static_cast<double*>(d_hit_score->get());
      a.capacity = found;
      --r;
      continue;
    }
    best = std::min<double>(best, ms);
  }
  local.compute_ms = best;

  std::vector<unsigned long long> counts, hit_keys;
  std::vector<double> hit_scores;
  try {
    counts.resize(static_cast<size_t>(query_count));
    hit_keys.resize(found);
    hit_scores.resize(found);
  } catch (const std::bad_alloc&) {
    set_error(error, error_size, "louver_search: out of host memory for the hits");
    return -1;
  }
  NK_CUDA_TRY(timer.start());
  NK_CUDA_TRY(cudaMemcpy(counts.data(), d_scanned.get(), sizeof(unsigned long long) * counts.size(), cudaMemcpyDeviceToHost));
  if (found) {
    NK_CUDA_TRY(cudaMemcpy(hit_keys.data(), a.hit_key, sizeof(unsigned long long) * found, cudaMemcpyDeviceToHost));
    NK_CUDA_TRY(cudaMemcpy(hit_scores.data(), a.hit_score, sizeof(double) * found, cudaMemcpyDeviceToHost));
  }
  NK_CUDA_TRY(timer.stop(&ms));
  local.download_ms = ms;
  for (long m = 0; m < query_count; ++m) scanned[m] = static_cast<long>(counts[static_cast<size_t>(m)]);
  if (sink(sink_context, static_cast<long>(found), hit_keys.data(), hit_scores.data()) != 0) {
    set_error(error, error_size, "louver_search: the caller could not take the hits");
    return -1;
  }
  if (timing) *timing = local;
  return 0;
}

}  // namespace nk::cuda

extern const nk_cuda_louver nk_cuda_louver_table = {
    .header = nk::cuda::family_header<nk_cuda_louver>(),
    .search_f32 = nk::cuda::louver_search_f32,
};
