// Editor core: commands, undo/redo, merging, named groups, selection, document operations.
#include <gtest/gtest.h>

#include "core/document.h"
#include "core/task_queue.h"

#include <cmath>
#include <thread>
#include "core_test_util.h"

using namespace cubeforge::editor;

namespace {

struct Fixture : ::testing::Test {
  Log log{false};
  Document doc{log};
  EntityId block(Vec3 pos) {
    EntityId id = doc.insert_part(PartKind::Block);
    Transform t = doc.scene().find(id)->transform;
    t.position = pos;
    doc.set_transform(id, t);
    doc.history().seal();
    return id;
  }
};

}  // namespace

TEST_F(Fixture, UndoRedoRestoresScene) {
  EntityId a = doc.insert_part(PartKind::Block);
  EntityId b = doc.insert_part(PartKind::Sphere);
  ASSERT_EQ(doc.scene().size(), 2u);
  EXPECT_TRUE(doc.undo());
  EXPECT_EQ(doc.scene().size(), 1u);
  EXPECT_TRUE(doc.scene().find(a));
  EXPECT_FALSE(doc.scene().find(b));
  EXPECT_TRUE(doc.redo());
  EXPECT_TRUE(doc.scene().find(b));
  EXPECT_FALSE(doc.redo());
  EXPECT_EQ(doc.history().undo_names(), (std::vector<std::string>{"Insert Block", "Insert Sphere"}));
}

TEST_F(Fixture, NewCommandDropsRedoBranch) {
  doc.insert_part(PartKind::Block);
  doc.insert_part(PartKind::Sphere);
  doc.undo();
  doc.insert_part(PartKind::Wedge);
  EXPECT_FALSE(doc.history().can_redo());
  EXPECT_EQ(doc.history().undo_names().back(), "Insert Wedge");
}

TEST_F(Fixture, DragMergesIntoOneStepUntilSealed) {
  EntityId id = doc.insert_part(PartKind::Block);
  doc.history().seal();
  Transform t0 = doc.scene().find(id)->transform;
  size_t steps = doc.history().size();
  for (int i = 1; i <= 20; ++i) {
    Transform t = t0;
    t.position[0] = static_cast<float>(i);
    doc.set_transform(id, t, "gizmo-drag-1");
  }
  EXPECT_EQ(doc.history().size(), steps + 1);
  EXPECT_FLOAT_EQ(doc.scene().find(id)->transform.position[0], 20.f);
  doc.history().seal();  // mouse released
  Transform t = t0;
  t.position[0] = 30.f;
  doc.set_transform(id, t, "gizmo-drag-1");
  EXPECT_EQ(doc.history().size(), steps + 2);
  doc.undo();
  EXPECT_FLOAT_EQ(doc.scene().find(id)->transform.position[0], 20.f);
  doc.undo();
  EXPECT_EQ(doc.scene().find(id)->transform, t0);
}

TEST_F(Fixture, DifferentMergeKeysDoNotMerge) {
  EntityId id = doc.insert_part(PartKind::Block);
  Transform t = doc.scene().find(id)->transform;
  size_t steps = doc.history().size();
  t.position[0] = 1;
  doc.set_transform(id, t, "a");
  t.position[0] = 2;
  doc.set_transform(id, t, "b");
  t.position[0] = 3;
  doc.set_transform(id, t);  // no key: never merges
  EXPECT_EQ(doc.history().size(), steps + 3);
}

TEST_F(Fixture, NamedGroupIsOneUndoStep) {
  doc.insert_part(PartKind::Block);
  size_t steps = doc.history().size();
  doc.begin_group("Generate: a chair");
  for (int i = 0; i < 5; ++i) {
    Entity e;
    e.name = "piece" + std::to_string(i);
    e.mesh = cftest::tetra(static_cast<float>(i));
    doc.add_entity(e);
  }
  doc.end_group();
  EXPECT_EQ(doc.scene().size(), 6u);
  EXPECT_EQ(doc.history().size(), steps + 1);
  EXPECT_EQ(doc.history().undo_names().back(), "Generate: a chair");
  doc.undo();
  EXPECT_EQ(doc.scene().size(), 1u);
  doc.redo();
  EXPECT_EQ(doc.scene().size(), 6u);
  EXPECT_EQ(doc.scene().entities().back().name, "piece4");
}

TEST_F(Fixture, NestedAndEmptyGroups) {
  size_t steps = doc.history().size();
  doc.begin_group("outer");
  doc.begin_group("inner");
  doc.insert_part(PartKind::Block);
  doc.end_group();
  doc.insert_part(PartKind::Sphere);
  doc.end_group();
  EXPECT_EQ(doc.history().size(), steps + 1);
  doc.begin_group("nothing");
  doc.end_group();
  EXPECT_EQ(doc.history().size(), steps + 1);
  doc.undo();
  EXPECT_TRUE(doc.scene().empty());
}

TEST_F(Fixture, CancelGroupRollsBack) {
  doc.insert_part(PartKind::Block);
  size_t steps = doc.history().size();
  doc.begin_group("failing plugin");
  doc.insert_part(PartKind::Sphere);
  doc.insert_part(PartKind::Wedge);
  doc.cancel_group();
  EXPECT_EQ(doc.scene().size(), 1u);
  EXPECT_EQ(doc.history().size(), steps);
  EXPECT_TRUE(doc.selection().empty());  // pruned: the selected wedge is gone
}

TEST_F(Fixture, SelectionToggleAndPrimary) {
  Selection s;
  s.set({1, 2, 2, 3});
  EXPECT_EQ(s.ids(), (std::vector<EntityId>{1, 2, 3}));
  EXPECT_EQ(s.primary(), 3u);
  s.toggle(2);
  EXPECT_EQ(s.ids(), (std::vector<EntityId>{1, 3}));
  s.toggle(2);
  EXPECT_EQ(s.primary(), 2u);
  s.add(1);
  EXPECT_EQ(s.ids(), (std::vector<EntityId>{3, 2, 1}));
  s.clear();
  EXPECT_TRUE(s.empty());
}

TEST_F(Fixture, DeleteRemovesDescendantsAndUndoRestoresOrder) {
  EntityId a = block({0, 0, 0});
  EntityId b = block({2, 0, 0});
  EntityId c = block({4, 0, 0});
  doc.selection().set({a, b});
  EntityId g = doc.group_selection();
  ASSERT_NE(g, kNoEntity);
  std::vector<EntityId> order_before;
  for (auto& e : doc.scene().entities()) order_before.push_back(e.id);
  doc.selection().set({g, a});  // a is inside g: roots() acts on g only
  doc.delete_selection();
  ASSERT_EQ(doc.scene().size(), 1u);
  EXPECT_TRUE(doc.scene().find(c));
  EXPECT_TRUE(doc.selection().empty());
  doc.undo();
  std::vector<EntityId> order_after;
  for (auto& e : doc.scene().entities()) order_after.push_back(e.id);
  EXPECT_EQ(order_before, order_after);
  EXPECT_EQ(doc.scene().find(a)->parent, g);
}

TEST_F(Fixture, GroupKeepsWorldTransformsAndUngroup) {
  EntityId a = block({1, 2, 3});
  Entity e;
  e.name = "parent";
  e.is_group = true;
  e.transform.position = {10, 0, 0};
  e.transform.rotation = {0, 90, 0};
  EntityId p = doc.add_entity(e);
  glm::mat4 before = doc.scene().world_matrix(a);
  doc.reparent(a, p);
  glm::mat4 after = doc.scene().world_matrix(a);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_NEAR(before[i][j], after[i][j], 1e-4);
  doc.selection().set({p});
  doc.ungroup_selection();
  EXPECT_FALSE(doc.scene().find(p));
  EXPECT_EQ(doc.scene().find(a)->parent, kNoEntity);
  EXPECT_NEAR(doc.scene().find(a)->transform.position[0], 1.f, 1e-4);
}

TEST_F(Fixture, DuplicateCopiesSubtreeWithNewIds) {
  EntityId a = block({0, 0, 0});
  EntityId b = block({1, 0, 0});
  doc.selection().set({a, b});
  EntityId g = doc.group_selection();
  doc.rename(g, "Chair");
  doc.selection().set({g});
  auto created = doc.duplicate_selection();
  ASSERT_EQ(created.size(), 1u);
  EXPECT_EQ(doc.scene().size(), 6u);
  EXPECT_EQ(doc.scene().find(created[0])->name, "Chair");
  EXPECT_EQ(doc.scene().children(created[0]).size(), 2u);
  EXPECT_EQ(doc.selection().ids(), created);
  doc.undo();
  EXPECT_EQ(doc.scene().size(), 3u);
}

TEST_F(Fixture, ModifyNoopIsNotRecorded) {
  EntityId a = block({0, 0, 0});
  size_t steps = doc.history().size();
  EXPECT_FALSE(doc.set_transform(a, doc.scene().find(a)->transform));
  EXPECT_FALSE(doc.rename(a, ""));
  EXPECT_EQ(doc.history().size(), steps);
}

TEST_F(Fixture, DirtyTracking) {
  EXPECT_FALSE(doc.dirty());
  doc.insert_part(PartKind::Block);
  EXPECT_TRUE(doc.dirty());
  EXPECT_EQ(doc.title(), "*Untitled");
}

TEST(TransformMath, EulerRoundTrip) {
  Transform t;
  t.position = {1, -2, 3};
  t.rotation = {30, -45, 60};
  t.scale = {2, 0.5f, 3};
  Transform r = from_matrix(to_matrix(t));
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(r.position[i], t.position[i], 1e-4);
    EXPECT_NEAR(r.rotation[i], t.rotation[i], 1e-3);
    EXPECT_NEAR(r.scale[i], t.scale[i], 1e-4);
  }
}

// A decomposed unrotated matrix has rotation 0, not -0 (the Properties panel would show "-0.000").
TEST(TransformMath, NoNegativeZeroRotation) {
  Transform t;
  t.position = {3.5f, 0.f, 0.5f};
  const Transform r = from_matrix(to_matrix(t) * glm::translate(glm::mat4(1.f), glm::vec3(1.f, 0.f, 0.f)));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(r.rotation[i], 0.f);
    EXPECT_FALSE(std::signbit(r.rotation[i])) << i;
  }
}

TEST(TaskQueueTest, WorkerPostsDrainedOnMainThread) {
  TaskQueue q;
  int ran = 0;
  std::vector<std::thread> workers;
  for (int i = 0; i < 4; ++i) workers.emplace_back([&q, &ran] {
    for (int k = 0; k < 25; ++k) q.post([&ran] { ++ran; });
  });
  for (auto& w : workers) w.join();
  q.post([] { throw std::runtime_error("boom"); });
  std::string err;
  EXPECT_EQ(q.drain([&](const std::string& e) { err = e; }), 101u);
  EXPECT_EQ(ran, 100);
  EXPECT_EQ(err, "boom");
  EXPECT_EQ(q.pending(), 0u);
  EXPECT_TRUE(q.on_owner_thread());
}
