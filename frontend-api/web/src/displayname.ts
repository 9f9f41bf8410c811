// The name a user shows others. Until they choose a display name the
// server shows their handle: "user-" and the start of their user ID, never
// their email. A chosen name may not start with "user-" (the server refuses
// it), so a name that does is the handle.

const HANDLE_PREFIX = "user-";

/** Whether name (WhoAmI's displayName) is the handle, not a chosen name. */
export function isHandle(name: string): boolean {
  return name.startsWith(HANDLE_PREFIX);
}

/**
 * What the display name field shows for the caller's current name: a chosen
 * name as its value; the handle only as the placeholder, so that saving an
 * untouched field keeps the handle.
 */
export function displayNameField(current: string): { value: string; placeholder: string } {
  return isHandle(current) ? { value: "", placeholder: current } : { value: current, placeholder: "" };
}

/** What the caller is told others see, after loading or saving name. */
export function seenAs(name: string): string {
  return isHandle(name) ? `Others see you as “${name}” until you choose a display name.` : `Others see you as “${name}”.`;
}
