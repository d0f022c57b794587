// cuda_families.hpp - the compute families of libnk-cuda.so, one versioned
// table each (the ABI and the loader: nk/cuda_abi.hpp). Each kernel lives in
// kernels/cuda/<family>/ and names its CPU twin, the reference a CUDA-vs-CPU
// test compares it with. Backend-neutral: no CUDA header is needed.
//
// Every entry returns 0 on success, or -1 and fills 'error' (error_size
// bytes) with a one-line reason. Pointers are host pointers; the module copies
// to and from the device. Complex numbers are interleaved (re, im) floats.
#pragma once
#include <cstddef>

#include "nk/cuda_abi.hpp"

extern "C" {

/// Dense linear algebra (cuBLAS). kernels/cuda/blas/.
struct nk_cuda_blas {
  static constexpr const char* family = "blas";
  static constexpr int version = 1;
  nk_cuda_family_header header;
  /// C = A B for row-major A [m,k], B [k,n], C [m,n] (SGEMM).
  /// CPU twin: kernels/cpu/gemm.cpp (Eigen).
  int (*gemm_f32)(const float* a, const float* b, float* c, long m, long n, long k, char* error, size_t error_size);
};

/// Fourier transforms (cuFFT) and pointwise spectral products. kernels/cuda/fft/.
struct nk_cuda_fft {
  static constexpr const char* family = "fft";
  static constexpr int version = 1;
  nk_cuda_family_header header;
  /// Batched real-to-complex FFT of 'batch' rows of length n: out has n/2+1 bins per row.
  /// CPU twin: kernels/cpu/fft.cpp (FFTW).
  int (*rfft_f32)(const float* in, float* out, long n, long batch, char* error, size_t error_size);
  /// Inverse of rfft_f32, scaled by 1/n so that irfft(rfft(x)) = x. CPU twin: kernels/cpu/fft.cpp.
  int (*irfft_f32)(const float* in, float* out, long n, long batch, char* error, size_t error_size);
  /// y[b,h,f] = x[b,h,f] * k[h,f] for b < batch, h < channels, f < bins (complex).
  /// CPU twin: kernels/cpu/spectral.cpp.
  int (*spectral_multiply_c64)(const float* x, const float* k, float* y, long batch, long channels, long bins,
                               char* error, size_t error_size);
};

/// Attention over [heads, length, dims] tensors (dllm-sparse). kernels/cuda/attention/.
struct nk_cuda_attention {
  static constexpr const char* family = "attention";
  static constexpr int version = 1;
  nk_cuda_family_header header;
  /// Block-sparse bidirectional attention, fused (online softmax over the
  /// kept key blocks of each query block), float32. q [H,L,d], k and v
  /// [Hkv,L,d], kv_of [H], keep [H,nb,nb] with nb = ceil(L/block) (null:
  /// dense), d <= 256, block <= 64. out [H,L,d].
  /// CPU twin: tools/dllm-sparse/kernel.cpp (dllm::block_sparse_attention).
  int (*block_sparse_attention_f32)(const float* q, const float* k, const float* v, const int* kv_of,
                                    const unsigned char* keep, long heads, long kv_heads, long length, long dims,
                                    long block, float scale, int repeats, float* out, nk_cuda_timing* timing,
                                    char* error, size_t error_size);
  /// Dense attention through cuBLAS: S = scale Q K^T (SGEMM), row softmax,
  /// O = P V (SGEMM), heads in groups whose scores fit in memory. Same layout.
  /// CPU twin: tools/dllm-sparse/kernel.cpp (dllm::dense_attention).
  int (*dense_attention_cublas_f32)(const float* q, const float* k, const float* v, const int* kv_of, long heads,
                                    long kv_heads, long length, long dims, float scale, int repeats, float* out,
                                    nk_cuda_timing* timing, char* error, size_t error_size);
};

/// One FFT-size bucket of a packed convolution plan: 'count' windows, each 6
/// integers (row, doc_begin, doc_end, window_begin, out_begin, out_end): the
/// window's fft_size inputs start at window_begin of that batch row, inputs
/// outside [doc_begin, doc_end) are zero, and outputs [out_begin, out_end) are
/// kept. The filter spectrum is that of taps k[h, 0:taps].
struct nk_conv_bucket {
  long fft_size, taps, count;
  const long* windows;
};

/// Boundary-respecting convolution of packed documents (rubiconv). kernels/cuda/conv/.
struct nk_cuda_conv {
  static constexpr const char* family = "conv";
  static constexpr int version = 1;
  nk_cuda_family_header header;
  /// Causal convolution of packed documents, y [B,L,H] from x [B,L,H] and
  /// k [H,Lk] (bias [H] or null: y += bias x), run as a plan: 'direct'
  /// documents (direct_count windows of 6 integers; only row, doc_begin,
  /// doc_end are read) are convolved directly; every bucket is gathered into
  /// rows of its FFT size, transformed by batched cuFFT, multiplied by its
  /// filter spectrum, transformed back and scattered.
  /// CPU twin: tools/rubiconv/engine.cpp (rubiconv::apply_plan).
  int (*packed_conv_f32)(const float* x, const float* k, const float* bias, float* y, long batch, long length,
                         long channels, long filter_length, const nk_conv_bucket* buckets, long bucket_count,
                         const long* direct, long direct_count, int repeats, nk_cuda_timing* timing, char* error,
                         size_t error_size);
  int (*packed_conv_f64)(const double* x, const double* k, const double* bias, double* y, long batch, long length,
                         long channels, long filter_length, const nk_conv_bucket* buckets, long bucket_count,
                         const long* direct, long direct_count, int repeats, nk_cuda_timing* timing, char* error,
                         size_t error_size);
  /// Gradients of <dy, y> for packed_conv: dx [B,L,H], dk [H,Lk], and dbias
  /// [H] when bias is given (dbias may be null otherwise). buckets[b] holds
  /// the causal windows (dk, and dx of whole documents), anticausal[b] the
  /// look-ahead windows of overlap-save tiles (dx; count 0 otherwise).
  /// CPU twin: tools/rubiconv/grad.cpp.
  int (*packed_conv_grad_f32)(const float* x, const float* k, const float* bias, const float* dy, float* dx,
                              float* dk, float* dbias, long batch, long length, long channels, long filter_length,
                              const nk_conv_bucket* buckets, const nk_conv_bucket* anticausal, long bucket_count,
                              const long* direct, long direct_count, int repeats, nk_cuda_timing* timing, char* error,
                              size_t error_size);
  int (*packed_conv_grad_f64)(const double* x, const double* k, const double* bias, const double* dy, double* dx,
                              double* dk, double* dbias, long batch, long length, long channels, long filter_length,
                              const nk_conv_bucket* buckets, const nk_conv_bucket* anticausal, long bucket_count,
                              const long* direct, long direct_count, int repeats, nk_cuda_timing* timing, char* error,
                              size_t error_size);
};

/// Receives the hits of louver search, in no particular order: 'count'
/// pairs (query << 32 | key) and their scores. The arrays belong to the
/// module and live until the sink returns. Returns 0, or nonzero to make the
/// entry fail.
typedef int (*nk_hit_sink)(void* context, long count, const unsigned long long* query_key, const double* score);

/// Halfspace range search over a KV head (louver-index). kernels/cuda/louver/.
struct nk_cuda_louver {
  static constexpr const char* family = "louver";
  static constexpr int version = 1;
  nk_cuda_family_header header;
  /// Louver halfspace search of one KV head. keys [n,d], key_norm [n] (|k|
  /// rounded up); keys [0, coded) have codes and residuals code16 and
  /// residual16 [S][coded] (residual16: the upper 16 bits of a float).
  /// queries [M,d] with their per-query preparation: tables [M][table_size]
  /// (subspace s's clusters from table_offset[s]; table_offset [S+1] with
  /// table_offset[S] = table_size), q_norm [M][S], cut [M], prune_cut [M],
  /// q_rest [M], unit [M], and threshold [M]; rest_norm [coded] and warm.
  /// Per query, a coded key is skipped when its float bound sum_s (q_norm[s]
  /// residual_s + table[s][code_s]) is below cut, or when its partial float
  /// bound over s < warm plus q_rest rest_norm (in double) is below
  /// prune_cut; any other key, and every key in [coded, n), is scanned; a
  /// coded key whose float score plus unit key_norm is below threshold is a
  /// miss; otherwise the float64 exact score decides (>= threshold). dense !=
  /// 0: every key is scanned (float filter, then exact score), and the code,
  /// table, q_norm, cut, prune_cut, q_rest and rest_norm arguments are not
  /// read (they may be null). Writes scanned [M] and hands the hits to sink.
  /// The search runs max(1, repeats) times; compute_ms is the fastest.
  /// n < 2^31, M < 2^31.
  /// CPU twin: kernels/cpu/louver_search.cpp (nk::louver::search, nk::louver::dense_scan).
  int (*search_f32)(const float* keys, const float* key_norm, long n, long dims, long coded, long subspaces,
                    const unsigned short* code16, const unsigned short* residual16, const float* queries,
                    long query_count, const float* tables, const long* table_offset, const float* q_norm,
                    const double* cut, const double* prune_cut, const float* q_rest, const float* rest_norm,
                    long warm, const double* unit, const double* threshold, int dense, int repeats, long* scanned,
                    nk_hit_sink sink, void* sink_context, nk_cuda_timing* timing, char* error, size_t error_size);
};
}

/// The committee f(x) = sum_j a_j sigma(w_j.x / sqrt d) of teacher-limits over
/// training data kept on the device between calls (the HMC potential and its
/// gradient). kernels/cuda/committee/.
struct nk_cuda_committee {
  static constexpr const char* family = "committee";
  static constexpr int version = 1;
  nk_cuda_family_header header;
  /// Uploads x [n,d] (float32, row-major) and y [n] once; activation 0 tanh,
  /// 1 relu-centered, 2 he2, 3 he3, 4 linear, centred with unit variance
  /// ('scale': tanh's and relu's normalising factor). *state receives the handle.
  int (*create)(const float* x, const double* y, long n, long d, long k, int activation, double scale, void** state,
                char* error, size_t error_size);
  /// loss = 1/2 sum_mu (y_mu - f(x_mu))^2 and grad_w [k,d] = d loss / dW at
  /// w [k,d] and a [k] (host float64; the products in float32 as on the CPU,
  /// the loss summed in float64 in a fixed order).
  /// CPU twin: tools/teacher-limits/committee.cpp (tl::Committee::half_sse).
  int (*half_sse)(void* state, const double* w, const double* a, double* loss, double* grad_w, char* error,
                  size_t error_size);
  /// Frees the state (null: nothing to do).
  int (*destroy)(void* state, char* error, size_t error_size);
};

/// What the device sustains (the probe family): best runs over the budget.
struct nk_device_limits {
  double copy_bytes_per_s;  ///< device-to-device copy: bytes read plus written per second
  double bf16_flops;        ///< cuBLAS BF16 GEMM (FP32 accumulation): FLOP/s
  double memory_bytes;      ///< the device's memory
  long copy_bytes;          ///< bytes per timed copy
  long gemm_size;           ///< m = n = k of the timed GEMM
  int copy_runs, gemm_runs; ///< timed runs of each
  char device[128];         ///< the device's name
};

/// Machine limits of the device (sagesched probe: the roofline's derating).
/// kernels/cuda/probe/.
struct nk_cuda_probe {
  static constexpr const char* family = "probe";
  static constexpr int version = 1;
  nk_cuda_family_header header;
  /// Times 1 GiB device-to-device copies and 8192^3 BF16 GEMMs (half the
  /// budget each, at least 3 runs, at most 1000) after a warm-up; the best
  /// run of each counts. No CPU twin: it measures the device itself.
  int (*device_limits)(double seconds, nk_device_limits* out, char* error, size_t error_size);
};

/// One layer of an nk::nn network for the smoothing family: op 0 flatten
/// (NHWC to torch's C,H,W), 1 linear, 2 conv2d, 3 relu, 4 maxpool (window =
/// stride = kernel); the item shapes around it; weight and bias in torch's
/// layout (host pointers; null for layers without them).
struct nk_nn_layer {
  int op;
  long in_h, in_w, in_c, out_h, out_w, out_c;
  long kernel, stride, pad;
  const float* weight;
  const float* bias;
};

/// Randomized smoothing's class counts on the device (proxy-certify's
/// CERTIFY, PREDICT and calibration draws). kernels/cuda/smoothing/.
struct nk_cuda_smoothing {
  static constexpr const char* family = "smoothing";
  static constexpr int version = 1;
  nk_cuda_family_header header;
  /// Uploads the network (layers[0..count), the last giving 'classes'
  /// logits) and sizes buffers for 'batch' noisy copies per forward.
  int (*create)(const nk_nn_layer* layers, long count, long batch, void** state, char* error, size_t error_size);
  /// counts [items, classes] (int64): for each item i, the arg-max classes of
  /// n copies x_i + sigma eps_j, x [items, values] (NHWC pixels); eps_j from
  /// the stream Rng(seed).split(index[i]).split(phase).split(j) with the
  /// Box-Muller of nk::kernels::fill_normal (the CPU's noise, up to float
  /// rounding). Convolutions by im2col and cuBLAS SGEMM, linear by SGEMM.
  /// CPU twin: tools/proxy-certify/smoothing.cpp (pc::Smoother::counts).
  int (*counts)(void* state, const float* x, const long* index, long items, long values, float sigma,
                unsigned long long seed, unsigned long long phase, long n, long long* counts, nk_cuda_timing* timing,
                char* error, size_t error_size);
  /// Frees the state (null: nothing to do).
  int (*destroy)(void* state, char* error, size_t error_size);
};

extern "C" {
/// Paged MLA decode attention (snapmla-decode). kernels/cuda/mla/.
struct nk_cuda_mla {
  static constexpr const char* family = "mla";
  static constexpr int version = 1;
  nk_cuda_family_header header;
  /// Decode attention of 'batch' rows over 64-token pages [page_count, 64,
  /// row_bytes] of layout 0 = bf16 (BF16 c then k_R; BF16 mma.sync, P
  /// rounded to BF16) or 1 = snapmla644 (E4M3 codes of c/s_t, s_t, BF16
  /// k_R/s_t; FP8 mma.sync for the content scores and for PV with P' = P s_t
  /// quantized per head and page, BF16 mma.sync for the RoPE scores, all in
  /// one FP32 accumulator; compute capability >= 8.9). block_table
  /// [batch, max_pages], lengths [batch] (>= 1, within the pages). Queries
  /// as the kernel multiplies them: q_content [batch, heads, dc] (layout 0:
  /// BF16 bits, 2 bytes each; layout 1: E4M3 codes of q_c/s_q), q_rope
  /// [batch, heads, dr] BF16 bits (layout 1: q_R/s_q), factor [batch, heads]
  /// = softmax_scale s_q. d_c 128, 256 or 512, d_R a multiple of 16 (<=
  /// 256). Each row's pages split into 'splits' parts merged by their maxima
  /// and sums. out [batch, heads, dc], lse [batch, heads] (natural log).
  /// Runs max(1, repeats) times; compute_ms is the fastest.
  /// CPU twin: tools/snapmla-decode/kernel.cpp (snapmla::attend).
  int (*decode_f32)(const unsigned char* pages, long page_count, long row_bytes, int layout, long dc, long dr,
                    const int* block_table, long max_pages, const int* lengths, long batch,
                    const unsigned char* q_content, const unsigned short* q_rope, const float* factor, long heads,
                    long splits, int repeats, float* out, float* lse, nk_cuda_timing* timing, char* error,
                    size_t error_size);
};
}

extern "C" {
/// Block-sparse decoding over an offloaded KV cache (sparda-forecast's
/// engine). kernels/cuda/offload/. The state holds a device pool of KV
/// blocks (slot i: 'block' K rows then 'block' V rows of 'dims' floats), a
/// compute stream and a copy stream, and resident buffers by id (>= 1: the
/// pooled keys the selector scores; every KV row in resident mode). A block
/// reference is 4 longs: buffer (0: the pool), float offset of its K rows,
/// float offset of its V rows, rows to read (0 skips it).
struct nk_cuda_offload {
  static constexpr const char* family = "offload";
  static constexpr int version = 1;
  nk_cuda_family_header header;
  /// A pool of 'slots' blocks, dims <= 256, block >= 1.
  int (*create)(long dims, long block, long slots, void** state, char* error, size_t error_size);
  /// Page-locks host memory [host, host + bytes) until destroy
  /// (cudaHostRegister), so that copies from it are DMA transfers that run
  /// beside the compute stream.
  int (*pin)(void* state, const void* host, size_t bytes, char* error, size_t error_size);
  /// Queues on the copy stream, for i < count, rows[i] K rows from k_src[i]
  /// and as many V rows from v_src[i] (host, [rows, dims] each) into slot
  /// slots[i], then records an event: *transfer receives its id (1, 2, ...).
  int (*copy)(void* state, long count, const long* slots, const float* const* k_src, const float* const* v_src,
              const long* rows, unsigned long long* transfer, char* error, size_t error_size);
  /// Blocks the host until transfer 'transfer' and every earlier one (the
  /// copy stream runs in order) have landed.
  int (*wait)(void* state, unsigned long long transfer, char* error, size_t error_size);
  /// Writes rows on the compute stream (ordered before later attend calls):
  /// for i < count, the K and V row kv[i] (host, [count][2][dims]) at row
  /// row[i] of slot slots[i]: the growing block of each query's own position.
  int (*append)(void* state, long count, const long* slots, const long* row, const float* kv, char* error,
                size_t error_size);
  /// Uploads 'floats' floats from host into resident buffer id (>= 1),
  /// replacing what it held.
  int (*resident)(void* state, long id, const float* host, long floats, char* error, size_t error_size);
  /// The selector's group scores of 'rows' queries q [rows, heads, dims]
  /// (host) against pooled keys [kv_heads, nb[r], dims] in resident buffer
  /// pooled[2r] from float offset pooled[2r+1]: for group g and block j <
  /// nc[r], softmax = 1: sum over the group's heads (h / (heads/kv_heads) ==
  /// g) of softmax_j(scale q_h . pooled_gj); softmax = 0 (heads == kv_heads:
  /// one Forecast query per group): scale q_g . pooled_gj. scores [rows,
  /// kv_heads, max_nc] (host; entries from nc[r] on are 0). max_nc: at most
  /// a block's opt-in shared memory / 4 floats (about 57,000 on an H100);
  /// compute_ms: the call's wall time (copies included).
  /// CPU twin: common/lm/src/block_select.cpp
  /// (nk::lm::group_scores_at), tools/sparda-forecast/forecast.cpp (the Forecast's dot products).
  int (*score)(void* state, const float* q, long rows, long heads, long kv_heads, const long* pooled, const long* nb,
               const long* nc, long max_nc, int softmax, float scale, float* scores, nk_cuda_timing* timing,
               char* error, size_t error_size);
  /// Sparse decode attention: out [rows, heads, dims] (host) for q [rows,
  /// heads, dims] (host); row r's heads of group g attend over the blocks
  /// blocks[4 offsets[r kv_heads + g] ..] up to offsets[r kv_heads + g + 1]
  /// (offsets [rows kv_heads + 1]), softmax of scale q.k over every row
  /// read, in float32 with an online softmax. Waits for nothing on the copy
  /// stream: call wait first. compute_ms as in score.
  /// CPU twin: tools/sparda-forecast/engine.cpp
  /// (sparda::sparse_attend).
  int (*attend)(void* state, const float* q, long rows, long heads, long kv_heads, const long* offsets,
                const long* blocks, float scale, float* out, nk_cuda_timing* timing, char* error, size_t error_size);
  /// Unregisters the pinned memory and frees the state (null: nothing to do).
  int (*destroy)(void* state, char* error, size_t error_size);
};
}

/// Every family of the module, X(type): the module's lookup and the test that
/// loads each family and checks that every entry is set both iterate it.
#define NK_CUDA_FAMILIES(X) X(nk_cuda_core) X(nk_cuda_blas) X(nk_cuda_fft) X(nk_cuda_attention) X(nk_cuda_conv) X(nk_cuda_louver) \
  X(nk_cuda_committee) X(nk_cuda_probe) X(nk_cuda_smoothing) X(nk_cuda_mla) X(nk_cuda_offload)
