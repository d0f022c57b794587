// llm.hpp - the language model a framework talks to: a command (--llm-cmd:
// llama.cpp, ollama, an HTTP script) or a shipped surrogate (surrogate:R),
// with a reply cache, retries and token counts.
#pragma once
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace sevol {

struct Message {
  std::string role;  ///< system, user or assistant
  std::string content;
};

/// One call as /llm records it.
struct LlmCall {
  std::string operation;  ///< the framework's operation (generate, compress, e1, reflect, ...)
  int64_t prompt_tokens = 0, reply_tokens = 0;
  bool cached = false;
};

/// Tokens of a text by a fixed rule (runs of letters or digits, and each other
/// non-space character, count one): a tokenizer-free count that is the same
/// for every model and every run.
int64_t count_tokens(const std::string& text);

/// The messages as the text a command reads on stdin ("### role" headers).
std::string render_text(const std::vector<Message>& messages);
/// {"messages": [...], "temperature": T, "sample": k} for --llm-format chat-json.
std::string render_chat_json(const std::vector<Message>& messages, double temperature, int64_t sample);

struct LlmOptions {
  std::string spec;             ///< "surrogate:R" or the command line of --llm-cmd
  std::string format = "text";  ///< text or chat-json (commands only)
  std::string cache_dir;        ///< empty: no cache
  double temperature = 1.0;
  double timeout = 600;  ///< seconds per command call
  int retries = 3;       ///< attempts per call before exit 1
  uint64_t seed = 0;
};

class LlmClient {
 public:
  explicit LlmClient(LlmOptions options);
  /// The reply to 'messages'; identical requests in one run get sample
  /// indices 0, 1, ... so that they may differ and still be cached. Throws
  /// nk::Error (exit 1) when a command fails 'retries' times.
  /// 'temperature' overrides the client's when not NaN (ReEvo samples its
  /// first population 0.3 warmer).
  std::string ask(const std::string& operation, const std::vector<Message>& messages, double temperature = NAN);
  const std::vector<LlmCall>& calls() const { return calls_; }
  /// Calls that reached the model (cache hits excluded).
  int64_t invocations() const { return invocations_; }
  const std::string& spec() const { return options_.spec; }
  bool surrogate() const { return rung_ >= 0; }

 private:
  std::string run_command(const std::string& input) const;
  LlmOptions options_;
  int rung_ = -1;
  std::vector<LlmCall> calls_;
  int64_t invocations_ = 0;
  std::map<uint64_t, int64_t> samples_;  ///< request hash -> requests seen
};

/// "surrogate:R" -> R (0..9); -1 for anything else.
int surrogate_rung(const std::string& spec);

}  // namespace sevol
