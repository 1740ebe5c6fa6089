package logsprocessor

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// regexpGroups is what a default pattern's regular expression makes of line.
func regexpGroups(re *regexp.Regexp, line string) ([4]string, bool) {
	var g [4]string
	m := re.FindStringSubmatchIndex(line)
	if m == nil {
		return g, false
	}
	for k, name := range []string{"time", "level", "thread", "logger"} {
		if idx := re.SubexpIndex(name); idx >= 0 && m[2*idx] >= 0 {
			g[k] = line[m[2*idx]:m[2*idx+1]]
		}
	}
	return g, true
}

// requireSameAsRegexp holds every hand matcher to its regular expression on
// line.
func requireSameAsRegexp(t testing.TB, res []*regexp.Regexp, line string) {
	t.Helper()
	for i, re := range res {
		want, wantOK := regexpGroups(re, line)
		got, gotOK := defaultLayoutMatchers[i](line)
		require.Equal(t, wantOK, gotOK, "pattern %d on %q", i, line)
		require.Equal(t, want, got, "pattern %d on %q", i, line)
	}
}

func compileDefaults(t testing.TB) []*regexp.Regexp {
	var res []*regexp.Regexp
	for _, p := range DefaultTextPatterns {
		res = append(res, regexp.MustCompile(p))
	}
	return res
}

var layoutSeeds = []string{
	"2026-11-30 10:00:00.123 [http-nio-8080-exec-1] ERROR c.e.shop.PaymentService - card declined",
	"2026-11-30 10:00:01,500 WARN  [main] org.acme.Cart - slow",
	"2026-11-30T10:00:02.250+01:00  INFO 4242 --- [           main] o.s.b.w.e.tomcat.TomcatWebServer         : Tomcat started",
	"2026-11-30T10:00:02.250+0100 WARNING [t] x",
	"2026-11-30T10:00:02Z INFO 1 --- [m] a:b:c: d",
	"2026-11-30T10:00:02Z INFO 1 --- [m] a:b:c d",
	"2026-11-30T10:00:02Z INFO 1 --- [m] a:b:c :d",
	"2026-11-30T10:00:02.1234567890 INFO [m] x",
	"2026-11-30T10:00:02. INFO [m] x",
	"2026-11-30T10:00:02+01:0 INFO [m] x",
	"2026-11-30 10:00:02 INFO [m] [x",
	"2026-11-30 10:00:02 [] INFO x[y",
	"2026-11-30 10:00:02 [a]b] INFO x",
	"2026-11-30 10:00:02\t[a]\f INFO\r\vx",
	"2026-11-30 10:00:02 WARNING 12 --- [a] x:",
	"2026-11-30 10:00:02 INFO 12 ---- [a] x:",
	"2026-11-30 10:00:02 INFO x --- [a] x:",
	"2026-11-30 10:00:02 INFO\xff [a] x",
	"2026-11-30 10:00:02 [\xff] INFO \xfe\xff",
	"",
	"2026",
}

func TestDefaultLayoutMatchersMatchTheRegexps(t *testing.T) {
	res := compileDefaults(t)
	for _, line := range layoutSeeds {
		requireSameAsRegexp(t, res, line)
	}
	// Lines made of the layouts' own pieces, so that most come close to a
	// match and many match.
	pieces := []string{"2026-11-30", "2026-1-30", " ", "T", "10:00:02", "10:0:02", ".", ",", "123", "1234567890",
		"Z", "+01:00", "+0100", "-01", ":", "  ", "\t", "[", "]", "main", "http-nio-1", "INFO", "WARN", "WARNING",
		"ERROR", "TRACE", "DEBUG", "FATAL", "info", "4242", "---", "-", "c.e.Svc", "a:b", "x[y", "\xff", "é", "\n", "\f", "\v"}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 200_000 {
		var b strings.Builder
		b.WriteString("2026-11-30")
		b.WriteString(pieces[1+rng.IntN(4)])
		b.WriteString("10:00:02")
		for range rng.IntN(14) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		requireSameAsRegexp(t, res, b.String())
	}
}

func FuzzDefaultLayoutMatchers(f *testing.F) {
	for _, s := range layoutSeeds {
		f.Add(s)
	}
	res := compileDefaults(f)
	f.Fuzz(func(t *testing.T, line string) {
		requireSameAsRegexp(t, res, line)
	})
}

// BenchmarkTextParse is one Logback line through the default patterns, by
// hand and by the regular expressions.
func BenchmarkTextParse(b *testing.B) {
	line := "2026-11-30 10:00:00.123 [http-nio-8080-exec-1] INFO  c.e.shop.Service traceId=4bf92f3577b34da6a3ce929d0e0e4736 spanId=00f067aa0ba902b7 - order 1042 placed"
	res := compileDefaults(b)
	b.Run("hand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := defaultLayoutMatchers[0](line); !ok {
				b.Fatal("no match")
			}
		}
	})
	b.Run("regexp", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := regexpGroups(res[0], line); !ok {
				b.Fatal("no match")
			}
		}
	})
}
