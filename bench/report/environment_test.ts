import assert from "node:assert/strict";
import {
  describeEnvironment,
  dpkgVersion,
  mesaVersion,
  parseCpuinfo,
  parseOsRelease,
  type RawEnvironment,
} from "./environment.ts";

const CPUINFO = [
  "processor\t: 0",
  "vendor_id\t: AuthenticAMD",
  "model name\t: AMD EPYC 7B13",
  "flags\t\t: fpu vme avx2",
  "",
  "processor\t: 1",
  "vendor_id\t: AuthenticAMD",
  "model name\t: AMD EPYC 7B13",
  "",
].join("\n");

const DPKG = [
  "Package: libvulkan1",
  "Status: install ok installed",
  "Version: 1.3.239.0-1",
  "",
  "Package: mesa-vulkan-drivers",
  "Status: install ok installed",
  "Priority: optional",
  "Version: 22.3.6-1+deb12u1",
  "Description: Mesa Vulkan graphics drivers",
  "",
].join("\n");

const LAVAPIPE = {
  vendor: "65541",
  architecture: "",
  device: "0",
  description: "llvmpipe (LLVM 15.0.6, 256 bits)",
};

Deno.test("parseCpuinfo: the model name and one core per processor line", () => {
  assert.deepEqual(parseCpuinfo(CPUINFO), { model: "AMD EPYC 7B13", cores: 2 });
  assert.deepEqual(parseCpuinfo("processor : 0\nHardware : BCM2835\n"), {
    model: "BCM2835",
    cores: 1,
  });
  assert.deepEqual(parseCpuinfo("processor : 0\n"), { model: "unknown", cores: 1 });
  assert.equal(parseCpuinfo(""), null);
});

Deno.test("parseOsRelease: PRETTY_NAME, else NAME and VERSION_ID", () => {
  assert.equal(
    parseOsRelease('NAME="Debian GNU/Linux"\nPRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n'),
    "Debian GNU/Linux 12 (bookworm)",
  );
  assert.equal(parseOsRelease('NAME="Alpine Linux"\nVERSION_ID=3.19.1\n'), "Alpine Linux 3.19.1");
  assert.equal(parseOsRelease("# nothing\n"), null);
});

Deno.test("dpkgVersion: only an installed package's version", () => {
  assert.equal(dpkgVersion(DPKG, "mesa-vulkan-drivers"), "22.3.6-1+deb12u1");
  assert.equal(dpkgVersion(DPKG, "mesa"), null);
  const removed = DPKG.replace(
    "Package: mesa-vulkan-drivers\nStatus: install ok installed",
    "Package: mesa-vulkan-drivers\nStatus: deinstall ok config-files",
  );
  assert.equal(dpkgVersion(removed, "mesa-vulkan-drivers"), null);
});

Deno.test("mesaVersion: from the adapter's description first, else dpkg's upstream version", () => {
  assert.equal(mesaVersion(LAVAPIPE, DPKG), "22.3.6");
  assert.equal(
    mesaVersion({ ...LAVAPIPE, description: "AMD Radeon (Mesa 24.0.5-1ubuntu1)" }, DPKG),
    "24.0.5-1ubuntu1",
  );
  assert.equal(
    mesaVersion(
      null,
      "Package: libgl1-mesa-dri\nStatus: install ok installed\nVersion: 1:23.2.1-1\n",
    ),
    "23.2.1",
  );
  assert.equal(mesaVersion(LAVAPIPE, null), null);
});

Deno.test("describeEnvironment: cpuinfo over the runtime's CPU, OS with kernel, dates in UTC", () => {
  const raw: RawEnvironment = {
    cpuinfo: CPUINFO,
    fallbackCpu: { model: "from os.cpus", cores: 8 },
    memoryBytes: 24 * 2 ** 30,
    osRelease: 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n',
    os: { name: "linux", arch: "x86_64", kernel: "6.1.0-18-amd64" },
    deno: { deno: "2.9.6", v8: "15.0.245.2-rusty", typescript: "6.0.3" },
    adapter: LAVAPIPE,
    dpkgStatus: DPKG,
    loadBefore: [1.5, 2, 3.25],
    loadAfter: [2.5, 2.25, 3.5],
    startedAt: new Date(Date.UTC(2026, 10, 26, 0, 55, 7)),
    endedAt: new Date(Date.UTC(2026, 10, 26, 0, 55, 52)),
  };
  assert.deepEqual(describeEnvironment(raw), {
    cpu: { model: "AMD EPYC 7B13", cores: 2 },
    arch: "x86_64",
    memoryBytes: 24 * 2 ** 30,
    os: "Debian GNU/Linux 12 (bookworm), Linux 6.1.0-18-amd64",
    deno: raw.deno,
    adapter: LAVAPIPE,
    mesa: "22.3.6",
    loadBefore: [1.5, 2, 3.25],
    loadAfter: [2.5, 2.25, 3.5],
    startedAt: "2026-11-26T00:55:07.000Z",
    endedAt: "2026-11-26T00:55:52.000Z",
  });
  const bare = describeEnvironment({ ...raw, cpuinfo: null, osRelease: null, dpkgStatus: null });
  assert.deepEqual(bare.cpu, { model: "from os.cpus", cores: 8 });
  assert.equal(bare.os, "Linux 6.1.0-18-amd64");
  assert.equal(bare.mesa, null);
});
