// CLIP byte-level BPE tokenizer with the semantics of HF CLIPTokenizerFast (openai/clip-vit-large-patch14):
// NFC + whitespace collapse + lower-case, the CLIP pre-tokenization regex, byte-level BPE with "</w>" word
// ends, BOS/EOS framing, truncation and EOS padding to a fixed length. Also the unknown-word check of prompts.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace cubeforge {

class ClipTokenizer {
 public:
  struct Encoding {
    std::vector<int64_t> input_ids;       // max_length ids: BOS, content, EOS, then pad (= EOS)
    std::vector<int64_t> attention_mask;  // 1 for BOS..EOS, 0 for pad
    std::vector<int> bpe_ids;             // all content ids of the prompt, before truncation, no BOS/EOS
    bool truncated = false;               // the content did not fit in max_length - 2 tokens
  };

  // Reads vocab.json (token -> id) and merges.txt (one "a b" merge per line, ranked by order; a leading
  // "#version" line is skipped). Throws cubeforge::Error naming the file on a missing or malformed file.
  static ClipTokenizer load(const std::string& vocab_path, const std::string& merges_path);

  ClipTokenizer(ClipTokenizer&&) noexcept;
  ClipTokenizer& operator=(ClipTokenizer&&) noexcept;
  ~ClipTokenizer();

  // Tokenizes a UTF-8 prompt (invalid bytes are read as U+FFFD). max_length must be at least 2.
  // Thread-safe: the per-word BPE cache is internally locked.
  Encoding encode(std::string_view text, int max_length = 77) const;

  // The pre-tokenized, normalized (lower-cased) pieces of text, in order: letter runs, single digits,
  // punctuation runs, contractions ("'s") and the special-token literals.
  std::vector<std::string> words(std::string_view text) const;

  int bos() const;
  int eos() const;
  int pad() const;
  std::size_t vocab_size() const;

 private:
  struct Impl;
  explicit ClipTokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Words of prompt (normalized and lower-cased as the tokenizer sees them) that are not in known_words, in
// order of first appearance and without duplicates. Punctuation, digits, contraction suffixes ("'s") and
// special-token literals are ignored. known_words is expected to hold lower-cased words.
std::vector<std::string> unknown_words(const ClipTokenizer& tokenizer, std::string_view prompt,
                                       const std::unordered_set<std::string>& known_words);

}  // namespace cubeforge
