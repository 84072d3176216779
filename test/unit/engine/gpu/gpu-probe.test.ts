// The GPU probe's own limit: a child that never answers (a driver call that never returns) is killed by the
// probe's timer with SIGKILL, which no handler can ignore, and the answer says it timed out and after how long.

import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { isSoftwareAdapter, loaderAdapters } from '../../../../src/engine/gpu/gpu-environment.js';
import { probeGpu } from '../../../../src/engine/gpu/gpu-probe.js';

const HUNG = path.join(import.meta.dirname, '../../../fixtures/hung-probe.mjs');

describe('probeGpu', () => {
  it('kills a probe that ignores SIGTERM once its limit passes, and says it timed out after that long', async () => {
    // Resolving at all shows the child ended: the answer is given when the child's streams close. 3 s lets the child
    // install its SIGTERM handler first (with SIGTERM as the timer's signal, this test never ends).
    const probe = await probeGpu('allowed', { entry: HUNG, limitMs: 3000 });
    expect(probe).toEqual({
      ok: false,
      error: 'the probe timed out after 3 s (killed: a driver call that never returned)',
      adapters: [],
      software: false,
      log: [],
    });
  });
});

describe('software adapters, by the name their driver reports', () => {
  it("reads the Vulkan loader's sorted list of adapters", () => {
    const said = [
      'INFO | DRIVER:    linux_read_sorted_physical_devices:',
      'INFO | DRIVER:         Original order:',
      'INFO | DRIVER:               [0] llvmpipe (LLVM 15.0.6, 256 bits)',
      'INFO | DRIVER:         Sorted order:',
      'INFO | DRIVER:               [0] NVIDIA H100 80GB HBM3',
      'INFO | DRIVER:               [1] llvmpipe (LLVM 15.0.6, 256 bits)  ',
      'DRIVER:           Searching for driver manifest files',
    ];
    expect(loaderAdapters(said)).toEqual(['NVIDIA H100 80GB HBM3', 'llvmpipe (LLVM 15.0.6, 256 bits)']);
  });

  it('knows lavapipe, SwiftShader and WARP, and no hardware adapter', () => {
    for (const name of [
      'llvmpipe (LLVM 15.0.6, 256 bits)',
      'SwiftShader Device (Subzero)',
      'Microsoft Basic Render Driver',
    ])
      expect(isSoftwareAdapter(name), name).toBe(true);
    for (const name of ['NVIDIA H100 80GB HBM3', 'AMD Radeon RX 7900 XTX (RADV NAVI31)', 'Intel(R) Arc(tm) A770'])
      expect(isSoftwareAdapter(name), name).toBe(false);
  });
});
