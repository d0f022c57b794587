// merge.cpp - combine shard outputs of one schema along the first axis.
//
// Per dataset, the attribute nk_merge says how: "concat" (default for arrays):
// concatenate along axis 0; "same": identical in every part, copied once
// (default for scalars); "offsets": CSR offsets [n+1], re-based and joined;
// "sum": floating-point partial sums (e.g. gradients of shards), added up;
// "item": belongs to exactly one part (e.g. /results/ALGO/INSTANCE/...), copied
// with the attributes of its group.
#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <set>

#include "nk/context.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "nk/shard.hpp"
#include "nk-data/nk_data.hpp"

namespace nk::data {

namespace {

struct Part {
  h5::File file;
  Shard shard;
};

/// Copies attribute 'a' of 'object' from 'from' to 'out' with its kind:
/// text, integer (as int64) or floating point.
void write_attr_like(h5::Writer& out, const h5::File& from, const std::string& object, const h5::AttrValue& a) {
  if (!a.numeric) {
    out.attr(object, a.name, a.text);
    return;
  }
  const double value = from.attr_number(object, a.name).value_or(0.0);
  if (a.integer) out.attr(object, a.name, static_cast<int64_t>(value));
  else out.attr(object, a.name, value);
}

std::vector<Part> open_parts(const MergeOptions& options) {
  std::vector<Part> parts;
  for (const std::string& path : options.inputs) {
    if (path == "-" && std::count(options.inputs.begin(), options.inputs.end(), "-") > 1) {
      throw usage_error("merge: standard input ('-') can be given once");
    }
    h5::File file = h5::File::open(path);
    Shard shard;
    if (const auto text = file.attr_string("/", "nk_shard")) {
      try {
        shard = parse_shard(*text);
      } catch (const Error&) {
        throw input_error(path, "", "root attribute nk_shard is '" + *text + "', expected I/N");
      }
    }
    parts.push_back({std::move(file), shard});
  }
  return parts;
}

void check_parts(std::vector<Part>& parts, const MergeOptions& options) {
  const std::string schema = parts[0].file.require_schema("");
  for (const Part& part : parts) {
    const std::string other = part.file.require_schema("");
    if (other != schema) {
      throw input_error(part.file.path(), "", "nk_schema is '" + other + "' but '" + parts[0].file.path() +
                                                  "' has '" + schema + "'");
    }
  }
  const bool sharded = std::all_of(parts.begin(), parts.end(), [](const Part& p) { return !p.shard.whole(); });
  if (!sharded) return;  // plain files: keep the command-line order
  std::stable_sort(parts.begin(), parts.end(), [](const Part& a, const Part& b) { return a.shard.index < b.shard.index; });
  const int64_t count = parts[0].shard.count;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].shard.count != count) {
      throw input_error(parts[i].file.path(), "", "is shard " + parts[i].shard.text() + " but other parts are of " +
                                                      std::to_string(count));
    }
    if (i && parts[i].shard.index == parts[i - 1].shard.index) {
      throw input_error(parts[i].file.path(), "", "shard " + parts[i].shard.text() + " is given twice");
    }
  }
  if (static_cast<int64_t>(parts.size()) != count && !options.allow_partial) {
    std::string missing;
    for (int64_t i = 0, next = 0; i < count; ++i) {
      if (next < static_cast<int64_t>(parts.size()) && parts[next].shard.index == i) {
        ++next;
      } else {
        missing += (missing.empty() ? "" : ", ") + std::to_string(i) + "/" + std::to_string(count);
      }
    }
    throw Error(Exit::input, "merge: shard(s) " + missing + " missing (give --allow-partial to merge anyway)");
  }
}

void merge_offsets(h5::Writer& out, const std::vector<Part>& parts, const std::string& path) {
  std::vector<int64_t> joined{0};
  for (const Part& part : parts) {
    const h5::Array<int64_t> offsets = part.file.read<int64_t>(path, 1, "items+1");
    h5::require_offsets(part.file.path(), path, offsets.data);
    const int64_t base = joined.back();
    if (base > std::numeric_limits<int64_t>::max() - offsets.data.back()) {
      throw input_error(part.file.path(), path, "CSR offsets up to " + std::to_string(offsets.data.back()) +
                                                    " after " + std::to_string(base) + " in earlier parts overflow int64");
    }
    for (size_t i = 1; i < offsets.data.size(); ++i) joined.push_back(base + offsets.data[i]);
  }
  const auto dims = parts[0].file.info(path).dims;
  out.write(path, joined.data(), {static_cast<int64_t>(joined.size())}, dims);
  out.attr(path, "nk_merge", "offsets");
}

void merge_sum(h5::Writer& out, const std::vector<Part>& parts, const std::string& path) {
  const h5::DatasetInfo first = parts[0].file.info(path);
  if (!h5::is_float(first.dtype)) {
    throw input_error(parts[0].file.path(), path, "nk_merge 'sum' needs floating-point data, found " + first.type_text);
  }
  h5::Array<double> total = parts[0].file.read<double>(path);
  for (size_t i = 1; i < parts.size(); ++i) {
    const h5::Array<double> part = parts[i].file.read<double>(path);
    if (part.shape != total.shape) {
      throw input_error(parts[i].file.path(), path, "shape " + nk::h5::shape_text(part.shape) + " differs from " +
                                                        nk::h5::shape_text(total.shape) + " (nk_merge 'sum')");
    }
    for (size_t j = 0; j < total.data.size(); ++j) total.data[j] += part.data[j];
  }
  if (first.dtype == h5::DType::f32) {
    const std::vector<float> narrowed(total.data.begin(), total.data.end());
    out.write(path, narrowed.data(), total.shape, first.dims, first.units);
  } else {
    out.write(path, total.data.data(), total.shape, first.dims, first.units);
  }
  out.attr(path, "nk_merge", "sum");
}

void merge_dataset(h5::Writer& out, const std::vector<Part>& parts, const std::string& path) {
  const h5::DatasetInfo first = parts[0].file.info(path);
  std::string rule = parts[0].file.attr_string(path, "nk_merge").value_or(first.shape.empty() ? "same" : "concat");
  if (rule == "offsets") return merge_offsets(out, parts, path);
  if (rule == "sum") return merge_sum(out, parts, path);
  if (rule != "concat" && rule != "same") {
    throw input_error(parts[0].file.path(), path, "unknown nk_merge rule '" + rule + "'");
  }
  std::vector<h5::RawDataset> raws;
  for (const Part& part : parts) {
    if (!part.file.has(path)) {
      throw input_error(part.file.path(), path, "missing here but present in '" + parts[0].file.path() + "'");
    }
    h5::RawDataset raw = part.file.read_raw(path);
    if (raw.info.type_text != first.type_text || (!raws.empty() && raw.element_size != raws.front().element_size)) {
      throw input_error(part.file.path(), path, "dtype " + raw.info.type_text + " differs from " + first.type_text);
    }
    const bool trailing_match = raw.info.shape.size() == first.shape.size() &&
                                std::equal(raw.info.shape.begin() + (first.shape.empty() ? 0 : 1), raw.info.shape.end(),
                                           first.shape.begin() + (first.shape.empty() ? 0 : 1));
    if (!trailing_match || (rule == "same" && raw.info.shape != first.shape)) {
      throw input_error(part.file.path(), path, "shape " + nk::h5::shape_text(raw.info.shape) + " does not fit " +
                                                    nk::h5::shape_text(first.shape) + " of '" + parts[0].file.path() + "'");
    }
    if (rule == "same" && !raws.empty() && !raw.has_vlen && raw.bytes != raws.front().bytes) {
      throw input_error(part.file.path(), path, "differs from '" + parts[0].file.path() + "' but nk_merge is 'same'");
    }
    raws.push_back(std::move(raw));
  }
  if (rule == "same") {
    out.write_raw(path, raws.front());
  } else {
    h5::RawDataset joined;
    joined.info = raws.front().info;
    joined.element_size = raws.front().element_size;
    joined.mem_type = h5::Handle(H5Tcopy(raws.front().mem_type.get()));
    joined.info.shape[0] = 0;
    for (const h5::RawDataset& raw : raws) {
      joined.info.shape[0] += raw.info.shape[0];
      joined.bytes.insert(joined.bytes.end(), raw.bytes.begin(), raw.bytes.end());
    }
    out.write_raw(path, joined);
  }
  if (const auto given = parts[0].file.attr_string(path, "nk_merge")) out.attr(path, "nk_merge", *given);
  // Other attributes (e.g. column names) describe the data, not the part: kept from the first.
  for (const h5::AttrValue& a : parts[0].file.attrs(path)) {
    if (a.name == "dims" || a.name == "units" || a.name == "nk_merge") continue;
    write_attr_like(out, parts[0].file, path, a);
  }
  for (h5::RawDataset& raw : raws) h5::release_vlen(raw);
}

}  // namespace

void merge(const MergeOptions& options) {
  if (options.inputs.empty()) throw usage_error("merge: give the files to merge");
  std::vector<Part> parts = open_parts(options);
  check_parts(parts, options);
  // Datasets marked "item" live in exactly one part; every other dataset must be in all.
  std::vector<std::string> paths;
  std::map<std::string, std::vector<size_t>> holders;
  for (size_t i = 0; i < parts.size(); ++i) {
    for (const std::string& path : parts[i].file.datasets()) {
      if (holders[path].empty()) paths.push_back(path);
      holders[path].push_back(i);
    }
  }
  std::map<std::string, bool> item;
  for (const std::string& path : paths) {
    const Part& first = parts[holders[path].front()];
    item[path] = first.file.attr_string(path, "nk_merge").value_or("") == "item";
    if (item[path]) {
      if (holders[path].size() > 1) {
        throw input_error(parts[holders[path][1]].file.path(), path,
                          "is an item of one shard but is also in '" + first.file.path() + "'");
      }
    } else if (holders[path].size() != parts.size()) {
      for (size_t i = 0; i < parts.size(); ++i) {
        if (std::find(holders[path].begin(), holders[path].end(), i) == holders[path].end()) {
          throw input_error(parts[i].file.path(), path, "missing here but present in '" + first.file.path() + "'");
        }
      }
    }
  }
  run_context().shard.clear();
  h5::Writer out(options.output, parts[0].file.require_schema(""), options.no_clobber);
  for (const h5::AttrValue& a : parts[0].file.attrs("/")) {
    if (a.name.rfind("nk_", 0) == 0 || a.numeric) continue;
    out.attr("/", a.name, a.text);
  }
  std::string sources;
  for (const Part& part : parts) sources += (sources.empty() ? "" : "\n") + part.file.path();
  out.attr("/", "nk_merged_from", sources);
  if (const auto tool = parts[0].file.attr_string("/", "nk_command")) out.attr("/", "nk_source_command", *tool);
  std::set<std::string> groups_done;
  for (const std::string& path : paths) {
    if (!item[path]) {
      merge_dataset(out, parts, path);
      // The attributes of the dataset's group describe the run, not the part: kept from the first.
      const std::string group = path.substr(0, path.rfind('/'));
      if (!group.empty() && groups_done.insert(group).second)
        for (const h5::AttrValue& a : parts[0].file.attrs(group)) write_attr_like(out, parts[0].file, group, a);
      continue;
    }
    const Part& part = parts[holders[path].front()];
    h5::RawDataset raw = part.file.read_raw(path);
    out.write_raw(path, raw);
    h5::release_vlen(raw);
    out.attr(path, "nk_merge", "item");
    const std::string group = path.substr(0, path.rfind('/'));
    if (!group.empty() && groups_done.insert(group).second) {
      for (const h5::AttrValue& a : part.file.attrs(group)) {
        write_attr_like(out, part.file, group, a);
      }
    }
  }
  out.commit();
  spdlog::info("merged {} file(s), {} dataset(s)", parts.size(), paths.size());
}

}  // namespace nk::data
