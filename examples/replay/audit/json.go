package audit

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// scanner is a minimal JSON reader over one line: it decodes the few
// shapes an audit event has and validates and skips everything else, so
// a plain event is decoded in one pass without reflection. Unlike
// encoding/json, object keys match exactly (audit logs are written by Go
// with these exact names) and a JSON null leaves a field at its zero value.
type scanner struct {
	b     []byte
	i     int
	depth int
	in    *interner
}

// maxDepth bounds nesting (as encoding/json does).
const maxDepth = 10000

var errEnd = errors.New("unexpected end of JSON input")

func (s *scanner) reset(b []byte) { s.b, s.i, s.depth = b, 0, 0 }

func (s *scanner) errf(format string, args ...any) error {
	if s.i >= len(s.b) {
		return errEnd
	}
	return fmt.Errorf("offset %d: %s", s.i, fmt.Sprintf(format, args...))
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next non-blank byte, or 0 at the end.
func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// end reports an error unless only blanks are left.
func (s *scanner) end() error {
	if s.peek() != 0 {
		return s.errf("invalid character %q after top-level value", s.b[s.i])
	}
	return nil
}

// rawString reads a string token. raw is the text between the quotes;
// plain reports that it has no escapes and is valid UTF-8, so raw is the
// value.
func (s *scanner) rawString() (raw []byte, plain bool, err error) {
	if s.peek() != '"' {
		return nil, false, s.errf("expected string")
	}
	s.i++
	start := s.i
	plain = true
	ascii := true
	b := s.b
	for {
		i := s.i
		// Eight bytes at a time while none needs a look (SWAR).
		for i+8 <= len(b) && !specialWord(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		for i < len(b) && strPlain[b[i]] {
			i++
		}
		s.i = i
		if i >= len(b) {
			break
		}
		c := b[i]
		switch {
		case c == '"':
			raw = b[start:i]
			s.i++
			if !ascii && !utf8.Valid(raw) {
				plain = false
			}
			return raw, plain, nil
		case c == '\\':
			plain = false
			s.i++
			if s.i >= len(b) {
				return nil, false, errEnd
			}
			switch b[s.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i++
			case 'u':
				if s.i+5 > len(b) {
					return nil, false, errEnd
				}
				for _, h := range b[s.i+1 : s.i+5] {
					if unhex(h) < 0 {
						return nil, false, s.errf("invalid \\u escape")
					}
				}
				s.i += 5
			default:
				return nil, false, s.errf("invalid escape %q", b[s.i])
			}
		case c < 0x20:
			return nil, false, s.errf("control character in string")
		default: // >= 0x80
			ascii = false
			s.i++
		}
	}
	return nil, false, errEnd
}

const (
	lo7 = 0x0101010101010101
	hi7 = 0x8080808080808080
)

// specialWord reports whether one of the 8 bytes of w is '"', '\\', a
// control character or not ASCII.
func specialWord(w uint64) bool {
	hasZero := func(x uint64) uint64 { return (x - lo7) &^ x & hi7 }
	return (w&hi7)|((w-0x20*lo7)&^w&hi7)|hasZero(w^('"'*lo7))|hasZero(w^('\\'*lo7)) != 0
}

// strPlain marks the bytes a string scan passes over: printable ASCII
// other than '"' and '\\'.
var strPlain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c - 'a' + 10)
	case 'A' <= c && c <= 'F':
		return int(c - 'A' + 10)
	}
	return -1
}

// unescape appends the value of a validated raw string to dst, replacing
// invalid UTF-8 and lone surrogates with U+FFFD as encoding/json does.
func unescape(dst, raw []byte) []byte {
	for i := 0; i < len(raw); {
		if raw[i] != '\\' {
			// Copy the run up to the next escape at once.
			j := bytes.IndexByte(raw[i:], '\\')
			if j < 0 {
				j = len(raw) - i
			}
			run := raw[i : i+j]
			if utf8.Valid(run) {
				dst = append(dst, run...)
			} else {
				for k := 0; k < len(run); {
					r, n := utf8.DecodeRune(run[k:])
					dst = utf8.AppendRune(dst, r)
					k += n
				}
			}
			i += j
			continue
		}
		i++
		switch raw[i] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := hex4(raw[i+1:])
			i += 5
			if utf16.IsSurrogate(r) {
				if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					if r2 := utf16.DecodeRune(r, hex4(raw[i+2:])); r2 != utf8.RuneError {
						i += 6
						dst = utf8.AppendRune(dst, r2)
						continue
					}
				}
				r = utf8.RuneError
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default: // '"', '\\', '/'
			dst = append(dst, raw[i])
		}
		i++
	}
	return dst
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		r = r<<4 | rune(unhex(c))
	}
	return r
}

// str reads a string or null ("") value; interned strings are shared.
func (s *scanner) str(intern bool) (string, error) {
	if s.peek() == 'n' {
		return "", s.null()
	}
	raw, plain, err := s.rawString()
	if err != nil {
		return "", err
	}
	if !plain {
		return string(unescape(nil, raw)), nil
	}
	if intern {
		return s.in.get(raw), nil
	}
	return string(raw), nil
}

func (s *scanner) null() error {
	if len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return nil
	}
	return s.errf("expected null")
}

func (s *scanner) literal(lit string) error {
	if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return nil
	}
	if len(s.b)-s.i < len(lit) && string(s.b[s.i:]) == lit[:len(s.b)-s.i] {
		return errEnd
	}
	return s.errf("invalid literal")
}

// member advances to the next key of an object whose '{' was consumed and
// consumes the ':' after it. ok is false at the closing '}'.
func (s *scanner) member(first *bool, keyBuf []byte) (key []byte, ok bool, err error) {
	c := s.peek()
	if c == '}' {
		s.i++
		s.depth--
		return nil, false, nil
	}
	if !*first {
		if c != ',' {
			return nil, false, s.errf("expected ',' or '}'")
		}
		s.i++
	}
	*first = false
	raw, plain, err := s.rawString()
	if err != nil {
		return nil, false, err
	}
	if !plain {
		raw = unescape(keyBuf[:0], raw)
	}
	if s.peek() != ':' {
		return nil, false, s.errf("expected ':'")
	}
	s.i++
	return raw, true, nil
}

// element advances to the next element of an array whose '[' was
// consumed. ok is false at the closing ']'.
func (s *scanner) element(first *bool) (ok bool, err error) {
	c := s.peek()
	if c == ']' {
		s.i++
		s.depth--
		return false, nil
	}
	if !*first {
		if c != ',' {
			return false, s.errf("expected ',' or ']'")
		}
		s.i++
	}
	*first = false
	return true, nil
}

// open consumes c ('{' or '[') and bounds the nesting.
func (s *scanner) open(c byte) error {
	if s.peek() != c {
		return s.errf("expected %q", c)
	}
	s.depth++
	if s.depth > maxDepth {
		return s.errf("exceeded max depth")
	}
	s.i++
	return nil
}

// skip validates and skips one value.
func (s *scanner) skip() error {
	switch c := s.peek(); c {
	case '{':
		if err := s.open('{'); err != nil {
			return err
		}
		first := true
		for {
			_, ok, err := s.member(&first, nil)
			if err != nil || !ok {
				return err
			}
			if err := s.skip(); err != nil {
				return err
			}
		}
	case '[':
		if err := s.open('['); err != nil {
			return err
		}
		first := true
		for {
			ok, err := s.element(&first)
			if err != nil || !ok {
				return err
			}
			if err := s.skip(); err != nil {
				return err
			}
		}
	case '"':
		_, _, err := s.rawString()
		return err
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	case 0:
		return errEnd
	default:
		if c == '-' || ('0' <= c && c <= '9') {
			_, err := s.number()
			return err
		}
		return s.errf("invalid character %q looking for beginning of value", c)
	}
}

// number validates a JSON number and returns its text.
func (s *scanner) number() ([]byte, error) {
	start := s.i
	digits := func() int {
		n := 0
		for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	if s.i < len(s.b) && s.b[s.i] == '0' {
		s.i++
	} else if digits() == 0 {
		return nil, s.errf("invalid number")
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return nil, s.errf("invalid number")
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return nil, s.errf("invalid number")
		}
	}
	return s.b[start:s.i], nil
}

// int reads an integer or null (0) value.
func (s *scanner) int() (int, error) {
	switch c := s.peek(); {
	case c == 'n':
		return 0, s.null()
	case c != '-' && (c < '0' || c > '9'):
		return 0, s.errf("expected number")
	}
	num, err := s.number()
	if err != nil {
		return 0, err
	}
	v, err := strconv.Atoi(string(num))
	if err != nil {
		return 0, fmt.Errorf("cannot decode number %s into int", num)
	}
	return v, nil
}

// raw reads any value and returns a copy of its text (nil for null).
func (s *scanner) raw() ([]byte, error) {
	if s.peek() == 'n' {
		return nil, s.null()
	}
	start := s.i
	if err := s.skip(); err != nil {
		return nil, err
	}
	return append([]byte(nil), s.b[start:s.i]...), nil
}

// timeValue reads an RFC 3339 timestamp string or null (zero).
func (s *scanner) timeValue() (time.Time, error) {
	if s.peek() == 'n' {
		return time.Time{}, s.null()
	}
	raw, plain, err := s.rawString()
	if err != nil {
		return time.Time{}, err
	}
	if !plain {
		raw = unescape(nil, raw)
	}
	return parseTime(raw)
}

// parseTime parses RFC 3339 with a fast path for the UTC form the
// apiserver writes ("2006-01-02T15:04:05.999999Z").
func parseTime(b []byte) (time.Time, error) {
	if len(b) >= 20 && b[4] == '-' && b[7] == '-' && b[10] == 'T' && b[13] == ':' && b[16] == ':' && b[len(b)-1] == 'Z' {
		y, ok1 := atoi(b[0:4])
		mo, ok2 := atoi(b[5:7])
		d, ok3 := atoi(b[8:10])
		h, ok4 := atoi(b[11:13])
		mi, ok5 := atoi(b[14:16])
		sec, ok6 := atoi(b[17:19])
		ns, ok7 := 0, true
		if rest := b[19 : len(b)-1]; len(rest) > 0 {
			if rest[0] != '.' || len(rest) < 2 || len(rest) > 10 {
				ok7 = false
			} else {
				ns, ok7 = atoi(rest[1:])
				for k := len(rest) - 1; k < 9; k++ {
					ns *= 10
				}
			}
		}
		if ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7 && mo >= 1 && mo <= 12 && d >= 1 && d <= daysIn(mo, y) && h < 24 && mi < 60 && sec < 60 {
			return time.Date(y, time.Month(mo), d, h, mi, sec, ns, time.UTC), nil
		}
	}
	t, err := time.Parse(time.RFC3339Nano, string(b))
	if err != nil {
		return time.Time{}, fmt.Errorf("invalid timestamp %q", b)
	}
	return t, nil
}

func atoi(b []byte) (int, bool) {
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func daysIn(m, y int) int {
	return time.Date(y, time.Month(m)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// interner shares the strings that repeat across events (levels, verbs,
// usernames, resources, annotation keys), bounded in count and length.
type interner struct{ m map[string]string }

const (
	maxInterned    = 8192
	maxInternedLen = 256
)

func (in *interner) get(b []byte) string {
	if s, ok := in.m[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(b) <= maxInternedLen && len(in.m) < maxInterned {
		if in.m == nil {
			in.m = make(map[string]string)
		}
		in.m[s] = s
	}
	return s
}
