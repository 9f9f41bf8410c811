package httpapi

// Waiting is how many requests wait for an identical one to be answered.
func Waiting(h *Handler) int {
	if h.cache == nil {
		return 0
	}
	h.cache.mu.Lock()
	defer h.cache.mu.Unlock()
	return h.cache.waiting
}

// LiveWaiting is how many long polls wait on path.
func LiveWaiting(h *Handler, path string) int { return h.live.Waiting(path) }
