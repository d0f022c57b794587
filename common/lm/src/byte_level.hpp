// byte_level.hpp - GPT-2's byte-level symbols (bytes_to_unicode()), the text
// form of byte-level BPE tokens in tokenizer.json and in GGUF vocabularies.
#pragma once
#include <array>
#include <string>
#include <string_view>

namespace nk::lm {

/// The text of the four specials (BOS, EOS, MASK, PAD) in exported vocabularies.
inline constexpr std::array<const char*, 4> kSpecials = {"<|bos|>", "<|eos|>", "<|mask|>", "<|pad|>"};

/// Byte b as the UTF-8 of the code point standing for it: printable bytes as
/// themselves, the others as 256, 257, ... in byte order.
const std::array<std::string, 256>& byte_symbols();
/// The symbols of each byte, concatenated.
std::string symbols_of(std::string_view bytes);

}  // namespace nk::lm
