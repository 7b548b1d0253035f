// Command implementations and the undo/redo history with merging and named groups.
#include "commands.h"

#include <algorithm>
#include <stdexcept>

namespace cubeforge::editor {

void AddEntityCommand::execute(Scene& s) {
  if (entity_.id == kNoEntity) entity_.id = s.allocate_id();
  s.insert(entity_, index_);
}

void AddEntityCommand::undo(Scene& s) { s.remove(entity_.id); }

void RemoveEntityCommand::execute(Scene& s) {
  removed_.clear();
  std::vector<EntityId> ids{id_};
  s.descendants(id_, ids);
  for (EntityId id : ids)
    if (auto i = s.index_of(id)) removed_.push_back({*i, *s.find(id)});
  std::sort(removed_.begin(), removed_.end(), [](auto& a, auto& b) { return a.first < b.first; });
  for (auto& [i, e] : removed_) s.remove(e.id);
}

void RemoveEntityCommand::undo(Scene& s) {
  for (auto& [i, e] : removed_) s.insert(e, i);  // ascending order restores original indices
}

void ModifyEntityCommand::execute(Scene& s) {
  if (Entity* e = s.find_mut(after_.id)) *e = after_;
}

void ModifyEntityCommand::undo(Scene& s) {
  if (Entity* e = s.find_mut(before_.id)) *e = before_;
}

bool ModifyEntityCommand::merge(const Command& next) {
  auto* m = dynamic_cast<const ModifyEntityCommand*>(&next);
  if (!m || m->after_.id != after_.id) return false;
  after_ = m->after_;
  return true;
}

void GroupCommand::execute(Scene& s) {
  for (auto& c : children_) c->execute(s);
}

void GroupCommand::undo(Scene& s) {
  for (auto it = children_.rbegin(); it != children_.rend(); ++it) (*it)->undo(s);
}

void History::execute(CommandPtr cmd, Scene& scene) {
  cmd->execute(scene);
  ++changes_;
  if (!open_.empty()) {
    GroupCommand& g = *open_.back();
    Command* last = g.last();
    if (last && !cmd->merge_key.empty() && last->merge_key == cmd->merge_key && last->merge(*cmd)) return;
    g.add_executed(std::move(cmd));
    return;
  }
  // Merge into the last step when keys match and nothing sealed it since.
  if (!sealed_ && cursor_ == steps_.size() && cursor_ > 0 && !cmd->merge_key.empty()) {
    Command* last = steps_.back().get();
    if (last->merge_key == cmd->merge_key && last->merge(*cmd)) return;
  }
  push_step(std::move(cmd));
  sealed_ = false;
}

void History::push_step(CommandPtr cmd) {
  steps_.erase(steps_.begin() + static_cast<std::ptrdiff_t>(cursor_), steps_.end());
  steps_.push_back(std::move(cmd));
  if (steps_.size() > limit_) steps_.erase(steps_.begin());
  cursor_ = steps_.size();
}

void History::begin_group(const std::string& name) { open_.push_back(std::make_unique<GroupCommand>(name)); }

bool History::end_group() {
  if (open_.empty()) return false;
  std::unique_ptr<GroupCommand> g = std::move(open_.back());
  open_.pop_back();
  if (g->empty()) return true;
  if (!open_.empty()) {
    open_.back()->add_executed(std::move(g));
  } else {
    push_step(std::move(g));
    sealed_ = true;  // a group never absorbs later commands
  }
  ++changes_;
  return true;
}

void History::cancel_group(Scene& scene) {
  if (open_.empty()) return;
  open_.back()->undo(scene);
  open_.pop_back();
  ++changes_;
}

bool History::undo(Scene& scene) {
  if (!can_undo()) return false;
  --cursor_;
  steps_[cursor_]->undo(scene);
  sealed_ = true;
  ++changes_;
  return true;
}

bool History::redo(Scene& scene) {
  if (!can_redo()) return false;
  steps_[cursor_]->execute(scene);
  ++cursor_;
  sealed_ = true;
  ++changes_;
  return true;
}

void History::clear() {
  steps_.clear();
  open_.clear();
  cursor_ = 0;
  sealed_ = true;
  ++changes_;
}

std::vector<std::string> History::undo_names() const {
  std::vector<std::string> out;
  for (size_t i = 0; i < cursor_; ++i) out.push_back(steps_[i]->name());
  return out;
}

std::vector<std::string> History::redo_names() const {
  std::vector<std::string> out;
  for (size_t i = cursor_; i < steps_.size(); ++i) out.push_back(steps_[i]->name());
  return out;
}

}  // namespace cubeforge::editor
