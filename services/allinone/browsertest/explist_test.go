package browsertest

import (
	"crypto/rand"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// My experiments and the gallery search by name or description and sort
// by name, creation or last update, kept in the URL.
func TestExperimentListsSearchAndSort(t *testing.T) {
	word := "lists" + strings.ToLower(rand.Text()[:8]) // names only this test uses
	// Created in this order: c first, so "created" (newest first) is a, b, c.
	c := galleryExperiment(t, word+" c-run 10", "", "public")
	b := galleryExperiment(t, word+" b-run", "about **PPO**", "public")
	a := galleryExperiment(t, word+" c-run 9", "", "public")
	order := func(sel string) string {
		return `[...document.querySelectorAll("` + sel + `")].map(e => e.dataset.eid).join()`
	}
	mine := order(`table.experiments.owned tbody tr`)
	gallery := order(`section.gallery li.gallery-item`)
	sortBy := func(v string) chromedp.Action {
		return chromedp.Evaluate(fmt.Sprintf(`(() => { const s = document.querySelector("select.list-sort"); s.value = %q; s.dispatchEvent(new Event("change")); return 0; })()`, v), nil)
	}
	ctx := tab(t, true)
	run(t, ctx,
		navigate(env.origin+"/"),
		waitFor(`document.querySelector("table.experiments.owned") !== null`),
		chromedp.SendKeys(`input.list-search`, word, chromedp.ByQuery),
		waitFor(mine+fmt.Sprintf(` === %q`, strings.Join([]string{a, b, c}, ","))),
		sortBy("name"), // natural order: "c-run 9" before "c-run 10"
		waitFor(mine+fmt.Sprintf(` === %q`, strings.Join([]string{b, a, c}, ","))),
		waitFor(fmt.Sprintf(`new URLSearchParams(location.search).get("sort") === "name" && new URLSearchParams(location.search).get("q") === %q`, word)),
		// The description is searched too.
		chromedp.SendKeys(`input.list-search`, " ppo", chromedp.ByQuery),
		waitFor(mine+fmt.Sprintf(` === %q`, b)),
	)
	run(t, ctx,
		navigate(env.origin+"/gallery?sort=created&q="+word),
		waitFor(gallery+fmt.Sprintf(` === %q`, strings.Join([]string{a, b, c}, ","))),
		sortBy("name"),
		waitFor(gallery+fmt.Sprintf(` === %q`, strings.Join([]string{b, a, c}, ","))),
		waitFor(`new URLSearchParams(location.search).get("sort") === "name"`),
	)
	screenshot(t, ctx, "gallery-sorted")
}
