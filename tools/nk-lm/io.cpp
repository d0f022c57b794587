// io.cpp - what the nk-lm verbs share: opening a model, token-id files.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "nk-lm/nk_lm.hpp"
#include "nk/error.hpp"
#include "nk/h5.hpp"
#include "nk/lm/corpus.hpp"
#include "nk/shard.hpp"

namespace nklm {

nk::lm::Checkpoint load_model(const std::string& path) { return nk::lm::load_checkpoint(path); }

std::vector<std::vector<int32_t>> read_token_rows(const std::string& path, int64_t vocab, int64_t context) {
  const nk::h5::File in = nk::h5::File::open(path);
  in.require("/tokens");
  const nk::h5::DatasetInfo info = in.info("/tokens");
  if (info.shape.empty() || info.shape.size() > 2)
    throw nk::input_error(path, "/tokens", "must be [T] or [B,T], got " + nk::h5::shape_text(info.shape));
  if (!nk::h5::is_integer(info.dtype)) throw nk::input_error(path, "/tokens", "token ids must be integers, got " + info.type_text);
  const int64_t T = info.shape.back();
  if (T > context)
    throw nk::input_error(path, "/tokens", "rows of " + std::to_string(T) + " tokens pass the model's context of " +
                                               std::to_string(context) + " (cut them into windows first)");
  const nk::h5::Array<int32_t> a = in.read<int32_t>("/tokens");
  const int64_t B = info.shape.size() == 2 ? info.shape[0] : 1;
  // generate's output: row b is its prompt (prompt_lengths[b] tokens, padded
  // to the longest prompt with -1), then its continuation; the row read is
  // the two joined.
  std::vector<int64_t> prompt(static_cast<size_t>(B), 0);
  int64_t longest = 0;
  if (in.has("/prompt_lengths")) {
    const nk::h5::Array<int64_t> p = in.read<int64_t>("/prompt_lengths", 1, "B");
    if (p.size() != B) throw nk::input_error(path, "/prompt_lengths", std::to_string(p.size()) + " lengths for " + std::to_string(B) + " rows");
    for (int64_t b = 0; b < B; ++b) longest = std::max(longest, p.data[static_cast<size_t>(b)]);
    for (int64_t b = 0; b < B; ++b) {
      const int64_t n = p.data[static_cast<size_t>(b)];
      if (n < 1 || longest > T)
        throw nk::input_error(path, "/prompt_lengths", "length " + std::to_string(n) + " of row " + std::to_string(b) + " is outside 1.." +
                                                           std::to_string(T) + " (the longest must fit the rows)");
      prompt[static_cast<size_t>(b)] = n;
    }
  }
  std::vector<std::vector<int32_t>> rows(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t < T; ++t) {
      if (t == prompt[static_cast<size_t>(b)] && t < longest) {
        t = longest;  // past the prompt's padding
        if (t == T) break;
      }
      const int32_t id = a.data[static_cast<size_t>(b * T + t)];
      if (id == -1 && t < prompt[static_cast<size_t>(b)])
        throw nk::input_error(path, "/tokens", "row " + std::to_string(b) + " has padding inside its prompt of " +
                                                   std::to_string(prompt[static_cast<size_t>(b)]) + " (/prompt_lengths)");
      if (id == -1) break;  // padding: the rest of the row is ignored
      if (id < 0 || id >= vocab)
        throw nk::input_error(path, "/tokens", "id " + std::to_string(id) + " at [" + std::to_string(b) + "," +
                                                   std::to_string(t) + "] is outside the vocabulary 0.." + std::to_string(vocab - 1));
      rows[static_cast<size_t>(b)].push_back(id);
    }
    if (rows[static_cast<size_t>(b)].empty()) throw nk::input_error(path, "/tokens", "row " + std::to_string(b) + " is empty");
  }
  return rows;
}

void check_writable(const std::string& path, bool no_clobber) {
  if (path.empty() || path == "-") return;
  const std::filesystem::path p(path);
  const std::filesystem::path folder = p.has_parent_path() ? p.parent_path() : std::filesystem::path(".");
  if (!std::filesystem::is_directory(folder) || ::access(folder.c_str(), W_OK) != 0)
    throw nk::io_error(path, "its folder does not exist or is not writable");
  if (no_clobber && std::filesystem::exists(p)) throw nk::io_error(path, "exists, and --no-clobber was given");
}

std::vector<int32_t> pad_rows(const std::vector<std::vector<int32_t>>& rows, int64_t width) {
  std::vector<int32_t> out(rows.size() * static_cast<size_t>(width), -1);
  for (size_t b = 0; b < rows.size(); ++b)
    for (size_t t = 0; t < rows[b].size() && static_cast<int64_t>(t) < width; ++t) out[b * static_cast<size_t>(width) + t] = rows[b][t];
  return out;
}

void add_windows(const std::vector<int32_t>& ids, int32_t bos, int64_t context, std::vector<std::vector<int32_t>>& rows) {
  const size_t per = static_cast<size_t>(context - 1);
  for (size_t begin = 0; begin < ids.size() || (begin == 0 && ids.empty()); begin += per) {
    std::vector<int32_t> row{bos};
    row.insert(row.end(), ids.begin() + static_cast<std::ptrdiff_t>(begin),
               ids.begin() + static_cast<std::ptrdiff_t>(std::min(ids.size(), begin + per)));
    rows.push_back(std::move(row));
    if (ids.empty()) break;
  }
}

int64_t corpus_rows(const std::string& path, const std::string& split_name, const nk::lm::Tokenizer& tok,
                    int64_t context, const nk::Shard& shard, const std::string& verb,
                    std::vector<std::vector<int32_t>>& rows) {
  const nk::lm::Corpus corpus = nk::lm::Corpus::open(path);
  if (corpus.tokenizer().fingerprint() != tok.fingerprint())
    throw nk::usage_error(verb + ": " + path + " was cut with another tokenizer than the model's");
  const nk::lm::Split split = split_name == "train" ? nk::lm::Split::train : nk::lm::Split::validation;
  std::vector<int64_t> docs;
  for (int64_t d = 0; d < corpus.documents(); ++d)
    if (corpus.split(d) == split) docs.push_back(d);
  const auto [first, last] = nk::shard_range(shard, static_cast<int64_t>(docs.size()));
  int64_t bytes = 0;
  for (int64_t i = first; i < last; ++i) {
    const auto doc = corpus.document(docs[static_cast<size_t>(i)]);
    add_windows(std::vector<int32_t>(doc.begin(), doc.end()), tok.bos(), context, rows);
    bytes += corpus.document_bytes(docs[static_cast<size_t>(i)]);
  }
  if (rows.empty()) throw nk::usage_error(verb + ": no documents in this split and shard of " + path);
  return bytes;
}

std::vector<int64_t> prompt_lengths(const std::string& token_ids, size_t rows, int64_t given) {
  std::vector<int64_t> prompts(rows, 1);
  if (given >= 0) {
    std::fill(prompts.begin(), prompts.end(), given);
  } else if (!token_ids.empty()) {
    const nk::h5::File in = nk::h5::File::open(token_ids);
    if (in.has("/prompt_lengths")) {
      const nk::h5::Array<int64_t> p = in.read<int64_t>("/prompt_lengths", 1, "B");
      if (p.size() != static_cast<int64_t>(rows))
        throw nk::input_error(token_ids, "/prompt_lengths", std::to_string(p.size()) + " lengths for " + std::to_string(rows) + " rows");
      prompts.assign(p.data.begin(), p.data.end());
    }
  }
  return prompts;
}

}  // namespace nklm
