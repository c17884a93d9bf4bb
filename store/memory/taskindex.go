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

// taskKey is an id as the index keys it: its UUID's bytes when
// isUUID, else the string.
type taskKey struct {
	id     string
	uuid   [16]byte
	isUUID bool
}

func keyOf(id string) taskKey {
	u, ok := uuidKey(id)
	return taskKey{id: id, uuid: u, isUUID: ok}
}

func (x *taskIndex) get(id string) (slot, bool) { return x.getKey(keyOf(id)) }

func (x *taskIndex) getKey(k taskKey) (slot, bool) {
	if k.isUUID {
		i, ok := x.uuids[k.uuid]
		return i, ok
	}
	i, ok := x.other[k.id]
	return i, ok
}

// put indexes k at slot i; k.id must be a string that does not change
// (the task's own copy).
func (x *taskIndex) put(k taskKey, i slot) {
	if k.isUUID {
		x.uuids[k.uuid] = i
		return
	}
	x.other[k.id] = i
}

func (x *taskIndex) delete(id string) {
	if k := keyOf(id); k.isUUID {
		delete(x.uuids, k.uuid)
	} else {
		delete(x.other, id)
	}
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
	var bad byte // the high bits of any character not a hex digit
	j := 0
	for i := 0; i < 36; i += 2 {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			i++
		}
		hi, lo := hexValue[id[i]], hexValue[id[i+1]]
		bad |= hi | lo
		u[j] = hi<<4 | lo&0x0f
		j++
	}
	if bad&0xf0 != 0 {
		return [16]byte{}, false
	}
	return u, true
}

// hexValue is the value of each lower-case hex digit, 0xff for every
// other character.
var hexValue = func() (v [256]byte) {
	for c := range v {
		switch {
		case '0' <= c && c <= '9':
			v[c] = byte(c - '0')
		case 'a' <= c && c <= 'f':
			v[c] = byte(c - 'a' + 10)
		default:
			v[c] = 0xff
		}
	}
	return v
}()
