// info.cpp - what a neurkit (or any HDF5) file holds: schema, provenance, datasets.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <sstream>

#include "nk/h5.hpp"
#include "nk/table.hpp"
#include "nk-data/nk_data.hpp"

namespace nk::data {

namespace {

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
          out += escaped;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

/// One line per value in TSV and tables: control characters are escaped.
std::string one_line(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else out += c;
  }
  return out;
}

}  // namespace

void info(const InfoOptions& options) {
  const h5::File file = h5::File::open(options.input);
  const std::vector<h5::AttrValue> attributes = file.attrs("/");
  std::vector<h5::DatasetInfo> datasets;
  for (const std::string& path : file.datasets()) datasets.push_back(file.info(path));

  std::string format = options.format;
  if (format == "auto") format = isatty(STDOUT_FILENO) ? "table" : "tsv";
  std::ostringstream out;
  if (format == "json") {
    out << "{\n  \"file\": " << json_string(options.input) << ",\n  \"attributes\": {";
    for (size_t i = 0; i < attributes.size(); ++i) {
      out << (i ? ",\n    " : "\n    ") << json_string(attributes[i].name) << ": "
          << (attributes[i].numeric && attributes[i].text.find(',') == std::string::npos ? attributes[i].text
                                                                                        : json_string(attributes[i].text));
    }
    out << (attributes.empty() ? "},\n" : "\n  },\n") << "  \"datasets\": [";
    for (size_t i = 0; i < datasets.size(); ++i) {
      const h5::DatasetInfo& d = datasets[i];
      out << (i ? ",\n    " : "\n    ") << "{\"path\": " << json_string(d.path) << ", \"shape\": " << nk::h5::shape_text(d.shape)
          << ", \"dtype\": " << json_string(d.type_text) << ", \"dims\": " << json_string(d.dims)
          << ", \"units\": " << json_string(d.units) << "}";
    }
    out << (datasets.empty() ? "]\n}\n" : "\n  ]\n}\n");
    std::cout << out.str() << std::flush;
    return;
  }
  using Layout = nk::Table::Layout;
  std::vector<std::vector<std::string>> rows;
  if (format == "tsv") {
    for (const h5::AttrValue& a : attributes) rows.push_back({"attribute", a.name, "", "", "", "", one_line(a.text)});
    for (const h5::DatasetInfo& d : datasets)
      rows.push_back({"dataset", d.path, nk::h5::shape_text(d.shape), d.type_text, d.dims, d.units, ""});
    nk::Table::print(stdout, {"kind", "name", "shape", "dtype", "dims", "units", "value"}, rows, Layout::tsv);
    return;
  }
  std::printf("file: %s\n", options.input == "-" ? "(standard input)" : options.input.c_str());
  for (const h5::AttrValue& a : attributes) rows.push_back({a.name, one_line(a.text)});
  nk::Table::print(stdout, {"ATTRIBUTE", "VALUE"}, rows, Layout::aligned, {1});
  rows.clear();
  for (const h5::DatasetInfo& d : datasets)
    rows.push_back({d.path, nk::h5::shape_text(d.shape), d.type_text, d.dims.empty() ? "-" : d.dims, d.units.empty() ? "-" : d.units});
  std::printf("\n");
  nk::Table::print(stdout, {"DATASET", "SHAPE", "DTYPE", "DIMS", "UNITS"}, rows, Layout::aligned, {1, 2, 3, 4});
}

}  // namespace nk::data
