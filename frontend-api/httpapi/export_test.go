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
