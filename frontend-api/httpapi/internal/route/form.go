package route

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
)

// maxFormBytes bounds a posted form (the largest is a timeSeries request
// list from a dashboard with many cards: tens of KB).
const maxFormBytes = 8 << 20

// postForm returns the fields of a POST body in either encoding clients
// send: multipart/form-data (a browser's FormData, what TensorBoard's
// frontend posts) or application/x-www-form-urlencoded (scripts, curl
// -d). Files in a multipart body are not fields and are ignored.
func PostForm(r *Request) (url.Values, error) {
	r.Body = http.MaxBytesReader(nil, r.Body, maxFormBytes)
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct != "multipart/form-data" {
		if err := r.ParseForm(); err != nil {
			return nil, Errorf(http.StatusBadRequest, "bad form: %v", err)
		}
		return r.PostForm, nil
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, Errorf(http.StatusBadRequest, "bad multipart form: %v", err)
	}
	form := url.Values{}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return form, nil
		}
		if err != nil {
			return nil, Errorf(http.StatusBadRequest, "bad multipart form: %v", err)
		}
		if part.FormName() == "" || part.FileName() != "" {
			continue
		}
		v, err := io.ReadAll(part)
		if err != nil {
			return nil, Errorf(http.StatusBadRequest, "bad multipart form: %v", err)
		}
		form.Add(part.FormName(), string(v))
	}
}
