// CUDA backend of the SHAPE stage (issue 8, spec cube3d-reference.md §8): latent decoder, occupancy decoder (dense
// and surface-adaptive coarse-to-fine grids built on the device) and marching cubes on the GPU.
// Plain C++ header: it compiles without CUDA. The implementation (inference/src/cuda/shape_*.cu) is built only where
// nvcc is found, and then CUBEFORGE_HAVE_CUDA=1 is defined for users of the cubeforge_cuda target: guard every call
// with #ifdef CUBEFORGE_HAVE_CUDA and fall back to the CPU path (shape_model.h, grid.h, marching_cubes.h) when
// cuda_available() (cuda_gpt.h) says no or anything throws.
//
// Numerics (spec §3, the reference's bf16 autocast): weights and biases bf16 (RNE at load), fp32 accumulation, every
// Linear rounds its output to bf16; latent-decoder residual stream fp32, occupancy residual stream bf16; LayerNorm
// and RMSNorm in fp32, outputs rounded to bf16; attention bf16 q/k/v with fp32 online softmax (flash style, P in bf16).
// Differences to the reference, all within bf16 rounding: residual adds of the occupancy decoder are fused into the
// GEMM (one rounding of q0 + acc + bias instead of two), the first Linear of grid points comes from per-axis tables
// (fp32 sums of the separable Fourier features), and by default the GELU of the occupancy MLP is cuBLASLt's epilogue
// (tanh form, |Δ| < 5e-4 absolute against the erf form; ShapeEngineOptions::exact_gelu selects the erf form).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cubeforge/grid.h"
#include "cubeforge/marching_cubes.h"
#include "cubeforge/mesh.h"
#include "cubeforge/model_config.h"
#include "cubeforge/shape_model.h"

namespace cubeforge::cuda {

// fp32 host tensors by the reference tensor names of spec §2.2 (e.g. "decoder.blocks.3.attn.c_qk.weight"), with the
// shapes of ShapeModel::tensor_spec(). Only the decoder side is asked for: bottleneck.block.{codebook.weight,
// cb_weight, cb_bias, norm.weight, c_out.*}, decoder.*, occupancy_decoder.* and the Fourier embedder (asked for as
// "embedder.weight"). Throw (any std::exception) if a tensor is missing or has another shape.
struct ShapeWeightSource {
  std::function<std::vector<float>(const std::string& name, const std::vector<int64_t>& shape)> get;
};

struct ShapeEngineOptions {
  size_t chunk_points = size_t(1) << 17;  // points per network pass (scratch ~10.7 KB/point at width 768); halved
                                          // (with a message) while the allocation fails, down to 4096
  bool exact_gelu = false;                // occupancy MLP: erf GELU in a separate kernel (else the cuBLASLt epilogue)
  bool verbose = true;                    // VRAM use and fall-backs on stderr
};

// Analytic fields evaluated on the device (same formulas as analytic_fields.h): used to choose the points of an
// adaptive grid the way a real shape would, while the network (random weights give no realistic surface) is run on
// exactly those points for timing.
struct AnalyticShape {
  enum Kind { None, Sphere, Torus } kind = None;
  float a = 0.8f;   // sphere radius / torus major radius
  float b = 0.25f;  // torus minor radius
};

struct GpuGridOptions {
  bool adaptive = true;        // false: every point (dense)
  int coarse_rb = 5;           // grid.h AdaptiveOptions, same rules and defaults
  float margin = 1.0f;
  int dilation = 1;
  bool scale_margin = false;   // grid.h AdaptiveOptions::scale_margin (margin halves per level)
  int final_dilation = -1;     // grid.h AdaptiveOptions::final_dilation (-1 = dilation)
  AnalyticShape analytic;      // kind != None: the grid holds the analytic field's values ...
  bool network_on_analytic_points = true;  // ... and the network is still run on every evaluated point (timing)
  bool copy_values = true;     // copy the values back into GridValues::values (else left empty)
  bool copy_evaluated_bits = false;  // adaptive: also copy GridValues::evaluated_bits
  const std::atomic<bool>* cancel = nullptr;  // checked between chunks and levels; set => throws Cancelled
};

struct GpuGridStats {
  double ms = 0;               // whole grid on the device (CUDA events), copy-back excluded
  double network_ms = 0;       // network passes only (CUDA events, summed over chunks)
  double copy_ms = 0;          // values (and bits) back to the host
  size_t points = 0;           // network points evaluated (or analytic points when the network is not run)
  std::vector<size_t> points_per_level;
  int chunks = 0;
  bool on_device = true;       // false: the grid did not fit on the device; it was built on the host (grid.h) with
                               // the GPU network evaluating host chunks
};

struct ShapeStageTimes {
  double latent_ms = 0;        // ids → latents + occupancy K/V (CUDA events)
  double grid_ms = 0;          // occupancy grid (CUDA events)
  double mc_ms = 0;            // marching cubes incl. mesh download (host clock around synchronous work)
  double total_ms = 0;         // host wall clock, tokens in → Mesh out
  size_t points = 0;
  size_t grid_points = 0;      // M^3
};

class CudaShapeEngine {
 public:
  // Uploads the decoder-side weights as bf16 (one arena) and allocates the network scratch. Throws cubeforge::Error
  // (no GPU, unsupported configuration: head_dim = width / num_heads must be 8, 16, 32, 64 or 128 and width at most
  // 1024; out_dim 1; CUDA/cuBLAS errors). Widths that are multiples of 256 (the full-size models) use the row kernels'
  // compile-time-width instantiations, others masked ones (docs/cuda-shape.md).
  static std::unique_ptr<CudaShapeEngine> create(const ShapeConfig& cfg, const ShapeWeightSource& weights,
                                                 const ShapeEngineOptions& opts = {});
  ~CudaShapeEngine();
  CudaShapeEngine(const CudaShapeEngine&) = delete;
  CudaShapeEngine& operator=(const CudaShapeEngine&) = delete;

  // §8.1-8.2 on the GPU: exactly N ids in [0, num_codes) → latents (kept on the device), then the occupancy
  // cross-attention's keys/values (once per shape). Returns the device time in ms (CUDA events).
  double decode_tokens(const std::vector<int>& ids);
  // Live preview: the first k (1..N) ids, the missing slots filled with the mean normalized code (ShapeModel::
  // decode_preview with PreviewFill::MeanCode), then the K/V as decode_tokens. Returns device ms.
  double decode_preview(const std::vector<int>& prefix);
  // Binds latents computed elsewhere (e.g. the CPU path, or a truncated preview with fewer rows) as the current
  // shape and computes their keys/values. Returns device ms.
  double set_latents(const Latents& latents);
  Latents latents() const;  // the current shape's latents (fp32, copied back)

  // §8.4 for arbitrary points (host arrays): out[p] = logit of xyz[3p..3p+2] (full Fourier path, chunked).
  void evaluate(const float* xyz, size_t n, float* out);
  // Grid of resolution base rb (4..9), dense or adaptive (grid.h rules), built on the device and kept there for
  // marching_cubes(); copied back per options. Falls back to a host grid (message) when the device grid does not fit.
  GridValues grid(int rb, const GpuGridOptions& options = {}, GpuGridStats* stats = nullptr);
  // Marching cubes (marching_cubes.h conventions, identical output) on the device over the last grid(); an empty
  // mesh when there is no surface. When the last grid lives on the host only, the CPU marching cubes is used.
  Mesh marching_cubes(const MarchingCubesOptions& options = {}, double* ms = nullptr);
  // Uploads a host grid and runs the device marching cubes on it (checks).
  Mesh marching_cubes(const float* values, int M, const MarchingCubesOptions& options = {});

  // ids → mesh: decode_tokens + grid + marching_cubes.
  Mesh tokens_to_mesh(const std::vector<int>& ids, int rb, const GpuGridOptions& grid_options = {},
                      const MarchingCubesOptions& mc_options = {}, ShapeStageTimes* times = nullptr);

  const ShapeConfig& config() const;
  size_t chunk_points() const;
  size_t vram_bytes() const;    // everything this engine holds on the device now
  size_t weight_bytes() const;
  std::string device_name() const;
  std::string gemm_path() const;  // "cublasLt epilogues" or the fall-back in use

 private:
  CudaShapeEngine();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cubeforge::cuda
