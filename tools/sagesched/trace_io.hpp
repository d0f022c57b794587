// trace_io.hpp - writing a trace and importing one from CSV.
#pragma once
#include <string>

#include "nk/h5.hpp"
#include "sagesched/sagesched.hpp"

namespace sage {

/// /requests/* and /categories/name (when named).
void write_trace(nk::h5::Writer& out, const Trace& trace);

/// A real trace from CSV: columns arrival|TIMESTAMP|Timestamp (seconds or
/// YYYY-MM-DD HH:MM:SS[.f]), prompt_tokens|ContextTokens|Request tokens,
/// output_tokens|GeneratedTokens|Response tokens, optional category and
/// prompt (quoted text). Rows with 0 output tokens (BurstGPT's failures) are
/// skipped; rows are sorted by arrival and shifted to start at 0.
Trace trace_from_csv(const std::string& path);

}  // namespace sage
