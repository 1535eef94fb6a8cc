package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/infra/rediskeys"
)

// The opening burst (-mode burst): -places new arrivals enter through the
// HTTP API open loop, their sends due evenly over -burst-for, on -conns
// connections, each from an address of its own (X-Forwarded-For, numbered
// from -addr-base so that they are not the fill's). Nobody polls status:
// far from the head the page reads the line's cached document, which does
// not reach the origin. Then every acknowledged place is checked in Redis
// as lab/cmd/wr-million's burst check does: in the line at the arrival
// number its credential carries, or admitted; no arrival number or member
// twice; FIFO among enters that did not overlap.

// rec is one acknowledged enter: sent and answered (ns since the start),
// and the arrival number and member its credential names.
type rec struct {
	sent, ack, seq int64
	member         string
}

func burst(ctx context.Context, c config, out io.Writer) error {
	n := c.places
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConnsPerHost: c.conns, MaxConnsPerHost: c.conns, DisableCompression: true,
	}}
	u := strings.TrimRight(c.url, "/") + "/api/v1/queues/" + c.queue + "/enter"
	tokens := make([]string, n)
	sent := make([]int64, n)
	acked := make([]int64, n)
	lat := make([][]int32, c.conns) // µs, send to answer, per worker
	lag := make([][]int32, c.conns) // µs, send minus due, per worker
	var failed, refused atomic.Int64
	var firstErr atomic.Value
	type job struct {
		i   int
		due int64
	}
	jobs := make(chan job, n)
	t0 := time.Now()
	since := func() int64 { return int64(time.Since(t0)) }
	var wg sync.WaitGroup
	for w := range c.conns {
		wg.Go(func() {
			for j := range jobs {
				if ctx.Err() != nil {
					return
				}
				s := since()
				tok, code, err := enterOne(ctx, hc, u, clientAddr(int64(c.addrBase+j.i)))
				e := since()
				lat[w] = append(lat[w], int32((e-s)/1000))
				lag[w] = append(lag[w], int32((s-j.due)/1000))
				if err != nil {
					if code != 0 {
						refused.Add(1)
					} else {
						failed.Add(1)
					}
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				tokens[j.i], sent[j.i], acked[j.i] = tok, s, e
			}
		})
	}
	step := float64(c.burstFor) / float64(n)
	progress := time.Now()
	for i := 0; i < n && ctx.Err() == nil; {
		now := since()
		for ; i < n; i++ {
			due := int64(float64(i) * step)
			if due > now {
				break
			}
			jobs <- job{i: i, due: due}
		}
		if time.Since(progress) > 10*time.Second {
			fmt.Fprintf(os.Stderr, "burst: %d due, %.1f s\n", i, time.Since(t0).Seconds())
			progress = time.Now()
		}
		time.Sleep(time.Millisecond)
	}
	close(jobs)
	wg.Wait()
	span := time.Since(t0)
	var lats, lags []int32
	for w := range lat {
		lats = append(lats, lat[w]...)
		lags = append(lags, lag[w]...)
	}
	slices.Sort(lats)
	slices.Sort(lags)
	var ok int
	var lastAck int64
	for i := range acked {
		if acked[i] != 0 {
			ok++
			lastAck = max(lastAck, acked[i])
		}
	}
	fmt.Fprintf(out, "burst: %d enters due over %s on %d connections: %d answered 200, %d refused (HTTP error), %d failed (transport)\n",
		n, c.burstFor, c.conns, ok, refused.Load(), failed.Load())
	if e := firstErr.Load(); e != nil {
		fmt.Fprintf(out, "  first error: %v\n", e)
	}
	fmt.Fprintf(out, "burst: rate reached %.0f enters/s (200s ÷ first send to last answer, %.1f s; target %.0f/s)\n",
		float64(ok)/(float64(lastAck)/1e9), float64(lastAck)/1e9, float64(n)/c.burstFor.Seconds())
	fmt.Fprintf(out, "burst: enter latency (send to answer) p50 %s p99 %s max %s; send lag behind schedule p50 %s p99 %s max %s; span %.1f s\n",
		q(lats, 0.5), q(lats, 0.99), q(lats, 1), q(lags, 0.5), q(lags, 0.99), q(lags, 1), span.Seconds())
	if ctx.Err() != nil {
		return ctx.Err()
	}
	bc, err := checkBurst(ctx, c, tokens, sent, acked)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "check: %d acknowledged: %d waiting at the arrival number their credential carries, %d admitted, %d missing, %d at another number, %d arrival numbers twice, %d members twice, %d unreadable; FIFO: %d ordered pairs, %d broken %s; places in the burst's range %d (%d from enters never acknowledged); %.1f s\n",
		bc.acked, bc.waiting-bc.wrongSeq, bc.entered, bc.missing, bc.wrongSeq, bc.dupSeq, bc.dupMember, bc.badToken,
		bc.pairs, bc.fifoBreaks, bc.firstBreak, bc.inRange, max(0, bc.inRange-int64(bc.waiting)), bc.checked.Seconds())
	if !bc.ok() {
		return errors.New("the burst check found lost, misplaced or duplicated places, or broken FIFO")
	}
	fmt.Fprintln(out, "check: ok (0 lost, 0 duplicated, FIFO kept)")
	if c.tokens != "" {
		return writeTokens(c.tokens, tokens, 0)
	}
	return nil
}

// q formats the q-quantile of sorted µs values as ms.
func q(sorted []int32, f float64) string {
	if len(sorted) == 0 {
		return "-"
	}
	i := min(len(sorted)-1, int(f*float64(len(sorted))))
	return fmt.Sprintf("%.1fms", float64(sorted[i])/1000)
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

// fifo walks the enters in send order while a pointer walks them in
// answer order: every enter acknowledged before B was sent must have a
// smaller arrival number than B (as lab/cmd/wr-million's).
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

type burstCheck struct {
	acked, waiting, entered, missing, wrongSeq int
	dupSeq, dupMember, badToken                int
	inRange                                    int64
	pairs, fifoBreaks                          int64
	firstBreak                                 string
	checked                                    time.Duration
}

func (bc *burstCheck) ok() bool {
	return bc.missing == 0 && bc.wrongSeq == 0 && bc.dupSeq == 0 && bc.dupMember == 0 && bc.badToken == 0 &&
		bc.fifoBreaks == 0 && bc.inRange >= int64(bc.waiting)
}

func checkBurst(ctx context.Context, c config, tokens []string, sent, acked []int64) (burstCheck, error) {
	t0 := time.Now()
	var bc burstCheck
	recs := make([]rec, 0, len(tokens))
	seqs := make(map[int64]bool, len(tokens))
	members := make(map[string]bool, len(tokens))
	for i, tok := range tokens {
		if acked[i] == 0 {
			continue
		}
		bc.acked++
		seq, m, err := seqAndMember(tok)
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
		recs = append(recs, rec{sent: sent[i], ack: acked[i], seq: seq, member: m})
	}
	if len(recs) == 0 {
		return bc, nil
	}
	rc := redis.NewClient(&redis.Options{Addr: c.redisAddr})
	defer rc.Close()
	waitingKey, enteredKey := rediskeys.Waiting(c.queue), rediskeys.Entered(c.queue)
	minSeq, maxSeq := recs[0].seq, recs[0].seq
	for _, r := range recs {
		minSeq, maxSeq = min(minSeq, r.seq), max(maxSeq, r.seq)
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
	n, err := rc.ZCount(ctx, waitingKey, strconv.FormatInt(minSeq, 10), strconv.FormatInt(maxSeq, 10)).Result()
	if err != nil {
		return bc, fmt.Errorf("burst check: %w", err)
	}
	bc.inRange = n
	bc.pairs, bc.fifoBreaks, bc.firstBreak = fifo(recs)
	bc.checked = time.Since(t0)
	return bc, nil
}
