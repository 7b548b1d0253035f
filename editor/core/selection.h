// Selection: an ordered set of entity ids (last added = primary), with Ctrl-click toggle and pruning of ids that
// left the scene. Not part of undo history (as in Studio).
#pragma once
#include <cubeforge/editor/types.h>

#include <algorithm>
#include <vector>

namespace cubeforge::editor {
class Scene;

class Selection {
 public:
  const std::vector<EntityId>& ids() const { return ids_; }
  bool empty() const { return ids_.empty(); }
  size_t size() const { return ids_.size(); }
  bool contains(EntityId id) const { return std::find(ids_.begin(), ids_.end(), id) != ids_.end(); }
  EntityId primary() const { return ids_.empty() ? kNoEntity : ids_.back(); }

  void set(std::vector<EntityId> ids);
  void select(EntityId id) { set({id}); }
  void add(EntityId id);
  void toggle(EntityId id);
  void remove(EntityId id);
  void clear() { if (!ids_.empty()) { ids_.clear(); ++revision_; } }
  // Drops ids that are no longer in the scene.
  void prune(const Scene& scene);
  // Ids without any ancestor that is itself selected (what move/delete/duplicate act on).
  std::vector<EntityId> roots(const Scene& scene) const;
  uint64_t revision() const { return revision_; }

 private:
  std::vector<EntityId> ids_;
  uint64_t revision_ = 0;
};

}  // namespace cubeforge::editor
