package httpapi

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// SamplesPerPlugin is TensorBoard's --samples_per_plugin as a flag value:
// "scalars=2000,images=20" sets how many points per series the routes of
// those plugins read (Config.SamplesPerPlugin); the others keep
// TensorBoard's defaults (scalars 1000, histograms 500, images and audio
// 10, text, PR curves and meshes 100). 0 reads no point, as in TensorBoard.
type SamplesPerPlugin map[string]int64

// Set parses "plugin=N[,plugin=N...]" (flag.Value); a plugin named twice
// takes the last N.
func (s *SamplesPerPlugin) Set(v string) error {
	m := SamplesPerPlugin{}
	for item := range strings.SplitSeq(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		plugin, n, ok := strings.Cut(item, "=")
		plugin = strings.TrimSpace(plugin)
		k, err := strconv.ParseInt(strings.TrimSpace(n), 10, 64)
		if !ok || plugin == "" || err != nil || k < 0 {
			return fmt.Errorf("%q: want plugin=N with N >= 0, e.g. scalars=2000,images=20", item)
		}
		m[plugin] = k
	}
	*s = m
	return nil
}

// String writes the value back in Set's form, plugins sorted.
func (s *SamplesPerPlugin) String() string {
	if s == nil {
		return ""
	}
	var parts []string
	for _, p := range slices.Sorted(maps.Keys(*s)) {
		parts = append(parts, p+"="+strconv.FormatInt((*s)[p], 10))
	}
	return strings.Join(parts, ",")
}

// SamplesFlagUsage is the flag's help text, the same in every binary.
const SamplesFlagUsage = "points per series the HTTP API reads, by plugin, as TensorBoard's flag: scalars=2000,images=20 (unlisted plugins keep TensorBoard's defaults)"
