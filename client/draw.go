package client

// Checking a scheduled opening's draw (docs/DRAW.md) from its public
// list, GET /api/v1/queues/{queue}/draw: the same checks as the
// verifier page (web/static/verify-draw.js) and `waitroom verify-draw`.

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Draw is a draw's list as the service publishes it: the record (every
// page carries it) and every page's entries.
type Draw struct {
	Queue          string      `json:"queue"`
	DrawFor        string      `json:"draw_for"`
	DrawCommitment string      `json:"draw_commitment"`
	DrawSeed       string      `json:"draw_seed"`
	Count          int64       `json:"count"`
	Complete       bool        `json:"complete"`
	Lines          []DrawLine  `json:"lines"`
	Entries        []DrawEntry `json:"entries"`
	NextCursor     string      `json:"next_cursor,omitempty"`
}

// DrawLine is one line of a draw (lane "": the general line) and how
// many places it has.
type DrawLine struct {
	Lane  string `json:"lane"`
	Count int64  `json:"count"`
}

// DrawEntry is one place of a draw: the SHA-256 of the member id holding
// it and its draw key, HMAC-SHA256(seed, member id), both hex.
type DrawEntry struct {
	Lane     string `json:"lane,omitempty"`
	Place    int64  `json:"place"`
	IDSHA256 string `json:"id_sha256"`
	DrawKey  string `json:"draw_key"`
}

// DrawCheck says what to check beyond the draw itself.
type DrawCheck struct {
	// Commitment is the commitment the participant saw before the
	// opening (the waiting page's "the draw is sealed: ..."); "": the
	// list's own is taken as it is.
	Commitment string
	// Member is a participant's member id (the answers' user_id): its
	// place must be in the list, under its own draw key.
	Member string
	// Place, with Member, is the place the participant was told (0: not
	// checked).
	Place int64
}

// DrawReport is what a draw that passed the checks says.
type DrawReport struct {
	Count int64
	Lines []DrawLine
	// MemberPlace and MemberLane: DrawCheck.Member's place and line.
	MemberPlace int64
	MemberLane  string
}

// ErrDrawMismatch is every failed check of VerifyDraw: the draw does not
// hold up (errors.Is; the message says which check failed).
var ErrDrawMismatch = errors.New("the draw does not check out")

func mismatch(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrDrawMismatch, fmt.Sprintf(format, a...))
}

// VerifyDraw checks a draw's whole list (d, all its pages' entries in
// order): that the seed revealed hashes to the commitment published
// before (and to c.Commitment, when given), that each line's places run
// 1..count with the draw keys strictly ascending (the order is lowest key
// first, which no swap of two places survives), that the lines add up to
// the count, no member id is listed twice, and, with c.Member, that the
// member holds a place under HMAC-SHA256(seed, member id) (and at
// c.Place). Every failure wraps ErrDrawMismatch.
func VerifyDraw(d Draw, c DrawCheck) (DrawReport, error) {
	if !d.Complete {
		return DrawReport{}, mismatch("the draw is still being placed: check it again in a few seconds")
	}
	if d.DrawSeed == "" || d.DrawCommitment == "" {
		return DrawReport{}, mismatch("the draw has no revealed seed (its participants joined before draws were sealed)")
	}
	seed, err := hex.DecodeString(d.DrawSeed)
	if err != nil || len(seed) != 32 {
		return DrawReport{}, mismatch("the seed %q is not 64 hex digits", d.DrawSeed)
	}
	sum := sha256.Sum256(seed)
	if got := hex.EncodeToString(sum[:]); got != strings.ToLower(d.DrawCommitment) {
		return DrawReport{}, mismatch("the seed's SHA-256 is %s, not the commitment %s", got, d.DrawCommitment)
	}
	if c.Commitment != "" && !strings.EqualFold(c.Commitment, d.DrawCommitment) {
		return DrawReport{}, mismatch("the draw's commitment %s is not the one published before the opening, %s", d.DrawCommitment, c.Commitment)
	}
	rep := DrawReport{Count: d.Count, Lines: d.Lines}
	var memberID []byte
	if c.Member != "" {
		h := sha256.Sum256([]byte(c.Member))
		memberID = h[:]
	}
	seen := make(map[[32]byte]bool, len(d.Entries))
	i, total := 0, int64(0)
	for _, line := range d.Lines {
		var prev []byte
		for place := int64(1); place <= line.Count; place++ {
			if i >= len(d.Entries) {
				return DrawReport{}, mismatch("line %q: place %d is missing (the list ends)", line.Lane, place)
			}
			e := d.Entries[i]
			i++
			if e.Lane != line.Lane || e.Place != place {
				return DrawReport{}, mismatch("line %q: place %d is listed as line %q place %d", line.Lane, place, e.Lane, e.Place)
			}
			id, err1 := hex.DecodeString(e.IDSHA256)
			key, err2 := hex.DecodeString(e.DrawKey)
			if err1 != nil || err2 != nil || len(id) != 32 || len(key) != 32 {
				return DrawReport{}, mismatch("line %q place %d: the id hash or draw key is not 64 hex digits", line.Lane, place)
			}
			if prev != nil && bytes.Compare(prev, key) >= 0 {
				return DrawReport{}, mismatch("line %q: place %d's draw key is not above place %d's: the order is not lowest key first", line.Lane, place, place-1)
			}
			prev = key
			if seen[[32]byte(id)] {
				return DrawReport{}, mismatch("line %q place %d: a member id listed twice", line.Lane, place)
			}
			seen[[32]byte(id)] = true
			if memberID != nil && bytes.Equal(id, memberID) {
				m := hmac.New(sha256.New, seed)
				m.Write([]byte(c.Member))
				if !bytes.Equal(key, m.Sum(nil)) {
					return DrawReport{}, mismatch("the member's place %d holds the draw key %s, not HMAC-SHA256(seed, member id) = %x", place, e.DrawKey, m.Sum(nil))
				}
				rep.MemberPlace, rep.MemberLane = place, line.Lane
			}
		}
		total += line.Count
	}
	if i != len(d.Entries) {
		return DrawReport{}, mismatch("%d entries beyond the lines' places", len(d.Entries)-i)
	}
	if total != d.Count {
		return DrawReport{}, mismatch("the lines hold %d places, the draw says %d", total, d.Count)
	}
	if memberID != nil && rep.MemberPlace == 0 {
		return DrawReport{}, mismatch("the member is missing from the draw")
	}
	if c.Place > 0 && rep.MemberPlace != c.Place {
		return DrawReport{}, mismatch("the member was told place %d; the list has it at %d", c.Place, rep.MemberPlace)
	}
	return rep, nil
}

// DrawURL is the draw list's address for u: a list's own
// (".../api/v1/queues/{queue}/draw"), or a queue's waiting page
// (".../q/{queue}") or verifier page (".../q/{queue}/verify").
func DrawURL(u string) (string, error) {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return "", fmt.Errorf("client: %q is not an http(s) URL", u)
	}
	p.RawQuery, p.Fragment = "", ""
	path := strings.TrimSuffix(p.Path, "/")
	switch parts := strings.Split(path, "/"); {
	case strings.HasSuffix(path, "/draw") && strings.Contains(path, "/api/v1/queues/"):
	case len(parts) >= 3 && parts[len(parts)-3] == "q" && parts[len(parts)-1] == "verify":
		path = strings.Join(parts[:len(parts)-3], "/") + "/api/v1/queues/" + parts[len(parts)-2] + "/draw"
	case len(parts) >= 2 && parts[len(parts)-2] == "q":
		path = strings.Join(parts[:len(parts)-2], "/") + "/api/v1/queues/" + parts[len(parts)-1] + "/draw"
	default:
		return "", fmt.Errorf("client: %q is neither a draw's list (/api/v1/queues/{queue}/draw) nor a waiting page (/q/{queue})", u)
	}
	p.Path, p.RawPath = path, ""
	return p.String(), nil
}

// maxDrawPage bounds one page's body (5,000 entries of about 170 bytes).
const maxDrawPage = 4 << 20

// FetchDraw reads a draw's whole list from its address (DrawURL's), page
// by page, each page's record checked to be the first's (a new draw made
// while it was read fails). hc nil: http.DefaultClient.
func FetchDraw(ctx context.Context, hc *http.Client, listURL string) (Draw, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	var all Draw
	cursor := ""
	for page := 0; ; page++ {
		u := listURL + "?limit=5000"
		if cursor != "" {
			u += "&cursor=" + url.QueryEscape(cursor)
		}
		var d Draw
		if err := getJSON(ctx, hc, u, &d); err != nil {
			return Draw{}, err
		}
		if page == 0 {
			all = d
			all.Entries = nil
		} else if d.DrawCommitment != all.DrawCommitment || d.DrawSeed != all.DrawSeed || d.Count != all.Count || d.Complete != all.Complete {
			return Draw{}, mismatch("the draw changed while it was read (page %d is of another draw or state)", page+1)
		}
		all.Entries = append(all.Entries, d.Entries...)
		if d.NextCursor == "" {
			all.NextCursor = ""
			return all, nil
		}
		if d.NextCursor == cursor || page > 1_000_000 {
			return Draw{}, fmt.Errorf("client: the draw's pages do not end")
		}
		cursor = d.NextCursor
	}
}

func getJSON(ctx context.Context, hc *http.Client, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDrawPage+1))
	if err != nil {
		return err
	}
	if len(body) > maxDrawPage {
		return fmt.Errorf("client: %s: an answer over %d bytes", u, maxDrawPage)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		_ = json.Unmarshal(body, &e)
		return fmt.Errorf("client: %s: %s %s %s", u, resp.Status, e.Error.Code, e.Error.Message)
	}
	return json.Unmarshal(body, v)
}
