package rediskeys

import (
	"strings"
	"testing"
)

// TestNamesAreStable pins every key's name byte for byte: the names are
// those of stored data, and a deployed waitroom keeps its state across an
// upgrade only while they stay as they are.
func TestNamesAreStable(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Waiting("a"), "wr:{a}:waiting"},
		{Entered("a"), "wr:{a}:entered"},
		{Tokens("a"), "wr:{a}:tokens"},
		{Seq("a"), "wr:{a}:seq"},
		{Config("a"), "wr:{a}:config"},
		{Tick("a"), "wr:{a}:tick"},
		{History("a"), "wr:{a}:history"},
		{Heard("a"), "wr:{a}:heard"},
		{Held("a"), "wr:{a}:held"},
		{Stale("a"), "wr:{a}:stale"},
		{Gone("a"), "wr:{a}:gone"},
		{Draw("a"), "wr:{a}:draw"},
		{DrawKeys("a"), "wr:{a}:drawkeys"},
		{DrawList("a"), "wr:{a}:drawlist"},
		{DrawSeed("a"), "wr:{a}:drawseed"},
		{Admitted("a"), "wr:{a}:admitted"},
		{Arrivals("a"), "wr:{a}:arrivals"},
		{Samples("a"), "wr:{a}:samples"},
		{Inside("a"), "wr:{a}:inside"},
		{Events("a"), "wr:{a}:events"},
		{BulkEvents("a"), "wr:{a}:events:bulk"},
		{Gen("a"), "wr:{a}:gen"},
		{Moved("a"), "wr:{a}:moved"},
		{ArrivalRate("a"), "wr:{a}:arrival_rate"},
		{NetPlaces("a", "192.0.2.0/24"), "wr:{a}:netplaces:192.0.2.0/24"},
		{ClientRate("a", "enter", "192.0.2.7"), "wr:{a}:rate:enter:c:192.0.2.7"},
		{PlaceRate("a", "status", "u1"), "wr:{a}:rate:status:p:u1"},
		{NetworkRate("a", "enter", "2001:db8::/48"), "wr:{a}:rate:enter:n:2001:db8::/48"},
		{HeldReturns("a", "198.51.100.0/24"), "wr:{a}:heldback:198.51.100.0/24"},
		{Proof("a", "ch1"), "wr:{a}:pow:ch1"},
		{Unused("a"), "wr:{a}:unused"},
		{Lane("a", "priority", "waiting"), "wr:{a}:lane:priority:waiting"},
		{Lanes("a"), "wr:{a}:lanes"},
		{Schedule("a"), "wr:{a}:schedule"},
		{Codes("a"), "wr:{a}:codes"},
		{CodeBatches("a"), "wr:{a}:codes:batches"},
		{CodeGuesses("a", "n:198.51.100.0/24"), "wr:{a}:codeguess:n:198.51.100.0/24"},
		{DeadEvents("a"), "wr:{a}:events:dead"},
		{Audit("a"), "wr:{a}:audit"},
		{GateFailOpen("a"), "wr:{a}:gate_fail_open"},
		{Origin("a"), "wr:{a}:origin"},
		{OriginLease("a"), "wr:{a}:origin:lease"},
		{HandoffLive("a"), "wr:{a}:handoff:live"},
		{HandoffExpires("a"), "wr:{a}:handoff:expires"},
		{HandoffQueueTries("a"), "wr:{a}:handoff:tries:q"},
		{HandoffClientTries("a", "192.0.2.7"), "wr:{a}:handoff:tries:c:192.0.2.7"},
		{HandoffUnused("a"), "wr:{a}:handoff:unused"},
		{PassLinkUsed("a", "j1"), "wr:{a}:handover:j1"},
		{AdmissionClients("a", "1700000000000", "u1"), "wr:{a}:admclients:1700000000000:u1"},
		{Paid("a", "29500000"), "wr:{a}:paid:29500000"},
		{Secrets, "wr:secrets"},
		{Lockout("192.0.2.7"), "wr:lockout:192.0.2.7"},
		{HumanToken("ab12"), "wr:human:ab12"},
		{APITokens, "wr:{~admin}:tokens"},
		{APITokenExpiry, "wr:{~admin}:tokens:expiry"},
		{APITokenUsed, "wr:{~admin}:tokens:used"},
		{Session("s1"), "wr:{~admin}:session:s1"},
		{PersonSessions("kim@example.com"), "wr:{~admin}:person:kim@example.com"},
		{SignIn("st1"), "wr:{~admin}:signin:st1"},
	} {
		if c.got != c.want {
			t.Errorf("key %q, want %q", c.got, c.want)
		}
	}
}

// TestRegistryMatchesBuilders holds each row of All to its builder, and
// the rows to one per key.
func TestRegistryMatchesBuilders(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range All() {
		if got := k.build(); got != k.Pattern {
			t.Errorf("row %q: its builder spells %q", k.Pattern, got)
		}
		if seen[k.Pattern] {
			t.Errorf("row %q twice", k.Pattern)
		}
		seen[k.Pattern] = true
		switch k.Type {
		case "STRING", "HASH", "LIST", "SET", "ZSET", "STREAM":
		default:
			t.Errorf("row %q: type %q", k.Pattern, k.Type)
		}
		if !strings.HasPrefix(k.Owner, "internal/") || k.Doc == "" {
			t.Errorf("row %q: owner %q, doc %q", k.Pattern, k.Owner, k.Doc)
		}
		if strings.HasPrefix(k.Pattern, "wr:{") && !strings.HasPrefix(k.Pattern, prefix(q)) && !strings.HasPrefix(k.Pattern, adminPrefix) {
			t.Errorf("row %q: a queue's key outside the queue's hash tag", k.Pattern)
		}
	}
	if len(seen) != 59 {
		t.Errorf("%d rows; a key added or removed? update TestNamesAreStable too", len(seen))
	}
}
