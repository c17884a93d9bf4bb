package memory

// slot is a record's place in the store's slab: the store's indexes,
// queues and lists refer to a record by its slot, a number, not by a
// pointer, so that the collector has nothing to follow in them. Slot 0
// is no record.
type slot uint32

// slabChunk is how many records one chunk of the slab holds.
const slabChunk = 1024

// slab keeps the store's records in chunks that never move, so that a
// record's slot stays its place for its life: a chunk is one object for
// the collector, where a record allocated on its own was one more to
// find and mark. A slot that retention frees is zeroed and given to the
// next new record; the chunks are kept (the slab is as large as the most
// records the store has held at once).
type slab struct {
	chunks []*[slabChunk]record
	free   []slot // freed slots, the last freed first
	next   slot   // the lowest slot never used (from 1)
	used   int    // records in use
}

// at returns the record in slot i, which must have been allocated.
func (b *slab) at(i slot) *record {
	return &b.chunks[i/slabChunk][i%slabChunk]
}

// alloc returns a slot holding a zero record, a freed one if there is
// one.
func (b *slab) alloc() slot {
	b.used++
	if n := len(b.free); n > 0 {
		i := b.free[n-1]
		b.free = b.free[:n-1]
		return i
	}
	if b.next == 0 {
		b.next = 1
	}
	i := b.next
	if int(i/slabChunk) == len(b.chunks) {
		b.chunks = append(b.chunks, new([slabChunk]record))
	}
	b.next++
	return i
}

// release zeroes the record in slot i (it keeps nothing of the task it
// held) and frees the slot.
func (b *slab) release(i slot) {
	*b.at(i) = record{}
	b.free = append(b.free, i)
	b.used--
}

// taskSlot names a task in the lists that may outlive it (ListTasks's,
// ListAllTasks's, the expiries): its slot, and its seq, which tells
// whether the slot still holds it (Store.lookup).
type taskSlot struct {
	seq  uint64
	slot slot
}
