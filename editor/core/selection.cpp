// Selection set operations.
#include "selection.h"

#include "scene.h"

namespace cubeforge::editor {

void Selection::set(std::vector<EntityId> ids) {
  std::vector<EntityId> unique;
  for (EntityId id : ids)
    if (id != kNoEntity && std::find(unique.begin(), unique.end(), id) == unique.end()) unique.push_back(id);
  if (unique != ids_) {
    ids_ = std::move(unique);
    ++revision_;
  }
}

void Selection::add(EntityId id) {
  if (id == kNoEntity) return;
  remove(id);
  ids_.push_back(id);
  ++revision_;
}

void Selection::toggle(EntityId id) {
  if (contains(id)) remove(id);
  else add(id);
}

void Selection::remove(EntityId id) {
  auto it = std::find(ids_.begin(), ids_.end(), id);
  if (it != ids_.end()) {
    ids_.erase(it);
    ++revision_;
  }
}

void Selection::prune(const Scene& scene) {
  auto n = ids_.size();
  ids_.erase(std::remove_if(ids_.begin(), ids_.end(), [&](EntityId id) { return !scene.find(id); }), ids_.end());
  if (n != ids_.size()) ++revision_;
}

std::vector<EntityId> Selection::roots(const Scene& scene) const {
  std::vector<EntityId> out;
  for (EntityId id : ids_) {
    if (!scene.find(id)) continue;
    bool covered = false;
    for (EntityId other : ids_)
      if (other != id && scene.is_ancestor(other, id)) covered = true;
    if (!covered) out.push_back(id);
  }
  return out;
}

}  // namespace cubeforge::editor
