package query

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/tracesift/tracesift/internal/model"
	"github.com/tracesift/tracesift/internal/red"
	"github.com/tracesift/tracesift/internal/store"
)

var (
	lastRED        store.REDFilter
	lastSlowBucket int32
)

func (f fakeReader) RED(_ context.Context, rf store.REDFilter) ([]model.REDGroup, error) {
	lastRED = rf
	if rf.Service == "fail" {
		return nil, errors.New("connection refused")
	}
	s := red.Sketch{}
	for range 60 {
		s.Add(uint64(35 * time.Millisecond))
	}
	for range 40 {
		s.Add(uint64(930 * time.Millisecond))
	}
	g := model.REDGroup{Service: rf.Service, Operation: rf.Operation, GroupBy: rf.GroupBy, Value: "cat-4",
		Requests: 100, Errors: 40, Latency: s}
	if rf.Step > 0 {
		g.Points = []model.REDPoint{{TimeUnixNano: 1796010660000000000, Requests: 100, Errors: 40, P99Bucket: red.Bucket(uint64(930 * time.Millisecond))}}
	}
	return []model.REDGroup{g}, nil
}

func (f fakeReader) REDTallies(_ context.Context, rf store.REDFilter, slowBucket int32) ([]model.REDTally, error) {
	lastRED = rf
	if rf.Service == "fail" {
		return nil, errors.New("connection refused")
	}
	mk := func(instance, version string, n, errs uint64) model.RED {
		all, bad := red.Sketch{}, red.Sketch{}
		for i := range n {
			all.Add(uint64(30 * time.Millisecond))
			if i < errs {
				bad.Add(uint64(30 * time.Millisecond))
			}
		}
		return model.RED{Service: rf.Service, Operation: "GET /cat", Instance: instance,
			Dimensions: map[string]string{"service.version": version}, Requests: n, Errors: errs, Latency: all, ErrorLatency: bad}
	}
	lastSlowBucket = slowBucket
	return red.Tally([]model.RED{mk("cat-1", "1.0", 90, 0), mk("cat-4", "1.1", 10, 5)}, uint64(time.Second)), nil
}

func TestCompare(t *testing.T) {
	h := NewHandler(fakeReader{}, zap.NewNop())
	rec := getJSON(t, h, "/api/v1/compare?service=cat&start=1796010600000000000&end=1796010900000000000&limit=3")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.JSONEq(t, `{"start":"1796010600000000000","end":"1796010900000000000","slow":"1s","failing":5,"healthy":95,
		"dimensions":[
		  {"key":"instance","value":"cat-4","failing":1,"healthy":0.0526,"lift":17.3636,"failingCount":5,"healthyCount":5},
		  {"key":"service.version","value":"1.1","failing":1,"healthy":0.0526,"lift":17.3636,"failingCount":5,"healthyCount":5},
		  {"key":"operation","value":"GET /cat","failing":1,"healthy":1,"lift":1,"failingCount":5,"healthyCount":95}]}`,
		rec.Body.String())
	assert.Equal(t, red.BucketAbove(uint64(time.Second)), lastSlowBucket, "slow requests: from the bucket above 1s")
	for params, want := range map[string]string{
		"":                     "`service` is required",
		"service=cat&slow=-1s": "`slow`",
		"service=cat&limit=0":  "`limit`",
	} {
		rec := getJSON(t, h, "/api/v1/compare?"+params)
		assert.Equal(t, http.StatusBadRequest, rec.Code, params)
		assert.Contains(t, rec.Body.String(), want, params)
	}
	assert.Equal(t, http.StatusInternalServerError, getJSON(t, h, "/api/v1/compare?service=fail").Code)
}

func TestRED(t *testing.T) {
	h := NewHandler(fakeReader{}, zap.NewNop())
	q := url.Values{"service": {"cat"}, "operation": {"GET /cat"}, "start": {"1796010600000000000"}, "end": {"1796010900000000000"}}
	rec := getJSON(t, h, "/api/v1/red?"+q.Encode())
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.JSONEq(t, `{"start":"1796010600000000000","end":"1796010900000000000","groups":[{
		"service":"cat","operation":"GET /cat","key":"instance","value":"cat-4","instance":"cat-4",
		"requests":100,"errors":40,"errorRate":0.4,
		"p50Ms":35.396,"p90Ms":941.096,"p99Ms":941.096,"p999Ms":941.096}]}`, rec.Body.String())
	assert.Equal(t, store.REDFilter{Service: "cat", Operation: "GET /cat", GroupBy: "instance",
		Start: 1796010600000000000, End: 1796010900000000000, MaxGroups: maxREDGroups}, lastRED)

	q.Set("groupBy", "version")
	q.Set("step", "1m")
	rec = getJSON(t, h, "/api/v1/red?"+q.Encode())
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Contains(t, rec.Body.String(), `"key":"service.version","value":"cat-4"`)
	assert.Contains(t, rec.Body.String(), `"service.version":"cat-4"}`)
	assert.Contains(t, rec.Body.String(), `"points":[{"timeUnixNano":"1796010660000000000","requests":100,"errors":40,"p99Ms":941.096}]`)
	assert.Equal(t, int64(time.Minute), lastRED.Step)

	for params, want := range map[string]string{
		"":                                    "`service` is required",
		"service=cat&step=10ms":               "`step`: want a duration of at least 1s",
		"service=cat&step=1s":                 "at most 1000 points",
		"service=cat&start=abc":               "`start`",
		"service=cat&groupBy=" + long(300):    "at most 256 bytes",
		"service=cat&start=2&end=1":           "`start` is after `end`",
		"service=" + url.QueryEscape("x' --"): "",
	} {
		rec := getJSON(t, h, "/api/v1/red?"+params)
		if want == "" {
			assert.Equal(t, http.StatusOK, rec.Code, params)
			continue
		}
		assert.Equal(t, http.StatusBadRequest, rec.Code, params)
		assert.Contains(t, rec.Body.String(), want, params)
	}
	rec = getJSON(t, h, "/api/v1/red?service=fail")
	assert.Equal(t, http.StatusInternalServerError, rec.Code)
	assert.Contains(t, rec.Body.String(), "reading RED failed")
}

func long(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'k'
	}
	return string(b)
}
