/**
 * Subgroups are optional: GpuRuntime asks for them and records whether it got them, a refusal
 * never costs the device, and the probe (the one kernel that needs them) refuses by name without.
 */
import assert from "node:assert/strict";
import { GpuRuntime, requestDeviceWith } from "./gpu.ts";
import { probeSubgroups } from "./subgroups.ts";

/** A stand-in adapter that records each request's features and refuses those with `refuse`. */
function fakeAdapter(refuse: (features: string[]) => boolean) {
  const asked: string[][] = [];
  const adapter = {
    requestDevice(d?: GPUDeviceDescriptor): Promise<GPUDevice> {
      const features = [...(d?.requiredFeatures ?? [])];
      asked.push(features);
      if (refuse(features)) return Promise.reject(new TypeError(`refused ${features}`));
      return Promise.resolve({ label: d?.label ?? "" } as GPUDevice);
    },
  };
  return { adapter, asked };
}

Deno.test("an optional feature the adapter refuses is dropped, the rest of the request kept", async () => {
  const refusing = fakeAdapter((f) => f.includes("subgroups"));
  const device = await requestDeviceWith(
    refusing.adapter,
    { label: "x", requiredFeatures: ["shader-f16"] },
    ["subgroups"],
  );
  assert.equal(device.label, "x");
  assert.deepEqual(refusing.asked, [["shader-f16", "subgroups"], ["shader-f16"]]);
  // Granted: one request. None optional, or already required: one request, as given.
  const granting = fakeAdapter(() => false);
  await requestDeviceWith(granting.adapter, {}, ["subgroups"]);
  await requestDeviceWith(granting.adapter, { requiredFeatures: ["subgroups"] }, ["subgroups"]);
  await requestDeviceWith(granting.adapter, {}, []);
  assert.deepEqual(granting.asked, [["subgroups"], ["subgroups"], []]);
  // A refusal of the plain request still fails, with the adapter's error.
  const none = fakeAdapter(() => true);
  await assert.rejects(requestDeviceWith(none.adapter, {}, ["subgroups"]), /refused $/);
  assert.deepEqual(none.asked, [["subgroups"], []]);
});

Deno.test("the runtime records whether it got subgroups; the probe needs them and says so", async () => {
  {
    using rt = await GpuRuntime.create();
    assert.equal(rt.hasSubgroups, rt.device.features.has("subgroups"));
    if (rt.hasSubgroups) {
      // lavapipe (Deno 2.9.6) grants them; its subgroups are 8 wide on a 256-bit llvmpipe.
      const probe = await probeSubgroups(rt);
      assert.ok(probe.sizes.length >= 1, JSON.stringify(probe));
      for (const size of probe.sizes) {
        assert.ok(size >= 1 && size <= 128 && (size & (size - 1)) === 0, `size ${size}`);
      }
      assert.ok(probe.addMatchesSize, JSON.stringify(probe));
    } else {
      await assert.rejects(probeSubgroups(rt), /needs the "subgroups" feature/);
    }
  }
  using off = await GpuRuntime.create({ subgroups: false });
  assert.equal(off.hasSubgroups, false);
  await assert.rejects(probeSubgroups(off), (e: Error) => {
    const adapter = `which adapter "${off.info.description}" did not grant`;
    return e instanceof RangeError && e.message.includes(adapter);
  });
});
