// cast.cpp - float32 -> E4M3 or BF16 codes, the formats' reference conversion
// (kernels/include/nk/kernels/lowp.hpp), as a verb so that tests and users
// can check it against any other implementation.
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/kernels/lowp.hpp"
#include "nk/log.hpp"
#include "snapmla-decode/snapmla.hpp"

namespace snapmla {

void cast(const CastOptions& o, const nk::RunEnv&) {
  const nk::h5::File file = nk::h5::File::open(o.input);
  const nk::h5::DatasetInfo info = file.info("/x");
  if (!nk::h5::is_float(info.dtype)) throw nk::input_error(file.path(), "/x", "expected float32 or float64, found " + info.type_text);
  if (info.shape.empty() || info.elements() < 1) throw nk::input_error(file.path(), "/x", "is empty: shape " + nk::h5::shape_text(info.shape));
  if (static_cast<double>(info.elements()) * 6.0 > nk::h5::available_memory_bytes())
    throw nk::input_error(file.path(), "/x", nk::h5::shape_text(info.shape) + " is more than the memory available");
  const nk::h5::Array<float> x = file.read<float>("/x");
  nk::h5::require_finite(file.path(), "/x", x);
  nk::h5::Writer out(o.output, kCodesSchema, o.no_clobber);
  if (o.to == "e4m3") {
    std::vector<uint8_t> codes(x.data.size());
    for (size_t i = 0; i < codes.size(); ++i) codes[i] = nk::kernels::to_e4m3(x.data[i]);
    out.write("/codes", codes.data(), x.shape, info.dims);
    out.attr("/codes", "format", "e4m3: bias 7, no infinities, NaN 0x7F/0xFF, max 448; nearest, ties to even, saturating");
  } else {
    std::vector<uint16_t> codes(x.data.size());
    for (size_t i = 0; i < codes.size(); ++i) codes[i] = nk::kernels::to_bf16(x.data[i]);
    out.write("/codes", codes.data(), x.shape, info.dims);
    out.attr("/codes", "format", "bfloat16 bits: nearest, ties to even");
  }
  out.attr("/", "to", o.to);
  out.commit();
  spdlog::info("cast {} values to {}", x.data.size(), o.to);
}

}  // namespace snapmla
