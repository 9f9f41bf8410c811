// Mesh: point clouds and triangle meshes (TensorBoard's mesh plugin), a
// card per (tag, run) with a step slider. Drawn on a 2D canvas: the
// vertices rotated by the camera, projected in perspective, triangles
// painted far to near with flat shading, points as small squares; each
// in its vertex colours (a triangle in its vertices' mean) when the
// summary has colours. Drag to turn, wheel to zoom, double-click resets.

import { getBuffer, getJSON } from "../api";
import { h } from "../dom";
import { notice, rangeSlider, runTagDashboard, stepSlider, type Dashboard, type DashboardContext } from "./dashboard";

/** One component of a mesh at one step, as mesh/meshes lists it. */
interface MeshEntry {
  wall_time: number;
  step: number;
  /** 1 vertices, 2 faces, 3 colours. */
  content_type: number;
  data_shape: number[];
}

export interface MeshData {
  /** x, y, z per vertex. */
  vertices: Float32Array;
  /** Three vertex indices per triangle; empty for a point cloud. */
  faces: Int32Array;
  /** r, g, b (0–255) per vertex; empty without colours. */
  colors: Uint8Array;
}

const CONTENT = { 1: "VERTEX", 2: "FACE", 3: "COLOR" } as const;

interface Camera {
  yaw: number;
  pitch: number;
  zoom: number;
}
const HOME: Camera = { yaw: 0.6, pitch: 0.35, zoom: 1 };

/**
 * Projects the mesh's vertices for cam into a width × height canvas:
 * screen x, y and depth (larger is farther) per vertex, and the vertices
 * turned to the camera (cx, cy, cz: centred, not projected).
 */
export function project(vertices: Float32Array, cam: Camera, width: number, height: number) {
  const n = Math.floor(vertices.length / 3);
  let cx = 0, cy = 0, cz = 0;
  for (let i = 0; i < n; i++) {
    cx += vertices[3 * i];
    cy += vertices[3 * i + 1];
    cz += vertices[3 * i + 2];
  }
  cx /= n || 1;
  cy /= n || 1;
  cz /= n || 1;
  let r = 0;
  for (let i = 0; i < n; i++) {
    r = Math.max(r, Math.hypot(vertices[3 * i] - cx, vertices[3 * i + 1] - cy, vertices[3 * i + 2] - cz));
  }
  r ||= 1;
  const [sy, cyaw, sp, cp] = [Math.sin(cam.yaw), Math.cos(cam.yaw), Math.sin(cam.pitch), Math.cos(cam.pitch)];
  const dist = 3 * r;
  const f = (Math.min(width, height) / 2) * 2.4 * cam.zoom;
  const x = new Float32Array(n), y = new Float32Array(n), z = new Float32Array(n);
  const rx = new Float32Array(n), ry = new Float32Array(n), rz = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const px = vertices[3 * i] - cx, py = vertices[3 * i + 1] - cy, pz = vertices[3 * i + 2] - cz;
    // Turn about the vertical axis, then tilt about the horizontal one.
    const x1 = cyaw * px + sy * pz, z1 = -sy * px + cyaw * pz;
    const y2 = cp * py - sp * z1, z2 = sp * py + cp * z1;
    const d = dist - z2; // the camera is on the +z side, looking towards -z (as three.js places it)
    x[i] = width / 2 + (f * x1) / d;
    y[i] = height / 2 - (f * y2) / d;
    z[i] = d;
    [rx[i], ry[i], rz[i]] = [x1, y2, z2];
  }
  return { x, y, z, rx, ry, rz };
}

/** Draws mesh on canvas for cam (canvas sized in device pixels). */
export function drawMesh(canvas: HTMLCanvasElement, mesh: MeshData, cam: Camera) {
  const g = canvas.getContext("2d")!;
  const { width, height } = canvas;
  g.clearRect(0, 0, width, height);
  const n = Math.floor(mesh.vertices.length / 3);
  if (!n) return;
  const p = project(mesh.vertices, cam, width, height);
  const hasColor = mesh.colors.length >= 3 * n;
  const color = (i: number) => (hasColor ? [mesh.colors[3 * i], mesh.colors[3 * i + 1], mesh.colors[3 * i + 2]] : [90, 130, 200]);
  const nf = Math.floor(mesh.faces.length / 3);
  if (nf) {
    const order = Array.from({ length: nf }, (_, i) => i);
    const depth = new Float32Array(nf);
    for (let t = 0; t < nf; t++) depth[t] = p.z[mesh.faces[3 * t]] + p.z[mesh.faces[3 * t + 1]] + p.z[mesh.faces[3 * t + 2]];
    order.sort((a, b) => depth[b] - depth[a]); // far first
    for (const t of order) {
      const [a, b, c] = [mesh.faces[3 * t], mesh.faces[3 * t + 1], mesh.faces[3 * t + 2]];
      if (a >= n || b >= n || c >= n || a < 0 || b < 0 || c < 0) continue;
      // Flat shading: brighter the more squarely the triangle faces the viewer.
      const ux = p.rx[b] - p.rx[a], uy = p.ry[b] - p.ry[a], uz = p.rz[b] - p.rz[a];
      const vx = p.rx[c] - p.rx[a], vy = p.ry[c] - p.ry[a], vz = p.rz[c] - p.rz[a];
      const nx = uy * vz - uz * vy, ny = uz * vx - ux * vz, nz = ux * vy - uy * vx;
      const len = Math.hypot(nx, ny, nz);
      const shade = 0.45 + 0.55 * (len ? Math.abs(nz) / len : 1);
      const [ca, cb, cc] = [color(a), color(b), color(c)];
      const rgb = [0, 1, 2].map((k) => Math.round(((ca[k] + cb[k] + cc[k]) / 3) * shade));
      g.fillStyle = g.strokeStyle = `rgb(${rgb[0]},${rgb[1]},${rgb[2]})`;
      g.beginPath();
      g.moveTo(p.x[a], p.y[a]);
      g.lineTo(p.x[b], p.y[b]);
      g.lineTo(p.x[c], p.y[c]);
      g.closePath();
      g.fill();
      g.stroke(); // closes hairline gaps between neighbours
    }
    return;
  }
  const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => p.z[b] - p.z[a]);
  const size = Math.max(2, Math.round(3 * (window.devicePixelRatio || 1)));
  for (const i of order) {
    const [r, gg, b] = color(i);
    g.fillStyle = `rgb(${r},${gg},${b})`;
    g.fillRect(p.x[i] - size / 2, p.y[i] - size / 2, size, size);
  }
}

async function fillMesh(ctx: DashboardContext, body: HTMLElement, run: string, tag: string, samples: number | undefined) {
  const entries = await getJSON<MeshEntry[]>(ctx.api.plugin("mesh", "meshes", { run, tag }));
  const steps = [...new Set(entries.map((e) => e.step))].sort((a, b) => a - b);
  if (!steps.length || !entries.some((e) => e.content_type === 1)) {
    body.appendChild(notice("No vertices."));
    return;
  }
  const canvas = h("canvas.mesh-canvas", { "aria-label": `mesh ${tag}`, title: "Drag to turn, wheel to zoom, double-click to reset" });
  const info = h("div.mesh-info");
  let cam = { ...HOME };
  let mesh: MeshData | null = null;
  let stepIndex = steps.length - 1;
  let sample = 0;
  let shown = 0;
  const draw = () => {
    if (!mesh) return;
    const dpr = window.devicePixelRatio || 1;
    const w = Math.max(canvas.clientWidth, 100);
    canvas.width = Math.round(w * dpr);
    canvas.height = Math.round(w * 0.75 * dpr);
    drawMesh(canvas, mesh, cam);
  };
  const load = async () => {
    const mine = ++shown;
    const step = steps[stepIndex];
    const has = new Set(entries.filter((e) => e.step === step).map((e) => e.content_type));
    const part = (ct: 1 | 2 | 3) =>
      has.has(ct) ? getBuffer(ctx.api.plugin("mesh", "data", { run, tag, step, sample, content_type: CONTENT[ct] })) : Promise.resolve(new ArrayBuffer(0));
    const [v, f, c] = await Promise.all([part(1), part(2), part(3)]);
    if (mine !== shown) return;
    mesh = { vertices: new Float32Array(v), faces: new Int32Array(f), colors: new Uint8Array(c) };
    const nv = mesh.vertices.length / 3, nf = mesh.faces.length / 3;
    canvas.dataset.vertices = String(nv);
    canvas.dataset.faces = String(nf);
    info.textContent = nf ? `${nv} vertices, ${nf} triangles` : `${nv} points`;
    draw();
  };
  // Turning: a drag across the canvas's width is about half a turn.
  let drag: { x: number; y: number; cam: Camera } | null = null;
  canvas.addEventListener("pointerdown", (e) => {
    drag = { x: e.clientX, y: e.clientY, cam: { ...cam } };
    canvas.setPointerCapture(e.pointerId);
  });
  canvas.addEventListener("pointermove", (e) => {
    if (!drag) return;
    const k = Math.PI / Math.max(canvas.clientWidth, 1);
    cam = { ...drag.cam, yaw: drag.cam.yaw + (e.clientX - drag.x) * k, pitch: Math.max(-1.55, Math.min(1.55, drag.cam.pitch + (e.clientY - drag.y) * k)) };
    draw();
  });
  canvas.addEventListener("pointerup", () => (drag = null));
  canvas.addEventListener("pointercancel", () => (drag = null));
  canvas.addEventListener(
    "wheel",
    (e) => {
      e.preventDefault();
      cam = { ...cam, zoom: Math.max(0.1, Math.min(20, cam.zoom * Math.exp(-e.deltaY / 500))) };
      draw();
    },
    { passive: false },
  );
  canvas.addEventListener("dblclick", () => {
    cam = { ...HOME };
    draw();
  });
  body.append(
    canvas,
    info,
    stepSlider(steps, (i) => {
      stepIndex = i;
      void load();
    }, stepIndex),
  );
  const n = samples ?? 1;
  if (n > 1) {
    body.appendChild(rangeSlider(n, "sample", (k) => `sample ${k + 1} of ${n}`, (k) => {
      sample = k;
      void load();
    }));
  }
  await load();
}

export function meshDashboard(el: HTMLElement, ctx: DashboardContext): Dashboard {
  return runTagDashboard(el, ctx, {
    cardClass: "mesh-card",
    tags: () => getJSON(ctx.api.plugin("mesh", "tags")),
    fill: (body, run, tag, info) => fillMesh(ctx, body, run, tag, info.samples),
    empty: "No mesh data for the shown runs and tags.",
  });
}
