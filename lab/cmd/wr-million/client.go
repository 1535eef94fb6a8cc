package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// conn is one HTTP/1.1 keep-alive connection to the server, used by one
// goroutine at a time. Not net/http: the generator shares this two-core
// machine with the server it measures and must cost it far less CPU per
// call than the server spends (bench.sh says the same of wrk against k6).
// The server answers every API call with a Content-Length body, so the
// client needs no more of HTTP/1.1 than writing a prepared request and
// reading a status line, headers and a sized body.
type conn struct {
	addr string
	c    net.Conn
	r    *bufio.Reader
	body []byte
	// Bytes on the wire (HTTP, not TCP/IP headers) and dials, for the
	// report: written only by the goroutine using the connection.
	tx, rx, dials uint64
}

// countingReader counts what the bufio.Reader takes from the socket.
type countingReader struct {
	c *conn
}

func (r countingReader) Read(p []byte) (int, error) {
	n, err := r.c.c.Read(p)
	r.c.rx += uint64(n)
	return n, err
}

// errProtocol is an answer this client cannot read (no Content-Length).
var errProtocol = errors.New("wr-million: unexpected HTTP answer")

// do sends req and reads the answer: its status code and body, which stays
// valid until the next call. After a transport error the connection is
// closed; the next call dials again.
func (c *conn) do(req []byte) (code int, body []byte, err error) {
	if c.c == nil {
		nc, err := net.DialTimeout("tcp", c.addr, 5*time.Second)
		if err != nil {
			return 0, nil, err
		}
		c.c = nc
		c.dials++
		if c.r == nil {
			c.r = bufio.NewReaderSize(countingReader{c}, 4096)
		} else {
			c.r.Reset(countingReader{c})
		}
	}
	c.tx += uint64(len(req))
	if _, err := c.c.Write(req); err != nil {
		c.close()
		return 0, nil, err
	}
	code, c.body, err = readResponse(c.r, c.body[:0], func() { c.close() })
	if err != nil {
		c.close()
		return 0, nil, err
	}
	return code, c.body, nil
}

func (c *conn) close() {
	if c.c != nil {
		_ = c.c.Close()
		c.c = nil
	}
}

// readResponse reads one answer into buf; onClose runs when the server
// said it closes the connection after it.
func readResponse(r *bufio.Reader, buf []byte, onClose func()) (code int, body []byte, err error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return 0, nil, err
	}
	// "HTTP/1.1 200 OK\r\n"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, nil, fmt.Errorf("%w: status line %q", errProtocol, line)
	}
	code, err = strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, nil, fmt.Errorf("%w: status line %q", errProtocol, line)
	}
	length, closing := -1, false
	for {
		h, err := r.ReadSlice('\n')
		if err != nil {
			return 0, nil, err
		}
		h = bytes.TrimRight(h, "\r\n")
		if len(h) == 0 {
			break
		}
		name, value, ok := bytes.Cut(h, []byte(":"))
		if !ok {
			continue
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(value)); err != nil || length < 0 {
				return 0, nil, fmt.Errorf("%w: Content-Length %q", errProtocol, value)
			}
		case bytes.EqualFold(name, []byte("Connection")):
			closing = bytes.EqualFold(value, []byte("close"))
		}
	}
	if length < 0 {
		return 0, nil, fmt.Errorf("%w: no Content-Length (status %d)", errProtocol, code)
	}
	if cap(buf) < length {
		buf = make([]byte, length)
	}
	buf = buf[:length]
	if _, err := io.ReadFull(r, buf); err != nil {
		return 0, nil, err
	}
	if closing {
		onClose()
	}
	return code, buf, nil
}

// Requests, appended to a reused buffer: they differ per user only in the
// client address (X-Forwarded-For, when xff) and the place token.
func appendEnterRequest(b []byte, host, q string, xff bool, u int32) []byte {
	b = append(b, "POST /api/v1/queues/"...)
	b = append(b, q...)
	b = append(b, "/enter HTTP/1.1\r\nHost: "...)
	b = append(b, host...)
	b = appendXFF(b, xff, u)
	return append(b, "\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"...)
}

func appendStatusRequest(b []byte, host, q string, xff bool, u int32, token string) []byte {
	b = append(b, "GET /api/v1/queues/"...)
	b = append(b, q...)
	b = append(b, "/status HTTP/1.1\r\nHost: "...)
	b = append(b, host...)
	b = appendXFF(b, xff, u)
	b = append(b, "\r\nAuthorization: Bearer "...)
	b = append(b, token...)
	return append(b, "\r\n\r\n"...)
}

// appendXFF appends, when xff, the header line that says user u calls
// from its own address: "\r\nX-Forwarded-For: <clientAddr(u)>".
func appendXFF(b []byte, xff bool, u int32) []byte {
	if !xff {
		return b
	}
	b = append(b, "\r\nX-Forwarded-For: "...)
	return appendClientAddr(b, int64(u))
}

// appendClientAddr appends a pseudo-random unicast IPv4 address for n >= 0,
// distinct for every n below 100 * 2^24 and never loopback: the first
// octet is 11 + n / 2^24, the others n mod 2^24 times an odd constant mod
// 2^24 (a permutation, so neighbours fall in different /24s). The same as
// loadtest/wrk/clients.lua and scripts/lib.sh wr_client_addr.
func appendClientAddr(b []byte, n int64) []byte {
	lo := n % (1 << 24) * 40503 % (1 << 24)
	b = strconv.AppendInt(b, 11+n>>24%100, 10)
	for _, o := range [3]int64{lo >> 16, lo >> 8 & 255, lo & 255} {
		b = append(b, '.')
		b = strconv.AppendInt(b, o, 10)
	}
	return b
}

// jsonString returns the string value of key in a flat JSON object whose
// strings hold no escapes, which is true of the ticket's status, place
// token and pass (enum words and base64url). A full decoder would cost
// the generator more than the rest of the call.
func jsonString(b []byte, key string) ([]byte, bool) {
	k := `"` + key + `":"`
	i := bytes.Index(b, []byte(k))
	if i < 0 {
		return nil, false
	}
	v := b[i+len(k):]
	j := bytes.IndexByte(v, '"')
	if j < 0 {
		return nil, false
	}
	return v[:j], true
}

// jsonInt returns the integer value of key in a flat JSON object.
func jsonInt(b []byte, key string) (int64, bool) {
	k := `"` + key + `":`
	i := bytes.Index(b, []byte(k))
	if i < 0 {
		return 0, false
	}
	v := b[i+len(k):]
	j := 0
	for j < len(v) && (v[j] == '-' || v[j] >= '0' && v[j] <= '9') {
		j++
	}
	n, err := strconv.ParseInt(string(v[:j]), 10, 64)
	return n, err == nil
}
