// byte_level.hpp - GPT-2's byte-level symbols (bytes_to_unicode()), the text
// form of byte-level BPE tokens in tokenizer.json and in GGUF vocabularies.
#pragma once
#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace nk::lm {

/// The text of the four specials (BOS, EOS, MASK, PAD) in exported vocabularies.
inline constexpr std::array<const char*, 4> kSpecialNames = {"<|bos|>", "<|eos|>", "<|mask|>", "<|pad|>"};

/// Byte b as the UTF-8 of the code point standing for it: printable bytes as
/// themselves, the others as 256, 257, ... in byte order.
const std::array<std::string, 256>& byte_symbols();
/// The symbols of each byte, concatenated.
std::string symbols_of(std::string_view bytes);

class Tokenizer;
/// symbols_of() of every internal token of 'tok' (bytes 0-255, then merge i
/// at 256 + i), whatever its vocabulary layout.
std::vector<std::string> internal_symbols(const Tokenizer& tok);

}  // namespace nk::lm
