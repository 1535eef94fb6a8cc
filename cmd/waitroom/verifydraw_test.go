package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/client"
)

// madeDraw is a draw of members as the service lists it (its seed fresh):
// each member's key HMAC-SHA256(seed, id), lowest first.
func madeDraw(members []string) client.Draw {
	seed := make([]byte, 32)
	_, _ = rand.Read(seed)
	sum := sha256.Sum256(seed)
	type e struct{ key, id []byte }
	var es []e
	for _, m := range members {
		h := hmac.New(sha256.New, seed)
		h.Write([]byte(m))
		id := sha256.Sum256([]byte(m))
		es = append(es, e{h.Sum(nil), id[:]})
	}
	slices.SortFunc(es, func(a, b e) int { return bytes.Compare(a.key, b.key) })
	d := client.Draw{Queue: "sale", DrawFor: "2026-12-24T09:00:00Z", DrawSeed: hex.EncodeToString(seed),
		DrawCommitment: hex.EncodeToString(sum[:]), Count: int64(len(es)), Complete: true,
		Lines: []client.DrawLine{{Lane: "", Count: int64(len(es))}}}
	for i, x := range es {
		d.Entries = append(d.Entries, client.DrawEntry{Place: int64(i + 1), IDSHA256: hex.EncodeToString(x.id), DrawKey: hex.EncodeToString(x.key)})
	}
	return d
}

// serveDraw serves d in pages of 3, as GET .../draw does.
func serveDraw(t *testing.T, d client.Draw) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/queues/sale/draw" {
			http.NotFound(w, r)
			return
		}
		from := 0
		fmt.Sscan(r.URL.Query().Get("cursor"), &from)
		p := d
		p.Entries = d.Entries[from:min(from+3, len(d.Entries))]
		p.NextCursor = ""
		if from+3 < len(d.Entries) {
			p.NextCursor = fmt.Sprint(from + 3)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(p)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// `waitroom verify-draw` exits 0 for a draw that checks out (from the
// list's URL or the waiting page's), 1 for one with two places swapped,
// a seed that is not the commitment's, another commitment than the one
// published, or the member missing, and 2 for arguments it cannot take.
func TestVerifyDraw(t *testing.T) {
	members := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	real := madeDraw(members)
	run := func(args ...string) (int, string) {
		var out, errOut bytes.Buffer
		code := verifyDrawMain(args, nil, &out, &errOut)
		return code, out.String() + errOut.String()
	}
	base := serveDraw(t, real)
	if code, out := run("-member", "c", base+"/q/sale"); code != 0 || !strings.Contains(out, "holds place") {
		t.Fatalf("the real draw: exit %d: %s", code, out)
	}
	if code, out := run("-commitment", real.DrawCommitment, base+"/api/v1/queues/sale/draw"); code != 0 {
		t.Fatalf("the real draw by its list's URL: exit %d: %s", code, out)
	}

	swapped := real
	swapped.Entries = slices.Clone(real.Entries)
	swapped.Entries[1].DrawKey, swapped.Entries[5].DrawKey = swapped.Entries[5].DrawKey, swapped.Entries[1].DrawKey
	swapped.Entries[1].IDSHA256, swapped.Entries[5].IDSHA256 = swapped.Entries[5].IDSHA256, swapped.Entries[1].IDSHA256
	otherSeed := real
	otherSeed.DrawSeed = madeDraw(members).DrawSeed
	missing := madeDraw([]string{"a", "b", "d", "e"})
	for name, c := range map[string]struct {
		d    client.Draw
		args []string
	}{
		"two places swapped":          {swapped, nil},
		"a seed not the commitment's": {otherSeed, nil},
		"another commitment":          {real, []string{"-commitment", madeDraw(members).DrawCommitment}},
		"a member missing":            {missing, []string{"-member", "c"}},
		"a place not the one told":    {real, []string{"-member", "c", "-place", "99"}},
	} {
		if code, out := run(append(c.args, serveDraw(t, c.d)+"/q/sale")...); code != 1 || !strings.Contains(out, "does not check out") {
			t.Errorf("%s: exit %d, want 1: %s", name, code, out)
		}
	}
	for _, args := range [][]string{{}, {"ftp://x/q/sale"}, {"https://x/elsewhere"}, {"-place", "3", base + "/q/sale"}} {
		if code, out := run(args...); code != 2 {
			t.Errorf("%q: exit %d, want 2: %s", args, code, out)
		}
	}
}
