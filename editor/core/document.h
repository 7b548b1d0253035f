// The open document: scene + undo history + selection + file path, and every editing operation the UI, the script
// mode and plugins use (insert part, delete, duplicate, group, separate parts, set transform/properties, import, export, save,
// open, autosave/recovery). All mutations go through History as commands. Errors are thrown as cubeforge::Error.
#pragma once
#include "commands.h"
#include "log.h"
#include "mesh_io.h"
#include "primitives.h"
#include "scene_io.h"
#include "selection.h"

#include <functional>
#include <optional>

namespace cubeforge::editor {

class Document {
 public:
  explicit Document(Log& log) : log_(log) {}

  Scene& scene() { return scene_; }
  const Scene& scene() const { return scene_; }
  History& history() { return history_; }
  Selection& selection() { return selection_; }
  const Selection& selection() const { return selection_; }
  Log& log() { return log_; }

  const std::string& path() const { return path_; }
  bool dirty() const { return history_.change_counter() != saved_counter_; }
  std::string title() const;

  // --- editing (each is one undo step unless called inside begin_group/end_group) ---
  void execute(CommandPtr cmd);
  void begin_group(const std::string& name) { history_.begin_group(name); }
  void end_group() { history_.end_group(); after_change(); }
  void cancel_group() { history_.cancel_group(scene_); after_change(); }
  bool undo();
  bool redo();

  EntityId add_entity(Entity e, size_t index = SIZE_MAX);  // assigns an id when e.id == 0
  EntityId insert_part(PartKind kind, std::optional<Vec3> position = std::nullopt);
  // Applies fn to a copy of the entity and records the change; same merge_key => merged until sealed.
  bool modify(EntityId id, const std::string& label, const std::function<void(Entity&)>& fn,
              const std::string& merge_key = {});
  bool set_transform(EntityId id, const Transform& t, const std::string& merge_key = {});
  bool rename(EntityId id, const std::string& name);
  void delete_selection();
  std::vector<EntityId> duplicate_selection();
  // Splits every selected mesh entity of several connected parts (mesh_parts.h) into one entity per part, as one
  // undo step: the entity keeps its id, parent and children and becomes part 1, parts 2..N are new siblings right
  // after it; every part keeps the entity's colour and flags, gets its own base-centred pivot and the transform that
  // leaves it where it was, and is named "<name> part k". Selects and returns the parts (empty when no selected
  // entity has more than one part). More than kMaxSeparateParts parts: Error, nothing changes.
  std::vector<EntityId> separate_selection();
  static constexpr size_t kMaxSeparateParts = 256;
  EntityId group_selection();
  void ungroup_selection();
  void reparent(EntityId id, EntityId new_parent);  // keeps the world transform

  // --- files ---
  std::vector<EntityId> import_file(const std::string& path, const ImportOptions& opt = {});
  void export_file(const std::string& path, bool selection_only);
  SaveStats save(const std::string& path, const fileio::FaultHook& hook = {});
  void open(const std::string& path);
  void new_scene();

  // --- autosave / recovery (files under <config>/recovery) ---
  static std::string recovery_scene_path();
  void write_recovery();
  // The recovery files of a scene (a copy of a document's: entities share their immutable meshes): what
  // write_recovery() writes, callable from any thread (the Autosaver's). original: the document's own path.
  static void write_recovery_of(const Scene& scene, const std::string& original, const fileio::FaultHook& hook = {});
  static bool has_recovery();
  static void discard_recovery();
  void load_recovery();  // opens the recovery scene as an unsaved document

  // World transform of an entity as a local transform for a given parent.
  Transform local_for_parent(const glm::mat4& world, EntityId parent) const;

 private:
  void after_change() { selection_.prune(scene_); }
  Scene scene_;
  History history_;
  Selection selection_;
  Log& log_;
  std::string path_;
  uint64_t saved_counter_ = 0;
};

}  // namespace cubeforge::editor
