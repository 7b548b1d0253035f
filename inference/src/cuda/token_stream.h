// Host side of a CUDA token generation, for engines whose decode step advances a device-side position and writes
// each token into a mapped pinned ring [P][N]: launches step 0, then chunks of K steps (K-step chunks while at
// least K remain, then single steps), records one event per chunk, keeps up to queue_depth chunks in flight, hands
// the tokens of every finished chunk to on_token in order, and checks cancel before every launch. Used by both
// engines (cuda_gpt_engine.cu, gpt_generic.cu); compiled by nvcc only. Also the graph capture helper and the
// prefill / teacher-forcing checks and timing both engines share.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

#include "cubeforge/cuda_gpt.h"
#include "cuda_common.cuh"

namespace cubeforge::cuda::detail {

inline double host_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Captures what enqueue() launches on `stream` (thread-local capture mode) into an instantiated graph, uploaded and
// ready to launch. On an exception the capture is ended and discarded.
inline cudaGraphExec_t capture_graph(cudaStream_t stream, const std::function<void()>& enqueue) {
  CF_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  try {
    enqueue();
  } catch (...) {
    cudaGraph_t g = nullptr;
    cudaStreamEndCapture(stream, &g);
    if (g) cudaGraphDestroy(g);
    cudaGetLastError();
    throw;
  }
  cudaGraph_t g = nullptr;
  CF_CUDA(cudaStreamEndCapture(stream, &g));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t e = cudaGraphInstantiate(&exec, g, 0);
  cudaGraphDestroy(g);
  CF_CUDA(e);
  CF_CUDA(cudaGraphUpload(exec, stream));
  CF_CUDA(cudaStreamSynchronize(stream));
  return exec;
}

// prefill()'s row checks for an engine of max_rows rows: returns the number of prompts/variations P (rows / 2 with
// CFG: cond rows then uncond rows).
inline int prefill_prompts(int rows, bool cfg, int max_rows, int max_prompts) {
  if (rows < 1 || rows > max_rows) throw cubeforge::Error("CUDA GPT prefill: rows must be in [1, max_batch_rows]");
  if (cfg && rows % 2) throw cubeforge::Error("CUDA GPT prefill: with CFG rows must be even (cond then uncond)");
  const int P = cfg ? rows / 2 : rows;
  if (P > max_prompts) throw cubeforge::Error("CUDA GPT prefill: at most 8 prompts/variations");
  return P;
}

// GPU time of what work() enqueues on `stream`, between two events; waits for the stream. On an exception the
// stream is synchronized and the events are destroyed before it propagates.
template <class Work>
float timed_on_stream(cudaStream_t stream, Work&& work) {
  cudaEvent_t e0, e1;
  CF_CUDA(cudaEventCreate(&e0));
  const cudaError_t created = cudaEventCreate(&e1);
  if (created != cudaSuccess) {
    cudaEventDestroy(e0);
    CF_CUDA(created);
  }
  try {
    CF_CUDA(cudaEventRecord(e0, stream));
    work();
    CF_CUDA(cudaEventRecord(e1, stream));
    CF_CUDA(cudaStreamSynchronize(stream));
  } catch (...) {
    cudaStreamSynchronize(stream);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    throw;
  }
  float ms = 0;
  cudaEventElapsedTime(&ms, e0, e1);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return ms;
}

// step_logits()'s preconditions: a prefill with no generate() since (tf_step >= 0), one token per variation, and a
// step left.
inline void check_teacher_forcing(bool prefilled, int tf_step, int N, size_t feed_size, int P) {
  if (!prefilled || tf_step < 0) throw cubeforge::Error("CUDA GPT step_logits: call prefill() first");
  if ((int)feed_size != P) throw cubeforge::Error("CUDA GPT step_logits: one token per variation");
  if (tf_step >= N) throw cubeforge::Error("CUDA GPT step_logits: all N steps done");
}

// launch(first, count) enqueues decode steps first .. first + count - 1 on `stream`. Fills step0_ms, decode_ms and
// chunk_ms of *st. Returns false when cancel was set (the stream is idle then); throws cubeforge::Error on CUDA
// errors (the stream is synchronized first).
inline bool stream_tokens(cudaStream_t stream, int N, int P, const int* host_ring, const GenerateOptions& o,
                          double t_start_ms, int K, const std::function<void(int first, int count)>& launch,
                          GenerateStats* st) {
  struct Chunk {
    cudaEvent_t ev;
    int first, count;
  };
  std::vector<cudaEvent_t> evs;
  std::vector<Chunk> chunks;
  auto record = [&](int first, int count) {
    cudaEvent_t e;
    CF_CUDA(cudaEventCreate(&e));
    evs.push_back(e);
    CF_CUDA(cudaEventRecord(e, stream));
    chunks.push_back({e, first, count});
  };
  size_t delivered = 0;
  double base_s = 0;  // host time of the start marker's record, seconds since t_start_ms
  // A token's time is when its step finished on the device: the chunk's events bound the chunk, and the steps of one
  // graph chunk (equal work) are spread evenly over it. Arrival times would put a whole chunk at one instant (gaps
  // of ~0 then one of K steps), which made per-token statistics useless. Host time if the events cannot be read.
  auto deliver = [&]() {
    const size_t idx = delivered++;
    const Chunk& ch = chunks[idx];
    CF_CUDA(cudaEventSynchronize(ch.ev));
    if (!o.on_token || ch.count == 0) return;
    float end_ms = 0, prev_ms = 0;
    const bool timed = cudaEventElapsedTime(&end_ms, chunks[0].ev, ch.ev) == cudaSuccess &&
                       (idx < 2 || cudaEventElapsedTime(&prev_ms, chunks[0].ev, chunks[idx - 1].ev) == cudaSuccess);
    if (!timed) cudaGetLastError();
    const double arrival = (host_ms() - t_start_ms) / 1000.0;
    const volatile int* ring = host_ring;
    for (int i = ch.first; i < ch.first + ch.count; ++i) {
      const double t = timed ? base_s + (prev_ms + (end_ms - prev_ms) * double(i - ch.first + 1) / ch.count) / 1000.0
                             : arrival;
      for (int p = 0; p < P; ++p) o.on_token(i, p, ring[(size_t)p * N + i], t);
    }
  };
  bool cancelled = false;
  try {
    base_s = (host_ms() - t_start_ms) / 1000.0;
    record(0, 0);  // start marker
    launch(0, 1);  // step 0: BOS
    record(0, 1);
    int next = 1;
    while (next < N) {
      if (o.cancel && o.cancel->load()) {
        cancelled = true;
        break;
      }
      const int cnt = (N - next >= K) ? K : 1;
      launch(next, cnt);
      record(next, cnt);
      next += cnt;
      while (chunks.size() - delivered > (size_t)std::max(1, o.queue_depth)) deliver();
    }
    while (delivered < chunks.size()) deliver();
    CF_CUDA(cudaStreamSynchronize(stream));
    CF_CUDA(cudaGetLastError());
    float ms = 0;
    cudaEventElapsedTime(&ms, chunks[0].ev, chunks[1].ev);
    st->step0_ms = ms;
    cudaEventElapsedTime(&ms, chunks[1].ev, chunks.back().ev);
    st->decode_ms = ms;
    for (size_t i = 2; i < chunks.size(); ++i) {
      cudaEventElapsedTime(&ms, chunks[i - 1].ev, chunks[i].ev);
      st->chunk_ms.push_back(ms / chunks[i].count);
    }
  } catch (...) {
    cudaStreamSynchronize(stream);
    for (auto e : evs) cudaEventDestroy(e);
    throw;
  }
  for (auto e : evs) cudaEventDestroy(e);
  return !cancelled;
}

}  // namespace cubeforge::cuda::detail
