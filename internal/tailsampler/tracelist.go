package tailsampler

// traceList is an intrusive doubly linked list of buffered traces: the links
// live in the trace itself, so keeping a trace in the shard's two orders
// (last arrival, first arrival) costs no allocation and no extra object for
// the garbage collector to scan.
type traceList struct {
	head, tail *trace
	which      int // index of this list's links in trace.links
}

// The lists a trace can be in.
const (
	orderList = iota // shard.order
	ageList          // shard.byAge
	numLists
)

type traceLinks struct{ prev, next *trace }

func (l *traceList) front() *trace { return l.head }

func (l *traceList) next(t *trace) *trace { return t.links[l.which].next }

func (l *traceList) contains(t *trace) bool { return t.links[l.which].prev != nil || l.head == t }

func (l *traceList) pushBack(t *trace) {
	k := &t.links[l.which]
	k.prev, k.next = l.tail, nil
	if l.tail != nil {
		l.tail.links[l.which].next = t
	} else {
		l.head = t
	}
	l.tail = t
}

// remove unlinks t; it does nothing if t is not in the list.
func (l *traceList) remove(t *trace) {
	if !l.contains(t) {
		return
	}
	k := &t.links[l.which]
	if k.prev != nil {
		k.prev.links[l.which].next = k.next
	} else {
		l.head = k.next
	}
	if k.next != nil {
		k.next.links[l.which].prev = k.prev
	} else {
		l.tail = k.prev
	}
	*k = traceLinks{}
}

func (l *traceList) moveToBack(t *trace) {
	if l.tail == t {
		return
	}
	l.remove(t)
	l.pushBack(t)
}
