// The shape encoder's input from an arbitrary triangle mesh (reference §9 steps 1-2): degenerate and duplicate faces
// dropped, the mesh centred on its bounding-box centre and scaled so its longest side is 2 x 0.96, then area-weighted
// surface points with their face normals. ShapeModel::encode turns the result into shape tokens (§9 steps 3-5).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "cubeforge/mesh.h"

namespace cubeforge {

struct EncoderInputOptions {
  size_t points = 8192;  // surface points (the reference samples 8192)
  uint64_t seed = 0;     // the sampling is deterministic for a seed
};

struct EncoderInput {
  std::vector<Vec3> points;   // in the normalized frame: normalized = (original - center) * scale
  std::vector<Vec3> normals;  // unit normal of each point's face (corner order: counter-clockwise = outward)
  Vec3 center{0.f, 0.f, 0.f};
  float scale = 1.f;
  size_t faces_used = 0;
  size_t faces_degenerate = 0;  // repeated corner or (near) zero height: no area, no normal
  size_t faces_duplicate = 0;   // the same three corners as an earlier face, in any order
};

// Throws cubeforge::Error (the reason in words) for a mesh with no faces, a corner index out of range, a non-finite
// position, a mesh whose faces are all degenerate, or points == 0.
EncoderInput make_encoder_input(const Mesh& mesh, const EncoderInputOptions& options = {});

// Moves a mesh from the normalized frame back into the frame of the mesh `input` was made from (p / scale + center;
// normals are unchanged by a uniform scale), e.g. to place a reconstruction where the original was.
void to_input_frame(Mesh& mesh, const EncoderInput& input);

}  // namespace cubeforge
