// BVH build/traversal (Moller-Trumbore triangles) and the scene ray cast.
#include "bvh.h"

#include <algorithm>
#include <cmath>

namespace cubeforge::editor {

MeshBvh::MeshBvh(const Mesh& mesh) {
  const size_t n = mesh.triangles.size();
  if (n == 0) return;
  tris_.resize(n);
  std::vector<glm::vec3> centroid(n);
  std::vector<Aabb> tbox(n);
  for (size_t i = 0; i < n; ++i) {
    tris_[i] = static_cast<uint32_t>(i);
    const auto& t = mesh.triangles[i];
    Aabb b;
    for (int k = 0; k < 3; ++k) b.add(to_glm(mesh.positions[t[k]]));
    tbox[i] = b;
    centroid[i] = b.center();
  }
  nodes_.reserve(2 * n / 4 + 1);
  struct Task { uint32_t node, first, count; };
  std::vector<Task> stack;
  nodes_.push_back({});
  stack.push_back({0, 0, static_cast<uint32_t>(n)});
  while (!stack.empty()) {
    Task task = stack.back();
    stack.pop_back();
    Aabb box, cbox;
    for (uint32_t i = task.first; i < task.first + task.count; ++i) {
      box.add(tbox[tris_[i]]);
      cbox.add(centroid[tris_[i]]);
    }
    nodes_[task.node].box = box;
    glm::vec3 ext = cbox.extent();
    int axis = ext.x > ext.y ? (ext.x > ext.z ? 0 : 2) : (ext.y > ext.z ? 1 : 2);
    if (task.count <= 4 || ext[axis] <= 0.f) {
      nodes_[task.node].first = task.first;
      nodes_[task.node].count = task.count;
      continue;
    }
    uint32_t mid = task.first + task.count / 2;
    std::nth_element(tris_.begin() + task.first, tris_.begin() + mid, tris_.begin() + task.first + task.count,
                     [&](uint32_t a, uint32_t b) { return centroid[a][axis] < centroid[b][axis]; });
    auto left = static_cast<uint32_t>(nodes_.size());
    nodes_.push_back({});
    nodes_.push_back({});
    nodes_[task.node].first = left;
    nodes_[task.node].count = 0;
    stack.push_back({left, task.first, mid - task.first});
    stack.push_back({left + 1, mid, task.first + task.count - mid});
  }
}

MeshHit MeshBvh::intersect(const Mesh& mesh, const glm::vec3& o, const glm::vec3& d, float tmax) const {
  MeshHit best;
  if (nodes_.empty()) return best;
  glm::vec3 inv(1.f / (d.x == 0 ? 1e-30f : d.x), 1.f / (d.y == 0 ? 1e-30f : d.y), 1.f / (d.z == 0 ? 1e-30f : d.z));
  float closest = tmax;
  uint32_t stack[128];
  int sp = 0;
  stack[sp++] = 0;
  while (sp > 0) {
    const Node& node = nodes_[stack[--sp]];
    if (ray_aabb(o, inv, node.box, closest) < 0.f) continue;
    if (node.count > 0) {
      for (uint32_t i = node.first; i < node.first + node.count; ++i) {
        const auto& t = mesh.triangles[tris_[i]];
        glm::vec3 a = to_glm(mesh.positions[t[0]]), b = to_glm(mesh.positions[t[1]]), c = to_glm(mesh.positions[t[2]]);
        glm::vec3 e1 = b - a, e2 = c - a, p = glm::cross(d, e2);
        float det = glm::dot(e1, p);
        if (std::fabs(det) < 1e-12f) continue;
        float invdet = 1.f / det;
        glm::vec3 s = o - a;
        float u = glm::dot(s, p) * invdet;
        if (u < 0.f || u > 1.f) continue;
        glm::vec3 q = glm::cross(s, e1);
        float v = glm::dot(d, q) * invdet;
        if (v < 0.f || u + v > 1.f) continue;
        float tt = glm::dot(e2, q) * invdet;
        if (tt > 1e-6f && tt < closest) {
          closest = tt;
          best = {true, tt, tris_[i]};
        }
      }
    } else if (sp + 2 <= 128) {
      // Visit the nearer child first.
      float tl = ray_aabb(o, inv, nodes_[node.first].box, closest);
      float tr = ray_aabb(o, inv, nodes_[node.first + 1].box, closest);
      if (tl >= 0 && tr >= 0) {
        if (tl < tr) { stack[sp++] = node.first + 1; stack[sp++] = node.first; }
        else { stack[sp++] = node.first; stack[sp++] = node.first + 1; }
      } else if (tl >= 0) stack[sp++] = node.first;
      else if (tr >= 0) stack[sp++] = node.first + 1;
    }
  }
  return best;
}

MeshAccelCache::Slot& MeshAccelCache::slot(const std::shared_ptr<const Mesh>& mesh) {
  auto it = slots_.find(mesh.get());
  if (it != slots_.end() && it->second.mesh.lock() != mesh) slots_.erase(it), it = slots_.end();
  if (it == slots_.end()) it = slots_.emplace(mesh.get(), Slot{mesh, {}, false, nullptr}).first;
  return it->second;
}

Aabb MeshAccelCache::bounds(const std::shared_ptr<const Mesh>& mesh) {
  if (!mesh) return {};
  std::lock_guard lock(mu_);
  Slot& s = slot(mesh);
  if (!s.has_bounds) {
    s.bounds = mesh_bounds(*mesh);
    s.has_bounds = true;
  }
  return s.bounds;
}

std::shared_ptr<const MeshBvh> MeshAccelCache::bvh(const std::shared_ptr<const Mesh>& mesh) {
  if (!mesh) return nullptr;
  {
    std::lock_guard lock(mu_);
    Slot& s = slot(mesh);
    if (s.bvh) return s.bvh;
  }
  auto built = std::make_shared<const MeshBvh>(*mesh);  // built outside the lock
  std::lock_guard lock(mu_);
  Slot& s = slot(mesh);
  if (!s.bvh) s.bvh = built;
  return s.bvh;
}

void MeshAccelCache::prune() {
  std::lock_guard lock(mu_);
  for (auto it = slots_.begin(); it != slots_.end();)
    it = it->second.mesh.expired() ? slots_.erase(it) : std::next(it);
}

MeshAccelCache& mesh_accel_cache() {
  static MeshAccelCache cache;
  return cache;
}

RayHit raycast_scene(const Scene& scene, const Ray& ray, bool ground, const std::vector<EntityId>& skip) {
  RayHit best;
  glm::vec3 o = to_glm(ray.origin), d = glm::normalize(to_glm(ray.direction));
  glm::vec3 inv(1.f / (d.x == 0 ? 1e-30f : d.x), 1.f / (d.y == 0 ? 1e-30f : d.y), 1.f / (d.z == 0 ? 1e-30f : d.z));
  float closest = std::numeric_limits<float>::max();
  auto& cache = mesh_accel_cache();
  for (const Entity& e : scene.entities()) {
    if (!e.mesh || e.mesh->triangles.empty()) continue;
    if (std::find(skip.begin(), skip.end(), e.id) != skip.end()) continue;
    if (!scene.effectively_visible(e.id)) continue;
    glm::mat4 w = scene.world_matrix(e.id);
    Aabb wb = cache.bounds(e.mesh).transformed(w);
    if (ray_aabb(o, inv, wb, closest) < 0.f) continue;
    glm::mat4 iw = glm::inverse(w);
    glm::vec3 lo = glm::vec3(iw * glm::vec4(o, 1.f));
    glm::vec3 ld = glm::vec3(iw * glm::vec4(d, 0.f));
    auto bvh = cache.bvh(e.mesh);
    MeshHit h = bvh->intersect(*e.mesh, lo, ld, std::numeric_limits<float>::max());
    if (!h.hit) continue;
    glm::vec3 wp = glm::vec3(w * glm::vec4(lo + ld * h.t, 1.f));
    float dist = glm::length(wp - o);
    if (dist >= closest) continue;
    closest = dist;
    const auto& t = e.mesh->triangles[h.triangle];
    glm::vec3 a = to_glm(e.mesh->positions[t[0]]), b = to_glm(e.mesh->positions[t[1]]), c = to_glm(e.mesh->positions[t[2]]);
    glm::vec3 n = glm::normalize(glm::transpose(glm::mat3(iw)) * glm::cross(b - a, c - a));
    if (glm::dot(n, d) > 0) n = -n;
    best = RayHit{true, false, e.id, dist, to_vec3(wp), to_vec3(n), h.triangle};
  }
  if (ground && std::fabs(d.y) > 1e-6f) {
    float t = -o.y / d.y;
    if (t > 0 && t < closest) {
      glm::vec3 p = o + d * t;
      best = RayHit{true, true, kNoEntity, t, to_vec3(p), {0.f, o.y >= 0 ? 1.f : -1.f, 0.f}, 0};
    }
  }
  return best;
}

}  // namespace cubeforge::editor
