// Package connlimit caps how many connections a listener has open at once,
// as golang.org/x/net/netutil.LimitListener does, and says when they run
// high, so that the server can shed idle keep-alive connections before the
// cap turns new clients away.
package connlimit

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
)

// Listener accepts at most Max connections at once: Accept waits for one
// to close (new clients wait in the kernel's accept queue meanwhile).
type Listener struct {
	net.Listener
	high, low int
	slots     chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	open      atomic.Int64

	// mu orders the pressure changes; Close of a connection never takes it.
	mu         sync.Mutex
	pressured  bool
	onPressure func(high bool)
}

// New wraps l. When the open connections reach 80 % of max, onPressure
// (if not nil) is called with true; when they are back at 50 % or below,
// with false. It is called from Accept, before Accept returns, never
// twice in a row with the same value.
func New(l net.Listener, max int, onPressure func(high bool)) (*Listener, error) {
	if max < 1 {
		return nil, errors.New("connlimit: the cap must be at least 1")
	}
	return &Listener{
		Listener:   l,
		high:       max - max/5,
		low:        max / 2,
		slots:      make(chan struct{}, max),
		done:       make(chan struct{}),
		onPressure: onPressure,
	}, nil
}

// Open returns how many accepted connections are still open.
func (l *Listener) Open() int { return int(l.open.Load()) }

// Accept waits for a free slot, then for a connection.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	n := int(l.open.Add(1))
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case !l.pressured && n >= l.high:
		l.pressured = true
		if l.onPressure != nil {
			l.onPressure(true)
		}
	case l.pressured && n <= l.low:
		l.pressured = false
		if l.onPressure != nil {
			l.onPressure(false)
		}
	}
	return &conn{Conn: c, l: l}, nil
}

// Close stops Accept, including one waiting for a slot.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// conn gives its slot back when closed, once.
type conn struct {
	net.Conn
	l      *Listener
	closed atomic.Bool
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	if c.closed.CompareAndSwap(false, true) {
		c.l.open.Add(-1)
		<-c.l.slots
	}
	return err
}
