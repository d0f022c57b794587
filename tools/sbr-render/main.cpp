// main.cpp - sbr-render: stroke-audited rendering with Quadratic Bezier Splatting.
#include "sbr-render/decoder.hpp"
#include "nk/cli.hpp"
#include "sbr-render/sbr.hpp"

int main(int argc, char** argv) {
  nk::cli::App cli("sbr-render", "Images -> coherent quadratic Bezier brush strokes (PNG, SVG, HDF5), audited one by one");
  cli.app().require_subcommand(1);

  sbr::PaintOptions pt;
  CLI::App* paint = cli.add_verb("paint", "Decoder initialisation, test-time optimisation and single-stroke audit",
                                     nk::cli::Randomness::seeded);
  nk::cli::App::add_input(*paint, pt.input, "image file (PNG, JPEG, PGM, ...) or nk-data file with /images [N,H,W,C]")->required();
  nk::cli::App::add_output(*paint, pt.output, pt.no_clobber, "output strokes file (HDF5)");
  paint->add_option("--strokes", pt.strokes, "Stroke budget per image")->check(CLI::Range(1, 1000000));
  paint->add_option("--iterations", pt.config.iterations, "Adam iterations over all scales")->check(CLI::Range(0, 1000000));
  paint->add_option("--init", pt.init, "Initial strokes: decoder (multi-scale stroke decoder), random or grid")
      ->check(CLI::IsMember({"decoder", "random", "grid"}));
  paint->add_option("--decoder", pt.decoder, "Decoder weights (default: the model shipped with neurkit)");
  paint->add_option("--scales", pt.scales, "Render sizes of the coarse-to-fine optimisation, as fractions (last: 1)");
  paint->add_option("--loss", pt.loss, "Pixel loss: l2 or l1")->check(CLI::IsMember({"l2", "l1"}));
  paint->add_option("--coherence", pt.config.coherence, "Weight of the stroke-coherence term")->check(CLI::Range(0.0, 1e6));
  paint->add_option("--fidelity", pt.config.fidelity, "Weight of the colour-fidelity pull (each stroke's colour towards the target where it is seen)")
      ->check(CLI::Range(0.0, 1e6));
  paint->add_option("--hidden-penalty", pt.config.hidden_penalty,
                    "Weight of the hidden-coverage penalty (strokes withdraw where later strokes cover them)")
      ->check(CLI::Range(0.0, 1e6));
  paint->add_option("--min-opacity", pt.config.min_opacity,
                    "Least stroke opacity with the audit (strokes are paint, not glazes; without the audit 0.05)")
      ->check(CLI::Range(0.05, 1.0));
  paint->add_flag("!--no-repair", pt.config.repair, "Keep the hidden strokes at 80% and 90% of the finest scale (no repair)");
  paint->add_option("--relocate", pt.config.relocate,
                    "Largest fraction of good strokes one audit moves from where they contribute least to the residual")
      ->check(CLI::Range(0.0, 1.0));
  paint->add_flag("!--no-colour-bound", pt.config.colour_bound,
                  "While settling, do not hold each stroke's colour within the audit's colour bound");
  paint->add_option("--lr", pt.config.learning_rate, "Adam learning rate (normalised units)")->check(CLI::Range(1e-9, 10.0));
  paint->add_flag("!--no-audit", pt.audit, "Turn the single-stroke audit off (plain pixel-level optimisation)");
  paint->add_option("--audit-every", pt.config.audit_every, "Iterations between audits")->check(CLI::Range(1, 1000000));
  paint->add_option("--max-respawn", pt.config.max_respawn, "Largest fraction of strokes one audit re-spawns")
      ->check(CLI::Range(0.0, 1.0));
  paint->add_flag("!--no-prune", pt.prune, "Keep the useless strokes the final audit finds");
  paint->add_option("--min-visible", pt.config.rule.min_visible, "Audit: least visible fraction")->check(CLI::Range(0.0, 1.0));
  paint->add_option("--max-colour-error", pt.config.rule.max_colour_error, "Audit: largest RMS colour error on the footprint")
      ->check(CLI::Range(0.0, 2.0));
  paint->add_option("--min-area", pt.config.rule.min_area, "Audit: least coverage, in canvas pixels")->check(CLI::Range(0.0, 1e9));
  nk::cli::App::output(paint->add_option("--png", pt.png, "Also write the rendering as PNG"));
  nk::cli::App::output(paint->add_option("--svg", pt.svg, "Also write the strokes as SVG (quadratic paths)"));
  paint->add_option("--size", pt.size, "Size WxH of the PNG, SVG and frames (default: the image's)");
  nk::cli::App::output(paint->add_option("--frames", pt.frames, "Also write the painting order as PNG frames into this folder"), nk::cli::App::OutputKind::folder);
  paint->add_option("--frame-count", pt.frame_count, "Number of frames for --frames")->check(CLI::Range(1, 100000));
  paint->add_option("--index", pt.index, "Paint image K of a stack only")->check(CLI::NonNegativeNumber);
  cli.add_shard(*paint);

  sbr::RenderOptions rd;
  CLI::App* render = cli.add_verb("render", "Rasterise a strokes file at any size, as PNG and/or SVG");
  nk::cli::App::add_input(*render, rd.input, "strokes file written by paint")->required();
  render->add_option("-o,--output", rd.output, "PNG file ('-' = standard output)");
  nk::cli::App::add_no_clobber(*render, rd.no_clobber);
  nk::cli::App::output(render->add_option("--svg", rd.svg, "SVG file"));
  render->add_option("--size", rd.size, "Output size WxH (default: the canvas)");
  render->add_option("--index", rd.index, "Painting K of the file")->check(CLI::NonNegativeNumber);

  sbr::AuditOptions au;
  CLI::App* audit = cli.add_verb("audit", "Judge every stroke on its own: per-stroke report and the defective fraction");
  nk::cli::App::add_input(*audit, au.input, "strokes file written by paint")->required();
  audit->add_option("--target", au.target, "The painted image (image file or nk-data /images)")->required();
  audit->add_option("--index", au.index, "Only the painting of image K")->check(CLI::NonNegativeNumber);
  audit->add_flag("--summary", au.summary, "Print only the totals (strokes, defective, fraction)");
  audit->add_option("--min-visible", au.rule.min_visible, "Least visible fraction")->check(CLI::Range(0.0, 1.0));
  audit->add_option("--max-colour-error", au.rule.max_colour_error, "Largest RMS colour error on the footprint")
      ->check(CLI::Range(0.0, 2.0));
  audit->add_option("--min-area", au.rule.min_area, "Least coverage, in canvas pixels")->check(CLI::Range(0.0, 1e9));

  sbr::SpeedOptions sp;
  CLI::App* speed = cli.add_verb("speed", "Time the tiled renderer against the brute-force one, forward and backward");
  nk::cli::App::add_input(*speed, sp.input, "strokes file written by paint")->required();
  speed->add_option("--target", sp.target, "Image the loss compares with (default: mid-gray)");
  speed->add_option("--size", sp.size, "Render size WxH (default: the canvas)");
  speed->add_option("--index", sp.index, "Painting K of the file")->check(CLI::NonNegativeNumber);
  speed->add_option("--segments", sp.segments, "Polyline segments per stroke in the brute-force renderer")->check(CLI::Range(1, 4096));
  nk::cli::App::add_repeats(*speed, sp.repeats);
  speed->add_flag("!--no-brute", sp.brute, "Skip the brute-force renderer");

  sbr::TrainDecoderOptions td;
  CLI::App* train = cli.add_verb("train-decoder", "Train the multi-scale stroke decoder, self-supervised through the renderer",
                                     nk::cli::Randomness::seeded);
  nk::cli::App::add_output(*train, td.output, td.no_clobber, "decoder weights file (HDF5)");
  train->add_option("--images", td.images, "Images to cut training windows from (image file or nk-data /images)");
  train->add_option("--steps", td.steps, "Adam steps")->check(CLI::Range(1, 10000000));
  train->add_option("--batch", td.batch, "Windows per step")->check(CLI::Range(1, 65536));
  train->add_option("--hidden", td.hidden, "Hidden units per layer")->check(CLI::Range(4, 4096));
  train->add_option("--lr", td.learning_rate, "Adam learning rate")->check(CLI::Range(1e-9, 10.0));

  return cli.run(argc, argv, [&] {
    if (*paint) sbr::paint(pt, cli.env());
    if (*render) sbr::render_verb(rd, cli.env());
    if (*audit) sbr::audit_verb(au, cli.env());
    if (*speed) sbr::speed_verb(sp, cli.env());
    if (*train) sbr::train_decoder(td, cli.env());
  });
}
