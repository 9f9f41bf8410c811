// How images are looked at: the brightness and contrast applied to every
// image (a Keras weight image is nearly black as stored), and where the
// lightbox's keys move. Pure functions; images.ts draws them.

/** Slider ranges: 1 is the image as stored. */
export const BRIGHTNESS = { min: 0, max: 5, step: 0.05 };
export const CONTRAST = { min: 0, max: 5, step: 0.05 };

/** The CSS filter for a brightness and contrast ("" when both are 1: nothing is applied). */
export function imageFilter(brightness: number, contrast: number): string {
  if (brightness === 1 && contrast === 1) return "";
  return `brightness(${brightness}) contrast(${contrast})`;
}

/** A brightness or contrast from the URL: a finite number in [min, max], else 1. */
export function parseLevel(v: string | null, range: { min: number; max: number } = BRIGHTNESS): number {
  if (v === null || v === "") return 1;
  const n = Number(v);
  return Number.isFinite(n) ? Math.min(Math.max(n, range.min), range.max) : 1;
}

/** Where the lightbox is: the index of the step shown in its list, and the sample. */
export interface LightboxPos {
  index: number;
  sample: number;
}

/**
 * Where key moves the lightbox in a card of steps steps and samples samples:
 * ←/→ the previous/next step, ↑/↓ the previous/next image of the step,
 * Home/End the first/last step. null: the key does not move it (an end
 * reached, or another key).
 */
export function lightboxMove(pos: LightboxPos, key: string, steps: number, samples: number): LightboxPos | null {
  const at = (index: number, sample: number) =>
    index >= 0 && index < steps && sample >= 0 && sample < samples && (index !== pos.index || sample !== pos.sample) ? { index, sample } : null;
  switch (key) {
    case "ArrowRight":
      return at(pos.index + 1, pos.sample);
    case "ArrowLeft":
      return at(pos.index - 1, pos.sample);
    case "ArrowDown":
      return at(pos.index, pos.sample + 1);
    case "ArrowUp":
      return at(pos.index, pos.sample - 1);
    case "Home":
      return at(0, pos.sample);
    case "End":
      return at(steps - 1, pos.sample);
  }
  return null;
}

/** The lightbox's caption: what is shown, so a screenshot of it says where it came from. */
export function lightboxCaption(run: string, tag: string, step: number, sample: number, samples: number): string {
  const parts = [run, tag, `step ${step}`];
  if (samples > 1) parts.push(`image ${sample + 1} of ${samples}`);
  return parts.join(" · ");
}
