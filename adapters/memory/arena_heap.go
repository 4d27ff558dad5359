//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package memory

// mapChunk allocates a chunk on the Go heap where anonymous mappings are not
// at hand: it holds no pointers, so the collector still does not scan it.
func mapChunk(size int) []byte { return make([]byte, 0, size) }

func unmapChunk([]byte) {}
