// llm.cpp - LLM commands, the surrogate route, the reply cache.
#include "simple-evol/llm.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "nk/error.hpp"
#include "nk/rng.hpp"
#include "simple-evol/surrogate.hpp"

namespace sevol {

int64_t count_tokens(const std::string& text) {
  int64_t n = 0;
  bool in_word = false;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c >= 0x80) {
      if (!in_word) ++n;
      in_word = true;
    } else {
      in_word = false;
      if (!std::isspace(c)) ++n;
    }
  }
  return n;
}

std::string render_text(const std::vector<Message>& messages) {
  std::string out;
  for (const Message& m : messages) out += "### " + m.role + "\n" + m.content + "\n\n";
  return out;
}

std::string render_chat_json(const std::vector<Message>& messages, double temperature, int64_t sample) {
  nlohmann::json j;
  j["messages"] = nlohmann::json::array();
  for (const Message& m : messages) j["messages"].push_back({{"role", m.role}, {"content", m.content}});
  j["temperature"] = temperature;
  j["sample"] = sample;
  return j.dump();
}

int surrogate_rung(const std::string& spec) {
  const std::string prefix = "surrogate:";
  if (spec.rfind(prefix, 0) != 0) return -1;
  const std::string r = spec.substr(prefix.size());
  if (r.size() != 1 || !std::isdigit(static_cast<unsigned char>(r[0]))) return -1;
  return r[0] - '0';
}

LlmClient::LlmClient(LlmOptions options) : options_(std::move(options)) {
  rung_ = surrogate_rung(options_.spec);
  if (rung_ < 0 && options_.spec.rfind("surrogate", 0) == 0) {
    throw nk::usage_error("--llm: '" + options_.spec + "' (expected surrogate:0 .. surrogate:9)");
  }
  if (!options_.cache_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(options_.cache_dir, ec);
    if (ec) throw nk::io_error(options_.cache_dir, "cannot create the cache folder: " + ec.message());
  }
}

namespace {

uint64_t hash_text(uint64_t h, const std::string& s) {
  for (unsigned char c : s) h = nk::mix64(h ^ c);
  return nk::mix64(h ^ s.size());
}

/// The first JSON "content" of an OpenAI-style or plain {"content": ...} reply; else the text.
std::string unwrap_reply(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || text[first] != '{') return text;
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    if (j.contains("content") && j["content"].is_string()) return j["content"].get<std::string>();
    if (j.contains("choices") && j["choices"].is_array() && !j["choices"].empty()) {
      const auto& c = j["choices"][0];
      if (c.contains("message") && c["message"].contains("content")) return c["message"]["content"].get<std::string>();
      if (c.contains("text")) return c["text"].get<std::string>();
    }
    if (j.contains("message") && j["message"].contains("content")) return j["message"]["content"].get<std::string>();
    if (j.contains("response") && j["response"].is_string()) return j["response"].get<std::string>();
  } catch (const std::exception&) {
  }
  return text;
}

}  // namespace

std::string LlmClient::run_command(const std::string& input) const {
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) {
    throw nk::Error(nk::Exit::runtime,
                    std::string("cannot create a pipe for the LLM command: ") + std::strerror(errno));
  }
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw nk::Error(nk::Exit::runtime, std::string("cannot fork the LLM command: ") + std::strerror(errno));
  if (pid == 0) {
    setpgid(0, 0);
    dup2(in[0], 0);
    dup2(out[1], 1);
    execl("/bin/sh", "sh", "-c", options_.spec.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  // write the prompt in the background of the read loop: a command may answer before reading all of it
  signal(SIGPIPE, SIG_IGN);
  std::thread writer([fd = in[1], &input] {
    size_t done = 0;
    while (done < input.size()) {
      const ssize_t w = write(fd, input.data() + done, input.size() - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) break;
      done += static_cast<size_t>(w);
    }
    close(fd);
  });
  std::string reply;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(options_.timeout);
  bool timed_out = false;
  char buf[65536];
  while (true) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{out[0], POLLIN, 0};
    const int r = poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (r < 0 && errno != EINTR) break;
    if (r <= 0) continue;
    const ssize_t got = read(out[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    reply.append(buf, static_cast<size_t>(got));
    if (reply.size() > (size_t{64} << 20)) break;
  }
  if (timed_out) kill(-pid, SIGKILL);
  close(out[0]);
  writer.join();
  int status = 0;
  waitpid(pid, &status, 0);
  if (timed_out) throw std::runtime_error("timed out after " + std::to_string(options_.timeout) + " s");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error(WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                               : "killed by signal " + std::to_string(WTERMSIG(status)));
  }
  if (reply.find_first_not_of(" \t\r\n") == std::string::npos) throw std::runtime_error("an empty reply");
  return reply;
}

std::string LlmClient::ask(const std::string& operation, const std::vector<Message>& messages, double temperature) {
  const double temp = std::isnan(temperature) ? options_.temperature : temperature;
  const std::string text = render_text(messages);
  uint64_t key = hash_text(0x5e1f, options_.spec);
  key = hash_text(key, options_.format);
  for (const Message& m : messages) key = hash_text(hash_text(key, m.role), m.content);
  uint64_t t = 0;
  std::memcpy(&t, &temp, sizeof t);
  key = nk::mix64(key ^ t);
  const int64_t sample = samples_[key]++;
  key = nk::mix64(key ^ static_cast<uint64_t>(sample) ^ (options_.seed * 0x9e3779b97f4a7c15ULL));

  LlmCall call;
  call.operation = operation;
  call.prompt_tokens = count_tokens(text);
  std::string reply;
  std::filesystem::path cached;
  if (!options_.cache_dir.empty()) {
    char name[40];
    std::snprintf(name, sizeof name, "%016llx.txt", static_cast<unsigned long long>(key));
    cached = std::filesystem::path(options_.cache_dir) / name;
    std::ifstream in(cached, std::ios::binary);
    if (in) {
      std::stringstream ss;
      ss << in.rdbuf();
      reply = ss.str();
      call.cached = true;
    }
  }
  if (!call.cached) {
    if (rung_ >= 0) {
      reply = surrogate_reply(rung_, text, surrogate_command_seed(options_.seed, sample), temp);
    } else {
      const std::string input = options_.format == "chat-json" ? render_chat_json(messages, temp, sample) : text;
      std::string why;
      for (int attempt = 0; attempt < options_.retries; ++attempt) {
        try {
          reply = unwrap_reply(run_command(input));
          why.clear();
          break;
        } catch (const std::runtime_error& e) {
          why = e.what();
          if (attempt + 1 < options_.retries) std::this_thread::sleep_for(std::chrono::milliseconds(500 << attempt));
        }
      }
      if (!why.empty()) {
        throw nk::Error(nk::Exit::runtime, "the LLM command failed " + std::to_string(options_.retries) +
                                               " times (last: " + why + "): " + options_.spec);
      }
    }
    ++invocations_;
    if (!cached.empty()) {
      const std::filesystem::path tmp = cached.string() + ".tmp." + std::to_string(getpid());
      std::ofstream out(tmp, std::ios::binary);
      out << reply;
      out.close();
      std::error_code ec;
      if (out) std::filesystem::rename(tmp, cached, ec);
      if (ec || !out) std::filesystem::remove(tmp, ec);
    }
  }
  call.reply_tokens = count_tokens(reply);
  calls_.push_back(call);
  return reply;
}

}  // namespace sevol
