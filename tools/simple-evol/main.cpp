// main.cpp - simple-evol: LLM-driven automated heuristic design with minimal
// human priors (SimpleEvol): instances, reference solvers, sandboxed
// evaluation of Python heuristics.
#include "nk/cli.hpp"
#include "simple-evol/simple_evol.hpp"

int main(int argc, char** argv) {
  nk::cli::App cli("simple-evol",
                   "SimpleEvol: LLM-driven heuristic design for TSP, CVRP and the flow shop; frameworks, AHI, ICE");
  cli.app().require_subcommand(1);

  sevol::GenOptions gen;
  CLI::App* gen_verb =
      cli.add_verb("gen", "Instance file: random TSP/CVRP/flow shop, Taillard, or a TSPLIB/CVRPLIB file",
                   nk::cli::Randomness::seeded);
  nk::cli::App::add_output(*gen_verb, gen.output, gen.no_clobber);
  gen_verb->add_option("--problem", gen.problem, "tsp, cvrp or fssp")->check(CLI::IsMember({"tsp", "cvrp", "fssp"}));
  gen_verb->add_option("--count", gen.count, "Instances")->check(CLI::Range(int64_t{1}, sevol::kMaxInstances));
  gen_verb->add_option("--nodes", gen.nodes, "TSP cities, or CVRP customers (the depot comes on top)")
      ->check(CLI::Range(int64_t{3}, sevol::kMaxNodes - 1));
  gen_verb->add_option("--capacity", gen.capacity, "CVRP vehicle capacity (demands are 1..9)")
      ->check(CLI::Range(int64_t{9}, int64_t{1} << 30));
  gen_verb->add_option("--jobs", gen.jobs, "Flow-shop jobs")->check(CLI::Range(int64_t{2}, sevol::kMaxJobs));
  gen_verb->add_option("--machines", gen.machines, "Flow-shop machines (0: drawn from 2..20 per instance)")
      ->check(CLI::Range(int64_t{0}, sevol::kMaxMachines));
  gen_verb->add_option("--taillard", gen.taillard,
                       "Taillard's instances: ta001, a class 20x5, all (110, up to 200 jobs), all500; comma-separated");
  gen_verb->add_option("--from-tsplib", gen.from_tsplib,
                       "Import a TSPLIB (TYPE: TSP) or CVRPLIB (TYPE: CVRP) file with coordinates");

  sevol::SolveOptions solve;
  CLI::App* solve_verb = cli.add_verb("solve", "Reference solvers: tsp exact|nn|fi|ils, cvrp savings|ils, fssp neh|ig",
                                      nk::cli::Randomness::seeded);
  nk::cli::App::add_input(*solve_verb, solve.input, "instance file");
  nk::cli::App::add_output(*solve_verb, solve.output, solve.no_clobber);
  solve_verb
      ->add_option("--method", solve.method, "tsp: exact (n <= 20), nn, fi, ils; cvrp: savings, ils; fssp: neh, ig")
      ->required();
  solve_verb
      ->add_option("--iterations", solve.iterations,
                   "ils kicks / ig iterations (0: tsp ils 100 n, cvrp ils 3000, ig 1000)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  solve_verb->add_flag(
      "--store-reference", solve.store_reference,
      "Also write the instances with attribute reference = this objective (an instance file for eval)");

  sevol::EvalOptions eval;
  CLI::App* eval_verb = cli.add_verb("eval", "Score a Python heuristic (the published interface) in sandboxed workers",
                                     nk::cli::Randomness::seeded);
  nk::cli::App::add_input(*eval_verb, eval.input, "instance file");
  nk::cli::App::add_output(*eval_verb, eval.output, eval.no_clobber);
  eval_verb
      ->add_option("--heuristic", eval.heuristic,
                   "Python file defining select_next_node, heuristics or get_matrix_and_jobs")
      ->required();
  eval_verb->add_option("--function", eval.function, "The function to call (default: the problem's published name)");
  eval_verb
      ->add_option("--sandbox", eval.sandbox,
                   "namespace (no network, writes only to scratch) or none (trusted code only)")
      ->check(CLI::IsMember({"namespace", "none"}));
  eval_verb->add_option("--timeout", eval.timeout, "Seconds per instance (wall clock); past it: status 2")
      ->check(CLI::Range(0.01, 1e6));
  eval_verb
      ->add_option("--total-timeout", eval.total_timeout, "Seconds for all instances (0: none); the rest: status 4")
      ->check(CLI::Range(0.0, 1e7));
  eval_verb->add_option("--memory", eval.memory_mb, "MiB of address space a worker may add")
      ->check(CLI::Range(int64_t{16}, int64_t{1} << 30));
  eval_verb->add_option("--ants", eval.ants, "CVRP-ACO ants per iteration")
      ->check(CLI::Range(int64_t{1}, int64_t{100000}));
  eval_verb->add_option("--aco-iterations", eval.aco_iterations, "CVRP-ACO iterations")
      ->check(CLI::Range(int64_t{1}, int64_t{1000000}));
  eval_verb->add_flag("--greedy-ants", eval.greedy_ants,
                      "Ants take the most probable move (deterministic; for checks)");
  eval_verb->add_option("--gls-iterations", eval.gls_iterations, "FSSP-GLS iterations")
      ->check(CLI::Range(int64_t{1}, int64_t{100000000}));

  sevol::EvolveOptions evo;
  CLI::App* evolve_verb = cli.add_verb(
      "evolve", "A framework's run: the LLM writes heuristics, the evaluator scores them", nk::cli::Randomness::seeded);
  nk::cli::App::add_input(*evolve_verb, evo.input, "training instance file");
  nk::cli::App::add_output(*evolve_verb, evo.output, evo.no_clobber);
  evolve_verb
      ->add_option("--test", evo.tests, "Test instance files (comma-separated): the best heuristic's mean gap on each")
      ->delimiter(',');
  evolve_verb->add_option("--framework", evo.framework, "simpleevol, eoh, funsearch, reevo, mctsahd or random")
      ->check(CLI::IsMember({"simpleevol", "eoh", "funsearch", "reevo", "mctsahd", "random"}));
  evolve_verb->add_option("--llm", evo.llm, "A shipped surrogate: surrogate:0 (weakest) .. surrogate:9");
  evolve_verb->add_option("--llm-cmd", evo.llm_cmd, "Any model as a command: the prompt on stdin, the reply on stdout");
  evolve_verb->add_option("--llm-format", evo.llm_format, "What --llm-cmd reads: text or chat-json")
      ->check(CLI::IsMember({"text", "chat-json"}));
  evolve_verb->add_option("--cache-dir", evo.cache_dir,
                          "Replies cached here by (model, messages, temperature, sample)");
  evolve_verb->add_option("--temperature", evo.temperature, "Sampling temperature passed to the model")
      ->check(CLI::Range(0.0, 10.0));
  evolve_verb->add_option("--llm-timeout", evo.llm_timeout, "Seconds per --llm-cmd call (3 attempts, then exit 1)")
      ->check(CLI::Range(1.0, 1e6));
  evolve_verb->add_option("--budget", evo.budget, "Candidates evaluated (the paper: 820)")
      ->check(CLI::Range(int64_t{1}, int64_t{1000000}));
  evolve_verb
      ->add_option("--compress-every", evo.compress_every, "SimpleEvol: candidates between compressions (0: never)")
      ->check(CLI::Range(int64_t{0}, int64_t{1000000}));
  evolve_verb->add_flag("--no-best-so-far", evo.no_best_so_far, "SimpleEvol ablation: the prompt loses the best code");
  evolve_verb->add_option("--sandbox", evo.eval.sandbox, "namespace or none (as eval)")
      ->check(CLI::IsMember({"namespace", "none"}));
  evolve_verb->add_option("--timeout", evo.eval.timeout, "Seconds per instance (as eval)")
      ->check(CLI::Range(0.01, 1e6));
  evolve_verb->add_option("--memory", evo.eval.memory_mb, "MiB a worker may add (as eval)")
      ->check(CLI::Range(int64_t{16}, int64_t{1} << 30));
  evolve_verb->add_option("--ants", evo.eval.ants, "CVRP-ACO ants")->check(CLI::Range(int64_t{1}, int64_t{100000}));
  evolve_verb->add_option("--aco-iterations", evo.eval.aco_iterations, "CVRP-ACO iterations")
      ->check(CLI::Range(int64_t{1}, int64_t{1000000}));
  evolve_verb->add_option("--gls-iterations", evo.eval.gls_iterations, "FSSP-GLS iterations")
      ->check(CLI::Range(int64_t{1}, int64_t{100000000}));

  sevol::LlmVerbOptions llmo;
  CLI::App* llm_verb = cli.add_verb(
      "llm", "A surrogate LLM as a command (prompt on stdin, reply on stdout), or --exam: each rung's capability I",
      nk::cli::Randomness::seeded);
  llm_verb->add_option("--rung", llmo.rung, "Capability rung 0 (weakest) .. 9")->check(CLI::Range(0, 9));
  llm_verb->add_option("--temperature", llmo.temperature, "Scales the surrogate's edits")->check(CLI::Range(0.0, 10.0));
  llm_verb->add_flag("--exam", llmo.exam, "Measure I of the rungs on fixed prompts and held-out instances");
  llm_verb->add_option("--rungs", llmo.rungs, "--exam: the rungs, e.g. 0-9 or 0,4,9");
  llm_verb->add_option("--samples", llmo.samples, "--exam: replies per rung and problem")
      ->check(CLI::Range(int64_t{1}, int64_t{10000}));
  llm_verb
      ->add_option("--seed-heuristic", llmo.seed_heuristic,
                   "Print the seed heuristic every framework starts from (tsp, cvrp or fssp) and exit")
      ->check(CLI::IsMember({"tsp", "cvrp", "fssp"}));
  nk::cli::App::output(llm_verb->add_option("-o,--output", llmo.output, "--exam: the exam's HDF5 file"));
  nk::cli::App::add_no_clobber(*llm_verb, llmo.no_clobber);

  sevol::SweepOptions sw;
  CLI::App* sweep_verb =
      cli.add_verb("sweep", "Problems x frameworks x surrogate rungs x seeds: one evolve run file each",
                   nk::cli::Randomness::seeded);
  nk::cli::App::output(
      sweep_verb->add_option("-o,--output", sw.output, "Folder: data/ (made once) and runs/")->required(),
      nk::cli::App::OutputKind::folder);
  sweep_verb
      ->add_option("--preset", sw.preset, "small (fits hours on 2 cores) or paper (820 evaluations, the paper's data)")
      ->check(CLI::IsMember({"small", "paper"}));
  sweep_verb->add_option("--problems", sw.problems, "Comma-separated: tsp, cvrp, fssp")->delimiter(',');
  sweep_verb->add_option("--frameworks", sw.frameworks, "Comma-separated frameworks")->delimiter(',');
  sweep_verb->add_option("--rungs", sw.rungs, "Surrogate rungs, e.g. 0-9 or 0,3,6,9");
  sweep_verb->add_option("--seeds", sw.seeds, "Runs per (problem, framework, rung)")
      ->check(CLI::Range(int64_t{1}, int64_t{1000}));
  sweep_verb->add_option("--budget", sw.budget, "Candidates per run (0: the preset's, 60 or 820)")
      ->check(CLI::Range(int64_t{0}, int64_t{1000000}));
  sweep_verb->add_option("--sandbox", sw.eval.sandbox, "namespace or none (as eval)")
      ->check(CLI::IsMember({"namespace", "none"}));
  sweep_verb->add_option("--timeout", sw.eval.timeout, "Seconds per instance (as eval)")->check(CLI::Range(0.01, 1e6));
  cli.add_shard(*sweep_verb);

  sevol::IceOptions ice;
  CLI::App* ice_verb =
      cli.add_verb("ice", "ICE: per framework the slope of P = 1/(gap + eps) against I, with AHI; SVG");
  ice_verb->add_option("-i,--input", ice.inputs, "Run files, or sweep folders")->required()->expected(1, -1);
  ice_verb->add_option("--exam", ice.exam, "llm --exam's file (I per rung)")->required();
  ice_verb->add_option("--problem", ice.problem, "The problem (default: the runs' only one)")
      ->check(CLI::IsMember({"tsp", "cvrp", "fssp"}));
  nk::cli::App::add_output(*ice_verb, ice.output, ice.no_clobber);
  nk::cli::App::output(ice_verb->add_option("--plot", ice.plot, "Also draw P against I per framework (SVG)"));
  ice_verb->add_option("--eps", ice.eps, "eps of P = 1/(gap + eps)")->check(CLI::Range(1e-9, 10.0));

  return cli.run(argc, argv, [&] {
    if (*sweep_verb) sevol::sweep_verb(sw, cli.env());
    if (*ice_verb) sevol::ice_verb(ice, cli.env());
    if (*evolve_verb) sevol::evolve_verb(evo, cli.env());
    if (*llm_verb) sevol::llm_verb(llmo, cli.env());
    if (*gen_verb) sevol::gen_verb(gen, cli.env());
    if (*solve_verb) sevol::solve_verb(solve, cli.env());
    if (*eval_verb) sevol::eval_verb(eval, cli.env());
  });
}
