package tailsampler

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"

	"github.com/tracesift/tracesift/internal/tailsampler/s2dict"
)

// plainRequest is an encoded request of n spans with repetitive attributes,
// like real traffic.
func plainRequest(t *testing.T, trace uint64, n int) []byte {
	t.Helper()
	var specs []spanSpec
	for i := range uint64(n) {
		specs = append(specs, spanSpec{trace: trace, span: i + 1, parent: i, dur: time.Millisecond,
			attrs: map[string]any{"http.route": "/api/orders/{id}", "http.request.method": "GET", "server.address": "orders.internal"}})
	}
	b, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(request(t, "orders", specs...))
	require.NoError(t, err)
	return b
}

func frameOf(cd *codec, plain []byte) []byte {
	block := cd.block(plain, &blockScratch{})
	f := make([]byte, frameSize(len(block)))
	putFrame(f, block)
	return f
}

func TestCodecsRoundTrip(t *testing.T) {
	var sample []byte
	for tr := uint64(100); len(sample) < 32<<10; tr++ {
		sample = append(sample, plainRequest(t, tr, 10)...)
	}
	codecs := map[string]*codec{"uncompressed": nil, "s2": {}, "s2 with dictionary": {dict: s2dict.NewEncoder(sample)}}
	a, b := plainRequest(t, 1, 3), plainRequest(t, 2, 40)
	for name, cd := range codecs {
		t.Run(name, func(t *testing.T) {
			fa, fb := frameOf(cd, a), frameOf(cd, b)
			var mem frameMemory
			joined := concatFrames(&mem, fa, fb)
			frames := joined.b
			got, err := cd.decode([]byte("prefix"), frames)
			require.NoError(t, err)
			assert.Equal(t, append(append([]byte("prefix"), a...), b...), got)

			if cd != nil {
				assert.Less(t, len(fb), len(b), "compressed")
			}
			_, err = cd.decode(nil, frames[:len(frames)-3])
			assert.ErrorIs(t, err, errCorruptFrame)
			_, err = cd.decode(nil, []byte{0xff})
			assert.ErrorIs(t, err, errCorruptFrame)
		})
	}
	// The dictionary earns its keep on small frames.
	plainS2 := frameOf(codecs["s2"], a)
	withDict := frameOf(codecs["s2 with dictionary"], a)
	assert.Less(t, len(withDict)*2, len(plainS2), "a dictionary at least halves a small frame here: %d vs %d", len(withDict), len(plainS2))
}

func TestDictTrainer(t *testing.T) {
	assert.Nil(t, newDictTrainer(false, 0, time.Minute, time.Now()).codecFor(make([]byte, 100<<10), 0, time.Now()), "buffer_compression off")

	tr := newDictTrainer(true, 0, time.Minute, time.Unix(1000, 0))
	now := time.Unix(1000, 0)
	first := tr.codecFor(bytes.Repeat([]byte("a"), 10<<10), 0, now)
	require.NotNil(t, first)
	assert.Nil(t, first.dict, "plain S2 until enough traffic was seen")
	second := tr.codecFor(bytes.Repeat([]byte("b"), 10<<10), 0, now)
	require.NotNil(t, second.dict, "trained once a quarter of a dictionary was collected")
	assert.Same(t, second, tr.codecFor(make([]byte, 100<<10), 0, now.Add(dictRefresh-time.Second)), "kept until dictRefresh")

	// Retraining takes a slice of each of several requests.
	later := now.Add(dictRefresh)
	var got *codec
	for i := range dictSampleSize / dictSamplePerCall {
		got = tr.codecFor(bytes.Repeat([]byte{byte('c' + i)}, 100<<10), 0, later)
		if i < dictSampleSize/dictSamplePerCall-1 {
			assert.Same(t, second, got, "request %d", i)
		}
	}
	assert.NotSame(t, second, got, "retrained")
	assert.Len(t, got.dict.Dict().Bytes(), dictSampleSize+1, "a full sample (plus its repeat offset)")
}

// A trace whose chunks straddle a retraining of the dictionary is re-encoded
// into one codec and kept whole, byte for byte.
func TestTraceStraddlingDictionaryRetrainIsKeptWhole(t *testing.T) {
	h := newHarness(t, testConfig())
	var sent []spanSpec
	for i := uint64(1); i <= 4; i++ {
		sent = append(sent, spanSpec{trace: 5, span: i, parent: i - 1, dur: time.Millisecond, err: i == 4,
			attrs: map[string]any{"n": fmt.Sprint(i)}})
	}
	h.consume(request(t, "svc", sent[:2]...))
	h.barrier()
	before := h.p.shards[0].traces[tid(5)].codec
	var sample []byte
	for tr := uint64(100); len(sample) < 32<<10; tr++ {
		sample = append(sample, plainRequest(t, tr, 10)...)
	}
	h.p.dicts.current.Store(&codec{dict: s2dict.NewEncoder(sample)})
	h.consume(request(t, "svc", sent[2:]...))
	h.barrier()
	tr := h.p.shards[0].traces[tid(5)]
	require.NotNil(t, tr)
	assert.Same(t, before, tr.codec, "the trace keeps its codec")
	assertKeptWhole(t, h, sent)
}

func TestFrameBytesMetric(t *testing.T) {
	h := newHarness(t, testConfig())
	for tr := uint64(1); tr <= 50; tr++ {
		var specs []spanSpec
		for i := range uint64(10) {
			specs = append(specs, spanSpec{trace: tr, span: i + 1, parent: i, dur: time.Millisecond,
				attrs: map[string]any{"http.route": "/api/orders/{id}", "server.address": "orders.internal"}})
		}
		h.consume(request(t, "svc", specs...))
	}
	h.barrier()
	plain := h.counter("otelcol_tracesift_sampler_frame_bytes", attribute.String("form", "plain"))
	stored := h.counter("otelcol_tracesift_sampler_frame_bytes", attribute.String("form", "stored"))
	assert.Positive(t, stored)
	assert.Less(t, stored*2, plain, "repetitive spans compress at least 2×: %d → %d", plain, stored)
	var used int64
	for _, sh := range h.p.shards {
		used += sh.used.Load()
	}
	assert.Equal(t, h.p.mem.inUse.Load()+50*chunkOverhead, used, "the buffer accounts the blocks holding the stored bytes")
	assert.InDelta(t, stored, h.p.mem.inUse.Load(), float64(stored)/8, "blocks round frames up by at most 12.5 %")
	require.NoError(t, h.p.Shutdown(context.Background()))
}

// buffer_compression_above: frames are stored plain until the buffer holds
// the share, compressed from then on, and plain again below three quarters
// of it; the governor's grace starts when compression does.
func TestCompressionAbove(t *testing.T) {
	start := time.Unix(1000, 0)
	tr := newDictTrainer(true, 1000, time.Minute, start)
	plain := make([]byte, 100)
	assert.Nil(t, tr.codecFor(plain, 0, start), "an empty buffer")
	assert.Nil(t, tr.codecFor(plain, 999, start))
	on := start.Add(time.Hour)
	assert.NotNil(t, tr.codecFor(plain, 1000, on), "the buffer holds the share")
	assert.Equal(t, on.UnixNano(), tr.gov.resumedAt.Load(), "relief counts against compression from now on")
	assert.NotNil(t, tr.codecFor(plain, 750, on), "still above three quarters of it")
	assert.Nil(t, tr.codecFor(plain, 749, on), "below: plain again")
	assert.Nil(t, tr.codecFor(plain, 999, on))
}

// A trace whose first chunk came while the buffer was nearly empty (stored
// plain) and whose last came once it was past buffer_compression_above
// (compressed) is kept whole, byte for byte.
func TestTraceStraddlingCompressionAboveIsKeptWhole(t *testing.T) {
	cfg := testConfig()
	cfg.MaxBufferedBytes = 4 << 20
	cfg.BufferCompressionAbove = 0.25
	h := newHarness(t, cfg)
	var sent []spanSpec
	for i := uint64(1); i <= 4; i++ {
		sent = append(sent, spanSpec{trace: 5, span: i, parent: i - 1, dur: time.Millisecond, err: i == 4,
			attrs: map[string]any{"n": fmt.Sprint(i)}})
	}
	h.consume(request(t, "svc", sent[:2]...))
	h.barrier()
	require.Nil(t, h.p.shards[0].traces[tid(5)].codec, "stored plain while the buffer is nearly empty")
	assert.InDelta(t, h.counter("otelcol_tracesift_sampler_frame_bytes", attribute.String("form", "plain")),
		h.counter("otelcol_tracesift_sampler_frame_bytes", attribute.String("form", "stored")), 4,
		"plain frames: their bytes and a length prefix")

	// Healthy traces until the buffer holds a quarter of its bound.
	for n := uint64(100); h.p.buffered() < cfg.MaxBufferedBytes/4; n += 50 {
		h.consume(ptraceFlood(t, n, 50))
		h.barrier()
	}
	plainBefore := h.counter("otelcol_tracesift_sampler_frame_bytes", attribute.String("form", "plain"))
	storedBefore := h.counter("otelcol_tracesift_sampler_frame_bytes", attribute.String("form", "stored"))
	h.consume(request(t, "svc", sent[2:]...))
	h.barrier()
	assert.Less(t, h.counter("otelcol_tracesift_sampler_frame_bytes", attribute.String("form", "stored"))-storedBefore,
		h.counter("otelcol_tracesift_sampler_frame_bytes", attribute.String("form", "plain"))-plainBefore,
		"compressed once the buffer holds the share")
	require.Nil(t, h.p.shards[0].traces[tid(5)].codec, "the trace keeps its codec")
	assertKeptWhole(t, h, sent)
}

// assertKeptWhole decides the harness's traces and checks that the one trace
// sent in two requests, sent[:2] then the rest, reached the sink byte for
// byte and left nothing buffered.
func assertKeptWhole(t *testing.T, h *harness, sent []spanSpec) {
	t.Helper()
	h.decideAfterWait()
	want := ptrace.NewTraces()
	appendResource(t, want, "svc", sent[:2]...)
	appendResource(t, want, "svc", sent[2:]...)
	require.Len(t, h.sink.AllTraces(), 1)
	assert.Equal(t, want, h.sink.AllTraces()[0])
	assert.Zero(t, h.p.shards[0].used.Load())
}
