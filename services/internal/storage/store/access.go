package store

import "context"

// AccessReader is the read an access check needs: an experiment's own
// fields (ID, name, description, owner, visibility, times) and its read
// grants, without the counts, which cost a pass over the experiment's
// series. Backends implement it next to Reader; tenancy.Guard uses it when
// its store has it.
type AccessReader interface {
	// GetExperimentAccess is GetExperiment without the counts (they are
	// zero); ErrNotFound likewise.
	GetExperimentAccess(ctx context.Context, eid string) (Experiment, error)
}
