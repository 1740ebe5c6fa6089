package analyze

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/tracesift/tracesift/internal/model"
)

// nanosPerMilli converts nanoseconds to the milliseconds of finding values.
const nanosPerMilli = 1e6

// ms is a duration in nanoseconds as the milliseconds of a finding value.
func ms(nanos uint64) float64 { return float64(nanos) / nanosPerMilli }

// duration is nanoseconds as a time.Duration, saturating instead of going
// negative for absurd spans (over 292 years).
func duration(nanos uint64) time.Duration {
	return time.Duration(min(nanos, math.MaxInt64))
}

// fmtDur renders a duration in nanoseconds for a summary: "820 ms",
// "2.5 ms", "1.24 s", "340 µs", "0 ms".
func fmtDur(nanos uint64) string {
	switch {
	case nanos == 0:
		return "0 ms"
	case nanos < 1e6:
		return strconv.FormatUint((nanos+500)/1e3, 10) + " µs"
	case nanos < 1e7:
		return strconv.FormatFloat(float64(nanos)/1e6, 'f', 1, 64) + " ms"
	case nanos < 1e9:
		return strconv.FormatUint((nanos+5e5)/1e6, 10) + " ms"
	case nanos < 1e11:
		return strconv.FormatFloat(float64(nanos)/1e9, 'f', 2, 64) + " s"
	default:
		return strconv.FormatUint((nanos+5e8)/1e9, 10) + " s"
	}
}

// percent renders part/whole as a whole percentage ("64%"); whole 0 is 0%.
func percent(part, whole uint64) string {
	if whole == 0 || part == 0 {
		return "0%"
	}
	if part >= whole {
		return "100%"
	}
	p := uint64(float64(part)*100/float64(whole) + 0.5)
	if p >= 100 {
		p = 99 // never "100%" for a strict part
	}
	return strconv.FormatUint(p, 10) + "%"
}

// itoa is strconv.Itoa, short.
func itoa(n int) string { return strconv.Itoa(n) }

// plural is "1 span" / "3 spans".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return itoa(n) + " " + many
}

// containsFold reports whether s contains sub, ignoring ASCII case; sub must
// be lower case. It does not allocate.
func containsFold(s, sub string) bool {
	n, m := len(s), len(sub)
	if m == 0 {
		return true
	}
outer:
	for i := 0; i+m <= n; i++ {
		for j := 0; j < m; j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != sub[j] {
				continue outer
			}
		}
		return true
	}
	return false
}

// clip shortens s to at most n bytes (on a rune boundary), adding "…".
func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i] + "…"
}

// spanLabel names a span for a summary: "checkout-db SELECT orders".
func spanLabel(s *model.Span) string {
	svc, name := s.Service, clip(s.Name, 80)
	switch {
	case svc == "" && name == "":
		return "span " + s.SpanID
	case svc == "":
		return name
	case name == "":
		return svc + " span " + s.SpanID
	}
	return svc + " " + name
}
