"""Small pure-Python reimplementation of the CLIP BPE tokenizer (openai/clip-vit-large-patch14 semantics).

Lower-cases, collapses whitespace, splits with the CLIP pre-tokenizer pattern, byte-level BPE with the shipped
merges, appends "</w>" to the last symbol of each word, BOS 49406 / EOS 49407, pads with EOS to 77 tokens and
returns the attention mask. Only the standard library is needed (no `regex`, no `ftfy`, no `transformers`).
"""
import json
import os
import re
import unicodedata

DEFAULT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data", "clip-tokenizer")

# CLIP pre-tokenizer: special tokens | contractions | letters+ | one digit | other non-space symbols+
_PAT = re.compile(r"<\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|[^\W\d_]+|\d|(?:[^\s\w]|_)+",
                  re.UNICODE)


def _bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


class ClipTokenizer:
    def __init__(self, directory=None, max_length=77):
        directory = directory or os.environ.get("CLIP_TOKENIZER_DIR") or DEFAULT_DIR
        with open(os.path.join(directory, "vocab.json"), encoding="utf-8") as f:
            self.encoder = json.load(f)
        with open(os.path.join(directory, "merges.txt"), encoding="utf-8") as f:
            lines = f.read().split("\n")
        merges = [tuple(l.split()) for l in lines[1:] if l.strip() and not l.startswith("#version")]
        self.ranks = {m: i for i, m in enumerate(merges)}
        self.byte_encoder = _bytes_to_unicode()
        self.bos = self.encoder["<|startoftext|>"]
        self.eos = self.encoder["<|endoftext|>"]
        self.pad = self.eos
        self.max_length = max_length
        self.cache = {"<|startoftext|>": ["<|startoftext|>"], "<|endoftext|>": ["<|endoftext|>"]}
        self.decoder = {v: k for k, v in self.encoder.items()}

    def _bpe(self, token):
        if token in self.cache:
            return self.cache[token]
        word = list(token[:-1]) + [token[-1] + "</w>"]
        while len(word) > 1:
            best, best_rank = None, None
            for i in range(len(word) - 1):
                r = self.ranks.get((word[i], word[i + 1]))
                if r is not None and (best_rank is None or r < best_rank):
                    best, best_rank = i, r
            if best is None:
                break
            a, b = word[best], word[best + 1]
            out, i = [], 0
            while i < len(word):
                if i < len(word) - 1 and word[i] == a and word[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            word = out
        self.cache[token] = word
        return word

    @staticmethod
    def normalize(text):
        text = unicodedata.normalize("NFC", text)
        text = re.sub(r"\s+", " ", text).strip()
        return text.lower()

    def words(self, text):
        """Pre-tokenized pieces of a text (after normalisation)."""
        return _PAT.findall(self.normalize(text))

    def bpe_ids(self, text):
        ids = []
        for piece in self.words(text):
            if piece in ("<|startoftext|>", "<|endoftext|>"):
                ids.append(self.encoder[piece])
                continue
            enc = "".join(self.byte_encoder[b] for b in piece.encode("utf-8"))
            ids.extend(self.encoder[t] for t in self._bpe(enc))
        return ids

    def __call__(self, text):
        """Returns (input_ids[77], attention_mask[77]) like CLIPTokenizerFast(padding='max_length', truncation=True)."""
        ids = self.bpe_ids(text)[: self.max_length - 2]
        ids = [self.bos] + ids + [self.eos]
        mask = [1] * len(ids) + [0] * (self.max_length - len(ids))
        ids = ids + [self.pad] * (self.max_length - len(ids))
        return ids, mask
