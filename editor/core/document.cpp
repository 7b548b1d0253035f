// Document operations.
#include "document.h"

#include "mesh_parts.h"
#include "settings.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace cubeforge::editor {
namespace fs = std::filesystem;

std::string Document::title() const {
  std::string name = path_.empty() ? "Untitled" : fs::path(path_).filename().string();
  return (dirty() ? "*" : "") + name;
}

void Document::execute(CommandPtr cmd) {
  history_.execute(std::move(cmd), scene_);
  after_change();
}

bool Document::undo() {
  bool ok = history_.undo(scene_);
  after_change();
  return ok;
}

bool Document::redo() {
  bool ok = history_.redo(scene_);
  after_change();
  return ok;
}

EntityId Document::add_entity(Entity e, size_t index) {
  if (e.id == kNoEntity) e.id = scene_.allocate_id();
  EntityId id = e.id;
  execute(std::make_unique<AddEntityCommand>(std::move(e), index));
  return id;
}

EntityId Document::insert_part(PartKind kind, std::optional<Vec3> position) {
  Entity e;
  e.name = part_name(kind);
  e.mesh = make_part_mesh(kind);
  e.mesh_source = part_source(kind);
  e.transform.scale = kind == PartKind::Block ? Vec3{4.f, 1.f, 2.f} : Vec3{2.f, 2.f, 2.f};
  float half = e.transform.scale[1] * 0.5f;
  e.transform.position = position ? *position : Vec3{0.f, half, 0.f};
  if (position) e.transform.position[1] += half;  // rest on the surface that was hit
  history_.begin_group("Insert " + e.name);
  EntityId id = add_entity(std::move(e));
  history_.end_group();
  selection_.select(id);
  return id;
}

bool Document::modify(EntityId id, const std::string& label, const std::function<void(Entity&)>& fn,
                      const std::string& merge_key) {
  const Entity* cur = scene_.find(id);
  if (!cur) return false;
  Entity before = *cur, after = *cur;
  fn(after);
  after.id = before.id;
  if (after == before) return false;
  auto cmd = std::make_unique<ModifyEntityCommand>(label, std::move(before), std::move(after));
  cmd->merge_key = merge_key;
  execute(std::move(cmd));
  return true;
}

bool Document::set_transform(EntityId id, const Transform& t, const std::string& merge_key) {
  const Entity* e = scene_.find(id);
  std::string label = "Move " + (e ? e->name : std::string("?"));
  return modify(id, label, [&](Entity& x) { x.transform = t; }, merge_key);
}

bool Document::rename(EntityId id, const std::string& name) {
  if (name.empty()) return false;
  return modify(id, "Rename to " + name, [&](Entity& x) { x.name = name; });
}

void Document::delete_selection() {
  auto roots = selection_.roots(scene_);
  if (roots.empty()) return;
  history_.begin_group(roots.size() == 1 ? "Delete " + scene_.find(roots[0])->name
                                         : "Delete " + std::to_string(roots.size()) + " items");
  for (EntityId id : roots) execute(std::make_unique<RemoveEntityCommand>(id));
  history_.end_group();
  after_change();
}

std::vector<EntityId> Document::duplicate_selection() {
  auto roots = selection_.roots(scene_);
  std::vector<EntityId> created;
  if (roots.empty()) return created;
  history_.begin_group("Duplicate");
  for (EntityId root : roots) {
    std::vector<EntityId> ids{root};
    scene_.descendants(root, ids);
    std::unordered_map<EntityId, EntityId> remap;
    for (EntityId id : ids) remap[id] = scene_.allocate_id();
    for (EntityId id : ids) {
      Entity copy = *scene_.find(id);
      copy.id = remap[id];
      if (remap.count(copy.parent)) copy.parent = remap[copy.parent];
      add_entity(std::move(copy));
    }
    created.push_back(remap[root]);
  }
  history_.end_group();
  selection_.set(created);
  return created;
}

std::vector<EntityId> Document::separate_selection() {
  struct Plan {
    EntityId id;
    std::vector<Mesh> parts;
  };
  std::vector<Plan> plans;
  for (EntityId id : selection_.ids()) {  // every selected mesh, all checked before anything changes
    const Entity* e = scene_.find(id);
    if (!e || e->is_group || !e->mesh) continue;
    std::vector<Mesh> parts = split_parts(*e->mesh);
    if (parts.size() > kMaxSeparateParts)
      throw Error("'" + e->name + "' has " + std::to_string(parts.size()) +
                  " separate parts; Separate parts takes at most " + std::to_string(kMaxSeparateParts) +
                  " (nothing was changed)");
    if (parts.size() > 1) plans.push_back({id, std::move(parts)});
  }
  std::vector<EntityId> out;
  if (plans.empty()) return out;
  const Entity* first = scene_.find(plans[0].id);
  history_.begin_group(plans.size() == 1 ? "Separate " + first->name
                                          : "Separate " + std::to_string(plans.size()) + " items");
  for (Plan& plan : plans) {
    const Entity orig = *scene_.find(plan.id);
    const glm::mat4 local = to_matrix(orig.transform);
    const size_t index = scene_.index_of(plan.id).value_or(SIZE_MAX);
    for (size_t k = 0; k < plan.parts.size(); ++k) {
      Mesh& part = plan.parts[k];
      const Vec3 c = base_centre(part);
      for (Vec3& v : part.positions)
        for (int a = 0; a < 3; ++a) v[a] -= c[a];
      Entity e = orig;
      e.mesh = std::make_shared<const Mesh>(std::move(part));
      e.mesh_source.clear();
      e.name = orig.name + " part " + std::to_string(k + 1);
      e.transform = from_matrix(local * glm::translate(glm::mat4(1.f), glm::vec3(c[0], c[1], c[2])));
      if (k == 0) {
        // part 1 keeps the entity's children; its pivot moves, so their local transforms follow to stay in place
        const glm::mat4 to_new = glm::inverse(to_matrix(e.transform)) * local;
        for (EntityId child : scene_.children(plan.id))
          modify(child, "Separate", [&](Entity& x) { x.transform = from_matrix(to_new * to_matrix(x.transform)); });
        modify(plan.id, "Separate", [&](Entity& x) { x = e; });
        out.push_back(plan.id);
      } else {
        e.id = kNoEntity;
        out.push_back(add_entity(std::move(e), index == SIZE_MAX ? SIZE_MAX : index + k));
      }
    }
  }
  history_.end_group();
  selection_.set(out);
  return out;
}

Transform Document::local_for_parent(const glm::mat4& world, EntityId parent) const {
  glm::mat4 pw = parent == kNoEntity ? glm::mat4(1.f) : scene_.world_matrix(parent);
  return from_matrix(glm::inverse(pw) * world);
}

void Document::reparent(EntityId id, EntityId new_parent) {
  const Entity* e = scene_.find(id);
  if (!e || id == new_parent || (new_parent != kNoEntity && scene_.is_ancestor(id, new_parent))) return;
  glm::mat4 world = scene_.world_matrix(id);
  Transform local = local_for_parent(world, new_parent);
  modify(id, "Reparent " + e->name, [&](Entity& x) {
    x.parent = new_parent;
    x.transform = local;
  });
}

EntityId Document::group_selection() {
  auto roots = selection_.roots(scene_);
  if (roots.empty()) return kNoEntity;
  EntityId parent = scene_.find(roots[0])->parent;
  for (EntityId id : roots)
    if (scene_.find(id)->parent != parent) parent = kNoEntity;
  history_.begin_group("Group");
  Entity g;
  g.name = "Model";
  g.is_group = true;
  g.parent = parent;
  size_t index = *scene_.index_of(roots[0]);
  EntityId gid = add_entity(std::move(g), index);
  for (EntityId id : roots) reparent(id, gid);
  history_.end_group();
  selection_.select(gid);
  return gid;
}

void Document::ungroup_selection() {
  auto roots = selection_.roots(scene_);
  std::vector<EntityId> freed;
  history_.begin_group("Ungroup");
  for (EntityId id : roots) {
    const Entity* g = scene_.find(id);
    if (!g || !g->is_group) continue;
    EntityId up = g->parent;
    for (EntityId c : scene_.children(id)) {
      reparent(c, up);
      freed.push_back(c);
    }
    execute(std::make_unique<RemoveEntityCommand>(id));
  }
  history_.end_group();
  if (!freed.empty()) selection_.set(freed);
}

std::vector<EntityId> Document::import_file(const std::string& path, const ImportOptions& opt) {
  ImportResult r = import_mesh_file(path, opt);
  for (auto& w : r.warnings) log_.warn(w);
  std::string stem = fs::path(path).stem().string();
  std::vector<EntityId> ids;
  history_.begin_group("Import " + fs::path(path).filename().string());
  EntityId parent = kNoEntity;
  if (r.parts.size() > 1) {
    Entity g;
    g.name = stem;
    g.is_group = true;
    parent = add_entity(std::move(g));
    ids.push_back(parent);
  }
  size_t tris = 0;
  for (auto& p : r.parts) {
    Entity e;
    e.name = r.parts.size() == 1 ? stem : p.name;
    e.mesh = p.mesh;
    e.color = p.mesh->colors.empty() ? p.color : Vec3{1.f, 1.f, 1.f};
    e.parent = parent;
    tris += p.mesh->triangles.size();
    EntityId id = add_entity(std::move(e));
    if (parent == kNoEntity) ids.push_back(id);
  }
  history_.end_group();
  selection_.set(ids);
  log_.info("imported " + path + ": " + std::to_string(r.parts.size()) + " mesh(es), " + std::to_string(tris) +
            " triangles");
  return ids;
}

void Document::export_file(const std::string& path, bool selection_only) {
  std::vector<EntityId> ids;
  if (selection_only) {
    for (EntityId root : selection_.roots(scene_)) {
      ids.push_back(root);
      scene_.descendants(root, ids);
    }
  } else {
    for (const auto& e : scene_.entities()) ids.push_back(e.id);
  }
  std::vector<ExportItem> items;
  for (EntityId id : ids) {
    const Entity* e = scene_.find(id);
    if (!e || !e->mesh || e->mesh->triangles.empty() || !scene_.effectively_visible(id)) continue;
    items.push_back({e->mesh, scene_.world_matrix(id), e->name, e->color});
  }
  if (items.empty()) throw Error("export " + path + ": " + (selection_only ? "the selection has" : "the scene has") + " no visible meshes");
  export_meshes(items, path);
  log_.info("exported " + std::to_string(items.size()) + " mesh(es) to " + path);
}

SaveStats Document::save(const std::string& path, const fileio::FaultHook& hook) {
  SaveStats st = save_scene(scene_, path, hook);
  path_ = fs::absolute(path).string();
  saved_counter_ = history_.change_counter();
  log_.info("saved " + path_ + " (" + std::to_string(scene_.size()) + " entities, " + std::to_string(st.meshes_written) +
            " mesh files written)");
  return st;
}

void Document::open(const std::string& path) {
  LoadReport report;
  Scene loaded = load_scene(path, report);  // throws before anything is replaced
  scene_ = std::move(loaded);
  scene_.touch();
  history_.clear();
  selection_.clear();
  path_ = fs::absolute(path).string();
  saved_counter_ = history_.change_counter();
  for (auto& w : report.warnings) log_.warn(w);
  log_.info("opened " + path_ + " (" + std::to_string(scene_.size()) + " entities" +
            (report.missing_meshes ? ", " + std::to_string(report.missing_meshes) + " missing meshes" : "") + ")");
}

void Document::new_scene() {
  scene_.clear();
  history_.clear();
  selection_.clear();
  path_.clear();
  saved_counter_ = history_.change_counter();
}

std::string Document::recovery_scene_path() { return (fs::path(config_dir()) / "recovery" / "recovery.cfscene").string(); }

void Document::write_recovery() { write_recovery_of(scene_, path_); }

void Document::write_recovery_of(const Scene& scene, const std::string& original, const fileio::FaultHook& hook) {
  fs::path p = recovery_scene_path();
  fileio::create_parent_folders(p.string());
  save_scene(scene, p.string(), hook);
  nlohmann::json info{{"original", original}};
  fileio::atomic_write_file((p.parent_path() / "recovery.json").string(), info.dump(), hook);
}

bool Document::has_recovery() {
  std::error_code ec;
  return fs::exists(recovery_scene_path(), ec);
}

void Document::discard_recovery() {
  std::error_code ec;
  fs::remove_all(fs::path(recovery_scene_path()).parent_path(), ec);
}

void Document::load_recovery() {
  fs::path p = recovery_scene_path();
  LoadReport report;
  Scene loaded = load_scene(p.string(), report);
  std::string original;
  std::ifstream in(p.parent_path() / "recovery.json");
  try {
    nlohmann::json j;
    in >> j;
    original = j.value("original", "");
  } catch (...) {
  }
  scene_ = std::move(loaded);
  scene_.touch();
  history_.clear();
  selection_.clear();
  path_ = original;
  saved_counter_ = history_.change_counter() + 1;  // recovered work is unsaved
  for (auto& w : report.warnings) log_.warn(w);
  log_.info("recovered unsaved work" + (original.empty() ? std::string() : " of " + original));
}

}  // namespace cubeforge::editor
