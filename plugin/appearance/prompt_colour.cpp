// Colour words of a prompt: see prompt_colour.h.
#include "appearance/prompt_colour.h"

#include <cctype>
#include <cmath>

namespace cubeforge::ai {
namespace {

struct Entry {
  const char* word;
  const char* name;   // the colour reported (several words share one)
  unsigned srgb;      // 0xRRGGBB as a user would pick it
};

// sRGB hex values of ordinary swatches; materials by their usual colour.
constexpr Entry kColours[] = {
    {"red", "red", 0xC0392B},        {"orange", "orange", 0xE67E22},   {"yellow", "yellow", 0xF1C40F},
    {"green", "green", 0x27AE60},    {"blue", "blue", 0x2E6FD0},       {"purple", "purple", 0x8E44AD},
    {"violet", "purple", 0x8E44AD},  {"pink", "pink", 0xF06292},       {"brown", "brown", 0x7B4A2A},
    {"black", "black", 0x1C1C1C},    {"white", "white", 0xF2F2F2},     {"grey", "grey", 0x8C8C8C},
    {"gray", "grey", 0x8C8C8C},      {"cyan", "cyan", 0x1ABC9C},       {"teal", "cyan", 0x16A085},
    {"beige", "beige", 0xD8C8A8},    {"gold", "gold", 0xD4AF37},       {"golden", "gold", 0xD4AF37},
    {"silver", "silver", 0xC0C0C8},  {"wood", "wood", 0x9C6B3E},       {"wooden", "wood", 0x9C6B3E},
    {"stone", "stone", 0x8A8580},    {"brick", "brick", 0x9E4A34},     {"copper", "copper", 0xB87333},
};

}  // namespace

float srgb_to_linear(float c) { return c <= 0.04045f ? c / 12.92f : std::pow((c + 0.055f) / 1.055f, 2.4f); }
float linear_to_srgb(float c) { return c <= 0.0031308f ? c * 12.92f : 1.055f * std::pow(c, 1.f / 2.4f) - 0.055f; }

std::optional<NamedColour> colour_in_prompt(const std::string& prompt) {
  std::size_t i = 0;
  while (i < prompt.size()) {
    while (i < prompt.size() && !std::isalpha(static_cast<unsigned char>(prompt[i]))) ++i;
    std::string word;
    while (i < prompt.size() && std::isalpha(static_cast<unsigned char>(prompt[i])))
      word += char(std::tolower(static_cast<unsigned char>(prompt[i++])));
    for (const Entry& e : kColours)
      if (word == e.word)
        return NamedColour{e.name, Rgb{srgb_to_linear(float((e.srgb >> 16) & 255) / 255.f),
                                       srgb_to_linear(float((e.srgb >> 8) & 255) / 255.f),
                                       srgb_to_linear(float(e.srgb & 255) / 255.f)}};
  }
  return std::nullopt;
}

std::array<float, 4> ghost_tint(const std::optional<Rgb>& colour, const std::array<float, 4>& fallback) {
  if (!colour) return fallback;
  constexpr float kLift = 0.2f;
  std::array<float, 4> t{};
  for (int i = 0; i < 3; ++i) t[i] = (*colour)[i] + (1.f - (*colour)[i]) * kLift;
  t[3] = fallback[3];
  return t;
}

}  // namespace cubeforge::ai
