package console

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// svgChart is one chart of the operator page, drawn by the server as
// inline SVG (no script, no style attribute: the classes are styled by
// console.css), one column per minute of the last hour.
type svgChart struct {
	ID, Title string
	Summary   string // what the chart shows, for screen readers
	Empty     string // said over the plot when there is nothing to draw
	YTicks    []svgTick
	XTicks    []svgTick
	Bars      []svgBar
	Lines     []svgLine
	Dots      []svgDot
	Legend    []svgLegend
}

// The geometry of every chart, in viewBox units.
const (
	plotLeft, plotRight  = 60.0, 632.0
	plotTop, plotBottom  = 10.0, 176.0
	plotWidth            = plotRight - plotLeft
	plotHeight           = plotBottom - plotTop
	columnWidth          = plotWidth / chartMinutes
	barGap               = 1.0
	chartTickMinutesStep = 15
)

type svgTick struct {
	X, Y   string // position of the label (and of the grid line's end)
	Label  string
	Anchor string // text-anchor of the label
}

type svgBar struct {
	X, Y, W, H string
	Class      string // the series
	Title      string // shown on hover: minute, count
	Minute     string // HH:MM (UTC), for tests and tools
	N          int
}

type svgLine struct {
	Class  string
	Points string
	Values string // the series' values, minute by minute ("" where none), for tests and tools
}

type svgDot struct {
	X, Y  string
	Class string
	Title string
}

type svgLegend struct{ Class, Label string }

func coord(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// columnX is the left edge of minute i's column.
func columnX(i int) float64 { return plotLeft + float64(i)*columnWidth }

// yFor places v on a scale from 0 to top.
func yFor(v, top float64) float64 { return plotBottom - v/top*plotHeight }

// niceCeil returns the smallest of 1, 2, 5, 10, 20, 50… at least v.
func niceCeil(v float64) float64 {
	for step := 1.0; ; step *= 10 {
		for _, m := range []float64{1, 2, 5} {
			if m*step >= v {
				return m * step
			}
		}
	}
}

// axes sets the chart's ticks: three on the y axis (0, half, top; label
// names a value), one every chartTickMinutesStep minutes on the x axis.
func (ch *svgChart) axes(mins []minute, top float64, label func(float64) string) {
	for _, v := range []float64{0, top / 2, top} {
		ch.YTicks = append(ch.YTicks, svgTick{X: coord(plotLeft - 6), Y: coord(yFor(v, top)), Label: label(v), Anchor: "end"})
	}
	for i := 0; i < len(mins); i += chartTickMinutesStep {
		ch.XTicks = append(ch.XTicks, svgTick{X: coord(columnX(i)), Y: coord(plotBottom + 18), Label: mins[i].Start.UTC().Format("15:04"), Anchor: "middle"})
	}
	ch.XTicks = append(ch.XTicks, svgTick{X: coord(plotRight), Y: coord(plotBottom + 18), Label: "now", Anchor: "end"})
}

func countLabel(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// finishedChart stacks the tasks that finished each minute by how:
// succeeded, failed, cancelled.
func finishedChart(mins []minute) svgChart {
	ch := svgChart{ID: "chart-finished", Title: "Tasks finished per minute",
		Legend: []svgLegend{{"ok", "succeeded"}, {"bad", "failed"}, {"off", "cancelled"}}}
	most, total := 0, [3]int{}
	for _, m := range mins {
		most = max(most, m.Succeeded+m.Failed+m.Cancelled)
		total[0], total[1], total[2] = total[0]+m.Succeeded, total[1]+m.Failed, total[2]+m.Cancelled
	}
	top := niceCeil(float64(max(most, 1)))
	ch.axes(mins, top, countLabel)
	for i, m := range mins {
		base := 0
		for _, s := range []struct {
			class, what string
			n           int
		}{{"ok", "succeeded", m.Succeeded}, {"bad", "failed", m.Failed}, {"off", "cancelled", m.Cancelled}} {
			if s.n == 0 {
				continue
			}
			y0, y1 := yFor(float64(base), top), yFor(float64(base+s.n), top)
			hhmm := m.Start.UTC().Format("15:04")
			ch.Bars = append(ch.Bars, svgBar{X: coord(columnX(i) + barGap/2), Y: coord(y1), W: coord(columnWidth - barGap), H: coord(y0 - y1),
				Class: s.class, Title: fmt.Sprintf("%s UTC: %d %s", hhmm, s.n, s.what), Minute: hhmm, N: s.n})
			base += s.n
		}
	}
	ch.Summary = fmt.Sprintf("In the last hour %d tasks succeeded, %d failed and %d were cancelled.", total[0], total[1], total[2])
	if total == [3]int{} {
		ch.Empty = "No task finished in the last hour."
	}
	return ch
}

// generationChart draws the median and 95th percentile of the
// generation time (first claim to finish) of each minute's successes.
func generationChart(mins []minute) svgChart {
	ch := svgChart{ID: "chart-generation", Title: "Generation time (p50, p95)",
		Legend: []svgLegend{{"p50", "p50 (median)"}, {"p95", "p95"}}}
	var most time.Duration
	for _, m := range mins {
		most = max(most, m.P95)
	}
	top := niceCeil(max(most.Seconds(), 1))
	ch.axes(mins, top, func(v float64) string {
		if v == 0 {
			return "0"
		}
		return span(time.Duration(v * float64(time.Second)))
	})
	for _, s := range []struct {
		class string
		of    func(minute) time.Duration
	}{{"p50", func(m minute) time.Duration { return m.P50 }}, {"p95", func(m minute) time.Duration { return m.P95 }}} {
		var values []string
		var run []string // points of consecutive minutes with a value
		flush := func() {
			if len(run) > 1 {
				ch.Lines = append(ch.Lines, svgLine{Class: s.class, Points: strings.Join(run, " ")})
			}
			run = nil
		}
		for i, m := range mins {
			d := s.of(m)
			if m.Succeeded == 0 {
				values = append(values, "")
				flush()
				continue
			}
			values = append(values, strconv.FormatInt(d.Milliseconds(), 10))
			x, y := coord(columnX(i)+columnWidth/2), coord(yFor(d.Seconds(), top))
			run = append(run, x+","+y)
			ch.Dots = append(ch.Dots, svgDot{X: x, Y: y, Class: s.class, Title: fmt.Sprintf("%s UTC: %s %s", m.Start.UTC().Format("15:04"), s.class, span(d))})
		}
		flush()
		// The values ride on an invisible line of their own, so that a
		// series with single points still carries them.
		ch.Lines = append(ch.Lines, svgLine{Class: s.class + " values", Values: strings.Join(values, ",")})
	}
	ch.Summary = "The median and 95th percentile, minute by minute, of how long the tasks that succeeded took from their first claim to their finish."
	if most == 0 {
		ch.Empty = "No task succeeded in the last hour."
	}
	return ch
}

// queueChart draws the pending and processing tasks at the end of each
// minute.
func queueChart(mins []minute) svgChart {
	ch := svgChart{ID: "chart-queue", Title: "Queue depth",
		Legend: []svgLegend{{"pending", "pending"}, {"processing", "processing"}}}
	var most int64
	for _, m := range mins {
		most = max(most, m.Pending, m.Processing)
	}
	top := niceCeil(float64(max(most, 1)))
	ch.axes(mins, top, countLabel)
	for _, s := range []struct {
		class string
		of    func(minute) int64
	}{{"pending", func(m minute) int64 { return m.Pending }}, {"processing", func(m minute) int64 { return m.Processing }}} {
		points, values := make([]string, 0, len(mins)), make([]string, 0, len(mins))
		for i, m := range mins {
			v := s.of(m)
			points = append(points, coord(columnX(i)+columnWidth/2)+","+coord(yFor(float64(v), top)))
			values = append(values, strconv.FormatInt(v, 10))
		}
		ch.Lines = append(ch.Lines, svgLine{Class: s.class, Points: strings.Join(points, " "), Values: strings.Join(values, ",")})
	}
	last := mins[len(mins)-1]
	ch.Summary = fmt.Sprintf("Pending and processing tasks at the end of each minute; now %d pending and %d processing.", last.Pending, last.Processing)
	return ch
}
