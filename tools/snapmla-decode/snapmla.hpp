// snapmla.hpp - the verbs of snapmla-decode: FP8 MLA decoding with RoPE-aware
// per-token KV quantization (SnapMLA) beside BF16, FlashMLA's FP8 layout and
// a one-scale FP8 baseline.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "nk/run_env.hpp"
#include "snapmla-decode/format.hpp"

namespace snapmla {

inline constexpr const char* kCacheSchema = "snapmla-decode.cache/1";
inline constexpr const char* kCodesSchema = "snapmla-decode.codes/1";
inline constexpr const char* kKvSchema = "snapmla-decode.kv/1";
inline constexpr const char* kAttendSchema = "snapmla-decode.attend/1";
inline constexpr const char* kEvalSchema = "snapmla-decode.eval/1";
inline constexpr const char* kSpeedSchema = "snapmla-decode.speed/1";
inline constexpr const char* kServeSchema = "snapmla-decode.serve/1";

struct GenOptions {
  std::string output = "-";
  bool no_clobber = false;
  int64_t batch = 1, tokens = 4096, heads = 16, dc = 512, dr = 64;
  std::string profile = "deepseek";  ///< deepseek | iid
  bool ragged = false;               ///< lengths uniform in [tokens/2, tokens]
  double content_scale = 0.01, channel_sigma = 0.5;  ///< c ~ N(0, (content_scale g_j)^2), g_j lognormal(0, sigma)
  int64_t heavy_pairs = 2;                           ///< RoPE pairs (the lowest frequencies) with massive values
  double heavy_scale = 1000, heavy_sigma = 0.25;      ///< their magnitude: heavy_scale * lognormal(0, heavy_sigma)
  double query_content = 80, query_rope = 2.6, query_heavy = 0.01;
  double theta = 10000, softmax_scale = 0;  ///< 0: 1/sqrt(192) (DeepSeek's 128 + 64)
};
void gen(const GenOptions& options, const nk::RunEnv& env);

struct CastOptions {
  std::string input = "-", output = "-", to = "e4m3";
  bool no_clobber = false;
};
void cast(const CastOptions& options, const nk::RunEnv& env);

struct QuantOptions {
  std::string input = "-", output = "-";
  bool no_clobber = false;
  Layout layout = Layout::snapmla644;
};
void quant(const QuantOptions& options, const nk::RunEnv& env);

struct AttendOptionsCli {
  std::string input = "-", queries, output = "-";
  bool no_clobber = false;
  std::string pv;  ///< fp8 | fp32 | "" (the layout's default)
  int64_t splits = 0;
  double softmax_scale = 0;  ///< 0: the queries file's attribute
  bool q_fp32 = false, plain_scores = false;
  int repeats = 1;
};
void attend_verb(const AttendOptionsCli& options, const nk::RunEnv& env);

struct EvalOptions {
  std::string input = "-", output;
  bool no_clobber = false;
  std::vector<std::string> layouts;  ///< empty: every layout (snapmla644 with both PV modes)
  int64_t splits = 0;
  bool q_fp32 = false;  ///< snapmla644 rows with the query unquantized
  // --model: perplexity of an mla checkpoint with its cache in each layout (eval_model.cpp)
  std::string model, corpus, text;
  int64_t windows = 16, context = 0;  ///< context 0: the model's
  bool check_decode = false;          ///< also decode the first window token by token
};
void eval(const EvalOptions& options, const nk::RunEnv& env);
void eval_model(const EvalOptions& options, const nk::RunEnv& env);

struct CaptureOptions {
  std::string model, corpus, text, output = "-";
  bool no_clobber = false;
  int64_t layer = 0, windows = 8, context = 0;
};
void capture(const CaptureOptions& options, const nk::RunEnv& env);

struct PlotOptions {
  std::vector<std::string> inputs;
  std::string output = "-", measure = "rel_l2";
  bool no_clobber = false;
};
/// An SVG of each layout's error against the cache length, from eval tables.
void plot(const PlotOptions& options, const nk::RunEnv& env);

struct SpeedOptions {
  std::string input = "-", output;
  bool no_clobber = false;
  std::vector<std::string> layouts;  ///< empty: every layout with its default PV
  int64_t splits = 0;
  int repeats = 5;
};
void speed(const SpeedOptions& options, const nk::RunEnv& env);

struct ServeOptions {
  std::string output_file;
  bool no_clobber = false;
  std::vector<std::string> layouts;  ///< empty: bf16 and snapmla644
  double budget_mib = 256;           ///< the KV memory budget
  int64_t requests = 64, prompt = 128, output = 2048, heads = 16, dc = 512, dr = 64;
  int64_t max_batch = 4096;  ///< running sequences at most
};
void serve(const ServeOptions& options, const nk::RunEnv& env);

/// The PV mode of a layout: 'requested' (fp8, fp32 or "" for the default: fp8
/// for the FP8-coded layouts snapmla644 and fp8-naive, fp32 otherwise); fp8
/// on bf16 or flashmla656 is a usage error.
Pv resolve_pv(Layout layout, const std::string& requested);

/// LAYOUT[:fp8|fp32] specs (an option's values, named in errors) as layouts
/// and PV modes; 'fallback' when there are none.
std::vector<std::pair<Layout, Pv>> parse_layout_specs(const std::vector<std::string>& specs, const std::string& option,
                                                       const std::vector<std::pair<Layout, Pv>>& fallback);
const char* pv_name(Pv pv);

}  // namespace snapmla
