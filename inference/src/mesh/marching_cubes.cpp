// Owns marching cubes over a dense value grid (reference conventions, see include/cubeforge/marching_cubes.h).
// The grid is swept in x-slabs; slab ranges run in parallel and are stitched so that the output (vertex order by
// node index and axis, face order by cell index) does not depend on the thread count. Rows of nodes without any
// sign change are skipped with memcmp-speed checks, which keeps mostly-empty (e.g. adaptive) grids cheap.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "cubeforge/error.h"
#include "cubeforge/marching_cubes.h"
#include "mesh/mc_tables.h"

namespace cubeforge {

double map_grid_coordinate(double g, int M, VertexMapping mapping) {
  const double ext = 2.0 * kGridHalfExtent;
  switch (mapping) {
    case VertexMapping::NewWarp: return g / double(M) * ext - kGridHalfExtent;
    case VertexMapping::OldWarpCentred: return (g + 0.5) / double(M) * ext - kGridHalfExtent;
    case VertexMapping::Exact: return g * ext / double(M - 1) - kGridHalfExtent;
  }
  return 0.0;
}

namespace {

constexpr uint32_t kForeign = 0x80000000u;  // vertex id refers to the next chunk's first slab

struct Slab {
  std::vector<uint32_t> eid;          // (j * M + k) * 3 + axis -> vertex id (valid only for crossed edges)
  std::vector<uint8_t> hx, hy, hz;    // row j has a crossed x / y / z edge
};

struct ChunkOut {
  std::vector<Vec3> positions;
  std::vector<std::array<uint32_t, 3>> tris;
};

class Extractor {
 public:
  Extractor(const float* v, int M, const MarchingCubesOptions& o) : v_(v), M_(M), MM_(size_t(M) * M), o_(o) {}

  void run_chunk(int x0, int x1, bool last, ChunkOut& out) const {
    const size_t MM = MM_;
    std::vector<uint8_t> s0(MM), s1(MM), s2(MM);
    Slab A, B;
    for (Slab* s : {&A, &B}) {
      s->eid.resize(MM * 3);
      s->hx.resize(M_);
      s->hy.resize(M_);
      s->hz.resize(M_);
    }
    const int cell_end = std::min(x1, M_ - 1);
    signs(x0, s0);
    if (x0 + 1 < M_) signs(x0 + 1, s1);
    uint32_t next_id = 0, foreign_id = 0;
    edges(x0, s0, x0 + 1 < M_ ? &s1 : nullptr, A, true, next_id, out);
    for (int i = x0; i < cell_end; ++i) {
      if (i + 2 < M_) signs(i + 2, s2);
      const bool owned = (i + 1 < x1) || last;
      edges(i + 1, s1, i + 2 < M_ ? &s2 : nullptr, B, owned, owned ? next_id : foreign_id, out);
      cells(i, s0, s1, A, B, out);
      std::swap(A, B);
      std::swap(s0, s1);
      std::swap(s1, s2);
    }
  }

 private:
  void signs(int x, std::vector<uint8_t>& s) const {
    const float* p = v_ + size_t(x) * MM_;
    const float iso = o_.iso;
    for (size_t q = 0; q < MM_; ++q) s[q] = p[q] >= iso;
  }

  float val(int i, int j, int k) const { return v_[size_t(i) * MM_ + size_t(j) * M_ + size_t(k)]; }

  Vec3 vertex(int i, int j, int k, int axis) const {
    const float d0 = val(i, j, k);
    const float d1 = axis == 0 ? val(i + 1, j, k) : axis == 1 ? val(i, j + 1, k) : val(i, j, k + 1);
    float t = (o_.iso - d0) / (d1 - d0);
    t = t > 0.0f ? std::min(t, 1.0f) : 0.0f;  // also maps NaN (from NaN/inf values) to 0
    double g[3] = {double(i), double(j), double(k)};
    g[axis] += double(t);
    return {float(map_grid_coordinate(g[0], M_, o_.mapping)), float(map_grid_coordinate(g[1], M_, o_.mapping)),
            float(map_grid_coordinate(g[2], M_, o_.mapping))};
  }

  // Assigns ids to the crossed edges owned by the nodes of slab x, in (j, k, axis) order. `nx` = signs of x + 1.
  void edges(int x, const std::vector<uint8_t>& sx, const std::vector<uint8_t>* nx, Slab& S, bool owned,
             uint32_t& counter, ChunkOut& out) const {
    const int M = M_;
    for (int j = 0; j < M; ++j) {
      const uint8_t* r = sx.data() + size_t(j) * M;
      const uint8_t* ry = j + 1 < M ? r + M : nullptr;
      const uint8_t* rx = nx ? nx->data() + size_t(j) * M : nullptr;
      const bool hz = std::memcmp(r, r + 1, M - 1) != 0;
      const bool hy = ry && std::memcmp(r, ry, M) != 0;
      const bool hx = rx && std::memcmp(r, rx, M) != 0;
      S.hz[j] = hz;
      S.hy[j] = hy;
      S.hx[j] = hx;
      if (!(hz || hy || hx)) continue;
      uint32_t* e = S.eid.data() + size_t(j) * M * 3;
      for (int k = 0; k < M; ++k) {
        const uint8_t a = r[k];
        if (hx && rx[k] != a) {
          e[3 * k] = owned ? counter : (kForeign | counter);
          ++counter;
          if (owned) out.positions.push_back(vertex(x, j, k, 0));
        }
        if (hy && ry[k] != a) {
          e[3 * k + 1] = owned ? counter : (kForeign | counter);
          ++counter;
          if (owned) out.positions.push_back(vertex(x, j, k, 1));
        }
        if (hz && k + 1 < M && r[k + 1] != a) {
          e[3 * k + 2] = owned ? counter : (kForeign | counter);
          ++counter;
          if (owned) out.positions.push_back(vertex(x, j, k, 2));
        }
      }
    }
  }

  void cells(int i, const std::vector<uint8_t>& sa, const std::vector<uint8_t>& sb, const Slab& A, const Slab& B,
             ChunkOut& out) const {
    (void)i;
    const int M = M_;
    for (int j = 0; j + 1 < M; ++j) {
      if (!(A.hz[j] || A.hz[j + 1] || B.hz[j] || B.hz[j + 1] || A.hy[j] || B.hy[j] || A.hx[j] || A.hx[j + 1]))
        continue;
      const uint8_t* a0 = sa.data() + size_t(j) * M;  // (i, j)
      const uint8_t* a1 = a0 + M;                      // (i, j+1)
      const uint8_t* b0 = sb.data() + size_t(j) * M;  // (i+1, j)
      const uint8_t* b1 = b0 + M;                      // (i+1, j+1)
      for (int k = 0; k + 1 < M; ++k) {
        const unsigned c = unsigned(a0[k]) | unsigned(b0[k]) << 1 | unsigned(b1[k]) << 2 | unsigned(a1[k]) << 3 |
                           unsigned(a0[k + 1]) << 4 | unsigned(b0[k + 1]) << 5 | unsigned(b1[k + 1]) << 6 |
                           unsigned(a1[k + 1]) << 7;
        const int t0 = mc::kCaseStart[c], t1 = mc::kCaseStart[c + 1];
        for (int t = t0; t < t1; t += 3) {
          uint32_t id[3];
          for (int s = 0; s < 3; ++s) {
            const int8_t* e = mc::kEdge[mc::kTriEdges[t + s]];
            const Slab& S = e[0] ? B : A;
            id[s] = S.eid[(size_t(j + e[1]) * M + size_t(k + e[2])) * 3 + size_t(e[3])];
          }
          if (o_.reverse_winding) out.tris.push_back({id[2], id[1], id[0]});
          else out.tris.push_back({id[0], id[1], id[2]});
        }
      }
    }
  }

  const float* v_;
  int M_;
  size_t MM_;
  const MarchingCubesOptions& o_;
};

}  // namespace

Mesh marching_cubes(const float* values, int M, const MarchingCubesOptions& options) {
  if (!values) throw Error("marching_cubes: no values");
  if (M < 2) throw Error("marching_cubes: a grid needs at least 2 points per axis, got " + std::to_string(M));
  int threads = options.threads > 0 ? options.threads : omp_get_max_threads();
  const int cells = M - 1;
  int nchunks = threads > 1 ? std::min(cells, threads * 4) : 1;
  std::vector<int> x(nchunks + 1);
  for (int c = 0; c <= nchunks; ++c) x[c] = int(int64_t(c) * cells / nchunks);
  std::vector<ChunkOut> outs(nchunks);
  Extractor ex(values, M, options);
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (nchunks > 1)
  for (int c = 0; c < nchunks; ++c) ex.run_chunk(x[c], x[c + 1], c == nchunks - 1, outs[c]);

  std::vector<uint32_t> offset(nchunks + 1, 0);
  size_t nt = 0;
  for (int c = 0; c < nchunks; ++c) {
    offset[c + 1] = offset[c] + uint32_t(outs[c].positions.size());
    nt += outs[c].tris.size();
  }
  Mesh m;
  m.positions.reserve(offset[nchunks]);
  m.triangles.reserve(nt);
  for (int c = 0; c < nchunks; ++c) {
    m.positions.insert(m.positions.end(), outs[c].positions.begin(), outs[c].positions.end());
    for (auto t : outs[c].tris) {
      for (auto& v : t) v = (v & kForeign) ? offset[c + 1] + (v & ~kForeign) : offset[c] + v;
      m.triangles.push_back(t);
    }
    ChunkOut().positions.swap(outs[c].positions);
    ChunkOut().tris.swap(outs[c].tris);
  }
  return m;
}

Mesh marching_cubes(const GridValues& grid, const MarchingCubesOptions& options) {
  if (grid.M < 2 || grid.values.size() != grid.point_count())
    throw Error("marching_cubes: grid has " + std::to_string(grid.values.size()) + " values for " +
                std::to_string(grid.M) + " points per axis");
  return marching_cubes(grid.values.data(), grid.M, options);
}

}  // namespace cubeforge
