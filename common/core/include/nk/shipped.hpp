// shipped.hpp - files neurkit ships in data/ (checkpoints, calibrated
// profiles), found without the user naming a path.
#pragma once
#include <string>

namespace nk {

/// The path of data/<relative>: under $NK_DATA when set, else beside an
/// installed binary (<bin>/../share/neurkit/data), else in the source tree
/// the binary was built from. Exit 4 (I/O) naming every place looked in
/// when none has it.
std::string shipped_data(const std::string& relative);

}  // namespace nk
