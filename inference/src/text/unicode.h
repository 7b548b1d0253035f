// Internal Unicode helpers for the text encoders: UTF-8 decode/encode, the character classes the CLIP
// pre-tokenizer regex needs (\s, \p{L}, \p{N}), simple lower-casing and NFC pair composition.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cubeforge::text {

inline constexpr char32_t kReplacementChar = 0xFFFD;

// Decodes UTF-8; malformed or truncated sequences, overlongs and surrogates each become U+FFFD.
std::u32string decode_utf8(std::string_view s);
void append_utf8(std::string& out, char32_t cp);
std::string encode_utf8(std::u32string_view s);

// Unicode White_Space (what \s matches in the reference regex engine).
bool is_space(char32_t cp);
bool is_letter(char32_t cp);  // general category L*
bool is_number(char32_t cp);  // general category N*

// Appends the full lower-case mapping of cp (one code point except U+0130, which lowers to "i" + U+0307).
void append_lower(std::u32string& out, char32_t cp);

// Canonical composition of adjacent base + combining pairs (and Hangul syllables), in place. This covers
// what NFC does to real-world NFD input; canonical re-ordering of several marks is not performed.
void compose_nfc(std::u32string& s);

namespace detail {
struct CodeRange {
  char32_t first, last;
};
struct LowerRun {
  char32_t first, last;
  std::uint32_t stride;
  std::int32_t delta;
};
struct Composition {
  char32_t first, second, composed;
};
extern const CodeRange kLetterRanges[];
extern const std::size_t kLetterRangesSize;
extern const CodeRange kNumberRanges[];
extern const std::size_t kNumberRangesSize;
extern const LowerRun kLowerRuns[];
extern const std::size_t kLowerRunsSize;
extern const Composition kCompositions[];
extern const std::size_t kCompositionsSize;
}  // namespace detail

}  // namespace cubeforge::text
