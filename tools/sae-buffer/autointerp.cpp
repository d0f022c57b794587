// autointerp.cpp - contexts of a latent's firings, the judge's round trip, detection scores.
#include "sae-buffer/autointerp.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <unistd.h>

#include <string>
#include <vector>

#include "nk/command.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/lm/tokenizer.hpp"
#include "nk/log.hpp"
#include "nk/rng.hpp"

namespace sb {

namespace {

constexpr uint64_t kJudgeStream = 31;

// The text of tokens [t - window, t + window] within t's row, t marked <<...>>.
std::string context(const nk::lm::Tokenizer& tok, const std::vector<int32_t>& tokens, const std::vector<int64_t>& offsets,
                    int64_t t, int64_t window) {
  const auto row = std::upper_bound(offsets.begin(), offsets.end(), t) - offsets.begin() - 1;
  const int64_t begin = std::max(offsets[row], t - window), end = std::min(offsets[row + 1], t + window + 1);
  std::string text;
  for (int64_t i = begin; i < end; ++i) {
    if (i == t) text += "<<";
    text += tok.bytes_of(tokens[i]);
    if (i == t) text += ">>";
  }
  return text;
}

// Runs 'command' with 'request' on standard input; returns its standard output.
std::string run_judge(const std::string& command, const std::string& request, int32_t latent) {
  return nk::run_command(command, request + "\n", "--judge-cmd", "on latent " + std::to_string(latent));
}

}  // namespace

JudgeScores judge_latents(const JudgeOptions& o, const std::vector<int32_t>& tokens, const std::vector<int64_t>& offsets,
                          const CodesT<float>& codes, int64_t latents, uint64_t seed) {
  const int64_t T = codes.rows();
  const nk::h5::File model = nk::h5::File::open(o.model);
  const nk::lm::Tokenizer tok = nk::lm::Tokenizer::load(model, "/tokenizer");
  for (const int32_t t : tokens)
    if (t < 0 || t >= tok.size())
      throw nk::input_error(o.model, "/tokenizer", "the capture's token " + std::to_string(t) + " is outside this tokenizer");
  // Every latent's firings, (activation, token).
  std::vector<std::vector<std::pair<float, int64_t>>> fires(static_cast<size_t>(latents));
  for (int64_t r = 0; r < T; ++r)
    for (int64_t e = codes.offsets[r]; e < codes.offsets[r + 1]; ++e) fires[codes.latent[e]].push_back({codes.value[e], r});
  const int64_t half = o.queries / 2;
  std::vector<int32_t> candidates;
  for (int64_t j = 0; j < latents; ++j)
    if (static_cast<int64_t>(fires[j].size()) >= o.examples + half && static_cast<int64_t>(fires[j].size()) + half <= T)
      candidates.push_back(static_cast<int32_t>(j));
  if (candidates.empty())
    throw nk::Error(nk::Exit::input, "--judge-cmd: no latent fires on " + std::to_string(o.examples + half) +
                                         " tokens or more of the " + std::to_string(T) + " given; evaluate on more rows");
  nk::Rng rng = nk::Rng(seed).split(kJudgeStream);
  nk::shuffle_prefix(candidates, static_cast<size_t>(o.latents), rng);
  candidates.resize(std::min<size_t>(candidates.size(), static_cast<size_t>(o.latents)));
  std::sort(candidates.begin(), candidates.end());

  JudgeScores out;
  for (const int32_t j : candidates) {
    auto f = fires[j];
    std::stable_sort(f.begin(), f.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    nlohmann::json request;
    request["latent"] = j;
    request["examples"] = nlohmann::json::array();
    for (int64_t i = 0; i < o.examples; ++i) request["examples"].push_back(context(tok, tokens, offsets, f[i].second, o.window));
    // half the queries from the other firings, half from tokens where j is silent
    std::vector<int64_t> rest(f.size() - static_cast<size_t>(o.examples));
    for (size_t i = 0; i < rest.size(); ++i) rest[i] = f[static_cast<size_t>(o.examples) + i].second;
    nk::shuffle_prefix(rest, static_cast<size_t>(half), rng);
    std::vector<char> firing(static_cast<size_t>(T), 0);
    for (const auto& p : f) firing[p.second] = 1;
    std::vector<std::pair<int64_t, bool>> queries;
    for (int64_t i = 0; i < half; ++i) queries.push_back({rest[i], true});
    while (static_cast<int64_t>(queries.size()) < 2 * half) {
      const auto t = static_cast<int64_t>(rng.below(static_cast<uint64_t>(T)));
      if (!firing[t]) queries.push_back({t, false});
    }
    nk::shuffle(queries, rng);
    request["queries"] = nlohmann::json::array();
    for (const auto& q : queries) request["queries"].push_back(context(tok, tokens, offsets, q.first, o.window));
    const std::string reply =
        run_judge(o.command, request.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), j);
    nlohmann::json answer;
    try {
      answer = nlohmann::json::parse(reply);
    } catch (const std::exception&) {
      throw nk::Error(nk::Exit::runtime, "--judge-cmd '" + o.command + "': the answer for latent " + std::to_string(j) +
                                             " is not JSON: " + reply.substr(0, 80));
    }
    if (!answer.is_object() || !answer.contains("fires") || !answer["fires"].is_array() ||
        answer["fires"].size() != queries.size())
      throw nk::Error(nk::Exit::runtime, "--judge-cmd '" + o.command + "': the answer for latent " + std::to_string(j) +
                                             " needs \"fires\": a list of " + std::to_string(queries.size()) + " booleans");
    int64_t right = 0;
    for (size_t i = 0; i < queries.size(); ++i) {
      const auto& v = answer["fires"][i];
      if (!v.is_boolean() && !v.is_number())
        throw nk::Error(nk::Exit::runtime, "--judge-cmd '" + o.command + "': \"fires\" holds " + v.dump() + " for latent " + std::to_string(j));
      const bool said = v.is_boolean() ? v.get<bool>() : v.get<double>() != 0;
      right += said == queries[i].second;
    }
    out.latent.push_back(j);
    out.score.push_back(static_cast<double>(right) / static_cast<double>(queries.size()));
  }
  out.mean = std::accumulate(out.score.begin(), out.score.end(), 0.0) / static_cast<double>(out.score.size());
  return out;
}

}  // namespace sb
