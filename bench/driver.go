package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// LoadConfig says where and how hard to send.
type LoadConfig struct {
	// Endpoint is the OTLP/gRPC address (host:port), plaintext.
	Endpoint string
	// Conns is the number of gRPC connections, each with its own sender
	// goroutine sending one request at a time, as fast as the server answers.
	Conns int
	// Seed makes the load reproducible: the same seed sends the same traces
	// (ids differ only in time-independent ways: they come from the seed too).
	Seed uint64
	// RequestTimeout bounds one export call.
	RequestTimeout time.Duration
	// RejectBackoff is the pause of a sender after a rejected request, so that
	// an overloaded server is not hammered in a tight loop.
	RejectBackoff time.Duration
	// Rate caps the offered load in spans per second over all connections;
	// 0 sends as fast as the server answers. A fixed rate compares systems at
	// the same load rather than each at its own saturation.
	Rate float64
}

// Counts is a snapshot of what a Load has sent.
type Counts struct {
	Requests      int64 // accepted (OK) export calls
	SpansAccepted int64 // spans in accepted calls, less partial-success rejections
	// SpansPartiallyRejected are spans an OK response reported as rejected.
	SpansPartiallyRejected int64
	// Rejected counts failed export calls by gRPC code.
	Rejected map[codes.Code]int64
}

// RejectedTotal is the number of failed export calls.
func (c Counts) RejectedTotal() int64 {
	var n int64
	for _, v := range c.Rejected {
		n += v
	}
	return n
}

// RejectedString lists the failed calls by code, "none" when there were none.
func (c Counts) RejectedString() string {
	if len(c.Rejected) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(c.Rejected))
	for code, n := range c.Rejected {
		parts = append(parts, fmt.Sprintf("%s=%d", code, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// Load is a running load: Conns senders, each with its own Generator.
type Load struct {
	cfg   LoadConfig
	conns []*grpc.ClientConn

	requests, spans, partial atomic.Int64

	mu          sync.Mutex
	rejected    map[codes.Code]int64
	interesting []SentTrace
	firstErr    error // first rejection, with its message, for the report

	// nextSlot is when (unix ns) the next request may go out under Rate.
	nextSlot atomic.Int64

	// gate holds senders between cycles (Hold, Release); parked counts
	// those waiting at it, live those still running.
	gate         sync.Mutex
	gateChanged  *sync.Cond
	held         bool
	parked, live int

	stopping chan struct{}
	stopOnce sync.Once
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

// StartLoad dials cfg.Conns connections and starts sending at once.
func StartLoad(cfg LoadConfig) (*Load, error) {
	if cfg.Conns <= 0 {
		return nil, fmt.Errorf("load: Conns must be positive, got %d", cfg.Conns)
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 30 * time.Second
	}
	if cfg.RejectBackoff <= 0 {
		cfg.RejectBackoff = 20 * time.Millisecond
	}
	l := &Load{cfg: cfg, rejected: map[codes.Code]int64{}, stopping: make(chan struct{}), live: cfg.Conns}
	l.gateChanged = sync.NewCond(&l.gate)
	for range cfg.Conns {
		cc, err := grpc.NewClient(cfg.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			l.closeConns()
			return nil, fmt.Errorf("load: dialing %s: %w", cfg.Endpoint, err)
		}
		l.conns = append(l.conns, cc)
	}
	// Generators are built before any sender starts so that building them
	// (about a second of CPU each) is not part of anyone's measured window.
	gens := make([]*Generator, cfg.Conns)
	for i := range gens {
		gens[i] = NewGenerator(i, cfg.Seed)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	for i, cc := range l.conns {
		client := ptraceotlp.NewGRPCClient(cc)
		g := gens[i]
		l.wg.Go(func() { l.send(ctx, client, g) })
	}
	return l, nil
}

// send runs cycles until Stop. A cycle that was started is finished, so
// every trace recorded as interesting was sent whole (unless a request of it
// was rejected, which the recall check then shows).
func (l *Load) send(ctx context.Context, client ptraceotlp.GRPCClient, g *Generator) {
	defer func() {
		l.gate.Lock()
		l.live--
		l.gateChanged.Broadcast()
		l.gate.Unlock()
	}()
	var interesting []SentTrace
	for {
		l.waitGate()
		select {
		case <-l.stopping:
			return
		default:
		}
		interesting = g.NextCycle(time.Now(), interesting[:0])
		complete := true
		for i := range g.Requests() {
			if !l.export(ctx, client, g.Request(i), int64(g.RequestSpans(i))) {
				complete = false
				if ctx.Err() != nil {
					return
				}
			}
		}
		if complete {
			l.mu.Lock()
			l.interesting = append(l.interesting, interesting...)
			l.mu.Unlock()
		}
	}
}

// waitGate returns once the load is not held (or is stopping).
func (l *Load) waitGate() {
	l.gate.Lock()
	defer l.gate.Unlock()
	for l.held {
		l.parked++
		l.gateChanged.Broadcast()
		l.gateChanged.Wait()
		l.parked--
	}
}

// Hold stops every sender before its next cycle and returns once all are
// stopped: cycles under way are finished, so no trace is split over the
// pause, and nothing is sent until Release.
func (l *Load) Hold() {
	l.gate.Lock()
	defer l.gate.Unlock()
	l.held = true
	for l.parked < l.live {
		l.gateChanged.Wait()
	}
}

// Release lets the senders go on. Under Rate, the schedule starts again
// from now: the pause is not made up by a burst.
func (l *Load) Release() {
	l.gate.Lock()
	l.held = false
	l.gateChanged.Broadcast()
	l.gate.Unlock()
}

// pace waits for the request's slot under cfg.Rate. Slots are handed out
// from a shared schedule that never runs ahead of now, so a server slower
// than the rate is not hit by a catch-up burst.
func (l *Load) pace(ctx context.Context, spans int64) bool {
	if l.cfg.Rate <= 0 {
		return true
	}
	cost := int64(float64(spans) / l.cfg.Rate * 1e9)
	var slot int64
	for {
		cur := l.nextSlot.Load()
		slot = max(cur, time.Now().UnixNano())
		if l.nextSlot.CompareAndSwap(cur, slot+cost) {
			break
		}
	}
	wait := time.Until(time.Unix(0, slot))
	if wait <= 0 {
		return true
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-l.stopping:
		return false
	}
}

func (l *Load) export(ctx context.Context, client ptraceotlp.GRPCClient, req ptraceotlp.ExportRequest, spans int64) bool {
	if !l.pace(ctx, spans) {
		return false
	}
	callCtx, cancel := context.WithTimeout(ctx, l.cfg.RequestTimeout)
	resp, err := client.Export(callCtx, req)
	cancel()
	if err == nil {
		rejected := resp.PartialSuccess().RejectedSpans()
		l.requests.Add(1)
		l.spans.Add(spans - rejected)
		l.partial.Add(rejected)
		return true
	}
	code := status.Code(err)
	if errors.Is(err, context.Canceled) || ctx.Err() != nil {
		return false // Stop's hard deadline, not the server's answer
	}
	l.mu.Lock()
	l.rejected[code]++
	if l.firstErr == nil {
		l.firstErr = err
	}
	l.mu.Unlock()
	select {
	case <-time.After(l.cfg.RejectBackoff):
	case <-ctx.Done():
	}
	return false
}

// Counts returns what was sent so far.
func (l *Load) Counts() Counts {
	c := Counts{
		Requests:               l.requests.Load(),
		SpansAccepted:          l.spans.Load(),
		SpansPartiallyRejected: l.partial.Load(),
		Rejected:               map[codes.Code]int64{},
	}
	l.mu.Lock()
	for k, v := range l.rejected {
		c.Rejected[k] = v
	}
	l.mu.Unlock()
	return c
}

// FirstError is the first failed export call, nil if none failed.
func (l *Load) FirstError() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.firstErr
}

// Interesting returns the error and slow traces sent whole so far.
func (l *Load) Interesting() []SentTrace {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.interesting)
}

// Stop lets every sender finish its current cycle, waiting at most grace;
// after that, calls in flight are cancelled. It closes the connections.
// Calls after the first do nothing.
func (l *Load) Stop(grace time.Duration) {
	l.stopOnce.Do(func() { l.stop(grace) })
}

func (l *Load) stop(grace time.Duration) {
	close(l.stopping)
	l.Release()
	done := make(chan struct{})
	go func() {
		l.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(grace):
		l.cancel()
		<-done
	}
	l.cancel()
	l.closeConns()
}

func (l *Load) closeConns() {
	for _, cc := range l.conns {
		_ = cc.Close()
	}
}
