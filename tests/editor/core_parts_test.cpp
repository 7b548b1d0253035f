// Edit > Separate parts: splitting a mesh into its connected parts (mesh_parts.h) and the document operation that
// turns one entity into one entity per part, in place, as one undo step.
#include <gtest/gtest.h>

#include "core/document.h"
#include "core/mesh_parts.h"

#include <algorithm>

using namespace cubeforge::editor;
using cubeforge::Mesh;

namespace {

// A copy of `m` moved by `d` appended to `out` (vertices, normals, colours and faces).
void append(Mesh& out, const Mesh& m, Vec3 d, Vec3 colour) {
  const uint32_t base = uint32_t(out.positions.size());
  for (size_t v = 0; v < m.positions.size(); ++v) {
    out.positions.push_back({m.positions[v][0] + d[0], m.positions[v][1] + d[1], m.positions[v][2] + d[2]});
    out.normals.push_back(m.normals[v]);
    out.colors.push_back(colour);
  }
  for (const auto& t : m.triangles) out.triangles.push_back({t[0] + base, t[1] + base, t[2] + base});
}

// A table top and two legs: three separate blocks (flat-shaded: each corner repeated per face) in one mesh.
Mesh table() {
  const Mesh& b = *make_part_mesh(PartKind::Block);
  Mesh m;
  append(m, b, {0.f, 1.f, 0.f}, {1.f, 0.f, 0.f});
  append(m, b, {-2.f, 0.f, 0.f}, {0.f, 1.f, 0.f});
  append(m, b, {2.f, 0.f, 0.f}, {0.f, 0.f, 1.f});
  return m;
}

glm::vec3 world(const Document& doc, EntityId id, const Vec3& v) {
  return glm::vec3(doc.scene().world_matrix(id) * glm::vec4(v[0], v[1], v[2], 1.f));
}

struct Parts : ::testing::Test {
  Log log{false};
  Document doc{log};
  EntityId add_mesh(Mesh m, const std::string& name) {
    Entity e;
    e.name = name;
    e.mesh = std::make_shared<const Mesh>(std::move(m));
    e.color = {0.8f, 0.2f, 0.2f};
    e.transform.position = {3.f, 0.f, -1.f};
    e.transform.rotation = {0.f, 30.f, 0.f};
    e.transform.scale = {2.f, 1.f, 2.f};
    const EntityId id = doc.add_entity(std::move(e));
    doc.history().seal();
    return id;
  }
};

}  // namespace

// Each block of the table is one part, flat-shaded corners do not cut a block apart, attributes follow the vertices.
TEST(SplitParts, OnePartPerConnectedPiece) {
  const Mesh m = table();
  const std::vector<Mesh> parts = split_parts(m);
  ASSERT_EQ(parts.size(), 3u);
  const Mesh& b = *make_part_mesh(PartKind::Block);
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(parts[k].face_count(), b.face_count());
    EXPECT_EQ(parts[k].vertex_count(), b.vertex_count());  // split, not welded
    ASSERT_EQ(parts[k].colors.size(), parts[k].positions.size());
    ASSERT_EQ(parts[k].normals.size(), parts[k].positions.size());
  }
  EXPECT_EQ(parts[0].colors[0], (Vec3{1.f, 0.f, 0.f}));  // in the order of their first face
  EXPECT_EQ(parts[2].colors[0], (Vec3{0.f, 0.f, 1.f}));
  EXPECT_EQ(parts[1].positions[0][0], b.positions[0][0] - 2.f);
  EXPECT_EQ(split_parts(b).size(), 1u);
  EXPECT_EQ(split_parts(*make_part_mesh(PartKind::Sphere)).size(), 1u);
  EXPECT_TRUE(split_parts(Mesh{}).empty());
  const Vec3 c = base_centre(parts[2]);
  EXPECT_FLOAT_EQ(c[0], 2.f);
  EXPECT_FLOAT_EQ(c[1], -0.5f);
  EXPECT_FLOAT_EQ(c[2], 0.f);
}

// The entity becomes three entities where it was (every vertex stays put in the world), each with its own
// base-centred pivot, the entity's colour and a numbered name; one undo step restores the one entity.
TEST_F(Parts, SeparateInPlaceAsOneUndoStep) {
  const EntityId other = doc.insert_part(PartKind::Sphere);
  const EntityId id = add_mesh(table(), "Table");
  const auto before = doc.scene().find(id)->mesh;
  std::vector<glm::vec3> world_before;
  for (const auto& v : before->positions) world_before.push_back(world(doc, id, v));
  const size_t steps = doc.history().size();
  doc.selection().set({id});

  const std::vector<EntityId> parts = doc.separate_selection();
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0], id);  // the entity itself is part 1
  EXPECT_EQ(doc.scene().size(), 4u);
  EXPECT_EQ(doc.history().size(), steps + 1);
  EXPECT_EQ(doc.history().undo_names().back(), "Separate Table");
  EXPECT_EQ(doc.selection().ids(), parts);
  EXPECT_EQ(*doc.scene().index_of(parts[1]), *doc.scene().index_of(id) + 1);  // right after it in the outliner
  std::vector<glm::vec3> world_after;
  for (size_t k = 0; k < 3; ++k) {
    const Entity& e = *doc.scene().find(parts[k]);
    EXPECT_EQ(e.name, "Table part " + std::to_string(k + 1));
    EXPECT_EQ(e.color, (Vec3{0.8f, 0.2f, 0.2f}));
    const Vec3 c = base_centre(*e.mesh);  // own pivot: x/z centre and lowest point at the origin
    EXPECT_NEAR(c[0], 0.f, 1e-5f);
    EXPECT_NEAR(c[1], 0.f, 1e-5f);
    EXPECT_NEAR(c[2], 0.f, 1e-5f);
    for (const auto& v : e.mesh->positions) world_after.push_back(world(doc, parts[k], v));
  }
  ASSERT_EQ(world_after.size(), world_before.size());  // same vertices, in the same order (parts in face order)
  for (size_t i = 0; i < world_before.size(); ++i)
    for (int a = 0; a < 3; ++a) EXPECT_NEAR(world_after[i][a], world_before[i][a], 1e-4f) << i;

  ASSERT_TRUE(doc.undo());
  EXPECT_EQ(doc.scene().size(), 2u);
  EXPECT_EQ(doc.scene().find(id)->mesh, before);
  EXPECT_EQ(doc.scene().find(id)->name, "Table");
  EXPECT_TRUE(doc.scene().find(other));
  ASSERT_TRUE(doc.redo());
  EXPECT_EQ(doc.scene().size(), 4u);
}

// Part 1 keeps the entity's children, and they stay where they were although its pivot moved.
TEST_F(Parts, ChildrenStayInPlace) {
  const EntityId id = add_mesh(table(), "Table");
  const EntityId lamp = doc.insert_part(PartKind::Sphere);
  doc.reparent(lamp, id);
  Transform t = doc.scene().find(lamp)->transform;
  t.position = {0.5f, 2.f, 0.25f};
  t.rotation = {10.f, 0.f, 5.f};
  doc.set_transform(lamp, t);
  doc.history().seal();
  const glm::mat4 before = doc.scene().world_matrix(lamp);
  const Transform local_before = doc.scene().find(lamp)->transform;
  doc.selection().set({id});
  ASSERT_EQ(doc.separate_selection().size(), 3u);
  EXPECT_EQ(doc.scene().find(lamp)->parent, id);
  const glm::mat4 after = doc.scene().world_matrix(lamp);
  for (int c = 0; c < 4; ++c)
    for (int r = 0; r < 4; ++r) EXPECT_NEAR(after[c][r], before[c][r], 1e-4f) << c << r;
  EXPECT_NE(doc.scene().find(lamp)->transform, local_before);  // (its local transform did change)
  ASSERT_TRUE(doc.undo());
  EXPECT_EQ(doc.scene().find(lamp)->transform, local_before);
}

// Nothing to separate (one piece, a group, nothing selected): no change and no undo step.
TEST_F(Parts, OnePieceIsLeftAlone) {
  const EntityId id = doc.insert_part(PartKind::Block);
  const size_t steps = doc.history().size();
  doc.selection().set({id});
  EXPECT_TRUE(doc.separate_selection().empty());
  doc.selection().clear();
  EXPECT_TRUE(doc.separate_selection().empty());
  EXPECT_EQ(doc.history().size(), steps);
  EXPECT_EQ(doc.scene().size(), 1u);
}

// A mesh of more pieces than the outliner can take (noise from a generation) is refused with a clear error and
// nothing changes.
TEST_F(Parts, TooManyPiecesIsAnErrorAndChangesNothing) {
  Mesh crumbs;
  for (uint32_t i = 0; i < Document::kMaxSeparateParts + 1; ++i) {
    const float x = float(i);
    crumbs.positions.insert(crumbs.positions.end(), {{x, 0.f, 0.f}, {x + 0.5f, 0.f, 0.f}, {x, 0.5f, 0.f}});
    crumbs.triangles.push_back({3 * i, 3 * i + 1, 3 * i + 2});
  }
  const EntityId table_id = add_mesh(table(), "Table");
  const EntityId id = add_mesh(crumbs, "Crumbs");
  const size_t steps = doc.history().size();
  doc.selection().set({table_id, id});
  try {
    doc.separate_selection();
    FAIL() << "expected an error";
  } catch (const cubeforge::Error& e) {
    EXPECT_NE(std::string(e.what()).find("257 separate parts"), std::string::npos) << e.what();
  }
  EXPECT_EQ(doc.history().size(), steps);
  EXPECT_EQ(doc.scene().size(), 2u);
  EXPECT_EQ(doc.scene().find(table_id)->name, "Table");
}
