package memory

// taskIndex finds a task's slot by its id. Ids made by imagegen.NewOwnedID
// (and any other UUID in its canonical text) are kept as their sixteen
// bytes, in a map with no pointers for the collector to follow; other
// ids are kept as strings.
type taskIndex struct {
	uuids map[[16]byte]slot
	other map[string]slot
}

func newTaskIndex() taskIndex {
	return taskIndex{uuids: make(map[[16]byte]slot), other: make(map[string]slot)}
}

func (x *taskIndex) get(id string) (slot, bool) {
	if u, ok := uuidKey(id); ok {
		i, ok := x.uuids[u]
		return i, ok
	}
	i, ok := x.other[id]
	return i, ok
}

func (x *taskIndex) put(id string, i slot) {
	if u, ok := uuidKey(id); ok {
		x.uuids[u] = i
		return
	}
	x.other[id] = i
}

func (x *taskIndex) delete(id string) {
	if u, ok := uuidKey(id); ok {
		delete(x.uuids, u)
		return
	}
	delete(x.other, id)
}

func (x *taskIndex) len() int { return len(x.uuids) + len(x.other) }

// uuidKey returns the bytes of id when id is a UUID in canonical text:
// 36 characters, lower-case hex digits with hyphens at 8, 13, 18 and
// 23. Only that text maps to the bytes, so two ids have the same key
// only if they are the same string (an upper-case UUID is another id,
// kept as a string).
func uuidKey(id string) (u [16]byte, ok bool) {
	if len(id) != 36 || id[8] != '-' || id[13] != '-' || id[18] != '-' || id[23] != '-' {
		return u, false
	}
	j := 0
	for i := 0; i < 36; i += 2 {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			i++
		}
		hi, ok1 := hexDigit(id[i])
		lo, ok2 := hexDigit(id[i+1])
		if !ok1 || !ok2 {
			return [16]byte{}, false
		}
		u[j] = hi<<4 | lo
		j++
	}
	return u, true
}

// hexDigit is the value of a lower-case hex digit.
func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}
