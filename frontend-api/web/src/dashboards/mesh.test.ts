import { describe, expect, it } from "vitest";
import { project } from "./mesh";

describe("project", () => {
  const v = new Float32Array([-1, 0, 0, 1, 0, 0, 0, 1, 0, 0, -1, 0]);
  it("centres the mesh and keeps left left and up up, seen from the front", () => {
    const p = project(v, { yaw: 0, pitch: 0, zoom: 1 }, 200, 100);
    expect(p.x[0]).toBeLessThan(100);
    expect(p.x[1]).toBeGreaterThan(100);
    expect(p.x[0] + p.x[1]).toBeCloseTo(200);
    expect(p.y[2]).toBeLessThan(50); // screen y grows downwards
    expect(p.y[3]).toBeGreaterThan(50);
  });
  it("turns a half turn of yaw into a mirror image, and zoom scales about the centre", () => {
    const front = project(v, { yaw: 0, pitch: 0, zoom: 1 }, 200, 100);
    const back = project(v, { yaw: Math.PI, pitch: 0, zoom: 1 }, 200, 100);
    expect(back.x[0]).toBeCloseTo(front.x[1], 3);
    const near = project(v, { yaw: 0, pitch: 0, zoom: 2 }, 200, 100);
    expect(near.x[1] - 100).toBeCloseTo(2 * (front.x[1] - 100), 3);
  });
  it("looks from +z: a vertex at +z is nearer (smaller depth) and drawn larger apart", () => {
    const p = project(new Float32Array([1, 0, 1, 1, 0, -1, -1, 0, 1, -1, 0, -1]), { yaw: 0, pitch: 0, zoom: 1 }, 100, 100);
    expect(p.z[0]).toBeLessThan(p.z[1]);
    expect(p.x[0] - p.x[2]).toBeGreaterThan(p.x[1] - p.x[3]);
  });
});
