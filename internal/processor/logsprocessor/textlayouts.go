package logsprocessor

// The default text patterns, matched by hand: the same submatches as the
// regular expressions of DefaultTextPatterns give (a differential test holds
// them to each other), at a fraction of their cost. Matching text lines was
// a tenth of the logs pipeline's CPU through the regexp package.

// layoutMatcher matches one of DefaultTextPatterns against a record's first
// line and returns the groups time, level, thread and logger.
type layoutMatcher func(line string) (groups [4]string, ok bool)

// defaultLayoutMatchers are DefaultTextPatterns' matchers, in their order.
var defaultLayoutMatchers = []layoutMatcher{matchLevelAfterThread, matchLevelBeforeThread, matchSpringBoot}

// layoutMatcherFor returns the hand matcher of a default pattern, or nil.
func layoutMatcherFor(pattern string) layoutMatcher {
	for i, p := range DefaultTextPatterns {
		if p == pattern {
			return defaultLayoutMatchers[i]
		}
	}
	return nil
}

// `^TIME\s+\[THREAD\]\s+LEVEL\s+LOGGER`, LOGGER `[^\s\[]+`.
func matchLevelAfterThread(line string) ([4]string, bool) { return matchLogback(line, false) }

// `^TIME\s+LEVEL\s+\[THREAD\]\s+LOGGER`, LOGGER `[^\s\[]+`.
func matchLevelBeforeThread(line string) ([4]string, bool) { return matchLogback(line, true) }

// matchLogback matches the time, the thread and the level in either order,
// and the logger, each after the previous and spaces.
func matchLogback(line string, levelFirst bool) (g [4]string, ok bool) {
	var i int
	if g[0], i, ok = logTime(line); !ok {
		return [4]string{}, false
	}
	for step := range 2 {
		if i, ok = spaces(line, i); !ok {
			return [4]string{}, false
		}
		if (step == 0) == levelFirst {
			g[1], i, ok = logLevel(line, i, true)
		} else {
			g[2], i, ok = bracketed(line, i)
		}
		if !ok {
			return [4]string{}, false
		}
	}
	if i, ok = spaces(line, i); !ok {
		return [4]string{}, false
	}
	if g[3], ok = loggerName(line, i); !ok {
		return [4]string{}, false
	}
	return g, true
}

// `^TIME\s+LEVEL\s+\d+\s+---\s+\[THREAD\]\s+LOGGER\s*:`, LOGGER `\S+`,
// LEVEL without WARNING.
func matchSpringBoot(line string) (g [4]string, ok bool) {
	var i int
	if g[0], i, ok = logTime(line); !ok {
		return [4]string{}, false
	}
	if i, ok = spaces(line, i); !ok {
		return [4]string{}, false
	}
	if g[1], i, ok = logLevel(line, i, false); !ok {
		return [4]string{}, false
	}
	if i, ok = spaces(line, i); !ok {
		return [4]string{}, false
	}
	j := i
	for j < len(line) && isDigit(line[j]) {
		j++
	}
	if j == i {
		return [4]string{}, false
	}
	if i, ok = spaces(line, j); !ok {
		return [4]string{}, false
	}
	if len(line)-i < 3 || line[i:i+3] != "---" {
		return [4]string{}, false
	}
	if i, ok = spaces(line, i+3); !ok {
		return [4]string{}, false
	}
	if g[2], i, ok = bracketed(line, i); !ok {
		return [4]string{}, false
	}
	if i, ok = spaces(line, i); !ok {
		return [4]string{}, false
	}
	// \S+ is greedy: the logger is the longest run of non-space characters
	// after which, past optional spaces, comes a colon.
	end := i
	for end < len(line) && !isSpace(line[end]) {
		end++
	}
	if end == i {
		return [4]string{}, false
	}
	if k := skipSpaces(line, end); k < len(line) && line[k] == ':' {
		g[3] = line[i:end]
		return g, true
	}
	for k := end - 1; k > i; k-- {
		if line[k] == ':' {
			g[3] = line[i:k]
			return g, true
		}
	}
	return [4]string{}, false
}

// logTime matches `\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?(?:Z|[+-]\d{2}:?\d{2})?`
// at the start of line, as the patterns use it: followed by a space.
// Where the greedy match is not followed by a space, no shorter one is
// either (a shorter one ends before a digit, a zone, or a 'Z').
func logTime(line string) (string, int, bool) {
	const layout = "dddd-dd-dd dd:dd:dd"
	if len(line) < len(layout) {
		return "", 0, false
	}
	for i := 0; i < len(layout); i++ {
		c := line[i]
		switch layout[i] {
		case 'd':
			if !isDigit(c) {
				return "", 0, false
			}
		case ' ':
			if c != ' ' && c != 'T' {
				return "", 0, false
			}
		default:
			if c != layout[i] {
				return "", 0, false
			}
		}
	}
	i := len(layout)
	if i < len(line) && (line[i] == '.' || line[i] == ',') {
		j := i + 1
		for j < len(line) && j-i <= 9 && isDigit(line[j]) {
			j++
		}
		if j > i+1 {
			i = j
		}
	}
	if i < len(line) {
		switch line[i] {
		case 'Z':
			i++
		case '+', '-':
			j := i + 1
			if j+2 <= len(line) && isDigit(line[j]) && isDigit(line[j+1]) {
				j += 2
				if j < len(line) && line[j] == ':' {
					j++
				}
				if j+2 <= len(line) && isDigit(line[j]) && isDigit(line[j+1]) {
					i = j + 2
				}
			}
		}
	}
	return line[:i], i, true
}

// logLevel matches the patterns' level alternation at i, followed by a
// space; withWarning adds WARNING to TRACE|DEBUG|INFO|WARN|ERROR|FATAL.
func logLevel(line string, i int, withWarning bool) (string, int, bool) {
	j := i
	for j < len(line) && !isSpace(line[j]) {
		j++
	}
	switch w := line[i:j]; w {
	case "TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL":
		return w, j, true
	case "WARNING":
		return w, j, withWarning
	}
	return "", i, false
}

// bracketed matches `\[([^\]]*)\]` at i.
func bracketed(line string, i int) (string, int, bool) {
	if i >= len(line) || line[i] != '[' {
		return "", i, false
	}
	for j := i + 1; j < len(line); j++ {
		if line[j] == ']' {
			return line[i+1 : j], j + 1, true
		}
	}
	return "", i, false
}

// loggerName matches `[^\s\[]+` at i.
func loggerName(line string, i int) (string, bool) {
	j := i
	for j < len(line) && !isSpace(line[j]) && line[j] != '[' {
		j++
	}
	return line[i:j], j > i
}

// spaces matches `\s+` at i.
func spaces(line string, i int) (int, bool) {
	j := skipSpaces(line, i)
	return j, j > i
}

func skipSpaces(line string, i int) int {
	for i < len(line) && isSpace(line[i]) {
		i++
	}
	return i
}

// isSpace is RE2's \s: tab, line feed, form feed, carriage return, space.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
