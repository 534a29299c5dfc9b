/**
 * The attention kernels' parameters and bindings as WGSL text. The row kernels (attention.ts) and
 * the tiled kernels (attention_tiled.ts) declare them from here, so one `Attention` binds either
 * kind with the same buffers in the same slots.
 *
 * @module
 */

/** Parameters of every attention pass, at binding 0. */
export const ATTENTION_PARAMS = `struct Params { b: u32, t: u32, h: u32, kvh: u32, scale: f32 }
@group(0) @binding(0) var<uniform> p: Params;`;

/** The `documents` binding (u32 `[B, T, 2]`) of a packed kernel, at index `at`; none otherwise. */
function documentsBinding(packed: boolean, at: number): string {
  return packed ? `\n@group(0) @binding(${at}) var<storage, read> documents: array<u32>;` : "";
}

/** Parameters and bindings 1-6 (q, k, v, lse, dout, delta) shared by backward passes 2 and 3. */
const BACKWARD_INPUTS = `${ATTENTION_PARAMS}
@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> k: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> v: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> lse: array<f32>;
@group(0) @binding(5) var<storage, read> dout: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read> delta: array<f32>;`;

/** Forward: q, k, v read; out, lse written; then documents when packed. */
export function forwardBindings(packed: boolean): string {
  return `${ATTENTION_PARAMS}
@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> k: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> v: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> out: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> lse: array<f32>;${documentsBinding(packed, 6)}`;
}

/** Backward dQ: the backward inputs, dq written, then documents when packed. */
export function dqBindings(packed: boolean): string {
  return `${BACKWARD_INPUTS}
@group(0) @binding(7) var<storage, read_write> dq: array<vec4<f32>>;${documentsBinding(packed, 8)}`;
}

/** Backward dK/dV: the backward inputs, dk and dv written, then documents when packed. */
export function dkvBindings(packed: boolean): string {
  return `${BACKWARD_INPUTS}
@group(0) @binding(7) var<storage, read_write> dk: array<vec4<f32>>;
@group(0) @binding(8) var<storage, read_write> dv: array<vec4<f32>>;${documentsBinding(packed, 9)}`;
}
