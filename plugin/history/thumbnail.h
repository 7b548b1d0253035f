// History thumbnails, rendered in software (the plugin API has no off-screen GL render target): a z-buffered,
// 2x supersampled, two-sided Lambert rasteriser (vertex colours when the mesh has them) with a fixed three-quarter
// view. Runs on any thread (the worker renders it right after a job), plus PNG read/write through stb.
#pragma once
#include "worker/job.h"

#include <string>

namespace cubeforge::ai {

RgbaImage render_thumbnail(const Mesh& mesh, int size = 96);
void write_png(const RgbaImage& img, const std::string& path);  // atomic (temp + rename); throws Error
RgbaImage read_png(const std::string& path);                    // throws Error

}  // namespace cubeforge::ai
