// main.cpp - tnqe-encode: circuit-efficient quantum data encoding from unitary tensor networks (TNQE).
#include "nk/cli.hpp"
#include "tnqe-encode/tnqe.hpp"

int main(int argc, char** argv) {
  nk::cli::App cli("tnqe-encode", "Shallow quantum circuits that encode images and vectors, from tensor networks (TNQE)");
  cli.app().require_subcommand(1);

  bool all_items = false;
  tnqe::EncodeOptions enc;
  CLI::App* encode = cli.add_verb("encode", "QTT cores -> unitary-aware cores -> CNOT+U3 circuit, verified by simulation");
  nk::cli::App::add_input(*encode, enc.input, "nk-data file with /images [N,H,W,C] or /vectors [N,D]")->required();
  nk::cli::App::add_output(*encode, enc.output, enc.no_clobber);
  CLI::Option* enc_index = encode->add_option("--index", enc.index, "Encode item K only")->check(CLI::NonNegativeNumber);
  encode->add_flag("--all", all_items, "Encode every item (the default; --shard splits them)")->excludes(enc_index);
  encode->add_option("--bond", enc.bond, "Bond-dimension cap chi of the QTT (0: no cap)")->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  encode->add_option("--tol", enc.tol, "Relative Frobenius truncation error of the QTT (0: only --bond)")->check(CLI::Range(0.0, 1.0));
  encode->add_option("--strategy", enc.strategy, "sequential (n qubits, staircase) or parallel (cores at once, Bell fusion)")
      ->check(CLI::IsMember({"sequential", "parallel"}));
  encode->add_flag("--train", enc.train, "Train the block unitaries (Adam on the unitary manifold, Cayley steps)");
  encode->add_option("--layers", enc.layers, "Layers of two-qubit gates (> 1: layered circuit, SVD-initialised; ignores --bond)")
      ->check(CLI::Range(1, 1000));
  encode->add_option("--iterations", enc.iterations, "Adam iterations for --train")->check(CLI::Range(0, 1000000));
  encode->add_option("--lr", enc.learning_rate, "Adam learning rate for --train")->check(CLI::Range(1e-9, 10.0));
  nk::cli::App::output(encode->add_option("--qasm", enc.qasm_dir, "Also write one OpenQASM 2.0 file per item into this folder"), nk::cli::App::OutputKind::folder);
  encode->add_flag("--pad", enc.pad, "Pad images to a square power-of-two side with zeros instead of refusing");
  encode->add_flag("!--no-verify", enc.verify, "Skip the state-vector check (fidelity, PSNR, SSIM are then NaN)");
  cli.add_shard(*encode);

  tnqe::BaselineOptions base;
  CLI::App* baseline = cli.add_verb("baseline", "Exact amplitude encoding (Mottonen) by the same compiler and counter");
  nk::cli::App::add_input(*baseline, base.input, "nk-data file with /images [N,H,W,C] or /vectors [N,D]")->required();
  nk::cli::App::add_output(*baseline, base.output, base.no_clobber);
  CLI::Option* base_index = baseline->add_option("--index", base.index, "Encode item K only")->check(CLI::NonNegativeNumber);
  baseline->add_flag("--all", all_items, "Encode every item (the default; --shard splits them)")->excludes(base_index);
  nk::cli::App::output(baseline->add_option("--qasm", base.qasm_dir, "Also write one OpenQASM 2.0 file per item into this folder"), nk::cli::App::OutputKind::folder);
  baseline->add_flag("--pad", base.pad, "Pad images to a square power-of-two side with zeros instead of refusing");
  baseline->add_option("--verify-qubits", base.verify_qubits, "Simulate to verify only up to this many qubits")
      ->check(CLI::Range(0, 30));
  cli.add_shard(*baseline);

  tnqe::MergeOptions mrg;
  CLI::App* merge = cli.add_verb("merge", "Join the circuits files of --shard runs (metrics in item order, every item)");
  merge->add_option("-i,--input", mrg.inputs, "circuits files written by encode or baseline (one strategy)")->required();
  nk::cli::App::add_output(*merge, mrg.output, mrg.no_clobber);

  tnqe::SimulateOptions sim;
  CLI::App* simulate = cli.add_verb("simulate", "State-vector simulation of an encoding: fidelity, noise, decoded image",
                                        nk::cli::Randomness::seeded);
  CLI::Option* sim_in = nk::cli::App::add_input(*simulate, sim.input, "circuits file written by encode or baseline");
  CLI::Option* sim_qasm = simulate->add_option("--qasm", sim.qasm, "Simulate an OpenQASM 2.0 file instead")->excludes(sim_in);
  simulate->add_option("--target", sim.target, "With --qasm: the nk-data file holding the encoded item")->needs(sim_qasm);
  simulate->add_option("--index", sim.index, "Item K only")->check(CLI::NonNegativeNumber);
  simulate->add_option("--noise", sim.noise, "Depolarising probability per CNOT (Monte Carlo trajectories)")
      ->check(CLI::Range(0.0, 1.0));
  simulate->add_option("--trajectories", sim.trajectories, "Trajectories for --noise")->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  nk::cli::App::output(simulate->add_option("--decode", sim.decode, "Write the decoded image as PNG"));
  nk::cli::App::add_optional_output(*simulate, sim.output, sim.no_clobber, "the results as HDF5");

  tnqe::SweepOptions swp;
  CLI::App* sweep = cli.add_verb("sweep", "Bond dimension (and layers) against depth, fidelity and PSNR for one item, with plot");
  nk::cli::App::add_input(*sweep, swp.input, "nk-data file with /images [N,H,W,C] or /vectors [N,D]")->required();
  nk::cli::App::add_optional_output(*sweep, swp.output, swp.no_clobber, "the table as HDF5");
  sweep->add_option("--index", swp.index, "The item to sweep")->check(CLI::NonNegativeNumber);
  sweep->add_option("--bonds", swp.bonds, "Bond-dimension caps chi of the sequential (and parallel) points")
      ->delimiter(',')
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  sweep->add_option("--layers", swp.layers, "Layer counts of trained layered circuits (none by default)")
      ->delimiter(',')
      ->check(CLI::Range(2, 1000));
  sweep->add_flag("!--no-parallel", swp.parallel, "Leave out the parallel strategy");
  sweep->add_flag("--train", swp.train, "Also train the staircase at every bond dimension");
  sweep->add_option("--iterations", swp.iterations, "Adam iterations for the trained points")->check(CLI::Range(0, 1000000));
  sweep->add_option("--lr", swp.learning_rate, "Adam learning rate for the trained points")->check(CLI::Range(1e-9, 10.0));
  sweep->add_option("--verify-qubits", swp.verify_qubits, "Simulate the amplitude encoding only up to this many qubits")
      ->check(CLI::Range(0, 30));
  nk::cli::App::output(sweep->add_option("--plot", swp.plot, "Write the depth-versus-PSNR (vectors: fidelity) plot as SVG"));
  sweep->add_flag("--pad", swp.pad, "Pad images to a square power-of-two side with zeros instead of refusing");

  return cli.run(argc, argv, [&] {
    if (*encode) {
      if (enc.strategy == "parallel" && (enc.train || enc.layers > 1))
        throw nk::usage_error("--train and --layers apply to the sequential strategy");
      tnqe::encode(enc, cli.env());
    }
    if (*baseline) tnqe::baseline(base, cli.env());
    if (*merge) tnqe::merge(mrg);
    if (*sweep) tnqe::sweep(swp);
    if (*simulate) {
      if (sim.input.empty() && sim.qasm.empty()) throw nk::usage_error("simulate needs -i FILE or --qasm FILE");
      tnqe::simulate_verb(sim, cli.env());
    }
  });
}
