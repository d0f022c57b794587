// byte_level.cpp - GPT-2's bytes_to_unicode() table.
#include "byte_level.hpp"

#include <cstdint>

#include "nk/lm/tokenizer.hpp"

namespace nk::lm {

const std::array<std::string, 256>& byte_symbols() {
  static const std::array<std::string, 256> symbols = [] {
    std::array<std::string, 256> s;
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool printable_byte = (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae);
      const uint32_t cp = printable_byte ? b : next++;
      if (cp < 0x80)
        s[b] = std::string(1, static_cast<char>(cp));
      else
        s[b] = {static_cast<char>(0xc0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3f))};
    }
    return s;
  }();
  return symbols;
}

std::string symbols_of(std::string_view bytes) {
  std::string s;
  for (unsigned char b : bytes) s += byte_symbols()[b];
  return s;
}

std::vector<std::string> internal_symbols(const Tokenizer& tok) {
  std::vector<std::string> text;
  text.reserve(256 + tok.merges().size());
  for (int b = 0; b < 256; ++b) text.push_back(byte_symbols()[static_cast<size_t>(b)]);
  for (const auto& [left, right] : tok.merges())
    text.push_back(text[static_cast<size_t>(left)] + text[static_cast<size_t>(right)]);
  return text;
}

}  // namespace nk::lm
