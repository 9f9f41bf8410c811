// Package browsertest drives tbhub's web UI in headless Chromium
// (chromedp) against a real `tbhub serve` holding ../shared/corpus, as a
// user would: sign-in, the scalars charts, images, audio, histograms,
// distributions and text, view state in the URL surviving a reload, and
// the pages for missing and private experiments. Screenshots of every tab
// go to $TBHUB_UI_ARTIFACTS (or a fresh temporary directory).
//
// It needs Chromium (Debian's chromium package, or $TBHUB_CHROMIUM) and the
// built UI (scripts/build-ui.sh); -short skips it.
package browsertest
