// Editor viewport: directional + ambient lighting times vertex colour times entity tint; u_mode 1 = flat colour
// (wireframe overlay and selection outline).
#version 330 core
in vec3 v_normal;
in vec3 v_color;
uniform vec4 u_tint;
uniform vec3 u_light_dir;
uniform float u_ambient;
uniform int u_mode;
uniform vec4 u_flat;
out vec4 frag;
void main() {
  if (u_mode == 1) {
    frag = u_flat;
    return;
  }
  vec3 n = normalize(v_normal);
  if (!gl_FrontFacing) n = -n;
  float diffuse = max(dot(n, normalize(u_light_dir)), 0.0);
  vec3 base = v_color * u_tint.rgb;
  frag = vec4(base * (u_ambient + (1.0 - u_ambient) * diffuse), u_tint.a);
}
