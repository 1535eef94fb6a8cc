package handoff

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"strings"

	"github.com/skip2/go-qrcode"

	"github.com/waitroom/waitroom/internal/engine/queue"
)

// A hand-over's QR code. Drawing one costs milliseconds of
// CPU, so the picture is
//   - of a link on the configured public URL (SetPublicURL), never on the
//     request's Host: a 2 kB Host made a version-40 code (17.8 ms each);
//   - limited per place and per client in this process (qrlimits.go),
//     before anything else, so a flood is answered 429 without Redis;
//   - drawn once per hand-over and kept until it expires (qrcache.go), so
//     asking again costs neither Redis nor CPU;
//   - drawn by at most qrDrawers goroutines at once, so however many
//     clients ask, the rest of the process keeps CPU to answer others.

// QRSize is the side of a QR code image, in pixels.
const QRSize = 256

// ErrNoPublicURL: QR codes are off, no public URL is configured
// (WAITROOM_PUBLIC_URL): a link on the request's Host would be the
// client's to choose.
var ErrNoPublicURL = errors.New("handoff: no public URL configured: QR codes are off")

// qrDrawers is how many QR codes the process draws at once: half its
// CPUs, at least one.
var qrDrawers = max(1, runtime.GOMAXPROCS(0)/2)

// QR is link as a QR code, a PNG image. Medium error correction (15 %)
// survives a phone camera's glare on a laptop screen; a link with a
// 43-character token on a short public URL fits in a version 5 or 6
// code. (Most of its ~3 ms goes to choosing the code's mask, not to the
// PNG: a faster compression saved nothing measurable, BenchmarkQR.)
func QR(link string) ([]byte, error) {
	return qrcode.Encode(link, qrcode.Medium, QRSize)
}

// Path is the waiting page that takes over the place of token's
// hand-over in q, on this service.
func Path(q, token string) string {
	return "/q/" + url.PathEscape(q) + "?handoff=" + url.QueryEscape(token)
}

// CheckPublicURL reads the public URL the links of QR codes start with:
// an absolute http(s) URL of an origin (no user, path, query or
// fragment), returned without a trailing slash.
func CheckPublicURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" ||
		strings.ContainsAny(raw, " \t\r\n") {
		return "", fmt.Errorf("handoff: public URL %q: want scheme://host[:port], e.g. https://waitroom.example", raw)
	}
	return u.Scheme + "://" + u.Host, nil
}

// SetPublicURL sets the public URL (CheckPublicURL) the links of QR
// codes start with; without it, QR returns ErrNoPublicURL. Call it before
// serving.
func (s *Service) SetPublicURL(raw string) error {
	base, err := CheckPublicURL(raw)
	if err != nil {
		return err
	}
	s.qr.base = base
	return nil
}

// QR is the QR code (a PNG) of member's live hand-over token in q, asked
// for by client (clientip.Key; "" for none). It fails with a *queue.Retry
// of queue.ErrRateLimited over the per-place or per-client limit (no
// Redis call then), ErrInvalid when token is not member's live hand-over,
// ErrNoPublicURL when QR codes are off.
func (s *Service) QR(ctx context.Context, q, member, token, client string) ([]byte, error) {
	if s.qr.base == "" {
		return nil, ErrNoPublicURL
	}
	if !s.tracker.has(q) {
		return nil, queue.ErrUnknownQueue
	}
	if wait := s.qr.limits.take(q, member, client); wait > 0 {
		return nil, &queue.Retry{Err: queue.ErrRateLimited, After: wait}
	}
	if !isToken(token) {
		return nil, ErrInvalid
	}
	return s.qr.cache.get(ctx, qrKey(q, member, token), func() (qrEntry, error) {
		at, err := s.expiry(ctx, q, member, token)
		if err != nil {
			return qrEntry{}, err
		}
		png, err := s.qr.draw(ctx, s.qr.base+Path(q, token))
		return qrEntry{png: png, until: at}, err
	})
}

// qrs is a Service's QR codes: the public URL, the limits, the pictures
// drawn and the drawing slots.
type qrs struct {
	base    string // "": off
	limits  *qrLimits
	cache   *qrCache
	drawers chan struct{}
}

func newQRs() qrs {
	return qrs{limits: newQRLimits(), cache: newQRCache(MaxCachedQRs), drawers: make(chan struct{}, qrDrawers)}
}

// draw is QR(link) in one of the drawing slots, waiting for one as long
// as ctx lasts.
func (q *qrs) draw(ctx context.Context, link string) ([]byte, error) {
	select {
	case q.drawers <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-q.drawers }()
	return QR(link)
}

// qrKey names the picture of token's hand-over of member's place in q:
// a hash, so the cache holds no token.
func qrKey(q, member, token string) string {
	return hash(q + "\x00" + member + "\x00" + token)
}
