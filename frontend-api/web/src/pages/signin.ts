// Sign-in: with the server's OpenID Connect issuer when it offers one
// (GET /auth/login runs the authorization-code flow and comes back to the
// page that asked), or with an API token (self-hosting: the token `tbhub
// serve` prints on first start, or `tbhub token create`). Either way the
// server sets an HttpOnly session cookie; the token pasted here is only
// sent once, to start the session.

import { ApiError, getSession, signInWithToken } from "../api";
import { h, setChildren } from "../dom";
import { signInErrorText } from "./signinerror";

/** The page to come back to: ?next= on /signin, else the current page. */
function nextPath(): string {
  if (location.pathname !== "/signin") return location.pathname + location.search;
  const next = new URLSearchParams(location.search).get("next") ?? "/";
  return next.startsWith("/") && !next.startsWith("//") ? next : "/";
}

function issuerName(issuer: string): string {
  try {
    return new URL(issuer).host;
  } catch {
    return issuer;
  }
}

/**
 * How the token part of the form begins: "Or …" only below the button
 * signing in with an OIDC issuer, when the server has one.
 */
export function tokenLead(oidc: boolean): string {
  return oidc ? "Or paste an API token." : "Paste an API token.";
}

/**
 * Renders the sign-in form into el; after a token sign-in, calls done
 * (which re-routes the page). focus puts the cursor in the token field
 * (not on the landing page, where the gallery comes first).
 */
export function renderSignIn(el: HTMLElement, done: () => void, message?: string, focus = true) {
  const input = h("input", { type: "password", name: "token", placeholder: "tbh_…", autocomplete: "current-password", required: true, "aria-label": "API token", size: 40 });
  const error = h("p.error", { role: "alert" });
  if (location.pathname === "/signin") error.textContent = signInErrorText(new URLSearchParams(location.search).get("error"));
  const oidc = h("div.oidc");
  const lead = h("span.token-lead", null, tokenLead(false));
  const form = h(
    "form.signin",
    {
      onsubmit: async (e: Event) => {
        e.preventDefault();
        error.textContent = "";
        try {
          await signInWithToken(input.value.trim());
        } catch (err) {
          error.textContent = err instanceof ApiError && err.status === 401 ? "That token was not accepted." : (err as Error).message;
          return;
        }
        done();
      },
    },
    h("h1", null, "Sign in"),
    message ? h("p", null, message) : null,
    oidc,
    h(
      "p.hint",
      null,
      lead,
      " ",
      h("code", null, "tbhub serve"),
      " prints one on first start; ",
      h("code", null, "tbhub token create --user NAME"),
      " makes more. This browser keeps a session of its own, not the token.",
    ),
    h("label", null, "API token ", input),
    h("button", { type: "submit" }, "Sign in with token"),
    error,
    h("p.gallery-hint", null, "No account? ", h("a.gallery-link", { href: "/gallery" }, "Browse the public experiments"), "."),
  );
  setChildren(el, form);
  if (focus) input.focus();
  getSession()
    .then((s) => {
      if (!s.oidcIssuer) return;
      const href = `/auth/login?next=${encodeURIComponent(nextPath())}`;
      setChildren(oidc, h("a.button.oidc-signin", { href }, `Sign in with ${issuerName(s.oidcIssuer)}`));
      lead.textContent = tokenLead(true);
    })
    .catch(() => {});
}
