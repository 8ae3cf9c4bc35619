package history

// idSet tracks operation IDs while a history is read: which were ever invoked (to refuse a second invoke
// or a second completion) and where each operation still in flight sits in Ops. A map of every ID to its
// index held a million entries (50 MB, and its growth 70 MB more) for what is needed only while the
// operation is open: here the open map holds only operations in flight, and the IDs ever seen are bits.
type idSet struct {
	open map[int64]int // ID -> index in Ops, while not completed
	bits []uint64      // IDs in [0, maxDenseID) ever invoked
	far  map[int64]bool
}

// maxDenseID bounds the bit set (8 MB): the recorder numbers operations from 1, and a crafted larger ID
// goes to the map rather than allocating bits up to it.
const maxDenseID = 1 << 26

func newIDs() *idSet { return &idSet{open: map[int64]int{}, far: map[int64]bool{}} }

// invoked reports whether id was ever invoked.
func (s *idSet) invoked(id int64) bool {
	if id >= 0 && id < maxDenseID {
		w := int(id >> 6)
		return w < len(s.bits) && s.bits[w]&(1<<(id&63)) != 0
	}
	return s.far[id]
}

// invoke records id as invoked at index i; false if it already was.
func (s *idSet) invoke(id int64, i int) bool {
	if s.invoked(id) {
		return false
	}
	if id >= 0 && id < maxDenseID {
		w := int(id >> 6)
		if w >= len(s.bits) {
			s.bits = append(s.bits, make([]uint64, w+1-len(s.bits))...)
		}
		s.bits[w] |= 1 << (id & 63)
	} else {
		s.far[id] = true
	}
	s.open[id] = i
	return true
}

// complete closes id and returns its index; false if it is not in flight (never invoked, or completed).
func (s *idSet) complete(id int64) (int, bool) {
	i, ok := s.open[id]
	if ok {
		delete(s.open, id)
	}
	return i, ok
}
