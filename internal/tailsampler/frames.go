package tailsampler

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/s2"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/tracesift/tracesift/internal/tailsampler/s2dict"
	"github.com/tracesift/tracesift/internal/tenant"
)

// A buffered trace holds its spans as frames, never decoded until kept. The
// spans of the trace that came in one request are encoded as an OTLP
// ExportTraceServiceRequest of their own (their resources and scopes
// included, each resource after its spans) and compressed as S2 blocks
// against a dictionary trained on recent traffic: one block for the spans
// and, when they share one resource, one for the resource, compressed once
// per request and repeated by each of its chunks (a resource is often a
// large part of a request's bytes). Once a dictionary is trained, s2dict
// writes the blocks (S2's own encoder clears a 64 KiB hash table for each);
// until then, plain S2 does. The dictionary gives S2 the context a small
// block lacks (docs/benchmarks.md has the ratios). A trace's frames (blocks, each prefixed with its
// length) are concatenated in one pointer-free []byte: the garbage collector
// never scans it, and since concatenated requests are a valid request, a
// kept trace is decoded by decompressing its frames one after the other.

// codec is how frames are stored. A nil *codec stores them uncompressed
// (buffer_compression off); a codec with a nil dictionary compresses with
// plain S2 (before the first dictionary is trained).
type codec struct {
	dict *s2dict.Encoder
}

// blockScratch is a goroutine's reusable space for compressing blocks.
type blockScratch struct {
	out   []byte
	table s2dict.Table
}

// block compresses plain, an encoded request, into sc (grown if needed) and
// returns the frame's block, valid until sc's next use; the caller stores it
// with putFrame. Uncompressed, the block is plain itself.
func (c *codec) block(plain []byte, sc *blockScratch) []byte {
	if c == nil {
		return plain
	}
	sc.out = sc.out[:cap(sc.out)]
	if n := s2.MaxEncodedLen(len(plain)); n > len(sc.out) {
		sc.out = make([]byte, n)
	}
	if c.dict != nil {
		sc.out = c.dict.Encode(sc.out, plain, &sc.table)
		return sc.out
	}
	return s2.Encode(sc.out, plain)
}

// putFrame writes block as a frame (length, then bytes) at the start of dst,
// which has frameSize(len(block)) bytes.
func putFrame(dst, block []byte) {
	n := binary.PutUvarint(dst, uint64(len(block)))
	copy(dst[n:], block)
}

// frameSize is the size of the frame putFrame writes for block.
func frameSize(block int) int {
	return uvarintLen(uint64(block)) + block
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

var errCorruptFrame = errors.New("corrupt span frame")

// decode appends the decoded content of every frame in frames to dst.
func (c *codec) decode(dst, frames []byte) ([]byte, error) {
	for len(frames) > 0 {
		n, k := binary.Uvarint(frames)
		if k <= 0 || n > uint64(len(frames)-k) {
			return dst, errCorruptFrame
		}
		block := frames[k : k+int(n)]
		frames = frames[k+int(n):]
		if c == nil {
			dst = append(dst, block...)
			continue
		}
		size, err := s2.DecodedLen(block)
		if err != nil {
			return dst, fmt.Errorf("%w: %w", errCorruptFrame, err)
		}
		start := len(dst)
		dst = growLen(dst, size)
		var out []byte
		if c.dict != nil {
			out, err = c.dict.Dict().Decode(dst[start:], block)
		} else {
			out, err = s2.Decode(dst[start:], block)
		}
		if err != nil {
			return dst[:start], fmt.Errorf("%w: %w", errCorruptFrame, err)
		}
		if len(out) != size || (size > 0 && &out[0] != &dst[start]) {
			return dst[:start], errCorruptFrame
		}
	}
	return dst, nil
}

// growLen extends b by n bytes, reallocating if needed.
func growLen(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), 2*cap(b)+n)
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}

// transcode re-encodes frames written by from so that to can read them: a
// trace keeps one codec, and a chunk compressed after the dictionary was
// retrained joins it this way (rare: once per trace straddling a retrain).
func transcode(from, to *codec, frames []byte, mem *frameMemory, sc *shardScratch) (frameBuf, error) {
	var err error
	sc.plain, err = from.decode(sc.plain[:0], frames)
	if err != nil {
		return frameBuf{}, err
	}
	block := to.block(sc.plain, &sc.block)
	out := mem.alloc(frameSize(len(block)))
	putFrame(out.b, block)
	return out, nil
}

// concatFrames returns a's frames followed by b's in one new buffer: a trace
// keeps a single one. The caller frees a and b.
func concatFrames(mem *frameMemory, a, b []byte) frameBuf {
	out := mem.alloc(len(a) + len(b))
	copy(out.b, a)
	copy(out.b[len(a):], b)
	return out
}

// Memory accounting: a chunk accounts its frame buffer's block plus
// chunkOverhead, the
// bookkeeping of a chunk that becomes a buffered trace (trace struct, map
// entry, list elements, route strings), refunded when the chunk joins a
// buffered trace instead.
const chunkOverhead = 384

// framesRef is a kept trace's (or late chunk's) frames with their codec and
// tenant.
type framesRef struct {
	buf    frameBuf
	codec  *codec
	tenant uint32
}

// tenantRun is resources of a decoded batch, in order, that are one tenant's.
type tenantRun struct {
	tenant    uint32
	resources int
}

func byTenant(a, b framesRef) int { return cmp.Compare(a.tenant, b.tenant) }

// decodeKept decodes the frames of parts into pdata for the next consumer:
// only kept spans ever pay for a full decode. Each resource is stamped with
// its trace's tenant (tenant.Stamp), replacing what a client sent; sc.runs
// says whose the resources are, in order. It sorts parts by tenant.
func decodeKept(parts []framesRef, tenants *tenantTable, sc *shardScratch) (ptrace.Traces, error) {
	// A tenant's parts are decoded together, so that each decode's
	// resources are one tenant's.
	if !slices.IsSortedFunc(parts, byTenant) {
		slices.SortStableFunc(parts, byTenant)
	}
	sc.runs = sc.runs[:0]
	if len(parts) == 0 {
		return ptrace.NewTraces(), nil
	}
	var td ptrace.Traces
	for start := 0; start < len(parts); {
		tn := parts[start].tenant
		end := start + 1
		for end < len(parts) && parts[end].tenant == tn {
			end++
		}
		out := sc.out[:0]
		var err error
		for _, p := range parts[start:end] {
			if out, err = p.codec.decode(out, p.buf.b); err != nil {
				return ptrace.Traces{}, fmt.Errorf("decoding kept spans: %w", err)
			}
		}
		sc.out = out
		run, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(out)
		if err != nil {
			// Every span here passed Scan, which accepts exactly what pdata
			// accepts, and was re-encoded by otlpwire.Encoder: a bug, not bad
			// input.
			return ptrace.Traces{}, fmt.Errorf("decoding kept spans: %w", err)
		}
		rss := run.ResourceSpans()
		name := tenants.get(tn).name
		for i := range rss.Len() {
			tenant.Stamp(rss.At(i).Resource().Attributes(), name)
		}
		sc.runs = append(sc.runs, tenantRun{tenant: tn, resources: rss.Len()})
		if start == 0 {
			td = run
		} else {
			rss.MoveAndAppendTo(td.ResourceSpans())
		}
		start = end
	}
	return td, nil
}

// shardScratch is a shard's reusable space for decoding and transcoding.
type shardScratch struct {
	out, plain []byte
	block      blockScratch
	runs       []tenantRun // of the last decodeKept
}

// Dictionary training. The first request's encoded chunks make the first
// dictionary; after that, every dictRefresh, a new one is trained from a
// slice of each of several requests (a request comes from one service, so
// one request alone would favour it).
const (
	dictRefresh       = time.Minute
	dictSampleSize    = s2.MaxDictSize
	dictSamplePerCall = dictSampleSize / 8
)

type dictTrainer struct {
	enabled bool
	gov     *compressionGovernor // nil when not enabled
	// above is the buffered bytes from which new frames are compressed
	// (buffer_compression_above); 0: always. on says whether they are:
	// compression starts at above and stops below three quarters of it, so
	// that few traces straddle a change (their chunks are transcoded).
	above   int64
	on      atomic.Bool
	current atomic.Pointer[codec]
	due     atomic.Int64 // unix nanoseconds at which to start collecting a new sample

	mu     sync.Mutex
	sample []byte
}

func newDictTrainer(enabled bool, above int64, grace time.Duration, now time.Time) *dictTrainer {
	t := &dictTrainer{enabled: enabled, above: above}
	if enabled {
		t.current.Store(&codec{})
		t.gov = newCompressionGovernor(grace, now)
		t.on.Store(above <= 0)
	}
	return t
}

// codecFor returns the codec for a request whose chunks encode to plain,
// the buffer holding buffered bytes, first adding plain to the training
// sample when one is being collected.
func (t *dictTrainer) codecFor(plain []byte, buffered int64, now time.Time) *codec {
	if !t.enabled || !t.wanted(buffered, now) || !t.gov.compressing(now) {
		return nil
	}
	if now.UnixNano() >= t.due.Load() && len(plain) > 0 {
		t.collect(plain, now)
	}
	return t.current.Load()
}

// wanted reports whether a buffer holding buffered bytes compresses new
// frames (buffer_compression_above).
func (t *dictTrainer) wanted(buffered int64, now time.Time) bool {
	if t.above <= 0 {
		return true
	}
	on := t.on.Load()
	switch {
	case !on && buffered >= t.above:
		if t.on.CompareAndSwap(false, true) {
			// Relief counts against compression only once the buffer
			// has had time to fill with compressed traces.
			t.gov.restarted(now)
		}
		return true
	case on && buffered < t.above/4*3:
		t.on.Store(false)
		return false
	}
	return on
}

func (t *dictTrainer) collect(plain []byte, now time.Time) {
	if !t.mu.TryLock() {
		return // another request is contributing; this one is not needed
	}
	defer t.mu.Unlock()
	if now.UnixNano() < t.due.Load() {
		return
	}
	// Until the first dictionary exists, every request gives all it can and
	// a quarter of the full size is enough to start with.
	first := t.current.Load().dict == nil
	take, enough := dictSamplePerCall, dictSampleSize
	if first {
		take, enough = dictSampleSize, dictSampleSize/4
	}
	take = min(take, len(plain), dictSampleSize-len(t.sample))
	if t.sample == nil {
		t.sample = make([]byte, 0, dictSampleSize)
	}
	t.sample = append(t.sample, plain[:take]...)
	if len(t.sample) < enough {
		return
	}
	// The sample becomes the dictionary's own memory.
	if e := s2dict.NewEncoder(t.sample); e != nil {
		t.current.Store(&codec{dict: e})
	}
	t.sample = nil
	t.due.Store(now.Add(dictRefresh).UnixNano())
}
