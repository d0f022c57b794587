// run.cpp - the verbs: files in, method, files out.

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "sbr-render/decoder.hpp"
#include "sbr-render/io.hpp"
#include "nk/context.hpp"
#include "nk/dataset.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk/metrics.hpp"
#include "nk/progress.hpp"
#include "nk/shard.hpp"
#include "nk/table.hpp"
#include "nk/timer.hpp"
#include "sbr-render/sbr.hpp"

namespace sbr {

namespace {

std::vector<double> parse_scales(const std::string& text) {
  std::vector<double> out;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    char* end = nullptr;
    const double v = std::strtod(part.c_str(), &end);
    if (part.empty() || *end != '\0' || !(v > 0 && v <= 1) || (!out.empty() && v <= out.back()))
      throw nk::usage_error("--scales: expected increasing fractions in (0, 1] such as 0.25,0.5,1; got '" + text + "'");
    out.push_back(v);
  }
  if (out.empty() || out.back() != 1.0) throw nk::usage_error("--scales: the last scale must be 1 (the full size)");
  return out;
}

/// 'base' with "-NNNNNN" before its extension when a run paints several images.
std::string numbered(const std::string& base, int64_t item, bool several) {
  if (!several || base == "-") return base;
  char tag[32];
  std::snprintf(tag, sizeof tag, "-%06lld", static_cast<long long>(item));
  const std::filesystem::path p(base);
  return (p.parent_path() / (p.stem().string() + tag + p.extension().string())).string();
}

/// The painting order as PNG frames: the first k strokes for 'count' values of k.
void write_frames(const std::string& dir, const Painting& p, int width, int height, int count, float softness,
                  int threads) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw nk::io_error(dir, "cannot create the frames folder: " + ec.message());
  Painting partial = p;
  const size_t n = p.strokes.size();
  // Each frame adds at least one stroke: beyond one frame per stroke they
  // would repeat (and 100,000 of them take half an hour).
  if (n > 0 && size_t(count) > n) {
    spdlog::info("--frame-count {}: {} frames, one per stroke", count, n);
    count = int(n);
  }
  for (int f = 1; f <= count; ++f) {
    partial.strokes.assign(p.strokes.begin(), p.strokes.begin() + long(n * size_t(f) / size_t(count)));
    char name[32];
    std::snprintf(name, sizeof name, "/frame_%04d.png", f);
    nk::save_png(dir + name, to_image(render(partial, {width, height, softness, threads}), width, height));
  }
}

std::pair<int, int> output_size(const std::string& size, const Painting& p) {
  const auto wh = size.empty() ? std::pair<int, int>{p.width, p.height} : nk::parse_size(size, "--size");
  // The image and a copy of it in float RGB, refused before allocating.
  const double bytes = double(wh.first) * wh.second * 3 * sizeof(float) * 2;
  if (bytes > nk::h5::available_memory_bytes())
    throw nk::usage_error("--size " + std::to_string(wh.first) + "x" + std::to_string(wh.second) + " needs " +
                          std::to_string(int64_t(bytes / 1e9)) + " GB, more than this process may still use "
                          "(free memory, ulimit -v and -d, memory cgroups)");
  return wh;
}

}  // namespace

void paint(PaintOptions o, const nk::RunEnv& env) {
  o.config.threads = env.threads;
  if (o.strokes < 1) throw nk::usage_error("--strokes must be at least 1");
  o.config.scales = parse_scales(o.scales);
  o.config.loss = o.loss == "l1" ? Loss::l1 : Loss::l2;
  o.config.audit = o.audit;
  o.config.prune = o.prune;
  const TargetSource source(o.input);
  std::vector<int64_t> items;
  if (o.index >= 0) {
    if (o.index >= source.count())
      throw nk::input_error(o.input, "/images", "image " + std::to_string(o.index) + " does not exist (N = " +
                                                    std::to_string(source.count()) + ")");
    items.push_back(o.index);
  } else {
    const auto [lo, hi] = nk::shard_range(env.shard, source.count());
    nk::data::check_run_items(o.input, "/images", hi - lo);
    for (int64_t i = lo; i < hi; ++i) items.push_back(i);
  }
  Decoder decoder;
  if (o.init == "decoder") {
    if (o.decoder.empty()) o.decoder = default_decoder_path();
    decoder = load_decoder(o.decoder);
  }
  const bool several = items.size() > 1;
  std::vector<PaintingRecord> records;
  nk::Progress progress("paint", int64_t(items.size()) * std::max(1, o.config.iterations));
  int64_t done = 0;
  for (size_t k = 0; k < items.size(); ++k) {
    const int64_t item = items[k];
    const Target target = source.read(item);
    PaintConfig config = o.config;
    config.seed = nk::Rng(env.seed).split(uint64_t(item))();
    Painting painting;
    if (o.init == "decoder") {
      DecodeReport dr;
      painting = decode_strokes(decoder, target, o.strokes, config.threads, &dr);
      std::string alloc;
      for (size_t l = 0; l < dr.grid.size(); ++l)
        alloc += (l ? ", " : "") + std::to_string(dr.allocated[l]) + " at " + std::to_string(dr.grid[l]) + "x" + std::to_string(dr.grid[l]);
      spdlog::debug("image {}: decoder allocated {}", item, alloc);
    } else if (o.init == "grid") {
      painting = grid_init(target, o.strokes);
    } else {
      painting = random_init(target, o.strokes, config.seed);
    }
    const PaintReport rep = optimise(painting, target, config, [&](int step, int) { progress.update(done + step); });
    done += std::max(1, o.config.iterations);
    PaintingRecord r;
    r.item = item;
    r.painting = painting;
    const RGB image = render(painting, {painting.width, painting.height, config.softness, config.threads});
    const nk::Image ref = to_image(target.pixels, target.width, target.height), got = to_image(image, target.width, target.height);
    r.psnr = nk::psnr(ref, got);
    r.ssim = nk::ssim(ref, got);
    r.loss = rep.loss;
    r.seconds = rep.seconds;
    r.respawned = rep.respawned;
    r.relocated = rep.relocated;
    r.pruned = rep.pruned;
    spdlog::info("image {}: {} strokes, PSNR {:.2f} dB, SSIM {:.4f}, {} re-spawned, {} relocated, {} removed ({} hidden), "
                 "{} colour bounds, {:.1f} s",
                 item, painting.strokes.size(), r.psnr, r.ssim, rep.respawned, rep.relocated, rep.pruned, rep.repaired,
                 rep.recoloured, rep.seconds);
    records.push_back(std::move(r));
  }
  progress.finish();
  // Pictures first, the strokes file last: a failure leaves no strokes file.
  for (const PaintingRecord& r : records) {
    const auto [w, h] = output_size(o.size, r.painting);
    if (!o.png.empty())
      nk::save_png(numbered(o.png, r.item, several), to_image(render(r.painting, {w, h, o.config.softness, o.config.threads}), w, h),
                   o.no_clobber);
    if (!o.svg.empty()) save_text(numbered(o.svg, r.item, several), to_svg(r.painting, w, h), o.no_clobber);
    if (!o.frames.empty())
      write_frames(several ? numbered(o.frames, r.item, true) : o.frames, r.painting, w, h, o.frame_count, o.config.softness,
                   o.config.threads);
  }
  write_strokes(o.output, o.no_clobber, records,
                {{"init", o.init},
                 {"audit", o.audit ? "on" : "off"},
                 {"loss", o.loss},
                 {"scales", o.scales},
                 {"decoder", o.init == "decoder" ? o.decoder : ""}});
}

void render_verb(const RenderOptions& o, const nk::RunEnv& env) {
  if (o.output.empty() && o.svg.empty()) throw nk::usage_error("render needs -o FILE.png and/or --svg FILE");
  const std::vector<PaintingRecord> records = read_strokes(o.input);
  if (o.index < 0 || o.index >= int64_t(records.size()))
    throw nk::input_error(o.input, "/offsets", "painting " + std::to_string(o.index) + " does not exist (K = " +
                                                   std::to_string(records.size()) + ")");
  const Painting& p = records[size_t(o.index)].painting;
  const auto [w, h] = output_size(o.size, p);
  if (!o.output.empty())
    nk::save_png(o.output, to_image(render(p, {w, h, o.softness, env.threads}), w, h), o.no_clobber);
  if (!o.svg.empty()) save_text(o.svg, to_svg(p, w, h), o.no_clobber);
}

void audit_verb(const AuditOptions& o, const nk::RunEnv& env) {
  const std::vector<PaintingRecord> records = read_strokes(o.input);
  const TargetSource source(o.target);
  std::vector<size_t> which;
  for (size_t i = 0; i < records.size(); ++i)
    if (o.index < 0 || records[i].item == o.index) which.push_back(i);
  if (which.empty()) throw nk::input_error(o.input, "/items", "no painting of image " + std::to_string(o.index));
  // Judge everything first: a bad target fails before anything is printed.
  std::vector<std::vector<StrokeAudit>> verdicts;
  for (size_t i : which) {
    const PaintingRecord& r = records[i];
    const Target target = source.read(source.count() == 1 ? 0 : r.item);
    if (target.width != r.painting.width || target.height != r.painting.height)
      throw nk::input_error(o.target, "", "image is " + std::to_string(target.width) + "x" + std::to_string(target.height) +
                                              " but the painting's canvas is " + std::to_string(r.painting.width) + "x" +
                                              std::to_string(r.painting.height));
    verdicts.push_back(audit(r.painting, target, o.rule, 0.5, env.threads));
  }
  int64_t strokes = 0, defective = 0;
  nk::Table table(stdout, {"item", "stroke", "area", "visible", "colour", "loss_delta", "defects"}, {4, 6, 10, 8, 8, 12});
  if (!o.summary) table.header();
  for (size_t k = 0; k < which.size(); ++k) {
    const PaintingRecord& r = records[which[k]];
    const std::vector<StrokeAudit>& verdict = verdicts[k];
    for (size_t s = 0; s < verdict.size(); ++s) {
      const StrokeAudit& a = verdict[s];
      defective += a.defects != kGood;
      if (!o.summary)
        table.row({nk::cell(static_cast<long long>(r.item)), nk::cell(static_cast<long long>(s)), nk::cell(a.area, "%.4f"),
                   nk::cell(a.visible, "%.6f"), nk::cell(a.colour_error, "%.6f"), nk::cell(a.loss_delta, "%.6g"),
                   defect_names(a.defects)});
    }
    strokes += int64_t(verdict.size());
  }
  const double fraction = strokes ? double(defective) / double(strokes) : 0.0;
  if (o.summary) std::printf("strokes\t%lld\ndefective\t%lld\nfraction\t%.6f\n", static_cast<long long>(strokes),
                             static_cast<long long>(defective), fraction);
  spdlog::info("{} of {} strokes defective ({:.2f}%)", defective, strokes, 100 * fraction);
}

void speed_verb(const SpeedOptions& o, const nk::RunEnv& env) {
  const std::vector<PaintingRecord> records = read_strokes(o.input);
  if (o.index < 0 || o.index >= int64_t(records.size()))
    throw nk::input_error(o.input, "/offsets", "painting " + std::to_string(o.index) + " does not exist");
  const Painting& p = records[size_t(o.index)].painting;
  const auto [w, h] = output_size(o.size, p);
  const RenderSpec spec{w, h, 0.5f, env.threads};
  Target target;
  if (!o.target.empty()) {
    const TargetSource source(o.target);
    target = resample(source.read(source.count() == 1 ? 0 : records[size_t(o.index)].item), w, h);
  } else {
    target = {w, h, RGB(size_t(w) * h * 3, 0.5f)};
  }
  const auto best_of = [&](auto&& fn) { return nk::best_seconds(o.repeats, fn); };
  std::vector<float> grad, grad_brute;
  std::array<float, 3> gbg, gbg_brute;
  RenderStats stats;
  const double fwd = best_of([&] { render(p, spec, &stats); });
  const double fwd_bwd = best_of([&] { render_backward(p, spec, target.pixels, Loss::l2, grad, gbg); });
  std::printf("strokes\t%zu\nsize\t%dx%d\ntile_pairs\t%lld\ncoverage_evals\t%lld\nqbs_forward_s\t%.6f\nqbs_forward_backward_s\t%.6f\n",
              p.strokes.size(), w, h, static_cast<long long>(stats.tile_pairs), static_cast<long long>(stats.coverage_evals), fwd,
              fwd_bwd);
  if (o.brute) {
    const double bf = best_of([&] { render_brute(p, spec, o.segments); });
    const double bfb = best_of([&] { render_backward_brute(p, spec, target.pixels, Loss::l2, o.segments, grad_brute, gbg_brute); });
    double num = 0, den = 0;
    for (size_t i = 0; i < grad.size(); ++i) num += std::pow(double(grad[i]) - grad_brute[i], 2), den += double(grad[i]) * grad[i];
    std::printf("brute_segments\t%d\nbrute_forward_s\t%.6f\nbrute_forward_backward_s\t%.6f\nspeedup_forward\t%.2f\n"
                "speedup_forward_backward\t%.2f\ngradient_relative_difference\t%.4g\n",
                o.segments, bf, bfb, bf / fwd, bfb / fwd_bwd, den > 0 ? std::sqrt(num / den) : 0.0);
  }
}

}  // namespace sbr
