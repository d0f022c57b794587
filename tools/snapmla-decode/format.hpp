// format.hpp - the KV-cache row layouts of MLA decoding (one row per token:
// the latent c [d_c] and the decoupled RoPE key k_R [d_R]) and the query
// forms that go with them. Byte offsets are the issue's, little-endian.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace snapmla {

enum class Layout { bf16, flashmla656, snapmla644, fp8_naive };

/// "bf16", "flashmla656", "snapmla644", "fp8-naive".
const char* layout_name(Layout layout);
/// The layout of a name; a usage error (exit 2) naming 'option' otherwise.
Layout parse_layout(const std::string& name, const std::string& option);
const std::vector<Layout>& all_layouts();

/// The latent output's PV product: fp8 quantizes P' = P s_t per head and
/// 64-token block to E4M3 (SnapMLA's (iii)); fp32 keeps it.
enum class Pv { fp32, fp8 };

/// Tokens per page (and per FP8 block of P').
inline constexpr int64_t kPageTokens = 64;
/// flashmla656's tile of c with one scale.
inline constexpr int64_t kFlashTile = 128;

/// Bytes of one token's row:
///   bf16         2 (d_c + d_R): BF16 c, then BF16 k_R                          (1152 at 512/64)
///   flashmla656  d_c + 4 d_c/128 + 2 d_R: codes of c per 128-tile, the tiles'
///                fp32 scales at d_c, BF16 k_R at d_c + 4 d_c/128               (656)
///   snapmla644   d_c + 4 + 2 d_R: codes of c/s at 0, s = amax|c|/448 fp32 at
///                d_c (a zero row: s = 1), BF16 of k_R/s at d_c + 4            (644)
///   fp8-naive    d_c + d_R + 4: codes of [c, k_R]/s, one s over all, at d_c + d_R (580)
int64_t row_bytes(Layout layout, int64_t dc, int64_t dr);

/// Whether the layout stores codes of values divided by a per-token scale s_t
/// (snapmla644, fp8-naive): the kernel then multiplies scores by s_t and folds
/// s_t into P.
bool token_scaled(Layout layout);

/// Encodes one token's row (c [dc], kr [dr], finite) into 'out' (row_bytes).
void encode_row(Layout layout, const float* c, const float* kr, int64_t dc, int64_t dr, uint8_t* out);

/// What the attention kernel reads of a row: the values it multiplies (c
/// [dc], kr [dr]; for token-scaled layouts the stored codes' values, c/s and
/// k_R/s) and the token's scale s (1 for bf16 and flashmla656, whose c is
/// dequantized to BF16 as FlashMLA does before its MMA).
float decode_row(Layout layout, const uint8_t* row, int64_t dc, int64_t dr, float* c, float* kr);

/// One (batch row, head) query as the kernel multiplies it: qc [dc], qr [dr]
/// and the factor s_q of its score (the score is scale s_q s_t (qc.c + qr.kr)).
///   bf16, flashmla656   BF16-rounded q_c, q_R; s_q = 1
///   snapmla644          codes of q_c / s_q (s_q = amax|q_c|/448, 1 for zero),
///                       BF16 of q_R / s_q (pre-posed); with q_fp32 q_c and q_R
///                       unquantized and s_q = 1
///   fp8-naive           codes of [q_c, q_R] / s_q, one s_q over all
float prepare_query(Layout layout, const float* q, int64_t dc, int64_t dr, bool q_fp32, float* qc, float* qr);

/// s = amax|x| / 448 over n values, 1 for an all-zero vector.
float e4m3_scale(const float* x, int64_t n);

}  // namespace snapmla
