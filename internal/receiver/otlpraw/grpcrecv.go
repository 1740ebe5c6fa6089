package otlpraw

import (
	"context"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"
)

// streamReserve is what an export stream holds in max_bytes_in_flight from
// the moment it opens until its request has arrived (then the request's own
// size is held, see take): one HTTP/2 frame. gRPC does not tell how much of
// a message has arrived, so this is all a stream in reception can be charged
// without idle streams shutting everyone else out.
const streamReserve = 16 << 10

// States of a recvGuard: it leaves receiving exactly once.
const (
	guardReceiving uint32 = iota
	guardReceived         // the handler has the whole request
	guardExpired          // cut by the read timeout
	guardEnded            // the stream ended otherwise (client gone, refused by gRPC)
)

// recvGuard is the context an export stream is read under, installed by
// tapGRPC: the transport's reader for the stream watches this very context
// (internal/transport/http2_server.go operateHeaders builds recvBufferReader
// from the tap's context; a stats handler's TagRPC comes too late for that),
// so cancelling it aborts the read and drops what the stream buffered.
type recvGuard struct {
	context.Context
	cancel context.CancelFunc
	r      *otlpRaw
	sig    signal
	state  atomic.Uint32
	timer  *time.Timer
	// unregister removes the context.AfterFunc that releases the guard if
	// the stream ends before its request arrived.
	unregister func() bool
}

type guardKey struct{}

// Value makes the guard findable from the handler's context.
func (g *recvGuard) Value(key any) any {
	if key == (guardKey{}) {
		return g
	}
	return g.Context.Value(key)
}

// Err makes the transport answer a stream cut by the read timeout with
// DeadlineExceeded rather than Canceled (ContextErr in internal/transport).
func (g *recvGuard) Err() error {
	if g.state.Load() == guardExpired {
		return context.DeadlineExceeded
	}
	return g.Context.Err()
}

// tapGRPC runs as each stream opens, on the connection's reader goroutine
// (grpc.InTapHandle): an export stream is refused while max_bytes_in_flight
// has no room for its reserve, otherwise read under a recvGuard.
func (r *otlpRaw) tapGRPC(ctx context.Context, info *tap.Info) (context.Context, error) {
	var sig signal
	switch {
	case info.FullMethodName == traceExportMethod && r.sampler != nil:
		sig = signalTraces
	case info.FullMethodName == logsExportMethod && r.nextLogs != nil:
		sig = signalLogs
	default:
		// Not ours, or Unimplemented at once.
		return ctx, nil
	}
	if !r.bodies.Budget.Take(streamReserve) {
		st := busy()
		r.record(ctx, sig, transportGRPC, st, nil)
		r.explain(ctx, rejectBusy, sig, transportGRPC, st.Message(), nil)
		return ctx, st.Err()
	}
	r.inReception.Add(1)
	g := &recvGuard{r: r, sig: sig}
	g.Context, g.cancel = context.WithCancel(ctx)
	// The timer first: expire touches no field set after it, and the
	// AfterFunc below may run at once (a grpc-timeout already past).
	g.timer = time.AfterFunc(r.grpcReadTimeout, g.expire)
	// On the transport's context, which it cancels whenever the stream
	// ends (expire releases by itself); this shares its children map.
	g.unregister = context.AfterFunc(ctx, g.ended)
	return g, nil
}

// finish moves the guard out of receiving and gives its reserve back;
// false when something else did first.
func (g *recvGuard) finish(to uint32) bool {
	if !g.state.CompareAndSwap(guardReceiving, to) {
		return false
	}
	g.timer.Stop()
	g.release()
	return true
}

func (g *recvGuard) release() {
	g.r.bodies.Budget.Release(streamReserve)
	g.r.inReception.Add(-1)
}

// ended releases a guard whose stream ended before its request arrived.
func (g *recvGuard) ended() { g.finish(guardEnded) }

// expire cuts a stream whose request has not arrived within the read
// timeout: counted first, so that whoever sees the cut sees the count.
func (g *recvGuard) expire() {
	if g.Context.Err() != nil || !g.state.CompareAndSwap(guardReceiving, guardExpired) {
		return // ended otherwise
	}
	st := status.Newf(codes.DeadlineExceeded, "the request message did not arrive in full within %v", g.r.grpcReadTimeout)
	g.r.record(g, g.sig, transportGRPC, st, nil)
	g.r.explain(g, rejectReadTimeout, g.sig, transportGRPC, st.Message(), nil)
	g.cancel()
	g.release()
}

// received is called by the handler once reading the request returned
// (decErr from dec): the read timeout no longer applies, and a failed read
// is counted. It returns the error to answer with, nil to go on.
func (r *otlpRaw) received(ctx context.Context, sig signal, decErr error) error {
	g, _ := ctx.Value(guardKey{}).(*recvGuard)
	if g != nil {
		if decErr == nil && g.finish(guardReceived) {
			// Spares the AfterFunc's goroutine when the stream ends.
			g.unregister()
			return nil
		}
		g.finish(guardEnded)
		if g.state.Load() == guardExpired {
			// Counted and explained by expire; the client has its answer.
			if decErr == nil {
				decErr = status.Error(codes.DeadlineExceeded, context.DeadlineExceeded.Error())
			}
			return decErr
		}
	}
	if decErr == nil {
		return nil
	}
	st := status.Convert(decErr)
	if st.Code() == codes.ResourceExhausted {
		// gRPC refused a message over max_recv_msg_size_mib (before or
		// after decompression): the client's fault, as HTTP's 413.
		r.reject(ctx, rejectTooLargeGRPC, sig, transportGRPC, st.Message(), nil)
	} else {
		// The client went away or gave up mid-message, or sent a corrupt one.
		r.tel.TracesiftReceiverRequests.Add(ctx, 1, r.tel.requestAttrs[sig][transportGRPC][outcomeError]...)
	}
	return decErr
}
