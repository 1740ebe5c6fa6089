package analyze

// The model below is what every analyzer reads: one whole trace, already
// decoded. It carries only what analysis needs, with ids as lowercase hex
// strings (as in the query API), so golden traces under testdata/ are plain
// JSON and findings name spans the way the API does.

// Kind is a span's kind, as in OTLP.
type Kind int

// Span kinds, numbered as in OTLP's SpanKind.
const (
	KindUnspecified Kind = 0
	KindInternal    Kind = 1
	KindServer      Kind = 2
	KindClient      Kind = 3
	KindProducer    Kind = 4
	KindConsumer    Kind = 5
)

// StatusCode is a span's status code, as in OTLP.
type StatusCode int

// Status codes, numbered as in OTLP's Status.StatusCode.
const (
	StatusUnset StatusCode = 0
	StatusOK    StatusCode = 1
	StatusError StatusCode = 2
)

// Span is one span of a trace.
type Span struct {
	SpanID        string     `json:"spanId"`
	ParentSpanID  string     `json:"parentSpanId,omitempty"`
	Name          string     `json:"name"`
	Kind          Kind       `json:"kind"`
	Service       string     `json:"service"`
	Host          string     `json:"host,omitempty"`
	StartUnixNano uint64     `json:"start"`
	EndUnixNano   uint64     `json:"end"`
	StatusCode    StatusCode `json:"statusCode,omitempty"`
	StatusMessage string     `json:"statusMessage,omitempty"`
	// Attributes are the span's attributes rendered as strings (numbers in
	// decimal, booleans as true/false).
	Attributes map[string]string `json:"attributes,omitempty"`
	Events     []Event           `json:"events,omitempty"`
	Links      []Link            `json:"links,omitempty"`
}

// Event is a span event; exceptions are events named "exception".
type Event struct {
	Name         string            `json:"name"`
	TimeUnixNano uint64            `json:"time"`
	Attributes   map[string]string `json:"attributes,omitempty"`
}

// Link points at a span of this or another trace (a messaging consumer links
// to the producer whose message it handled).
type Link struct {
	TraceID string `json:"traceId"`
	SpanID  string `json:"spanId"`
}

// Trace is one whole trace.
type Trace struct {
	TraceID string `json:"traceId"`
	Spans   []Span `json:"spans"`
}

// Finding is what an analyzer says about a trace; the fields are the query
// API's finding (README, "Query API").
type Finding struct {
	Kind    string   `json:"kind"`
	SpanIDs []string `json:"spanIds"`
	Service string   `json:"service"`
	Value   float64  `json:"value"`
	Summary string   `json:"summary"`
}

// Finding kinds.
const (
	KindSlowestHop        = "slowest_hop"
	KindCriticalPath      = "critical_path"
	KindRetryFanout       = "retry_fanout"
	KindTimeout           = "timeout"
	KindClockSkew         = "clock_skew"
	KindErrorOrigin       = "error_origin"
	KindBrokenPropagation = "broken_propagation"
	KindFanout            = "fanout"
)
