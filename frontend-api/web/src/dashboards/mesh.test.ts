import { describe, expect, it, vi } from "vitest";
import { drawMesh, project } from "./mesh";

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

/** A canvas whose 2D context records the squares and triangles drawn, in order. */
function recordingCanvas(width: number, height: number) {
  const drawn: { kind: "rect" | "path"; fill: string; x: number; y: number }[] = [];
  const g = {
    fillStyle: "",
    strokeStyle: "",
    clearRect: () => {},
    fillRect: (x: number, y: number) => drawn.push({ kind: "rect", fill: g.fillStyle, x, y }),
    beginPath: () => {},
    moveTo: (x: number, y: number) => drawn.push({ kind: "path", fill: g.fillStyle, x, y }),
    lineTo: () => {},
    closePath: () => {},
    fill: () => {},
    stroke: () => {},
  };
  const canvas = { width, height, getContext: () => g } as unknown as HTMLCanvasElement;
  return { canvas, drawn };
}

describe("drawMesh", () => {
  vi.stubGlobal("window", { devicePixelRatio: 1 });
  it("draws a point cloud as a square per point in its colour, far points first", () => {
    const { canvas, drawn } = recordingCanvas(200, 200);
    const vertices = new Float32Array([0, 0, -1, 0, 0, 1, 1, 0, 0]);
    const colors = new Uint8Array([255, 0, 0, 0, 255, 0, 0, 0, 255]);
    drawMesh(canvas, { vertices, faces: new Int32Array(0), colors }, { yaw: 0, pitch: 0, zoom: 1 });
    expect(drawn.every((d) => d.kind === "rect")).toBe(true);
    expect(drawn.map((d) => d.fill)).toEqual(["rgb(255,0,0)", "rgb(0,0,255)", "rgb(0,255,0)"]);
  });
  it("draws a point cloud without colours in one default colour", () => {
    const { canvas, drawn } = recordingCanvas(200, 200);
    drawMesh(canvas, { vertices: new Float32Array([0, 0, 0, 1, 1, 1]), faces: new Int32Array(0), colors: new Uint8Array(0) }, { yaw: 0, pitch: 0, zoom: 1 });
    expect(drawn).toHaveLength(2);
    expect(new Set(drawn.map((d) => d.fill)).size).toBe(1);
  });
  it("paints triangles in their vertices' mean colour, shaded, and skips faces naming missing vertices", () => {
    const { canvas, drawn } = recordingCanvas(200, 200);
    const vertices = new Float32Array([0, 0, 0, 1, 0, 0, 0, 1, 0]);
    const colors = new Uint8Array([255, 0, 0, 255, 0, 0, 255, 0, 0]);
    drawMesh(canvas, { vertices, faces: new Int32Array([0, 1, 2, 0, 1, 7]), colors }, { yaw: 0, pitch: 0, zoom: 1 });
    expect(drawn).toHaveLength(1);
    expect(drawn[0]).toMatchObject({ kind: "path", fill: "rgb(255,0,0)" }); // facing the camera: full brightness
  });
});
