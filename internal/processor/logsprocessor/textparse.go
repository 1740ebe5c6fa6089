package logsprocessor

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// DefaultTextPatterns read the layouts Java services print by default, with
// or without %X{traceId} in them: Logback's and Log4j2's
// `%d [%thread] %-5level %logger - %msg`, the same with the level before the
// thread, and Spring Boot's console layout. Named groups: time, level,
// thread, logger (others are ignored).
var DefaultTextPatterns = []string{
	`^(?P<time>\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})?)\s+\[(?P<thread>[^\]]*)\]\s+(?P<level>TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL)\s+(?P<logger>[^\s\[]+)`,
	`^(?P<time>\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})?)\s+(?P<level>TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL)\s+\[(?P<thread>[^\]]*)\]\s+(?P<logger>[^\s\[]+)`,
	`^(?P<time>\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})?)\s+(?P<level>TRACE|DEBUG|INFO|WARN|ERROR|FATAL)\s+\d+\s+---\s+\[(?P<thread>[^\]]*)\]\s+(?P<logger>\S+)\s*:`,
}

// textParser fills the severity, time and thread and logger attributes of
// text records whose layout one of its patterns matches. The body stays as
// it came.
type textParser struct {
	patterns []*regexp.Regexp
	groups   [][4]int // per pattern: submatch index of time, level, thread, logger (-1: none)
	// matchers are the hand matchers of the patterns that are default ones
	// (textlayouts.go), nil for the others.
	matchers []layoutMatcher
}

func newTextParser(patterns []string) (*textParser, error) {
	p := &textParser{}
	for i, src := range patterns {
		re, err := regexp.Compile(src)
		if err != nil {
			return nil, fmt.Errorf("`text_patterns[%d]`: %w", i, err)
		}
		var g [4]int
		for j, name := range []string{"time", "level", "thread", "logger"} {
			g[j] = re.SubexpIndex(name)
		}
		if g[0] < 0 && g[1] < 0 {
			return nil, fmt.Errorf("`text_patterns[%d]` has neither a (?P<time>…) nor a (?P<level>…) group", i)
		}
		p.patterns = append(p.patterns, re)
		p.groups = append(p.groups, g)
		p.matchers = append(p.matchers, layoutMatcherFor(src))
	}
	return p, nil
}

// parse applies the first matching pattern to lr; it reports whether one
// matched. Severity and time already set on the record are kept.
func (p *textParser) parse(lr plog.LogRecord) bool {
	body := lr.Body()
	if body.Type() != pcommon.ValueTypeStr {
		return false
	}
	line := body.Str()
	if nl := strings.IndexByte(line, '\n'); nl >= 0 {
		line = line[:nl] // a stack trace below its first line
	}
	for i := range p.patterns {
		g, ok := p.match(i, line)
		if !ok {
			continue
		}
		if lvl := g[1]; lvl != "" && lr.SeverityNumber() == plog.SeverityNumberUnspecified {
			lr.SetSeverityText(lvl)
			lr.SetSeverityNumber(severityOf(lvl))
		}
		if ts := g[0]; ts != "" && lr.Timestamp() == 0 {
			if t, ok := parseLogTime(ts); ok {
				lr.SetTimestamp(pcommon.NewTimestampFromTime(t))
			}
		}
		if th := g[2]; th != "" {
			lr.Attributes().PutStr("thread.name", th)
		}
		if lg := g[3]; lg != "" {
			lr.Attributes().PutStr("code.namespace", lg)
		}
		return true
	}
	return false
}

// match applies pattern i to line and returns its groups time, level,
// thread and logger ("" where the pattern has none or it did not take part).
func (p *textParser) match(i int, line string) ([4]string, bool) {
	if m := p.matchers[i]; m != nil {
		return m(line)
	}
	var g [4]string
	m := p.patterns[i].FindStringSubmatchIndex(line)
	if m == nil {
		return g, false
	}
	for k, idx := range p.groups[i] {
		if idx >= 0 && m[2*idx] >= 0 {
			g[k] = line[m[2*idx]:m[2*idx+1]]
		}
	}
	return g, true
}

func severityOf(level string) plog.SeverityNumber {
	switch strings.ToUpper(level) {
	case "TRACE":
		return plog.SeverityNumberTrace
	case "DEBUG":
		return plog.SeverityNumberDebug
	case "INFO":
		return plog.SeverityNumberInfo
	case "WARN", "WARNING":
		return plog.SeverityNumberWarn
	case "ERROR":
		return plog.SeverityNumberError
	case "FATAL":
		return plog.SeverityNumberFatal
	}
	return plog.SeverityNumberUnspecified
}

// parseLogTime reads the date-times of the default patterns; without an
// offset the time is taken as UTC (set the collector's TZ otherwise... the
// services' own zone is unknown here).
func parseLogTime(s string) (time.Time, bool) {
	s = strings.Replace(s, ",", ".", 1)
	s = strings.Replace(s, " ", "T", 1)
	for _, layout := range []string{"2006-01-02T15:04:05.999999999Z07:00", "2006-01-02T15:04:05.999999999Z0700",
		"2006-01-02T15:04:05.999999999"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}
