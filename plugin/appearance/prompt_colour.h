// The colour a prompt names ("a red chair" -> red), painted on the generated mesh as vertex colours. Cube 3D makes
// shape only; a user who asks for a red chair still expects a red one, and the vertex colours travel with the mesh
// into the scene file and every export (glTF COLOR_0, PLY). Whole words, case-insensitive; the first colour word of
// the prompt wins; materials with a usual colour count too (wooden, golden, silver, stone, ...).
#pragma once
#include <cubeforge/mesh.h>

#include <array>
#include <optional>
#include <string>

namespace cubeforge::ai {

using Rgb = Vec3;  // linear RGB, 0..1 (Mesh::colors)

struct NamedColour {
  std::string word;  // as it appears in the list ("grey" for "gray" too)
  Rgb rgb;
};

std::optional<NamedColour> colour_in_prompt(const std::string& prompt);

// sRGB (what a colour picker shows) <-> linear RGB (what the mesh stores), per channel, 0..1.
float srgb_to_linear(float c);
float linear_to_srgb(float c);

// The live preview's RGBA tint: the job's colour when it paints one (so the ghost of "a red chair" is already red),
// lifted 20% towards white so that a dark colour still reads as a translucent ghost, with the fallback's alpha;
// else the fallback (the default ghost colour).
std::array<float, 4> ghost_tint(const std::optional<Rgb>& colour, const std::array<float, 4>& fallback);

}  // namespace cubeforge::ai
