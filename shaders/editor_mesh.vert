// Editor viewport: lit mesh vertex shader (position, normal, per-vertex colour); u_offset shifts the result in
// normalised device coordinates (the selection outline's passes).
#version 330 core
layout(location = 0) in vec3 a_pos;
layout(location = 1) in vec3 a_normal;
layout(location = 2) in vec3 a_color;
uniform mat4 u_model;
uniform mat4 u_viewproj;
uniform mat3 u_normal_mat;
uniform vec2 u_offset;
out vec3 v_normal;
out vec3 v_color;
void main() {
  gl_Position = u_viewproj * u_model * vec4(a_pos, 1.0);
  gl_Position.xy += u_offset * gl_Position.w;
  v_normal = u_normal_mat * a_normal;
  v_color = a_color;
}
