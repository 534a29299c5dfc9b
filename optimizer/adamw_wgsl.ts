/**
 * WGSL source of the AdamW kernel (see adamw.ts for the maths and bindings).
 *
 * @module
 */

/** The AdamW update kernel: one invocation per vec4 of parameters. */
export function adamwKernel(workgroupSize: number): string {
  return /* wgsl */ `
struct Dims { n4: u32, _p0: u32, _p1: u32, _p2: u32 };
struct Hyper {
  lr: f32, beta1: f32, beta2: f32, eps: f32,
  weight_decay: f32, bias1: f32, bias2: f32, max_norm: f32,
};
@group(0) @binding(0) var<uniform> dims: Dims;
@group(0) @binding(1) var<storage, read> hyper: Hyper;
@group(0) @binding(2) var<storage, read> grad_sumsq: array<f32>;
@group(0) @binding(3) var<storage, read_write> params: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> grads: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> m: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> v: array<vec4<f32>>;

@compute @workgroup_size(${workgroupSize})
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  let i = gid.x + gid.y * nwg.x * ${workgroupSize}u;
  if (i >= dims.n4) { return; }
  var scale = 1.0;
  if (hyper.max_norm > 0.0) {
    scale = min(1.0, hyper.max_norm / (sqrt(grad_sumsq[0]) + 1e-6));
  }
  let g = grads[i] * scale;
  let mi = hyper.beta1 * m[i] + (1.0 - hyper.beta1) * g;
  let vi = hyper.beta2 * v[i] + (1.0 - hyper.beta2) * g * g;
  m[i] = mi;
  v[i] = vi;
  let p = params[i] * (1.0 - hyper.lr * hyper.weight_decay);
  let denom = sqrt(vi) / sqrt(hyper.bias2) + vec4<f32>(hyper.eps);
  params[i] = p - (hyper.lr / hyper.bias1) * mi / denom;
}
`;
}
