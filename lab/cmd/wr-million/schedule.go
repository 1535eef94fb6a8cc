package main

import "sync"

// call is one status call due for one virtual user.
type call struct {
	due  int64 // when it should be sent, ns since the run's start
	user int32 // index into the users
}

// schedule holds every virtual user's next status call, earliest first: a
// binary min-heap on due. A million entries need 20 levels; a push or a pop
// costs well under a microsecond, far below what an HTTP call costs the
// generator. Workers push (after an answer) while the dispatcher pops, so
// a mutex guards it; each user is in the heap at most once, as a user's
// next call is pushed only when its last one has been answered.
type schedule struct {
	mu sync.Mutex
	h  []call
}

func newSchedule(capacity int) *schedule {
	return &schedule{h: make([]call, 0, capacity)}
}

// push adds c.
func (s *schedule) push(c call) {
	s.mu.Lock()
	s.h = append(s.h, c)
	i := len(s.h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if s.h[p].due <= s.h[i].due {
			break
		}
		s.h[p], s.h[i] = s.h[i], s.h[p]
		i = p
	}
	s.mu.Unlock()
}

// popDue appends to out every call due at or before now, earliest first,
// and returns it with the due time of the next call left (ok false when
// none is left).
func (s *schedule) popDue(now int64, out []call) (_ []call, next int64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.h) > 0 && s.h[0].due <= now {
		out = append(out, s.h[0])
		s.removeTop()
	}
	if len(s.h) == 0 {
		return out, 0, false
	}
	return out, s.h[0].due, true
}

// removeTop drops the earliest call; s.mu is held.
func (s *schedule) removeTop() {
	last := len(s.h) - 1
	s.h[0] = s.h[last]
	s.h = s.h[:last]
	i := 0
	for {
		l, small := 2*i+1, i
		if l < last && s.h[l].due < s.h[small].due {
			small = l
		}
		if r := l + 1; r < last && s.h[r].due < s.h[small].due {
			small = r
		}
		if small == i {
			return
		}
		s.h[i], s.h[small] = s.h[small], s.h[i]
		i = small
	}
}

// len is how many calls are scheduled.
func (s *schedule) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.h)
}
