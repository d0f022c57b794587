// merge.cpp - the merge verb: circuits files of shards into one, items in order.
#include <map>

#include "nk/error.hpp"
#include "nk/log.hpp"
#include "tnqe-encode/circuits_io.hpp"

namespace tnqe {

void merge(const MergeOptions& o) {
  if (o.inputs.empty()) throw nk::usage_error("merge needs at least one input file");
  struct Source2 {
    nk::h5::File file;
    std::vector<int64_t> index;
  };
  std::vector<Source2> files;
  std::string strategy;
  std::map<int64_t, size_t> owner;  // item -> file
  for (const std::string& path : o.inputs) {
    nk::h5::File f = nk::h5::File::open(path);
    f.require_schema(kCircuitsSchema);
    f.require("/metrics/index");
    const std::string st = f.attr_string("/", "strategy").value_or("");
    if (files.empty()) strategy = st;
    if (st != strategy)
      throw nk::input_error(path, "", "strategy '" + st + "' differs from '" + strategy + "' of '" + o.inputs[0] + "'");
    auto idx = f.read<int64_t>("/metrics/index", 1, "N");
    for (int64_t i : idx.data) {
      if (owner.count(i))
        throw nk::input_error(path, "/metrics/index", "item " + std::to_string(i) + " is also in '" + o.inputs[owner[i]] + "'");
      owner[i] = files.size();
    }
    files.push_back({std::move(f), std::move(idx.data)});
  }
  static const char* columns[] = {"qubits", "cnots", "single_qubit_gates", "depth", "cnot_depth", "fidelity", "psnr",
                                  "ssim", "bond_dim", "success_probability", "seconds"};
  // Each file's columns, read once.
  std::vector<std::map<std::string, std::vector<double>>> per_file(files.size());
  for (size_t f = 0; f < files.size(); ++f)
    for (const char* col : columns) {
      auto a = files[f].file.read<double>(std::string("/metrics/") + col, 1, "N");
      if (a.data.size() != files[f].index.size())
        throw nk::input_error(files[f].file.path(), std::string("/metrics/") + col, "length differs from /metrics/index");
      per_file[f][col] = std::move(a.data);
    }
  std::vector<std::map<int64_t, size_t>> row_of(files.size());
  for (size_t f = 0; f < files.size(); ++f)
    for (size_t i = 0; i < files[f].index.size(); ++i) row_of[f][files[f].index[i]] = i;
  std::map<std::string, std::vector<double>> values;
  std::vector<int64_t> order;
  for (const auto& [item, which] : owner) {
    order.push_back(item);
    for (const char* col : columns) values[col].push_back(per_file[which][col][row_of[which][item]]);
  }
  nk::h5::Writer out(o.output, kCircuitsSchema, o.no_clobber);
  for (const nk::h5::AttrValue& a : files[0].file.attrs("/")) {
    if (a.name.rfind("nk_", 0) == 0) continue;
    if (a.numeric)
      out.attr("/", a.name, std::stod(a.text));
    else
      out.attr("/", a.name, a.text);
  }
  const int64_t n = static_cast<int64_t>(order.size());
  out.allow_nonfinite("/metrics/psnr");  // Inf: an exact reproduction
  out.allow_nonfinite("/metrics/ssim");  // NaN: vectors have none
  out.allow_nonfinite("/metrics/fidelity");  // NaN: not simulated (--no-verify, above --verify-qubits)
  out.write("/metrics/index", order.data(), {n}, "N");
  for (const char* col : columns) {
    const std::string name = col;
    out.write("/metrics/" + name, values[name].data(), {n}, "N",
              name == "psnr" ? "dB" : name == "seconds" ? "s" : "");
  }
  out.attr("/metrics", "strategy", strategy);
  nk::h5::Handle lcpl(H5Pcreate(H5P_LINK_CREATE));
  H5Pset_create_intermediate_group(lcpl.get(), 1);
  for (const auto& [item, which] : owner) {
    const std::string g = item_group(item);
    if (H5Ocopy(files[which].file.id(), g.c_str(), out.id(), g.c_str(), H5P_DEFAULT, lcpl.get()) < 0)
      throw nk::input_error(files[which].file.path(), g, "cannot be copied (missing or damaged)");
  }
  out.commit();
  spdlog::info("merged {} items from {} files", n, files.size());
}

}  // namespace tnqe
