// Marching cubes on the device (marching_cubes.h conventions): active-node compaction, per-node vertex / per-cell
// face counts, scans, vertex and face emission, with the host fall-back; the two marching_cubes() entry points (the
// grid left by grid(), or values from the host).
#include <array>
#include <cstdio>
#include <cub/device/device_scan.cuh>
#include <vector>

#include "cubeforge/cuda_shape.h"
#include "cubeforge/error.h"
#include "mesh/mc_tables.h"
#include "shape_engine_impl.cuh"
#include "shape_mc_kernels.cuh"

namespace cubeforge::cuda {

// Each .cu file has its own copy of a __constant__ array (no separate compilation): the tables are copied from the
// file whose kernels read them.
void CudaShapeEngine::Impl::upload_mc_tables() {
  CF_CUDA(cudaMemcpyToSymbol(c_case_start, mc::kCaseStart, sizeof(mc::kCaseStart)));
  CF_CUDA(cudaMemcpyToSymbol(c_tri_edges, mc::kTriEdges, sizeof(mc::kTriEdges)));
  CF_CUDA(cudaMemcpyToSymbol(c_edge, mc::kEdge, sizeof(mc::kEdge)));
}

Mesh CudaShapeEngine::Impl::device_mc(const MarchingCubesOptions& mo) {
  const uint32_t M = uint32_t(grid_points_per_axis(grid_rb));
  const size_t total = size_t(M) * M * M;
  for (DevBuf* b : {&list, &vcnt, &fcnt, &voff, &foff, &mpos, &mtris, &cubtmp}) track(*b);
  list.ensure(total * 4);
  McGrid g{values.as<float>(), M, mo.iso};
  const int64_t na64 = select(McActive{g}, total);
  Mesh mesh;
  if (na64 <= 0) return mesh;  // no surface
  const uint32_t na = uint32_t(na64);
  vcnt.ensure((size_t(na) + 1) * 4);
  fcnt.ensure((size_t(na) + 1) * 4);
  voff.ensure((size_t(na) + 1) * 4);
  foff.ensure((size_t(na) + 1) * 4);
  CF_CUDA(cudaMemsetAsync(vcnt.as<uint32_t>() + na, 0, 4, stream));
  CF_CUDA(cudaMemsetAsync(fcnt.as<uint32_t>() + na, 0, 4, stream));
  mc_count_kernel<<<blocks_for(na, 256), 256, 0, stream>>>(g, list.as<uint32_t>(), na, vcnt.as<uint32_t>(),
                                                           fcnt.as<uint32_t>());
  CF_CHECK_LAUNCH();
  size_t tmp = 0;
  CF_CUDA(cub::DeviceScan::ExclusiveSum(nullptr, tmp, vcnt.as<uint32_t>(), voff.as<uint32_t>(), int64_t(na) + 1,
                                        stream));
  cubtmp.ensure(tmp);
  tmp = cubtmp.bytes;
  CF_CUDA(cub::DeviceScan::ExclusiveSum(cubtmp.p, tmp, vcnt.as<uint32_t>(), voff.as<uint32_t>(), int64_t(na) + 1,
                                        stream));
  tmp = cubtmp.bytes;
  CF_CUDA(cub::DeviceScan::ExclusiveSum(cubtmp.p, tmp, fcnt.as<uint32_t>(), foff.as<uint32_t>(), int64_t(na) + 1,
                                        stream));
  CF_CUDA(cudaMemcpyAsync(u32_h, voff.as<uint32_t>() + na, 4, cudaMemcpyDeviceToHost, stream));
  CF_CUDA(cudaMemcpyAsync(u32_h + 1, foff.as<uint32_t>() + na, 4, cudaMemcpyDeviceToHost, stream));
  CF_CUDA(cudaStreamSynchronize(stream));
  const uint32_t nv = u32_h[0], nfc = u32_h[1];
  mpos.ensure(size_t(nv) * 12 + 16);
  mtris.ensure(size_t(nfc) * 12 + 16);
  const int mapping = mo.mapping == VertexMapping::NewWarp ? 0 : mo.mapping == VertexMapping::OldWarpCentred ? 1 : 2;
  mc_vertex_kernel<<<blocks_for(na, 256), 256, 0, stream>>>(g, list.as<uint32_t>(), na, voff.as<uint32_t>(), mapping,
                                                            2.0 * kGridHalfExtent, kGridHalfExtent,
                                                            mpos.as<float>());
  CF_CHECK_LAUNCH();
  mc_face_kernel<<<blocks_for(na, 256), 256, 0, stream>>>(g, list.as<uint32_t>(), na, voff.as<uint32_t>(),
                                                          foff.as<uint32_t>(), mo.reverse_winding ? 1 : 0,
                                                          mtris.as<uint32_t>());
  CF_CHECK_LAUNCH();
  mesh.positions.resize(nv);
  mesh.triangles.resize(nfc);
  static_assert(sizeof(Vec3) == 12 && sizeof(std::array<uint32_t, 3>) == 12, "packed mesh arrays");
  CF_CUDA(cudaMemcpyAsync(mesh.positions.data(), mpos.p, size_t(nv) * 12, cudaMemcpyDeviceToHost, stream));
  CF_CUDA(cudaMemcpyAsync(mesh.triangles.data(), mtris.p, size_t(nfc) * 12, cudaMemcpyDeviceToHost, stream));
  CF_CUDA(cudaStreamSynchronize(stream));
  return mesh;
}

Mesh CudaShapeEngine::marching_cubes(const MarchingCubesOptions& mo, double* ms) {
  Impl& m = *impl_;
  const double t0 = now_ms();
  Mesh mesh;
  if (m.grid_on_host) {
    mesh = ::cubeforge::marching_cubes(m.host_grid, mo);
  } else {
    if (m.grid_rb < 0) throw Error("CUDA shape: marching cubes without a grid (call grid() first)");
    try {
      mesh = m.device_mc(mo);
    } catch (const DeviceOom& e) {
      std::fprintf(stderr, "CUDA shape: %s; marching cubes on the host\n", e.what());
      const int M = grid_points_per_axis(m.grid_rb);
      std::vector<float> v(size_t(M) * M * M);
      CF_CUDA(cudaMemcpy(v.data(), m.values.p, v.size() * 4, cudaMemcpyDeviceToHost));
      mesh = ::cubeforge::marching_cubes(v.data(), M, mo);
    }
  }
  if (ms) *ms = now_ms() - t0;
  return mesh;
}

Mesh CudaShapeEngine::marching_cubes(const float* values, int M, const MarchingCubesOptions& mo) {
  Impl& m = *impl_;
  int rb = -1;
  for (int r = kMinResolutionBase; r <= kMaxResolutionBase; ++r)
    if (grid_points_per_axis(r) == M) rb = r;
  if (rb < 0) throw Error("CUDA marching cubes: M = " + std::to_string(M) + " is not 2^rb + 1 with rb in [4, 9]");
  const size_t total = size_t(M) * M * M;
  m.track(m.values);
  m.values.ensure(total * 4);
  CF_CUDA(cudaMemcpy(m.values.p, values, total * 4, cudaMemcpyHostToDevice));
  m.grid_rb = rb;
  m.grid_on_host = false;
  return m.device_mc(mo);
}

}  // namespace cubeforge::cuda
