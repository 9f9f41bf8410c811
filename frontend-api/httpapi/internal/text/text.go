// Package text serves the text plugin's routes: string tensors rendered
// as TensorBoard renders them (markdown, tables).
package text

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/markdown"
	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/route"
	tbpb "github.com/tbhub/tbhub/schemas/gen/go/tensorboard"
)

func (h Plugin) TextTags(w http.ResponseWriter, r *route.Request) error {
	series, err := h.ListTensors(r, "text", nil)
	if err != nil {
		return err
	}
	out := map[string][]string{}
	for _, s := range series {
		out[s.Run] = append(out[s.Run], s.Tag)
	}
	return route.WriteJSON(w, out)
}

type textEntry struct {
	WallTime route.Float `json:"wall_time"`
	Step     int64       `json:"step"`
	Text     string      `json:"text"`
}

func (h Plugin) Text(w http.ResponseWriter, r *route.Request) error {
	run, tag, err := route.RequireRunTag(r)
	if err != nil {
		return err
	}
	useMarkdown := r.URL.Query().Get("markdown") != "false"
	series, err := h.ReadTexts(r, "text", route.One(run, tag), h.Samples("text", route.SamplesText))
	if err != nil {
		return err
	}
	// One time budget for the request's markdown, however many texts it
	// holds; it also ends when the client goes (markdown.Renderer).
	ctx, cancel := context.WithTimeout(r.Ctx, h.Markdown.Limits().RenderTimeout)
	defer cancel()
	out := []textEntry{}
	for _, s := range series {
		d := s.Data
		for i, step := range d.GetStep() {
			text, err := textToHTML(ctx, h.Markdown, d.GetValue()[i], useMarkdown)
			if err != nil {
				return fmt.Errorf("run %q tag %q step %d: %w", run, tag, step, err)
			}
			out = append(out, textEntry{route.Float(d.GetWallTime()[i]), step, text})
		}
	}
	return route.WriteJSON(w, out)
}

// textToHTML renders a string tensor as TensorBoard's text plugin does: a
// scalar as one block, a vector as a one-column table, a matrix as a
// table, and of a higher-rank tensor its first matrix, with a warning.
// Each cell is sanitized markdown, or sanitized HTML (the text as it is,
// cleaned) when useMarkdown is false, of at most md's MaxInputBytes.
func textToHTML(ctx context.Context, md *markdown.Renderer, t *tbpb.TensorProto, useMarkdown bool) (string, error) {
	vals, err := route.TensorStrings(t)
	if err != nil {
		return "", err
	}
	cell := func(b []byte) string {
		// The read service sent at most ReadLimit bytes of each string
		// (route.Env.ReadTexts); an older one may send more.
		b = b[:min(len(b), md.Limits().ReadLimit())]
		s := strings.ToValidUTF8(string(b), "\uFFFD")
		if useMarkdown {
			return md.Render(ctx, s)
		}
		return md.SafeText(s)
	}
	shape := route.ShapeOf(t)
	switch len(shape) {
	case 0:
		if len(vals) == 0 {
			return "", nil
		}
		return cell(vals[0]), nil
	case 1:
		return table(vals, shape[0], 1, 1, cell), nil
	case 2:
		return table(vals, shape[0], shape[1], 1, cell), nil
	}
	// Element [i, j, 0, 0, ...] of a row-major tensor is at (i*cols + j)
	// times the size of the trailing dimensions.
	inner := int64(1)
	for _, d := range shape[2:] {
		inner *= d
	}
	warning := md.ToSafeHTML(fmt.Sprintf("**Warning:** This text summary contained data of dimensionality %d, but only "+
		"2d tables are supported. Showing a 2d slice of the data instead.", len(shape)))
	if inner == 0 {
		return warning, nil
	}
	return warning + table(vals, shape[0], shape[1], inner, cell), nil
}

// table renders vals[(i*ncols + j) * stride] as an nrows × ncols table;
// the caller guarantees that every such index is within vals.
func table(vals [][]byte, nrows, ncols, stride int64, cell func([]byte) string) string {
	var b strings.Builder
	b.WriteString("<table>\n<tbody>\n")
	for i := range nrows {
		b.WriteString("<tr>\n")
		for j := range ncols {
			b.WriteString("<td>")
			b.WriteString(cell(vals[(i*ncols+j)*stride]))
			b.WriteString("</td>\n")
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody>\n</table>")
	return b.String()
}

// Plugin serves the plugin's routes from the data of Env.
type Plugin struct{ *route.Env }
