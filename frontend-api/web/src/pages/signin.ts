// Sign-in with an API token (self-hosting: `tbhub token create`, or the
// token `tbhub serve` prints on first start). The token is kept in this
// browser's localStorage and sent as a bearer header by the fetch layer.
// OIDC sign-in in the browser is not there yet.

import { ApiError, getJSON, setToken } from "../api";
import { h, setChildren } from "../dom";

/** Renders the sign-in form; after signing in, calls done (which re-routes the page). */
export function renderSignIn(el: HTMLElement, done: () => void, message?: string) {
  const input = h("input", { type: "password", name: "token", placeholder: "tbh_…", autocomplete: "current-password", required: true, "aria-label": "API token", size: 40 });
  const error = h("p.error", { role: "alert" });
  const form = h(
    "form.signin",
    {
      onsubmit: async (e: Event) => {
        e.preventDefault();
        error.textContent = "";
        const token = input.value.trim();
        setToken(token);
        try {
          await getJSON("/api/experiments?page_size=1");
        } catch (err) {
          setToken("");
          error.textContent = err instanceof ApiError && (err.status === 401 || err.status === 403) ? "That token was not accepted." : (err as Error).message;
          return;
        }
        done();
      },
    },
    h("h1", null, "Sign in"),
    message ? h("p", null, message) : null,
    h("p.hint", null, "Paste an API token. `tbhub serve` prints one on first start; `tbhub token create --user NAME` makes more. It stays in this browser only."),
    h("label", null, "API token ", input),
    h("button", { type: "submit" }, "Sign in"),
    error,
  );
  setChildren(el, form);
  input.focus();
}
