package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/infra/rediskeys"
)

// runBurst is the opening burst: cfg.burst new users (index users+i) each
// enter once, open loop, their sends spread evenly over cfg.burstFor from
// the window's start; an acknowledged place then polls as told, like the
// rest. An enter that fails is not retried: it is counted, and its user
// has no place to check.
func (g *gen) runBurst(ctx context.Context, per []stats) {
	jobs := make(chan call, g.cfg.burst)
	var wg sync.WaitGroup
	for w := range per {
		wg.Go(func() {
			st := &per[w]
			c := &conn{addr: g.addr}
			defer c.close()
			var req []byte
			for j := range jobs {
				if ctx.Err() != nil {
					return
				}
				req = g.burstEnter(c, req, j, st)
			}
		})
	}
	// CPU and Redis commands over the burst's span, for the cost of an
	// enter (the polls go on meanwhile; the report says how many).
	g.burstSpan[0] = g.span(ctx)
	start := g.now()
	step := float64(g.cfg.burstFor) / float64(g.cfg.burst)
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for i := 0; i < g.cfg.burst; {
		now := g.now()
		for ; i < g.cfg.burst; i++ {
			due := start + int64(float64(i)*step)
			if due > now {
				break
			}
			jobs <- call{due: due, user: int32(g.cfg.users + i)}
		}
		t.Reset(time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			i = g.cfg.burst
		}
	}
	close(jobs)
	wg.Wait()
	g.burstSpan[1] = g.span(ctx)
}

// spanMark is a moment's CPU, Redis commands and status calls answered.
type spanMark struct {
	cpu   cpuSnap
	cmds  redisCmds
	polls int64
	err   error
}

func (g *gen) span(ctx context.Context) spanMark {
	var m spanMark
	m.cpu, m.err = g.cpuSnapshot()
	if m.err == nil {
		m.cmds, m.err = redisCommands(ctx, g.cfg.redisAddr)
	}
	m.polls = g.polls.Load()
	return m
}

func (g *gen) burstEnter(c *conn, req []byte, j call, st *stats) []byte {
	u := j.user
	b := int(u) - g.cfg.users
	req = appendEnterRequest(req[:0], g.host, g.cfg.queue, g.cfg.xff, u)
	tx, rx, dials := c.tx, c.rx, c.dials
	start := g.now()
	g.burstSent[b] = start
	code, body, err := c.do(req)
	end := g.now()
	st.calls++
	st.latency.add((end - start) / 1000)
	st.lag.add((start - j.due) / 1000)
	st.tx += c.tx - tx
	st.rx += c.rx - rx
	st.dials += c.dials - dials
	switch {
	case err != nil:
		st.errTransport++
		return req
	case code == http.StatusServiceUnavailable:
		st.err503++
		return req
	case code != http.StatusOK:
		st.errOther++
		return req
	}
	tok, ok1 := jsonString(body, "place_token")
	status, ok2 := jsonString(body, "status")
	if !ok1 || !ok2 {
		st.errOther++
		return req
	}
	st.ok++
	g.token[u] = string(tok)
	g.lastCall[u] = end
	g.burstAck[b] = end
	switch string(status) {
	case "WAITING":
		st.waiting++
		g.answered(u, body, end)
	case "ENTERED":
		st.entered++
	default:
		st.notWaiting++
	}
	return req
}

// rec is one acknowledged enter of the burst: when it was sent and
// answered (ns since t0), and the arrival number and member its
// credential names.
type rec struct {
	sent, ack, seq int64
	member         string
}

// fifo walks the enters in send order while a pointer walks them in
// answer order: every enter acknowledged before B was sent must have a
// smaller arrival number than B. It returns the ordered pairs so
// checked, how many Bs broke the order, and the first that did.
func fifo(recs []rec) (pairs, breaks int64, first string) {
	bySent := append([]rec(nil), recs...)
	sort.Slice(bySent, func(i, j int) bool { return bySent[i].sent < bySent[j].sent })
	byAck := append([]rec(nil), recs...)
	sort.Slice(byAck, func(i, j int) bool { return byAck[i].ack < byAck[j].ack })
	k := 0
	maxSeq := int64(-1)
	for _, b := range bySent {
		for k < len(byAck) && byAck[k].ack < b.sent {
			maxSeq = max(maxSeq, byAck[k].seq)
			k++
		}
		pairs += int64(k)
		if maxSeq >= b.seq {
			breaks++
			if first == "" {
				first = fmt.Sprintf("(first: sent at %d ns with seq %d after an answer with seq %d)", b.sent, b.seq, maxSeq)
			}
		}
	}
	return pairs, breaks, first
}

// burstCheck is what Redis says of the burst's acknowledged places.
type burstCheck struct {
	acked             int   // enters answered 200
	waiting, entered  int   // of those, in the waiting ZSET (at the seq their credential names) or admitted
	missing, wrongSeq int   // in neither; waiting at another arrival number
	dupSeq, dupMember int   // credentials naming an arrival number or a member another has
	badToken          int   // credentials this check cannot read
	inRange           int64 // places in the waiting ZSET at the burst's arrival numbers
	stillWaiting      int   // acknowledged places still waiting (inRange should equal it)
	pairs, fifoBreaks int64 // ordered pairs checked (B sent after A was acknowledged), and Bs whose seq is below such an A's
	firstBreak        string
	minSeq, maxSeq    int64
	checked           time.Duration
	notAckedButPlaced int64 // inRange − stillWaiting when positive: places made by enters never acknowledged
}

// seqAndMember reads a v2 place credential "v2.<queue>.<member b64>.<seq>.<mac>".
func seqAndMember(tok string) (int64, string, error) {
	f := strings.Split(tok, ".")
	if len(f) != 5 || f[0] != "v2" {
		return 0, "", errors.New("not a v2 credential")
	}
	m, err := base64.RawURLEncoding.DecodeString(f[2])
	if err != nil {
		return 0, "", err
	}
	seq, err := strconv.ParseInt(f[3], 10, 64)
	return seq, string(m), err
}

// checkBurst asks Redis where every acknowledged place of the burst is:
// each must be in the waiting ZSET at the arrival number its credential
// carries, or admitted; no two may share a member or an arrival number;
// and for every two enters that did not overlap (B sent after A's answer
// arrived) B's arrival number must be the larger: FIFO among the
// acknowledged.
func (g *gen) checkBurst(ctx context.Context) (burstCheck, error) {
	t0 := time.Now()
	var bc burstCheck
	recs := make([]rec, 0, g.cfg.burst)
	seqs := map[int64]bool{}
	members := map[string]bool{}
	for i := range g.cfg.burst {
		if g.burstAck[i] == 0 {
			continue
		}
		bc.acked++
		seq, m, err := seqAndMember(g.token[g.cfg.users+i])
		if err != nil {
			bc.badToken++
			continue
		}
		if seqs[seq] {
			bc.dupSeq++
		}
		if members[m] {
			bc.dupMember++
		}
		seqs[seq], members[m] = true, true
		recs = append(recs, rec{sent: g.burstSent[i], ack: g.burstAck[i], seq: seq, member: m})
	}
	if len(recs) == 0 {
		return bc, nil
	}
	rc := redis.NewClient(&redis.Options{Addr: g.cfg.redisAddr})
	defer rc.Close()
	waitingKey := rediskeys.Waiting(g.cfg.queue)
	enteredKey := rediskeys.Entered(g.cfg.queue)
	bc.minSeq, bc.maxSeq = recs[0].seq, recs[0].seq
	for _, r := range recs {
		bc.minSeq, bc.maxSeq = min(bc.minSeq, r.seq), max(bc.maxSeq, r.seq)
	}
	for lo := 0; lo < len(recs); lo += 1000 {
		part := recs[lo:min(lo+1000, len(recs))]
		pipe := rc.Pipeline()
		w := make([]*redis.FloatCmd, len(part))
		e := make([]*redis.FloatCmd, len(part))
		for i, r := range part {
			w[i] = pipe.ZScore(ctx, waitingKey, r.member)
			e[i] = pipe.ZScore(ctx, enteredKey, r.member)
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return bc, fmt.Errorf("burst check: %w", err)
		}
		for i, r := range part {
			switch score, err := w[i].Result(); {
			case err == nil:
				bc.waiting++
				if int64(score) != r.seq {
					bc.wrongSeq++
				}
			case !errors.Is(err, redis.Nil):
				return bc, fmt.Errorf("burst check: %w", err)
			default:
				if _, err := e[i].Result(); err == nil {
					bc.entered++
				} else {
					bc.missing++
				}
			}
		}
	}
	bc.stillWaiting = bc.waiting
	n, err := rc.ZCount(ctx, waitingKey, strconv.FormatInt(bc.minSeq, 10), strconv.FormatInt(bc.maxSeq, 10)).Result()
	if err != nil {
		return bc, fmt.Errorf("burst check: %w", err)
	}
	bc.inRange = n
	bc.notAckedButPlaced = max(0, n-int64(bc.stillWaiting))

	bc.pairs, bc.fifoBreaks, bc.firstBreak = fifo(recs)
	bc.checked = time.Since(t0)
	return bc, nil
}

// ok says whether the check found nothing wrong.
func (bc *burstCheck) ok() bool {
	return bc.missing == 0 && bc.wrongSeq == 0 && bc.dupSeq == 0 && bc.dupMember == 0 && bc.badToken == 0 &&
		bc.fifoBreaks == 0 && bc.inRange >= int64(bc.stillWaiting)
}
