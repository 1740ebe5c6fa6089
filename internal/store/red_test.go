package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A window is read from the coarsest rollup whose buckets lie wholly in it
// and in one point, and from the 10 s rows at its edges.
func TestREDWindowTiers(t *testing.T) {
	base := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC).Unix()
	at := func(h, m, s int64) int64 { return base + h*3600 + m*60 + s }
	type span struct{ lo, hi int64 }
	// read gives the non-empty ranges each table reads: raw, 1m, 5m, 1h.
	read := func(from, to, step int64) [4][]span {
		p := redWindow(REDFilter{Start: from * 1e9, End: to*1e9 - 1}, step, "") // [from, to)
		var out [4][]span
		for i, tier := range []string{"t0", "t1", "t2", "t3"} {
			for _, k := range []string{"", "2"} {
				if s := (span{p[tier+"_lo"+k].(int64), p[tier+"_hi"+k].(int64)}); s.lo < s.hi {
					out[i] = append(out[i], s)
				}
			}
		}
		return out
	}
	// 09:03:10 .. 12:07:30: raw to 09:04, minutes to 09:05, five minutes to
	// 10:00, hours to 12:00, five minutes to 12:05, minutes to 12:07, raw.
	assert.Equal(t, [4][]span{
		{{at(0, 3, 10), at(0, 4, 0)}, {at(3, 7, 0), at(3, 7, 30)}},
		{{at(0, 4, 0), at(0, 5, 0)}, {at(3, 5, 0), at(3, 7, 0)}},
		{{at(0, 5, 0), at(1, 0, 0)}, {at(3, 0, 0), at(3, 5, 0)}},
		{{at(1, 0, 0), at(3, 0, 0)}},
	}, read(at(0, 3, 10), at(3, 7, 30), 0))
	// Points every 5 minutes: no hour is read, as it would span 12 points.
	assert.Equal(t, [4][]span{
		{{at(0, 3, 10), at(0, 4, 0)}, {at(3, 7, 0), at(3, 7, 30)}},
		{{at(0, 4, 0), at(0, 5, 0)}, {at(3, 5, 0), at(3, 7, 0)}},
		{{at(0, 5, 0), at(3, 5, 0)}},
		nil,
	}, read(at(0, 3, 10), at(3, 7, 30), 300))
	// Points every 90 s, or less than a whole minute: the 10 s rows alone.
	assert.Equal(t, [4][]span{{{at(0, 3, 10), at(3, 7, 30)}}, nil, nil, nil}, read(at(0, 3, 10), at(3, 7, 30), 90))
	assert.Equal(t, [4][]span{{{at(0, 3, 10), at(0, 3, 50)}}, nil, nil, nil}, read(at(0, 3, 10), at(0, 3, 50), 0))
	// Whole hours exactly: the hours alone.
	assert.Equal(t, [4][]span{nil, nil, nil, {{at(0, 0, 0), at(2, 0, 0)}}}, read(at(0, 0, 0), at(2, 0, 0), 3600))
}
