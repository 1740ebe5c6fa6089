package s2dict

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// request is an encoded OTLP request of one trace's spans from one service,
// shaped like the sampler's frames: random ids and times, repetitive names
// and attributes.
func request(t testing.TB, rng *rand.Rand, spans int) []byte {
	t.Helper()
	services := []string{"checkout", "orders", "payments", "inventory"}
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	svc := services[rng.IntN(len(services))]
	rs.Resource().Attributes().PutStr("service.name", svc)
	rs.Resource().Attributes().PutStr("host.name", fmt.Sprintf("%s-%d", svc, rng.IntN(8)))
	rs.Resource().Attributes().PutStr("telemetry.sdk.language", "go")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp")
	var tid pcommon.TraceID
	for i := range tid {
		tid[i] = byte(rng.Uint32())
	}
	start := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC).Add(time.Duration(rng.Int64N(int64(time.Hour))))
	for i := range spans {
		s := ss.Spans().AppendEmpty()
		s.SetTraceID(tid)
		var sid pcommon.SpanID
		for j := range sid {
			sid[j] = byte(rng.Uint32())
		}
		s.SetSpanID(sid)
		if i > 0 {
			s.SetParentSpanID(pcommon.SpanID{1, 2, 3, 4, 5, 6, 7, byte(i)})
		}
		s.SetName(fmt.Sprintf("GET /api/%s/{id}", svc))
		s.SetKind(ptrace.SpanKindServer)
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Duration(rng.Int64N(int64(50 * time.Millisecond))))))
		a := s.Attributes()
		a.PutStr("http.request.method", "GET")
		a.PutStr("http.route", "/api/"+svc+"/{id}")
		a.PutInt("http.response.status_code", 200)
		a.PutStr("server.address", svc+".internal")
		a.PutStr("url.path", fmt.Sprintf("/api/%s/%d", svc, rng.IntN(100000)))
		a.PutStr("user_agent.original", "Go-http-client/1.1")
		a.PutStr("app.order.id", fmt.Sprintf("ord-%d", rng.IntN(1000000)))
		a.PutInt("net.peer.port", int64(30000+rng.IntN(30000)))
		a.PutStr("network.protocol.version", "1.1")
		a.PutBool("app.cache.hit", rng.IntN(2) == 0)
	}
	b, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	return b
}

// traffic returns n requests of 1 to 4 spans and a dictionary sample made of
// other requests, as the sampler trains it.
func traffic(t testing.TB, n int) (frames [][]byte, sample []byte) {
	rng := rand.New(rand.NewPCG(1, 2))
	for len(sample) < s2.MaxDictSize {
		sample = append(sample, request(t, rng, 1+rng.IntN(4))...)
	}
	for range n {
		frames = append(frames, request(t, rng, 1+rng.IntN(4)))
	}
	return frames, sample
}

func roundTrip(t testing.TB, e *Encoder, src []byte, tab *Table) []byte {
	t.Helper()
	block := e.Encode(nil, src, tab)
	got, err := e.Dict().Decode(nil, block)
	require.NoError(t, err, "decoding a block of %d bytes", len(src))
	require.True(t, bytes.Equal(src, got), "a block of %d bytes decodes to itself", len(src))
	return block
}

func TestRoundTripRealisticFrames(t *testing.T) {
	frames, sample := traffic(t, 300)
	e := NewEncoder(sample)
	require.NotNil(t, e)
	var tab Table
	ours, theirs, plain := 0, 0, 0
	for _, f := range frames {
		ours += len(roundTrip(t, e, f, &tab))
		theirs += len(e.Dict().Encode(nil, f))
		plain += len(f)
	}
	t.Logf("%d frames, %d bytes: %d compressed here, %d by S2's dictionary encoder", len(frames), plain, ours, theirs)
	assert.Less(t, ours*2, plain, "at least halves frames of this shape")
	assert.LessOrEqual(t, float64(ours), 1.05*float64(theirs), "compresses within 5%% of S2's encoder")
}

func TestRoundTripEdgeCases(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	frames, sample := traffic(t, 4)
	dictTail := sample[len(sample)-3000:]
	cases := map[string][]byte{
		"empty":                      {},
		"one byte":                   {7},
		"shorter than a search":      []byte("fifteen bytes.."),
		"just long enough":           []byte("sixteen bytes..."),
		"zeros":                      make([]byte, 5000),
		"random":                     random(3000),
		"the dictionary's end":       dictTail,
		"the dictionary's start":     sample[len(sample)-s2.MaxDictSize : len(sample)-s2.MaxDictSize+3000],
		"dictionary then repeats":    append(append([]byte{}, dictTail[:200]...), bytes.Repeat(dictTail[:100], 30)...),
		"frames back to back":        bytes.Join(frames, nil),
		"random, then a frame twice": append(append(random(100), frames[0]...), frames[0]...),
		"largest block":              bytes.Repeat(frames[1], MaxBlock/len(frames[1])+1)[:MaxBlock],
		"larger than a block":        bytes.Repeat(frames[1], MaxBlock/len(frames[1])+2),
	}
	e := NewEncoder(sample)
	var tab Table
	for name, src := range cases {
		t.Run(name, func(t *testing.T) {
			block := roundTrip(t, e, src, &tab)
			assert.LessOrEqual(t, len(block), s2.MaxEncodedLen(len(src)))
		})
	}
	// A short dictionary: copies from it have short offsets.
	small := NewEncoder([]byte("GET /api/orders/{id} checkout orders.internal"))
	for _, f := range frames {
		roundTrip(t, small, f, &tab)
	}
	assert.Nil(t, NewEncoder([]byte("too short")))
}

func TestTableIsReusedAcrossBlockSizes(t *testing.T) {
	frames, sample := traffic(t, 50)
	e := NewEncoder(sample)
	var tab Table
	big := bytes.Join(frames, nil)
	for i, f := range frames {
		roundTrip(t, e, f, &tab)
		if i%10 == 0 {
			roundTrip(t, e, big, &tab) // a larger table, then smaller ones again
		}
	}
}

func FuzzRoundTrip(f *testing.F) {
	frames, sample := traffic(f, 3)
	f.Add(sample[:4096], frames[0])
	f.Add([]byte("0123456789abcdef0123"), []byte("0123456789abcdef0123456789abcdef"))
	f.Add(bytes.Repeat([]byte{0}, 64), bytes.Repeat([]byte{0}, 300))
	f.Fuzz(func(t *testing.T, dict, src []byte) {
		e := NewEncoder(dict)
		if e == nil {
			return
		}
		var tab Table
		roundTrip(t, e, src, &tab)
	})
}

func BenchmarkEncode(b *testing.B) {
	frames, sample := traffic(b, 256)
	e := NewEncoder(sample)
	size := 0
	for _, f := range frames {
		size += len(f)
	}
	b.Run("s2dict", func(b *testing.B) {
		var tab Table
		dst := make([]byte, s2.MaxEncodedLen(64<<10))
		b.SetBytes(int64(size / len(frames)))
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			e.Encode(dst, frames[i%len(frames)], &tab)
		}
	})
	b.Run("s2.Dict", func(b *testing.B) {
		dst := make([]byte, s2.MaxEncodedLen(64<<10))
		b.SetBytes(int64(size / len(frames)))
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			e.Dict().Encode(dst, frames[i%len(frames)])
		}
	})
}
