// Error type of the inference library: every failure a user can cause (bad file, bad request, bad config)
// is reported as cubeforge::Error with a message that names the file/tensor/field at fault.
#pragma once
#include <stdexcept>
#include <string>

namespace cubeforge {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Thrown by long operations when their CancelToken is set.
class Cancelled : public Error {
 public:
  Cancelled() : Error("cancelled") {}
};

}  // namespace cubeforge
