package logbuf

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"
)

// NewTextHandler returns a handler that writes exactly what
// slog.NewTextHandler(w, opts) writes, byte for byte, in a fraction of
// its time for the records of a hot path: records whose attributes are
// strings, numbers, booleans, durations and times, without groups (the
// request line of every API request, the line of every submit). Any
// other record, and every record when opts sets ReplaceAttr or
// AddSource, is written by slog's own text handler.
//
// w must be safe for concurrent Writes of whole lines (a *Writer or an
// *os.File is): the lines the fast path writes and those slog's handler
// writes are not ordered by one lock.
func NewTextHandler(w io.Writer, opts *slog.HandlerOptions) slog.Handler {
	if opts == nil {
		opts = &slog.HandlerOptions{}
	}
	slow := slog.NewTextHandler(w, opts)
	if opts.ReplaceAttr != nil || opts.AddSource {
		return slow
	}
	level := opts.Level
	if level == nil {
		level = slog.LevelInfo
	}
	h := &textHandler{w: w, level: level, slow: slow, clock: &clockCache{}}
	if _, ok := w.(*Writer); !ok { // a Writer takes each line under its own lock
		h.mu = &sync.Mutex{}
	}
	return h
}

// textHandler formats the records it can itself and hands the others to
// slow, the slog text handler with the same options and attributes.
type textHandler struct {
	w     io.Writer
	mu    *sync.Mutex // shared by the handlers derived from one (WithAttrs); nil on a *Writer
	level slog.Leveler
	slow  slog.Handler
	pre   []byte // the attributes of WithAttrs, formatted, each with its leading space
	clock *clockCache
}

func (h *textHandler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= h.level.Level()
}

func (h *textHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	slow := h.slow.WithAttrs(attrs)
	if len(attrs) == 0 {
		return h
	}
	pre := append([]byte(nil), h.pre...)
	for _, a := range attrs {
		var ok bool
		if pre, ok = h.appendAttr(pre, a); !ok {
			return slow
		}
	}
	return &textHandler{w: h.w, mu: h.mu, level: h.level, slow: slow, pre: pre, clock: h.clock}
}

func (h *textHandler) WithGroup(name string) slog.Handler {
	return h.slow.WithGroup(name)
}

// lineBuffers keeps the buffers lines are formatted in.
var lineBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

func (h *textHandler) Handle(ctx context.Context, r slog.Record) error {
	bp := lineBuffers.Get().(*[]byte)
	defer putLineBuffer(bp)
	b := h.appendHead(*bp, r.Time, r.Level, r.Message)
	ok := true
	r.Attrs(func(a slog.Attr) bool {
		b, ok = h.appendAttr(b, a)
		return ok
	})
	*bp = b
	if !ok {
		return h.slow.Handle(ctx, r)
	}
	return h.write(bp)
}

// handleAttrs is Handle of the record NewRecord(at, level, msg, 0) with
// attrs added, without making the record; handled is false, and nothing
// is written, when an attribute is not of a kind the fast path writes.
func (h *textHandler) handleAttrs(at time.Time, level slog.Level, msg string, attrs []slog.Attr) (handled bool, err error) {
	bp := lineBuffers.Get().(*[]byte)
	defer putLineBuffer(bp)
	b := h.appendHead(*bp, at, level, msg)
	for _, a := range attrs {
		var ok bool
		if b, ok = h.appendAttr(b, a); !ok {
			*bp = b
			return false, nil
		}
	}
	*bp = b
	return true, h.write(bp)
}

// appendHead appends the time, level and message of a line, and the
// attributes of WithAttrs.
func (h *textHandler) appendHead(b []byte, t time.Time, level slog.Level, msg string) []byte {
	if !t.IsZero() {
		b = append(b, "time="...)
		b = h.clock.appendRFC3339Millis(b, t)
		b = append(b, ' ')
	}
	b = append(b, "level="...)
	b = appendString(b, level.String())
	b = append(b, " msg="...)
	b = appendString(b, msg)
	return append(b, h.pre...)
}

// write ends the line in *bp and writes it.
func (h *textHandler) write(bp *[]byte) error {
	*bp = append(*bp, '\n')
	if h.mu == nil {
		_, err := h.w.Write(*bp)
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := h.w.Write(*bp)
	return err
}

func putLineBuffer(bp *[]byte) {
	if cap(*bp) <= 16<<10 {
		*bp = (*bp)[:0]
		lineBuffers.Put(bp)
	}
}

// appendAttr appends " key=value", or reports that a's value is not of a
// kind the fast path writes.
func (h *textHandler) appendAttr(b []byte, a slog.Attr) ([]byte, bool) {
	v := a.Value
	switch v.Kind() {
	case slog.KindString, slog.KindInt64, slog.KindUint64, slog.KindFloat64, slog.KindBool, slog.KindDuration, slog.KindTime:
	default: // Any, groups and LogValuers: slog's handler resolves, elides and formats them
		return b, false
	}
	b = append(b, ' ')
	b = appendString(b, a.Key)
	b = append(b, '=')
	switch v.Kind() {
	case slog.KindString:
		b = appendString(b, v.String())
	case slog.KindInt64:
		b = strconv.AppendInt(b, v.Int64(), 10)
	case slog.KindUint64:
		b = strconv.AppendUint(b, v.Uint64(), 10)
	case slog.KindFloat64:
		b = strconv.AppendFloat(b, v.Float64(), 'g', -1, 64)
	case slog.KindBool:
		b = strconv.AppendBool(b, v.Bool())
	case slog.KindDuration:
		b = append(b, v.Duration().String()...)
	case slog.KindTime:
		b = h.clock.appendRFC3339Millis(b, v.Time())
	}
	return b, true
}

// appendString appends s as slog's text handler does: as it is, or
// quoted when it is empty or holds a space, '=', '"', an ASCII control
// character other than DEL, or a rune that is not printable.
func appendString(b []byte, s string) []byte {
	if needsQuoting(s) {
		return strconv.AppendQuote(b, s)
	}
	return append(b, s...)
}

// needsQuoting is log/slog's rule for text values.
func needsQuoting(s string) bool {
	if len(s) == 0 {
		return true
	}
	for i := 0; i < len(s); i++ {
		switch textBytes[s[i]] {
		case plainByte:
		case quotedByte:
			return true
		default: // the rest is checked rune by rune
			return runesNeedQuoting(s[i:])
		}
	}
	return false
}

func runesNeedQuoting(s string) bool {
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if textBytes[c] == quotedByte {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return true
		}
		i += size
	}
	return false
}

// What a byte says of the text value it is in.
const (
	plainByte  = iota
	quotedByte // the value is quoted: the ASCII controls but DEL, space, '=' and '"'
	runeByte   // part of a multi-byte rune (or not UTF-8): its rune decides
)

var textBytes = func() (t [256]uint8) {
	for c := range t {
		switch {
		case c >= utf8.RuneSelf:
			t[c] = runeByte
		case c < 0x20 || c == ' ' || c == '=' || c == '"':
			t[c] = quotedByte
		}
	}
	return t
}()

// clockCache remembers the formatted date and time of the last second
// written and its zone, so that lines of the same second format only
// their milliseconds.
type clockCache struct {
	last atomic.Pointer[formattedSecond]
}

type formattedSecond struct {
	unix int64
	loc  *time.Location
	date []byte // "2006-01-02T15:04:05"
	zone []byte // "Z" or "-07:00"
}

// The seconds whose date has a four-digit year in every zone (years 2 to
// 9998, give or take a day).
const (
	minCachedUnix = -62135596800 + 2*366*86400
	maxCachedUnix = 253402300799 - 2*366*86400
)

// appendRFC3339Millis appends t as slog's text handler does: RFC 3339
// with exactly three digits of milliseconds (truncated).
func (c *clockCache) appendRFC3339Millis(b []byte, t time.Time) []byte {
	t = t.Round(0).Truncate(time.Millisecond)
	unix, loc := t.Unix(), t.Location()
	if unix < minCachedUnix || unix > maxCachedUnix {
		// Years of other than four digits: slog's own way, which then
		// drops another digit than the fourth of the fraction.
		const prefixLen = len("2006-01-02T15:04:05.000")
		n := len(b)
		b = t.Add(time.Millisecond/10).AppendFormat(b, time.RFC3339Nano)
		return append(b[:n+prefixLen], b[n+prefixLen+1:]...)
	}
	f := c.last.Load()
	if f == nil || f.unix != unix || f.loc != loc {
		f = &formattedSecond{unix: unix, loc: loc,
			date: t.AppendFormat(nil, "2006-01-02T15:04:05"),
			zone: t.AppendFormat(nil, "Z07:00")}
		c.last.Store(f)
	}
	b = append(b, f.date...)
	ms := t.Nanosecond() / int(time.Millisecond)
	b = append(b, '.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10))
	return append(b, f.zone...)
}
