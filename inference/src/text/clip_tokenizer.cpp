// Owns the CLIP tokenizer: vocab/merges loading, normalization, the CLIP pre-tokenization regex (hand-written
// scanner), byte-level BPE with a per-word cache, BOS/EOS framing with truncation and padding, and the
// unknown-word check of prompts.
#include "cubeforge/clip_tokenizer.h"

#include <algorithm>
#include <array>
#include <climits>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "cubeforge/error.h"
#include "text/unicode.h"

namespace cubeforge {

namespace {

constexpr std::u32string_view kStartOfText = U"<|startoftext|>";
constexpr std::u32string_view kEndOfText = U"<|endoftext|>";
constexpr std::string_view kEndOfWord = "</w>";
constexpr std::size_t kMaxCachedWords = 1 << 16;

struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

// One pre-tokenized piece: a range of the normalized text, or a special token.
struct Piece {
  std::size_t begin, end;
  int special_id;  // -1 for ordinary pieces
};

std::string read_file(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(std::string("cannot open ") + what + " '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw Error(std::string("cannot read ") + what + " '" + path + "'");
  return ss.str();
}

// GPT-2/CLIP bytes_to_unicode: printable bytes map to themselves, the rest to 256, 257, ... in byte order.
std::array<char32_t, 256> byte_to_unicode_table() {
  std::array<char32_t, 256> table{};
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    table[b] = printable ? static_cast<char32_t>(b) : next++;
  }
  return table;
}

bool is_contraction(std::u32string_view s, std::size_t i, std::size_t end, std::size_t* len) {
  if (s[i] != '\'' || i + 1 >= end) return false;
  const char32_t a = s[i + 1];
  if (a == 's' || a == 't' || a == 'm' || a == 'd') {
    *len = 2;
    return true;
  }
  if (i + 2 < end) {
    const char32_t b = s[i + 2];
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) {
      *len = 3;
      return true;
    }
  }
  return false;
}

// The CLIP regex over s[begin, end) (no special tokens inside):
//   's|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+   with whitespace between matches dropped.
void scan_segment(std::u32string_view s, std::size_t begin, std::size_t end, std::vector<Piece>& out) {
  std::size_t i = begin;
  while (i < end) {
    const char32_t c = s[i];
    if (text::is_space(c)) {
      ++i;
      continue;
    }
    std::size_t len = 0;
    std::size_t j = i + 1;
    if (is_contraction(s, i, end, &len)) {
      j = i + len;
    } else if (text::is_letter(c)) {
      while (j < end && text::is_letter(s[j])) ++j;
    } else if (!text::is_number(c)) {
      while (j < end && !text::is_space(s[j]) && !text::is_letter(s[j]) && !text::is_number(s[j])) ++j;
    }
    out.push_back({i, j, -1});
    i = j;
  }
}

}  // namespace

struct ClipTokenizer::Impl {
  struct Merge {
    int rank;
    int merged;
  };
  std::unordered_map<std::uint64_t, Merge> merges;  // (left id << 32 | right id) -> rank, merged id
  std::array<int, 256> byte_id{};                   // byte symbol inside a word
  std::array<int, 256> byte_eow_id{};               // byte symbol ending a word ("...</w>")
  int bos = 0, eos = 0;
  std::size_t vocab_size = 0;

  mutable std::mutex cache_mutex;
  mutable std::unordered_map<std::string, std::vector<int>, StringHash, std::equal_to<>> cache;

  static std::uint64_t pair_key(int a, int b) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) | static_cast<std::uint32_t>(b);
  }

  // NFC, every whitespace run -> one space, lower-case (the reference normalizer sequence).
  static std::u32string normalize(std::string_view text) {
    std::u32string decoded = text::decode_utf8(text);
    text::compose_nfc(decoded);
    std::u32string out;
    out.reserve(decoded.size());
    bool in_space = false;
    for (char32_t c : decoded) {
      if (text::is_space(c)) {
        if (!in_space) out.push_back(' ');
        in_space = true;
        continue;
      }
      in_space = false;
      text::append_lower(out, c);
    }
    return out;
  }

  // Special-token literals are cut out first (as the reference's added-token pass does), then each segment
  // between them goes through the regex scanner.
  std::vector<Piece> pre_tokenize(std::u32string_view s) const {
    std::vector<Piece> pieces;
    std::size_t seg = 0, i = 0;
    while (i < s.size()) {
      if (s[i] == '<') {
        int id = -1;
        std::size_t len = 0;
        if (s.substr(i, kStartOfText.size()) == kStartOfText) {
          id = bos, len = kStartOfText.size();
        } else if (s.substr(i, kEndOfText.size()) == kEndOfText) {
          id = eos, len = kEndOfText.size();
        }
        if (id >= 0) {
          scan_segment(s, seg, i, pieces);
          pieces.push_back({i, i + len, id});
          i += len;
          seg = i;
          continue;
        }
      }
      ++i;
    }
    scan_segment(s, seg, s.size(), pieces);
    return pieces;
  }

  // Byte-level BPE of one word (its UTF-8 bytes); the last symbol carries the "</w>" end of word.
  std::vector<int> bpe_word(std::string_view bytes) const {
    std::vector<int> sym(bytes.size());
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      const auto b = static_cast<unsigned char>(bytes[i]);
      sym[i] = i + 1 < bytes.size() ? byte_id[b] : byte_eow_id[b];
    }
    while (sym.size() > 1) {
      int best_rank = INT_MAX, left = 0, right = 0, merged = 0;
      for (std::size_t i = 0; i + 1 < sym.size(); ++i) {
        auto it = merges.find(pair_key(sym[i], sym[i + 1]));
        if (it != merges.end() && it->second.rank < best_rank) {
          best_rank = it->second.rank;
          left = sym[i], right = sym[i + 1], merged = it->second.merged;
        }
      }
      if (best_rank == INT_MAX) break;
      std::size_t w = 0;
      for (std::size_t r = 0; r < sym.size();) {
        if (r + 1 < sym.size() && sym[r] == left && sym[r + 1] == right) {
          sym[w++] = merged;
          r += 2;
        } else {
          sym[w++] = sym[r++];
        }
      }
      sym.resize(w);
    }
    return sym;
  }

  void append_bpe(std::string_view word, std::vector<int>& out) const {
    {
      std::lock_guard lock(cache_mutex);
      auto it = cache.find(word);
      if (it != cache.end()) {
        out.insert(out.end(), it->second.begin(), it->second.end());
        return;
      }
    }
    std::vector<int> ids = bpe_word(word);
    out.insert(out.end(), ids.begin(), ids.end());
    std::lock_guard lock(cache_mutex);
    if (cache.size() >= kMaxCachedWords) cache.clear();
    cache.emplace(std::string(word), std::move(ids));
  }
};

ClipTokenizer::ClipTokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ClipTokenizer::ClipTokenizer(ClipTokenizer&&) noexcept = default;
ClipTokenizer& ClipTokenizer::operator=(ClipTokenizer&&) noexcept = default;
ClipTokenizer::~ClipTokenizer() = default;

ClipTokenizer ClipTokenizer::load(const std::string& vocab_path, const std::string& merges_path) {
  auto impl = std::make_unique<Impl>();

  // vocab.json: {"token": id, ...}
  std::unordered_map<std::string, int, StringHash, std::equal_to<>> vocab;
  {
    const std::string text = read_file(vocab_path, "CLIP vocabulary");
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      throw Error("CLIP vocabulary '" + vocab_path + "' is not valid JSON: " + e.what());
    }
    if (!j.is_object() || j.empty())
      throw Error("CLIP vocabulary '" + vocab_path + "' must be a non-empty JSON object of token -> id");
    vocab.reserve(j.size());
    for (auto it = j.begin(); it != j.end(); ++it) {
      const auto& v = it.value();
      if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > INT_MAX)
        throw Error("CLIP vocabulary '" + vocab_path + "': id of token '" + it.key() + "' is not a valid id");
      vocab.emplace(it.key(), v.get<int>());
    }
  }
  auto lookup = [&](std::string_view token) -> int {
    auto it = vocab.find(token);
    return it == vocab.end() ? -1 : it->second;
  };
  impl->vocab_size = vocab.size();
  impl->bos = lookup("<|startoftext|>");
  impl->eos = lookup("<|endoftext|>");
  if (impl->bos < 0 || impl->eos < 0)
    throw Error("CLIP vocabulary '" + vocab_path + "' lacks the <|startoftext|>/<|endoftext|> tokens");
  const auto byte_chars = byte_to_unicode_table();
  for (int b = 0; b < 256; ++b) {
    std::string sym;
    text::append_utf8(sym, byte_chars[b]);
    impl->byte_id[b] = lookup(sym);
    impl->byte_eow_id[b] = lookup(sym + std::string(kEndOfWord));
    if (impl->byte_id[b] < 0 || impl->byte_eow_id[b] < 0)
      throw Error("CLIP vocabulary '" + vocab_path + "' lacks the byte token '" + sym + "' (byte " +
                  std::to_string(b) + "); not a byte-level BPE vocabulary");
  }

  // merges.txt: "#version ..." then one "left right" pair per line, best (lowest rank) first.
  {
    const std::string text = read_file(merges_path, "CLIP merges file");
    impl->merges.reserve(64 * 1024);
    std::size_t pos = 0, line_no = 0;
    int rank = 0;
    std::string joined;
    while (pos < text.size()) {
      std::size_t nl = text.find('\n', pos);
      if (nl == std::string::npos) nl = text.size();
      std::string_view line(text.data() + pos, nl - pos);
      pos = nl + 1;
      ++line_no;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.empty() || (line_no == 1 && line.starts_with("#version"))) continue;
      const std::size_t sp = line.find(' ');
      if (sp == 0 || sp == std::string_view::npos || sp + 1 == line.size() ||
          line.find(' ', sp + 1) != std::string_view::npos)
        throw Error("CLIP merges file '" + merges_path + "' line " + std::to_string(line_no) +
                    ": expected two tokens separated by one space, got '" + std::string(line.substr(0, 80)) + "'");
      const std::string_view left = line.substr(0, sp), right = line.substr(sp + 1);
      joined.assign(left);
      joined.append(right);
      const int a = lookup(left), b = lookup(right), m = lookup(joined);
      if (a < 0 || b < 0 || m < 0)
        throw Error("CLIP merges file '" + merges_path + "' line " + std::to_string(line_no) + ": merge '" +
                    std::string(line) + "' uses a token missing from the vocabulary '" + vocab_path + "'");
      impl->merges.emplace(Impl::pair_key(a, b), Impl::Merge{rank++, m});  // a repeated pair keeps its first rank
    }
    if (rank == 0) throw Error("CLIP merges file '" + merges_path + "' holds no merges");
  }
  return ClipTokenizer(std::move(impl));
}

ClipTokenizer::Encoding ClipTokenizer::encode(std::string_view text, int max_length) const {
  if (max_length < 2)
    throw Error("ClipTokenizer::encode: max_length must be at least 2 (BOS + EOS), got " + std::to_string(max_length));
  const std::u32string norm = Impl::normalize(text);
  const std::vector<Piece> pieces = impl_->pre_tokenize(norm);

  Encoding enc;
  std::string word;
  for (const Piece& p : pieces) {
    if (p.special_id >= 0) {
      enc.bpe_ids.push_back(p.special_id);
      continue;
    }
    word.clear();
    for (std::size_t i = p.begin; i < p.end; ++i) text::append_utf8(word, norm[i]);
    impl_->append_bpe(word, enc.bpe_ids);
  }

  const auto total = static_cast<std::size_t>(max_length);
  const std::size_t content = std::min(enc.bpe_ids.size(), total - 2);
  enc.truncated = enc.bpe_ids.size() > content;
  enc.input_ids.reserve(total);
  enc.input_ids.push_back(impl_->bos);
  enc.input_ids.insert(enc.input_ids.end(), enc.bpe_ids.begin(), enc.bpe_ids.begin() + content);
  enc.input_ids.push_back(impl_->eos);
  enc.attention_mask.assign(total, 0);
  std::fill_n(enc.attention_mask.begin(), enc.input_ids.size(), 1);
  enc.input_ids.resize(total, pad());
  return enc;
}

std::vector<std::string> ClipTokenizer::words(std::string_view text) const {
  const std::u32string norm = Impl::normalize(text);
  std::vector<std::string> out;
  const std::u32string_view view(norm);
  for (const Piece& p : impl_->pre_tokenize(norm)) out.push_back(text::encode_utf8(view.substr(p.begin, p.end - p.begin)));
  return out;
}

int ClipTokenizer::bos() const { return impl_->bos; }
int ClipTokenizer::eos() const { return impl_->eos; }
int ClipTokenizer::pad() const { return impl_->eos; }
std::size_t ClipTokenizer::vocab_size() const { return impl_->vocab_size; }

std::vector<std::string> unknown_words(const ClipTokenizer& tokenizer, std::string_view prompt,
                                       const std::unordered_set<std::string>& known_words) {
  std::vector<std::string> unknown;
  std::unordered_set<std::string> seen;
  for (std::string& w : tokenizer.words(prompt)) {
    // Letter runs are the only words: skip punctuation, digits, "'s"-style suffixes and special literals
    // (which start with '<').
    const std::u32string cps = text::decode_utf8(w);
    if (cps.empty() || !text::is_letter(cps.front())) continue;
    if (known_words.count(w) || !seen.insert(w).second) continue;
    unknown.push_back(std::move(w));
  }
  return unknown;
}

}  // namespace cubeforge
