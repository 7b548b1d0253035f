// Public API of the neural shape stage on the CPU (fp32): the OneDAutoEncoder of Cube 3D (spec §2.2, §2.3, §8, §9).
// Codebook, token ids → latents (latent decoder), latents → occupancy logits (occupancy decoder, with the
// latent-side keys/values computed once per shape), points+normals → token ids (encoder + VQ), live-preview
// latents from a prefix of the tokens, and the golden check of these tensors.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cubeforge/cancel.h"
#include "cubeforge/grid.h"
#include "cubeforge/mesh.h"
#include "cubeforge/model_config.h"

namespace cubeforge {

// Output of the latent decoder: `count` rows of `width` floats (row-major). count = N for a full decode; a
// truncated preview may have fewer rows (the occupancy decoder attends to all rows it is given).
struct Latents {
  int count = 0;
  int width = 0;
  std::vector<float> data;  // [count, width]
};

// How a live preview turns the first k of N tokens into latents. Measured with `cubeforge-gen preview-study`
// (occupancy IoU of the preview vs the final shape at k = N/8, N/4, N/2; random-weight models, so illustrative):
// MeanCode is the most robust (best or near-best on the width-256 synthetic model and on random token sequences;
// ZeroCode collapses there), Truncate is the cheapest (k/N of the decode) but converges worst on the larger model.
// Re-run the study on a trained model before changing the default.
enum class PreviewFill {
  Truncate,      // decode only the k known tokens (k latents, positional encodings 0..k-1): cheapest, ~k/N of a decode
  MeanCode,      // missing slots get the mean normalized code (through c_out) + their positional encoding (default)
  RepeatPrefix,  // missing slot j gets the token of slot j mod k (the prefix repeated)
  ZeroCode,      // missing slots get c_out(0) = c_out.bias + their positional encoding
};
const char* to_string(PreviewFill f);
PreviewFill preview_fill_from_string(const std::string& s);  // "truncate", "mean", "repeat", "zero"; throws Error

struct ShapeWeights;  // internal

// Occupancy decoder bound to one shape (spec §8.4). Build it with ShapeModel::occupancy(latents): the LayerNorm,
// c_k and c_v of the latents are computed there once. evaluate() is multithreaded inside (OpenMP over batches of
// points, sgemm everywhere incl. the attention) and reentrant; the object keeps the model weights alive.
class OccupancyDecoder {
 public:
  ~OccupancyDecoder();
  OccupancyDecoder(const OccupancyDecoder&) = delete;
  OccupancyDecoder& operator=(const OccupancyDecoder&) = delete;

  // out[p] = occupancy logit (positive = inside) of point xyz[3p..3p+2]. Checks `cancel` between batches.
  void evaluate(const float* xyz, size_t n, float* out, const CancelToken* cancel = nullptr) const;
  // As a grid.h FieldFn (captures this object by reference: keep it alive while the FieldFn is used).
  FieldFn field_fn(const CancelToken* cancel = nullptr) const;

  // Convenience: the reference grid (spec §8.5) at resolution base rb, dense or adaptive (grid.h rules).
  GridValues grid_dense(int rb, const CancelToken* cancel = nullptr) const;
  GridValues grid_adaptive(int rb, AdaptiveOptions options = {}) const;

  int latent_count() const { return n_latents_; }
  size_t points_evaluated() const;  // total over this object's lifetime
  void set_batch_size(int b);       // points per thread batch (default 256)

  struct State;  // internal (precomputed K/V, per-axis grid tables)

 private:
  friend class ShapeModel;
  OccupancyDecoder() = default;
  std::shared_ptr<const ShapeWeights> w_;
  std::unique_ptr<State> st_;
  int n_latents_ = 0;
};

class ShapeModel {
 public:
  // Strict load of a shape_tokenizer.safetensors (every tensor of §2.2 for this configuration, exact shapes,
  // nothing unexpected; the shared Fourier embedder may be stored under any of its three names). Throws Error.
  static std::unique_ptr<ShapeModel> load(const ShapeConfig& config, const std::string& shape_safetensors_path);
  ~ShapeModel();
  // Every tensor name → shape the checkpoint must hold for this configuration (§2.2; the shared Fourier embedder
  // under its stored name "embedder.weight"). Throws Error for an unsupported configuration.
  static std::map<std::string, std::vector<int64_t>> tensor_spec(const ShapeConfig& config);

  const ShapeConfig& config() const;
  int num_tokens() const;  // N
  int num_codes() const;

  // Normalized codebook C (§2.3): RMSNorm_1e-5(codebook ⊙ cb_weight + cb_bias) ⊙ norm.weight, [num_codes, embed_dim].
  std::vector<float> codebook() const;

  // §8.1-8.2: ids (exactly N, each in [0, num_codes)) → latents [N, width]. Throws Error on bad ids, Cancelled.
  Latents decode_tokens(const std::vector<int>& ids, const CancelToken* cancel = nullptr) const;

  // Live preview: the first k (1 <= k <= N) tokens → latents, by `fill` (k == N gives decode_tokens exactly).
  Latents decode_preview(const std::vector<int>& prefix, PreviewFill fill = PreviewFill::MeanCode,
                         const CancelToken* cancel = nullptr) const;

  // §8.4: the occupancy decoder for one shape.
  std::unique_ptr<OccupancyDecoder> occupancy(const Latents& latents) const;

  // §9 steps 3-5: surface points (already normalized as in §9 step 1) and their unit normals → N token ids
  // (fp32 encoder, argmin of the Euclidean distance to the normalized codes; ties → lowest id).
  std::vector<int> encode(const std::vector<Vec3>& points, const std::vector<Vec3>& normals,
                          const CancelToken* cancel = nullptr) const;
  // The encoder's continuous output before VQ, z = RMSNorm(c_in(h)), [N, embed_dim] (for diagnostics / tests).
  std::vector<float> encode_continuous(const std::vector<Vec3>& points, const std::vector<Vec3>& normals,
                                       const CancelToken* cancel = nullptr) const;

  size_t parameter_count() const;

 private:
  ShapeModel() = default;
  std::shared_ptr<const ShapeWeights> w_;
};

// One line of the golden check: tensor name, relative L2 error ‖out − ref‖/‖ref‖ (for encoder_indices: the
// fraction of mismatching ids), tolerance and verdict, plus a short note (e.g. "3/16 ids differ").
struct ShapeGoldenLine {
  std::string tensor;
  double rel_err = 0;
  double tolerance = 0;
  bool ok = false;
  std::string note;
};

// Runs the shape stage on DIR/NAME_{config.json,shape.safetensors,io.safetensors} and compares latents,
// query_logits, grid_res4_logits (dense grid through grid.h) and encoder_indices. Throws Error on unreadable files.
std::vector<ShapeGoldenLine> check_shape_golden(const std::string& dir, const std::string& name,
                                                double tolerance = 1e-4);

}  // namespace cubeforge
