package memory

// slot is a record's place in the store's slab: the store's indexes,
// queues and lists refer to a record by its slot, a number, not by a
// pointer, so that the collector has nothing to follow in them. Slot 0
// is no record.
type slot uint32

// slabChunk is how many records one chunk of the slab holds.
const slabChunk = 1024

// slab keeps the store's tasks in chunks that never move, so that a
// task's slot stays its place for its life: a chunk is one object for
// the collector, where a task allocated on its own was one more to find
// and mark. A task's record and its side are in chunks of their own
// (records and sides), so that the records' chunks, which have no
// pointers, are marked without being scanned. A slot that retention
// frees is zeroed and given to the next new task; the chunks are kept
// (the slab is as large as the most tasks the store has held at once).
type slab struct {
	records []*[slabChunk]record
	sides   []*[slabChunk]side
	free    []slot // freed slots, the last freed first
	next    slot   // the lowest slot never used (from 1)
	used    int    // records in use
}

// at returns the task in slot i, which must have been allocated.
func (b *slab) at(i slot) task {
	return task{&b.records[i/slabChunk][i%slabChunk], &b.sides[i/slabChunk][i%slabChunk]}
}

// alloc returns a slot holding a zero task, a freed one if there is
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
	if int(i/slabChunk) == len(b.records) {
		b.records = append(b.records, new([slabChunk]record))
		b.sides = append(b.sides, new([slabChunk]side))
	}
	b.next++
	return i
}

// release zeroes the task in slot i (the slot keeps nothing of it) and
// frees the slot.
func (b *slab) release(i slot) {
	t := b.at(i)
	*t.record, *t.side = record{}, side{}
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
