// quant.cpp - a float cache into pages of one row layout (io.hpp: paginate).
#include "nk/h5.hpp"
#include "nk/log.hpp"
#include "snapmla-decode/io.hpp"
#include "snapmla-decode/snapmla.hpp"

namespace snapmla {

void quant(const QuantOptions& o, const nk::RunEnv&) {
  const nk::h5::File file = nk::h5::File::open(o.input);
  const Cache cache = read_cache(file);
  const Paged paged = paginate(cache, o.layout);
  write_paged(paged, o.output, o.no_clobber);
  int64_t tokens = 0;
  for (int32_t l : cache.lengths) tokens += l;
  spdlog::info("{}: {} tokens of {} rows in {} pages, {} B a token ({:.1f} MiB)", layout_name(o.layout), tokens, cache.batch,
               paged.page_count, paged.row_bytes, static_cast<double>(tokens * paged.row_bytes) / (1 << 20));
}

}  // namespace snapmla
