package inspect

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"text/tabwriter"

	"github.com/tbhub/tbhub/uploader/internal/migrate"
)

// jsonFloat writes NaN and infinities as the strings TensorBoard and Python use.
func jsonFloat(f float64) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return f
}

// MarshalJSON writes the keys EXPECTED.json uses for the series' data class.
func (s *Series) MarshalJSON() ([]byte, error) {
	m := map[string]any{
		"plugin":                  s.Plugin,
		"data_class":              s.DataClass.String(),
		"points":                  s.Points,
		"min_step":                s.MinStep,
		"max_step":                s.MaxStep,
		"dropped_plugin_mismatch": s.Dropped,
	}
	switch s.DataClass {
	case migrate.ClassScalar:
		m["sum"] = jsonFloat(s.Sum)
		m["nan"], m["pos_inf"], m["neg_inf"], m["invalid"] = s.NaN, s.PosInf, s.NegInf, s.Invalid
		m["last"] = nil
		if s.LastValid {
			m["last"] = jsonFloat(s.Last)
		}
	case migrate.ClassTensor:
		m["dtype"] = DTypeName(s.Shape.DType)
		if s.Shape.UnknownRank {
			m["shape"] = nil
		} else {
			m["shape"] = append([]int64{}, s.Shape.Dims...)
		}
	case migrate.ClassBlobSequence:
		m["blobs"], m["blob_bytes"], m["max_length"] = s.Blobs, s.BlobBytes, s.MaxLength
	}
	return json.Marshal(m)
}

// WriteJSON writes the report as EXPECTED.json does: sorted keys, one-space indent,
// UTF-8 without escapes.
func (r *Report) WriteJSON(w io.Writer) error {
	doc := map[string]any{
		"logdir":         r.Logdir,
		"runs":           r.Runs,
		"unknown_series": nonNil(r.UnknownSeries),
		"errors":         nonNil(r.Errors),
		"totals":         r.Totals,
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// WriteTable writes a table for people: one line per series, then errors and totals.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tTAG\tPLUGIN\tCLASS\tPOINTS\tSTEPS\tDETAIL")
	runs := make([]string, 0, len(r.Runs))
	for run := range r.Runs {
		runs = append(runs, run)
	}
	sort.Strings(runs)
	for _, run := range runs {
		tags := make([]string, 0, len(r.Runs[run]))
		for tag := range r.Runs[run] {
			tags = append(tags, tag)
		}
		sort.Strings(tags)
		if len(tags) == 0 {
			fmt.Fprintf(tw, "%s\t(no data)\t\t\t\t\t\n", run)
		}
		for _, tag := range tags {
			s := r.Runs[run][tag]
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d–%d\t%s\n", run, printable(tag), s.Plugin, s.DataClass, s.Points, s.MinStep, s.MaxStep, s.detail())
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, u := range r.UnknownSeries {
		fmt.Fprintf(w, "not uploaded (unknown data class): %s %s plugin=%q points=%d\n", u.Run, printable(u.Tag), u.Plugin, u.Points)
	}
	for _, e := range r.Errors {
		fmt.Fprintf(w, "error: %s\n", e)
	}
	t := r.Totals
	_, err := fmt.Fprintf(w, "\n%d runs, %d series: %d scalar points, %d tensor points, %d blob sequence points (%d blobs, %s); %d event files, %d records, %d errors, %d values dropped for a plugin mismatch\n",
		t.Runs, t.Series, t.ScalarPoints, t.TensorPoints, t.BlobSequencePoints, t.Blobs, humanBytes(t.BlobBytes), t.EventFiles, t.Records, t.Errors, t.DroppedPluginMismatch)
	return err
}

func (s *Series) detail() string {
	switch s.DataClass {
	case migrate.ClassScalar:
		last := "invalid"
		if s.LastValid {
			last = strconv.FormatFloat(s.Last, 'g', 6, 64)
		}
		d := "last=" + last
		if s.NaN+s.PosInf+s.NegInf > 0 {
			d += fmt.Sprintf(" nan=%d +inf=%d -inf=%d", s.NaN, s.PosInf, s.NegInf)
		}
		if s.Invalid > 0 {
			d += fmt.Sprintf(" invalid=%d", s.Invalid)
		}
		return d
	case migrate.ClassTensor:
		if s.Shape.UnknownRank {
			return DTypeName(s.Shape.DType) + " shape=unknown"
		}
		return fmt.Sprintf("%s %v", DTypeName(s.Shape.DType), s.Shape.Dims)
	case migrate.ClassBlobSequence:
		return fmt.Sprintf("%d blobs, %s", s.Blobs, humanBytes(s.BlobBytes))
	}
	return ""
}

// printable quotes names that would break a table line.
func printable(s string) string {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == '\t' {
			return strconv.Quote(s)
		}
	}
	if s == "" {
		return `""`
	}
	return s
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	f, i := float64(n), 0
	for f >= unit && i < 4 {
		f /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", f, "KMGT"[i-1])
}

var dtypeNames = map[int32]string{
	0: "DT_INVALID", 1: "DT_FLOAT", 2: "DT_DOUBLE", 3: "DT_INT32", 4: "DT_UINT8", 5: "DT_INT16",
	6: "DT_INT8", 7: "DT_STRING", 8: "DT_COMPLEX64", 9: "DT_INT64", 10: "DT_BOOL", 11: "DT_QINT8",
	12: "DT_QUINT8", 13: "DT_QINT32", 14: "DT_BFLOAT16", 15: "DT_QINT16", 16: "DT_QUINT16",
	17: "DT_UINT16", 18: "DT_COMPLEX128", 19: "DT_HALF", 20: "DT_RESOURCE", 21: "DT_VARIANT",
	22: "DT_UINT32", 23: "DT_UINT64", 24: "DT_FLOAT8_E5M2", 25: "DT_FLOAT8_E4M3FN",
	26: "DT_FLOAT8_E4M3FNUZ", 27: "DT_FLOAT8_E4M3B11FNUZ", 28: "DT_FLOAT8_E5M2FNUZ",
	29: "DT_INT4", 30: "DT_UINT4", 31: "DT_INT2", 32: "DT_UINT2", 33: "DT_FLOAT4_E2M1FN",
}

// DTypeName is the TensorFlow DataType enum name, "DT_<n>" when unknown.
func DTypeName(d int32) string {
	if n, ok := dtypeNames[d]; ok {
		return n
	}
	if n, ok := dtypeNames[d-100]; ok && d > 100 {
		return n + "_REF"
	}
	return "DT_" + strconv.Itoa(int(d))
}
