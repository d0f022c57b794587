// command.hpp - an outside model as an extractor (--extractor-cmd) or as the
// prior's velocity (--prior-cmd): a program kept running beside the tool
// and spoken to in binary frames over its standard input and output
// (nk::Coprocess), so any framework's model can be audited or sample.
//
// Both protocols: the program first prints one line, then answers requests
// until its input closes. Every integer is int64 and every value float32,
// little-endian. Each reply is int64 n followed by n values; n must be what
// the request asks for (exit 3 naming the command otherwise).
//
//   --extractor-cmd   environment NK_EXTRACTOR_INPUT="H,W,C", NK_EXTRACTOR_BATCH=B_max
//     first line      "features F"
//     op 0            int64 0, int64 B, x [B,H,W,C] pixels      -> f [B,F]
//     op 1            int64 1, int64 B, x [B,H,W,C], g [B,F]    -> dx [B,H,W,C] = g^T df/dx at x
//
//   --prior-cmd       environment NK_PRIOR_INPUT="H,W,C", NK_PRIOR_BATCH=B_max
//     first line      "velocity H,W,C"
//     op 0            int64 0, int64 B, float32 t, x [B,H,W,C]          -> v [B,H,W,C]
//     op 1            int64 1, int64 B, float32 t, x [B,H,W,C], g [B,D] -> dx [B,H,W,C] = g^T dv/dx at (x, t)
//     (x in the prior's space, x = 2 p - 1; t in [0, 1], data at t = 1)
//
// Requests are stateless: a VJP carries its point again.
#pragma once
#include <memory>
#include <string>

#include "invariance-audit/extractor.hpp"
#include "nk/nn/guidance.hpp"

namespace ia {

std::unique_ptr<Extractor> command_extractor(const std::string& command, nk::nn::Shape image, int64_t capacity);
std::unique_ptr<nk::nn::FlowField> command_field(const std::string& command, nk::nn::Shape image, int64_t capacity);

}  // namespace ia
