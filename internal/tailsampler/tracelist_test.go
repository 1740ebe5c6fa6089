package tailsampler

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

func listIDs(l *traceList) []byte {
	var out []byte
	for t := l.front(); t != nil; t = l.next(t) {
		out = append(out, t.id[0])
	}
	return out
}

func TestTraceList(t *testing.T) {
	tr := make([]*trace, 5)
	for i := range tr {
		tr[i] = &trace{}
		tr[i].id[0] = byte('a' + i)
	}
	order, age := traceList{which: orderList}, traceList{which: ageList}
	for _, x := range tr {
		order.pushBack(x)
		age.pushBack(x)
	}
	assert.Equal(t, "abcde", string(listIDs(&order)))
	order.remove(tr[2])
	order.remove(tr[2]) // not linked: nothing happens
	order.remove(tr[0])
	order.remove(tr[4])
	assert.Equal(t, "bd", string(listIDs(&order)))
	assert.Equal(t, "abcde", string(listIDs(&age)), "the lists are independent")
	assert.False(t, order.contains(tr[0]))
	assert.True(t, age.contains(tr[0]))
	order.moveToBack(tr[1])
	order.moveToBack(tr[1])
	order.pushBack(tr[0])
	assert.Equal(t, "dba", string(listIDs(&order)))
	for _, x := range tr {
		order.remove(x)
	}
	assert.Nil(t, order.front())
	assert.Nil(t, order.tail)
}

// chunkOverhead must cover what a buffered trace costs besides its frames:
// the trace itself, its map entry (key, pointer and the map's slack) and its
// route strings.
func TestChunkOverheadCoversTheBookkeeping(t *testing.T) {
	const mapEntry = (16 + 8) * 2 // key and value, at worst half-full after growth
	const routeStrings = 48       // root span name and service, copied once per trace
	size := int(unsafe.Sizeof(trace{}))
	assert.LessOrEqual(t, size+mapEntry+routeStrings, chunkOverhead, "trace is %d bytes", size)
}
