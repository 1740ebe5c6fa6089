package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// The query API's JSON, as far as the data source reads it (tracesift's
// README, "Query API"). Times in Unix nanoseconds are strings there.

type apiTrace struct {
	TraceID      string           `json:"traceId"`
	Spans        []apiSpan        `json:"spans"`
	Logs         []apiLog         `json:"logs"`
	Findings     []apiFinding     `json:"findings"`
	ClockOffsets map[string]int64 `json:"clockOffsets"`
}

type apiSpan struct {
	TraceID       string            `json:"traceId"`
	SpanID        string            `json:"spanId"`
	ParentSpanID  string            `json:"parentSpanId"`
	TraceState    string            `json:"traceState"`
	Name          string            `json:"name"`
	Kind          string            `json:"kind"`
	Service       string            `json:"service"`
	Host          string            `json:"host"`
	Start         uint64            `json:"startTimeUnixNano,string"`
	AdjustedStart uint64            `json:"adjustedStartTimeUnixNano,string"`
	DurationNano  uint64            `json:"durationNano"`
	Status        apiStatus         `json:"status"`
	Attributes    map[string]string `json:"attributes"`
	Resource      map[string]string `json:"resource"`
	ScopeName     string            `json:"scopeName"`
	ScopeVersion  string            `json:"scopeVersion"`
	Events        []apiEvent        `json:"events"`
	Links         []apiLink         `json:"links"`
}

type apiStatus struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type apiEvent struct {
	Time       uint64            `json:"timeUnixNano,string"`
	Name       string            `json:"name"`
	Attributes map[string]string `json:"attributes"`
}

type apiLink struct {
	TraceID string `json:"traceId"`
	SpanID  string `json:"spanId"`
}

type apiLog struct {
	Time         uint64            `json:"timeUnixNano,string"`
	AdjustedTime uint64            `json:"adjustedTimeUnixNano,string"`
	SeverityText string            `json:"severityText"`
	Body         string            `json:"body"`
	TraceID      string            `json:"traceId"`
	SpanID       string            `json:"spanId"`
	Service      string            `json:"service"`
	Host         string            `json:"host"`
	Attributes   map[string]string `json:"attributes"`
	Kept         bool              `json:"kept"`
}

type apiFinding struct {
	Kind    string   `json:"kind"`
	SpanIDs []string `json:"spanIds"`
	Service string   `json:"service"`
	Subject string   `json:"subject"`
	Value   float64  `json:"value"`
	Summary string   `json:"summary"`
}

type apiTraceSummary struct {
	TraceID      string   `json:"traceId"`
	RootService  string   `json:"rootService"`
	RootName     string   `json:"rootName"`
	Start        uint64   `json:"startTimeUnixNano,string"`
	DurationNano uint64   `json:"durationNano"`
	Status       string   `json:"status"`
	SpanCount    int64    `json:"spanCount"`
	ErrorCount   int64    `json:"errorCount"`
	Services     []string `json:"services"`
}

type apiFindingSummary struct {
	Kind            string   `json:"kind"`
	Service         string   `json:"service"`
	Subject         string   `json:"subject"`
	Count           int64    `json:"count"`
	Traces          int64    `json:"traces"`
	P50Value        float64  `json:"p50Value"`
	MaxValue        float64  `json:"maxValue"`
	ExampleTraceIDs []string `json:"exampleTraceIds"`
	LastSeen        uint64   `json:"lastSeenUnixNano,string"`
}

type apiDependency struct {
	Parent    string  `json:"parent"`
	Child     string  `json:"child"`
	Calls     int64   `json:"calls"`
	Errors    int64   `json:"errors"`
	ErrorRate float64 `json:"errorRate"`
	P99Ms     float64 `json:"p99Ms"`
}

type apiREDGroup struct {
	Service   string        `json:"service"`
	Operation string        `json:"operation"`
	Key       string        `json:"key"`
	Value     string        `json:"value"`
	Requests  int64         `json:"requests"`
	Errors    int64         `json:"errors"`
	Points    []apiREDPoint `json:"points"`
}

type apiREDPoint struct {
	Time     uint64  `json:"timeUnixNano,string"`
	Requests int64   `json:"requests"`
	Errors   int64   `json:"errors"`
	P99Ms    float64 `json:"p99Ms"`
}

type apiCompare struct {
	Failing    int64 `json:"failing"`
	Healthy    int64 `json:"healthy"`
	Dimensions []struct {
		Key          string  `json:"key"`
		Value        string  `json:"value"`
		Failing      float64 `json:"failing"`
		Healthy      float64 `json:"healthy"`
		Lift         float64 `json:"lift"`
		FailingCount int64   `json:"failingCount"`
		HealthyCount int64   `json:"healthyCount"`
	} `json:"dimensions"`
}

type apiClockPair struct {
	HostA  string `json:"hostA"`
	HostB  string `json:"hostB"`
	Points []struct {
		Time     uint64  `json:"timeUnixNano,string"`
		OffsetMs float64 `json:"offsetMs"`
		Samples  int64   `json:"samples"`
	} `json:"points"`
}

// client calls the query API at base, with token as a bearer token when set.
type client struct {
	base  *url.URL
	token string
	http  *http.Client
}

// apiError is an answer other than 200: its status and the API's message.
type apiError struct {
	Status int
	Msg    string
}

func (e *apiError) Error() string { return fmt.Sprintf("tracesift answered %d: %s", e.Status, e.Msg) }

// maxAnswer bounds an answer read (a trace of 10 000 spans with its logs
// is a few MB).
const maxAnswer = 256 << 20

// get reads path?params into v.
func (c *client) get(ctx context.Context, path string, params url.Values, v any) error {
	u := c.base.JoinPath(path)
	u.RawQuery = params.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("calling tracesift at %s: %w", c.base.Redacted(), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return fmt.Errorf("reading tracesift's answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(body, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(body))
			if len(e.Error) > 200 {
				e.Error = e.Error[:200] + "…"
			}
		}
		return &apiError{Status: resp.StatusCode, Msg: e.Error}
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("tracesift's answer to %s is not what this data source reads: %w", path, err)
	}
	return nil
}

// isStatus reports whether err is an answer with that status.
func isStatus(err error, status int) bool {
	var e *apiError
	return errors.As(err, &e) && e.Status == status
}

// timeParams are a query's window as the API takes it.
func timeParams(from, to time.Time) url.Values {
	return url.Values{"start": {fmt.Sprint(from.UnixNano())}, "end": {fmt.Sprint(to.UnixNano())}}
}
