// format.cpp - row layouts and query forms (format.hpp).
#include "snapmla-decode/format.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "nk/error.hpp"
#include "nk/kernels/lowp.hpp"

namespace snapmla {

using nk::kernels::from_bf16;
using nk::kernels::from_e4m3;
using nk::kernels::to_bf16;
using nk::kernels::to_e4m3;

const char* layout_name(Layout layout) {
  switch (layout) {
    case Layout::bf16: return "bf16";
    case Layout::flashmla656: return "flashmla656";
    case Layout::snapmla644: return "snapmla644";
    case Layout::fp8_naive: return "fp8-naive";
  }
  return "?";
}

const std::vector<Layout>& all_layouts() {
  static const std::vector<Layout> layouts{Layout::bf16, Layout::flashmla656, Layout::snapmla644, Layout::fp8_naive};
  return layouts;
}

Layout parse_layout(const std::string& name, const std::string& option) {
  for (Layout l : all_layouts())
    if (name == layout_name(l)) return l;
  throw nk::usage_error(option + ": unknown layout '" + name + "' (bf16, flashmla656, snapmla644 or fp8-naive)");
}

int64_t row_bytes(Layout layout, int64_t dc, int64_t dr) {
  switch (layout) {
    case Layout::bf16: return 2 * (dc + dr);
    case Layout::flashmla656: return dc + 4 * (dc / kFlashTile) + 2 * dr;
    case Layout::snapmla644: return dc + 4 + 2 * dr;
    case Layout::fp8_naive: return dc + dr + 4;
  }
  return 0;
}

bool token_scaled(Layout layout) { return layout == Layout::snapmla644 || layout == Layout::fp8_naive; }

float e4m3_scale(const float* x, int64_t n) {
  float amax = 0;
  for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
  return amax > 0 ? amax / nk::kernels::kE4m3Max : 1.0f;
}

namespace {

void put_f32(uint8_t* at, float v) { std::memcpy(at, &v, 4); }
float get_f32(const uint8_t* at) {
  float v;
  std::memcpy(&v, at, 4);
  return v;
}
void put_bf16(uint8_t* at, float v) {
  const uint16_t b = to_bf16(v);
  at[0] = static_cast<uint8_t>(b & 0xff);
  at[1] = static_cast<uint8_t>(b >> 8);
}
float get_bf16(const uint8_t* at) { return from_bf16(static_cast<uint16_t>(at[0] | (at[1] << 8))); }

}  // namespace

void encode_row(Layout layout, const float* c, const float* kr, int64_t dc, int64_t dr, uint8_t* out) {
  switch (layout) {
    case Layout::bf16:
      for (int64_t i = 0; i < dc; ++i) put_bf16(out + 2 * i, c[i]);
      for (int64_t i = 0; i < dr; ++i) put_bf16(out + 2 * (dc + i), kr[i]);
      return;
    case Layout::flashmla656: {
      const int64_t tiles = dc / kFlashTile;
      for (int64_t t = 0; t < tiles; ++t) {
        const float s = e4m3_scale(c + t * kFlashTile, kFlashTile);
        put_f32(out + dc + 4 * t, s);
        for (int64_t i = t * kFlashTile; i < (t + 1) * kFlashTile; ++i) out[i] = to_e4m3(c[i] / s);
      }
      for (int64_t i = 0; i < dr; ++i) put_bf16(out + dc + 4 * tiles + 2 * i, kr[i]);
      return;
    }
    case Layout::snapmla644: {
      const float s = e4m3_scale(c, dc);
      for (int64_t i = 0; i < dc; ++i) out[i] = to_e4m3(c[i] / s);
      put_f32(out + dc, s);
      for (int64_t i = 0; i < dr; ++i) put_bf16(out + dc + 4 + 2 * i, kr[i] / s);
      return;
    }
    case Layout::fp8_naive: {
      float amax = 0;  // one scale over all d_c + d_R values
      for (int64_t i = 0; i < dc; ++i) amax = std::max(amax, std::fabs(c[i]));
      for (int64_t i = 0; i < dr; ++i) amax = std::max(amax, std::fabs(kr[i]));
      const float scale = amax > 0 ? amax / nk::kernels::kE4m3Max : 1.0f;
      for (int64_t i = 0; i < dc; ++i) out[i] = to_e4m3(c[i] / scale);
      for (int64_t i = 0; i < dr; ++i) out[dc + i] = to_e4m3(kr[i] / scale);
      put_f32(out + dc + dr, scale);
      return;
    }
  }
}

float decode_row(Layout layout, const uint8_t* row, int64_t dc, int64_t dr, float* c, float* kr) {
  switch (layout) {
    case Layout::bf16:
      for (int64_t i = 0; i < dc; ++i) c[i] = get_bf16(row + 2 * i);
      for (int64_t i = 0; i < dr; ++i) kr[i] = get_bf16(row + 2 * (dc + i));
      return 1.0f;
    case Layout::flashmla656: {
      const int64_t tiles = dc / kFlashTile;
      for (int64_t t = 0; t < tiles; ++t) {
        const float s = get_f32(row + dc + 4 * t);
        for (int64_t i = t * kFlashTile; i < (t + 1) * kFlashTile; ++i) c[i] = from_bf16(to_bf16(from_e4m3(row[i]) * s));
      }
      for (int64_t i = 0; i < dr; ++i) kr[i] = get_bf16(row + dc + 4 * tiles + 2 * i);
      return 1.0f;
    }
    case Layout::snapmla644:
      for (int64_t i = 0; i < dc; ++i) c[i] = from_e4m3(row[i]);
      for (int64_t i = 0; i < dr; ++i) kr[i] = get_bf16(row + dc + 4 + 2 * i);
      return get_f32(row + dc);
    case Layout::fp8_naive:
      for (int64_t i = 0; i < dc; ++i) c[i] = from_e4m3(row[i]);
      for (int64_t i = 0; i < dr; ++i) kr[i] = from_e4m3(row[dc + i]);
      return get_f32(row + dc + dr);
  }
  return 1.0f;
}

float prepare_query(Layout layout, const float* q, int64_t dc, int64_t dr, bool q_fp32, float* qc, float* qr) {
  const float* q_r = q + dc;
  switch (layout) {
    case Layout::bf16:
    case Layout::flashmla656:
      for (int64_t i = 0; i < dc; ++i) qc[i] = from_bf16(to_bf16(q[i]));
      for (int64_t i = 0; i < dr; ++i) qr[i] = from_bf16(to_bf16(q_r[i]));
      return 1.0f;
    case Layout::snapmla644: {
      if (q_fp32) {
        std::copy(q, q + dc, qc);
        std::copy(q_r, q_r + dr, qr);
        return 1.0f;
      }
      const float s = e4m3_scale(q, dc);
      for (int64_t i = 0; i < dc; ++i) qc[i] = from_e4m3(to_e4m3(q[i] / s));
      for (int64_t i = 0; i < dr; ++i) qr[i] = from_bf16(to_bf16(q_r[i] / s));
      return s;
    }
    case Layout::fp8_naive: {
      const float s = e4m3_scale(q, dc + dr);
      for (int64_t i = 0; i < dc; ++i) qc[i] = from_e4m3(to_e4m3(q[i] / s));
      for (int64_t i = 0; i < dr; ++i) qr[i] = from_e4m3(to_e4m3(q_r[i] / s));
      return s;
    }
  }
  return 1.0f;
}

}  // namespace snapmla
