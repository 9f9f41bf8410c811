package compare

import (
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tbhub/tbhub/frontend-api/httpapi/internal/route"
	experimentsv1 "github.com/tbhub/tbhub/schemas/gen/go/tbhub/experiments/v1"
)

// Routes serves the comparison's own route.
type Routes struct {
	*route.Env
	// Client is the Env's read service.
	Client *Client
	// Experiments gives each member's owner, update time and counts; the
	// answer goes without them when it is nil.
	Experiments experimentsv1.ExperimentServiceClient
}

// memberJSON is a visible member in the comparison route's answer.
type memberJSON struct {
	ExperimentID     string `json:"experimentId"`
	Name             string `json:"name"`
	Label            string `json:"label"`
	OwnerDisplayName string `json:"ownerDisplayName,omitempty"`
	UpdateTime       string `json:"updateTime,omitempty"`
}

// comparisonJSON is the comparison route's answer. It has the shape of
// an experiment's metadata (/api/experiments/{eid}) where they share
// fields (the page follows either): updateTime is the latest of the
// members', counts their sums.
type comparisonJSON struct {
	ExperimentID string           `json:"experimentId"`
	Name         string           `json:"name"`
	UpdateTime   string           `json:"updateTime,omitempty"`
	Counts       map[string]int64 `json:"counts"`
	Members      []memberJSON     `json:"members"`
	// Hidden of Requested experiments are not visible to the caller
	// (missing or not readable: the same to them).
	Hidden    int `json:"hidden"`
	Requested int `json:"requested"`
}

// Comparison answers GET /compare/{eid}/data/comparison: the members the
// caller may read (ID, name, label of their runs) and how many of the
// comparison's experiments they may not. The handler put the comparison
// in the request's context (With).
func (h Routes) Comparison(w http.ResponseWriter, r *route.Request) error {
	cmp, ok := of(r.Ctx, r.EID)
	if !ok {
		return route.Errorf(http.StatusNotFound, "not a comparison")
	}
	out := comparisonJSON{ExperimentID: cmp.ID, Counts: map[string]int64{}, Hidden: cmp.Hidden, Requested: len(cmp.Members) + cmp.Hidden}
	var names []string
	for _, m := range cmp.Members {
		out.Members = append(out.Members, memberJSON{ExperimentID: m.ID, Name: m.Name, Label: m.Label})
		names = append(names, m.Label)
	}
	out.Name = joinLabels(names)
	if h.Experiments == nil {
		return route.WriteJSON(w, out)
	}
	var mu sync.Mutex
	var latest time.Time
	err := parallel(len(cmp.Members), h.Client.lim.MaxParallel, func(i int) error {
		resp, err := h.Experiments.GetExperiment(r.Ctx, &experimentsv1.GetExperimentRequest{ExperimentId: cmp.Members[i].ID, OmitRuns: true}, h.CallOpts...)
		if hidden(err) {
			return nil // made private since: the data routes leave it out too
		}
		if err != nil {
			return err
		}
		e := resp.GetExperiment()
		mu.Lock()
		defer mu.Unlock()
		out.Members[i].OwnerDisplayName = e.GetOwnerDisplayName()
		if t := e.GetUpdateTime(); t != nil {
			out.Members[i].UpdateTime = t.AsTime().Format(time.RFC3339Nano)
			if t.AsTime().After(latest) {
				latest = t.AsTime()
			}
		}
		c := e.GetCounts()
		for k, v := range map[string]int64{"numRuns": c.GetNumRuns(), "numTags": c.GetNumTags(), "numScalarPoints": c.GetNumScalarPoints(),
			"numTensorPoints": c.GetNumTensorPoints(), "numBlobs": c.GetNumBlobs(), "totalTensorBytes": c.GetTotalTensorBytes(), "totalBlobBytes": c.GetTotalBlobBytes()} {
			out.Counts[k] += v
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !latest.IsZero() {
		out.UpdateTime = latest.Format(time.RFC3339Nano)
	}
	return route.WriteJSON(w, out)
}

// joinLabels is a comparison's name: its members' labels.
func joinLabels(labels []string) string {
	return strings.Join(labels, " + ")
}
