// Analytic fields on the reference grid (positive inside, value = signed distance in world units, or a lower
// bound of it outside): stand-ins for the neural occupancy decoder in tests, benchmarks and demos without weights.
#pragma once
#include "cubeforge/grid.h"
#include "cubeforge/mesh.h"

namespace cubeforge {

FieldFn sphere_field(float radius, Vec3 centre = {0, 0, 0});
FieldFn torus_field(float major_radius, float minor_radius);  // around the y axis, centred at the origin
FieldFn box_field(float half_x, float half_y, float half_z);    // axis-aligned, centred at the origin
// Pointwise max (union) / min (intersection) of two fields.
FieldFn union_field(FieldFn a, FieldFn b);
FieldFn intersection_field(FieldFn a, FieldFn b);

}  // namespace cubeforge
