package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
)

// Query types (DataQuery.QueryType, set by the query editor).
const (
	queryTrace        = "trace"
	querySearch       = "search"
	queryLogs         = "logs"
	queryFindings     = "findings"
	queryServiceGraph = "serviceGraph"
	queryRED          = "red"
	queryCompare      = "compare"
	queryClockSkew    = "clockSkew"
)

// QueryTypes are the query types the data source answers.
var QueryTypes = []string{queryTrace, querySearch, queryLogs, queryFindings, queryServiceGraph, queryRED, queryCompare,
	queryClockSkew}

// QueryModel is a query as the editor saves it; each type reads its own
// fields.
type QueryModel struct {
	TraceID     string `json:"traceId,omitempty"`
	Service     string `json:"service,omitempty"`
	Operation   string `json:"operation,omitempty"`
	MinDuration string `json:"minDuration,omitempty"`
	MaxDuration string `json:"maxDuration,omitempty"`
	ErrorsOnly  bool   `json:"errorsOnly,omitempty"`
	// Attributes are key=value pairs separated by spaces (search: on some
	// span; logs: on the line or its resource).
	Attributes string `json:"attributes,omitempty"`
	Words      string `json:"words,omitempty"` // logs: every word, in the body
	Severity   string `json:"severity,omitempty"`
	Kind       string `json:"kind,omitempty"`    // findings
	GroupBy    string `json:"groupBy,omitempty"` // red: instance, operation, version or a dimension
	Limit      int    `json:"limit,omitempty"`
}

// QueryData answers each query on its own: one failing does not fail the
// others.
func (d *Datasource) QueryData(ctx context.Context, req *backend.QueryDataRequest) (*backend.QueryDataResponse, error) {
	resp := backend.NewQueryDataResponse()
	for _, q := range req.Queries {
		resp.Responses[q.RefID] = d.query(ctx, q)
	}
	return resp, nil
}

// badQuery is a query that cannot be answered as written.
type badQuery string

func (d *Datasource) query(ctx context.Context, q backend.DataQuery) backend.DataResponse {
	var m QueryModel
	if err := json.Unmarshal(q.JSON, &m); err != nil {
		return backend.ErrDataResponse(backend.StatusBadRequest, "the query is not tracesift's: "+err.Error())
	}
	var (
		frames data.Frames
		err    error
	)
	switch q.QueryType {
	case queryTrace:
		frames, err = d.trace(ctx, q, m)
	case querySearch, "":
		frames, err = d.search(ctx, q, m)
	case queryLogs:
		frames, err = d.logs(ctx, q, m)
	case queryFindings:
		frames, err = d.findings(ctx, q, m)
	case queryServiceGraph:
		frames, err = d.serviceGraph(ctx, q)
	case queryRED:
		frames, err = d.red(ctx, q, m)
	case queryCompare:
		frames, err = d.compare(ctx, q, m)
	case queryClockSkew:
		frames, err = d.clockSkew(ctx, q)
	default:
		return backend.ErrDataResponse(backend.StatusBadRequest, fmt.Sprintf("unknown query type %q", q.QueryType))
	}
	if bad := badQuery(""); errors.As(err, &bad) {
		return backend.ErrDataResponse(backend.StatusBadRequest, string(bad))
	}
	if err != nil {
		status := backend.StatusBadGateway
		if e := (*apiError)(nil); errors.As(err, &e) {
			switch e.Status {
			case http.StatusBadRequest:
				status = backend.StatusBadRequest
			case http.StatusNotFound:
				status = backend.StatusNotFound
			case http.StatusUnauthorized:
				status = backend.StatusUnauthorized
			}
		}
		return backend.ErrDataResponseWithSource(status, backend.ErrorSourceDownstream, err.Error())
	}
	return backend.DataResponse{Frames: frames}
}

func (e badQuery) Error() string { return string(e) }

// attributeParams reads "k=v k2=v2" into attr.k=v parameters.
func attributeParams(s string, into url.Values) error {
	for _, kv := range strings.Fields(s) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return badQuery(fmt.Sprintf("attribute filter %q: want key=value", kv))
		}
		into.Add("attr."+k, v)
	}
	return nil
}

// setLimit adds limit when the query has one.
func setLimit(m QueryModel, p url.Values) {
	if m.Limit > 0 {
		p.Set("limit", fmt.Sprint(m.Limit))
	}
}

// step is a RED query's point width: Grafana's interval, at least a second.
func step(q backend.DataQuery) time.Duration {
	return max(q.Interval.Round(time.Second), time.Second)
}
