// Owns mesh export and import through Assimp: scene building (always one material), the exporter ids per format,
// the write-to-temporary-then-rename policy, and import with all node transforms applied.
#include <assimp/material.h>
#include <assimp/postprocess.h>
#include <assimp/scene.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <assimp/Exporter.hpp>
#include <assimp/Importer.hpp>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>

#include "cubeforge/error.h"
#include "cubeforge/mesh_cleanup.h"
#include "cubeforge/mesh_io.h"

namespace fs = std::filesystem;

namespace cubeforge {

namespace {

struct FormatInfo {
  MeshFormat format;
  const char* ext;
  const char* assimp_id;
};
constexpr FormatInfo kFormats[] = {
    {MeshFormat::Glb, ".glb", "glb2"},  {MeshFormat::Gltf, ".gltf", "gltf2"}, {MeshFormat::Obj, ".obj", "obj"},
    {MeshFormat::Ply, ".ply", "ply"},  {MeshFormat::Stl, ".stl", "stlb"},    {MeshFormat::FbxAscii, ".fbx", "fbxa"},
};

const FormatInfo& info(MeshFormat f) {
  for (const auto& i : kFormats)
    if (i.format == f) return i;
  throw Error("unknown mesh format");
}

std::string lower(std::string s) {
  for (auto& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::unique_ptr<aiScene> build_scene(const Mesh& m, const ExportOptions& o) {
  auto scene = std::make_unique<aiScene>();
  scene->mRootNode = new aiNode(o.mesh_name);
  scene->mRootNode->mNumMeshes = 1;
  scene->mRootNode->mMeshes = new unsigned[1]{0};

  scene->mNumMaterials = 1;
  scene->mMaterials = new aiMaterial*[1];
  auto* mat = new aiMaterial();
  scene->mMaterials[0] = mat;
  aiString mname(o.material_name);
  mat->AddProperty(&mname, AI_MATKEY_NAME);
  aiColor4D diffuse(o.base_color[0], o.base_color[1], o.base_color[2], 1.0f);
  mat->AddProperty(&diffuse, 1, AI_MATKEY_COLOR_DIFFUSE);
  mat->AddProperty(&diffuse, 1, AI_MATKEY_BASE_COLOR);

  scene->mNumMeshes = 1;
  scene->mMeshes = new aiMesh*[1];
  auto* am = new aiMesh();
  scene->mMeshes[0] = am;
  am->mName = aiString(o.mesh_name);
  am->mMaterialIndex = 0;
  am->mPrimitiveTypes = aiPrimitiveType_TRIANGLE;
  const unsigned nv = unsigned(m.positions.size());
  am->mNumVertices = nv;
  am->mVertices = new aiVector3D[nv];
  for (unsigned v = 0; v < nv; ++v) am->mVertices[v] = aiVector3D(m.positions[v][0], m.positions[v][1], m.positions[v][2]);
  if (m.normals.size() == nv) {
    am->mNormals = new aiVector3D[nv];
    for (unsigned v = 0; v < nv; ++v) am->mNormals[v] = aiVector3D(m.normals[v][0], m.normals[v][1], m.normals[v][2]);
  }
  if (m.colors.size() == nv) {
    am->mColors[0] = new aiColor4D[nv];
    for (unsigned v = 0; v < nv; ++v) am->mColors[0][v] = aiColor4D(m.colors[v][0], m.colors[v][1], m.colors[v][2], 1.0f);
  }
  am->mNumFaces = unsigned(m.triangles.size());
  am->mFaces = new aiFace[am->mNumFaces];
  for (unsigned f = 0; f < am->mNumFaces; ++f) {
    am->mFaces[f].mNumIndices = 3;
    am->mFaces[f].mIndices = new unsigned[3]{m.triangles[f][0], m.triangles[f][1], m.triangles[f][2]};
  }
  return scene;
}

// Removes the temporary directory (and whatever is left in it) on every exit path.
struct TempDir {
  fs::path path;
  ~TempDir() {
    if (!path.empty()) {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  }
};

}  // namespace

const char* format_extension(MeshFormat f) { return info(f).ext; }

std::optional<MeshFormat> format_from_path(const std::string& path) {
  const std::string ext = lower(fs::path(path).extension().string());
  for (const auto& i : kFormats)
    if (ext == i.ext) return i.format;
  return std::nullopt;
}

std::vector<MeshFormat> export_formats() {
  std::vector<MeshFormat> v;
  for (const auto& i : kFormats) v.push_back(i.format);
  return v;
}

void export_mesh(const Mesh& mesh, const std::string& path, const ExportOptions& o) {
  const auto fmt = o.format ? o.format : format_from_path(path);
  if (!fmt)
    throw Error("cannot export '" + path + "': unknown extension (use .glb, .gltf, .obj, .ply, .stl or .fbx)");
  if (mesh.triangles.empty()) throw Error("cannot export '" + path + "': the mesh is empty");
  for (const auto& t : mesh.triangles)
    for (auto i : t)
      if (i >= mesh.positions.size()) throw Error("cannot export '" + path + "': face index out of range");

  const fs::path target = fs::absolute(fs::path(path));
  const fs::path dir = target.parent_path();
  const std::string name = target.filename().string();
  if (name.empty()) throw Error("cannot export '" + path + "': no file name");
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw Error("cannot export '" + path + "': directory '" + dir.string() + "' does not exist");
  if (fs::is_directory(target, ec)) throw Error("cannot export '" + path + "': it is a directory");

  TempDir tmp;
  std::string templ = (dir / ".cubeforge-export-XXXXXX").string();
  if (!::mkdtemp(templ.data()))
    throw Error("cannot export '" + path + "': directory '" + dir.string() + "' is not writable (" +
                std::strerror(errno) + ")");
  tmp.path = templ;

  auto scene = build_scene(mesh, o);
  const fs::path tmp_file = tmp.path / name;
  Assimp::Exporter exporter;
  if (exporter.Export(scene.get(), info(*fmt).assimp_id, tmp_file.string()) != aiReturn_SUCCESS) {
    std::string why = exporter.GetErrorString();
    throw Error("cannot export '" + path + "': assimp " + info(*fmt).assimp_id + " exporter failed" +
                (why.empty() ? std::string() : ": " + why));
  }
  if (!fs::is_regular_file(tmp_file, ec) || fs::file_size(tmp_file, ec) == 0)
    throw Error("cannot export '" + path + "': the exporter wrote nothing");

  // Companion files (.bin, .mtl) first, the main file last.
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(tmp.path, ec))
    if (e.path().filename() != name) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  files.push_back(tmp_file);
  std::vector<fs::path> moved;
  for (const auto& f : files) {
    const fs::path dst = dir / f.filename();
    fs::rename(f, dst, ec);
    if (ec) {
      for (const auto& m : moved) fs::remove(m, ec);
      throw Error("cannot export '" + path + "': rename to '" + dst.string() + "' failed (" + ec.message() + ")");
    }
    moved.push_back(dst);
  }
}

Mesh import_mesh(const std::string& path, const ImportOptions& o) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw Error("cannot import '" + path + "': no such file");
  Assimp::Importer importer;
  const aiScene* s = importer.ReadFile(path, aiProcess_Triangulate | aiProcess_JoinIdenticalVertices);
  if (!s || !s->mRootNode || (s->mFlags & AI_SCENE_FLAGS_INCOMPLETE))
    throw Error("cannot import '" + path + "': " + importer.GetErrorString());

  Mesh out;
  bool any_normals = false, all_normals = true, any_colors = false;
  struct Item {
    const aiMesh* m;
    aiMatrix4x4 t;
  };
  std::vector<Item> items;
  std::vector<std::pair<const aiNode*, aiMatrix4x4>> stack{{s->mRootNode, s->mRootNode->mTransformation}};
  while (!stack.empty()) {
    auto [node, t] = stack.back();
    stack.pop_back();
    for (unsigned i = 0; i < node->mNumMeshes; ++i) {
      const aiMesh* m = s->mMeshes[node->mMeshes[i]];
      if (!(m->mPrimitiveTypes & aiPrimitiveType_TRIANGLE)) continue;
      items.push_back({m, t});
      any_normals |= m->HasNormals();
      all_normals &= m->HasNormals();
      any_colors |= m->HasVertexColors(0);
    }
    for (unsigned c = node->mNumChildren; c-- > 0;)
      stack.push_back({node->mChildren[c], t * node->mChildren[c]->mTransformation});
  }
  for (const auto& [m, t] : items) {
    const uint32_t base = uint32_t(out.positions.size());
    aiMatrix3x3 nt(t);
    nt.Inverse().Transpose();
    for (unsigned v = 0; v < m->mNumVertices; ++v) {
      const aiVector3D p = t * m->mVertices[v];
      out.positions.push_back({p.x, p.y, p.z});
      if (all_normals) {
        aiVector3D n = nt * m->mNormals[v];
        const float l = n.Length();
        if (l > 0) n /= l;
        out.normals.push_back({n.x, n.y, n.z});
      }
      if (any_colors) {
        if (m->HasVertexColors(0)) out.colors.push_back({m->mColors[0][v].r, m->mColors[0][v].g, m->mColors[0][v].b});
        else out.colors.push_back({1.0f, 1.0f, 1.0f});
      }
    }
    for (unsigned f = 0; f < m->mNumFaces; ++f) {
      const aiFace& fc = m->mFaces[f];
      if (fc.mNumIndices != 3) continue;
      out.triangles.push_back({base + fc.mIndices[0], base + fc.mIndices[1], base + fc.mIndices[2]});
    }
  }
  if (out.triangles.empty()) throw Error("cannot import '" + path + "': no triangle mesh in the file");
  bool rebuild_normals = any_normals && !all_normals;
  if (o.weld && merge_duplicate_vertices(out) > 0) rebuild_normals = any_normals;
  if (rebuild_normals) compute_vertex_normals(out);
  return out;
}

}  // namespace cubeforge
