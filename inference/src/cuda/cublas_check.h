// CF_CUBLAS(call): a cuBLAS status other than success becomes a cubeforge::Error naming the call (CUDA engines).
#pragma once
#include <cublas_v2.h>

#include <string>

#include "cubeforge/error.h"

#define CF_CUBLAS(call)                                                                                   \
  do {                                                                                                    \
    cublasStatus_t cf_st_ = (call);                                                                       \
    if (cf_st_ != CUBLAS_STATUS_SUCCESS)                                                                  \
      throw cubeforge::Error(std::string("cuBLAS error in ") + #call + ": " + cublasGetStatusString(cf_st_)); \
  } while (0)
