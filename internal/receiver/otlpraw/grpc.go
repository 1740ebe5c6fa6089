package otlpraw

import (
	"context"
	"fmt"

	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"

	"github.com/tracesift/tracesift/internal/tenant"
)

// Full names of the OTLP services and methods this receiver serves.
const (
	traceServiceName  = "opentelemetry.proto.collector.trace.v1.TraceService"
	logsServiceName   = "opentelemetry.proto.collector.logs.v1.LogsService"
	traceExportMethod = "/" + traceServiceName + "/Export"
	logsExportMethod  = "/" + logsServiceName + "/Export"
)

// rawMessage is a message that crosses gRPC as its encoded bytes: the
// handlers decode requests into it, so a trace request reaches the sampler
// exactly as it came off the wire, never unmarshalled.
type rawMessage struct {
	b []byte
	// buf holds the reference that keeps b valid after gRPC frees the
	// received data; set by rawCodec.Unmarshal, released by free.
	buf mem.Buffer
}

// free returns the received bytes to gRPC's pool. b must not be used after.
func (m *rawMessage) free() {
	if m.buf != nil {
		m.buf.Free()
		m.buf = nil
	}
	m.b = nil
}

// emptyMessage is an empty protobuf message: both ExportTraceServiceResponse
// and ExportLogsServiceResponse with partial_success unset encode to no bytes.
type emptyMessage struct{}

// rawCodec is the gRPC codec of this receiver's server (installed with
// grpc.ForceServerCodecV2, so it affects no other server in the process):
// rawMessage and emptyMessage pass through as bytes, every other message
// (other services a middleware registers, health checks, reflection) goes to
// the codec registered for "proto", which is pdata's or gRPC's own.
type rawCodec struct {
	fallback encoding.CodecV2
}

var _ encoding.CodecV2 = rawCodec{}

func newRawCodec() rawCodec {
	return rawCodec{fallback: encoding.GetCodecV2(proto.Name)}
}

func (c rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	switch m := v.(type) {
	case emptyMessage, *emptyMessage:
		return nil, nil
	case *rawMessage:
		if len(m.b) == 0 {
			return nil, nil
		}
		return mem.BufferSlice{mem.SliceBuffer(m.b)}, nil
	}
	if c.fallback == nil {
		return nil, fmt.Errorf("otlpraw codec: no %q codec registered for %T", proto.Name, v)
	}
	return c.fallback.Marshal(v)
}

func (c rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	switch m := v.(type) {
	case *rawMessage:
		// A second message (a unary call checks there is none) must not
		// leak the first one's buffer.
		m.free()
		// A message of one buffer is referenced, not copied; one read in
		// several frames is gathered into a buffer of requestPool.
		m.buf = data.MaterializeToBuffer(&receivedRequests)
		m.b = m.buf.ReadOnlyData()
		return nil
	case *emptyMessage:
		return nil
	}
	if c.fallback == nil {
		return fmt.Errorf("otlpraw codec: no %q codec registered for %T", proto.Name, v)
	}
	return c.fallback.Unmarshal(data, v)
}

// Name is "proto": it is the codec for content-subtype proto (and none).
func (rawCodec) Name() string { return proto.Name }

// grpcExporter is the server side of the two services, what the handlers
// below call; grpc.Server.RegisterService checks the receiver implements it.
type grpcExporter interface {
	exportTracesGRPC(ctx context.Context, req *rawMessage) (any, error)
	exportLogsGRPC(ctx context.Context, req *rawMessage) (any, error)
	// received is told when reading a request returned (see grpcrecv.go).
	received(ctx context.Context, sig signal, decErr error) error
}

// traceServiceDesc is TraceService with a handler that decodes the request
// into a rawMessage instead of an ExportTraceServiceRequest.
var traceServiceDesc = grpc.ServiceDesc{
	ServiceName: traceServiceName,
	HandlerType: (*grpcExporter)(nil),
	Methods:     []grpc.MethodDesc{{MethodName: "Export", Handler: traceExportHandler}},
	Streams:     []grpc.StreamDesc{},
	Metadata:    "opentelemetry/proto/collector/trace/v1/trace_service.proto",
}

var logsServiceDesc = grpc.ServiceDesc{
	ServiceName: logsServiceName,
	HandlerType: (*grpcExporter)(nil),
	Methods:     []grpc.MethodDesc{{MethodName: "Export", Handler: logsExportHandler}},
	Streams:     []grpc.StreamDesc{},
	Metadata:    "opentelemetry/proto/collector/logs/v1/logs_service.proto",
}

func traceExportHandler(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
	return unaryRaw(srv, ctx, dec, interceptor, traceExportMethod, signalTraces, grpcExporter.exportTracesGRPC)
}

func logsExportHandler(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
	return unaryRaw(srv, ctx, dec, interceptor, logsExportMethod, signalLogs, grpcExporter.exportLogsGRPC)
}

// unaryRaw is what protoc-gen-go-grpc generates for a unary method, with a
// rawMessage as the request: decode, then run the interceptors (client
// info, auth, middlewares) around the export. The received bytes go back to
// gRPC's pool when the call returns, hence "must not retain req". dec
// returns once the client has sent the whole request and half-closed: only
// then does the read timeout stop, before interceptors (auth) run.
func unaryRaw(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor,
	method string, sig signal, export func(grpcExporter, context.Context, *rawMessage) (any, error),
) (any, error) {
	in := &rawMessage{}
	e := srv.(grpcExporter)
	if err := e.received(ctx, sig, dec(in)); err != nil {
		// dec may have failed after decoding (no half-close).
		in.free()
		return nil, err
	}
	defer in.free()
	if interceptor == nil {
		return export(e, ctx, in)
	}
	info := &grpc.UnaryServerInfo{Server: srv, FullMethod: method}
	return interceptor(ctx, in, info, func(ctx context.Context, req any) (any, error) {
		m, ok := req.(*rawMessage)
		if !ok {
			return nil, status.Errorf(codes.Internal, "otlpraw: an interceptor replaced the request with a %T", req)
		}
		return export(e, ctx, m)
	})
}

// take holds a message's bytes in max_bytes_in_flight while it is handled
// (the caller releases them); when they do not fit it returns the answer.
func (r *otlpRaw) take(ctx context.Context, sig signal, req *rawMessage) *status.Status {
	if r.bodies.Budget.Take(int64(len(req.b))) {
		return nil
	}
	st := busy()
	r.record(ctx, sig, transportGRPC, st, nil)
	r.explain(ctx, rejectBusy, sig, transportGRPC, st.Message(), nil)
	return st
}

func (r *otlpRaw) exportTracesGRPC(ctx context.Context, req *rawMessage) (any, error) {
	if st := r.take(ctx, signalTraces, req); st != nil {
		return nil, st.Err()
	}
	defer r.bodies.Budget.Release(int64(len(req.b)))
	r.tel.TracesiftReceiverBytes.Add(ctx, int64(len(req.b)), r.tel.bytesAttrs[signalTraces]...)
	st := r.consumeTraces(ctx, req.b, transportGRPC, nil)
	if st != nil {
		return nil, st.Err()
	}
	return emptyMessage{}, nil
}

func (r *otlpRaw) exportLogsGRPC(ctx context.Context, req *rawMessage) (any, error) {
	if st := r.take(ctx, signalLogs, req); st != nil {
		return nil, st.Err()
	}
	defer r.bodies.Budget.Release(int64(len(req.b)))
	r.tel.TracesiftReceiverBytes.Add(ctx, int64(len(req.b)), r.tel.bytesAttrs[signalLogs]...)
	lr := plogotlp.NewExportRequest()
	var st *status.Status
	if err := lr.UnmarshalProto(req.b); err != nil {
		st = status.New(codes.InvalidArgument, "malformed OTLP logs request: "+err.Error())
	} else {
		tenant.StampLogs(ctx, lr.Logs())
		st = logsStatus(r.nextLogs.ConsumeLogs(ctx, lr.Logs()))
	}
	r.record(ctx, signalLogs, transportGRPC, st, nil)
	if st != nil {
		return nil, st.Err()
	}
	return emptyMessage{}, nil
}
