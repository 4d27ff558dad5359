package memory

// Sizes of the arena's chunks. A record of ownChunkBytes or more gets a chunk
// of its own, so a large body never strands the rest of a shared chunk.
const (
	chunkBytes    = 4 << 20
	ownChunkBytes = chunkBytes / 4
)

// location is where a record lies in the arena.
type location struct{ chunk, off, size uint32 }

// arena holds the encoded records in chunks of bytes mapped outside the Go heap
// (mapChunk), so the collector neither scans them nor counts them in its heap
// goal. A chunk is filled once and never written again; it is released when no
// live record is left in it, even the one being filled. Bytes of a released chunk must not be read: views
// into the arena (view) never outlive the store's lock.
type arena struct {
	chunks [][]byte // by number; nil once released
	live   []int    // bytes of live records per chunk
	spare  []uint32 // numbers of released chunks, for reuse
	head   int      // the chunk being filled, -1 for none
	mapped int      // bytes of all chunks held
	// released counts the chunks unmapped, for tests.
	released int
}

func newArena() arena { return arena{head: -1} }

// add takes a new chunk of capacity size and returns its number.
func (a *arena) add(size int) int {
	chunk := mapChunk(size)
	a.mapped += cap(chunk)
	if n := len(a.spare); n > 0 {
		c := a.spare[n-1]
		a.spare = a.spare[:n-1]
		a.chunks[c], a.live[c] = chunk, 0
		return int(c)
	}
	a.chunks = append(a.chunks, chunk)
	a.live = append(a.live, 0)
	return len(a.chunks) - 1
}

// alloc reserves n bytes for a record and returns where, and the bytes to fill.
func (a *arena) alloc(n int) (location, []byte) {
	c := a.head
	if n >= ownChunkBytes {
		c = a.add(n)
	} else if c < 0 || cap(a.chunks[c])-len(a.chunks[c]) < n {
		c = a.add(chunkBytes)
		a.head = c
	}
	chunk := a.chunks[c]
	off := len(chunk)
	a.chunks[c] = chunk[:off+n]
	a.live[c] += n
	return location{chunk: uint32(c), off: uint32(off), size: uint32(n)}, chunk[off : off+n : off+n]
}

// bytes returns the record at at, in the arena: valid until the record is freed.
func (a *arena) bytes(at location) []byte {
	return a.chunks[at.chunk][at.off : at.off+at.size : at.off+at.size]
}

// free forgets the record at at, releasing its chunk once it holds no live record.
func (a *arena) free(at location) {
	c := int(at.chunk)
	a.live[c] -= int(at.size)
	if a.live[c] == 0 {
		if c == a.head {
			a.head = -1
		}
		a.mapped -= cap(a.chunks[c])
		unmapChunk(a.chunks[c])
		a.chunks[c] = nil
		a.spare = append(a.spare, uint32(c))
		a.released++
	}
}

// sparse reports whether chunk c is worth emptying by moving its records: it
// is not being filled and at most a quarter of it is live.
func (a *arena) sparse(c uint32) bool {
	return int(c) != a.head && a.chunks[c] != nil && a.live[c]*4 <= cap(a.chunks[c])
}

// stranded is how many bytes the arena holds beyond its live records and the
// free room of the chunk being filled.
func (a *arena) stranded() int {
	free, live := 0, 0
	if a.head >= 0 {
		free = cap(a.chunks[a.head]) - len(a.chunks[a.head])
	}
	for _, n := range a.live {
		live += n
	}
	return a.mapped - live - free
}
