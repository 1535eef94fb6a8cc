// Package localmap keeps a replica's local maps (the pass cache, the
// pass-sharing record, the hand-over claims) within their size: each is
// a cache of something Redis or a signature can answer again, so an
// entry dropped costs a lookup more, never a wrong answer.
package localmap

// Evict drops the entries of m that expired reports as over, then
// arbitrary ones until fewer than below remain. Callers call it when m
// is full and pass a below under the cap, so that a full map is not
// swept again on the very next insert.
func Evict[K comparable, V any](m map[K]V, below int, expired func(V) bool) {
	for k, v := range m {
		if expired(v) {
			delete(m, k)
		}
	}
	for k := range m {
		if len(m) < below {
			return
		}
		delete(m, k)
	}
}
