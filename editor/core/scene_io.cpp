// Scene document JSON (nlohmann-json) + mesh files (written by fileio/atomic_file.h).
#include "scene_io.h"

#include "mesh_io.h"
#include "primitives.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

namespace cubeforge::editor {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr const char* kFormat = "cubeforge.scene";
constexpr int kVersion = 1;
constexpr const char* kMissingPrefix = "missing:";

json vec(const Vec3& v) { return json::array({v[0], v[1], v[2]}); }

Vec3 read_vec(const json& j, const char* key, Vec3 def) {
  if (!j.contains(key)) return def;
  const json& a = j.at(key);
  if (!a.is_array() || a.size() != 3) throw Error(std::string("field '") + key + "' must be an array of 3 numbers");
  return {a[0].get<float>(), a[1].get<float>(), a[2].get<float>()};
}

std::string hex(uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace

uint64_t mesh_hash(const std::shared_ptr<const Mesh>& mesh) {
  static std::mutex mu;
  static std::unordered_map<const Mesh*, std::pair<std::weak_ptr<const Mesh>, uint64_t>> cache;
  {
    std::lock_guard lock(mu);
    auto it = cache.find(mesh.get());
    if (it != cache.end() && it->second.first.lock() == mesh) return it->second.second;
  }
  uint64_t h = 1469598103934665603ull;
  auto feed = [&](const void* p, size_t n) {
    auto* b = static_cast<const unsigned char*>(p);
    // FNV-1a over 8-byte words (with a byte tail): fast enough for millions of vertices.
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t w;
      std::memcpy(&w, b + i, 8);
      h = (h ^ w) * 1099511628211ull;
    }
    for (; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
    h = (h ^ n) * 1099511628211ull;
  };
  feed(mesh->positions.data(), mesh->positions.size() * sizeof(Vec3));
  feed(mesh->normals.data(), mesh->normals.size() * sizeof(Vec3));
  feed(mesh->colors.data(), mesh->colors.size() * sizeof(Vec3));
  feed(mesh->triangles.data(), mesh->triangles.size() * sizeof(mesh->triangles[0]));
  std::lock_guard lock(mu);
  cache[mesh.get()] = {mesh, h};
  return h;
}

SaveStats save_scene(const Scene& scene, const std::string& path, const fileio::FaultHook& hook) {
  SaveStats stats;
  fs::path target(path);
  fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string mesh_dir_name = target.stem().string() + "_meshes";
  fs::path mesh_dir = dir / mesh_dir_name;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Error("cannot save " + path + ": directory does not exist");

  json doc;
  doc["format"] = kFormat;
  doc["version"] = kVersion;
  doc["next_id"] = scene.next_id();
  json ents = json::array();
  std::unordered_map<uint64_t, std::string> written;
  for (const Entity& e : scene.entities()) {
    json j;
    j["id"] = e.id;
    j["name"] = e.name;
    if (e.parent != kNoEntity) j["parent"] = e.parent;
    j["kind"] = e.is_group ? "group" : "part";
    j["position"] = vec(e.transform.position);
    j["rotation"] = vec(e.transform.rotation);
    j["scale"] = vec(e.transform.scale);
    j["color"] = vec(e.color);
    j["visible"] = e.visible;
    j["anchored"] = e.anchored;
    PartKind kind;
    if (e.mesh_source.rfind(kMissingPrefix, 0) == 0) {
      j["mesh"] = e.mesh_source.substr(std::strlen(kMissingPrefix));  // keep the broken reference as it was
    } else if (part_from_source(e.mesh_source, kind)) {
      j["mesh"] = e.mesh_source;
    } else if (e.mesh) {
      uint64_t h = mesh_hash(e.mesh);
      std::string rel = mesh_dir_name + "/" + hex(h) + ".glb";
      if (!written.count(h)) {
        fs::path file = dir / rel;
        if (fs::exists(file, ec)) {
          ++stats.meshes_reused;
        } else {
          fs::create_directories(mesh_dir, ec);
          if (ec) throw Error("cannot save " + path + ": cannot create " + mesh_dir.string() + ": " + ec.message());
          auto blob = export_meshes_blob({ExportItem{e.mesh, glm::mat4(1.f), "mesh", {1, 1, 1}}}, "glb2");
          fileio::atomic_write_file(file.string(), std::string(blob.begin(), blob.end()), hook);
          ++stats.meshes_written;
        }
        written[h] = rel;
      }
      j["mesh"] = rel;
      j["triangles"] = e.mesh->triangles.size();
    }
    ents.push_back(std::move(j));
  }
  doc["entities"] = std::move(ents);
  fileio::atomic_write_file(path, doc.dump(2) + "\n", hook);
  return stats;
}

json read_json_file(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot open " + what + " " + path + ": " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw Error("cannot read " + what + " " + path + ": " + std::strerror(errno));
  try {
    return json::parse(ss.str());
  } catch (const std::exception& ex) {
    throw Error(what + " " + path + " is not valid JSON: " + ex.what());
  }
}

Scene load_scene(const std::string& path, LoadReport& report) {
  const json doc = read_json_file(path, "scene");
  if (!doc.is_object() || doc.value("format", "") != kFormat)
    throw Error("scene " + path + ": not a Cubeforge scene (missing \"format\": \"cubeforge.scene\")");
  if (doc.value("version", 0) > kVersion)
    throw Error("scene " + path + ": written by a newer Cubeforge (version " + std::to_string(doc.value("version", 0)) + ")");
  fs::path dir = fs::path(path).has_parent_path() ? fs::path(path).parent_path() : fs::path(".");
  Scene scene;
  std::unordered_map<std::string, std::shared_ptr<const Mesh>> loaded;
  try {
    for (const json& j : doc.at("entities")) {
      Entity e;
      e.id = j.at("id").get<EntityId>();
      if (e.id == kNoEntity || scene.find(e.id)) throw Error("duplicate or zero entity id " + std::to_string(e.id));
      e.name = j.value("name", "Part");
      e.parent = j.value("parent", kNoEntity);
      e.is_group = j.value("kind", "part") == "group";
      e.transform.position = read_vec(j, "position", {0, 0, 0});
      e.transform.rotation = read_vec(j, "rotation", {0, 0, 0});
      e.transform.scale = read_vec(j, "scale", {1, 1, 1});
      e.color = read_vec(j, "color", e.color);
      e.visible = j.value("visible", true);
      e.anchored = j.value("anchored", true);
      if (j.contains("mesh") && j["mesh"].is_string()) {
        std::string ref = j["mesh"].get<std::string>();
        PartKind kind;
        if (part_from_source(ref, kind)) {
          e.mesh = make_part_mesh(kind);
          e.mesh_source = ref;
        } else if (auto it = loaded.find(ref); it != loaded.end()) {
          e.mesh = it->second;
        } else {
          try {
            if (fs::path(ref).is_absolute() || ref.find("..") != std::string::npos)
              throw Error("mesh reference " + ref + " must be a relative path inside the scene folder");
            e.mesh = load_mesh_merged((dir / ref).string());
            loaded[ref] = e.mesh;
          } catch (const std::exception& ex) {
            report.warnings.push_back("entity '" + e.name + "': " + ex.what() + " (placeholder block shown)");
            ++report.missing_meshes;
            e.mesh = make_part_mesh(PartKind::Block);
            e.mesh_source = kMissingPrefix + ref;
          }
        }
      }
      scene.insert(std::move(e), SIZE_MAX);
    }
  } catch (const Error& ex) {
    throw Error("scene " + path + ": " + ex.what());
  } catch (const std::exception& ex) {
    throw Error("scene " + path + ": malformed entity: " + ex.what());
  }
  // Orphans (parent not in the file) go to the root rather than vanishing.
  std::vector<EntityId> orphans;
  for (const auto& e : scene.entities())
    if (e.parent != kNoEntity) {
      bool bad = !scene.find(e.parent);
      const Entity* up = &e;
      for (size_t steps = 0; !bad && up && up->parent != kNoEntity; ++steps) {
        if (steps > scene.size() || up->parent == e.id) bad = true;  // cycle
        up = scene.find(up->parent);
      }
      if (bad) orphans.push_back(e.id);
    }
  for (EntityId id : orphans) {
    scene.find_mut(id)->parent = kNoEntity;
    report.warnings.push_back("entity " + std::to_string(id) + ": parent missing, moved to the root");
  }
  scene.set_next_id(doc.value("next_id", EntityId{1}));
  return scene;
}

}  // namespace cubeforge::editor
