// Commands and undo history. Every scene mutation is a Command with execute/undo; consecutive commands with the
// same merge key (a gizmo drag, a slider drag) merge into one step until the history is sealed; begin_group /
// end_group wrap several commands into one named undo step ("Generate: chair", "Delete 3 parts").
#pragma once
#include "scene.h"

#include <memory>
#include <string>
#include <vector>

namespace cubeforge::editor {

class Command {
 public:
  virtual ~Command() = default;
  virtual std::string name() const = 0;
  virtual void execute(Scene& scene) = 0;
  virtual void undo(Scene& scene) = 0;
  // Try to absorb `next` (already executed) into this command. Only called when merge keys match.
  virtual bool merge(const Command& /*next*/) { return false; }
  std::string merge_key;  // empty: never merges
};

using CommandPtr = std::unique_ptr<Command>;

// Inserts a full entity (with its id) at an index.
class AddEntityCommand : public Command {
 public:
  AddEntityCommand(Entity e, size_t index = SIZE_MAX) : entity_(std::move(e)), index_(index) {}
  std::string name() const override { return "Add " + entity_.name; }
  void execute(Scene& s) override;
  void undo(Scene& s) override;
  EntityId id() const { return entity_.id; }

 private:
  Entity entity_;
  size_t index_;
};

// Removes an entity and all its descendants; undo restores them at their old positions.
class RemoveEntityCommand : public Command {
 public:
  explicit RemoveEntityCommand(EntityId id) : id_(id) {}
  std::string name() const override { return "Delete"; }
  void execute(Scene& s) override;
  void undo(Scene& s) override;

 private:
  EntityId id_;
  std::vector<std::pair<size_t, Entity>> removed_;  // in ascending index order
};

// Replaces an entity's data (name, transform, colour, flags, parent, mesh) by a new value; the id stays.
class ModifyEntityCommand : public Command {
 public:
  ModifyEntityCommand(std::string label, Entity before, Entity after)
      : label_(std::move(label)), before_(std::move(before)), after_(std::move(after)) {}
  std::string name() const override { return label_; }
  void execute(Scene& s) override;
  void undo(Scene& s) override;
  bool merge(const Command& next) override;
  const Entity& after() const { return after_; }

 private:
  std::string label_;
  Entity before_, after_;
};

// Named list of commands executed in order and undone in reverse.
class GroupCommand : public Command {
 public:
  explicit GroupCommand(std::string label) : label_(std::move(label)) {}
  std::string name() const override { return label_; }
  void execute(Scene& s) override;
  void undo(Scene& s) override;
  void add_executed(CommandPtr c) { children_.push_back(std::move(c)); }
  bool empty() const { return children_.empty(); }
  size_t size() const { return children_.size(); }
  void set_name(std::string n) { label_ = std::move(n); }
  Command* last() { return children_.empty() ? nullptr : children_.back().get(); }

 private:
  std::string label_;
  std::vector<CommandPtr> children_;
};

class History {
 public:
  explicit History(size_t limit = 500) : limit_(limit) {}

  // Executes cmd on the scene and records it (into the open group, or merged into the last step).
  void execute(CommandPtr cmd, Scene& scene);

  void begin_group(const std::string& name);
  // Closes the innermost group; an empty group leaves no step. Returns false when no group was open.
  bool end_group();
  // Undoes everything done inside the open innermost group and discards it (used when a plugin throws).
  void cancel_group(Scene& scene);
  bool in_group() const { return !open_.empty(); }

  // Ends merging: the next command starts a new step even if its merge key matches (mouse release).
  void seal() { sealed_ = true; }

  bool can_undo() const { return cursor_ > 0 && open_.empty(); }
  bool can_redo() const { return cursor_ < steps_.size() && open_.empty(); }
  bool undo(Scene& scene);
  bool redo(Scene& scene);
  void clear();

  std::vector<std::string> undo_names() const;  // oldest first
  std::vector<std::string> redo_names() const;  // next redo first
  size_t cursor() const { return cursor_; }
  size_t size() const { return steps_.size(); }
  // Increases whenever the undo state changes; compare with a saved value to know "modified since save".
  uint64_t change_counter() const { return changes_; }

 private:
  void push_step(CommandPtr cmd);
  size_t limit_;
  std::vector<CommandPtr> steps_;
  size_t cursor_ = 0;
  std::vector<std::unique_ptr<GroupCommand>> open_;
  bool sealed_ = true;
  uint64_t changes_ = 0;
  uint64_t state_id_ = 0;
};

}  // namespace cubeforge::editor
