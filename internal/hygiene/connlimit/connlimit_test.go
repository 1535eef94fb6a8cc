package connlimit

import (
	"net"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestCapAndPressure(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		events []bool
	)
	l, err := New(raw, 10, func(high bool) {
		mu.Lock()
		events = append(events, high)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan net.Conn, 20)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	var clients []net.Conn
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	for range 12 {
		c, err := net.Dial("tcp", raw.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	var server []net.Conn
	for range 10 {
		server = append(server, <-accepted)
	}
	select {
	case <-accepted:
		t.Fatal("an 11th connection was accepted with a cap of 10")
	case <-time.After(100 * time.Millisecond):
	}
	if l.Open() != 10 {
		t.Fatalf("Open() = %d, want 10", l.Open())
	}
	server[0].Close()
	server[0].Close() // a second Close gives back nothing more
	server = append(server[1:], <-accepted)
	select {
	case <-accepted:
		t.Fatal("a 12th connection was accepted")
	case <-time.After(100 * time.Millisecond):
	}
	// The 12th takes a freed slot (its Accept was waiting), then the
	// next Accept, with 5 open, ends the pressure.
	for _, c := range server[:7] {
		c.Close()
	}
	server = append(server[7:], <-accepted)
	c, err := net.Dial("tcp", raw.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	clients = append(clients, c)
	server = append(server, <-accepted)
	mu.Lock()
	got := slices.Clone(events)
	mu.Unlock()
	if !slices.Equal(got, []bool{true, false}) {
		t.Fatalf("pressure events %v, want [true false] (on at 8 open, off at 5)", got)
	}
	for _, c := range server {
		c.Close()
	}
	if l.Open() != 0 {
		t.Fatalf("Open() = %d after closing all", l.Open())
	}
	l.Close()
	if _, ok := <-accepted; ok {
		t.Fatal("Accept went on after Close")
	}
}

// Close ends an Accept that waits for a slot.
func TestCloseWhileFull(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l, err := New(raw, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", raw.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	errc := make(chan error, 1)
	go func() {
		_, err := l.Accept()
		errc <- err
	}()
	time.Sleep(50 * time.Millisecond) // let it wait for the slot
	l.Close()
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("Accept after Close succeeded")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Accept still waiting after Close")
	}
	if _, err := New(raw, 0, nil); err == nil {
		t.Fatal("a cap of 0 was accepted")
	}
}
