// Ray picking acceleration: a per-mesh BVH (binned by centroid median along the widest axis, 4 triangles per leaf)
// and a thread-safe cache of bounds + BVH keyed by the shared mesh, so duplicates of one mesh share one BVH.
// Scene ray casts test world AABBs first, then the mesh BVH in object space.
#pragma once
#include "scene.h"

#include <mutex>

namespace cubeforge::editor {

struct MeshHit {
  bool hit = false;
  float t = 0.f;
  uint32_t triangle = 0;
};

class MeshBvh {
 public:
  explicit MeshBvh(const Mesh& mesh);
  MeshHit intersect(const Mesh& mesh, const glm::vec3& origin, const glm::vec3& dir, float tmax) const;
  const Aabb& bounds() const { return nodes_.empty() ? empty_ : nodes_[0].box; }
  size_t node_count() const { return nodes_.size(); }

 private:
  struct Node {
    Aabb box;
    uint32_t first = 0;  // leaf: first index into tris_; inner: index of left child (right = left + 1)
    uint32_t count = 0;  // > 0 for leaves
  };
  std::vector<Node> nodes_;
  std::vector<uint32_t> tris_;
  Aabb empty_;
};

struct MeshAccel {
  Aabb bounds;
  std::shared_ptr<const MeshBvh> bvh;
};

// Bounds are cheap and computed on first use; the BVH is built on first pick (or by prewarm()).
class MeshAccelCache {
 public:
  Aabb bounds(const std::shared_ptr<const Mesh>& mesh);
  std::shared_ptr<const MeshBvh> bvh(const std::shared_ptr<const Mesh>& mesh);
  void prune();  // forgets meshes nobody holds any more

 private:
  struct Slot {
    std::weak_ptr<const Mesh> mesh;
    Aabb bounds;
    bool has_bounds = false;
    std::shared_ptr<const MeshBvh> bvh;
  };
  Slot& slot(const std::shared_ptr<const Mesh>& mesh);
  std::mutex mu_;
  std::unordered_map<const Mesh*, Slot> slots_;
};

MeshAccelCache& mesh_accel_cache();  // process-wide cache (meshes are immutable, so sharing is safe)

// Closest hit of a world ray against visible meshes; when `ground` is set and nothing else is hit first, the
// ground plane y = 0 is reported (entity kNoEntity, on_ground = true). `skip` ids are ignored.
RayHit raycast_scene(const Scene& scene, const Ray& ray, bool ground, const std::vector<EntityId>& skip = {});

}  // namespace cubeforge::editor
