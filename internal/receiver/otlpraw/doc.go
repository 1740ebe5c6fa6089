// Package otlpraw is the tracesift_otlp receiver: a drop-in for the
// Collector's otlp receiver, for traces and logs, that hands trace requests
// to the tail sampler as the raw bytes that came off the wire.
//
// Why: the Collector's otlp receiver unmarshals every request into pdata,
// allocating for every span, before the sampler drops most of it.
// tracesift's sampler reads requests with otlpwire, a protobuf walk that
// allocates nothing per span, and decodes in full only what it keeps. So this receiver never decodes a protobuf trace
// request: its gRPC services are hand-written ServiceDescs whose handlers
// decode into a raw-bytes message through the server's own codec, and its
// HTTP handler passes the body as read. The sampler validates the bytes
// (otlpwire.Scan accepts exactly what pdata accepts) and reports a
// malformed request by an error wrapping otlpwire.ErrMalformed.
//
// Only OTLP/JSON trace requests are decoded (with pdata) and re-encoded to
// protobuf. Logs are all stored, so they are decoded with pdata and go to
// the logs pipeline as usual.
//
// The traces pipeline of this receiver ends in the sampler: the receiver
// creates it (with its `sampler` config section), starts it before the
// servers and shuts it down after them, so that no request reaches a
// sampler that is not running and everything it buffered is flushed to the
// pipeline's next consumer on shutdown.
package otlpraw

//go:generate mdatagen metadata.yaml
