// Assimp-backed import/export. Notes: Assimp 5.2.4 writes corrupt binary FBX, so .fbx exports use "fbxa";
// a scene without a material crashes the obj/fbx exporters, so every export carries one material per item.
#include "mesh_io.h"

#include <assimp/Exporter.hpp>
#include <assimp/Importer.hpp>
#include <assimp/postprocess.h>
#include <assimp/scene.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

namespace cubeforge::editor {
namespace fs = std::filesystem;
namespace {

std::string lower_ext(const std::string& path) {
  std::string e = fs::path(path).extension().string();
  for (auto& c : e) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return e;
}

glm::mat4 ai_to_glm(const aiMatrix4x4& m) {
  // aiMatrix4x4 is row-major; glm is column-major.
  return glm::transpose(glm::mat4(m.a1, m.a2, m.a3, m.a4, m.b1, m.b2, m.b3, m.b4, m.c1, m.c2, m.c3, m.c4, m.d1, m.d2,
                                  m.d3, m.d4));
}

Mesh convert_mesh(const aiMesh* am, const glm::mat4& xf) {
  Mesh m;
  glm::mat3 nxf = glm::transpose(glm::inverse(glm::mat3(xf)));
  m.positions.resize(am->mNumVertices);
  for (unsigned i = 0; i < am->mNumVertices; ++i) {
    const auto& v = am->mVertices[i];
    m.positions[i] = to_vec3(glm::vec3(xf * glm::vec4(v.x, v.y, v.z, 1.f)));
  }
  if (am->HasNormals()) {
    m.normals.resize(am->mNumVertices);
    for (unsigned i = 0; i < am->mNumVertices; ++i) {
      const auto& n = am->mNormals[i];
      glm::vec3 w = nxf * glm::vec3(n.x, n.y, n.z);
      float len = glm::length(w);
      m.normals[i] = to_vec3(len > 0 ? w / len : glm::vec3(0, 1, 0));
    }
  }
  if (am->HasVertexColors(0)) {
    m.colors.resize(am->mNumVertices);
    for (unsigned i = 0; i < am->mNumVertices; ++i) {
      const auto& c = am->mColors[0][i];
      m.colors[i] = {c.r, c.g, c.b};
    }
  }
  m.triangles.reserve(am->mNumFaces);
  for (unsigned f = 0; f < am->mNumFaces; ++f) {
    const aiFace& face = am->mFaces[f];
    if (face.mNumIndices != 3) continue;
    m.triangles.push_back({face.mIndices[0], face.mIndices[1], face.mIndices[2]});
  }
  // A negative-determinant transform flips winding; restore counter-clockwise = outward.
  if (glm::determinant(glm::mat3(xf)) < 0)
    for (auto& t : m.triangles) std::swap(t[1], t[2]);
  return m;
}

struct RawPart {
  std::string name;
  Mesh mesh;
  Vec3 color;
};

void walk(const aiScene* sc, const aiNode* node, const glm::mat4& parent, std::vector<RawPart>& out) {
  glm::mat4 xf = parent * ai_to_glm(node->mTransformation);
  for (unsigned i = 0; i < node->mNumMeshes; ++i) {
    const aiMesh* am = sc->mMeshes[node->mMeshes[i]];
    if (!(am->mPrimitiveTypes & aiPrimitiveType_TRIANGLE)) continue;
    RawPart p;
    p.name = am->mName.length ? am->mName.C_Str() : (node->mName.length ? node->mName.C_Str() : "Mesh");
    p.mesh = convert_mesh(am, xf);
    p.color = {0.8f, 0.8f, 0.8f};
    if (am->mMaterialIndex < sc->mNumMaterials) {
      aiColor4D c;
      if (sc->mMaterials[am->mMaterialIndex]->Get(AI_MATKEY_COLOR_DIFFUSE, c) == AI_SUCCESS) p.color = {c.r, c.g, c.b};
    }
    if (!p.mesh.triangles.empty()) out.push_back(std::move(p));
  }
  for (unsigned i = 0; i < node->mNumChildren; ++i) walk(sc, node->mChildren[i], xf, out);
}

constexpr unsigned kImportFlags = aiProcess_Triangulate | aiProcess_JoinIdenticalVertices | aiProcess_GenSmoothNormals |
                                  aiProcess_SortByPType | aiProcess_ValidateDataStructure;

ImportResult finish_import(const aiScene* sc, const std::string& label, const std::string& ext, const ImportOptions& opt) {
  if (!sc || !sc->mRootNode) throw Error("import " + label + ": no scene");
  std::vector<RawPart> raw;
  walk(sc, sc->mRootNode, glm::mat4(1.f), raw);
  if (raw.empty()) throw Error("import " + label + ": the file contains no triangle meshes");

  UpAxis up = opt.up;
  if (up == UpAxis::Auto) {
    up = (ext == ".stl" || ext == ".ply") ? UpAxis::Z : UpAxis::Y;
    int axis = -1;
    if (sc->mMetaData && sc->mMetaData->Get("UpAxis", axis)) up = axis == 2 ? UpAxis::Z : UpAxis::Y;
  }
  glm::mat4 fix(1.f);
  if (up == UpAxis::Z) fix = glm::rotate(glm::mat4(1.f), glm::radians(-90.f), glm::vec3(1, 0, 0));
  fix = glm::scale(glm::mat4(1.f), glm::vec3(opt.unit_scale)) * fix;
  Aabb box;
  for (auto& p : raw)
    for (auto& v : p.mesh.positions) box.add(glm::vec3(fix * glm::vec4(to_glm(v), 1.f)));
  if (opt.normalize_size && box.valid()) {
    glm::vec3 e = box.extent();
    float m = std::max(e.x, std::max(e.y, e.z));
    if (m > 0) {
      float s = opt.target_size / m;
      fix = glm::scale(glm::mat4(1.f), glm::vec3(s)) * fix;
      box.min *= s;
      box.max *= s;
    }
  }
  if (opt.base_center && box.valid()) {
    glm::vec3 c = box.center();
    fix = glm::translate(glm::mat4(1.f), glm::vec3(-c.x, -box.min.y, -c.z)) * fix;
  }
  bool identity = fix == glm::mat4(1.f);
  glm::mat3 nfix = glm::transpose(glm::inverse(glm::mat3(fix)));
  ImportResult result;
  for (auto& p : raw) {
    if (!identity) {
      for (auto& v : p.mesh.positions) v = to_vec3(glm::vec3(fix * glm::vec4(to_glm(v), 1.f)));
      for (auto& n : p.mesh.normals) n = to_vec3(glm::normalize(nfix * to_glm(n)));
    }
    result.parts.push_back({p.name, std::make_shared<const Mesh>(std::move(p.mesh)), p.color});
  }
  return result;
}

}  // namespace

bool is_importable_extension(const std::string& path) {
  Assimp::Importer imp;
  std::string e = lower_ext(path);
  return !e.empty() && imp.IsExtensionSupported(e);
}

ImportResult import_mesh_file(const std::string& path, const ImportOptions& opt) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw Error("import " + path + ": file not found");
  std::string ext = lower_ext(path);
  Assimp::Importer imp;
  if (!imp.IsExtensionSupported(ext)) throw Error("import " + path + ": unsupported file type '" + ext + "'");
  const aiScene* sc = imp.ReadFile(path, kImportFlags);
  if (!sc) throw Error("import " + path + ": " + imp.GetErrorString());
  return finish_import(sc, path, ext, opt);
}

ImportResult import_mesh_memory(const void* data, size_t size, const std::string& ext_hint, const ImportOptions& opt) {
  Assimp::Importer imp;
  std::string hint = ext_hint;
  if (!hint.empty() && hint[0] == '.') hint.erase(0, 1);
  const aiScene* sc = imp.ReadFileFromMemory(data, size, kImportFlags, hint.c_str());
  if (!sc) throw Error("import <memory." + hint + ">: " + imp.GetErrorString());
  return finish_import(sc, "<memory>", "." + hint, opt);
}

std::shared_ptr<const Mesh> load_mesh_merged(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw Error("mesh " + path + ": file not found");
  Assimp::Importer imp;
  const aiScene* sc = imp.ReadFile(path, aiProcess_Triangulate);
  if (!sc || !sc->mRootNode) throw Error("mesh " + path + ": " + imp.GetErrorString());
  std::vector<RawPart> raw;
  walk(sc, sc->mRootNode, glm::mat4(1.f), raw);
  if (raw.empty()) throw Error("mesh " + path + ": no triangles");
  if (raw.size() == 1) return std::make_shared<const Mesh>(std::move(raw[0].mesh));
  Mesh out;
  bool normals = true, colors = true;
  for (auto& p : raw) normals &= !p.mesh.normals.empty(), colors &= !p.mesh.colors.empty();
  for (auto& p : raw) {
    auto base = static_cast<uint32_t>(out.positions.size());
    out.positions.insert(out.positions.end(), p.mesh.positions.begin(), p.mesh.positions.end());
    if (normals) out.normals.insert(out.normals.end(), p.mesh.normals.begin(), p.mesh.normals.end());
    if (colors) out.colors.insert(out.colors.end(), p.mesh.colors.begin(), p.mesh.colors.end());
    for (auto t : p.mesh.triangles) out.triangles.push_back({t[0] + base, t[1] + base, t[2] + base});
  }
  return std::make_shared<const Mesh>(std::move(out));
}

std::string export_format_for(const std::string& path) {
  std::string e = lower_ext(path);
  if (e == ".glb") return "glb2";
  if (e == ".gltf") return "gltf2";
  if (e == ".obj") return "obj";
  if (e == ".ply") return "ply";
  if (e == ".stl") return "stl";
  if (e == ".fbx") return "fbxa";
  throw Error("export " + path + ": unsupported format '" + e + "' (use .glb .gltf .obj .ply .stl .fbx)");
}

namespace {

// Builds an aiScene owning copies of the (world-baked) meshes. The caller deletes it.
aiScene* build_scene(const std::vector<ExportItem>& items) {
  if (items.empty()) throw Error("export: nothing to export");
  auto* sc = new aiScene();
  sc->mRootNode = new aiNode("Scene");
  unsigned n = static_cast<unsigned>(items.size());
  sc->mNumMeshes = n;
  sc->mMeshes = new aiMesh*[n];
  sc->mNumMaterials = n;
  sc->mMaterials = new aiMaterial*[n];
  sc->mRootNode->mNumChildren = n;
  sc->mRootNode->mChildren = new aiNode*[n];
  for (unsigned i = 0; i < n; ++i) {
    const ExportItem& it = items[i];
    const Mesh& src = *it.mesh;
    auto* mat = new aiMaterial();
    aiColor4D col(it.color[0], it.color[1], it.color[2], 1.f);
    mat->AddProperty(&col, 1, AI_MATKEY_COLOR_DIFFUSE);
    aiString mname(("Material_" + std::to_string(i)).c_str());
    mat->AddProperty(&mname, AI_MATKEY_NAME);
    sc->mMaterials[i] = mat;

    auto* am = new aiMesh();
    am->mName = aiString(it.name.empty() ? ("Mesh_" + std::to_string(i)) : it.name);
    am->mMaterialIndex = i;
    am->mPrimitiveTypes = aiPrimitiveType_TRIANGLE;
    unsigned nv = static_cast<unsigned>(src.positions.size());
    am->mNumVertices = nv;
    am->mVertices = new aiVector3D[nv];
    glm::mat3 nxf = glm::transpose(glm::inverse(glm::mat3(it.world)));
    bool flip = glm::determinant(glm::mat3(it.world)) < 0;
    for (unsigned v = 0; v < nv; ++v) {
      glm::vec3 p = glm::vec3(it.world * glm::vec4(to_glm(src.positions[v]), 1.f));
      am->mVertices[v] = aiVector3D(p.x, p.y, p.z);
    }
    if (src.normals.size() == nv) {
      am->mNormals = new aiVector3D[nv];
      for (unsigned v = 0; v < nv; ++v) {
        glm::vec3 q = nxf * to_glm(src.normals[v]);
        float l = glm::length(q);
        if (l > 0) q /= l;
        am->mNormals[v] = aiVector3D(q.x, q.y, q.z);
      }
    }
    if (src.colors.size() == nv) {
      am->mColors[0] = new aiColor4D[nv];
      for (unsigned v = 0; v < nv; ++v)
        am->mColors[0][v] = aiColor4D(src.colors[v][0], src.colors[v][1], src.colors[v][2], 1.f);
    }
    unsigned nf = static_cast<unsigned>(src.triangles.size());
    am->mNumFaces = nf;
    am->mFaces = new aiFace[nf];
    for (unsigned f = 0; f < nf; ++f) {
      aiFace& face = am->mFaces[f];
      face.mNumIndices = 3;
      face.mIndices = new unsigned[3];
      const auto& t = src.triangles[f];
      face.mIndices[0] = t[0];
      face.mIndices[1] = flip ? t[2] : t[1];
      face.mIndices[2] = flip ? t[1] : t[2];
    }
    sc->mMeshes[i] = am;
    auto* node = new aiNode(am->mName.C_Str());
    node->mParent = sc->mRootNode;
    node->mNumMeshes = 1;
    node->mMeshes = new unsigned[1]{i};
    sc->mRootNode->mChildren[i] = node;
  }
  return sc;
}

}  // namespace

void export_meshes(const std::vector<ExportItem>& items, const std::string& path) {
  std::string fmt = export_format_for(path);
  std::unique_ptr<aiScene> sc(build_scene(items));
  Assimp::Exporter ex;
  if (ex.Export(sc.get(), fmt, path) != AI_SUCCESS) {
    std::string err = ex.GetErrorString();
    throw Error("export " + path + ": " + (err.empty() ? "the exporter failed (is the directory writable?)" : err));
  }
}

std::vector<uint8_t> export_meshes_blob(const std::vector<ExportItem>& items, const std::string& format_id) {
  std::unique_ptr<aiScene> sc(build_scene(items));
  Assimp::Exporter ex;
  const aiExportDataBlob* blob = ex.ExportToBlob(sc.get(), format_id);
  if (!blob) throw Error("export blob (" + format_id + "): " + ex.GetErrorString());
  return std::vector<uint8_t>(static_cast<const uint8_t*>(blob->data), static_cast<const uint8_t*>(blob->data) + blob->size);
}

}  // namespace cubeforge::editor
