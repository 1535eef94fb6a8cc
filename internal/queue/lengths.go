package queue

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// LineLengths returns how many wait in each of queue's lines, by lane
// ("": the general lane), a scheduled opening's draw included: one round
// trip after the lanes' (Store.tickLanes).
func (s *Store) LineLengths(ctx context.Context, queue string) (map[string]int64, error) {
	q, err := s.queue(queue)
	if err != nil {
		return nil, err
	}
	return WaitFor(ctx, s.timeout, func(ctx context.Context) (map[string]int64, error) {
		lanes, err := s.tickLanes(ctx, q)
		if err != nil {
			return nil, err
		}
		lines := append([]string{""}, lanes...)
		counts := make([]*redis.IntCmd, 2*len(lines))
		_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, l := range lines {
				k := keysForLine(queue, l)
				counts[2*i], counts[2*i+1] = p.ZCard(ctx, k.waiting), p.SCard(ctx, k.draw)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("queue: line lengths: %w", err)
		}
		out := make(map[string]int64, len(lines))
		for i, l := range lines {
			out[l] = counts[2*i].Val() + counts[2*i+1].Val()
		}
		return out, nil
	})
}
