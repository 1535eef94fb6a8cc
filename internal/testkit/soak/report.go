package soak

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"
)

// WriteTable prints one row per phase, then every violation found.
func WriteTable(w io.Writer, phases []PhaseResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "fault\tinjected\tmembers\tops\tunknown\tadmissions\twaiting\tfar-back\tfifo\tlost\tduplicated\tinversions\tboth\tover-rate\tphantoms\tslow\tlongest\tshort\tresult\t")
	for _, p := range phases {
		r := p.Report
		injected := "no"
		if p.Injected {
			injected = fmt.Sprintf("%s@%s", p.Lasted.Round(100*time.Millisecond), p.At.Round(time.Second))
		}
		if p.Fault == FaultNone {
			injected = "-"
		}
		short := "-"
		if p.WaitShort >= 0 {
			short = strconv.Itoa(p.WaitShort)
		}
		result := "ok"
		if p.Failed() {
			result = "FAIL"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t\n",
			p.Fault, injected, r.Members, r.Ops, r.Unknown, r.Admissions, r.WaitingAtEnd, r.Estimated, r.FIFOBase, r.Lost, r.Duplicated, r.Inversions,
			r.Both, r.OverRate, r.Phantoms, r.Slow, r.Longest.Round(time.Millisecond), short, result)
	}
	tw.Flush()
	for _, p := range phases {
		if p.Err != nil {
			fmt.Fprintf(w, "%s: did not run to the end: %v\n", p.Fault, p.Err)
		}
		for _, v := range p.Report.Violations {
			fmt.Fprintf(w, "%s: %s: %s\n", p.Fault, v.Kind, v.Detail)
		}
	}
}
