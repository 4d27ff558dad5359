//go:build linux || darwin || freebsd || netbsd || openbsd

package memory

import (
	"fmt"
	"syscall"
)

// mapChunk maps size bytes of anonymous memory, outside the Go heap. The pages
// are touched, and so resident, only as records fill them.
func mapChunk(size int) []byte {
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE|mapPopulate)
	if err != nil {
		// As the runtime does when the heap cannot grow: there is no error to
		// return from a store that ran out of memory.
		panic(fmt.Sprintf("memory: map %d bytes: %v", size, err))
	}
	return b[:0]
}

func unmapChunk(b []byte) {
	if err := syscall.Munmap(b[:cap(b)]); err != nil {
		panic(fmt.Sprintf("memory: unmap %d bytes: %v", cap(b), err))
	}
}
