package httpkit

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// recorder is the response writer the access log hands down the chain:
// it records the status, the bytes written and when the request started,
// for the log line and for the metrics middleware, which reuses it (it
// looks for Status and Started) rather than wrapping the writer and
// reading the clock again. It replaces chi's WrapResponseWriter, whose
// two allocations every request paid; recorders are pooled, so a request
// allocates none.
//
// It passes every call on as chi's wrapper did: 1xx answers other than
// 101 go through without counting as the status, a second WriteHeader is
// dropped, Flush and Hijack reach the connection, ReadFrom keeps
// net/http's copy path (http.ServeContent), and Unwrap lets
// http.ResponseController (the gate's proxy) reach the rest.
type recorder struct {
	http.ResponseWriter
	start       time.Time
	status      int // 0 until the header is written
	bytes       int
	wroteHeader bool
}

var recorders = sync.Pool{New: func() any { return new(recorder) }}

// newRecorder returns a pooled recorder of w for a request starting now.
// Give it back with release once the request is done.
func newRecorder(w http.ResponseWriter) *recorder {
	rw := recorders.Get().(*recorder)
	*rw = recorder{ResponseWriter: w, start: time.Now()}
	return rw
}

// release returns rw to the pool: nothing may use it after.
func (rw *recorder) release() {
	*rw = recorder{}
	recorders.Put(rw)
}

// Status is the status written, 0 if none yet.
func (rw *recorder) Status() int { return rw.status }

// Started is when the request reached the access log.
func (rw *recorder) Started() time.Time { return rw.start }

func (rw *recorder) WriteHeader(code int) {
	if code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
		rw.ResponseWriter.WriteHeader(code) // informational: more headers follow
		return
	}
	if rw.wroteHeader {
		return
	}
	rw.status, rw.wroteHeader = code, true
	rw.ResponseWriter.WriteHeader(code)
}

func (rw *recorder) Write(b []byte) (int, error) {
	if !rw.wroteHeader {
		rw.WriteHeader(http.StatusOK)
	}
	n, err := rw.ResponseWriter.Write(b)
	rw.bytes += n
	return n, err
}

// ReadFrom lets io.Copy (http.ServeContent) use the connection's own
// copy, as it would without the recorder.
func (rw *recorder) ReadFrom(src io.Reader) (int64, error) {
	if !rw.wroteHeader {
		rw.WriteHeader(http.StatusOK)
	}
	var n int64
	var err error
	if rf, ok := rw.ResponseWriter.(io.ReaderFrom); ok {
		n, err = rf.ReadFrom(src)
	} else {
		n, err = io.Copy(struct{ io.Writer }{rw.ResponseWriter}, src)
	}
	rw.bytes += int(n)
	return n, err
}

func (rw *recorder) Flush() {
	if !rw.wroteHeader {
		rw.WriteHeader(http.StatusOK)
	}
	_ = http.NewResponseController(rw.ResponseWriter).Flush()
}

func (rw *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(rw.ResponseWriter).Hijack()
}

// Unwrap is for http.ResponseController.
func (rw *recorder) Unwrap() http.ResponseWriter { return rw.ResponseWriter }
