// The scene: an ordered list of entities (parts with a shared immutable mesh, and groups/"Models"), parent links,
// world transforms. Pure data + structural edits; every user-visible edit goes through commands.h instead.
#pragma once
#include "math.h"

#include <functional>
#include <optional>
#include <unordered_map>

namespace cubeforge::editor {

struct Entity {
  EntityId id = kNoEntity;
  EntityId parent = kNoEntity;
  std::string name;
  Transform transform;
  Vec3 color{0.64f, 0.64f, 0.66f};
  bool visible = true;
  bool anchored = true;
  bool is_group = false;
  std::shared_ptr<const Mesh> mesh;
  std::string mesh_source;  // "primitive:block" etc. when the mesh is a generated part; else empty
  bool operator==(const Entity& o) const {
    return id == o.id && parent == o.parent && name == o.name && transform == o.transform && color == o.color &&
           visible == o.visible && anchored == o.anchored && is_group == o.is_group && mesh == o.mesh &&
           mesh_source == o.mesh_source;
  }
};

class Scene {
 public:
  const std::vector<Entity>& entities() const { return entities_; }
  size_t size() const { return entities_.size(); }
  bool empty() const { return entities_.empty(); }

  const Entity* find(EntityId id) const;
  Entity* find_mut(EntityId id);
  std::optional<size_t> index_of(EntityId id) const;
  const Entity* find_by_name(const std::string& name) const;  // first match

  // Structural edits (used by commands). insert() keeps the given id; index clamps to [0, size].
  void insert(Entity e, size_t index);
  std::optional<Entity> remove(EntityId id);
  void clear();

  EntityId allocate_id() { return next_id_++; }
  EntityId next_id() const { return next_id_; }
  void set_next_id(EntityId id) { next_id_ = std::max(next_id_, id); }

  std::vector<EntityId> children(EntityId parent) const;
  void descendants(EntityId id, std::vector<EntityId>& out) const;  // depth-first, excluding id
  bool is_ancestor(EntityId ancestor, EntityId id) const;
  bool effectively_visible(EntityId id) const;

  glm::mat4 world_matrix(EntityId id) const;
  Aabb world_bounds(EntityId id) const;  // includes descendants
  Aabb scene_bounds() const;
  size_t triangle_count() const;

  // Bumped on every change; renderers and caches compare it.
  uint64_t revision() const { return revision_; }
  void touch() { ++revision_; }

 private:
  void reindex() const;
  std::vector<Entity> entities_;
  mutable std::unordered_map<EntityId, size_t> index_;
  mutable bool index_dirty_ = true;
  EntityId next_id_ = 1;
  uint64_t revision_ = 1;
};

EntityInfo make_info(const Scene& scene, const Entity& e);

}  // namespace cubeforge::editor
