package loki

import (
	"errors"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// decoder turns one request into plog.Logs. It holds the scratch space of
// the decoding; the receiver pools decoders, so it is not shared between
// requests running at the same time.
type decoder struct {
	maxLine int
	// maxRecords bounds the records of one request (0: none); over tells a
	// request that reached it, whose decoding stopped there.
	maxRecords, records int
	over                bool
	// now is the receive time: every record's ObservedTimestamp, and the
	// Timestamp of a record without a usable one of its own.
	now pcommon.Timestamp

	json   jsonReader
	stats  batchStats
	labels []labelPair
	meta   []labelPair
	// flags are the record flags of the current stream, counted when its
	// labels are known.
	flags []recFlags

	// NDJSON lines: the members of the current line, its flattened key
	// path, and the key strings seen in this request (lines repeat keys).
	attrs []labelPair
	path  []byte
	lower []byte
	keys  map[string]string

	// join holds a plain-text record made of several lines.
	join []byte
}

// maxKeyCache bounds the key strings a decoder keeps.
const maxKeyCache = 4096

func newDecoder(maxLine int) *decoder {
	return &decoder{maxLine: maxLine, keys: map[string]string{}}
}

// reset prepares the decoder for a request received at now.
func (d *decoder) reset(now pcommon.Timestamp) {
	d.now = now
	d.records, d.over = 0, false
	d.stats.reset()
	// A request that failed inside a stream left the flags of its records:
	// they must not be counted with this one's.
	d.flags = d.flags[:0]
	if len(d.keys) >= maxKeyCache {
		// A new map: clear would keep the buckets.
		d.keys = make(map[string]string)
	}
}

// internKey returns b as a string, reusing the string of an earlier equal
// key.
func (d *decoder) internKey(b []byte) string {
	if s, ok := d.keys[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(s) <= 256 && len(d.keys) < maxKeyCache {
		d.keys[s] = s
	}
	return s
}

// errTooManyRecords stops the decoding of a request with more records than
// max_records_per_request: it is refused whole, before the rest is built.
var errTooManyRecords = errors.New("more records than `max_records_per_request`")

// full reports, before a record is added, that the request has as many as
// it may; the request is then over its bound.
func (d *decoder) full() bool {
	if d.maxRecords > 0 && d.records >= d.maxRecords {
		d.over = true
	}
	return d.over
}

// newRecord appends a record stamped with the receive time, which its
// decoder may change to its own timestamp.
func (d *decoder) newRecord(lrs plog.LogRecordSlice) plog.LogRecord {
	d.records++
	lr := lrs.AppendEmpty()
	lr.SetObservedTimestamp(d.now)
	lr.SetTimestamp(d.now)
	return lr
}

// setResource fills a stream's resource from its labels: every label as an
// attribute, service.name from the first set of service_name, service and
// job (else unknown_service), host.name from host, hostname or instance.
// Both are kept when the labels carry them already (JSON stream keys may be
// dotted).
func (d *decoder) setResource(res pcommon.Resource, labels []labelPair, f *recFlags) {
	attrs := res.Attributes()
	attrs.EnsureCapacity(len(labels) + 2)
	var service, host string
	servicePrio, hostPrio := 4, 4
	for _, l := range labels {
		name := d.textString(l.name, f)
		value := d.textString(l.value, f)
		attrs.PutStr(name, value)
		if value == "" {
			continue
		}
		if p := servicePriority(name); p > 0 && p < servicePrio {
			service, servicePrio = value, p
		}
		if p := hostPriority(name); p > 0 && p < hostPrio {
			host, hostPrio = value, p
		}
	}
	if _, ok := attrs.Get(attrServiceName); !ok {
		if service == "" {
			service = unknownService
		}
		attrs.PutStr(attrServiceName, service)
	}
	if _, ok := attrs.Get(attrHostName); !ok && host != "" {
		attrs.PutStr(attrHostName, hostOf(host))
	}
}

func servicePriority(name string) int {
	switch name {
	case "service_name":
		return 1
	case "service":
		return 2
	case "job":
		return 3
	}
	return 0
}

func hostPriority(name string) int {
	switch name {
	case "host":
		return 1
	case "hostname":
		return 2
	case "instance":
		return 3
	}
	return 0
}

// levelOf returns the value of the preferred level key among pairs (level,
// severity, detected_level), "" when none is set.
func levelOf(pairs []labelPair) string {
	best, prio := "", 4
	for _, p := range pairs {
		if n := levelPriority(p.name); n > 0 && n < prio && p.value != "" {
			best, prio = p.value, n
		}
	}
	return best
}

// endStream counts the records of a stream, adding the stream's own flags
// (labels) to each.
func (d *decoder) endStream(streamFlags recFlags) {
	for _, f := range d.flags {
		d.stats.add(f | streamFlags)
	}
	d.flags = d.flags[:0]
}
