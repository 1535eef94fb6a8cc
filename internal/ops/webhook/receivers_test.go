package webhook_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/ops/webhook"
)

// TestReceiversGenerated: docs/WEBHOOKS.md's two receivers, the Go
// one (example_test.go, which TestDocReceiverIsTheExample keeps equal
// to the doc's) and the Python one (run as python3 from the doc's
// block itself), each take generated signature headers: valid ones, wrong
// and uppercase MACs, non-ASCII bytes (v1=é, whose str comparison made the
// Python receiver answer 500), malformed and missing parts, old, signed,
// long and non-ASCII timestamps, several v1 and t, a missing header, a
// tampered body. Each answers 2xx exactly when webhook.Verify accepts,
// else 4xx, never 5xx, never a dropped connection.
func TestReceiversGenerated(t *testing.T) {
	receivers := map[string]string{
		"go":     goReceiver(t),
		"python": pythonReceiver(t),
	}
	cases := examples(time.Now())
	r := rand.New(rand.NewPCG(26, 15))
	for range 400 {
		cases = append(cases, genCase(r, time.Now()))
	}
	valid, invalid := 0, 0
	for i, c := range cases {
		ok := c.header != nil && webhook.Verify(secret, *c.header, c.sent, time.Now(), webhook.Tolerance) == nil
		if ok {
			valid++
		} else {
			invalid++
		}
		for name, url := range receivers {
			status, err := post(url, c)
			switch {
			case err != nil:
				t.Fatalf("case %d (%s), %s receiver: %v", i, c, name, err)
			case status >= 500:
				t.Fatalf("case %d (%s), %s receiver: %d", i, c, name, status)
			case ok != (status/100 == 2):
				t.Fatalf("case %d (%s), %s receiver: %d, want 2xx only for valid (valid: %v)", i, c, name, status, ok)
			case !ok && status/100 != 4:
				t.Fatalf("case %d (%s), %s receiver: %d for an invalid signature, want 4xx", i, c, name, status)
			}
		}
	}
	t.Logf("%d valid and %d invalid signatures, both receivers agreeing with Verify", valid, invalid)
	if valid < 40 || invalid < 200 {
		t.Fatalf("the generator made %d valid and %d invalid: too few of one", valid, invalid)
	}
}

// sigCase is one request: the header (nil: none) and the body sent.
type sigCase struct {
	header *string
	sent   []byte
}

func (c sigCase) String() string {
	if c.header == nil {
		return "no header"
	}
	return strconv.Quote(tail(*c.header, 200))
}

// examples are the cases named in the issue, first: valid, v1=é (a 500
// in the Python receiver before), a missing or old t, several v1, a
// malformed header.
func examples(now time.Time) []sigCase {
	body := []byte(`{"events":[{"id":"q.1-0.0","type":"admitted","queue":"q","sub":"u1","time":"2026-11-24T19:00:00Z"}]}`)
	ts := strconv.FormatInt(now.Unix(), 10)
	right := webhook.Sign(secret, now, body)[len("t="+ts+",v1="):]
	old := webhook.Sign(secret, now.Add(-10*time.Minute), body)
	var out []sigCase
	for _, h := range []string{
		"t=" + ts + ",v1=" + right,
		"t=" + ts + ",v1=é",
		"t=" + ts + ",v1=" + right[:63] + "é",
		"v1=" + right,
		old,
		"t=" + ts + ",v1=" + right + ",v1=00",
		"t=" + ts + ",v1=00,v1=" + right,
		"t=" + ts + ",v1=00,v1=é",
		"t=,v1=",
		"garbage",
		"t=" + ts + ";v1=" + right,
	} {
		out = append(out, sigCase{header: &h, sent: body})
	}
	return out
}

// genCase makes a header for a body: a timestamp now, old, malformed or
// none; v1 values right, wrong or of stray bytes; other parts; shuffled.
func genCase(r *rand.Rand, now time.Time) sigCase {
	body := []byte(fmt.Sprintf(`{"events":[{"id":"q.%d-0.0","type":"admitted","queue":"q","sub":"u%d","time":"2026-11-24T19:00:00Z"}]}`, r.IntN(1e6), r.IntN(1e6)))
	if r.IntN(40) == 0 {
		return sigCase{sent: body}
	}
	ts := genTimestamp(r, now)
	m := hmac.New(sha256.New, secret)
	fmt.Fprintf(m, "%s.%s", ts, body)
	right := hex.EncodeToString(m.Sum(nil))

	var parts []string
	if r.IntN(12) != 0 {
		parts = append(parts, "t="+ts)
	}
	if r.IntN(8) == 0 { // another t, before or after: the last counts
		parts = append(parts, "t="+genTimestamp(r, now))
	}
	for range 1 + r.IntN(3) {
		parts = append(parts, "v1="+genMAC(r, right))
	}
	for range r.IntN(3) {
		parts = append(parts, pick(r, "v0="+right, "v2=x", "foo", "", "=", "v1", " v1="+right, "t", "V1="+right))
	}
	r.Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
	sep := ","
	if r.IntN(10) == 0 {
		sep = ", "
	}
	// No space or tab at either end: servers trim those before a
	// receiver sees the header.
	h := strings.Trim(strings.Join(parts, sep), " \t")
	sent := body
	if r.IntN(15) == 0 { // a tampered body
		sent = bytes.Replace(body, []byte(`"u`), []byte(`"x`), 1)
	}
	return sigCase{header: &h, sent: sent}
}

func genTimestamp(r *rand.Rand, now time.Time) string {
	fresh := strconv.FormatInt(now.Unix()+int64(r.IntN(581)-290), 10) // well within 5 min
	switch r.IntN(14) {
	case 0:
		return strconv.FormatInt(now.Unix()-int64(310+r.IntN(1e6)), 10) // old
	case 1:
		return strconv.FormatInt(now.Unix()+int64(310+r.IntN(1e6)), 10) // ahead
	case 2:
		return pick(r, "", "abc", "1e9", "0x1f", "¹²³", "١٧٩٥٣٠٥٧٩٨", "１７９５３０５７９８", "é", "\xe9", "-1", "9223372036854775808")
	case 3:
		return "+" + fresh
	case 4:
		return "00" + fresh // 12 digits: still a number within tolerance
	case 5:
		return "000" + fresh // 13: too long
	case 6:
		return strings.Repeat("9", 5000)
	case 7:
		return fresh + " "
	default:
		return fresh
	}
}

func genMAC(r *rand.Rand, right string) string {
	switch r.IntN(10) {
	case 0, 1, 2, 3:
		return right
	case 4:
		return strings.ToUpper(right)
	case 5:
		return right[:len(right)-1]
	case 6:
		return pick(r, "é", "\xe9", "\xc3", right[:63]+"é", "ñ"+right)
	case 7:
		b := make([]byte, r.IntN(80))
		for i := range b {
			b[i] = byte(0x20 + r.IntN(0xe0)) // printable ASCII and any high byte
			if b[i] == 0x7f {
				b[i] = '~'
			}
		}
		return string(b)
	case 8:
		return ""
	default:
		b := make([]byte, 32)
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return hex.EncodeToString(b) // a wrong MAC
	}
}

func pick(r *rand.Rand, s ...string) string { return s[r.IntN(len(s))] }

func post(url string, c sigCase) (int, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(c.sent))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.header != nil {
		req.Header.Set(webhook.SignatureHeader, *c.header)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// goReceiver serves docs/WEBHOOKS.md's Go receiver (example_test.go).
func goReceiver(t *testing.T) string {
	srv := httptest.NewServer(receiver(secret, func([]byte) {}))
	t.Cleanup(srv.Close)
	return srv.URL + "/your/hook"
}

// pythonReceiver runs docs/WEBHOOKS.md's Python receiver, as the doc shows
// it, on a port it picks, and returns its URL.
func pythonReceiver(t *testing.T) string {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		msg := "python3 not found; run scripts/install-tools.sh test"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	src := docPython(t)
	file := filepath.Join(t.TempDir(), "receiver.py")
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, python, file)
	cmd.Env = append(os.Environ(), "WAITROOM_WEBHOOK_SECRET="+string(secret), "PORT=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("python receiver's stderr (tail):\n%s", tail(stderr.String(), 3000))
		}
	})
	port := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if p, ok := strings.CutPrefix(sc.Text(), "listening on port "); ok {
				port <- p
			}
		}
	}()
	select {
	case p := <-port:
		return "http://127.0.0.1:" + p + "/your/hook"
	case <-time.After(60 * time.Second):
		t.Fatalf("the python receiver did not start: %s", stderr.String())
	}
	return ""
}

// webhooksDoc is where the receivers are shown to the sites' developers.
const webhooksDoc = "../../../docs/WEBHOOKS.md"

// docPython is docs/WEBHOOKS.md's Python receiver: the python block after
// "**In Python**".
func docPython(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile(webhooksDoc)
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "**In Python**")
	if ok {
		_, after, ok = strings.Cut(after, "```python\n")
	}
	src, _, closed := strings.Cut(after, "```\n")
	if !ok || !closed || !strings.Contains(src, "def verified(") {
		t.Fatal("no Python receiver in " + webhooksDoc + " after **In Python**")
	}
	return src
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
