package client_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"testing"

	"github.com/waitroom/waitroom/client"
)

// lineOf is one line of a made draw: its members' entries, lowest key
// first.
func lineOf(seed []byte, lane string, members ...string) []client.DrawEntry {
	type e struct{ key, id []byte }
	var es []e
	for _, m := range members {
		h := hmac.New(sha256.New, seed)
		h.Write([]byte(m))
		id := sha256.Sum256([]byte(m))
		es = append(es, e{h.Sum(nil), id[:]})
	}
	slices.SortFunc(es, func(a, b e) int { return bytes.Compare(a.key, b.key) })
	out := make([]client.DrawEntry, len(es))
	for i, x := range es {
		out[i] = client.DrawEntry{Lane: lane, Place: int64(i + 1), IDSHA256: hex.EncodeToString(x.id), DrawKey: hex.EncodeToString(x.key)}
	}
	return out
}

// A draw of two lines checks out line by line, a lane's member found in
// its lane; entries of one line listed as the other's, or a count that
// is not the lines', do not.
func TestVerifyDrawLines(t *testing.T) {
	seed := bytes.Repeat([]byte{7}, 32)
	sum := sha256.Sum256(seed)
	general, vip := lineOf(seed, "", "a", "b", "c"), lineOf(seed, "vip", "l:vip:x", "l:vip:y")
	d := client.Draw{DrawSeed: hex.EncodeToString(seed), DrawCommitment: hex.EncodeToString(sum[:]), Count: 5, Complete: true,
		Lines: []client.DrawLine{{Lane: "", Count: 3}, {Lane: "vip", Count: 2}}, Entries: append(slices.Clone(general), vip...)}
	rep, err := client.VerifyDraw(d, client.DrawCheck{Member: "l:vip:y"})
	if err != nil || rep.MemberLane != "vip" || rep.MemberPlace < 1 {
		t.Fatalf("a draw of two lines: %+v %v", rep, err)
	}
	wrongLine := d
	wrongLine.Entries = slices.Clone(d.Entries)
	wrongLine.Entries[3].Lane = ""
	short := d
	short.Count = 6
	incomplete := d
	incomplete.Complete = false
	for name, bad := range map[string]client.Draw{"a lane's place listed as the general line's": wrongLine, "a count beyond the lines": short, "still being placed": incomplete} {
		if _, err := client.VerifyDraw(bad, client.DrawCheck{}); !errors.Is(err, client.ErrDrawMismatch) {
			t.Errorf("%s: %v, want a mismatch", name, err)
		}
	}
}

// DrawURL takes a list's address, a waiting page's or a verifier page's.
func TestDrawURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://w.example/api/v1/queues/sale/draw":         "https://w.example/api/v1/queues/sale/draw",
		"https://w.example/api/v1/queues/sale/draw?limit=9": "https://w.example/api/v1/queues/sale/draw",
		"https://w.example/q/sale":                          "https://w.example/api/v1/queues/sale/draw",
		"https://w.example/q/sale/verify#member=a":          "https://w.example/api/v1/queues/sale/draw",
		"http://w.example/prefix/q/sale/":                   "http://w.example/prefix/api/v1/queues/sale/draw",
	} {
		if got, err := client.DrawURL(in); err != nil || got != want {
			t.Errorf("DrawURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"ftp://w.example/q/sale", "https://w.example/elsewhere", "/q/sale"} {
		if _, err := client.DrawURL(in); err == nil {
			t.Errorf("DrawURL(%q) took it", in)
		}
	}
}
