// Token choice after a GPT step (spec §7 steps 2-4): slice to the shape codes, classifier-free guidance with the
// linear schedule γ_i = g·(N−i)/N, then argmax (first index on ties) or seeded nucleus (top-p) sampling.
// Unlike the reference (which hard-codes 0.9), the requested top_p is honoured.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

namespace cubeforge {

// guided[k] = (1+γ)·cond[k] − γ·uncond[k] for k < num_codes (uncond == nullptr: guided = cond).
void guide_logits(const float* cond, const float* uncond, int num_codes, double guidance, int step, int num_steps,
                  float* guided);

int argmax(const float* logits, int n);

// Keeps the longest prefix of tokens (by descending probability) whose cumulative probability stays ≤ top_p
// (at least one), renormalises and samples with a counter-based RNG keyed by (seed, step): reproducible.
// scratch is reused between calls (no allocation once warm).
int sample_top_p(const float* logits, int n, float top_p, uint64_t seed, int step, std::vector<std::pair<float, int>>& scratch);

}  // namespace cubeforge
