// tbhub's web UI: a router over five pages, all served as the same
// index.html by frontend-api's webui package.

import "./style.css";
import { getSession, signOut } from "./api";
import { h, setChildren } from "./dom";
import { renderComparison } from "./pages/compare";
import { renderExperiment } from "./pages/experiment";
import { renderExperiments } from "./pages/experiments";
import { renderGallery } from "./pages/gallery";
import { renderSignIn } from "./pages/signin";

/** The top bar; who is signed in is filled in when the session is known. */
function header(): HTMLElement {
  const account = h("span.account");
  getSession()
    .then((s) =>
      setChildren(
        account,
        s.signedIn
          ? [
              h("span.who", { title: s.userId }, s.userName || s.email || s.userId),
              h(
                "button.signout",
                {
                  onclick: async () => {
                    await signOut().catch(() => {});
                    route();
                  },
                },
                "Sign out",
              ),
            ]
          : h("a.signin-link", { href: `/signin?next=${encodeURIComponent(location.pathname + location.search)}` }, "Sign in"),
      ),
    )
    .catch(() => {});
  return h("header.top", null, h("a.brand", { href: "/" }, "tbhub"), h("a", { href: "/" }, "My experiments"), h("a.gallery-link", { href: "/gallery" }, h("span.long", null, "Public "), "gallery"), h("span.spacer"), account);
}

let stopPage: () => void = () => {};

/** Renders the page for the current location (again after signing in). */
async function route() {
  stopPage();
  stopPage = () => {};
  const app = document.getElementById("app")!;
  const page = h("main.page");
  setChildren(app, header(), page);
  const path = location.pathname;
  try {
    const m = path.match(/^\/experiment\/([^/]+)\/$/);
    const c = path.match(/^\/compare\/([^/]+)\/$/);
    if (m) stopPage = await renderExperiment(page, decodeURIComponent(m[1]), route);
    else if (c) stopPage = await renderComparison(page, decodeURIComponent(c[1]), route);
    else if (path === "/signin") {
      const next = new URLSearchParams(location.search).get("next");
      renderSignIn(page, () => {
        // Only paths of this origin.
        history.replaceState(null, "", next && next.startsWith("/") && !next.startsWith("//") ? next : "/");
        route();
      });
    } else if (path === "/gallery") renderGallery(page);
    else if (path === "/") await renderExperiments(page, route);
    else setChildren(page, h("div.not-found", null, h("h1", null, "Page not found"), h("p", null, h("a", { href: "/" }, "My experiments"))));
  } catch (e) {
    setChildren(page, h("div.error", { role: "alert" }, `Something went wrong: ${(e as Error).message}`));
  }
}

route();
