// info.cpp - what a neurkit (or any HDF5) file holds: schema, provenance, datasets.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <sstream>

#include "nk/h5.hpp"
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

std::string padded(const std::string& text, size_t width) {
  return text.size() >= width ? text : text + std::string(width - text.size(), ' ');
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
  } else if (format == "tsv") {
    out << "kind\tname\tshape\tdtype\tdims\tunits\tvalue\n";
    for (const h5::AttrValue& a : attributes) out << "attribute\t" << a.name << "\t\t\t\t\t" << one_line(a.text) << "\n";
    for (const h5::DatasetInfo& d : datasets) {
      out << "dataset\t" << d.path << "\t" << nk::h5::shape_text(d.shape) << "\t" << d.type_text << "\t" << d.dims << "\t"
          << d.units << "\t\n";
    }
  } else {
    out << "file: " << (options.input == "-" ? "(standard input)" : options.input) << "\n";
    size_t name_width = 4;
    for (const h5::AttrValue& a : attributes) name_width = std::max(name_width, a.name.size());
    for (const h5::AttrValue& a : attributes) out << "  " << padded(a.name, name_width) << "  " << one_line(a.text) << "\n";
    size_t path_width = 7, shape_width = 5;
    for (const h5::DatasetInfo& d : datasets) {
      path_width = std::max(path_width, d.path.size());
      shape_width = std::max(shape_width, nk::h5::shape_text(d.shape).size());
    }
    out << "\n  " << padded("DATASET", path_width) << "  " << padded("SHAPE", shape_width) << "  "
        << padded("DTYPE", 10) << "  " << padded("DIMS", 8) << "  UNITS\n";
    for (const h5::DatasetInfo& d : datasets) {
      out << "  " << padded(d.path, path_width) << "  " << padded(nk::h5::shape_text(d.shape), shape_width) << "  "
          << padded(d.type_text, 10) << "  " << padded(d.dims.empty() ? "-" : d.dims, 8) << "  "
          << (d.units.empty() ? "-" : d.units) << "\n";
    }
  }
  std::cout << out.str() << std::flush;
}

}  // namespace nk::data
