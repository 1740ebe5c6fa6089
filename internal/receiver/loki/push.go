package loki

import (
	"fmt"
	"math"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"google.golang.org/protobuf/encoding/protowire"
)

// noteBytes keeps b as the first example of a kind of bad input, converting
// it only when it is the first.
func (d *decoder) noteBytes(i int, b []byte) {
	if d.stats.examples[i] == "" {
		d.stats.note(i, string(b))
	}
}

// finishStream completes the stream whose records are lrs: resource
// attributes from its labels, the level label as the severity of the
// records that have none from their metadata, and the counts.
func (d *decoder) finishStream(rl plog.ResourceLogs, lrs plog.LogRecordSlice, streamFlags recFlags) {
	d.setResource(rl.Resource(), d.labels, &streamFlags)
	if level := levelOf(d.labels); level != "" {
		for i := range lrs.Len() {
			if lr := lrs.At(i); lr.SeverityText() == "" {
				setSeverity(lr, level)
			}
		}
	}
	d.endStream(streamFlags)
}

// badLabels records a label set that could not be parsed: the stream keeps
// its text in loki.labels and no other label.
func (d *decoder) badLabels(rl plog.ResourceLogs, text []byte, err error, f *recFlags) {
	d.labels = d.labels[:0]
	*f |= flagOf(reasonBadLabels)
	if d.stats.examples[reasonBadLabels] == "" {
		d.stats.note(int(reasonBadLabels), fmt.Sprintf("%s: %s", err, text))
	}
	rl.Resource().Attributes().PutStr(attrLokiLabels, d.text(text, f))
}

// putMeta stores structured metadata as record attributes and takes the
// record's severity from it.
func (d *decoder) putMeta(lr plog.LogRecord, f *recFlags) {
	if len(d.meta) == 0 {
		return
	}
	attrs := lr.Attributes()
	attrs.EnsureCapacity(len(d.meta))
	for _, m := range d.meta {
		attrs.PutStr(d.textString(m.name, f), d.textString(m.value, f))
	}
	if level := levelOf(d.meta); level != "" {
		setSeverity(lr, level)
	}
}

// ---- JSON: {"streams":[{"stream":{...},"values":[["<ns>","<line>",{...}],...]}]}

// decodePushJSON decodes a Loki JSON push request into ld. An error means
// the body is not such a request (400); bad entries inside a readable
// request are stored as well as possible and counted.
func (d *decoder) decodePushJSON(body []byte, ld plog.Logs) error {
	r := &d.json
	r.reset(body)
	if err := r.consume('{', "'{' (a Loki push request object)"); err != nil {
		return err
	}
	err := r.members(func(key []byte) error {
		if string(key) != "streams" || r.peek() == 'n' {
			return r.skip(1)
		}
		if err := r.consume('[', `'[' (the "streams" array)`); err != nil {
			return err
		}
		return r.elements(func() error { return d.jsonStream(ld) })
	})
	if err != nil {
		return err
	}
	if !r.atEnd() {
		return r.unexpected("end of input after the push request")
	}
	return nil
}

func (d *decoder) jsonStream(ld plog.Logs) error {
	r := &d.json
	if err := r.consume('{', "'{' (a stream object)"); err != nil {
		return err
	}
	rl := ld.ResourceLogs().AppendEmpty()
	lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
	d.labels = d.labels[:0]
	var streamFlags recFlags
	var labelsText []byte
	err := r.members(func(key []byte) error {
		var err error
		switch {
		case r.peek() == 'n': // null: as if absent
			err = r.literal("null")
		case string(key) == "stream":
			d.labels, err = d.jsonPairs(d.labels[:0], &streamFlags, reasonBadLabels)
		case string(key) == "labels": // the legacy format: the label set as text
			var v []byte
			if v, err = r.strValue(); err == nil {
				labelsText = append(labelsText[:0], v...)
			}
		case string(key) == "values":
			err = d.jsonEntries(lrs, false)
		case string(key) == "entries": // legacy: [{"ts": "<RFC 3339>", "line": "…"}]
			err = d.jsonEntries(lrs, true)
		default:
			err = r.skip(1)
		}
		return err
	})
	if err != nil {
		return err
	}
	if labelsText != nil && len(d.labels) == 0 {
		var err error
		if d.labels, err = parseLabels(string(labelsText), d.labels[:0]); err != nil {
			d.badLabels(rl, labelsText, err, &streamFlags)
		}
	}
	d.finishStream(rl, lrs, streamFlags)
	return nil
}

// jsonPairs reads an object of labels or metadata; a value that is not a
// string is kept as its JSON text, a null one left out. Something else
// than an object is skipped and flagged with bad.
func (d *decoder) jsonPairs(dst []labelPair, f *recFlags, bad reason) ([]labelPair, error) {
	r := &d.json
	if r.peek() != '{' {
		raw, err := r.raw(1)
		if err != nil {
			return dst, err
		}
		*f |= flagOf(bad)
		d.noteBytes(int(bad), raw)
		return dst, nil
	}
	r.pos++
	err := r.members(func(k []byte) error {
		name := d.internKey(k)
		if r.peek() == 'n' { // null: as if absent
			return r.literal("null")
		}
		var v []byte
		var err error
		if r.peek() == '"' {
			v, err = r.strValue()
		} else {
			v, err = r.raw(2)
		}
		if err == nil {
			dst = append(dst, labelPair{name: name, value: string(v)})
		}
		return err
	})
	return dst, err
}

func (d *decoder) jsonEntries(lrs plog.LogRecordSlice, legacy bool) error {
	r := &d.json
	if err := r.consume('[', "'[' (an array of entries)"); err != nil {
		return err
	}
	return r.elements(func() error {
		if d.full() {
			return errTooManyRecords
		}
		lr := d.newRecord(lrs)
		var f recFlags
		var err error
		d.meta = d.meta[:0]
		switch c := r.peek(); {
		case !legacy && c == '[':
			err = d.jsonEntry(lr, &f)
		case legacy && c == '{':
			err = d.jsonLegacyEntry(lr, &f)
		default:
			// Not an entry: keep what it is as the line.
			var raw []byte
			if raw, err = r.raw(2); err == nil {
				f |= flagOf(reasonBadEntry) | flagOf(reasonBadTimestamp)
				d.noteBytes(int(reasonBadEntry), raw)
				lr.Body().SetStr(d.text(raw, &f))
			}
		}
		if err != nil {
			return err
		}
		d.putMeta(lr, &f)
		d.flags = append(d.flags, f)
		return nil
	})
}

// jsonEntry reads ["<unix ns>", "<line>", {structured metadata}].
func (d *decoder) jsonEntry(lr plog.LogRecord, f *recFlags) error {
	r := &d.json
	r.pos++ // '['
	n := 0
	err := r.elements(func() error {
		var err error
		switch n {
		case 0:
			err = d.jsonTimestamp(lr, f)
		case 1:
			if r.peek() == '"' {
				var v []byte
				if v, err = r.strValue(); err == nil {
					lr.Body().SetStr(d.text(v, f))
				}
				break
			}
			var raw []byte
			if raw, err = r.raw(2); err == nil {
				*f |= flagOf(reasonBadEntry)
				d.noteBytes(int(reasonBadEntry), raw)
				lr.Body().SetStr(d.text(raw, f))
			}
		case 2:
			d.meta, err = d.jsonPairs(d.meta, f, reasonBadEntry)
		default: // Loki ignores what follows, so do we
			err = r.skip(2)
		}
		n++
		return err
	})
	if err != nil {
		return err
	}
	if n < 2 {
		lr.Body().SetStr("")
		*f |= flagOf(reasonBadEntry)
		if n == 0 {
			*f |= flagOf(reasonBadTimestamp)
			d.stats.note(int(reasonBadTimestamp), "[]")
		}
		d.stats.note(int(reasonBadEntry), "an entry without a line")
	}
	return nil
}

// jsonTimestamp reads an entry's timestamp: a string of Unix nanoseconds,
// as Loki wants it (a bare number is accepted too).
func (d *decoder) jsonTimestamp(lr plog.LogRecord, f *recFlags) error {
	r := &d.json
	var v []byte
	var err error
	switch c := r.peek(); {
	case c == '"':
		v, err = r.strValue()
	case c == '-' || (c >= '0' && c <= '9'):
		v, err = r.number()
	default:
		v, err = r.raw(2) // an object, an array, true, false, null: never a timestamp
	}
	if err != nil {
		return err
	}
	if ts, ok := parseUnixNanos(v); ok {
		lr.SetTimestamp(ts)
		return nil
	}
	*f |= flagOf(reasonBadTimestamp)
	d.noteBytes(int(reasonBadTimestamp), v)
	return nil
}

// jsonLegacyEntry reads {"ts": "<RFC 3339>", "line": "…"}, the entries of
// Loki's first push format.
func (d *decoder) jsonLegacyEntry(lr plog.LogRecord, f *recFlags) error {
	r := &d.json
	r.pos++ // '{'
	gotTS, gotLine := false, false
	err := r.members(func(k []byte) error {
		var err error
		switch {
		case (string(k) == "ts" || string(k) == "timestamp") && r.peek() == '"':
			var v []byte
			if v, err = r.strValue(); err == nil {
				gotTS = true
				if ts, ok := parseTimeString(string(v)); ok {
					lr.SetTimestamp(ts)
				} else {
					*f |= flagOf(reasonBadTimestamp)
					d.noteBytes(int(reasonBadTimestamp), v)
				}
			}
		case string(k) == "line" && r.peek() == '"':
			var v []byte
			if v, err = r.strValue(); err == nil {
				gotLine = true
				lr.Body().SetStr(d.text(v, f))
			}
		case string(k) == "line" && r.peek() != 'n':
			// As in jsonEntry: a line that is not a string is kept as its
			// JSON text.
			var raw []byte
			if raw, err = r.raw(2); err == nil {
				gotLine = true
				*f |= flagOf(reasonBadEntry)
				d.noteBytes(int(reasonBadEntry), raw)
				lr.Body().SetStr(d.text(raw, f))
			}
		default:
			err = r.skip(2)
		}
		return err
	})
	if err != nil {
		return err
	}
	if !gotTS {
		*f |= flagOf(reasonBadTimestamp)
		d.stats.note(int(reasonBadTimestamp), "an entry without a timestamp")
	}
	if !gotLine { // every record has a string body, as jsonEntry gives it
		lr.Body().SetStr("")
		*f |= flagOf(reasonBadEntry)
		d.stats.note(int(reasonBadEntry), "an entry without a line")
	}
	return nil
}

// ---- protobuf: snappy-compressed logproto.PushRequest

// protoError is a PushRequest that cannot be decoded.
type protoError struct {
	msg string
}

func (e *protoError) Error() string { return "invalid protobuf PushRequest: " + e.msg }

func protoErrf(format string, args ...any) error {
	return &protoError{msg: fmt.Sprintf(format, args...)}
}

// nextField reads the tag of the next field of msg, checking the wire type
// of the fields the receiver reads (want, by field number; 0: any).
func nextField(b []byte, msg string, want func(protowire.Number) protowire.Type) (protowire.Number, protowire.Type, []byte, error) {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 {
		return 0, 0, nil, protoErrf("%s: %v", msg, protowire.ParseError(n))
	}
	if w := want(num); w != 0 && w != typ {
		return 0, 0, nil, protoErrf("%s field %d has wire type %d, want %d", msg, num, typ, w)
	}
	return num, typ, b[n:], nil
}

// fieldValue returns the bytes of a length-delimited field and what
// follows, or skips a field of another type (value nil).
func fieldValue(b []byte, num protowire.Number, typ protowire.Type, msg string) (value, rest []byte, err error) {
	if typ == protowire.BytesType {
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return nil, nil, protoErrf("%s field %d: %v", msg, num, protowire.ParseError(n))
		}
		return v, b[n:], nil
	}
	n := protowire.ConsumeFieldValue(num, typ, b)
	if n < 0 {
		return nil, nil, protoErrf("%s field %d: %v", msg, num, protowire.ParseError(n))
	}
	return nil, b[n:], nil
}

// The wire types of the fields the receiver reads, by message: strings and
// messages are length-delimited, google.protobuf.Timestamp has varints.
func bytesFields1(n protowire.Number) protowire.Type {
	if n == 1 {
		return protowire.BytesType
	}
	return 0
}

func streamFields(n protowire.Number) protowire.Type {
	if n == 1 || n == 2 {
		return protowire.BytesType
	}
	return 0
}

func entryFields(n protowire.Number) protowire.Type {
	if n >= 1 && n <= 3 {
		return protowire.BytesType
	}
	return 0
}

func pairFields(n protowire.Number) protowire.Type {
	if n == 1 || n == 2 {
		return protowire.BytesType
	}
	return 0
}

func tsFields(n protowire.Number) protowire.Type {
	if n == 1 || n == 2 {
		return protowire.VarintType
	}
	return 0
}

// decodePushProto decodes a (snappy-decoded) logproto.PushRequest:
// PushRequest{repeated StreamAdapter streams = 1}, StreamAdapter{string
// labels = 1, repeated EntryAdapter entries = 2, uint64 hash = 3},
// EntryAdapter{Timestamp timestamp = 1, string line = 2, repeated
// LabelPairAdapter structuredMetadata = 3}, LabelPairAdapter{string name =
// 1, string value = 2}. Unknown fields are skipped.
func (d *decoder) decodePushProto(b []byte, ld plog.Logs) error {
	for i := 0; len(b) > 0; {
		num, typ, rest, err := nextField(b, "PushRequest", bytesFields1)
		if err != nil {
			return err
		}
		v, rest, err := fieldValue(rest, num, typ, "PushRequest")
		if err != nil {
			return err
		}
		b = rest
		if num == 1 {
			if err := d.protoStream(v, ld); err != nil {
				return fmt.Errorf("stream %d: %w", i, err)
			}
			i++
		}
	}
	return nil
}

func (d *decoder) protoStream(b []byte, ld plog.Logs) error {
	// First pass: the labels (the last occurrence wins, as in protobuf) and
	// the number of entries; the stream is checked in full here.
	var labels []byte
	entries := 0
	for p := b; len(p) > 0; {
		num, typ, rest, err := nextField(p, "StreamAdapter", streamFields)
		if err != nil {
			return err
		}
		v, rest, err := fieldValue(rest, num, typ, "StreamAdapter")
		if err != nil {
			return err
		}
		p = rest
		switch num {
		case 1:
			labels = v
		case 2:
			entries++
		}
	}
	rl := ld.ResourceLogs().AppendEmpty()
	lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
	lrs.EnsureCapacity(entries)
	var streamFlags recFlags
	var err error
	// Unescaped values are substrings of this one string.
	if d.labels, err = parseLabels(string(labels), d.labels[:0]); err != nil {
		d.badLabels(rl, labels, err, &streamFlags)
	}
	for p := b; len(p) > 0; {
		num, typ, rest, _ := nextField(p, "StreamAdapter", streamFields)
		v, rest, _ := fieldValue(rest, num, typ, "StreamAdapter")
		p = rest
		if num != 2 {
			continue
		}
		if err := d.protoEntry(v, lrs); err != nil {
			return fmt.Errorf("entry %d: %w", lrs.Len()-1, err)
		}
	}
	d.finishStream(rl, lrs, streamFlags)
	return nil
}

func (d *decoder) protoEntry(b []byte, lrs plog.LogRecordSlice) error {
	if d.full() {
		return errTooManyRecords
	}
	lr := d.newRecord(lrs)
	var f recFlags
	d.meta = d.meta[:0]
	var line []byte
	tsOK := false
	for len(b) > 0 {
		num, typ, rest, err := nextField(b, "EntryAdapter", entryFields)
		if err != nil {
			return err
		}
		v, rest, err := fieldValue(rest, num, typ, "EntryAdapter")
		if err != nil {
			return err
		}
		b = rest
		switch num {
		case 1:
			ts, ok, err := protoTimestamp(v)
			if err != nil {
				return err
			}
			if tsOK = ok; ok {
				lr.SetTimestamp(ts)
			}
		case 2:
			line = v
		case 3:
			name, value, err := protoPair(v)
			if err != nil {
				return err
			}
			if len(name) == 0 {
				// Loki refuses such a pair; the entry is kept without it.
				f |= flagOf(reasonBadEntry)
				d.stats.note(int(reasonBadEntry), "a structured metadata pair without a name")
				continue
			}
			d.meta = append(d.meta, labelPair{name: d.internKey(name), value: string(value)})
		}
	}
	lr.Body().SetStr(d.text(line, &f))
	if !tsOK {
		lr.SetTimestamp(d.now)
		f |= flagOf(reasonBadTimestamp)
		d.stats.note(int(reasonBadTimestamp), "a protobuf entry without a valid timestamp")
	}
	d.putMeta(lr, &f)
	d.flags = append(d.flags, f)
	return nil
}

// protoTimestamp decodes a google.protobuf.Timestamp; ok is false for a
// time that is not after the Unix epoch or out of range (the record then
// gets the receive time), err for bytes that are not a Timestamp.
func protoTimestamp(b []byte) (ts pcommon.Timestamp, ok bool, err error) {
	var secs, nanos int64
	for len(b) > 0 {
		num, typ, rest, err := nextField(b, "Timestamp", tsFields)
		if err != nil {
			return 0, false, err
		}
		b = rest
		if typ != protowire.VarintType {
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return 0, false, protoErrf("Timestamp field %d: %v", num, protowire.ParseError(n))
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return 0, false, protoErrf("Timestamp field %d: %v", num, protowire.ParseError(n))
		}
		b = b[n:]
		switch num {
		case 1:
			secs = int64(v)
		case 2:
			nanos = int64(int32(v))
		}
	}
	if secs < 0 || nanos < 0 || nanos >= 1e9 || secs > (math.MaxInt64-nanos)/1e9 || (secs == 0 && nanos == 0) {
		return 0, false, nil
	}
	return pcommon.Timestamp(secs*1e9 + nanos), true, nil
}

func protoPair(b []byte) (name, value []byte, err error) {
	for len(b) > 0 {
		num, typ, rest, err := nextField(b, "LabelPairAdapter", pairFields)
		if err != nil {
			return nil, nil, err
		}
		v, rest, err := fieldValue(rest, num, typ, "LabelPairAdapter")
		if err != nil {
			return nil, nil, err
		}
		b = rest
		switch num {
		case 1:
			name = v
		case 2:
			value = v
		}
	}
	return name, value, nil
}
