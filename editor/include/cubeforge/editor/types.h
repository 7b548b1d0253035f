// Value types shared by the editor core and the plugin API: entity ids, transforms, rays, hits and read-only
// entity snapshots. Plain data only (no GL, no ImGui), safe to copy across threads.
#pragma once
#include <cstddef>  // cubeforge/mesh.h uses size_t without including it
#include <cubeforge/mesh.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cubeforge::editor {

using cubeforge::Mesh;
using cubeforge::Vec3;
using EntityId = std::uint64_t;
inline constexpr EntityId kNoEntity = 0;

using Vec4 = std::array<float, 4>;

// Local transform of an entity relative to its parent. Rotation is Euler degrees, matrix R = Rx * Ry * Rz
// (so Z is applied first to a point); the world matrix is T * R * S.
struct Transform {
  Vec3 position{0.f, 0.f, 0.f};
  Vec3 rotation{0.f, 0.f, 0.f};
  Vec3 scale{1.f, 1.f, 1.f};
  bool operator==(const Transform&) const = default;
};

struct Ray {
  Vec3 origin{0.f, 0.f, 0.f};
  Vec3 direction{0.f, 0.f, -1.f};  // unit length
};

// Result of a ray cast into the scene. entity == kNoEntity with hit == true means the ground plane (y = 0).
struct RayHit {
  bool hit = false;
  bool on_ground = false;
  EntityId entity = kNoEntity;
  float distance = 0.f;
  Vec3 point{0.f, 0.f, 0.f};
  Vec3 normal{0.f, 1.f, 0.f};
  std::uint32_t triangle = 0;
};

enum class LogLevel { Info, Warning, Error };

// Read-only copy of one entity handed to plugins. The mesh is shared and immutable.
struct EntityInfo {
  EntityId id = kNoEntity;
  EntityId parent = kNoEntity;
  std::string name;
  Transform transform;                 // local
  std::array<float, 16> world{};       // column-major world matrix
  Vec3 color{1.f, 1.f, 1.f};
  bool visible = true;
  bool anchored = true;
  bool is_group = false;               // a "Model": no mesh, only children
  std::shared_ptr<const Mesh> mesh;    // null for groups
};

}  // namespace cubeforge::editor
