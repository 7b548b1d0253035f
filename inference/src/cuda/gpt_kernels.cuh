// Kernels of the CUDA GPT engine (decode step and cond-stream prefill), one header per concern. See docs/cuda-gpt.md
// for the design. Widths are fixed to the Cube 3D GPT (D 1536, 12 heads of 128, MLP 6144); the engine checks the config.
//   gpt_device.cuh           constants, control blocks, loads, bulk copies, timeline, handoff, token emission, arrivals
//   gpt_gemv.cuh             the decode GEMVs (persistent and one-round) and their epilogues, lm_head tail included
//   gpt_attention.cuh        decode attention
//   gpt_mlp.cuh              the fused decode MLP (LN + gate/up + SwiGLU + down-proj split along the hidden units)
//   gpt_lmhead.cuh           the decode lm_head streamed through a shared-memory ring (<= 8 rows)
//   gpt_topp.cuh             top-p sampling
//   gpt_prefill_kernels.cuh  step-0 init, load-time conversion, cond-stream prefill kernels
#pragma once
#include "gpt_attention.cuh"
#include "gpt_device.cuh"
#include "gpt_gemv.cuh"
#include "gpt_lmhead.cuh"
#include "gpt_mlp.cuh"
#include "gpt_prefill_kernels.cuh"
#include "gpt_topp.cuh"
