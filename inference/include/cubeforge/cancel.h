// Cooperative cancellation shared by every long operation (generation, occupancy, meshing): the owner sets it,
// the worker polls it at step boundaries and throws cubeforge::Cancelled.
#pragma once
#include <atomic>

#include "cubeforge/error.h"

namespace cubeforge {

class CancelToken {
 public:
  void cancel() { flag_.store(true, std::memory_order_relaxed); }
  void reset() { flag_.store(false, std::memory_order_relaxed); }
  bool cancelled() const { return flag_.load(std::memory_order_relaxed); }
  const std::atomic<bool>* flag() const { return &flag_; }  // for code that polls a plain atomic (CUDA backend)
  void throw_if_cancelled() const {
    if (cancelled()) throw Cancelled();
  }

 private:
  std::atomic<bool> flag_{false};
};

inline void throw_if_cancelled(const CancelToken* t) {
  if (t) t->throw_if_cancelled();
}

}  // namespace cubeforge
