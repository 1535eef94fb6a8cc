package gate

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// The order page speaks back: HeaderCommand in its answer to a request
// the gate let in is carried out for that request's admission, and
// removed from every answer before the client sees it.

// Commander carries out an order page's command (CommandDone,
// CommandExtend, or a value that names neither) for the admission of
// token, a pass for queue, and returns the result: "ok", "unchanged",
// "not_current", "no_pass", "limited", "unsupported", "unknown" or
// "failed". token is "" when the request carried no valid pass: the
// command must then do nothing. Options.CommandURL makes one that asks
// the waitroom; waitroom's own gate carries commands out itself.
type Commander interface {
	Command(ctx context.Context, queue, token, command string) (result string)
}

// commandTimeout bounds the call that carries a command to the waitroom.
const commandTimeout = 5 * time.Second

// remoteCommander posts commands to a waitroom's
// /api/v1/queues/{queue}/commands, with the pass as its credential.
type remoteCommander struct {
	client *http.Client
	url    string // with "{queue}"
}

func (c remoteCommander) Command(ctx context.Context, queue, token, cmd string) string {
	if token == "" {
		return "no_pass"
	}
	if cmd != CommandDone && cmd != CommandExtend {
		return "unknown"
	}
	// The client may be gone by now; the command is still the page's.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commandTimeout)
	defer cancel()
	body, _ := json.Marshal(map[string]string{"command": cmd})
	u := strings.ReplaceAll(c.url, "{queue}", url.PathEscape(queue))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return "failed"
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.client.Do(req)
	if err != nil {
		return "failed"
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		var out struct {
			Result string `json:"result"`
		}
		if json.NewDecoder(resp.Body).Decode(&out) != nil || out.Result == "" {
			return "failed"
		}
		return out.Result
	case http.StatusUnauthorized:
		return "no_pass"
	case http.StatusTooManyRequests:
		return "limited"
	case http.StatusBadRequest:
		return "unknown"
	}
	return "failed"
}

// commandLabel is a header value as OnCommand names it: the command, or
// "other" (a bounded label).
func commandLabel(cmd string) string {
	if cmd == CommandDone || cmd == CommandExtend {
		return cmd
	}
	return "other"
}

// commandWriter is the ResponseWriter the gate hands on: the first time
// the answer's headers go out, it takes HeaderCommand out of them and has
// it carried out for the admission the request was let in with (none:
// token ""). A command sent any other way is removed and ignored: in an
// informational answer (it is not the answer), or as a trailer. A
// trailer comes after the client has the answer, proxies such as nginx
// drop it, and HTTP lets a recipient read a trailer as a header only
// where the field's definition allows it, which HeaderCommand's does not:
// a command means the same behind every proxy.
type commandWriter struct {
	http.ResponseWriter
	g           *Gate
	ctx         context.Context
	queue       string // the request's room's ("": none)
	token       string // the pass it was let in with ("": none)
	wroteHeader bool
}

func (w *commandWriter) take() {
	if w.wroteHeader {
		return
	}
	w.wroteHeader = true
	header, trailer, inHeader, inTrailer := takeFields(w.Header())
	if inTrailer {
		w.heard(trailer, "ignored")
	}
	if !inHeader {
		return
	}
	cmd, _ := commandOf(header, true)
	result := "ignored" // no Commander: removed, nothing done
	if w.g.commander != nil {
		result = w.g.commander.Command(w.ctx, w.queue, w.token, cmd)
	}
	w.heard(header, result)
}

// takeTrailer removes a command the handler set after the headers went
// out, where net/http would send it as a trailer, and ignores it.
func (w *commandWriter) takeTrailer() {
	header, trailer, inHeader, inTrailer := takeFields(w.Header())
	if inHeader || inTrailer {
		w.heard(append(header, trailer...), "ignored")
	}
}

// heard tells OnCommand of the command of a field's lines.
func (w *commandWriter) heard(lines []string, result string) {
	if w.g.onCommand != nil {
		cmd, _ := commandOf(lines, true)
		w.g.onCommand(w.queue, commandLabel(cmd), result)
	}
}

func (w *commandWriter) WriteHeader(code int) {
	if code >= 200 || code == http.StatusSwitchingProtocols {
		w.take()
		w.ResponseWriter.WriteHeader(code)
		return
	}
	// An informational answer (103) carries the headers set so far, and
	// is not the answer: the command is kept out of it, for the answer.
	// Its lines go back under the names the handler wrote them as.
	h := w.Header()
	var held http.Header
	for k, v := range h {
		if len(k) == len(HeaderCommand) && strings.EqualFold(k, HeaderCommand) {
			if held == nil {
				held = http.Header{}
			}
			held[k] = v
		}
	}
	if _, trailer, _, inTrailer := takeFields(h); inTrailer {
		w.heard(trailer, "ignored")
	}
	w.ResponseWriter.WriteHeader(code)
	maps.Copy(h, held)
}

func (w *commandWriter) Write(b []byte) (int, error) {
	w.take()
	return w.ResponseWriter.Write(b)
}

// Flush and Hijack keep what the writer beneath can do: streamed answers
// and WebSockets pass through the gate.
func (w *commandWriter) Flush() {
	w.take()
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *commandWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w.wroteHeader = true // the handler writes its own answer: no headers of ours
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

// Unwrap is the writer beneath, for http.ResponseController.
func (w *commandWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// newRemoteCommander checks CommandURL.
func newRemoteCommander(client *http.Client, raw string) (Commander, error) {
	u, err := url.Parse(strings.ReplaceAll(raw, "{queue}", "q"))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || !strings.Contains(raw, "{queue}") {
		return nil, fmt.Errorf("gate: CommandURL must be an absolute http(s) URL naming {queue}, got %q", raw)
	}
	return remoteCommander{client: client, url: raw}, nil
}
