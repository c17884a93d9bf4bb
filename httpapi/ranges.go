package httpapi

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// The Range rules of image downloads (RFC 9110 §14). Whatever the
// header asks, a download reads at most MaxRanges ranges from the store,
// which together hold at most the image's bytes.
const (
	// MaxRanges is the most ranges one answer serves (a multipart answer
	// of at most that many parts); a header that still asks for more
	// after merging gets the whole image (200).
	MaxRanges = 4
	// MaxRangeSpecs is the most ranges a Range header may list; beyond
	// it the header is ignored (200, the whole image) without a look at
	// what it asks.
	MaxRangeSpecs = 64
	// RangeMergeGap is the widest gap between two ranges that are
	// served as one (about what a part's headers cost): overlapping,
	// adjacent and nearly adjacent ranges are merged.
	RangeMergeGap = 80
)

// byteRange is the bytes [start, start+length) of an image.
type byteRange struct{ start, length int64 }

func (r byteRange) end() int64 { return r.start + r.length } // exclusive

// contentRange is the Content-Range of r in an image of size bytes.
func (r byteRange) contentRange(size int64) string {
	return "bytes " + strconv.FormatInt(r.start, 10) + "-" + strconv.FormatInt(r.end()-1, 10) + "/" + strconv.FormatInt(size, 10)
}

// rangeAnswer is what a Range header asks of an image.
type rangeAnswer int

const (
	rangeWhole         rangeAnswer = iota // 200: no Range, one that is ignored, or one asking too much
	rangeParts                            // 206: the ranges returned
	rangeUnsatisfiable                    // 416: no range overlaps the image
)

// planRanges reads a Range header for an image of size bytes and returns
// the ranges to serve: sorted, merged (RangeMergeGap), at most
// MaxRanges. A header that is not "bytes=" with a valid range set is
// ignored (RFC 9110 lets a server ignore an invalid Range), as is one
// listing more than MaxRangeSpecs ranges or needing more than MaxRanges
// after merging: both get the whole image. A set whose every range is
// unsatisfiable (starts past the end, or a suffix of zero bytes such as
// "bytes=-0") is a 416.
func planRanges(header string, size int64) ([]byteRange, rangeAnswer) {
	unit, set, ok := strings.Cut(header, "=")
	if !ok || !strings.EqualFold(unit, "bytes") {
		return nil, rangeWhole
	}
	var ranges []byteRange
	specs := 0
	for spec := range strings.SplitSeq(set, ",") {
		spec = strings.Trim(spec, " \t")
		if spec == "" {
			continue // empty list elements are allowed (RFC 9110 §5.6.1)
		}
		if specs++; specs > MaxRangeSpecs {
			return nil, rangeWhole
		}
		r, satisfiable, valid := parseRangeSpec(spec, size)
		if !valid {
			return nil, rangeWhole
		}
		if satisfiable {
			ranges = append(ranges, r)
		}
	}
	switch {
	case specs == 0:
		return nil, rangeWhole // "bytes=" lists nothing: invalid
	case len(ranges) == 0:
		return nil, rangeUnsatisfiable
	}
	ranges = mergeRanges(ranges)
	if len(ranges) > MaxRanges {
		return nil, rangeWhole
	}
	return ranges, rangeParts
}

// parseRangeSpec reads one range-spec ("10-20", "10-", "-5") against an
// image of size bytes.
func parseRangeSpec(spec string, size int64) (r byteRange, satisfiable, valid bool) {
	first, last, ok := strings.Cut(spec, "-")
	if !ok {
		return r, false, false
	}
	if first == "" { // a suffix: the last n bytes
		n, ok := parseDigits(last)
		if !ok {
			return r, false, false
		}
		if n == 0 || size == 0 {
			return r, false, true
		}
		n = min(n, size)
		return byteRange{size - n, n}, true, true
	}
	start, ok := parseDigits(first)
	if !ok {
		return r, false, false
	}
	end := size - 1
	if last != "" {
		l, ok := parseDigits(last)
		if !ok || l < start {
			return r, false, false
		}
		end = min(end, l)
	}
	if start >= size {
		return r, false, true
	}
	return byteRange{start, end - start + 1}, true, true
}

// parseDigits reads a non-empty run of ASCII digits; one too large for
// an int64 reads as the largest (it is past any image's end anyway).
func parseDigits(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil { // only a range error is left
		return 1<<63 - 1, true
	}
	return n, true
}

// mergeRanges sorts ranges by start and merges those that overlap or lie
// within RangeMergeGap of each other (RFC 9110 §14.6 allows it, in
// whatever order they were asked).
func mergeRanges(ranges []byteRange) []byteRange {
	slices.SortFunc(ranges, func(a, b byteRange) int { return cmp.Compare(a.start, b.start) })
	out := ranges[:1]
	for _, r := range ranges[1:] {
		last := &out[len(out)-1]
		if r.start <= last.end()+RangeMergeGap {
			last.length = max(last.end(), r.end()) - last.start
			continue
		}
		out = append(out, r)
	}
	return out
}
