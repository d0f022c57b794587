// main.cpp - sagesched: LLM serving scheduler for uncertain output lengths and
// hybrid compute/memory cost; traces, simulator, predictor, Gittins index.
#include "nk/cli.hpp"
#include "sagesched/sagesched.hpp"

namespace {

void add_profile(CLI::App& verb, std::string& profile, std::string* iter_cost) {
  verb.add_option("--profile", profile, "Iteration cost: h100-llama3-8b, h200-llama3-8b, h200-probed, cpu-nklm or a TOML file (sagesched(1) PROFILES)");
  if (iter_cost) {
    verb.add_option("--iter-cost", *iter_cost, "linear:t0,cp,ca,cc,cs[,cw]: t0 + cp P + ca A + cc C + cs S (+ cw W) seconds");
  }
}

void add_server(CLI::App& verb, sage::Server& s, bool with_swap) {
  verb.add_option("--max-batch", s.max_batch, "Sequences per iteration")->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  verb.add_option("--max-tokens", s.max_tokens, "Prefill-chunk plus decode tokens per iteration")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  verb.add_option("--kv-tokens", s.kv_tokens, "KV cache capacity in tokens (0: the profile's)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  verb.add_option("--block", s.block, "Tokens per KV block")->check(CLI::Range(int64_t{1}, int64_t{4096}));
  verb.add_option("--reserve", s.reserve, "Free KV blocks per running request that new requests may not take (0: vLLM's greedy admission)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  verb.add_option_function<std::string>(
        "--walk", [&s](const std::string& w) { s.running_first = w == "running-first"; },
        "running-first (default: requests holding KV, then the others, each in policy order) or keyed (one pass in policy order)")
      ->check(CLI::IsMember({"running-first", "keyed"}));
  if (with_swap) verb.add_flag("--swap", s.swap, "Preempt by swapping KV to the host (default: recompute)");
}

}  // namespace

int main(int argc, char** argv) {
  nk::cli::App cli("sagesched", "SageSched: LLM serving scheduler for uncertain output lengths and compute+memory cost");
  cli.app().require_subcommand(1);

  sage::TraceOptions trace;
  CLI::App* trace_verb = cli.add_verb("trace", "Generate a request trace (or import a CSV): /requests/*", nk::cli::Randomness::seeded);
  nk::cli::App::add_output(*trace_verb, trace.output, trace.no_clobber);
  trace_verb->add_option("--requests", trace.requests, "Requests")->check(CLI::Range(int64_t{1}, int64_t{1} << 28));
  trace_verb->add_option("--arrivals", trace.arrivals, "poisson or gamma:CV (bursty, CV > 1)");
  trace_verb->add_option("--load", trace.load, "Arrival rate as a fraction of the saturated throughput")
      ->check(CLI::Range(1e-6, 100.0));
  trace_verb->add_option("--mix", trace.mix, "sharegpt, code, conv or mixed (code + conv)")
      ->check(CLI::IsMember({"sharegpt", "code", "conv", "mixed"}));
  trace_verb->add_option("--prompts", trace.prompts, "synthetic, or debian (fortunes and WordNet text)")
      ->check(CLI::IsMember({"synthetic", "debian"}));
  trace_verb->add_option("--from-csv", trace.from_csv, "Import a real trace (BurstGPT, Azure, or arrival,prompt_tokens,output_tokens)");
  trace_verb->add_option("--max-context", trace.max_context, "Redraw lengths until prompt + output fits (the testbed model's context; 0: none)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  add_profile(*trace_verb, trace.profile, &trace.iter_cost);
  add_server(*trace_verb, trace.server, false);

  sage::SimulateOptions sim;
  CLI::App* sim_verb = cli.add_verb("simulate", "Iteration-level continuous batching under a policy: /per_request, /iterations",
                                    nk::cli::Randomness::seeded);
  nk::cli::App::add_input(*sim_verb, sim.input, "trace file");
  nk::cli::App::add_output(*sim_verb, sim.output, sim.no_clobber);
  sim_verb->add_option("--policy", sim.sim.policy, "fcfs, sjf-pred, ltr, mlfq, srpt-oracle, sagesched, sagesched-nomem, sagesched-point");
  add_profile(*sim_verb, sim.profile, &sim.iter_cost);
  add_server(*sim_verb, sim.sim.server, true);
  sim_verb->add_flag("--no-iterations", [&](int64_t) { sim.sim.record_iterations = false; }, "Do not write /iterations");
  sim_verb->add_option("--bins-per-octave", sim.sim.per_octave, "Resolution of the predicted length pmf")
      ->check(CLI::Range(1, 16));

  sage::TestbedOptions bed;
  CLI::App* bed_verb = cli.add_verb("testbed", "Serve the trace for real: nk-lm, continuous batching, paged KV, a client at trace times",
                                    nk::cli::Randomness::seeded);
  nk::cli::App::add_input(*bed_verb, bed.input, "trace file");
  nk::cli::App::add_output(*bed_verb, bed.output, bed.no_clobber);
  bed_verb->add_option("--policy", bed.sim.policy, "fcfs, sjf-pred, ltr, mlfq, srpt-oracle, sagesched, sagesched-nomem, sagesched-point");
  bed_verb->add_option("-m,--model", bed.model, "Causal nk-lm checkpoint (default: the shipped data/lm/causal.h5)");
  bed_verb->add_option("--profile", bed.profile, "The profile the policies price with (default: the shipped data/sagesched/cpu-nklm.toml)");
  bed_verb->add_option("--iter-cost", bed.iter_cost, "linear:t0,cp,ca,cc,cs: instead of --profile");
  add_server(*bed_verb, bed.sim.server, false);
  bed_verb->add_option("--time-scale", bed.time_scale, "Wall seconds per trace second (2: arrivals twice as far apart)")
      ->check(CLI::Range(1e-6, 1e6));
  bed_verb->add_option("--temperature", bed.temperature, "Sampling temperature (0: greedy); EOS never stops a request")
      ->check(CLI::Range(0.0, 100.0));
  bed_verb->add_flag("--no-iterations", [&](int64_t) { bed.sim.record_iterations = false; }, "Do not write /iterations");
  bed_verb->add_option("--bins-per-octave", bed.sim.per_octave, "Resolution of the predicted length pmf")->check(CLI::Range(1, 16));

  sage::PredictOptions pred;
  CLI::App* pred_verb = cli.add_verb("predict", "Replay the online length predictor: pmfs, CRPS, pinball, MAE vs baselines",
                                     nk::cli::Randomness::seeded);
  nk::cli::App::add_input(*pred_verb, pred.input, "trace file");
  nk::cli::App::add_output(*pred_verb, pred.output, pred.no_clobber);
  pred_verb->add_option("--sim", pred.sim, "Results become known at this simulation's finish times (default: solo finish)");
  add_profile(*pred_verb, pred.profile, nullptr);
  pred_verb->add_option("--max-tokens", pred.max_tokens, "Prefill chunk of the solo finish times")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  pred_verb->add_option("--bins-per-octave", pred.per_octave, "Resolution of the pmf")->check(CLI::Range(1, 16));

  sage::GittinsOptions gittins;
  CLI::App* gittins_verb = cli.add_verb("gittins", "Gittins index of discrete cost distributions at attained costs");
  nk::cli::App::add_input(*gittins_verb, gittins.input, "/support [M,n], /prob [M,n], /attained [M]");
  nk::cli::App::add_output(*gittins_verb, gittins.output, gittins.no_clobber);

  sage::ProbeOptions probe;
  CLI::App* probe_verb = cli.add_verb("probe", "Measure the GPU's copy bandwidth and BF16 GEMM rate; write the preset's roofline with that derating (TOML)");
  probe_verb->add_option("-o,--output", probe.output, "Profile file (TOML; '-': standard output)")->required();
  probe_verb->add_option("--seconds", probe.seconds, "The probe's time budget")->check(CLI::Range(0.1, 3600.0));
  probe_verb->add_option("--preset", probe.preset, "The preset whose model and server numbers are kept")
      ->check(CLI::IsMember({"h100-llama3-8b", "h200-llama3-8b"}));
  probe_verb->add_option("--name", probe.name, "The profile's name");
  probe_verb->add_option("--nominal-flops", probe.nominal_flops, "The GPU's data-sheet dense BF16 FLOP/s (H200, H100 SXM: 989e12)")
      ->check(CLI::Range(1e9, 1e18));
  probe_verb->add_option("--nominal-bandwidth", probe.nominal_bandwidth, "The GPU's data-sheet memory bandwidth in bytes/s (H200: 4.8e12; H100 SXM: 3.35e12)")
      ->check(CLI::Range(1e9, 1e15));
  nk::cli::App::add_no_clobber(*probe_verb, probe.no_clobber);

  sage::PlotOptions plot;
  CLI::App* plot_verb = cli.add_verb("plot", "SVG: TTLT CDFs of simulations, or mean TTLT against the trace's load per policy");
  plot_verb->add_option("-i,--input", plot.inputs, "Simulation files (sagesched simulate)")->required()->expected(1, -1);
  plot_verb->add_option("-o,--output", plot.output, "SVG file ('-': standard output)")->required();
  plot_verb->add_option("--kind", plot.kind, "cdf (one line per file) or load (mean TTLT vs load, one line per policy)")
      ->check(CLI::IsMember({"cdf", "load"}));
  plot_verb->add_option("--title", plot.title, "Figure title");
  nk::cli::App::add_no_clobber(*plot_verb, plot.no_clobber);

  sage::CalibrateOptions cal;
  CLI::App* cal_verb = cli.add_verb("calibrate", "Fit the linear profile (TOML) to nk-lm steps timed over a (P, C, S) grid, or to a testbed run's iterations");
  cal_verb->add_option("-m,--model", cal.model, "Causal nk-lm checkpoint timed over the grid (default: the shipped data/lm/causal.h5)");
  cal_verb->add_option("--from", cal.from, "Fit the iterations a testbed run measured instead of timing a grid");
  cal_verb->add_option("-o,--output", cal.output, "Profile file (TOML; '-': standard output)")->required();
  cal_verb->add_option("--repeats", cal.repeats, "Timed runs per step; the median counts")->check(CLI::Range(1, 1000));
  cal_verb->add_option("--name", cal.name, "The profile's name");
  cal_verb->add_option("--kv-tokens", cal.kv_tokens, "KV capacity written into the profile (0: none)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  cal_verb->add_option("--grid-batch", cal.grid_batch, "Largest decode batch timed (the grid's S are 1, 2, 4, 8, 16, 32, 64 up to it)")
      ->check(CLI::Range(int64_t{1}, int64_t{64}));
  nk::cli::App::add_no_clobber(*cal_verb, cal.no_clobber);

  return cli.run(argc, argv, [&] {
    if (*cal_verb) sage::calibrate_verb(cal, cli.env());
    if (*plot_verb) sage::plot_verb(plot);
    if (*probe_verb) sage::probe_verb(probe);
    if (*trace_verb) sage::trace(trace, cli.env());
    if (*sim_verb) sage::simulate_verb(sim, cli.env());
    if (*bed_verb) sage::testbed_verb(bed, cli.env());
    if (*pred_verb) sage::predict_verb(pred, cli.env());
    if (*gittins_verb) sage::gittins_verb(gittins);
  });
}
