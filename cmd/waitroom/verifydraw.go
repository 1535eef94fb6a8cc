package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/waitroom/waitroom/client"
)

// `waitroom verify-draw URL` checks a scheduled opening's draw from its
// public list (docs/DRAW.md), as the verifier page does in a browser:
// that the seed revealed hashes to the commitment published before the
// opening, and that the order is each participant's
// HMAC-SHA256(seed, member id), lowest first (client.VerifyDraw). It
// exits 0 when the draw checks out, 1 when it does not (or cannot be
// read), 2 for arguments it cannot take.

const verifyDrawUsage = `usage: waitroom verify-draw [-commitment HEX] [-member ID [-place N]] URL

URL is the draw's list (https://wait.example/api/v1/queues/sale/draw) or
the queue's waiting page (https://wait.example/q/sale). Reads the whole
list and checks the revealed seed against its commitment (and against
-commitment, the one the waiting page showed before the opening), that
every line's places run 1..n lowest draw key first, and with -member that
the member id holds a place under HMAC-SHA256(seed, member id) (at -place).
Exits 0 when the draw checks out, 1 when it does not.
`

// verifyDrawTimeout bounds the whole read: a draw of a million is 200
// pages of 5,000.
const verifyDrawTimeout = 10 * time.Minute

func verifyDrawMain(args []string, hc *http.Client, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("verify-draw", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, verifyDrawUsage)
		fs.PrintDefaults()
	}
	var c client.DrawCheck
	fs.StringVar(&c.Commitment, "commitment", "", "the commitment published before the opening (hex)")
	fs.StringVar(&c.Member, "member", "", "a participant's member id (the answers' user_id)")
	fs.Int64Var(&c.Place, "place", 0, "the place the member was told")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 1 || (c.Place != 0 && c.Member == "") {
		fs.Usage()
		return 2
	}
	u, err := client.DrawURL(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(stderr, "waitroom verify-draw:", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), verifyDrawTimeout)
	defer cancel()
	d, err := client.FetchDraw(ctx, hc, u)
	if err != nil {
		fmt.Fprintln(stderr, "waitroom verify-draw:", err)
		return 1
	}
	rep, err := client.VerifyDraw(d, c)
	if err != nil {
		fmt.Fprintln(stderr, "waitroom verify-draw:", err)
		return 1
	}
	fmt.Fprintf(stdout, "ok: the draw of %s for %s checks out: %d places", d.Queue, d.DrawFor, rep.Count)
	if len(rep.Lines) > 1 {
		fmt.Fprintf(stdout, " in %d lines", len(rep.Lines))
	}
	fmt.Fprintf(stdout, ", seed %s (SHA-256 %s)\n", d.DrawSeed, d.DrawCommitment)
	if c.Member != "" {
		line := ""
		if rep.MemberLane != "" {
			line = " of lane " + rep.MemberLane
		}
		fmt.Fprintf(stdout, "ok: %s holds place %d%s under its own draw key\n", c.Member, rep.MemberPlace, line)
	}
	return 0
}
