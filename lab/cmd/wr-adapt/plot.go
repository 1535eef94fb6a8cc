package main

import (
	"encoding/csv"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"os"
	"strconv"
	"time"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// The plot is drawn with the standard library's image/png and x/image's
// fixed 7x13 font: two panels and four lines need no plotting library, and
// the picture is the same on every machine (no font files, no cgo).

type run struct {
	p95, perMin, effective []float64 // per second
	settled                int       // first second from which p95 stays within 1.5x target (0: never)
}

func plotCmd(args []string) error {
	fs := flag.NewFlagSet("plot", flag.ContinueOnError)
	fixedCSV := fs.String("fixed", "", "the fixed-refill run's CSV")
	adaptCSV := fs.String("adapt", "", "the controller's run's CSV")
	capacity := fs.Float64("capacity", 10, "orders a second the page can serve")
	target := fs.Duration("target", 800*time.Millisecond, "origin_target_p95_ms")
	interval := fs.Duration("interval", time.Second, "refill interval")
	out := fs.String("out", "docs/adapt.png", "PNG to write")
	if err := fs.Parse(args); err != nil {
		return err
	}
	fx, err := readRun(*fixedCSV, *target, *interval)
	if err != nil {
		return err
	}
	ad, err := readRun(*adaptCSV, *target, *interval)
	if err != nil {
		return err
	}
	img := drawPlot(fx, ad, *capacity*60, float64(target.Milliseconds()))
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	if err := png.Encode(f, img); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	for _, r := range []struct {
		name string
		r    run
	}{{"fixed", fx}, {"adapt", ad}} {
		if r.r.settled == 0 {
			fmt.Printf("%s: never within 1.5x target at the end; p95 at the end %.0f ms\n", r.name, r.r.p95[len(r.r.p95)-1])
			continue
		}
		// Admissions a minute over whole minutes after settling.
		from := max(r.r.settled, 1) + 59
		fmt.Printf("%s: p95 within 1.5x target from %ds on (max after it %.0f ms); admitted/min from %ds: mean %.0f, min %.0f (%.0f %% and %.0f %% of %.0f)\n",
			r.name, r.r.settled, maxFrom(r.r.p95, r.r.settled), from, meanFrom(r.r.perMin, from), minFrom(r.r.perMin, from),
			100*meanFrom(r.r.perMin, from)/(*capacity*60), 100*minFrom(r.r.perMin, from)/(*capacity*60), *capacity*60)
	}
	return nil
}

// readRun reads a run's CSV (wr-adapt run): p95, admissions a minute
// (the last 60 s, from the queue's history) and the effective refill a
// minute.
func readRun(path string, target, interval time.Duration) (run, error) {
	f, err := os.Open(path)
	if err != nil {
		return run{}, err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) < 2 {
		return run{}, fmt.Errorf("%s: %v (%d rows)", path, err, len(rows))
	}
	var r run
	var admitted []float64
	for _, row := range rows[1:] {
		num := func(i int) float64 { v, _ := strconv.ParseFloat(row[i], 64); return v }
		admitted = append(admitted, num(1))
		r.p95 = append(r.p95, num(4))
		r.effective = append(r.effective, num(5)*float64(time.Minute/interval))
	}
	for i := range admitted {
		sum := 0.0
		for j := max(0, i-59); j <= i; j++ {
			sum += admitted[j]
		}
		r.perMin = append(r.perMin, sum*60/float64(min(i+1, 60)))
	}
	limit := 1.5 * float64(target.Milliseconds())
	r.settled = 0
	for i := len(r.p95) - 1; i >= 0; i-- {
		if r.p95[i] > limit {
			if i+1 < len(r.p95) {
				r.settled = i + 2 // the CSV's seconds count from 1
			}
			break
		}
		if i == 0 {
			r.settled = 1
		}
	}
	return r, nil
}

func maxFrom(v []float64, from int) float64 {
	m := 0.0
	for i := max(from-1, 0); i < len(v); i++ {
		m = max(m, v[i])
	}
	return m
}

func minFrom(v []float64, from int) float64 {
	m := 0.0
	for i := max(from-1, 0); i < len(v); i++ {
		if i == max(from-1, 0) || v[i] < m {
			m = v[i]
		}
	}
	return m
}

func meanFrom(v []float64, from int) float64 {
	sum, n := 0.0, 0
	for i := max(from-1, 0); i < len(v); i++ {
		sum += v[i]
		n++
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

var (
	red   = color.RGBA{200, 40, 40, 255}
	blue  = color.RGBA{30, 90, 200, 255}
	grey  = color.RGBA{150, 150, 150, 255}
	green = color.RGBA{40, 150, 60, 255}
	black = color.RGBA{0, 0, 0, 255}
)

const (
	width, panelH, left, gap = 960, 300, 70, 60
)

func drawPlot(fx, ad run, capPerMin, target float64) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, width, 2*panelH+3*gap))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	n := max(len(fx.p95), len(ad.p95))
	// Top: the order page's p95, clipped at 4x target.
	top := image.Rect(left, gap, width-20, gap+panelH)
	yMax := 4 * target
	frame(img, top, n, yMax, "ms", "order page p95 over the last 5 s (fixed refill 2x capacity: red; controller on: blue)")
	hline(img, top, target, yMax, green, fmt.Sprintf("target %.0f ms", target))
	hline(img, top, 1.5*target, yMax, grey, "1.5x target")
	series(img, top, fx.p95, n, yMax, red)
	series(img, top, ad.p95, n, yMax, blue)
	// Bottom: admissions a minute against what the page can serve.
	bot := image.Rect(left, 2*gap+panelH, width-20, 2*gap+2*panelH)
	yMax = 2.2 * capPerMin
	frame(img, bot, n, yMax, "/min", "people admitted per minute (last 60 s), and the controller's refill_effective a minute (light blue)")
	hline(img, bot, capPerMin, yMax, green, fmt.Sprintf("page capacity %.0f/min", capPerMin))
	hline(img, bot, 0.85*capPerMin, yMax, grey, "85 %")
	series(img, bot, ad.effective, n, yMax, color.RGBA{140, 180, 240, 255})
	series(img, bot, fx.perMin, n, yMax, red)
	series(img, bot, ad.perMin, n, yMax, blue)
	text(img, left, 2*panelH+3*gap-15, black, "seconds since the run's start; scripts/adapt.sh")
	return img
}

func frame(img *image.RGBA, r image.Rectangle, n int, yMax float64, unit, title string) {
	text(img, r.Min.X, r.Min.Y-10, black, title)
	for x := r.Min.X; x <= r.Max.X; x++ {
		img.Set(x, r.Max.Y, black)
	}
	for y := r.Min.Y; y <= r.Max.Y; y++ {
		img.Set(r.Min.X, y, black)
	}
	for i := 0; i <= 4; i++ {
		v := yMax * float64(i) / 4
		y := r.Max.Y - int(float64(r.Dy())*float64(i)/4)
		text(img, 5, y+4, black, fmt.Sprintf("%.0f%s", v, unit))
	}
	for s := 0; s <= n; s += 30 {
		x := r.Min.X + s*r.Dx()/max(n, 1)
		for y := r.Max.Y; y < r.Max.Y+5; y++ {
			img.Set(x, y, black)
		}
		text(img, x-8, r.Max.Y+18, black, strconv.Itoa(s))
	}
}

func hline(img *image.RGBA, r image.Rectangle, v, yMax float64, c color.Color, label string) {
	y := r.Max.Y - int(v/yMax*float64(r.Dy()))
	for x := r.Min.X; x < r.Max.X; x += 2 {
		img.Set(x, y, c)
	}
	text(img, r.Max.X-7*len(label)-4, y-4, c, label)
}

// series draws v (one value a second) as a polyline, clipped at yMax.
func series(img *image.RGBA, r image.Rectangle, v []float64, n int, yMax float64, c color.Color) {
	pt := func(i int) image.Point {
		y := min(v[i], yMax)
		return image.Pt(r.Min.X+(i+1)*r.Dx()/max(n, 1), r.Max.Y-int(y/yMax*float64(r.Dy())))
	}
	for i := 1; i < len(v); i++ {
		line(img, pt(i-1), pt(i), c)
	}
}

// line is Bresenham's, two pixels thick.
func line(img *image.RGBA, a, b image.Point, c color.Color) {
	dx, dy := abs(b.X-a.X), -abs(b.Y-a.Y)
	sx, sy := sign(b.X-a.X), sign(b.Y-a.Y)
	e := dx + dy
	for {
		img.Set(a.X, a.Y, c)
		img.Set(a.X, a.Y+1, c)
		if a == b {
			return
		}
		e2 := 2 * e
		if e2 >= dy {
			e += dy
			a.X += sx
		}
		if e2 <= dx {
			e += dx
			a.Y += sy
		}
	}
}

func abs(x int) int { return max(x, -x) }

func sign(x int) int {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

func text(img *image.RGBA, x, y int, c color.Color, s string) {
	d := font.Drawer{Dst: img, Src: image.NewUniform(c), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}
