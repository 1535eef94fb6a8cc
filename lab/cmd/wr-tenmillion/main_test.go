package main

import "testing"

func TestParseMarks(t *testing.T) {
	got, err := parseMarks("5_000_000, 1000000,10000000")
	if err != nil || len(got) != 3 || got[0] != 1_000_000 || got[2] != 10_000_000 {
		t.Fatalf("parseMarks = %v, %v", got, err)
	}
	for _, bad := range []string{"0", "x", "1,1"} {
		if _, err := parseMarks(bad); err == nil {
			t.Errorf("parseMarks(%q): no error", bad)
		}
	}
}

func TestFillMemberIsAsLongAsTheServers(t *testing.T) {
	// The server's members are "a:" and 22 characters (24 bytes).
	for _, i := range []int64{0, 9_999_999, 1 << 40} {
		if m := fillMember(i); len(m) != 24 {
			t.Errorf("fillMember(%d) = %q, %d bytes", i, m, len(m))
		}
	}
}

func TestClientAddrAsWrMillion(t *testing.T) {
	// lib.sh: wr_client_addr 0 = 11.0.0.0, 1 = 11.0.158.55.
	if a, b := clientAddr(0), clientAddr(1); a != "11.0.0.0" || b != "11.0.158.55" {
		t.Fatalf("clientAddr = %s, %s", a, b)
	}
}

func TestSeqAndMember(t *testing.T) {
	seq, m, err := seqAndMember("v2.default.YTpTZEZxc1NvWFRNOE9aak1CVGZKTVB3.10000007.mac")
	if err != nil || seq != 10000007 || m != "a:SdFqsSoXTM8OZjMBTfJMPw" {
		t.Fatalf("seqAndMember = %d, %q, %v", seq, m, err)
	}
}

func TestFIFOFindsABreak(t *testing.T) {
	ok := []rec{{sent: 0, ack: 10, seq: 1}, {sent: 20, ack: 30, seq: 2}}
	if _, breaks, _ := fifo(ok); breaks != 0 {
		t.Fatalf("breaks = %d, want 0", breaks)
	}
	bad := []rec{{sent: 0, ack: 10, seq: 2}, {sent: 20, ack: 30, seq: 1}}
	if _, breaks, _ := fifo(bad); breaks != 1 {
		t.Fatalf("breaks = %d, want 1", breaks)
	}
}
