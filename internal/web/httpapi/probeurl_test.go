package httpapi

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/waitroom/waitroom/internal/hygiene/safeurl"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/web/httpkit"
)

// TestPatchProbeURL: PATCH refuses an
// origin_probe_url to cloud metadata, loopback or a private network,
// however the address is written (generated forms, fixed seed), with 400
// invalid_probe_url naming the field, and stores nothing; a site's name
// is taken. With private targets allowed (WAITROOM_ORIGIN_PROBE_ALLOW_PRIVATE)
// a loopback URL is taken, link-local still is not.
func TestPatchProbeURL(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	e := newEnv(t, rdb, slow, testTimeout, Options{AdminToken: adminToken})
	rng := rand.New(rand.NewPCG(26, 130))
	hosts := []string{"169.254.169.254", "2852039166", "0251.0376.0251.0376", "0xa9.0xfe.0xa9.0xfe", "169.254.43518",
		"[::ffff:169.254.169.254]", "[::ffff:a9fe:a9fe]", "127.0.0.1", "localhost", "10.1.2.3", "192.168.0.1", "[fd00::1]", "[::1]"}
	for range 40 {
		a := [4]byte{169, 254, byte(rng.IntN(256)), byte(rng.IntN(256))}
		n := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
		hosts = append(hosts, []string{fmt.Sprint(n), fmt.Sprintf("0x%x", n), fmt.Sprintf("%#o.%#o.%d.%d", a[0], a[1], a[2], a[3]),
			fmt.Sprintf("[::ffff:%d.%d.%d.%d]", a[0], a[1], a[2], a[3])}[rng.IntN(4)])
	}
	for _, h := range hosts {
		u := "http://" + h + ":8081/healthz"
		r := e.patch(fmt.Sprintf(`{"origin_probe_url":%q}`, u))
		wantError(t, r, 400, "invalid_probe_url")
		var body httpkit.ErrorBody
		if json.Unmarshal(r.body, &body) != nil || body.Error.Field != "origin_probe_url" {
			t.Fatalf("%s: %s", u, r.body)
		}
	}
	if aq := e.adminQueue(); aq.OriginProbeURL != "" {
		t.Fatalf("stored %q", aq.OriginProbeURL)
	}
	if r := e.patch(`{"origin_probe_url":"https://orders.example/healthz"}`); r.status != 200 {
		t.Fatalf("a site's name: %d %s", r.status, r.body)
	}

	open := newEnv(t, rdb, slow, testTimeout, Options{AdminToken: adminToken, ProbePolicy: safeurl.Policy{AllowLoopback: true, AllowPrivate: true}})
	if r := open.patch(`{"origin_probe_url":"http://127.0.0.1:8081/healthz"}`); r.status != 200 {
		t.Fatalf("loopback, allowed: %d %s", r.status, r.body)
	}
	wantError(t, open.patch(`{"origin_probe_url":"http://[::ffff:169.254.169.254]/"}`), 400, "invalid_probe_url")
}
