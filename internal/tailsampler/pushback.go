package tailsampler

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// pushbackRetryDelay is the delay suggested to refused clients: about the
// time a shard needs to decide its way back below its low-water mark.
const pushbackRetryDelay = time.Second

// pushback refuses a request that does not fit in shard i's share of
// max_buffered_bytes. The gRPC status carries RetryInfo; the OTLP receiver
// turns it into ResourceExhausted for gRPC clients and 429 with Retry-After
// for HTTP ones, both of which OTLP exporters retry.
func (p *sampler) pushback(ctx context.Context, i int, size int64) error {
	sh := p.shards[i]
	p.tel.TracesiftSamplerPushbacks.Add(ctx, 1)
	msg := fmt.Sprintf("tracesift_sampler: buffer full (shard %d holds %d of its %d bytes of `max_buffered_bytes`, "+
		"request needs %d more): retry later, or raise `max_buffered_bytes` or add sampler workers",
		i, sh.used.Load(), sh.budget, size)
	if p.pushbackLogged.CompareAndSwap(false, true) {
		p.logger.Warn("Refusing requests while the sampler buffer is full; clients are asked to retry "+
			"(counted in otelcol_tracesift_sampler_pushbacks, logged once)", zap.String("detail", msg))
	}
	st, err := status.New(codes.ResourceExhausted, msg).
		WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(pushbackRetryDelay)})
	if err != nil {
		return status.Error(codes.ResourceExhausted, msg)
	}
	return st.Err()
}
