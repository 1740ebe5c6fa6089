package clockskew

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tracesift/tracesift/internal/analyze"
	"github.com/tracesift/tracesift/internal/model/modeltest"
)

// The analyzers' golden trace with retries and skew together: the skew is
// measured on each of the three calls, retried or not, and raises one
// finding once the estimate has its samples.
func TestRetriesAndSkewInOneTrace(t *testing.T) {
	b, err := os.ReadFile("../analyze/testdata/retries_and_skew.json")
	require.NoError(t, err)
	var g struct {
		Trace modeltest.Trace `json:"trace"`
	}
	require.NoError(t, json.Unmarshal(b, &g))
	tr := &g.Trace.Trace

	obs := PairOffsets(tr)
	require.Len(t, obs, 3, "one observation per attempt")
	for _, o := range obs {
		assert.Equal(t, "web-1", o.From)
		assert.Equal(t, "pay-1", o.To)
		assert.Equal(t, 300*time.Millisecond, o.Offset)
	}
	e := newEstimator(t, nil)
	observeN(e, time.Unix(1000, 0), DefaultConfig().MinSamples, tr)
	fs := e.Findings(tr, obs)
	require.Len(t, fs, 1)
	assert.Equal(t, analyze.KindClockSkew, fs[0].Kind)
	assert.Equal(t, 300.0, fs[0].Value)
	assert.Equal(t, "payments", fs[0].Service)
	assert.ElementsMatch(t, []string{"d000000000000001", "d000000000000002", "d000000000000003"}, fs[0].SpanIDs)

	adj := e.Adjust(tr)
	for i, s := range tr.Spans {
		if s.Host == "pay-1" {
			assert.Equal(t, s.StartUnixNano-uint64(300*time.Millisecond), adj.Spans[i].Start, "span %s", s.SpanID)
		}
	}
}
