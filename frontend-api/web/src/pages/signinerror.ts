// Why a sign-in failed, as the server's redirect to /signin?error=CODE
// says it (frontend-api/session, signInError). Anyone can write a link
// to /signin with any error=, so the page shows only these fixed texts,
// and a generic one for anything else: never words the link supplies.

const SIGN_IN_ERRORS: Record<string, string> = {
  unreachable: "The identity provider cannot be reached; try again.",
  expired: "The sign-in took too long or was started elsewhere; try again.",
  mismatch: "The sign-in answer does not match this sign-in; try again.",
  refused: "The identity provider refused the sign-in.",
  failed: "The identity provider's answer could not be checked; try again.",
  not_accepted: "The server did not accept the sign-in.",
};

/** The generic text shown for an error code the page does not know. */
export const GENERIC_SIGN_IN_ERROR = "Signing in failed; try again.";

/** The text shown for /signin?error=code: "" without one. */
export function signInErrorText(code: string | null): string {
  if (!code) return "";
  return Object.hasOwn(SIGN_IN_ERRORS, code) ? SIGN_IN_ERRORS[code] : GENERIC_SIGN_IN_ERROR;
}
