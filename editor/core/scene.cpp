// Scene storage: id index, hierarchy queries, world transforms and bounds.
#include "scene.h"

namespace cubeforge::editor {

void Scene::reindex() const {
  if (!index_dirty_) return;
  index_.clear();
  index_.reserve(entities_.size());
  for (size_t i = 0; i < entities_.size(); ++i) index_[entities_[i].id] = i;
  index_dirty_ = false;
}

std::optional<size_t> Scene::index_of(EntityId id) const {
  reindex();
  auto it = index_.find(id);
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

const Entity* Scene::find(EntityId id) const {
  auto i = index_of(id);
  return i ? &entities_[*i] : nullptr;
}

Entity* Scene::find_mut(EntityId id) {
  auto i = index_of(id);
  if (!i) return nullptr;
  touch();
  return &entities_[*i];
}

const Entity* Scene::find_by_name(const std::string& name) const {
  for (const auto& e : entities_)
    if (e.name == name) return &e;
  return nullptr;
}

void Scene::insert(Entity e, size_t index) {
  if (e.id == kNoEntity) e.id = allocate_id();
  set_next_id(e.id + 1);
  index = std::min(index, entities_.size());
  entities_.insert(entities_.begin() + static_cast<std::ptrdiff_t>(index), std::move(e));
  index_dirty_ = true;
  touch();
}

std::optional<Entity> Scene::remove(EntityId id) {
  auto i = index_of(id);
  if (!i) return std::nullopt;
  Entity e = std::move(entities_[*i]);
  entities_.erase(entities_.begin() + static_cast<std::ptrdiff_t>(*i));
  index_dirty_ = true;
  touch();
  return e;
}

void Scene::clear() {
  entities_.clear();
  index_dirty_ = true;
  next_id_ = 1;
  touch();
}

std::vector<EntityId> Scene::children(EntityId parent) const {
  std::vector<EntityId> out;
  for (const auto& e : entities_)
    if (e.parent == parent) out.push_back(e.id);
  return out;
}

void Scene::descendants(EntityId id, std::vector<EntityId>& out) const {
  for (const auto& e : entities_)
    if (e.parent == id && e.id != id) {
      out.push_back(e.id);
      descendants(e.id, out);
    }
}

bool Scene::is_ancestor(EntityId ancestor, EntityId id) const {
  const Entity* e = find(id);
  for (int guard = 0; e && guard < 10000; ++guard) {
    if (e->parent == ancestor) return true;
    e = find(e->parent);
  }
  return false;
}

bool Scene::effectively_visible(EntityId id) const {
  const Entity* e = find(id);
  for (int guard = 0; e && guard < 10000; ++guard) {
    if (!e->visible) return false;
    e = find(e->parent);
  }
  return true;
}

glm::mat4 Scene::world_matrix(EntityId id) const {
  glm::mat4 m(1.f);
  const Entity* e = find(id);
  for (int guard = 0; e && guard < 10000; ++guard) {
    m = to_matrix(e->transform) * m;
    e = find(e->parent);
  }
  return m;
}

Aabb Scene::world_bounds(EntityId id) const {
  Aabb b;
  const Entity* e = find(id);
  if (!e) return b;
  if (e->mesh) b.add(mesh_bounds(*e->mesh).transformed(world_matrix(id)));
  std::vector<EntityId> ds;
  descendants(id, ds);
  for (EntityId d : ds) {
    const Entity* c = find(d);
    if (c && c->mesh) b.add(mesh_bounds(*c->mesh).transformed(world_matrix(d)));
  }
  return b;
}

Aabb Scene::scene_bounds() const {
  Aabb b;
  for (const auto& e : entities_)
    if (e.mesh) b.add(mesh_bounds(*e.mesh).transformed(world_matrix(e.id)));
  return b;
}

size_t Scene::triangle_count() const {
  size_t n = 0;
  for (const auto& e : entities_)
    if (e.mesh) n += e.mesh->triangles.size();
  return n;
}

EntityInfo make_info(const Scene& scene, const Entity& e) {
  EntityInfo info;
  info.id = e.id;
  info.parent = e.parent;
  info.name = e.name;
  info.transform = e.transform;
  glm::mat4 w = scene.world_matrix(e.id);
  const float* p = glm::value_ptr(w);
  std::copy(p, p + 16, info.world.begin());
  info.color = e.color;
  info.visible = e.visible;
  info.anchored = e.anchored;
  info.is_group = e.is_group;
  info.mesh = e.mesh;
  return info;
}

}  // namespace cubeforge::editor
