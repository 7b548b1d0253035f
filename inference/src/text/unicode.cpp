// Owns the Unicode helpers of text/unicode.h: UTF-8 coding, character-class lookups over the generated
// tables, lower-casing and NFC pair composition.
#include "text/unicode.h"

#include <algorithm>

namespace cubeforge::text {

namespace {

bool in_ranges(const detail::CodeRange* ranges, std::size_t n, char32_t cp) {
  const detail::CodeRange* end = ranges + n;
  // First range whose last >= cp.
  const detail::CodeRange* it =
      std::lower_bound(ranges, end, cp, [](const detail::CodeRange& r, char32_t c) { return r.last < c; });
  return it != end && it->first <= cp;
}

// Hangul syllable composition constants (Unicode chapter 3.12).
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount;
constexpr char32_t kSCount = kLCount * kNCount;

// Returns the composite of (a, b) or 0 when the pair does not compose.
char32_t compose_pair(char32_t a, char32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase && b < kTBase + kTCount)
    return a + (b - kTBase);
  const detail::Composition* begin = detail::kCompositions;
  const detail::Composition* end = begin + detail::kCompositionsSize;
  const detail::Composition* it = std::lower_bound(begin, end, std::pair{a, b}, [](const detail::Composition& c, auto key) {
    return c.first < key.first || (c.first == key.first && c.second < key.second);
  });
  return (it != end && it->first == a && it->second == b) ? it->composed : 0;
}

}  // namespace

std::u32string decode_utf8(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  std::size_t i = 0;
  while (i < n) {
    const unsigned char b0 = p[i];
    if (b0 < 0x80) {
      out.push_back(b0);
      ++i;
      continue;
    }
    int len = 0;
    char32_t cp = 0, min = 0;
    if ((b0 & 0xE0) == 0xC0) {
      len = 2, cp = b0 & 0x1F, min = 0x80;
    } else if ((b0 & 0xF0) == 0xE0) {
      len = 3, cp = b0 & 0x0F, min = 0x800;
    } else if ((b0 & 0xF8) == 0xF0) {
      len = 4, cp = b0 & 0x07, min = 0x10000;
    } else {
      out.push_back(kReplacementChar);  // stray continuation byte or invalid lead byte
      ++i;
      continue;
    }
    int got = 1;
    while (got < len && i + got < n && (p[i + got] & 0xC0) == 0x80) cp = (cp << 6) | (p[i + got++] & 0x3F);
    if (got < len || cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      out.push_back(kReplacementChar);  // consume the bytes examined so far as one bad sequence
      i += got;
      continue;
    }
    out.push_back(cp);
    i += len;
  }
  return out;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string encode_utf8(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t cp : s) append_utf8(out, cp);
  return out;
}

bool is_space(char32_t cp) {
  if (cp < 0x80) return cp == ' ' || (cp >= 0x09 && cp <= 0x0D);
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
         cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

bool is_letter(char32_t cp) {
  if (cp < 0x80) return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
  return in_ranges(detail::kLetterRanges, detail::kLetterRangesSize, cp);
}

bool is_number(char32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  return in_ranges(detail::kNumberRanges, detail::kNumberRangesSize, cp);
}

void append_lower(std::u32string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(cp >= 'A' && cp <= 'Z' ? cp + 32 : cp);
    return;
  }
  if (cp == 0x130) {  // LATIN CAPITAL LETTER I WITH DOT ABOVE: the only multi-code-point lower-case mapping
    out.push_back('i');
    out.push_back(0x307);
    return;
  }
  const detail::LowerRun* begin = detail::kLowerRuns;
  const detail::LowerRun* end = begin + detail::kLowerRunsSize;
  const detail::LowerRun* it =
      std::lower_bound(begin, end, cp, [](const detail::LowerRun& r, char32_t c) { return r.last < c; });
  if (it != end && it->first <= cp && (cp - it->first) % it->stride == 0)
    cp = static_cast<char32_t>(static_cast<std::int64_t>(cp) + it->delta);
  out.push_back(cp);
}

void compose_nfc(std::u32string& s) {
  if (s.size() < 2) return;
  // ASCII-only text (the common case) never composes except through U+0338, which is not ASCII.
  if (std::all_of(s.begin(), s.end(), [](char32_t c) { return c < 0x80; })) return;
  std::size_t w = 0;
  std::size_t starter = std::u32string::npos;  // index (in the output) of the last character we may compose onto
  bool blocked = false;                        // a non-composing mark sits between the starter and here
  for (std::size_t r = 0; r < s.size(); ++r) {
    const char32_t c = s[r];
    if (starter != std::u32string::npos && !blocked) {
      if (char32_t comp = compose_pair(s[starter], c)) {
        s[starter] = comp;
        continue;
      }
    }
    s[w] = c;
    // A mark that did not compose blocks further composition onto this starter (conservative: exact NFC
    // would still compose a later mark of a different combining class).
    const bool mark = (c >= 0x300 && c <= 0x36F) || (c >= 0x1AB0 && c <= 0x1AFF) || (c >= 0x1DC0 && c <= 0x1DFF) ||
                      (c >= 0x20D0 && c <= 0x20FF) || c == 0x3099 || c == 0x309A;
    if (mark && starter != std::u32string::npos) {
      blocked = true;
    } else {
      starter = w;
      blocked = false;
    }
    ++w;
  }
  s.resize(w);
}

}  // namespace cubeforge::text
